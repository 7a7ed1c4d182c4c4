"""programl.graph_builder.inputs: the graph of one input file by its kind, the one reader of ``programl build``,
``programl predict`` and ``programl view`` (which sits above the command line and so cannot import it)."""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm
import pytest

from programl.exceptions import GraphCreationError
from programl.graph_builder.inputs import graph_of_input
from programl.graph_builder.llvm import graph_from_ir
from programl.view.inputs import read_input

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def bitcode(tmp_path_factory) -> tuple[Path, bytes]:
    """examples/dot_product.ll as a bitcode file."""
    ir = (EXAMPLES / "dot_product.ll").read_text()
    path = tmp_path_factory.mktemp("bc") / "dot_product.bc"
    path.write_bytes(llvm.parse_assembly(ir).as_bitcode())
    return path, path.read_bytes()


def _key(graph) -> bytes:
    copy = type(graph)()
    copy.CopyFrom(graph)
    copy.ClearField("module")  # the module's name is the input's path
    return copy.SerializeToString(deterministic=True)


def test_ir_and_its_bitcode_give_the_same_graph(bitcode) -> None:
    path, data = bitcode
    from_ir = graph_of_input(str(EXAMPLES / "dot_product.ll"))
    assert _key(from_ir) == _key(graph_from_ir((EXAMPLES / "dot_product.ll").read_text()))
    assert _key(graph_of_input(str(path))) == _key(from_ir)
    # bytes from stdin are bitcode by their magic, whatever the name
    assert _key(graph_of_input("-", data=data)) == _key(from_ir)


def test_view_reads_bitcode_as_build_does(bitcode) -> None:
    path, _ = bitcode
    graph, _ = read_input(str(path))
    assert graph.SerializeToString(deterministic=True) == graph_of_input(str(path)).SerializeToString(
        deterministic=True
    )
    assert len(graph.node) == 38


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("notes.txt", b"some text", "unknown input type"),
        ("empty.ll", b"", "empty file"),
        ("missing.ll", None, "no such file"),
    ],
)
def test_a_bad_input_is_one_line_naming_it(tmp_path, name, data, message) -> None:
    path = tmp_path / name
    if data is not None:
        path.write_bytes(data)
    with pytest.raises(GraphCreationError) as caught:
        graph_of_input(str(path))
    text = str(caught.value)
    assert message in text and str(path) in text and "\n" not in text
