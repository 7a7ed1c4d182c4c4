"""Every conversion chained: pb -> pbtxt -> JSON -> networkx -> ProgramGraph gives an equal protobuf (Policy 5)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from io_helpers import example_graph, has_parallel_edges, program_graphs
from networkx.readwrite import json_graph

from programl.io import files, serialize
from programl.io.json_convert import from_json, to_json
from programl.io.networkx_convert import from_networkx, to_networkx
from programl.proto import ProgramGraph


def through_every_format(graph: ProgramGraph) -> ProgramGraph:
    """pb bytes -> pbtxt -> JSON text -> node-link data of a networkx graph -> networkx -> ProgramGraph."""
    step = ProgramGraph.FromString(graph.SerializeToString())
    [step] = serialize.from_string(serialize.to_string([step]))
    step = from_json(json.dumps(to_json(step)))
    data = json_graph.node_link_data(to_networkx(step), edges="links")
    step = from_json(json.loads(json.dumps(data)))
    step = from_networkx(json_graph.node_link_graph(to_json(step), edges="links"))
    [step] = serialize.from_bytes(serialize.to_bytes([step]))
    return step


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
