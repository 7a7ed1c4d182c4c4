"""Subexpressions (SPEC §4.6; Policy 4): the goldens, grouping by (opcode, operands) as oracle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import programl.dataflow as df
from programl.dataflow.columnar import INSTRUCTION, GraphView
from programl.dataflow.subexpressions import Subexpressions
from tests.dataflow import _reference as ref
from tests.dataflow._graphs import datadep_chain, subexpressions_example
from tests.dataflow._strategies import program_graphs


def _groups(g):
    return sorted(sorted(x.tolist()) for x in Subexpressions(GraphView.from_graph(g)).groups)


def test_commutative_example():
    g = subexpressions_example()
    assert _groups(g) == [[9, 10]]
    r = df.analyze_arrays(g, "subexpressions", roots=[9])
    assert [i for i, v in enumerate(r.labels[0]) if v] == [9, 10]
    assert (int(r.step_counts[0]), int(r.active_node_counts[0])) == (2, 2)


def test_flipped_operands_of_a_commutative_opcode_match():
    assert _groups(subexpressions_example(s1_operands=(5, 4), opcode="mul")) == [[9, 10]]


def test_flipped_operands_of_a_non_commutative_opcode_differ():
    g = subexpressions_example(s1_operands=(5, 4), opcode="sdiv")
    assert _groups(g) == []
    with pytest.raises(df.AnalysisError, match="No eligible root nodes"):
        df.analyze(g, "subexpressions")


def test_same_operand_order_of_a_non_commutative_opcode_matches():
    assert _groups(subexpressions_example(s1_operands=(4, 5), opcode="sdiv")) == [[9, 10]]


def test_policy_4_runs_subexpressions_not_datadep():
    # the reference CLI would run datadep here and label variable roots; subexpressions has no group at all
    with pytest.raises(df.AnalysisError, match="No eligible root nodes"):
        df.analyze(datadep_chain(), "subexpressions")
    r = df.analyze_arrays(subexpressions_example(), "subexpressions", max_roots=None)
    assert all(subexpressions_example().node[root].type == INSTRUCTION for root in r.roots)
    assert set(r.step_counts.tolist()) == {2}


@settings(max_examples=200, deadline=None)
@given(program_graphs(max_constants=6))
def test_groups_are_equal_keys(g):
    rg = ref.Graph.from_proto(g)
    assert _groups(g) == sorted(sorted(s) for s in ref.subexpression_groups(rg))
    view = GraphView.from_graph(g)
    eligible = df.eligible_roots(view, "subexpressions").tolist()
    assert eligible == ref.eligible(rg, "subexpressions")
    if eligible:
        r = df.analyze_arrays(view, "subexpressions", roots=eligible)
        for k, root in enumerate(eligible):
            assert (r.labels[k].tolist(), int(r.step_counts[k]), int(r.active_node_counts[k])) == ref.subexpressions(
                rg, root
            )


def test_real_graphs(reference_graphs):
    for name, g in reference_graphs.items():
        rg = ref.Graph.from_proto(g)
        assert _groups(g) == sorted(sorted(s) for s in ref.subexpression_groups(rg)), name
