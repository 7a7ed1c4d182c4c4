"""A compact, readable listing of a graph for golden tests: one line per node and per edge (SPEC §1.10 style)."""

from __future__ import annotations

from programl.proto import ProgramGraph

NODE_TYPES = {0: "INST", 1: "VAR", 2: "CONST"}
FLOWS = {0: "CTRL", 1: "DATA", 2: "CALL"}


def full_text(node) -> str | None:
    if not node.HasField("features"):
        return None
    return node.features.feature["full_text"].bytes_list.value[0].decode("utf-8")


def node_lines(graph: ProgramGraph) -> list[str]:
    """``N3 INST store blk0 fn0 | store i32 %0, ptr %3, align 4`` (no ``| ...`` for a node without features)."""
    lines = []
    for index, node in enumerate(graph.node):
        line = f"N{index} {NODE_TYPES[node.type]} {node.text} blk{node.block} fn{node.function}"
        text = full_text(node)
        lines.append(line if text is None else f"{line} | {text}")
    return lines


def edge_lines(graph: ProgramGraph) -> list[str]:
    """``DATA 4->3 p1`` per edge, in emission order."""
    return [f"{FLOWS[e.flow]} {e.source}->{e.target} p{e.position}" for e in graph.edge]
