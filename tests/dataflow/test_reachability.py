"""Reachability (SPEC §4.2): golden chains, a plain BFS closure as oracle, the literal reference for counters."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings

import programl.dataflow as df
from programl.dataflow.columnar import CONTROL, GraphView
from tests.dataflow import _reference as ref
from tests.dataflow._check import assert_like_reference, one
from tests.dataflow._graphs import reachability_chain, reachability_diamond
from tests.dataflow._strategies import program_graphs


def _one(g, root):
    return one(g, "reachability", root)


def test_chain_from_a():
    assert _one(reachability_chain(), 1) == ([0, 1, 1, 1, 1], 4, 4)


def test_chain_from_d():
    assert _one(reachability_chain(), 4) == ([0, 0, 0, 0, 1], 1, 1)


def test_diamond_counts_the_duplicate_dequeue():
    # d is enqueued by b and by c before it is dequeued: dequeued twice, so 5 dequeues for 4 labelled nodes
    assert _one(reachability_diamond(), 1) == ([0, 1, 1, 1, 1], 3, 5)


def test_eligible_roots_are_instructions_from_index_1():
    assert df.eligible_roots(reachability_chain(), "reachability").tolist() == [1, 2, 3, 4]


def _closure(g, root):
    control = nx.MultiDiGraph()
    control.add_nodes_from(range(len(g.node)))
    control.add_edges_from((e.source, e.target) for e in g.edge if e.flow == CONTROL)
    return nx.descendants(control, root) | {root}


@settings(max_examples=150, deadline=None)
@given(program_graphs())
def test_labels_are_the_bfs_closure_and_counters_match_the_reference(g):
    view = GraphView.from_graph(g)
    rg = ref.Graph.from_proto(g)
    eligible = df.eligible_roots(view, "reachability").tolist()
    assert eligible == ref.eligible(rg, "reachability")
    for root in eligible:
        labels, _, _ = _one(view, root)
        assert {i for i, v in enumerate(labels) if v} == _closure(g, root)
    assert_like_reference(view, rg, "reachability", eligible)


def test_real_graphs(reference_graphs):
    checked = 0
    for g in reference_graphs.values():
        view = GraphView.from_graph(g)
        roots = df.eligible_roots(view, "reachability").tolist()[::7]
        checked += assert_like_reference(view, ref.Graph.from_proto(g), "reachability", roots)
    assert checked
