"""Dominance (SPEC §4.3): the diamond goldens, networkx dominators as oracle, the literal reference for counters.

The reference starts every set but the root's without the root, so the root spreads like a least fixed point: a
node on a cycle that avoids the root (or only reachable through such a cycle) is never labelled, unlike textbook
dominance. The oracle keeps these rules and asks ``networkx.immediate_dominators`` the rest: within the root's
function, without the root's incoming edges, a virtual entry feeds the root, every other node without
predecessors or with a predecessor outside the function, and every node on a cycle; the root dominates exactly
the labelled nodes.
"""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings

import programl.dataflow as df
from programl.dataflow.columnar import CONTROL, GraphView
from tests.dataflow import _reference as ref
from tests.dataflow._check import assert_like_reference, one
from tests.dataflow._graphs import CTRL, INST, VAR, dominance_diamond, make_graph
from tests.dataflow._strategies import program_graphs


def _one(g, root):
    return one(g, "dominance", root)


def test_diamond():
    assert _one(dominance_diamond(), 1) == ([0, 1, 1, 1, 1, 0], 4, 4)


def test_diamond_with_a_second_entry():
    assert _one(dominance_diamond(with_e=True), 1) == ([0, 1, 0, 1, 0, 0, 0], 5, 2)


def _dominated(g, root):
    members = {i for i in range(1, len(g.node)) if g.node[i].function == g.node[root].function}
    preds = {n: [] for n in members}
    for e in g.edge:
        if e.flow == CONTROL and e.target in members:
            preds[e.target].append(e.source)
    body = nx.DiGraph()
    body.add_nodes_from(members)
    body.add_edges_from((p, n) for n in members if n != root for p in preds[n] if p in members)
    cyclic = {n for comp in nx.strongly_connected_components(body) if len(comp) > 1 for n in comp}
    cyclic |= {n for n in members if body.has_edge(n, n)}
    entry = "entry"
    body.add_edge(entry, root)
    for n in members - {root}:
        if not preds[n] or any(p not in members for p in preds[n]) or n in cyclic:
            body.add_edge(entry, n)
    idom = nx.immediate_dominators(body, entry)
    out = set()
    for n in members:
        x = n
        while x != entry and x != root:
            x = idom[x]
        if x == root:
            out.add(n)
    return out


@settings(max_examples=150, deadline=None)
@given(program_graphs())
def test_labels_follow_dominators_and_counters_match_the_reference(g):
    view = GraphView.from_graph(g)
    rg = ref.Graph.from_proto(g)
    eligible = df.eligible_roots(view, "dominance").tolist()
    assert eligible == ref.eligible(rg, "dominance")
    for root in eligible:
        labels, _, _ = _one(view, root)
        assert {i for i, v in enumerate(labels) if v} == _dominated(g, root)
    assert_like_reference(view, rg, "dominance", eligible)


def test_acyclic_function_gives_textbook_dominance():
    # entry 1 -> 2 -> {3, 4} -> 5 -> 6; from 2: 2 dominates 3, 4, 5, 6 (and is not dominated by 1 in the labels)
    nodes = [(INST, "[external]", 0)] + [(INST, "x", 0)] * 6
    edges = [(1, 2, CTRL), (2, 3, CTRL), (2, 4, CTRL), (3, 5, CTRL), (4, 5, CTRL), (5, 6, CTRL)]
    labels, _, active = _one(make_graph(nodes, edges), 2)
    assert labels == [0, 0, 1, 1, 1, 1, 1] and active == 5


def test_loop_body_is_not_labelled():
    # 1 -> 2 -> 3 -> 2 (loop), 3 -> 4: the loop header 2 has a predecessor (3) that starts without the root
    nodes = [(INST, "[external]", 0)] + [(INST, "x", 0)] * 4
    edges = [(1, 2, CTRL), (2, 3, CTRL), (3, 2, CTRL), (3, 4, CTRL)]
    g = make_graph(nodes, edges)
    assert _one(g, 1)[0] == [0, 1, 0, 0, 0] == ref.dominance(ref.Graph.from_proto(g), 1)[0]


@pytest.mark.parametrize("extra", [999, 1000])
def test_step_limit(extra):
    # root plus `extra` variables of its function: each variable takes {itself} in the first sweep (one step each)
    g = make_graph([(INST, "[external]", 0), (INST, "r", 0)] + [(VAR, "v", 0)] * extra, [])
    assert _one(g, 1)[1] == extra == ref.dominance(ref.Graph.from_proto(g), 1)[1]


def test_more_than_1000_steps_is_an_error():
    g = make_graph([(INST, "[external]", 0), (INST, "r", 0)] + [(VAR, "v", 0)] * 1001, [])
    with pytest.raises(df.AnalysisError, match="^Dominance fixed-point not found in 1000 steps$"):
        df.analyze_arrays(g, "dominance", roots=[1])
    with pytest.raises(ref.RefError, match="1000 steps"):
        ref.dominance(ref.Graph.from_proto(g), 1)


def test_error_within_the_sweeps():
    # a chain laid out in reverse index order needs one sweep per node: 1100 instructions, > 1000 steps
    k = 1100
    nodes = [(INST, "[external]", 0)] + [(INST, "x", 0)] * k
    edges = [(i + 1, i, CTRL) for i in range(1, k)]
    with pytest.raises(df.AnalysisError, match="1000 steps"):
        df.analyze_arrays(make_graph(nodes, edges), "dominance", roots=[k])


def test_real_graphs(reference_graphs):
    checked = 0
    for g in reference_graphs.values():
        view = GraphView.from_graph(g)
        roots = df.eligible_roots(view, "dominance").tolist()[::9]
        checked += assert_like_reference(view, ref.Graph.from_proto(g), "dominance", roots)
    assert checked


@settings(max_examples=60, deadline=None)
@given(program_graphs(max_functions=2, max_instructions=25))
def test_long_straight_lines_and_loops_match_the_reference(g):
    # longer functions: straight lines (swept as one unit) broken by random back edges and parallel edges
    view = GraphView.from_graph(g)
    assert_like_reference(view, ref.Graph.from_proto(g), "dominance", df.eligible_roots(view, "dominance").tolist())
