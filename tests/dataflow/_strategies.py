"""Hypothesis strategies: random program graphs with the node and edge kinds of real ones (SPEC §1.1).

A graph has the external node 0, a few functions of instructions (each followed by its per-use VARIABLE nodes, as
the builder lays them out), argument variables after each function's instructions, and shared CONSTANT nodes at
the end (function 0). Control edges join instructions of one function: a fall-through chain with random gaps
(unreachable parts) plus random extra edges, cycles, self loops and parallel edges. Data edges: producer ->
variable -> consumer for per-use variables, argument and constant -> any instruction of their function (constants:
of any function), with operand positions counted per consumer; sometimes an operand is used twice. Optionally,
control edges that cross functions or leave the external node. CALL edges join
the external node, entries, exits and call sites; the analyses must ignore them. The edge list is shuffled, since
the analyses must follow whatever order the edges come in.
"""

from __future__ import annotations

from hypothesis import strategies as st

from programl.proto import Edge, Node, ProgramGraph

OPCODES = ["add", "sub", "mul", "xor", "icmp", "load", "store", "br", "phi", "call", "ret", "fadd", "and"]
CONTROL, DATA, CALL = Edge.CONTROL, Edge.DATA, Edge.CALL


@st.composite
def program_graphs(
    draw, max_functions: int = 3, max_instructions: int = 9, max_constants: int = 4, cross_function: bool = False
) -> ProgramGraph:
    """A random program graph; with ``cross_function``, also control edges between any two instructions (the
    external node included), which hand-built graphs such as the reference's unit tests have."""
    g = ProgramGraph()
    ext = g.node.add()
    ext.type, ext.text = Node.INSTRUCTION, "[external]"
    edges: list[tuple[int, int, int, int]] = []
    operand_count: dict[int, int] = {}

    def use(src: int, dst: int) -> None:
        edges.append((src, dst, DATA, operand_count.get(dst, 0)))
        operand_count[dst] = operand_count.get(dst, 0) + 1

    all_instructions: list[list[int]] = []
    num_functions = draw(st.integers(1, max_functions))
    for f in range(num_functions):
        g.function.add().name = f"f{f}"
        k = draw(st.integers(1, max_instructions))
        instrs: list[int] = []
        pending_vars: list[tuple[int, int]] = []  # (variable, consumer) awaiting a producer
        for _ in range(k):
            node = g.node.add()
            node.type, node.function = Node.INSTRUCTION, f
            node.text = draw(st.sampled_from(OPCODES))
            i = len(g.node) - 1
            instrs.append(i)
            for _ in range(draw(st.integers(0, 2))):  # per-use variables of earlier (or this) instruction results
                var = g.node.add()
                var.type, var.function, var.text = Node.VARIABLE, f, "i32"
                v = len(g.node) - 1
                use(v, i)
                pending_vars.append((v, i))
        for v, _ in pending_vars:
            producer = draw(st.sampled_from(instrs))
            edges.append((producer, v, DATA, 0))
        for _ in range(draw(st.integers(0, 2))):  # arguments
            arg = g.node.add()
            arg.type, arg.function, arg.text = Node.VARIABLE, f, "i32"
            a = len(g.node) - 1
            for consumer in draw(st.lists(st.sampled_from(instrs), min_size=0, max_size=3)):
                use(a, consumer)
        # control: a fall-through chain with gaps, plus random extra edges
        gaps = draw(st.lists(st.booleans(), min_size=k, max_size=k))
        for a, b, gap in zip(instrs, instrs[1:], gaps, strict=False):
            if not gap or draw(st.integers(0, 3)) > 0:
                edges.append((a, b, CONTROL, 0))
        for _ in range(draw(st.integers(0, k + 1))):
            a, b = draw(st.sampled_from(instrs)), draw(st.sampled_from(instrs))
            edges.append((a, b, CONTROL, draw(st.integers(0, 2))))
        all_instructions.append(instrs)
    for _ in range(draw(st.integers(0, max_constants))):
        const = g.node.add()
        const.type, const.text = Node.CONSTANT, "i32"
        c = len(g.node) - 1
        for _ in range(draw(st.integers(1, 3))):
            instrs = draw(st.sampled_from(all_instructions))
            use(c, draw(st.sampled_from(instrs)))
    if cross_function:
        anywhere = [0] + [i for instrs in all_instructions for i in instrs]
        for _ in range(draw(st.integers(0, 4))):
            edges.append((draw(st.sampled_from(anywhere)), draw(st.sampled_from(anywhere)), CONTROL, 0))
    # calls: external -> entry, exits -> external, a random call site -> entry
    for instrs in all_instructions:
        edges.append((0, instrs[0], CALL, 0))
        edges.append((instrs[-1], 0, CALL, 0))
        site = draw(st.sampled_from(draw(st.sampled_from(all_instructions))))
        edges.append((site, instrs[0], CALL, 0))
    edges = draw(st.permutations(edges))
    for s, t, flow, pos in edges:
        e = g.edge.add()
        e.source, e.target, e.flow, e.position = s, t, flow, pos
    return g


@st.composite
def digraphs(draw, max_nodes: int = 12) -> tuple[int, list[tuple[int, int]]]:
    """A small directed multigraph ``(n, edges)``: self loops and parallel edges allowed."""
    n = draw(st.integers(1, max_nodes))
    node = st.integers(0, n - 1)
    edges = draw(st.lists(st.tuples(node, node), max_size=3 * n))
    return n, edges
