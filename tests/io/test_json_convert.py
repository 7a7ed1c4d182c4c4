"""programl.io.json_convert: node-link JSON in ProGraML's layout, lossless (SPEC §3.2 to_json, Policy 5)."""

from __future__ import annotations

import concurrent.futures
import json
import random

import pytest
from hypothesis import given, settings
from networkx.readwrite import json_graph

import programl
from programl.exceptions import GraphTransformError
from programl.io import json_convert
from programl.io.json_convert import feature_from_json, feature_to_json, from_json, to_json
from programl.proto import (
    BytesList,
    Feature,
    FeatureList,
    FloatList,
    Int64List,
    ProgramGraph,
    ProgramGraphFeaturesList,
)
from tests.io.io_helpers import bytes_feature, example_graph, float_feature, int64_feature, program_graphs


def test_public_names() -> None:
    assert programl.to_json is to_json
    assert programl.from_json is from_json


def test_layout_matches_graph2json(graph) -> None:
    data = to_json(graph)
    assert list(data) == ["directed", "graph", "links", "multigraph", "nodes"]
    assert data["directed"] is True and data["multigraph"] is True
    assert "edges" not in data
    assert list(data["graph"]) == ["features", "function", "module"]
    assert data["graph"]["function"] == [
        {"features": {"llvm_profile_entry_count": [7]}, "module": 0, "name": "pick"},
        {"module": 0, "name": "llvm.dbg.value"},
    ]
    assert data["graph"]["module"] == [
        {"features": {"llvm_data_layout": [""], "llvm_target_triple": ["x86_64-pc-linux-gnu"]}, "name": "io_example.ll"}
    ]
    assert data["graph"]["features"] == {"poj104_label": [42], "wgsize_log1p": [3.25]}
    # The external node has no features key; a node with an empty Features message has "features": {}.
    assert data["nodes"][0] == {"block": 0, "function": 0, "id": 0, "text": "[external]", "type": 0}
    assert data["nodes"][5] == {"block": 0, "features": {}, "function": 0, "id": 5, "text": "add", "type": 0}
    assert list(data["nodes"][1]) == ["block", "features", "function", "id", "text", "type"]
    assert data["links"][0] == {"flow": 0, "key": 0, "order": 0, "position": 0, "source": 1, "target": 2}
    assert list(data["links"][8]) == ["features", "flow", "key", "order", "position", "source", "target"]
    assert data["links"][8]["features"] == {"weight": [0.5]}
    assert json.loads(json.dumps(data)) == data  # plain JSON types only


def test_parallel_edges_get_distinct_keys_and_every_link_its_order(graph) -> None:
    links = to_json(graph)["links"]
    assert [(link["source"], link["target"], link["key"]) for link in links[1:3]] == [(3, 2, 0), (3, 2, 1)]
    assert [link["position"] for link in links[1:3]] == [1, 2]
    assert [(link["source"], link["target"], link["key"]) for link in links[4:6]] == [(4, 5, 0), (4, 5, 1)]
    assert [link["order"] for link in links] == list(range(len(graph.edge)))
    # networkx keeps all of them.
    nx_graph = json_graph.node_link_graph(to_json(graph), edges="links")
    assert nx_graph.number_of_edges() == len(graph.edge)


def test_feature_values() -> None:
    assert feature_to_json(bytes_feature(b"ret i32 %0", b"caf\xc3\xa9")) == ["ret i32 %0", "café"]
    assert feature_to_json(int64_feature(1, -(2**63), 2**63 - 1)) == [1, -(2**63), 2**63 - 1]
    assert feature_to_json(float_feature(0.1, 2.0)) == [0.10000000149011612, 2.0]  # float32, as graph2json
    assert feature_to_json(Feature()) == []
    assert feature_to_json(Feature(bytes_list=BytesList())) == {"bytes_list": []}
    assert feature_to_json(Feature(float_list=FloatList())) == {"float_list": []}
    assert feature_to_json(Feature(int64_list=Int64List())) == {"int64_list": []}


def test_non_utf8_bytes_use_surrogateescape() -> None:
    raw = b"\xff\xfeok\xc3\xa9\xed\xa0\x80"
    value = feature_to_json(bytes_feature(raw))
    assert value == [raw.decode("utf-8", "surrogateescape")]
    assert value[0].encode("utf-8", "surrogateescape") == raw
    text = json.dumps(value)  # ensure_ascii keeps the lone surrogates as escapes
    assert "\\udcff" in text
    assert feature_from_json(json.loads(text)) == bytes_feature(raw)


@pytest.mark.parametrize(
    "value, expected",
    [
        (["a", "b"], bytes_feature(b"a", b"b")),
        ([b"\x00", bytearray(b"z")], bytes_feature(b"\x00", b"z")),
        ([1, 2, True], int64_feature(1, 2, 1)),
        ([1, 2.5], float_feature(1.0, 2.5)),
        ([3.0], float_feature(3.0)),
        ((7,), int64_feature(7)),
        ([], Feature()),
        ({}, Feature()),
        ({"int64_list": []}, Feature(int64_list=Int64List())),
        ({"float_list": [1, 2]}, float_feature(1.0, 2.0)),
        ({"bytes_list": ["x"]}, bytes_feature(b"x")),
    ],
)
def test_feature_from_json(value, expected) -> None:
    assert feature_from_json(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "abc",  # not a list
        5,
        None,
        ["a", 1],  # mixed
        [None],
        [2**63],  # int64 overflow
        {"int64_list": [1.5]},
        {"strings": ["x"]},
        {"int64_list": [1], "float_list": [1.0]},
        {"bytes_list": "x"},
        ["\ud800"],  # a surrogate that is no escaped byte
    ],
)
def test_bad_feature_values_raise(value) -> None:
    with pytest.raises(GraphTransformError):
        feature_from_json(value, where="node 3")


def test_numpy_arrays_are_accepted() -> None:
    np = pytest.importorskip("numpy")
    assert feature_from_json(np.array([1, 2], dtype=np.int64)) == int64_feature(1, 2)
    assert feature_from_json(np.array([0.5], dtype=np.float32)) == float_feature(0.5)
    assert feature_from_json([np.int32(3), np.int64(4)]) == int64_feature(3, 4)


def test_round_trip(graph) -> None:
    assert from_json(to_json(graph)) == graph
    assert from_json(json.dumps(to_json(graph))) == graph
    assert from_json(json.dumps(to_json(graph)).encode()) == graph


def test_round_trip_through_networkx_node_link_data(graph) -> None:
    """node_link_data lists links in networkx's order (grouped by source); ``order`` restores the graph's."""
    nx_graph = json_graph.node_link_graph(to_json(graph), edges="links")
    data = json_graph.node_link_data(nx_graph, edges="links")
    assert [(link["source"], link["target"]) for link in data["links"]] != [
        (edge.source, edge.target) for edge in graph.edge
    ]
    assert from_json(data) == graph


def test_links_are_sorted_by_order_and_unordered_links_follow(graph) -> None:
    data = to_json(graph)
    random.Random(0).shuffle(data["links"])
    assert from_json(data) == graph
    extra = {"flow": 2, "position": 0, "source": 0, "target": 6}
    data["links"].insert(0, extra)
    result = from_json(data)
    assert result.edge[: len(graph.edge)] == graph.edge
    assert (result.edge[-1].source, result.edge[-1].target, result.edge[-1].flow) == (0, 6, 2)


def test_reads_graph2json_layout_with_key_zero_everywhere(graph) -> None:
    data = to_json(graph)
    for link in data["links"]:
        del link["order"]
        link["key"] = 0
    assert from_json(data) == graph  # the link list keeps parallel edges; keys are not used


def test_accepts_edges_key_and_missing_attributes() -> None:
    data = {"nodes": [{"id": 0}, {"id": 1, "text": "ret"}], "edges": [{"source": 1, "target": 0, "flow": 2}]}
    g = from_json(data)
    assert [(n.type, n.text, n.function, n.block, n.HasField("features")) for n in g.node] == [
        (0, "", 0, 0, False),
        (0, "ret", 0, 0, False),
    ]
    assert [(e.flow, e.source, e.target, e.position) for e in g.edge] == [(2, 1, 0, 0)]
    assert not g.function and not g.module and not g.HasField("features")


def test_enum_names_are_accepted() -> None:
    data = {"nodes": [{"id": 0, "type": "CONSTANT"}, {"id": 1}], "links": [{"source": 0, "target": 1, "flow": "DATA"}]}
    g = from_json(data)
    assert g.node[0].type == 2 and g.edge[0].flow == 1


def test_node_ids_other_than_indices() -> None:
    data = {
        "nodes": [{"id": "b", "text": "x"}, {"id": "a", "text": "y"}],
        "links": [{"source": "a", "target": "b"}],
    }
    g = from_json(data)
    assert [n.text for n in g.node] == ["x", "y"]
    assert (g.edge[0].source, g.edge[0].target) == (1, 0)
    # Integer ids 0..n-1 in any list order are indices.
    shuffled = {"nodes": [{"id": 1, "text": "one"}, {"id": 0, "text": "zero"}], "links": []}
    assert [n.text for n in from_json(shuffled).node] == ["zero", "one"]


@pytest.mark.parametrize(
    "data, match",
    [
        ("{not json", "invalid JSON"),
        (b"\xff", "invalid JSON"),
        (5, "expected node-link data"),
        ({"nodes": [{"id": 0}], "links": [{"source": 0, "target": 9}]}, "no node with id 9"),
        ({"nodes": [{"id": 0}], "links": [{"source": 0}]}, "target"),
        ({"nodes": [{"id": "a"}, {"id": "a"}], "links": []}, "duplicate node id"),
        ({"nodes": [{"id": 0, "text": 5}], "links": []}, "text"),
        ({"nodes": [{"id": 0, "block": "x"}], "links": []}, "block"),
        ({"nodes": [{"id": 0, "block": 2**40}], "links": []}, "block"),
        ({"nodes": [{"id": 0, "type": "BOGUS"}], "links": []}, "unknown name"),
        ({"nodes": [{"id": 0, "features": [1]}], "links": []}, "mapping"),
        ({"nodes": "abc", "links": []}, "expected a list"),
        ({"directed": False, "nodes": [], "links": []}, "undirected"),
        ({"nodes": [], "links": [], "graph": {"function": [{"name": 3}]}}, "function"),
        ({"nodes": [], "links": [], "graph": [1]}, "graph"),
        ({}, "node-link data has no 'nodes' \\(its keys: none\\)"),  # was an empty graph
        ({"links": [], "graph": {}}, "has no 'nodes' \\(its keys: 'links', 'graph'\\)"),
        ({"nodes": [], "links": [], "edges": []}, "both 'links' and 'edges'"),  # the edges were dropped
    ],
)
def test_bad_input_raises_graph_transform_error(data, match) -> None:
    with pytest.raises(GraphTransformError, match=match):
        from_json(data)


def test_each_of_many_inputs_is_checked() -> None:
    with pytest.raises(GraphTransformError, match="expected a node-link mapping"):
        list(from_json([to_json(example_graph()), [1, 2]]))


def test_to_json_rejects_other_objects() -> None:
    with pytest.raises(GraphTransformError):
        list(to_json([example_graph(), "not a graph"]))


def test_many_inputs_give_a_lazy_iterator_in_order() -> None:
    graphs = [example_graph() for _ in range(5)]
    for i, g in enumerate(graphs):
        g.node[1].text = f"op{i}"
    results = to_json(iter(graphs))
    assert not isinstance(results, (list, dict))
    data = list(results)
    assert [d["nodes"][1]["text"] for d in data] == [f"op{i}" for i in range(5)]
    assert list(from_json(data)) == graphs
    assert list(from_json(json.dumps(d) for d in data)) == graphs


def test_executor_is_used_for_many_inputs() -> None:
    graphs = [example_graph() for _ in range(6)]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        data = list(to_json(graphs, executor=pool, chunksize=2))
        assert list(from_json(data, executor=pool, chunksize=3)) == graphs


@settings(max_examples=300, deadline=None)
@given(program_graphs())
def test_random_graphs_round_trip(g) -> None:
    data = to_json(g)
    assert from_json(data) == g
    assert from_json(json.dumps(data)) == g


def labels() -> ProgramGraphFeaturesList:
    features_list = ProgramGraphFeaturesList()
    features_list.context.feature["analysis"].CopyFrom(bytes_feature(b"reachability"))
    for root in (1, 2):
        example = features_list.graph.add()
        roots = example.node_features.feature_list["data_flow_root_node"]
        values = example.node_features.feature_list["data_flow_value"]
        for node in range(4):
            roots.feature.add().CopyFrom(int64_feature(int(node == root)))
            values.feature.add().CopyFrom(int64_feature(int(node >= root)))
        example.features.feature["data_flow_step_count"].CopyFrom(int64_feature(3 - root))
        example.features.feature["data_flow_active_node_count"].CopyFrom(int64_feature(4 - root))
    odd = features_list.graph.add()
    odd.edge_features.SetInParent()  # present, empty
    odd.function_features.feature_list["x"].CopyFrom(
        FeatureList(feature=[Feature(), Feature(float_list=FloatList()), bytes_feature(b"\xff")])
    )
    features_list.graph.add(features={})
    features_list.graph.add(module_features={}).module_features.feature_list["empty"].SetInParent()
    return features_list


def test_features_list_json_round_trip() -> None:
    features_list = labels()
    data = json_convert.features_list_to_json(features_list)
    assert data["graph"][0] == {
        "node_features": {"data_flow_root_node": [[0], [1], [0], [0]], "data_flow_value": [[0], [1], [1], [1]]},
        "features": {"data_flow_active_node_count": [3], "data_flow_step_count": [2]},
    }
    assert data["context"] == {"analysis": ["reachability"]}
    assert data["graph"][2]["edge_features"] == {}
    assert "node_features" not in data["graph"][2]
    assert json_convert.features_list_from_json(data) == features_list
    assert json_convert.features_list_from_json(json.dumps(data)) == features_list
    assert json_convert.features_list_from_json({"graph": []}) == ProgramGraphFeaturesList()


@pytest.mark.parametrize(
    "data",
    ["[", [], {"graph": [5]}, {"graph": [{"node_features": []}]}, {"graph": [{"node_features": {"x": [["a", 1]]}}]}],
)
def test_bad_features_list_json(data) -> None:
    with pytest.raises(GraphTransformError):
        json_convert.features_list_from_json(data)


@pytest.mark.parametrize("source, target", [(0, 2), (-1, 0), (5, 1)])
def test_edges_to_missing_nodes_are_rejected(source, target) -> None:
    # issue 12, item 9: to_json (and `programl convert --format json`) must not write links to nodes it lacks
    graph = ProgramGraph()
    graph.node.add(text="a")
    graph.node.add(text="b")
    graph.edge.add(source=0, target=1)
    graph.edge.add(source=source, target=target)
    with pytest.raises(GraphTransformError, match=rf"edge 1 \({source} -> {target}\) refers to a node that does not"):
        to_json(graph)


def test_convert_to_json_reports_a_dangling_edge_in_one_line(tmp_path, capsys) -> None:
    from programl.cli import main

    graph = ProgramGraph()
    graph.node.add(text="a")
    graph.edge.add(source=0, target=4)
    bad = tmp_path / "bad.ProgramGraph.pb"
    bad.write_bytes(graph.SerializeToString())
    good = tmp_path / "good.ProgramGraph.pb"
    graph.edge[0].target = 0
    good.write_bytes(graph.SerializeToString())
    code = main(["convert", str(bad), str(good), "--format", "json", "-o", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    [line] = lines
    assert line.startswith(f"{bad}: error: edge 0 (0 -> 4) refers to a node that does not exist")
    assert not (tmp_path / "out" / "bad.ProgramGraph.json").exists()
    assert json.loads((tmp_path / "out" / "good.ProgramGraph.json").read_text())["links"]


def test_convert_writes_the_json_that_write_graph_writes_even_for_non_utf8_features(tmp_path, capsys) -> None:
    """One serialisation per suffix: ``convert --format json`` gives ``write_graph``'s bytes, and a byte feature that
    is not UTF-8 (``example_graph`` has one) is written, not an internal UnicodeEncodeError, and reads back equal."""
    from programl.cli import main
    from programl.io.files import read_graph, write_graph

    graph = example_graph()
    source = tmp_path / "g.ProgramGraph.pb"
    write_graph(source, graph)
    code = main(["convert", str(source), "--format", "json", "-o", str(tmp_path / "out"), "-q"])
    assert code == 0, capsys.readouterr().err
    converted = tmp_path / "out" / "g.ProgramGraph.json"
    written = write_graph(tmp_path / "w.ProgramGraph.json", graph)
    assert converted.read_bytes() == written.read_bytes()
    assert read_graph(converted) == graph
