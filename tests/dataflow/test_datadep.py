"""DataDep (SPEC §4.4): the golden chain, reverse data reachability as oracle, the literal reference for counters."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings

import programl.dataflow as df
from programl.dataflow.columnar import DATA, INSTRUCTION, GraphView
from programl.dataflow.datadep import DataDep
from tests.dataflow import _reference as ref
from tests.dataflow._check import assert_like_reference, one
from tests.dataflow._graphs import datadep_chain
from tests.dataflow._strategies import program_graphs


def _one(g, root):
    return one(g, "datadep", root)


def test_golden_root_v1():
    assert _one(datadep_chain(), 5) == ([0, 1, 0, 0, 0, 0, 0], 1, 1)


def test_golden_root_v2():
    assert _one(datadep_chain(), 6) == ([0, 1, 1, 0, 0, 0, 0], 3, 2)


def test_instruction_roots_run_like_the_reference_unit_tests():
    # Not eligible (roots are variables), but RunOne accepts them: the root itself is a labelled instruction.
    r = DataDep(GraphView.from_graph(datadep_chain())).run([3, 4])
    assert r.labels.tolist() == [[0, 0, 0, 1, 0, 0, 0], [0, 1, 1, 0, 1, 0, 0]]
    assert r.step_counts.tolist() == [0, 4] and r.active_node_counts.tolist() == [1, 3]


def test_only_variables_are_eligible():
    assert df.eligible_roots(datadep_chain(), "datadep").tolist() == [5, 6]
    with pytest.raises(df.AnalysisError, match="not an eligible datadep root"):
        df.analyze_arrays(datadep_chain(), "datadep", roots=[3])


def _dependencies(g, root):
    data = nx.MultiDiGraph()
    data.add_nodes_from(range(len(g.node)))
    data.add_edges_from((e.source, e.target) for e in g.edge if e.flow == DATA)
    return {i for i in nx.ancestors(data, root) | {root} if g.node[i].type == INSTRUCTION}


@settings(max_examples=150, deadline=None)
@given(program_graphs())
def test_labels_are_reverse_data_reachability_and_counters_match_the_reference(g):
    view = GraphView.from_graph(g)
    rg = ref.Graph.from_proto(g)
    eligible = df.eligible_roots(view, "datadep").tolist()
    assert eligible == ref.eligible(rg, "datadep")
    for root in eligible:
        labels, _, _ = _one(view, root)
        assert {i for i, v in enumerate(labels) if v} == _dependencies(g, root)
    assert_like_reference(view, rg, "datadep", eligible)


def test_real_graphs(reference_graphs):
    checked = 0
    for g in reference_graphs.values():
        view = GraphView.from_graph(g)
        roots = df.eligible_roots(view, "datadep").tolist()[::5]
        checked += assert_like_reference(view, ref.Graph.from_proto(g), "datadep", roots)
    assert checked
