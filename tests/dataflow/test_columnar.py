"""The columnar view (programl/dataflow/columnar.py): arrays and CSR adjacency in edge order (SPEC §4.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from programl.dataflow.columnar import CALL, CONTROL, GraphView, as_view
from programl.dataflow.columnar import DATA as DATA_FLOW
from programl.exceptions import AnalysisError
from tests.dataflow._graphs import CTRL, DATA, INST, VAR, make_graph
from tests.dataflow._strategies import program_graphs


@settings(max_examples=60, deadline=None)
@given(program_graphs())
def test_arrays_match_the_message(g):
    view = GraphView.from_graph(g)
    assert view.num_nodes == len(g.node) and view.num_edges == len(g.edge)
    assert view.node_type.tolist() == [n.type for n in g.node]
    assert view.node_function.tolist() == [n.function for n in g.node]
    assert view.node_text == [n.text for n in g.node]
    assert view.edge_src.tolist() == [e.source for e in g.edge]
    assert view.edge_dst.tolist() == [e.target for e in g.edge]
    assert view.edge_flow.tolist() == [e.flow for e in g.edge]
    assert view.edge_pos.tolist() == [e.position for e in g.edge]


@settings(max_examples=60, deadline=None)
@given(program_graphs())
def test_csr_rows_list_neighbours_in_edge_order(g):
    view = GraphView.from_graph(g)
    for flow in (CONTROL, DATA_FLOW, CALL):
        for reverse in (False, True):
            expected = [[] for _ in g.node]
            for i, e in enumerate(g.edge):
                if e.flow == flow:
                    row, col = (e.target, e.source) if reverse else (e.source, e.target)
                    expected[row].append((col, i))
            csr = view.csr(flow, reverse)
            got = [
                list(zip(csr.indices[a:b].tolist(), csr.edge_ids[a:b].tolist(), strict=True))
                for a, b in zip(csr.indptr[:-1], csr.indptr[1:], strict=True)
            ]
            assert got == expected


@settings(max_examples=40, deadline=None)
@given(program_graphs())
def test_combined_lists_put_control_before_data(g):
    view = GraphView.from_graph(g)
    indptr, indices = view.adjacency_lists((CONTROL, DATA_FLOW))
    c = view.csr(CONTROL)
    d = view.csr(DATA_FLOW)
    for i in range(view.num_nodes):
        expected = c.indices[c.indptr[i] : c.indptr[i + 1]].tolist() + d.indices[d.indptr[i] : d.indptr[i + 1]].tolist()
        assert indices[indptr[i] : indptr[i + 1]] == expected


def test_parallel_edges_are_kept():
    g = make_graph([(INST, "a", 0), (INST, "b", 0)], [(0, 1, CTRL, 0), (0, 1, CTRL, 1), (1, 0, DATA)])
    view = GraphView.from_graph(g)
    assert view.csr(CONTROL).indices.tolist() == [1, 1]
    assert view.csr(CONTROL).degree().tolist() == [2, 0]


def test_out_of_range_edge_is_an_error():
    g = make_graph([(INST, "a", 0), (VAR, "v", 0)], [(0, 5, CTRL)])
    with pytest.raises(AnalysisError, match="out of range"):
        GraphView.from_graph(g)


def test_as_view():
    g = make_graph([(INST, "a", 0)], [])
    view = as_view(g)
    assert isinstance(view, GraphView) and as_view(view) is view
    assert np.array_equal(view.nodes_of_type(0), np.zeros(0))  # index 0 is never a root
    with pytest.raises(TypeError):
        as_view("not a graph")


def test_view_without_texts():
    view = GraphView([0, 0], [0, 0], [0], [1], [0])
    assert view.edge_pos.tolist() == [0]
    with pytest.raises(AnalysisError, match="no node texts"):
        view.text(1)
