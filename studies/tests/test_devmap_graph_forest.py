"""studies/devmap_graph_forest.py: the devmap forest with the pooled states of the shipped data-flow GGNNs."""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

import programl  # noqa: E402
from programl.data.devmap import cross_validation_splits  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = runpy.run_path(str(ROOT / "studies" / "devmap_graph_forest.py"))


def _graphs():
    return [programl.from_llvm_ir((ROOT / "examples" / "dot_product.ll").read_text())]


def _keys(graphs):
    return [SCRIPT["graph_key"](g) for g in graphs]


def test_paired_difference_and_its_standard_error():
    diff, se = SCRIPT["paired_difference"]([0.92, 0.90, 0.91], [0.90, 0.90, 0.90])
    assert diff == pytest.approx(0.01)
    assert se == pytest.approx(np.std([0.02, 0.0, 0.01], ddof=1) / math.sqrt(3))
    assert math.isnan(SCRIPT["paired_difference"]([0.9], [0.8])[1])  # one seed: no spread


def test_the_graph_columns_reach_the_forest():
    """A label visible only in the graph states: the forest with them learns it, the one without cannot."""
    rng = np.random.default_rng(0)
    n = 200
    labels = rng.integers(0, 2, n)
    rich = rng.normal(size=(n, 5))  # carries nothing
    states = rng.normal(scale=0.1, size=(n, 170))
    states[:, 7] += 5.0 * labels  # the largest variance: the first principal component
    runtimes = np.stack([1.0 + labels, 2.0 - labels], axis=1)
    split = cross_validation_splits(labels, 5, 204)[0]
    metrics = SCRIPT["forest_pair"](rich, states, labels, runtimes, split, seed=0, components=2)
    assert metrics[SCRIPT["WITH"]]["accuracy"] >= 0.95
    assert metrics[SCRIPT["WITHOUT"]]["accuracy"] <= 0.75
    again = SCRIPT["forest_pair"](rich, states, labels, runtimes, split, seed=0, components=2, jobs=2)
    assert again == metrics  # a seed fixes both forests, whatever the threads


def test_pooled_states_of_a_real_graph():
    graphs = _graphs() * 2
    states = SCRIPT["pooled_states"](graphs, analyses=("reachability",), batch_graphs=1)
    assert states.shape == (2, 34)
    assert np.isfinite(states).all() and np.abs(states).sum() > 0
    assert np.array_equal(states[0], states[1])  # batching does not change a graph's row


def test_graph_features_do_not_change_the_key():
    """Rows of one kernel differ only in their graph features (inputs, label): one key, one pooled state."""
    graph = _graphs()[0]
    labelled = type(graph)()
    labelled.CopyFrom(graph)
    labelled.features.feature["devmap_label"].int64_list.value.append(1)
    assert SCRIPT["graph_key"](labelled) == SCRIPT["graph_key"](graph)
    assert labelled.HasField("features")  # the caller's graph is left as it was
    other = programl.from_llvm_ir("define i32 @f(i32 %a) {\n  ret i32 %a\n}\n")
    assert SCRIPT["graph_key"](other) != SCRIPT["graph_key"](graph)


def test_cache_is_reused_only_for_the_same_graphs(tmp_path, monkeypatch):
    calls = []

    def fake(graphs):
        calls.append(len(graphs))
        return np.full((len(graphs), 3), float(len(calls)))

    monkeypatch.setitem(SCRIPT["cached_states"].__globals__, "pooled_states", fake)
    cache = tmp_path / "states.npz"
    graphs = _graphs()
    first = SCRIPT["cached_states"](graphs, _keys(graphs), cache)
    assert SCRIPT["cached_states"](graphs, _keys(graphs), cache).tolist() == first.tolist() and calls == [1]
    other = graphs + [programl.from_llvm_ir("define i32 @f(i32 %a) {\n  ret i32 %a\n}\n")]
    assert SCRIPT["cached_states"](other, _keys(other), cache)[0, 0] == 2.0 and calls == [1, 2]


def test_missing_graphs_are_one_line(tmp_path, capsys):
    source = ROOT.parent / "shared" / "data" / "devmap"
    if not source.is_dir():
        pytest.skip(f"no devmap data at {source}")
    assert SCRIPT["main"](["--source-dir", str(source), "--data-dir", str(tmp_path)]) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("devmap_graph_forest.py: ") and "\n" not in error
