"""programl.io.serialize: SPEC §3.3 semantics of programl 0.3.2's serialization ops."""

from __future__ import annotations

import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import programl
from programl.exceptions import GraphCreationError
from programl.io import serialize
from programl.proto import ProgramGraph, ProgramGraphList
from tests.io.io_helpers import example_graph, program_graphs


def three_graphs() -> list[ProgramGraph]:
    graphs = [example_graph(), ProgramGraph(), example_graph()]
    graphs[2].node[1].text = "store"
    return graphs


def test_public_names_are_these_functions() -> None:
    for name in ("save_graphs", "load_graphs", "to_bytes", "from_bytes", "to_string", "from_string"):
        assert getattr(programl, name) is getattr(serialize, name)


def test_to_bytes_is_gzip_of_a_program_graph_list_by_default() -> None:
    graphs = three_graphs()
    data = serialize.to_bytes(graphs)
    assert data[:2] == b"\x1f\x8b"
    assert ProgramGraphList.FromString(gzip.decompress(data)) == ProgramGraphList(graph=graphs)
    assert not ProgramGraphList.FromString(gzip.decompress(data)).HasField("context")


def test_uncompressed_is_the_raw_message() -> None:
    graphs = three_graphs()
    data = serialize.to_bytes(graphs, compression=None)
    assert ProgramGraphList.FromString(data) == ProgramGraphList(graph=graphs)
    assert serialize.from_bytes(data, compression=None) == graphs


@pytest.mark.parametrize("compression", ["gz", None])
def test_bytes_round_trip(compression) -> None:
    graphs = three_graphs()
    assert serialize.from_bytes(serialize.to_bytes(graphs, compression), compression=compression) == graphs


def test_reads_what_programl_0_3_2_writes() -> None:
    """0.3.2 writes gzip.compress(ProgramGraphList(graph=...).SerializeToString()), with a timestamp."""
    graphs = three_graphs()
    original = gzip.compress(ProgramGraphList(graph=graphs).SerializeToString())
    assert serialize.from_bytes(original) == graphs


def test_output_is_deterministic() -> None:
    assert serialize.to_bytes(three_graphs()) == serialize.to_bytes(three_graphs())
    assert serialize.to_string(three_graphs()) == serialize.to_string(three_graphs())


def test_idx_list_selects_in_the_given_order() -> None:
    graphs = three_graphs()
    data = serialize.to_bytes(graphs)
    assert serialize.from_bytes(data, idx_list=[2, 0]) == [graphs[2], graphs[0]]
    assert serialize.from_bytes(data, idx_list=[1, 1]) == [graphs[1], graphs[1]]
    assert serialize.from_string(serialize.to_string(graphs), idx_list=[2]) == [graphs[2]]


def test_empty_idx_list_returns_all_graphs() -> None:
    graphs = three_graphs()
    assert serialize.from_bytes(serialize.to_bytes(graphs), idx_list=[]) == graphs
    assert serialize.from_string(serialize.to_string(graphs), idx_list=[]) == graphs


def test_idx_list_out_of_range_is_an_index_error() -> None:
    with pytest.raises(IndexError):
        serialize.from_bytes(serialize.to_bytes(three_graphs()), idx_list=[3])


@pytest.mark.parametrize("compression", ["zip", "GZ", "", 1])
def test_bad_compression_is_a_type_error(compression, tmp_path) -> None:
    for call in (
        lambda: serialize.to_bytes([], compression=compression),
        lambda: serialize.from_bytes(b"", compression=compression),
        lambda: serialize.save_graphs(tmp_path / "x.gz", [], compression=compression),
    ):
        with pytest.raises(TypeError, match="Invalid compression argument"):
            call()
    assert not (tmp_path / "x.gz").exists()


@pytest.mark.parametrize(
    "data, compression",
    [
        (b"this is not gzip", "gz"),
        (gzip.compress(b"\xff\xff\xff\xff"), "gz"),  # gzip of bytes that are no protobuf
        (serialize.to_bytes([example_graph()])[:-9], "gz"),  # truncated
        (b"\xff\xff\xff\xff", None),
        (b"\x12\x05\x0a", None),  # a graph field that claims more bytes than there are
    ],
    ids=["not-gzip", "gzip-of-garbage", "truncated", "garbage", "overlong-field"],  # gzip bytes hold a time stamp
)
def test_corrupt_bytes_raise_graph_creation_error(data, compression) -> None:
    with pytest.raises(GraphCreationError):
        serialize.from_bytes(data, compression=compression)


def test_empty_input_is_an_empty_list() -> None:
    assert serialize.from_bytes(b"", compression=None) == []
    assert serialize.from_bytes(serialize.to_bytes([])) == []
    assert serialize.from_string("") == []


def test_empty_gzip_input_is_an_error_not_an_empty_list(tmp_path) -> None:
    """A 0-byte file is no gzip stream (an empty list saved with gzip is 20 bytes): a truncated download, say."""
    with pytest.raises(GraphCreationError, match="empty input: not gzip data"):
        serialize.from_bytes(b"")
    (tmp_path / "zero.gz").write_bytes(b"")
    with pytest.raises(GraphCreationError, match="empty input") as info:
        serialize.load_graphs(tmp_path / "zero.gz")
    assert info.value.path == str(tmp_path / "zero.gz")


@pytest.mark.parametrize("compression", ["gz", None])
def test_a_single_graph_is_not_read_as_a_list_of_empty_graphs(compression, tmp_path) -> None:
    """The bytes of one ProgramGraph parse as a ProgramGraphList of empty graphs, one per edge; 0.3.2 returned
    those. ``programl build`` writes single graphs, so this is the likely mistake: name it."""
    graph = example_graph()
    data = graph.SerializeToString()
    assert len(ProgramGraphList.FromString(data).graph) == len(graph.edge)  # what an unchecked reader returns
    if compression == "gz":
        data = gzip.compress(data)
    message = f"this is one ProgramGraph \\({len(graph.node)} nodes\\), not a ProgramGraphList"
    with pytest.raises(GraphCreationError, match=message):
        serialize.from_bytes(data, compression=compression)
    path = tmp_path / "one.ProgramGraph.pb"
    path.write_bytes(data)
    with pytest.raises(GraphCreationError, match=message) as info:
        serialize.load_graphs(path, compression=compression)
    assert info.value.path == str(path)


def test_fields_no_program_graph_list_has_are_refused() -> None:
    with pytest.raises(GraphCreationError, match="fields a ProgramGraphList does not have"):
        serialize.from_bytes(b"\x18\x01", compression=None)  # field 3, a varint


@pytest.mark.parametrize("idx_list", [0, 1, "0", 1.0])
def test_idx_list_that_is_not_a_list_of_indices_is_a_type_error(idx_list) -> None:
    """0.3.2 returned every graph for 0 (falsy) and failed inside for 1; both are a mistake."""
    data = serialize.to_bytes(three_graphs())
    with pytest.raises(TypeError, match="idx_list must be a list of graph indices"):
        serialize.from_bytes(data, idx_list=idx_list)
    with pytest.raises(TypeError, match="idx_list must be a list of graph indices"):
        serialize.from_string(serialize.to_string(three_graphs()), idx_list=idx_list)


def test_input_of_the_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="from_bytes\\(\\) expects bytes, got NoneType"):
        serialize.from_bytes(None)
    with pytest.raises(TypeError, match="from_string\\(\\) expects str, got NoneType"):
        serialize.from_string(None)
    assert serialize.from_bytes(bytearray(serialize.to_bytes(three_graphs()))) == three_graphs()


def test_save_and_load(tmp_path) -> None:
    graphs = three_graphs()
    path = tmp_path / "graphs.ProgramGraphList.pb.gz"
    assert serialize.save_graphs(path, graphs) is None
    assert serialize.load_graphs(path) == graphs
    assert serialize.load_graphs(str(path), idx_list=[1]) == [graphs[1]]
    serialize.save_graphs(tmp_path / "raw.pb", graphs, compression=None)
    assert serialize.load_graphs(tmp_path / "raw.pb", compression=None) == graphs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graphs.ProgramGraphList.pb.gz", "raw.pb"]


def test_load_of_a_corrupt_file_names_the_file(tmp_path) -> None:
    path = tmp_path / "bad.gz"
    path.write_bytes(b"garbage")
    with pytest.raises(GraphCreationError) as info:
        serialize.load_graphs(path)
    assert info.value.path == str(path)
    assert str(path) in str(info.value)


def test_string_is_protobuf_text_format() -> None:
    graphs = three_graphs()
    text = serialize.to_string(graphs)
    assert text.startswith("graph {\n  node {\n")
    assert serialize.from_string(text) == graphs
    # 0.3.2 returns str(ProgramGraphList(...)), which may list map entries in another order; it reads the same.
    assert serialize.from_string(str(ProgramGraphList(graph=graphs))) == graphs


@pytest.mark.parametrize("text", ["graph { node { text: 1 2 } }", "nonsense", "graph { node { type: NOPE } }"])
def test_bad_text_raises_graph_creation_error(text) -> None:
    with pytest.raises(GraphCreationError):
        serialize.from_string(text)


@settings(max_examples=150, deadline=None)
@given(st.lists(program_graphs(), max_size=3), st.sampled_from(["gz", None]))
def test_random_graphs_round_trip(graphs, compression) -> None:
    assert serialize.from_bytes(serialize.to_bytes(graphs, compression), compression=compression) == graphs
    assert serialize.from_string(serialize.to_string(graphs)) == graphs
