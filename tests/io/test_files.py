"""programl.io.files: single graph and label files chosen by suffix (SPEC §9.1), written atomically."""

from __future__ import annotations

import gzip
import json

import pytest
from google.protobuf import text_format

from programl.exceptions import GraphCreationError, GraphTransformError
from programl.io import serialize
from programl.io.files import read_features_list, read_graph, write_features_list, write_graph
from programl.io.json_convert import to_json
from programl.proto import ProgramGraph, ProgramGraphFeaturesList
from tests.io.io_helpers import example_graph, int64_feature

GRAPH_NAMES = [
    "x.ProgramGraph.pb",
    "x.ProgramGraph.pbtxt",
    "x.ProgramGraph.json",
    "x.ProgramGraphList.pb.gz",
    "x.gz",
]


@pytest.mark.parametrize("name", GRAPH_NAMES)
def test_graph_round_trip(name, graph, tmp_path) -> None:
    path = write_graph(tmp_path / "graphs" / name, graph)
    assert path == tmp_path / "graphs" / name
    assert read_graph(path) == graph
    assert read_graph(str(path)) == graph
    assert [p.name for p in path.parent.iterdir()] == [name]  # no temporary file left behind


def test_each_format_is_what_its_suffix_says(graph, tmp_path) -> None:
    pb = write_graph(tmp_path / "a.pb", graph).read_bytes()
    assert ProgramGraph.FromString(pb) == graph
    text = write_graph(tmp_path / "a.pbtxt", graph).read_text()
    assert text_format.Parse(text, ProgramGraph()) == graph
    data = json.loads(write_graph(tmp_path / "a.json", graph).read_text())
    assert data == json.loads(json.dumps(to_json(graph)))
    assert serialize.from_bytes(write_graph(tmp_path / "a.gz", graph).read_bytes()) == [graph]


@pytest.mark.parametrize("name", GRAPH_NAMES)
def test_writes_are_deterministic(name, tmp_path) -> None:
    first = write_graph(tmp_path / "1" / name, example_graph()).read_bytes()
    second = write_graph(tmp_path / "2" / name, example_graph()).read_bytes()
    assert first == second


def test_overwrite_replaces_the_file(graph, tmp_path) -> None:
    path = tmp_path / "g.pb"
    write_graph(path, ProgramGraph())
    write_graph(path, graph)
    assert read_graph(path) == graph


@pytest.mark.parametrize(
    "name, content",
    [
        ("bad.pb", b"\xff\xff\xff"),
        ("bad.pbtxt", b"node { text: }"),
        ("bad.pbtxt", b"\xff"),
        ("bad.json", b"{"),
        ("bad.json", b'{"nodes": [{"id": 0}], "links": [{"source": 0, "target": 5}]}'),
        ("bad.gz", b"not gzip"),
    ],
)
def test_bad_graph_files_name_the_file(name, content, tmp_path) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(GraphCreationError) as info:
        read_graph(path)
    assert info.value.path == str(path)
    assert str(path) in str(info.value)


def test_a_list_file_must_hold_one_graph(tmp_path) -> None:
    path = tmp_path / "two.ProgramGraphList.pb.gz"
    serialize.save_graphs(path, [example_graph(), example_graph()])
    with pytest.raises(GraphCreationError, match="expected one graph"):
        read_graph(path)


def test_unknown_suffix_and_wrong_types(tmp_path) -> None:
    with pytest.raises(GraphTransformError, match="file format"):
        write_graph(tmp_path / "graph.txt", example_graph())
    with pytest.raises(GraphTransformError, match="file format"):
        read_graph(tmp_path / "graph.bin")
    with pytest.raises(GraphTransformError):
        write_graph(tmp_path / "g.pb", ProgramGraphFeaturesList())
    with pytest.raises(GraphTransformError):
        write_features_list(tmp_path / "l.pb", example_graph())
    assert not list(tmp_path.iterdir())
    with pytest.raises(FileNotFoundError):
        read_graph(tmp_path / "missing.pb")


def labels() -> ProgramGraphFeaturesList:
    features_list = ProgramGraphFeaturesList()
    for root in range(3):
        example = features_list.graph.add()
        for node in range(5):
            example.node_features.feature_list["data_flow_root_node"].feature.add().CopyFrom(
                int64_feature(int(node == root))
            )
            example.node_features.feature_list["data_flow_value"].feature.add().CopyFrom(
                int64_feature(int(node > root))
            )
        example.features.feature["data_flow_step_count"].CopyFrom(int64_feature(root + 1))
        example.features.feature["data_flow_active_node_count"].CopyFrom(int64_feature(4 - root))
    return features_list


@pytest.mark.parametrize(
    "name", ["x.ProgramGraphFeaturesList.pb", "x.ProgramGraphFeaturesList.pbtxt", "x.ProgramGraphFeaturesList.json"]
)
def test_features_list_round_trip(name, tmp_path) -> None:
    path = write_features_list(tmp_path / "labels" / "reachability" / name, labels())
    assert read_features_list(path) == labels()
    assert [p.name for p in path.parent.iterdir()] == [name]
    assert write_features_list(tmp_path / "again" / name, labels()).read_bytes() == path.read_bytes()


def test_features_list_json_is_readable(tmp_path) -> None:
    text = write_features_list(tmp_path / "l.json", labels()).read_text()
    assert text.isascii()
    lines = text.splitlines()
    assert lines[:6] == [
        "{",
        '  "graph": [',
        "    {",
        '      "node_features": {',
        '        "data_flow_root_node": [[1], [0], [0], [0], [0]],',
        '        "data_flow_value": [[0], [1], [1], [1], [1]]',
    ]
    assert '"data_flow_step_count": [1]' in text
    assert len(text.splitlines()) < 40
    assert json.loads(text)["graph"][2]["features"]["data_flow_active_node_count"] == [2]


@pytest.mark.parametrize(
    "name, content",
    [
        ("bad.pb", b"\x0a\x05"),
        ("bad.pbtxt", b"graph { nonsense: 1 }"),
        ("bad.json", b"[1]"),
        ("bad.json", b'{"graph": [{"features": {"x": ["a", 2]}}]}'),
        ("bad.json", gzip.compress(b"{}")),
    ],
    ids=["pb", "pbtxt", "json-list", "json-bad-feature", "json-gzipped"],  # gzip bytes hold a time stamp
)
def test_bad_features_list_files_name_the_file(name, content, tmp_path) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(GraphCreationError) as info:
        read_features_list(path)
    assert info.value.path == str(path)
