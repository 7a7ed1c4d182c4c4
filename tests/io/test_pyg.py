"""Tests of programl.io.pyg: ProgramGraph <-> torch-geometric Data/HeteroData (SPEC §6.1, §6.7, DESIGN §2)."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch_geometric.data import Batch  # noqa: E402

from programl.exceptions import GraphTransformError  # noqa: E402
from programl.io.pyg import from_pyg, to_hetero, to_pyg, to_pyg_examples  # noqa: E402
from programl.proto import ProgramGraph, ProgramGraphFeatures, ProgramGraphFeaturesList  # noqa: E402

INSTRUCTION, VARIABLE, CONSTANT = 0, 1, 2
CONTROL, DATA, CALL = 0, 1, 2


def small_graph() -> ProgramGraph:
    """External node, 3 instructions, one variable, one constant used twice by the same instruction (parallel)."""
    g = ProgramGraph()
    for t, text in [
        (INSTRUCTION, "[external]"),
        (INSTRUCTION, "alloca"),
        (INSTRUCTION, "add"),
        (INSTRUCTION, "ret"),
        (VARIABLE, "i32"),
        (CONSTANT, "i32"),
    ]:
        g.node.add(type=t, text=text)
    for flow, pos, s, d in [
        (CALL, 0, 0, 1),
        (CONTROL, 0, 1, 2),
        (CONTROL, 0, 2, 3),
        (DATA, 0, 2, 4),
        (DATA, 0, 4, 3),
        (DATA, 0, 5, 2),
        (DATA, 1, 5, 2),  # parallel to the previous edge (different position)
        (CALL, 0, 3, 0),
    ]:
        g.edge.add(flow=flow, position=pos, source=s, target=d)
    return g


def label_record(num_nodes: int, root: int, positives: list[int], steps: int = 3) -> ProgramGraphFeatures:
    rec = ProgramGraphFeatures()
    roots = rec.node_features.feature_list["data_flow_root_node"]
    values = rec.node_features.feature_list["data_flow_value"]
    for i in range(num_nodes):
        roots.feature.add().int64_list.value.append(int(i == root))
        values.feature.add().int64_list.value.append(int(i in positives))
    rec.features.feature["data_flow_step_count"].int64_list.value.append(steps)
    rec.features.feature["data_flow_active_node_count"].int64_list.value.append(len(positives))
    return rec


def structure(graph: ProgramGraph) -> tuple[list, list]:
    return (
        [(n.type, n.text) for n in graph.node],
        [(e.flow, e.position, e.source, e.target) for e in graph.edge],
    )


def test_to_pyg_shapes_and_values():
    g = small_graph()
    vocab = {"i32": 0, "add": 1, "alloca": 2}
    data = to_pyg(g, vocab)
    assert data.num_nodes == 6
    assert data.x.dtype == torch.long and data.x.shape == (6,)
    assert data.x.tolist() == [3, 2, 1, 3, 0, 0]  # [external] and ret are OOV = len(vocab) = 3
    assert data.node_type.tolist() == [0, 0, 0, 0, 1, 2]
    assert data.edge_index.shape == (2, 8)
    assert data.edge_index.tolist() == [[0, 1, 2, 2, 4, 5, 5, 3], [1, 2, 3, 4, 3, 2, 2, 0]]
    assert data.edge_flow.tolist() == [2, 0, 0, 1, 1, 1, 1, 2]
    assert data.edge_pos.tolist() == [0, 0, 0, 0, 0, 0, 1, 0]
    assert not hasattr(data, "text") or data.text is None  # a vocabulary was given
    data.validate(raise_on_error=True)


def test_to_pyg_keeps_parallel_edges():
    data = to_pyg(small_graph())
    pairs = Counter(zip(*data.edge_index.tolist(), strict=True))
    assert pairs[(5, 2)] == 2


def test_to_pyg_without_vocabulary_keeps_text():
    data = to_pyg(small_graph())
    assert data.text == ["[external]", "alloca", "add", "ret", "i32", "i32"]
    assert data.x.tolist() == [0] * 6  # every text is OOV of the empty vocabulary


def test_to_pyg_labels():
    g = small_graph()
    data = to_pyg(g, {}, label_record(6, root=1, positives=[1, 2, 3], steps=4))
    assert data.root.tolist() == [0, 1, 0, 0, 0, 0]
    assert data.y.tolist() == [0, 1, 1, 1, 0, 0]
    assert data.step_count.tolist() == [4]
    assert data.active_nodes.tolist() == [3]


def test_to_pyg_label_mismatch_raises():
    with pytest.raises(GraphTransformError, match="entries for a graph of 6 nodes"):
        to_pyg(small_graph(), {}, label_record(5, root=1, positives=[]))
    rec = label_record(6, root=1, positives=[])
    del rec.node_features.feature_list["data_flow_value"]
    with pytest.raises(GraphTransformError, match="data_flow_value"):
        to_pyg(small_graph(), {}, rec)


def test_to_pyg_bad_edge_raises():
    g = small_graph()
    g.edge.add(flow=DATA, source=2, target=17)
    with pytest.raises(GraphTransformError, match="outside"):
        to_pyg(g)


def test_to_pyg_examples_one_per_record_and_batchable():
    g = small_graph()
    labels = ProgramGraphFeaturesList()
    labels.graph.append(label_record(6, root=1, positives=[1, 2, 3], steps=3))
    labels.graph.append(label_record(6, root=2, positives=[2, 3], steps=2))
    examples = list(to_pyg_examples(g, labels, {"add": 0}))
    assert [e.root.argmax().item() for e in examples] == [1, 2]
    assert [e.step_count.item() for e in examples] == [3, 2]
    batch = Batch.from_data_list(examples)
    assert batch.num_nodes == 12
    assert torch.equal(batch.edge_index[:, 8:], examples[1].edge_index + 6)  # offset by the first graph's nodes
    assert batch.step_count.tolist() == [3, 2]
    assert batch.y.tolist() == [0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0]


def test_graph_level_features():
    g = small_graph()
    g.features.feature["poj104_label"].int64_list.value.append(17)
    d = to_pyg(g)
    assert d.poj104_label.tolist() == [17] and d.graph_y.tolist() == [16]  # 0-based class

    g = small_graph()
    g.features.feature["devmap_label"].int64_list.value.append(1)
    g.features.feature["wgsize"].int64_list.value.append(256)
    g.features.feature["transfer_bytes"].int64_list.value.append(4096)
    g.features.feature["transfer_bytes_log1p"].float_list.value.append(8.3178)
    g.features.feature["inst2vec_annotated"].int64_list.value.append(1)
    g.features.feature["note"].bytes_list.value.append(b"skipped")
    d = to_pyg(g)
    assert d.graph_y.tolist() == [1]
    assert d.wgsize.tolist() == [256] and d.transfer_bytes.tolist() == [4096]
    assert d.graph_x.tolist() == [[4096.0, 256.0]]
    assert d.transfer_bytes_log1p.dtype == torch.float32
    assert not hasattr(d, "note") or d.note is None
    batch = Batch.from_data_list([d, d])
    assert batch.graph_x.shape == (2, 2) and batch.graph_y.tolist() == [1, 1]


def test_reserved_feature_names_are_prefixed():
    g = small_graph()
    g.features.feature["x"].int64_list.value.append(3)
    d = to_pyg(g, {})
    assert d.x.shape == (6,) and d.graph_x.tolist() == [3]


def test_a_feature_named_like_a_derived_target_is_an_error():
    """A feature "x" is stored as graph_x, which the DevMap inputs also fill: one silently overwrote the other."""
    for name, extra in [("x", {"transfer_bytes": 8, "wgsize": 4}), ("y", {"poj104_label": 3})]:
        g = small_graph()
        for key, value in {name: 5, **extra}.items():
            g.features.feature[key].int64_list.value.append(value)
        with pytest.raises(GraphTransformError, match=f"graph feature '{name}' and the graph_{name} that to_pyg"):
            to_pyg(g)
    g = small_graph()
    g.features.feature["instruction"].int64_list.value.append(1)
    with pytest.raises(GraphTransformError, match="graph feature 'instruction' has the name of a node or edge type"):
        to_hetero(g)


@pytest.mark.parametrize(
    "vocabulary, message",
    [
        (["alloca"], "vocabulary must map node text to id"),
        ({"alloca": None}, "vocabulary maps 'alloca' to None, not an id in 0..1"),
        ({"alloca": "0"}, "vocabulary maps 'alloca' to '0', not an id in 0..1"),
        ({"alloca": -5}, "vocabulary maps 'alloca' to -5, not an id in 0..1"),
        ({"alloca": 7}, "vocabulary maps 'alloca' to 7, not an id in 0..1"),
    ],
)
def test_a_vocabulary_must_map_texts_to_ids(vocabulary, message):
    with pytest.raises((TypeError, GraphTransformError), match=message):
        to_pyg(small_graph(), vocabulary)


def test_a_table_that_grows_is_a_vocabulary():
    """TextTable gives each new text the next id when to_pyg adds it (``add``); reading it changes nothing."""
    from programl.datasets.transforms import TextTable

    table = TextTable()
    data = to_pyg(small_graph(), table)
    assert table.texts == ["[external]", "alloca", "add", "ret", "i32"]
    assert data.x.tolist() == [0, 1, 2, 3, 4, 4]
    assert to_pyg(small_graph(), table).x.tolist() == [0, 1, 2, 3, 4, 4]  # the same ids the second time
    assert table.get("store") is None and table.get("store", 9) == 9 and "store" not in table
    assert len(table) == 5
    assert table.add("store") == 5 and table.add("alloca") == 1 and table.texts[-1] == "store"


def test_a_mapping_whose_get_adds_texts_still_works():
    """A mapping whose ``get`` adds what it lacks (TextTable before issue 35) gives the same ids as ``add``."""

    class Interner(dict):
        def get(self, key, default=None):  # noqa: ARG002
            return self.setdefault(key, len(self))

    table = Interner()
    assert to_pyg(small_graph(), table).x.tolist() == [0, 1, 2, 3, 4, 4]
    assert list(table) == ["[external]", "alloca", "add", "ret", "i32"]


def _data(**attrs):
    from torch_geometric.data import Data

    base = {
        "node_type": torch.tensor([0, 0]),
        "edge_index": torch.tensor([[0], [1]]),
        "edge_flow": torch.tensor([0]),
        "edge_pos": torch.tensor([0]),
    }
    return Data(**{**base, **attrs})


@pytest.mark.parametrize(
    "attrs, vocabulary, message",
    [
        ({"text": ["a"]}, None, "1 node texts for 2 nodes"),
        ({"edge_index": torch.tensor([[0, 1]])}, None, r"edge_index has shape \(1, 2\), not \(2, E\)"),
        ({"edge_index": torch.tensor([[0], [9]])}, None, "edge_index refers to node 9 of a graph of 2 nodes"),
        ({"edge_pos": torch.tensor([0, 1])}, None, "edge_pos has 2 entries for 1 edges"),
        ({}, ["a"], "Data has no 'x'"),
        ({"x": torch.tensor([0, -1])}, ["a"], "x holds the id -1"),
    ],
)
def test_from_pyg_checks_that_the_attributes_fit(attrs, vocabulary, message):
    """Before: IndexError, ValueError or AttributeError from inside, or a graph with a dangling edge."""
    with pytest.raises(GraphTransformError, match=message):
        from_pyg(_data(**attrs), vocabulary)
    assert structure(from_pyg(_data(x=torch.tensor([0, 1])), ["a"])) == ([(0, "a"), (0, "")], [(0, 0, 0, 1)])


def test_round_trip_structure():
    g = small_graph()
    back = from_pyg(to_pyg(g))
    assert structure(back) == structure(g)


def test_round_trip_through_vocabulary_ids():
    g = small_graph()
    texts = ["[external]", "alloca", "add", "ret", "i32"]
    data = to_pyg(g, {t: i for i, t in enumerate(texts)})
    assert structure(from_pyg(data, texts)) == structure(g)


def test_empty_graph():
    data = to_pyg(ProgramGraph())
    assert data.num_nodes == 0 and data.edge_index.shape == (2, 0)
    assert structure(from_pyg(data)) == ([], [])
    h = to_hetero(ProgramGraph())
    assert h["instruction"].num_nodes == 0 and len(h.edge_types) == 0


@st.composite
def random_graphs(draw):
    n = draw(st.integers(1, 12))
    g = ProgramGraph()
    for _ in range(n):
        g.node.add(type=draw(st.integers(0, 2)), text=draw(st.sampled_from(["a", "b", "i32", "ptr", "c"])))
    for _ in range(draw(st.integers(0, 30))):
        g.edge.add(
            flow=draw(st.integers(0, 2)),
            position=draw(st.integers(0, 5)),
            source=draw(st.integers(0, n - 1)),
            target=draw(st.integers(0, n - 1)),
        )
    return g


@settings(max_examples=60, deadline=None)
@given(random_graphs())
def test_round_trip_property(g):
    data = to_pyg(g)
    assert structure(from_pyg(data)) == structure(g)
    assert data.edge_index.shape[1] == len(g.edge)


@settings(max_examples=60, deadline=None)
@given(random_graphs())
def test_hetero_matches_protobuf(g):
    """Every protobuf edge appears exactly once, in its relation, with local indices mapping back to the nodes."""
    h = to_hetero(g)
    names = ["instruction", "variable", "constant"]
    flows = ["control", "data", "call"]
    expected = Counter((names[g.node[e.source].type], flows[e.flow], names[g.node[e.target].type]) for e in g.edge)
    assert {k: h[k].edge_index.shape[1] for k in h.edge_types} == dict(expected)
    seen = []
    for key in h.edge_types:
        s, _, d = key
        store = h[key]
        src = h[s].node_index[store.edge_index[0]].tolist()
        dst = h[d].node_index[store.edge_index[1]].tolist()
        ids = store.edge_id.tolist()
        assert ids == sorted(ids)  # protobuf order within a relation
        for i, a, b, p in zip(ids, src, dst, store.edge_pos.tolist(), strict=True):
            e = g.edge[i]
            assert (e.source, e.target, e.position) == (a, b, p)
        assert store.edge_attr.shape == (len(ids), 1)
        seen += ids
    assert sorted(seen) == list(range(len(g.edge)))
    assert sum(h[t].num_nodes for t in names) == len(g.node)


def test_hetero_relation_counts():
    h = to_hetero(small_graph(), {"i32": 0})
    counts = {k: h[k].edge_index.shape[1] for k in h.edge_types}
    assert counts == {
        ("instruction", "call", "instruction"): 2,
        ("instruction", "control", "instruction"): 2,
        ("instruction", "data", "variable"): 1,
        ("variable", "data", "instruction"): 1,
        ("constant", "data", "instruction"): 2,  # the parallel pair is kept
    }
    assert h["constant", "data", "instruction"].edge_pos.tolist() == [0, 1]
    assert h["instruction"].x.tolist() == [1, 1, 1, 1]  # all OOV
    assert h["variable"].x.tolist() == [0] and h["constant"].node_index.tolist() == [5]


def test_hetero_rejects_unknown_types():
    g = small_graph()
    g.node.add(type=7, text="?")
    with pytest.raises(GraphTransformError, match="node type"):
        to_hetero(g)


# --- real graphs from the original ProGraML builder (optional) ---

_C_SOURCE = """
int g = 5;
static int sq(int x) { return x * x; }
int f(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) { if (i % 3) s += sq(i); else s -= g; }
  switch (n) { case 1: return 7; case 2: return s; default: break; }
  return s + g;
}
"""


def _reference_binary() -> str | None:
    from tests.graph_builder.reference import find_llvm2graph

    return find_llvm2graph()


@pytest.mark.reference
def test_real_graph_round_trip(tmp_path):
    binary, clang = _reference_binary(), shutil.which("clang-14")
    if not binary or not clang:
        pytest.skip("needs the reference llvm2graph-10 and clang-14 (make reference)")
    src = tmp_path / "a.c"
    src.write_text(_C_SOURCE)
    ll = tmp_path / "a.ll"
    subprocess.run(
        [clang, "-S", "-emit-llvm", "-O0", "-Xclang", "-disable-noundef-analysis", str(src), "-o", str(ll)], check=True
    )
    text = ll.read_text()
    for word in ("noundef ", "mustprogress ", "willreturn "):
        text = text.replace(word, "")
    out = subprocess.run([binary, "--stdout_fmt=pb"], input=text.encode(), capture_output=True, check=True).stdout
    g = ProgramGraph.FromString(out)
    data = to_pyg(g)
    assert data.num_nodes == len(g.node) > 50
    assert structure(from_pyg(data)) == structure(g)
    np.testing.assert_array_equal(data.node_type.numpy(), [n.type for n in g.node])
    h = to_hetero(g)
    assert sum(h[k].edge_index.shape[1] for k in h.edge_types) == len(g.edge)
    assert ("variable", "data", "instruction") in h.edge_types
    assert ("instruction", "control", "instruction") in h.edge_types
