"""The string-bytes builder option (issue 40 item 4; docs/numbers_types.md, "String bytes")."""

from __future__ import annotations

import subprocess
import sys

import pytest

from programl.graph_builder import string_bytes
from programl.graph_builder.llvm import BuildOptions, graph_from_ir
from programl.graph_builder.string_bytes import MARKER, STRING_FEATURE, annotate, encode_string, string_of
from programl.io.pyg import to_pyg
from programl.proto import Node

IR = """\
@.str = private unnamed_addr constant [4 x i8] c"%d\\0A\\00", align 1
@.str.1 = private unnamed_addr constant [4 x i8] c" %d\\00", align 1
@.str.2 = private unnamed_addr constant [19 x i8] c"a \\22quoted\\22 \\5C line!\\00", align 1
@table = internal global [2 x i32] [i32 1, i32 2], align 4
declare i32 @printf(ptr, ...)
define i32 @main() {
entry:
  %a = call i32 (ptr, ...) @printf(ptr @.str, i32 1)
  %b = call i32 (ptr, ...) @printf(ptr @.str.1, i32 2)
  %c = call i32 (ptr, ...) @printf(ptr @.str.2)
  %t = load i32, ptr @table
  ret i32 %t
}
"""


def strings_by_name(graph) -> dict[str, list[int]]:
    out = {}
    for node in graph.node:
        feature = node.features.feature
        if STRING_FEATURE in feature:
            full = feature["full_text"].bytes_list.value[0].decode()
            out[full.split(" ", 1)[0]] = list(feature[STRING_FEATURE].int64_list.value)
    return out


def test_off_by_default_and_on_adds_only_the_feature():
    plain = graph_from_ir(IR)
    rich = graph_from_ir(IR, options=BuildOptions(string_bytes=True))
    assert not string_bytes.is_annotated(plain) and not strings_by_name(plain)
    assert list(rich.module[0].features.feature[MARKER].int64_list.value) == [1]
    # one per string global, on its CONSTANT node, and none on the integer array or on instructions
    found = strings_by_name(rich)
    assert sorted(found) == ["@.str", "@.str.1", "@.str.2"]
    assert found["@.str"] == [4, ord("%") + 1, ord("d") + 1, 0x0A + 1, 0 + 1] + [0] * 12
    assert found["@.str.1"][:5] == [4, ord(" ") + 1, ord("%") + 1, ord("d") + 1, 1]
    assert found["@.str"] != found["@.str.1"]  # the output formats a faithful graph cannot tell apart
    assert all(n.type == Node.CONSTANT for n in rich.node if STRING_FEATURE in n.features.feature)
    # stripping the feature gives the faithful graph back, byte for byte
    for node in rich.node:
        if STRING_FEATURE in node.features.feature:
            del node.features.feature[STRING_FEATURE]
    del rich.module[0].features.feature[MARKER]
    assert rich.SerializeToString() == plain.SerializeToString()


def test_annotating_a_graph_alone_equals_the_builder_option_and_is_idempotent():
    built = graph_from_ir(IR, options=BuildOptions(string_bytes=True, numbers_and_types=True))
    later = annotate(graph_from_ir(IR, options=BuildOptions(numbers_and_types=True)))
    assert later.SerializeToString() == built.SerializeToString()
    assert annotate(later).SerializeToString() == built.SerializeToString()


@pytest.mark.parametrize(
    ("full_text", "data"),
    [
        ('@.str = private unnamed_addr constant [3 x i8] c"%d\\00", align 1', b"%d\x00"),
        ('@s = constant [19 x i8] c"a \\22quoted\\22 \\5C line!\\00"', b'a "quoted" \\ line!\x00'),
        ('[4 x i8] c"\\FF\\00ab"', b"\xff\x00ab"),
        ('@s = constant [3 x i8] c"\\\\\\5C\\00"', b"\\\\\x00"),  # LLVM 22 prints a backslash as \\
        ('@e = constant [0 x i8] c""', b""),
        ("@table = internal global [2 x i32] [i32 1, i32 2], align 4", None),
        ("i32 5", None),
    ],
)
def test_string_of(full_text, data):
    assert string_of(full_text) == data


def test_encode_string_is_bounded():
    assert encode_string(b"") == [0] * 17
    long = encode_string(bytes(range(256)) * 2)
    assert len(long) == 17 and long[0] == 512 and long[1:] == list(range(1, 17))
    assert max(encode_string(b"\xff")[1:]) == 256


def test_to_pyg_x_str_when_marked_always_or_never():
    rich = graph_from_ir(IR, options=BuildOptions(string_bytes=True))
    data = to_pyg(rich)
    assert data.x_str.shape == (data.num_nodes, 17) and int((data.x_str[:, 0] > 0).sum()) == 3
    plain = graph_from_ir(IR)
    assert "x_str" not in to_pyg(plain)
    assert not to_pyg(plain, string_bytes=True).x_str.any()  # zeros, so a data set batches
    assert "x_str" not in to_pyg(rich, string_bytes=False)
    with pytest.raises(ValueError, match="string_bytes must be"):
        to_pyg(rich, string_bytes="yes")


def test_cli_flag(tmp_path):
    ir = tmp_path / "s.ll"
    ir.write_text(IR)
    out = subprocess.run(
        [sys.executable, "-m", "programl", "build", str(ir), "--string-bytes", "--format", "pbtxt"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert 'key: "string_bytes"' in out.stdout
    help_text = subprocess.run(
        [sys.executable, "-m", "programl", "build", "--help"], capture_output=True, text=True, timeout=120
    ).stdout
    assert "--string-bytes" in help_text
