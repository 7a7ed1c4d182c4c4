"""Distances from a data-flow root and scores bucketed by them (studies/distance.py): hand-made graphs with
known distances, networkx as the oracle on random graphs, and the analyses' own labels as invariants."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from programl.dataflow import AnalysisError, GraphView, analyze_arrays, eligible_roots
from studies.distance import (
    BUCKETS,
    UNREACHABLE,
    DistanceScores,
    bfs_distances,
    bucket_index,
    control_distances,
    hop_distances,
    root_distances,
)
from tests.dataflow._graphs import CALL, CONST, CTRL, DATA, INST, VAR, liveness_textbook, make_graph
from tests.dataflow._strategies import program_graphs


def small_program():
    """Instructions 1 -> 2 -> 3 -> 4 -> 5 (control); 1 defines v6, used by 4; constant 7 used by 5; v8 used by 1;
    v9 used by 2 only; an external node 0 with a call edge to 1; instruction 10 in another function, using c7."""
    nodes = [(INST, "[external]", 0)] + [(INST, "i", 0)] * 5 + [(VAR, "v", 0), (CONST, "c", 0), (VAR, "v", 0)]
    nodes += [(VAR, "v", 0), (INST, "j", 1)]
    edges = [(1, 2, CTRL), (2, 3, CTRL), (3, 4, CTRL), (4, 5, CTRL), (0, 1, CALL)]
    edges += [(1, 6, DATA), (6, 4, DATA), (7, 5, DATA), (8, 1, DATA), (9, 2, DATA), (7, 10, DATA)]
    return make_graph(nodes, edges)


def test_control_distance_of_instructions_and_values() -> None:
    g = small_program()
    #              0   1  2  3  4  5  v6 c7 v8  v9  j10
    expected = [-1, -1, 0, 1, 2, 3, 3, 4, -1, 1, -1]
    assert control_distances(g, 2).tolist() == expected
    # from 1: v8 is used by the root itself (1), v6 by 4 (3 + 1), c7 by 5 (4 + 1) and by 10 (unreached)
    assert control_distances(g, 1).tolist() == [-1, 0, 1, 2, 3, 4, 4, 5, 1, 2, -1]


def test_hop_distance_ignores_direction_and_follows_every_flow() -> None:
    g = small_program()
    # from 2: 1 (control, backward), 0 (call, backward), c7 via 5 or via 10? 5 is 3 away -> c7 at 4; j10 at 5
    assert hop_distances(g, 2).tolist() == [2, 1, 0, 1, 2, 3, 2, 4, 2, 1, 5]
    isolated = make_graph([(INST, "a", 0), (INST, "b", 0)], [])
    assert hop_distances(isolated, 0).tolist() == [0, UNREACHABLE]


def test_root_distances_and_a_loop_back_to_the_root() -> None:
    # a loop 1 -> 2 -> 1: the value v3 used by the root is 1 away whatever the loop
    g = make_graph(
        [(INST, "x", 0), (INST, "a", 0), (INST, "b", 0), (VAR, "v", 0)],
        [(1, 2, CTRL), (2, 1, CTRL), (3, 1, DATA), (2, 3, DATA)],
    )
    assert root_distances(g, 1, "control").tolist() == [-1, 0, 1, 1]
    assert root_distances(g, 1, "hops").tolist() == [-1, 0, 1, 1]
    with pytest.raises(ValueError, match="unknown distance 'nope'"):
        root_distances(g, 1, "nope")


def test_a_long_chain_fills_every_bucket() -> None:
    n = 300
    g = make_graph([(INST, "i", 0)] * (n + 1), [(i, i + 1, CTRL) for i in range(n - 1)])  # node n is isolated
    for kind in ("hops", "control"):
        d = root_distances(g, 0, kind)
        assert d[:n].tolist() == list(range(n)) and d[n] == UNREACHABLE
        counts = np.bincount(bucket_index(d), minlength=len(BUCKETS))
        assert dict(zip(BUCKETS, counts.tolist())) == {
            "0-5": 6,
            "6-10": 5,
            "11-20": 10,
            "21-30": 10,
            "31-60": 30,
            "61-200": 140,
            ">200": 99,
            "unreachable": 1,
        }


def test_bucket_bounds() -> None:
    d = [0, 5, 6, 10, 11, 20, 21, 30, 31, 60, 61, 200, 201, 10**6, -1]
    assert bucket_index(d).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7]


def test_bfs_from_several_sources() -> None:
    # 0 -> 1 -> 2 -> 3, 4 -> 3
    indptr, indices = [0, 1, 2, 3, 3, 4], [1, 2, 3, 3]
    assert bfs_distances(indptr, indices, [0]).tolist() == [0, 1, 2, 3, -1]
    assert bfs_distances(indptr, indices, [0, 4]).tolist() == [0, 1, 2, 1, 0]


def test_liveness_textbook_values_are_within_reach() -> None:
    g = liveness_textbook()
    result = analyze_arrays(g, "liveness", roots=[6, 7, 8])
    for root, labels in zip(result.roots.tolist(), result.labels.astype(bool)):
        d = control_distances(g, root)
        assert labels.any() and (d[labels] >= 1).all()


def _networkx_oracle(g, root: int) -> tuple[list[int], list[int]]:
    n = len(g.node)
    undirected = nx.MultiGraph()
    undirected.add_nodes_from(range(n))
    control = nx.DiGraph()
    control.add_nodes_from(range(n))
    for e in g.edge:
        undirected.add_edge(e.source, e.target)
        if e.flow == CTRL:
            control.add_edge(e.source, e.target)
    hop = nx.single_source_shortest_path_length(undirected, root)
    ctrl = nx.single_source_shortest_path_length(control, root)
    hops = [hop.get(v, -1) for v in range(n)]
    out = [ctrl.get(v, -1) if g.node[v].type == INST else -1 for v in range(n)]
    for e in g.edge:
        src, dst = e.source, e.target
        if e.flow == DATA and g.node[src].type != INST and g.node[dst].type == INST and ctrl.get(dst) is not None:
            out[src] = ctrl[dst] + 1 if out[src] < 0 else min(out[src], ctrl[dst] + 1)
    out[root] = 0
    return hops, out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program_graphs(cross_function=True))
def test_distances_match_networkx_and_bound_the_labels(g) -> None:
    view = GraphView.from_graph(g)
    for root in range(0, len(g.node), 3):
        hops, control = _networkx_oracle(g, root)
        assert hop_distances(view, root).tolist() == hops
        assert control_distances(view, root).tolist() == control
    # liveness: every live-out value has a forward control path from the root to a use; reachability: exactly the
    # instructions forward control flow reaches
    for analysis in ("liveness", "reachability"):
        try:
            roots = eligible_roots(view, analysis)[:4]
            result = analyze_arrays(view, analysis, roots=roots) if len(roots) else None
        except AnalysisError:  # a graph the reference gives up on (liveness's work-list limit)
            continue
        if result is None:
            continue
        for root, labels in zip(result.roots.tolist(), result.labels.astype(bool)):
            d = control_distances(view, root)
            if analysis == "liveness":
                assert (d[labels] >= 1).all()
            else:
                assert labels.tolist() == ((d >= 0) & (view.node_type == INST)).tolist()


def test_scores_per_bucket_and_pooled() -> None:
    #            bucket:  0-5  0-5  6-10 6-10 11-20 >200 unreach unreach
    distances = np.array([0, 3, 6, 10, 15, 500, -1, -1])
    target = np.array([1, 1, 1, 0, 1, 1, 0, 1], dtype=bool)
    predicted = np.array([1, 0, 1, 1, 0, 0, 1, 0], dtype=bool)
    s = DistanceScores().add(distances, predicted, target)
    rows = {r["bucket"]: r for r in s.rows()}
    assert (rows["0-5"]["true_positives"], rows["0-5"]["false_negatives"], rows["0-5"]["false_positives"]) == (1, 1, 0)
    assert (
        rows["0-5"]["precision"] == 1.0 and rows["0-5"]["recall"] == 0.5 and rows["0-5"]["f1"] == pytest.approx(2 / 3)
    )
    assert (rows["6-10"]["true_positives"], rows["6-10"]["false_positives"], rows["6-10"]["precision"]) == (1, 1, 0.5)
    assert rows["11-20"]["recall"] == 0.0 and rows["11-20"]["f1"] == 0.0
    assert rows["21-30"]["nodes"] == 0 and rows["21-30"]["precision"] == 0.0
    assert rows["unreachable"]["false_positives"] == 1 and rows["unreachable"]["false_negatives"] == 1
    assert rows["0-5"]["positive_share"] == pytest.approx(2 / 6)
    assert rows[">200"]["miss_share"] == pytest.approx(1 / 4)
    assert sum(r["positive_share"] for r in rows.values()) == pytest.approx(1.0)
    pooled = s.pooled()
    assert (pooled["true_positives"], pooled["false_negatives"], pooled["false_positives"]) == (2, 4, 2)
    assert pooled["precision"] == 0.5 and pooled["recall"] == pytest.approx(1 / 3)
    assert s.beyond(10) == {"positives": 3, "misses": 3}
    assert s.beyond(1000) == {"positives": 1, "misses": 1}
    assert "unreachable" in s.table() and s.to_dict()["examples"] == 1
    with pytest.raises(ValueError, match="3 distances, 2 predictions"):
        s.add([0, 1, 2], [True, False], [True, False])


def test_pooled_equals_all_nodes_pooled_whatever_the_split_into_examples() -> None:
    rng = np.random.default_rng(7)
    d = rng.integers(-1, 400, size=5000)
    t = rng.random(5000) < 0.3
    p = rng.random(5000) < 0.4
    whole = DistanceScores().add(d, p, t)
    parts = DistanceScores()
    for chunk in np.array_split(np.arange(5000), 13):
        parts.merge(DistanceScores().add(d[chunk], p[chunk], t[chunk]))
    tp, fp, fn = int((p & t).sum()), int((p & ~t).sum()), int((~p & t).sum())
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    for s in (whole, parts):
        pooled = s.pooled()
        assert (pooled["true_positives"], pooled["false_positives"], pooled["false_negatives"]) == (tp, fp, fn)
        assert pooled["precision"] == pytest.approx(precision) and pooled["recall"] == pytest.approx(recall)
        assert pooled["f1"] == pytest.approx(2 * precision * recall / (precision + recall))
    np.testing.assert_array_equal(whole.counts, parts.counts)
    np.testing.assert_array_equal(whole.positives_at, parts.positives_at)
    assert parts.examples == 13
