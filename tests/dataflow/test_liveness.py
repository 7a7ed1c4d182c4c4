"""Liveness (SPEC §4.5): the textbook example, a textbook live-variable analysis as oracle, the literal reference
for the work-list limit and the step counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import programl.dataflow as df
from programl.dataflow import liveness
from programl.dataflow.columnar import CONTROL, INSTRUCTION, GraphView
from programl.dataflow.columnar import DATA as DATA_FLOW
from programl.dataflow.liveness import LiveSets, live_sets
from tests.dataflow import _reference as ref
from tests.dataflow._check import assert_like_reference, one
from tests.dataflow._graphs import CALL, CTRL, DATA, INST, VAR, liveness_textbook, make_graph
from tests.dataflow._strategies import program_graphs


def _one(g, root):
    return one(g, "liveness", root)


def _sets(g):
    sets = live_sets(GraphView.from_graph(g))
    n = len(g.node)
    return [set(sets.in_nodes(i).tolist()) for i in range(n)], [set(sets.out_nodes(i).tolist()) for i in range(n)]


def test_textbook_sets():
    live_in, live_out = _sets(liveness_textbook())
    assert live_out[6:] == [{1, 2, 4}, {2, 4}, {2, 3, 4}, set()]
    assert live_in[6:] == [set(), {1, 2}, {2, 4}, {2, 3, 4}]
    assert all(not s for s in live_in[:6] + live_out[:6])


def test_textbook_root_b1_step_3_from_a_duplicate_queue_entry():
    labels, step, active = _one(liveness_textbook(), 6)
    assert [i for i, v in enumerate(labels) if v] == [1, 2, 4]
    assert (step, active) == (3, 3)


def test_textbook_root_b2():
    labels, step, active = _one(liveness_textbook(), 7)
    assert [i for i, v in enumerate(labels) if v] == [2, 4]
    assert (step, active) == (2, 2)


def test_textbook_eligible_roots():
    assert df.eligible_roots(liveness_textbook(), "liveness").tolist() == [6, 7, 8]


def _small(nodes, edges):
    return make_graph([(INST, "[external]", 0)] + nodes, edges)


@pytest.mark.parametrize(
    ("graph", "expected_out"),
    [
        # write without read: a(1) -> v1(2)
        (_small([(INST, "a", 0), (VAR, "v1", 0)], [(0, 1, CALL), (1, 2, DATA)]), {}),
        # read after write: a(1) -> v1(2) -> b(3)
        (
            _small(
                [(INST, "a", 0), (VAR, "v1", 0), (INST, "b", 0)],
                [(0, 1, CALL), (1, 3, CTRL), (1, 2, DATA), (2, 3, DATA)],
            ),
            {1: {2}},
        ),
        # write after write: a(1), b(2) -> v1(4) -> c(3)
        (
            _small(
                [(INST, "a", 0), (INST, "b", 0), (INST, "c", 0), (VAR, "v1", 0)],
                [(0, 1, CALL), (1, 2, CTRL), (2, 3, CTRL), (1, 4, DATA), (2, 4, DATA), (4, 3, DATA)],
            ),
            {2: {4}},
        ),
        # branching: s0(1) -> s1(2) -> s2(3), s0 -> s2; s1 -> x(4) -> s2 -> y(5)
        (
            _small(
                [(INST, "s0", 0), (INST, "s1", 0), (INST, "s2", 0), (VAR, "x", 0), (VAR, "y", 0)],
                [(0, 1, CALL), (1, 2, CTRL), (1, 3, CTRL), (2, 3, CTRL), (2, 4, DATA), (4, 3, DATA), (3, 5, DATA)],
            ),
            {1: {4}, 2: {4}},
        ),
    ],
)
def test_small_cases(graph, expected_out):
    _, live_out = _sets(graph)
    assert {i: s for i, s in enumerate(live_out) if s} == expected_out


def test_no_live_value_means_no_eligible_root():
    g = _small([(INST, "a", 0), (VAR, "v1", 0)], [(0, 1, CALL), (1, 2, DATA)])
    with pytest.raises(df.AnalysisError, match="^No eligible root nodes in graph with 3 nodes$"):
        df.analyze(g, "liveness")


def test_loop_without_uses_never_terminates():
    # a <-> b, a -> c: an empty live-in set always re-queues the predecessors, so a and b alternate forever
    g = _small([(INST, "a", 0), (INST, "b", 0), (INST, "c", 0)], [(1, 2, CTRL), (2, 1, CTRL), (1, 3, CTRL)])
    with pytest.raises(df.AnalysisError, match="^Failed to terminate liveness computation in 5000 steps$"):
        df.analyze(g, "liveness")
    with pytest.raises(ref.RefError):
        ref.liveness_sets(ref.Graph.from_proto(g))


def _textbook_liveness(g):
    """Round-robin IN = use | (OUT - def), OUT = union of successors' IN, to a fixed point, over the nodes that can
    reach an exit (an instruction without control successors); the rest stay empty, as the reference never visits
    them."""
    n = len(g.node)
    succ = [[] for _ in range(n)]
    pred = [[] for _ in range(n)]
    use = [set() for _ in range(n)]
    define = [set() for _ in range(n)]
    for e in g.edge:
        if e.flow == CONTROL:
            succ[e.source].append(e.target)
            pred[e.target].append(e.source)
        elif e.flow == DATA_FLOW:
            use[e.target].add(e.source)
            define[e.source].add(e.target)
    region = {i for i in range(n) if g.node[i].type == INSTRUCTION and not succ[i]}
    stack = list(region)
    while stack:
        for p in pred[stack.pop()]:
            if p not in region:
                region.add(p)
                stack.append(p)
    live_in = [set() for _ in range(n)]
    live_out = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for i in sorted(region):
            out = set().union(*(live_in[s] for s in succ[i]))
            new = use[i] | (out - define[i])
            if new != live_in[i] or out != live_out[i]:
                live_in[i], live_out[i] = new, out
                changed = True
    return live_in, live_out


@settings(max_examples=200, deadline=None)
@given(program_graphs())
def test_sets_are_textbook_liveness_and_counters_match_the_reference(g):
    rg = ref.Graph.from_proto(g)
    view = GraphView.from_graph(g)
    try:
        ref_in, ref_out, _ = ref.liveness_sets(rg)
    except ref.RefError as error:
        with pytest.raises(df.AnalysisError, match=str(error)):
            live_sets(view)
        return
    live_in, live_out = _sets(g)
    assert (live_in, live_out) == _textbook_liveness(g) == (ref_in, ref_out)
    eligible = df.eligible_roots(view, "liveness").tolist()
    assert eligible == ref.eligible(rg, "liveness")
    assert_like_reference(view, rg, "liveness", eligible)


def test_real_graphs(reference_graphs):
    for g in reference_graphs.values():
        view = GraphView.from_graph(g)
        rg = ref.Graph.from_proto(g)
        try:
            eligible = ref.eligible(rg, "liveness")
        except ref.RefError as error:
            with pytest.raises(df.AnalysisError, match=str(error)):
                df.eligible_roots(view, "liveness")
            continue
        assert df.eligible_roots(view, "liveness").tolist() == eligible
        assert_like_reference(view, rg, "liveness", eligible[::11])


def _dense_outcome(g):
    """Sets and all-roots labels with the dense representation, or the AnalysisError."""
    view = GraphView.from_graph(g)
    try:
        sets = live_sets(view)
    except df.AnalysisError as error:
        return error, None
    eligible = df.eligible_roots(view, "liveness")
    return sets, df.analyze_arrays(view, "liveness", max_roots=None) if len(eligible) else None


@settings(max_examples=150, deadline=None)
@given(program_graphs())
def test_chunked_sets_match_the_dense_ones(g):
    # issue 12, item 10: big functions keep their sets in chunks; force 2-bit chunks on every graph and compare
    dense, labels = _dense_outcome(g)
    saved = liveness.DENSE_VALUES, liveness.CHUNK_BITS
    liveness.DENSE_VALUES, liveness.CHUNK_BITS = 0, 2
    try:
        chunked, chunked_labels = _dense_outcome(g)
    finally:
        liveness.DENSE_VALUES, liveness.CHUNK_BITS = saved
    if isinstance(dense, df.AnalysisError):
        assert str(chunked) == str(dense)
        return
    assert isinstance(chunked, LiveSets) and chunked.pops == dense.pops
    for i in range(len(g.node)):
        assert chunked.out_nodes(i).tolist() == dense.out_nodes(i).tolist()
        assert chunked.in_nodes(i).tolist() == dense.in_nodes(i).tolist()
    assert np.array_equal(chunked.has_out(), dense.has_out())
    assert chunked_labels == labels
