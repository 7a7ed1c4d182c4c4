"""The public API (programl/dataflow/analyze.py): root sampling, explicit roots, errors, determinism (SPEC §4.1,
Policy 4), and every analysis on graphs of real programs against the literal reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import programl.dataflow as df
from programl.dataflow.columnar import GraphView
from programl.dataflow.records import ACTIVE_NODE_COUNT, ROOT_NODE, STEP_COUNT, VALUE
from programl.proto import ProgramGraphFeaturesList
from tests.dataflow import _reference as ref
from tests.dataflow._check import assert_like_reference
from tests.dataflow._graphs import INST, liveness_textbook, make_graph, reachability_chain
from tests.dataflow._strategies import program_graphs


def test_analyses_names():
    assert df.ANALYSES == ("reachability", "dominance", "datadep", "liveness", "subexpressions")


@pytest.mark.parametrize(
    ("eligible", "max_roots", "expected"),
    [(1, 10, 1), (10, 10, 1), (11, 10, 2), (95, 10, 10), (101, 10, 10), (1000, 10, 10), (1000, None, 100), (50, 3, 3)],
)
def test_number_of_roots(eligible, max_roots, expected):
    assert df.num_roots(eligible, max_roots) == expected
    roots = df.select_roots(np.arange(100, 100 + eligible), max_roots, seed=1)
    assert len(roots) == expected == len(set(roots.tolist()))
    assert all(100 <= r < 100 + eligible for r in roots)


def test_seed_picks_the_roots():
    eligible = np.arange(1, 500)
    assert df.select_roots(eligible, seed=7).tolist() == df.select_roots(eligible, seed=7).tolist()
    assert df.select_roots(eligible, seed=7).tolist() != df.select_roots(eligible, seed=8).tolist()
    assert df.select_roots(eligible, seed=7).tolist() == np.random.default_rng(7).permutation(eligible)[:10].tolist()


@settings(max_examples=60, deadline=None)
@given(program_graphs())
def test_same_graph_and_seed_give_identical_bytes(g):
    for analysis in df.ANALYSES:
        try:
            first = df.analyze(g, analysis, seed=3)
        except df.AnalysisError:
            with pytest.raises(df.AnalysisError):
                df.analyze(GraphView.from_graph(g), analysis, seed=3)
            continue
        again = df.analyze(GraphView.from_graph(_copy(g)), analysis, seed=3)
        assert first.SerializeToString(deterministic=True) == again.SerializeToString(deterministic=True)
        arrays = df.analyze_arrays(g, analysis, seed=3)
        assert df.labels_to_bytes(arrays) == first.SerializeToString(deterministic=True)
        eligible = df.eligible_roots(g, analysis)
        assert len(arrays) == df.num_roots(len(eligible))
        assert arrays.roots.tolist() == df.select_roots(eligible, seed=3).tolist()


def _copy(g):  # noqa: N802
    return type(g).FromString(g.SerializeToString())


def test_record_layout():
    labels = df.analyze(liveness_textbook(), "liveness", roots=[7, 6])
    assert isinstance(labels, ProgramGraphFeaturesList) and len(labels.graph) == 2
    for record, root in zip(labels.graph, [7, 6], strict=True):
        lists = record.node_features.feature_list
        assert sorted(lists) == [ROOT_NODE, VALUE]
        assert [f.int64_list.value[:] for f in lists[ROOT_NODE].feature] == [[int(i == root)] for i in range(10)]
        assert len(lists[VALUE].feature) == 10
        assert sorted(record.features.feature) == [ACTIVE_NODE_COUNT, STEP_COUNT]
        assert not record.edge_features.feature_list and not record.function_features.feature_list
    assert labels.graph[0].features.feature[STEP_COUNT].int64_list.value[:] == [2]
    assert labels.graph[1].features.feature[STEP_COUNT].int64_list.value[:] == [3]


def test_explicit_roots_keep_their_order():
    r = df.analyze_arrays(reachability_chain(), "reachability", roots=[3, 1, 3])
    assert r.roots.tolist() == [3, 1, 3] and r.analysis == "reachability"
    assert r.step_counts.tolist() == [2, 4, 2]


@pytest.mark.parametrize("root", [0, 5, -1, 99, 2**70, -(2**70)])
def test_ineligible_explicit_root_is_an_error(root):
    with pytest.raises(df.AnalysisError, match="not an eligible reachability root"):
        df.analyze_arrays(reachability_chain(), "reachability", roots=[root])


@pytest.mark.parametrize("root", [1.7, 1.0, "1", True, np.float64(1.0), None])
def test_a_root_that_is_not_an_integer_is_an_error(root):
    """numpy would have taken 1.7, "1" and True for node 1."""
    with pytest.raises(df.AnalysisError, match="roots must be node indices \\(integers\\), not "):
        df.analyze_arrays(reachability_chain(), "reachability", roots=[root])
    with pytest.raises(df.AnalysisError, match="roots must be node indices"):
        df.analyze_arrays(reachability_chain(), "reachability", roots=np.array([root]))


def test_roots_may_be_numpy_integers():
    r = df.analyze_arrays(reachability_chain(), "reachability", roots=np.array([[3], [1]], dtype=np.int32))
    assert r.roots.tolist() == [3, 1]
    assert df.analyze_arrays(reachability_chain(), "reachability", roots=[np.int64(3)]).roots.tolist() == [3]


@pytest.mark.parametrize("seed", [-1, 1.5, "0", True])
def test_a_seed_that_is_not_a_non_negative_integer_is_an_error(seed):
    with pytest.raises(df.AnalysisError, match="seed must be a non-negative integer or None, not "):
        df.analyze_arrays(reachability_chain(), "reachability", seed=seed)


def test_no_eligible_root_is_an_error():
    g = make_graph([(INST, "[external]", 0)], [])
    for analysis in df.ANALYSES:
        with pytest.raises(df.AnalysisError, match="^No eligible root nodes in graph with 1 nodes$"):
            df.analyze(g, analysis)


def test_bad_arguments():
    with pytest.raises(df.AnalysisError, match="unknown analysis 'domtree'"):
        df.analyze(reachability_chain(), "domtree")
    with pytest.raises(df.AnalysisError, match="max_roots"):
        df.analyze(reachability_chain(), "reachability", max_roots=0)
    with pytest.raises(TypeError):
        df.analyze("graph", "reachability")


def test_a_view_is_shared_by_analyses():
    view = GraphView.from_graph(liveness_textbook())
    first = df.analyze_arrays(view, "liveness")
    assert "liveness.sets" in view.cache
    assert df.analyze_arrays(view, "liveness") == first == df.analyze_arrays(liveness_textbook(), "liveness")


@settings(max_examples=100, deadline=None)
@given(program_graphs(cross_function=True))
def test_control_edges_across_functions_match_the_reference(g):
    view = GraphView.from_graph(g)
    rg = ref.Graph.from_proto(g)
    for analysis in df.ANALYSES:
        try:
            eligible = ref.eligible(rg, analysis)
        except ref.RefError as error:
            with pytest.raises(df.AnalysisError, match=str(error)):
                df.eligible_roots(view, analysis)
            continue
        assert df.eligible_roots(view, analysis).tolist() == eligible
        assert_like_reference(view, rg, analysis, eligible)


def _check_against_reference(graphs):
    checked = 0
    for name, g in graphs.items():
        view = GraphView.from_graph(g)
        rg = ref.Graph.from_proto(g)
        for analysis in df.ANALYSES:
            try:
                result = df.analyze_arrays(view, analysis, seed=0)
            except df.AnalysisError as error:
                message = str(error)
                try:
                    eligible = ref.eligible(rg, analysis)
                except ref.RefError as ref_error:
                    assert str(ref_error) == message, (name, analysis)
                    continue
                if not eligible:
                    assert message.startswith("No eligible root nodes"), (name, analysis)
                    continue
                roots = df.select_roots(np.asarray(eligible), seed=0).tolist()
                with pytest.raises(ref.RefError, match=message):
                    for root in roots:
                        ref.RUN_ONE[analysis](rg, root)
                continue
            assert df.eligible_roots(view, analysis).tolist() == ref.eligible(rg, analysis)
            for k, root in enumerate(result.roots.tolist()):
                try:
                    expected = ref.RUN_ONE[analysis](rg, root)
                except ref.QueueTooLong:
                    continue
                got = (result.labels[k].tolist(), int(result.step_counts[k]), int(result.active_node_counts[k]))
                assert got == expected, (name, analysis, root)
                checked += 1
    return checked


def test_reference_built_graphs(reference_graphs):
    assert _check_against_reference(reference_graphs) > 0


def test_own_graphs(own_graphs):
    assert _check_against_reference(own_graphs) > 0


def test_analyses_of_one_graph_share_a_cached_view():
    # issue 12, item 11: df.analyze(graph, a) once per analysis builds the view (and its adjacency) once
    df.clear_view_cache()
    g = liveness_textbook()
    view = df.cached_view(g)
    assert df.cached_view(g) is view
    copy = type(g).FromString(g.SerializeToString())
    assert df.cached_view(copy) is view  # same content, same view
    labels = df.analyze(g, "liveness")
    assert "analysis.liveness" in view.cache
    assert df.analyze(g, "liveness") == labels == df.analyze(GraphView.from_graph(g), "liveness")
    g.node[6].text = "changed"
    changed = df.cached_view(g)
    assert changed is not view and changed.node_text[6] == "changed" and view.node_text[6] != "changed"
    df.clear_view_cache()
    assert df.cached_view(copy) is not view


def test_view_cache_is_bounded():
    df.clear_view_cache()
    graphs = []
    for k in range(9):
        g = reachability_chain()
        g.node[1].text = f"a{k}"
        graphs.append(g)
    views = [df.cached_view(g) for g in graphs]
    assert df.cached_view(graphs[-1]) is views[-1]
    assert df.cached_view(graphs[0]) is not views[0]  # evicted: at most a few views are kept
    df.clear_view_cache()
