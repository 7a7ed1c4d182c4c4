"""Small random ProGraML-like graphs with reachability labels (SPEC §1, §4.2) for the model tests."""

from __future__ import annotations

from collections import deque

import numpy as np

from programl.proto import ProgramGraph, ProgramGraphFeatures

INSTRUCTION, VARIABLE, CONSTANT = 0, 1, 2
CONTROL, DATA, CALL = 0, 1, 2
OPCODES = ("alloca", "load", "store", "add", "mul", "icmp", "getelementptr", "call")
TYPES = ("i32", "i64", "i1", "ptr")


def random_program_graph(rng: np.random.Generator, num_blocks: int = 4, block_size: tuple[int, int] = (2, 5)):
    """A function-shaped graph: blocks of chained instructions, branches between blocks, per-use variables and a
    few constants, plus the external node with CALL edges to the entry and from the exit (SPEC §1)."""
    g = ProgramGraph()
    g.node.add(type=INSTRUCTION, text="[external]")
    blocks = []
    for b in range(num_blocks):
        size = int(rng.integers(*block_size))
        ids = []
        for k in range(size):
            last = k == size - 1
            text = ("ret" if b == num_blocks - 1 else "br") if last else str(rng.choice(OPCODES))
            ids.append(len(g.node))
            g.node.add(type=INSTRUCTION, text=text, block=b)
        blocks.append(ids)
        for a, c in zip(ids[:-1], ids[1:], strict=True):
            g.edge.add(flow=CONTROL, position=0, source=a, target=c)
    for b, ids in enumerate(blocks[:-1]):
        succs = [b + 1] + ([int(rng.integers(0, num_blocks))] if rng.random() < 0.5 else [])
        for pos, s in enumerate(succs):
            g.edge.add(flow=CONTROL, position=pos, source=ids[-1], target=blocks[s][0])
    instructions = [i for ids in blocks for i in ids]
    for producer in instructions[:-1]:
        if rng.random() < 0.6:
            consumer = int(rng.choice([i for i in instructions if i > producer]))
            var = len(g.node)
            g.node.add(type=VARIABLE, text=str(rng.choice(TYPES)))
            g.edge.add(flow=DATA, position=0, source=producer, target=var)
            g.edge.add(flow=DATA, position=int(rng.integers(0, 3)), source=var, target=consumer)
    for _ in range(int(rng.integers(1, 3))):
        const = len(g.node)
        g.node.add(type=CONSTANT, text=str(rng.choice(TYPES)))
        for user in rng.choice(instructions, size=2):
            g.edge.add(flow=DATA, position=int(rng.integers(0, 2)), source=const, target=int(user))
    g.edge.add(flow=CALL, source=0, target=blocks[0][0])
    g.edge.add(flow=CALL, source=blocks[-1][-1], target=0)
    return g


def reachability(graph: ProgramGraph, root: int) -> tuple[list[int], int]:
    """Plain BFS over CONTROL edges: (0/1 label per node, depth of the deepest reached node + 1)."""
    succ: dict[int, list[int]] = {}
    for e in graph.edge:
        if e.flow == CONTROL:
            succ.setdefault(e.source, []).append(e.target)
    depth = {root: 1}
    queue = deque([root])
    while queue:
        u = queue.popleft()
        for v in succ.get(u, []):
            if v not in depth:
                depth[v] = depth[u] + 1
                queue.append(v)
    return [int(i in depth) for i in range(len(graph.node))], max(depth.values())


def label_record(graph: ProgramGraph, root: int) -> ProgramGraphFeatures:
    values, steps = reachability(graph, root)
    rec = ProgramGraphFeatures()
    roots = rec.node_features.feature_list["data_flow_root_node"]
    labels = rec.node_features.feature_list["data_flow_value"]
    for i, v in enumerate(values):
        roots.feature.add().int64_list.value.append(int(i == root))
        labels.feature.add().int64_list.value.append(v)
    rec.features.feature["data_flow_step_count"].int64_list.value.append(steps)
    rec.features.feature["data_flow_active_node_count"].int64_list.value.append(sum(values))
    return rec
