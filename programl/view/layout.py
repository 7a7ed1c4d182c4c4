"""Where each node of a program graph goes in ``programl view`` (docs/spec/graph.md): a layered layout per function,
computed once in Python in linear time, so that the page opens at once whatever the graph's size.

The page draws one box per *group* and lets the user collapse and expand each one:

* one group per function (``ProgramGraph.function``): its basic blocks are boxes laid out in layers along the
  control flow (the entry block on top; a block one layer below its deepest forward predecessor, back edges
  ignored), side by side within a layer in the order of their predecessors; within a block the instructions are
  stacked in order, each with its operands (the variables and the constants it reads) to its right; the function's
  arguments sit in a row above its blocks;
* one *module* group, last: the external node (node 0) and the constants used by more than one function
  (docs/spec/graph.md#operands: one constant node per module), in a grid. A constant used by one function only is drawn
  beside its first user.

Coordinates are local to the group (its top-left corner is (0, 0)); the page packs the groups, each at its expanded
or collapsed size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from programl.proto import Edge, Node, ProgramGraph

__all__ = ["GraphLayout", "Group", "label_of", "layout_graph", "node_size"]

#: Node labels longer than this are cut with an ellipsis (as ``programl.to_dot`` cuts them).
MAX_LABEL = 32
#: Height of a node and of one instruction's row; gaps between operands, blocks, layers; padding inside a box.
NODE_HEIGHT = 26
ROW = 38
GAP = 12
BLOCK_GAP = 40
LAYER_GAP = 56
PAD = 14
#: Width of one character of a label (the page's 12 px monospace font), and a node's margin around its label.
CHAR = 7.3
MARGIN = {Node.INSTRUCTION: 18, Node.VARIABLE: 26, Node.CONSTANT: 40}


def label_of(text: str) -> str:
    """A node's label: its text, cut to :data:`MAX_LABEL` characters (the last three ``...``) as ``to_dot`` cuts it."""
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 3] + "..."


def node_size(node_type: int, text: str) -> tuple[int, int]:
    """Width and height in pixels of a node of type ``node_type`` whose label is ``label_of(text)``."""
    width = round(len(label_of(text)) * CHAR) + MARGIN.get(node_type, 18)
    return max(width, 44), NODE_HEIGHT


@dataclass
class Group:
    """A box of the layout: a function, or the module group.

    Attributes:
        name: The function's name, or ``"[module]"``.
        kind: ``"function"`` (one with a body), ``"declaration"`` (a body-less function: one placeholder node) or
            ``"module"``.
        width, height: Its size, expanded.
        nodes: Its node ids, ascending.
        blocks: Its basic blocks (``ProgramGraph`` block ids), in layout order.
    """

    name: str
    kind: str
    width: int = 0
    height: int = 0
    nodes: list[int] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)


@dataclass
class GraphLayout:
    """Where each node goes: its group, its block (-1: none, e.g. arguments and the module group), its centre
    ``(x, y)`` relative to its group's top-left corner, and its size.

    Attributes:
        groups: One per function of the graph, in order, then the module group.
        group: (N,) each node's group index.
        block: (N,) each node's index in ``blocks`` (-1 when it is in no block).
        blocks: ``(group, block id, x, y, width, height)`` of each block's box, its top-left corner relative to its
            group's.
        x, y, width: (N,) centre and width of each node (all nodes are :data:`NODE_HEIGHT` high).
    """

    groups: list[Group]
    group: list[int]
    block: list[int]
    blocks: list[tuple[int, int, int, int, int, int]]
    x: list[int]
    y: list[int]
    width: list[int]


def _groups_of_nodes(graph: ProgramGraph, data_users: list[list[int]]) -> tuple[list[int], int]:
    """Each node's group: its function (instructions, variables), the function of every instruction that reads it
    (constants used by one function), else the module group (node 0, shared constants, anything out of range)."""
    functions = len(graph.function)
    module = functions
    group = [module] * len(graph.node)
    for i, node in enumerate(graph.node):
        if i == 0 or node.type == Node.CONSTANT:
            continue
        if 0 <= node.function < functions:
            group[i] = node.function
    for i, node in enumerate(graph.node):
        if node.type != Node.CONSTANT:
            continue
        owners = {group[user] for user in data_users[i]}
        if len(owners) == 1:
            (owner,) = owners
            group[i] = owner
    return group, module


def _layers(order: list[int], successors: dict[int, list[int]]) -> dict[int, int]:
    """Each block's layer: depth-first search from each block in ``order`` (the entry first) finds the back edges;
    a block's layer is one more than the deepest of its forward predecessors (longest path), 0 for sources."""
    state: dict[int, int] = {}  # 1: on the stack, 2: done
    post: list[int] = []
    back: set[tuple[int, int]] = set()
    for start in order:
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(successors.get(start, ())))]
        while stack:
            block, it = stack[-1]
            for nxt in it:
                if nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(successors.get(nxt, ()))))
                    break
                if state[nxt] == 1:
                    back.add((block, nxt))
            else:
                state[block] = 2
                post.append(block)
                stack.pop()
    layer = dict.fromkeys(order, 0)
    for block in reversed(post):  # a topological order of the forward edges
        for nxt in successors.get(block, ()):
            if (block, nxt) not in back and layer[nxt] < layer[block] + 1:
                layer[nxt] = layer[block] + 1
    return layer


def layout_graph(graph: ProgramGraph) -> GraphLayout:
    """Lay out ``graph`` (module docstring): linear in its nodes and edges, plus sorting blocks within layers."""
    n = len(graph.node)
    data_users: list[list[int]] = [[] for _ in range(n)]  # operand -> instructions that read it, in edge order
    producers: list[int] = [-1] * n  # variable -> the instruction that defines it
    control: list[tuple[int, int]] = []
    types = [node.type for node in graph.node]
    for edge in graph.edge:
        s, t = edge.source, edge.target
        if not (0 <= s < n and 0 <= t < n):
            continue
        if edge.flow == Edge.DATA:
            if types[s] != Node.INSTRUCTION and types[t] == Node.INSTRUCTION:
                data_users[s].append(t)
            elif types[s] == Node.INSTRUCTION and producers[t] < 0:
                producers[t] = s
        elif edge.flow == Edge.CONTROL:
            control.append((s, t))
    group, module = _groups_of_nodes(graph, data_users)
    groups = [
        Group(f.name or f"function {i}", "function")  # kind fixed below
        for i, f in enumerate(graph.function)
    ]
    groups.append(Group("[module]", "module"))
    for i in range(n):
        groups[group[i]].nodes.append(i)

    x, y = [0] * n, [0] * n
    width = [node_size(node.type, node.text)[0] for node in graph.node]
    block_of = [-1] * n
    blocks: list[tuple[int, int, int, int, int, int]] = []
    for g, box in enumerate(groups[:-1]):
        _layout_function(g, box, graph, group, types, data_users, producers, control, width, x, y, block_of, blocks)
    _layout_module(groups[module], width, x, y)
    return GraphLayout(groups, group, block_of, blocks, x, y, width)


def _layout_function(g, box, graph, group, types, data_users, producers, control, width, x, y, block_of, blocks):
    """Lay out function group ``g`` in place (module docstring)."""
    members = box.nodes
    instructions = [i for i in members if types[i] == Node.INSTRUCTION]
    box.kind = (
        "declaration"
        if len(instructions) == 1 and graph.node[instructions[0]].text == "; undefined function"
        else "function"
    )
    by_block: dict[int, list[int]] = {}
    for i in instructions:
        by_block.setdefault(graph.node[i].block, []).append(i)
    # operands: next to their first reader in this function; arguments (variables nobody defines) in a row on top
    operands: dict[int, list[int]] = {i: [] for i in instructions}
    arguments: list[int] = []
    loose: list[int] = []
    for i in members:
        if types[i] == Node.INSTRUCTION:
            continue
        if types[i] == Node.VARIABLE and producers[i] < 0 and len(data_users[i]):
            arguments.append(i)
            continue
        anchor = next((u for u in data_users[i] if group[u] == g), producers[i] if producers[i] >= 0 else -1)
        if anchor >= 0 and group[anchor] == g and types[anchor] == Node.INSTRUCTION:
            operands[anchor].append(i)
        else:
            loose.append(i)  # read by nobody, defined by nobody: with the arguments
    arguments += loose
    # the blocks' control-flow graph, in the order of their first instructions
    order = list(by_block)
    block_index = {b: k for k, b in enumerate(order)}
    successors: dict[int, list[int]] = {}
    for s, t in control:
        if group[s] == g and group[t] == g and types[s] == Node.INSTRUCTION and types[t] == Node.INSTRUCTION:
            bs, bt = graph.node[s].block, graph.node[t].block
            if bs != bt and bs in block_index and bt in block_index:
                successors.setdefault(bs, []).append(bt)
    layer = _layers(order, successors)
    predecessors: dict[int, list[int]] = {}
    for b, nexts in successors.items():
        for t in nexts:
            predecessors.setdefault(t, []).append(b)
    # each block's box: instructions in a column, operands to the right of their reader
    sizes: dict[int, tuple[int, int]] = {}
    for b, members_b in by_block.items():
        column = max(width[i] for i in members_b)
        right = column
        for row, i in enumerate(members_b):
            x[i] = PAD + column // 2
            y[i] = PAD + row * ROW + NODE_HEIGHT // 2
            cursor = PAD + column + GAP
            for o in operands[i]:
                x[o] = cursor + width[o] // 2
                y[o] = y[i]
                cursor += width[o] + GAP
            right = max(right, cursor - GAP - PAD)
        sizes[b] = (right + 2 * PAD, (len(members_b) - 1) * ROW + NODE_HEIGHT + 2 * PAD)
    # layers, top to bottom; within one, blocks by the mean position of their predecessors above
    layers: dict[int, list[int]] = {}
    for b in order:
        layers.setdefault(layer[b], []).append(b)
    placed: dict[int, float] = {}
    rows = []
    for depth in sorted(layers):
        row = layers[depth]
        start = {b: k for k, b in enumerate(row)}

        def key(b, start=start):
            above = [placed[p] for p in predecessors.get(b, ()) if p in placed]
            return (sum(above) / len(above) if above else float(start[b]), block_index[b])

        row.sort(key=key)
        for k, b in enumerate(row):
            placed[b] = k
        rows.append(row)
    # the arguments' row
    top = PAD + 18  # room for the function's label inside its box
    args_width = sum(width[i] + GAP for i in arguments) - GAP if arguments else 0
    rows_width = [sum(sizes[b][0] for b in row) + BLOCK_GAP * (len(row) - 1) for row in rows]
    total_width = max([args_width, *rows_width, round(len(box.name) * CHAR)]) + 2 * PAD
    cursor = (total_width - args_width) // 2
    for i in arguments:
        x[i] = cursor + width[i] // 2
        y[i] = top + NODE_HEIGHT // 2
        cursor += width[i] + GAP
    offset_y = top + (NODE_HEIGHT + LAYER_GAP if arguments else 0)
    for row, row_width in zip(rows, rows_width):
        offset_x = (total_width - row_width) // 2
        for b in row:
            k = len(blocks)
            blocks.append((g, b, offset_x, offset_y, sizes[b][0], sizes[b][1]))
            box.blocks.append(b)
            for i in by_block[b]:
                for j in (i, *operands[i]):
                    x[j] += offset_x
                    y[j] += offset_y
                    block_of[j] = k
            offset_x += sizes[b][0] + BLOCK_GAP
        offset_y += max(sizes[b][1] for b in row) + LAYER_GAP
    box.width = total_width
    box.height = offset_y - LAYER_GAP + PAD if rows else top + NODE_HEIGHT + PAD


def _layout_module(box: Group, width: list[int], x: list[int], y: list[int]) -> None:
    """The module group: its nodes in a grid, in node order (node 0 first)."""
    members = box.nodes
    if not members:
        box.width, box.height = 2 * PAD + 60, 2 * PAD + NODE_HEIGHT
        return
    columns = max(1, min(12, round(len(members) ** 0.5 * 1.5)))
    cell = max(width[i] for i in members) + GAP
    top = PAD + 18
    for k, i in enumerate(members):
        row, column = divmod(k, columns)
        x[i] = PAD + column * cell + cell // 2
        y[i] = top + row * ROW + NODE_HEIGHT // 2
    rows = (len(members) + columns - 1) // columns
    box.width = max(2 * PAD + min(columns, len(members)) * cell, round(len(box.name) * CHAR) + 2 * PAD)
    box.height = top + (rows - 1) * ROW + NODE_HEIGHT + PAD
