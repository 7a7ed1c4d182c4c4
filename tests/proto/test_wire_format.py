"""The schema matches SPEC §2 field for field, so bytes from the original ProGraML parse here and back."""

from __future__ import annotations

import pytest

from programl import proto

# (message, field) -> number, straight from the tables of SPEC §2.1-§2.3
FIELD_NUMBERS = {
    ("ProgramGraph", "node"): 1,
    ("ProgramGraph", "edge"): 2,
    ("ProgramGraph", "function"): 4,
    ("ProgramGraph", "module"): 5,
    ("ProgramGraph", "features"): 6,
    ("Node", "type"): 1,
    ("Node", "text"): 2,
    ("Node", "function"): 4,
    ("Node", "block"): 7,
    ("Node", "features"): 8,
    ("Edge", "flow"): 1,
    ("Edge", "position"): 2,
    ("Edge", "source"): 3,
    ("Edge", "target"): 4,
    ("Edge", "features"): 5,
    ("Function", "name"): 1,
    ("Function", "module"): 2,
    ("Function", "features"): 3,
    ("Module", "name"): 1,
    ("Module", "features"): 2,
    ("BytesList", "value"): 1,
    ("FloatList", "value"): 1,
    ("Int64List", "value"): 1,
    ("Feature", "bytes_list"): 1,
    ("Feature", "float_list"): 2,
    ("Feature", "int64_list"): 3,
    ("Features", "feature"): 1,
    ("FeatureList", "feature"): 1,
    ("FeatureLists", "feature_list"): 1,
    ("ProgramGraphList", "context"): 1,
    ("ProgramGraphList", "graph"): 2,
    ("ProgramGraphOptions", "instructions_only"): 1,
    ("ProgramGraphOptions", "ignore_call_returns"): 2,
    ("ProgramGraphOptions", "strict"): 3,
    ("ProgramGraphOptions", "opt_level"): 4,
    ("ProgramGraphOptions", "ir_path"): 10,
    ("ProgramGraphFeatures", "node_features"): 1,
    ("ProgramGraphFeatures", "edge_features"): 2,
    ("ProgramGraphFeatures", "function_features"): 3,
    ("ProgramGraphFeatures", "module_features"): 4,
    ("ProgramGraphFeatures", "features"): 5,
    ("ProgramGraphFeaturesList", "context"): 1,
    ("ProgramGraphFeaturesList", "graph"): 2,
    ("Ir", "type"): 1,
    ("Ir", "compiler_version"): 2,
    ("Ir", "cmd"): 3,
    ("Ir", "text"): 4,
    ("IrList", "ir"): 1,
    ("SourceFile", "relpath"): 1,
    ("SourceFile", "language"): 2,
    ("SourceFile", "text"): 3,
    ("Repo", "url"): 1,
    ("Repo", "sha1"): 2,
    ("Repo", "created_ms_timestamp"): 3,
    ("NodeIndexList", "node"): 1,
}


@pytest.mark.parametrize(("message", "field"), sorted(FIELD_NUMBERS))
def test_field_numbers(message: str, field: str) -> None:
    descriptor = getattr(proto, message).DESCRIPTOR
    assert descriptor.full_name == f"programl.{message}"
    assert descriptor.fields_by_name[field].number == FIELD_NUMBERS[(message, field)]


def test_no_extra_fields() -> None:
    for message in {m for m, _ in FIELD_NUMBERS}:
        names = set(getattr(proto, message).DESCRIPTOR.fields_by_name)
        assert names == {f for m, f in FIELD_NUMBERS if m == message}, message


def test_enums() -> None:
    assert dict(proto.Node.Type.items()) == {"INSTRUCTION": 0, "VARIABLE": 1, "CONSTANT": 2, "TYPE": 3}
    assert dict(proto.Edge.Flow.items()) == {"CONTROL": 0, "DATA": 1, "CALL": 2, "TYPE": 3}
    assert dict(proto.Ir.Type.items()) == {"UNKNOWN": 0, "LLVM": 1, "XLA_HLO": 2}
    assert dict(proto.SourceFile.Language.items()) == {
        "UNKNOWN": 0,
        "C": 1,
        "CXX": 2,
        "OPENCL": 3,
        "SWIFT": 4,
        "HASKELL": 5,
        "FORTRAN": 6,
    }


def test_packed_numeric_lists() -> None:
    # [packed=true] on FloatList/Int64List: one length-delimited record for the whole list.
    data = proto.Int64List(value=[1, 2, 3]).SerializeToString()
    assert data == b"\x0a\x03\x01\x02\x03"
    data = proto.FloatList(value=[1.0]).SerializeToString()
    assert data == b"\x0a\x04\x00\x00\x80\x3f"


def test_bytes_written_by_programl_0_3_2_parse() -> None:
    # Example A's first node and first edge as llvm2graph-10 --stdout_fmt=pb writes them (hand-encoded from the
    # schema): Node{text="alloca", features{full_text: "%3 = alloca i32, align 4"}}, Edge{source=1, target=2}.
    full_text = b"%3 = alloca i32, align 4"
    bytes_list = b"\x0a" + bytes([len(full_text)]) + full_text
    feature = b"\x0a" + bytes([len(bytes_list)]) + bytes_list
    entry = b"\x0a\x09full_text\x12" + bytes([len(feature)]) + feature
    features = b"\x0a" + bytes([len(entry)]) + entry
    node = b"\x12\x06alloca\x42" + bytes([len(features)]) + features
    edge = b"\x18\x01\x20\x02"
    data = b"\x0a" + bytes([len(node)]) + node + b"\x12" + bytes([len(edge)]) + edge
    graph = proto.ProgramGraph.FromString(data)
    assert graph.node[0].text == "alloca"
    assert graph.node[0].features.feature["full_text"].bytes_list.value[0] == full_text
    assert (graph.edge[0].flow, graph.edge[0].source, graph.edge[0].target) == (proto.Edge.CONTROL, 1, 2)
    assert graph.SerializeToString() == data
