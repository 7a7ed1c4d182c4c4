"""Graphs for the io tests: a hand-built graph with every awkward case, and a hypothesis strategy of random graphs."""

from __future__ import annotations

import json
import subprocess

from hypothesis import strategies as st
from networkx.readwrite import json_graph

from programl.io import serialize
from programl.io.json_convert import from_json, to_json
from programl.io.networkx_convert import from_networkx, to_networkx
from programl.proto import BytesList, Edge, Feature, FloatList, Int64List, Node, ProgramGraph

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


def bytes_feature(*values: bytes) -> Feature:
    return Feature(bytes_list=BytesList(value=list(values)))


def float_feature(*values: float) -> Feature:
    return Feature(float_list=FloatList(value=list(values)))


def int64_feature(*values: int) -> Feature:
    return Feature(int64_list=Int64List(value=list(values)))


def example_graph() -> ProgramGraph:
    """A small graph shaped like the builder's output, plus every case a lossy conversion would get wrong.

    * node 0 is the external node, with no Features message at all;
    * two DATA edges 3 -> 2 at positions 1 and 2 (``select i1 true, i32 %k, i32 %k``), two from the constant 4 into
      node 5 (``add i32 1, 1``), and CALL edges both ways between 0 and 1 (so edge order is not source order);
    * features of every kind: multi-element lists, empty lists of each kind, a feature with no kind, bytes that are
      not UTF-8, float32 values, int64 extremes; a node with an empty (present) Features message; features on an
      edge, a function, a module and the graph.
    """
    g = ProgramGraph()
    g.node.add(type=Node.INSTRUCTION, text="[external]")
    entry = g.node.add(type=Node.INSTRUCTION, text="alloca", function=0, block=0)
    entry.features.feature["full_text"].CopyFrom(bytes_feature(b"%2 = alloca i32, align 4"))
    select = g.node.add(type=Node.INSTRUCTION, text="select", function=0, block=0)
    select.features.feature["full_text"].CopyFrom(bytes_feature(b"%r = select i1 true, i32 %k, i32 %k"))
    select.features.feature["llvm_profile_true_weight"].CopyFrom(int64_feature(2**63 - 1, -(2**63), 0))
    arg = g.node.add(type=Node.VARIABLE, text="i32", function=0, block=1)
    arg.features.feature["full_text"].CopyFrom(bytes_feature(b"i32 %k"))
    arg.features.feature["raw"].CopyFrom(bytes_feature(b"\xff\xfe\x00caf\xc3\xa9", b"", b"\xed\xa0\x80"))
    arg.features.feature["embedding"].CopyFrom(float_feature(0.1, -2.5, 1e30, float("inf")))
    const = g.node.add(type=Node.CONSTANT, text="i32", block=1)
    const.features.feature["full_text"].CopyFrom(bytes_feature(b"i32 1"))
    const.features.feature["empty_bytes"].CopyFrom(Feature(bytes_list=BytesList()))
    const.features.feature["empty_floats"].CopyFrom(Feature(float_list=FloatList()))
    const.features.feature["empty_ints"].CopyFrom(Feature(int64_list=Int64List()))
    const.features.feature["no_kind"].CopyFrom(Feature())
    add = g.node.add(type=Node.INSTRUCTION, text="add", function=0, block=0)
    add.features.SetInParent()  # present but empty
    g.node.add(type=Node.TYPE, text="i32 (i32)", function=0, block=2**31 - 1)  # no features

    g.edge.add(flow=Edge.CONTROL, source=1, target=2, position=0)
    g.edge.add(flow=Edge.DATA, source=3, target=2, position=1)
    g.edge.add(flow=Edge.DATA, source=3, target=2, position=2)
    g.edge.add(flow=Edge.CONTROL, source=2, target=5, position=0)
    g.edge.add(flow=Edge.DATA, source=4, target=5, position=0)
    g.edge.add(flow=Edge.DATA, source=4, target=5, position=1)
    g.edge.add(flow=Edge.CALL, source=0, target=1, position=0)
    g.edge.add(flow=Edge.CALL, source=5, target=0, position=0)
    weighted = g.edge.add(flow=Edge.CONTROL, source=5, target=1, position=-3)
    weighted.features.feature["weight"].CopyFrom(float_feature(0.5))
    typed = g.edge.add(flow=Edge.TYPE, source=6, target=3, position=2**31 - 1)
    typed.features.SetInParent()

    function = g.function.add(name="pick", module=0)
    function.features.feature["llvm_profile_entry_count"].CopyFrom(int64_feature(7))
    g.function.add(name="llvm.dbg.value", module=0)
    module = g.module.add(name="io_example.ll")
    module.features.feature["llvm_target_triple"].CopyFrom(bytes_feature(b"x86_64-pc-linux-gnu"))
    module.features.feature["llvm_data_layout"].CopyFrom(bytes_feature(b""))
    g.features.feature["poj104_label"].CopyFrom(int64_feature(42))
    g.features.feature["wgsize_log1p"].CopyFrom(float_feature(3.25))
    return g


@st.composite
def features_messages(draw, target) -> None:
    """Fill the ``Features`` message ``target`` with random features of every kind (possibly none)."""
    target.SetInParent()
    for key in draw(st.lists(st.text(max_size=6), max_size=3, unique=True)):
        kind = draw(st.sampled_from(["bytes", "float", "int", "none"]))
        feature = target.feature[key]
        if kind == "bytes":
            feature.bytes_list.SetInParent()
            feature.bytes_list.value.extend(draw(st.lists(st.binary(max_size=6), max_size=3)))
        elif kind == "float":
            feature.float_list.SetInParent()
            feature.float_list.value.extend(draw(st.lists(st.floats(width=32, allow_nan=False), max_size=3)))
        elif kind == "int":
            feature.int64_list.SetInParent()
            feature.int64_list.value.extend(draw(st.lists(INT64, max_size=3)))


def _maybe_features(draw, message) -> None:
    if draw(st.booleans()):
        draw(features_messages(message.features))


@st.composite
def program_graphs(draw, max_nodes: int = 6, max_edges: int = 14) -> ProgramGraph:
    """Random program graphs: any node/edge kinds, int32 extremes, features anywhere, many parallel edges."""
    g = ProgramGraph()
    node_count = draw(st.integers(0, max_nodes))
    for _ in range(node_count):
        node = g.node.add(
            type=draw(st.integers(0, 3)),
            text=draw(st.text(max_size=8)),
            function=draw(st.one_of(st.integers(0, 3), INT32)),
            block=draw(st.one_of(st.integers(0, 5), INT32)),
        )
        _maybe_features(draw, node)
    if node_count:
        nodes = st.integers(0, node_count - 1)
        for _ in range(draw(st.integers(0, max_edges))):
            edge = g.edge.add(
                flow=draw(st.integers(0, 3)),
                position=draw(st.one_of(st.integers(0, 3), INT32)),
                source=draw(nodes),
                target=draw(nodes),
            )
            _maybe_features(draw, edge)
    for _ in range(draw(st.integers(0, 3))):
        function = g.function.add(name=draw(st.text(max_size=8)), module=draw(st.integers(0, 2)))
        _maybe_features(draw, function)
    for _ in range(draw(st.integers(0, 2))):
        module = g.module.add(name=draw(st.text(max_size=8)))
        _maybe_features(draw, module)
    _maybe_features(draw, g)
    return g


def has_parallel_edges(graph: ProgramGraph) -> bool:
    pairs = [(edge.source, edge.target) for edge in graph.edge]
    return len(pairs) != len(set(pairs))


def run_tool(tool: str, stdin: bytes, *args: str) -> bytes:
    """Run a command-line tool on ``stdin``; its stdout (fails the test on a non-zero exit)."""
    process = subprocess.run([tool, *args], input=stdin, capture_output=True, timeout=120, check=False)
    assert process.returncode == 0, process.stderr.decode(errors="replace")
    return process.stdout


def through_every_format(graph: ProgramGraph) -> ProgramGraph:
    """pb bytes -> pbtxt -> JSON text -> node-link data of a networkx graph -> networkx -> ProgramGraph."""
    step = ProgramGraph.FromString(graph.SerializeToString())
    [step] = serialize.from_string(serialize.to_string([step]))
    step = from_json(json.dumps(to_json(step)))
    data = json_graph.node_link_data(to_networkx(step), edges="links")
    step = from_json(json.loads(json.dumps(data)))
    step = from_networkx(json_graph.node_link_graph(to_json(step), edges="links"))
    [step] = serialize.from_bytes(serialize.to_bytes([step]))
    return step
