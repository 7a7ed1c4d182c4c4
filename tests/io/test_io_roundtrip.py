"""Every conversion chained: pb -> pbtxt -> JSON -> networkx -> ProgramGraph gives an equal protobuf (Policy 5)."""

from __future__ import annotations

from hypothesis import given, settings
from tests.io.io_helpers import example_graph, has_parallel_edges, program_graphs, through_every_format

from programl.io import files


def test_example_graph_survives_every_format() -> None:
    graph = example_graph()
    assert has_parallel_edges(graph)
    assert through_every_format(graph) == graph


def test_files_of_every_format_chain(tmp_path) -> None:
    graph = example_graph()
    for name in ("a.pb", "b.pbtxt", "c.json", "d.ProgramGraphList.pb.gz"):
        graph = files.read_graph(files.write_graph(tmp_path / name, graph))
    assert graph == example_graph()


def test_reference_graphs_survive_every_format(reference_graphs, tmp_path) -> None:
    assert any(has_parallel_edges(graph) for graph in reference_graphs.values())
    for name, graph in reference_graphs.items():
        assert through_every_format(graph) == graph, name
        for suffix in (".pb", ".pbtxt", ".json", ".gz"):
            assert files.read_graph(files.write_graph(tmp_path / f"{name}{suffix}", graph)) == graph, name


@settings(max_examples=200, deadline=None)
@given(program_graphs())
def test_random_graphs_survive_every_format(graph) -> None:
    assert through_every_format(graph) == graph
