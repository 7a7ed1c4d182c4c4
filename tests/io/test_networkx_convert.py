"""programl.io.networkx_convert: MultiDiGraph with ProGraML's attribute names, parallel edges kept (Policy 5)."""

from __future__ import annotations

import concurrent.futures
import json
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from networkx.readwrite import json_graph

import programl
from programl.exceptions import GraphTransformError
from programl.io.json_convert import to_json
from programl.io.networkx_convert import from_networkx, to_networkx
from programl.proto import ProgramGraph
from tests.io.io_helpers import example_graph, has_parallel_edges, program_graphs

TESTS_DATA = Path(__file__).resolve().parents[1] / "data"


def reference_graph() -> ProgramGraph:
    """``io_parallel.ll`` as built by the original llvm2graph-10 (committed fixture)."""
    return ProgramGraph.FromString((TESTS_DATA / "io_parallel.ProgramGraph.pb").read_bytes())


def test_public_names() -> None:
    assert programl.to_networkx is to_networkx
    assert programl.from_networkx is from_networkx


def test_attribute_names_of_a_reference_graph() -> None:
    graph = reference_graph()
    g = to_networkx(graph)
    assert isinstance(g, nx.MultiDiGraph)
    assert list(g.nodes) == list(range(len(graph.node)))
    assert g.nodes[0] == {"block": 0, "function": 0, "text": "[external]", "type": 0}  # no features: see docstring
    for node in range(1, len(graph.node)):
        assert set(g.nodes[node]) == {"type", "text", "function", "block", "features"}
        assert set(g.nodes[node]["features"]) == {"full_text"}
    for _, _, attributes in g.edges(data=True):
        assert set(attributes) == {"flow", "position"}
    assert set(g.graph) == {"function", "module", "edge_order"}
    assert g.graph["function"] == [{"module": 0, "name": "pick"}]
    assert g.graph["module"][0]["name"] == "io_parallel.ll"
    assert g.graph["module"][0]["features"] == {"llvm_data_layout": [""], "llvm_target_triple": [""]}


def test_node_and_edge_values(graph) -> None:
    g = to_networkx(graph)
    assert g.nodes[1] == {
        "block": 0,
        "features": {"full_text": ["%2 = alloca i32, align 4"]},
        "function": 0,
        "text": "alloca",
        "type": 0,
    }
    assert g.nodes[5]["features"] == {}
    assert g.edges[5, 1, 0] == {"features": {"weight": [0.5]}, "flow": 0, "position": -3}
    assert g.edges[1, 2, 0] == {"flow": 0, "position": 0}
    assert g.graph["features"] == {"poj104_label": [42], "wgsize_log1p": [3.25]}


def test_parallel_edges_are_kept_with_distinct_keys() -> None:
    graph = reference_graph()
    assert has_parallel_edges(graph)
    g = to_networkx(graph)
    assert g.number_of_edges() == len(graph.edge)
    # The select's argument %k (node 8) feeds it (node 1) twice, at positions 1 and 2.
    assert dict(g[8][1]) == {0: {"flow": 1, "position": 1}, 1: {"flow": 1, "position": 2}}
    assert g.graph["edge_order"][6:8] == [(8, 1, 0), (8, 1, 1)]
    # The constant i32 1 (node 10) is both operands of one add (node 2).
    assert [attributes["position"] for attributes in g[10][2].values()] == [0, 1]
    assert from_networkx(g) == graph


def test_round_trip(graph) -> None:
    assert from_networkx(to_networkx(graph)) == graph
    assert from_networkx(to_networkx(ProgramGraph())) == ProgramGraph()


def test_edge_order_is_restored_from_the_graph_attribute(graph) -> None:
    g = to_networkx(graph)
    assert g.graph["edge_order"] == [(e.source, e.target, k) for e, k in zip(graph.edge, parallel_keys(graph))]
    assert list(g.edges(keys=True)) != g.graph["edge_order"]  # networkx groups edges by source
    assert list(from_networkx(g).edge) == list(graph.edge)
    # Without it, the same edges come in networkx's order.
    del g.graph["edge_order"]
    unordered = from_networkx(g)
    assert [(e.source, e.target) for e in unordered.edge] == [(u, v) for u, v in g.edges()]


def parallel_keys(graph: ProgramGraph) -> list[int]:
    """networkx's key of each edge: how many earlier edges join the same ordered pair."""
    seen: dict = {}
    keys = []
    for edge in graph.edge:
        pair = (edge.source, edge.target)
        keys.append(seen.get(pair, 0))
        seen[pair] = keys[-1] + 1
    return keys


def test_edges_are_exactly_compiler_gyms() -> None:
    """Issue 9 item 6: ``G.edges[u, v, k] == {"flow": f, "position": p}`` as on CompilerGym's graphs."""
    graph = reference_graph()
    g = to_networkx(graph)
    for edge, key in zip(graph.edge, parallel_keys(graph), strict=True):
        assert g.edges[edge.source, edge.target, key] == {"flow": edge.flow, "position": edge.position}
    original = json.loads((TESTS_DATA / "io_parallel.graph2json.json").read_text())
    theirs = json_graph.node_link_graph(original, edges="links", multigraph=True, directed=True)
    for u, v, key, attributes in theirs.edges(keys=True, data=True):
        assert key == 0
        assert set(attributes) == set(g.edges[u, v, key])


def test_round_trips_through_node_link_data_and_json_text(graph) -> None:
    g = to_networkx(graph)
    data = json_graph.node_link_data(g, edges="links")
    text = json.dumps(data)
    assert from_networkx(json_graph.node_link_graph(json.loads(text), edges="links")) == graph
    assert from_networkx(json_graph.node_link_graph(to_json(graph), edges="links")) == graph


def test_reads_the_original_to_networkx_output() -> None:
    """0.3.2 / CompilerGym: node_link_graph of graph2json's output, where every link has key 0."""
    graph = reference_graph()
    original_json = json.loads((TESTS_DATA / "io_parallel.graph2json.json").read_text())
    g = json_graph.node_link_graph(original_json, edges="links", multigraph=True, directed=True)
    assert g.number_of_edges() == len(graph.edge) - 2  # quirk 1: two parallel edges collapsed
    result = from_networkx(g)
    assert list(result.node) == list(graph.node)
    assert list(result.function) == list(graph.function) and list(result.module) == list(graph.module)
    # Without order attributes, edges come in networkx's order; every surviving edge is one of the graph's.
    edges = {(e.flow, e.position, e.source, e.target) for e in graph.edge}
    assert {(e.flow, e.position, e.source, e.target) for e in result.edge} <= edges
    assert len(result.edge) == g.number_of_edges()


def test_edges_added_by_a_user_come_after_the_ordered_ones(graph) -> None:
    g = to_networkx(graph)
    g.add_edge(0, 6, flow=2, position=0)
    g.remove_edge(3, 2, key=0)
    result = from_networkx(g)
    expected = list(graph.edge)
    del expected[1]
    assert list(result.edge[:-1]) == expected
    assert (result.edge[-1].source, result.edge[-1].target, result.edge[-1].flow) == (0, 6, 2)


def test_digraph_and_foreign_node_ids_are_accepted() -> None:
    g = nx.DiGraph()
    g.add_node("entry", type=0, text="br")
    g.add_node("x", type=1, text="i32", features={"full_text": ["i32 %x"]})
    g.add_edge("x", "entry", flow=1, position=0)
    result = from_networkx(g)
    assert [node.text for node in result.node] == ["br", "i32"]
    assert (result.edge[0].source, result.edge[0].target, result.edge[0].flow) == (1, 0, 1)
    assert result.node[1].features.feature["full_text"].bytes_list.value == [b"i32 %x"]


def test_undirected_graphs_and_other_objects_are_rejected() -> None:
    with pytest.raises(GraphTransformError, match="undirected"):
        from_networkx(nx.Graph([(0, 1)]))
    with pytest.raises(GraphTransformError):
        from_networkx(5)
    with pytest.raises(GraphTransformError):
        list(to_networkx("not a graph"))  # an iterable of non-graphs: raised when consumed
    with pytest.raises(GraphTransformError, match="feature"):
        from_networkx(nx.MultiDiGraph([(0, 1, {"features": {"x": [object()]}})]))


def test_edges_to_missing_nodes_are_rejected() -> None:
    graph = ProgramGraph()
    graph.node.add(text="a")
    graph.edge.add(source=0, target=3)
    with pytest.raises(GraphTransformError, match=r"edge 0 \(0 -> 3\) refers to a node that does not exist"):
        to_networkx(graph)


def test_many_inputs_give_a_lazy_iterator_in_order() -> None:
    graphs = [example_graph() for _ in range(5)]
    for i, g in enumerate(graphs):
        g.node[2].block = i
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        nx_graphs = to_networkx(iter(graphs), executor=pool, chunksize=2)
        assert not isinstance(nx_graphs, (list, nx.Graph))
        nx_graphs = list(nx_graphs)
        assert [g.nodes[2]["block"] for g in nx_graphs] == list(range(5))
        assert list(from_networkx(nx_graphs, executor=pool)) == graphs
    assert list(from_networkx(iter(to_networkx(graphs)))) == graphs


def test_features_false_gives_uniform_attributes(graph) -> None:
    g = to_networkx(graph, features=False)
    assert {frozenset(attributes) for _, attributes in g.nodes(data=True)} == {
        frozenset({"type", "text", "function", "block"})
    }
    assert {frozenset(attributes) for _, _, attributes in g.edges(data=True)} == {frozenset({"flow", "position"})}
    assert set(g.graph) == {"function", "module", "edge_order"}
    assert all("features" not in entry for entry in g.graph["function"] + g.graph["module"])
    stripped = from_networkx(g)
    assert [(n.type, n.text) for n in stripped.node] == [(n.type, n.text) for n in graph.node]
    assert not any(n.HasField("features") for n in stripped.node)


def test_torch_geometric_from_networkx() -> None:
    """PyG requires the same attributes on every node (ProGraML issue #196): use features=False."""
    utils = pytest.importorskip("torch_geometric.utils")
    graph = reference_graph()
    with pytest.raises(ValueError, match="same attributes"):
        utils.from_networkx(to_networkx(graph))
    data = utils.from_networkx(to_networkx(graph, features=False))
    assert data.num_nodes == len(graph.node)
    assert data.edge_index.shape == (2, len(graph.edge))
    # edge_index holds the graph's edges, parallel ones included; ``edge_order`` lists them in the graph's order.
    columns = (data.edge_index.t().tolist(), data.flow.tolist(), data.position.tolist())
    assert sorted(zip(*columns, strict=True)) == sorted(([e.source, e.target], e.flow, e.position) for e in graph.edge)
    assert data.edge_order[:, :2].tolist() == [[e.source, e.target] for e in graph.edge]


@settings(max_examples=300, deadline=None)
@given(program_graphs())
def test_random_graphs_round_trip(g) -> None:
    assert from_networkx(to_networkx(g)) == g
    assert from_networkx(json_graph.node_link_graph(to_json(g), edges="links")) == g


def test_edge_order_travels_through_node_link_data_to_from_json(graph) -> None:
    data = json.loads(json.dumps(json_graph.node_link_data(to_networkx(graph), edges="links")))
    assert all(set(link) <= {"flow", "position", "features", "source", "target", "key"} for link in data["links"])
    assert [tuple(t) for t in data["graph"]["edge_order"]] == to_networkx(graph).graph["edge_order"]
    assert programl.from_json(data) == graph


def test_a_malformed_edge_order_is_a_transform_error(graph) -> None:
    g = to_networkx(graph)
    g.graph["edge_order"] = 7
    with pytest.raises(GraphTransformError, match="edge_order: expected a list"):
        from_networkx(g)
    g.graph["edge_order"] = [(1, 2)]
    with pytest.raises(GraphTransformError, match=r"edge_order\[0\]"):
        from_networkx(g)
    g.graph["edge_order"] = [(1, 2, 0), (99, 98, 0)]  # names an edge that is not there: skipped
    assert (from_networkx(g).edge[0].source, from_networkx(g).edge[0].target) == (1, 2)
