"""programl.io.one_or_many: the transform ops take one input or an iterable of them, and refuse anything else at the
call (SPEC §3.2)."""

from __future__ import annotations

import networkx as nx
import pytest

from programl.exceptions import GraphTransformError
from programl.io import from_json, from_networkx, to_dot, to_json, to_networkx
from tests.io.io_helpers import example_graph

TO = [to_json, to_networkx, to_dot]


@pytest.mark.parametrize("function", TO, ids=lambda f: f.__name__)
@pytest.mark.parametrize("bad", [None, 5, "graph", b"graph", {"nodes": []}], ids=repr)
def test_to_ops_refuse_what_is_neither_a_graph_nor_an_iterable_at_the_call(function, bad) -> None:
    """They returned a generator that failed at its first next(), from inside the executor."""
    with pytest.raises(
        GraphTransformError, match=f"expected a ProgramGraph or an iterable of them, got {type(bad).__name__}"
    ):
        function(bad)


@pytest.mark.parametrize(
    "function, bad, what",
    [(from_json, None, "node-link data"), (from_json, 5, "node-link data"), (from_networkx, "g", "a networkx graph")],
)
def test_from_ops_refuse_it_too(function, bad, what) -> None:
    with pytest.raises(GraphTransformError, match=f"expected {what} or an iterable of them, got {type(bad).__name__}"):
        function(bad)


@pytest.mark.parametrize("function", [*TO, from_json, from_networkx], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "limits, message",
    [({"timeout": -1}, "timeout must be more than 0 seconds"), ({"chunksize": 0}, "chunksize must be a positive")],
)
def test_bad_limits_are_refused_at_the_call(function, limits, message) -> None:
    with pytest.raises(ValueError, match=message):
        function([], **limits)


def test_one_input_and_many_give_the_same_result() -> None:
    graph = example_graph()
    assert list(to_json([graph, graph])) == [to_json(graph)] * 2
    assert to_dot(iter([graph])).__next__() == to_dot(graph)
    converted = to_networkx(graph)
    assert isinstance(converted, nx.MultiDiGraph) and list(from_networkx([converted])) == [graph]
