"""The numbers-and-types builder option (issue 40 item 2; docs/numbers_types.md)."""

from __future__ import annotations

import math
import subprocess
import sys
from decimal import Decimal

import pytest

from programl.graph_builder.llvm import BuildOptions, graph_from_ir
from programl.graph_builder.numbers_types import (
    MARKER,
    NUMBER_FEATURE,
    TYPE_FEATURE,
    TypeShape,
    annotate,
    encode_number,
    is_annotated,
    number_of,
    parse_type,
    struct_definitions,
)
from programl.proto import Node, ProgramGraph

IR = """\
%struct.S = type { i32, float, [3 x double] }
@tile = internal global [256 x float] zeroinitializer, align 4
@s = global %struct.S zeroinitializer
define void @k(ptr %p, <4 x float> %v, %struct.S %sv, i1 %b) {
entry:
  %a = alloca [16 x i32], align 4
  %g = getelementptr inbounds [16 x i32], ptr %a, i64 0, i64 5
  store i32 -1234567890, ptr %g
  %x = fadd <4 x float> %v, <float 1.5, float 2.0, float 3.0, float 4.0>
  %y = fmul <4 x float> %x, splat (float 0.25)
  %c = fcmp olt double 0x3FB999999999999A, 1.0e10
  %h = fadd half 0xH3C00, 0xH3C00
  %t = getelementptr inbounds [256 x float], ptr @tile, i64 0, i64 100
  store <4 x float> %y, ptr %t
  %gs = getelementptr inbounds %struct.S, ptr @s, i32 0, i32 1
  %e = extractvalue %struct.S %sv, 0
  %z = icmp slt i32 %e, 1024
  %w = select i1 true, ptr null, ptr %p
  switch i32 %e, label %out [ i32 7, label %out ]
out:
  ret void
}
"""


def features_by_text(graph: ProgramGraph) -> dict[str, dict[str, list[int]]]:
    out = {}
    for node in graph.node:
        feature = node.features.feature
        found = {k: list(feature[k].int64_list.value) for k in (NUMBER_FEATURE, TYPE_FEATURE) if k in feature}
        if found and "full_text" in feature:
            out[feature["full_text"].bytes_list.value[0].decode()] = found
    return out


def test_off_by_default_and_on_adds_only_features():
    plain = graph_from_ir(IR)
    rich = graph_from_ir(IR, options=BuildOptions(numbers_and_types=True))
    assert not is_annotated(plain)
    assert is_annotated(rich) and list(rich.module[0].features.feature[MARKER].int64_list.value) == [1]
    assert not features_by_text(plain)
    # same nodes and edges, same texts and full texts: only features are added
    assert [(n.type, n.text, n.function, n.block) for n in plain.node] == [
        (n.type, n.text, n.function, n.block) for n in rich.node
    ]
    assert plain.edge == rich.edge
    for a, b in zip(plain.node, rich.node):
        for key, value in a.features.feature.items():
            assert b.features.feature[key] == value
    # stripping the added features gives the faithful graph back, byte for byte
    for node in rich.node:
        for key in (NUMBER_FEATURE, TYPE_FEATURE):
            if key in node.features.feature:
                del node.features.feature[key]
    del rich.module[0].features.feature[MARKER]
    assert rich.SerializeToString() == plain.SerializeToString()


def test_numbers_and_shapes_on_the_right_nodes():
    found = features_by_text(graph_from_ir(IR, options=BuildOptions(numbers_and_types=True)))
    assert found["i32 -1234567890"] == {NUMBER_FEATURE: [1, 1, 9, 1, 2, 3, 4, 5, 6, 8]}
    assert found["i32 1024"] == {NUMBER_FEATURE: [1, 0, 3, 1, 0, 2, 4, 0, 0, 0]}
    assert found["i32 7"] == {NUMBER_FEATURE: [1, 0, 0, 7, 0, 0, 0, 0, 0, 0]}  # a switch case value
    assert found["i1 true"] == {NUMBER_FEATURE: [1, 0, 0, 1, 0, 0, 0, 0, 0, 0]}
    assert found["double 1.000000e-01"][NUMBER_FEATURE] == [2, 0, -1, 1, 0, 0, 0, 0, 0, 0]  # from 0x3FB9...
    assert found["half 0xH3C00"][NUMBER_FEATURE] == [2, 0, 0, 1, 0, 0, 0, 0, 0, 0]
    assert found["<4 x float> splat (float 2.500000e-01)"] == {
        NUMBER_FEATURE: [2, 0, -1, 2, 5, 0, 0, 0, 0, 0],
        TYPE_FEATURE: [1, 4, 4, 128, 32, 1],
    }
    assert found["%a = alloca [16 x i32], align 4"] == {TYPE_FEATURE: [2, 16, 16, 512, 32, 0]}
    assert found["%g = getelementptr inbounds [16 x i32], ptr %a, i64 0, i64 5"][TYPE_FEATURE][:2] == [2, 16]
    assert found["<4 x float> %x"] == {TYPE_FEATURE: [1, 4, 4, 128, 32, 1]}
    assert found["@tile = internal global [256 x float] zeroinitializer, align 4"] == {
        TYPE_FEATURE: [2, 256, 256, 8192, 32, 1]
    }
    # a named struct, through the module's type definitions: i32, float, [3 x double]
    assert found["%gs = getelementptr inbounds %struct.S, ptr @s, i32 0, i32 1"] == {
        TYPE_FEATURE: [3, 3, 5, 256, 32, 0]
    }
    assert "ptr null" not in found  # not a number, not an aggregate


def test_annotating_a_graph_alone_knows_named_structs_only_as_structs():
    graph = annotate(graph_from_ir(IR))
    found = features_by_text(graph)
    assert found["%gs = getelementptr inbounds %struct.S, ptr @s, i32 0, i32 1"] == {TYPE_FEATURE: [3, 0, 0, 0, 0, 0]}
    assert found["%a = alloca [16 x i32], align 4"] == {TYPE_FEATURE: [2, 16, 16, 512, 32, 0]}
    once = graph.SerializeToString()
    assert annotate(graph).SerializeToString() == once  # idempotent


@pytest.mark.parametrize(
    "text, shape",
    [
        ("<4 x float>", TypeShape(1, 4, 4, 128, 32, 1)),
        ("[4 x <2 x double>]", TypeShape(2, 4, 8, 512, 64, 1)),
        ("[2 x [3 x i8]]", TypeShape(2, 2, 6, 48, 8, 0)),
        ("{ i8, ptr }", TypeShape(3, 2, 2, 72, 8, 0)),
        ("<{ i16, i16 }>", TypeShape(3, 2, 2, 32, 16, 0)),
        ("<vscale x 4 x i32>", TypeShape(1, 4, 4, 128, 32, 0)),
        ("[8 x ptr addrspace(3)]", TypeShape(2, 8, 8, 512, 64, 0)),
        ("{}", TypeShape(3, 0, 0, 0, 0, 0)),
        ("i32", TypeShape(0, 0, 1, 32, 32, 0)),
        ("%struct.T", TypeShape(3, 2, 4, 128, 32, 1)),
        ("%struct.Opaque", TypeShape(3)),
    ],
)
def test_parse_type(text, shape):
    structs = struct_definitions("%struct.T = type { float, [3 x i32] }\n%struct.Opaque = type opaque\n")
    assert parse_type(text, structs) == shape


@pytest.mark.parametrize(
    "full_text, value",
    [
        ("i32 5", 5),
        ("i64 -9223372036854775808", -9223372036854775808),
        ("i1 false", 0),
        ("float 1.500000e+00", 1.5),
        ("double 0x7FF0000000000000", math.inf),
        ("bfloat 0xR3F80", 1.0),
        ("x86_fp80 0xK3FFF8000000000000000", 1.0),
        ("fp128 0xL00000000000000003FFF000000000000", 1.0),
        ("<2 x i64> splat (i64 3)", 3),
        ("ptr null", None),
        ("i32 undef", None),
        ("[2 x i32] [i32 1, i32 2]", None),
        ("@g = global i32 5, align 4", None),
    ],
)
def test_number_of(full_text, value):
    assert number_of(full_text) == value


def test_encode_number_is_bounded():
    assert encode_number(0) == [1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    assert encode_number(-0.0) == [2, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    assert encode_number(math.nan) == [3, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    assert encode_number(1e300)[2] == 64 and encode_number(1e-300)[2] == -64
    assert encode_number(9999999.5) == [2, 0, 7, 1, 0, 0, 0, 0, 0, 0]  # rounding carries into the exponent
    for value in (1, -17, 123456789, 3.25, -2.5e-7, 6.02e23):
        code = encode_number(value)
        assert len(code) == 10 and all(0 <= d <= 9 for d in code[3:]) and -64 <= code[2] <= 64


def test_cli_flag(tmp_path):
    path = tmp_path / "k.ll"
    path.write_text(IR)
    help_text = subprocess.run(
        [sys.executable, "-m", "programl", "build", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "--numbers-and-types" in help_text
    out = subprocess.run(
        [sys.executable, "-m", "programl", "build", str(path), "--numbers-and-types", "--format", "pb"],
        capture_output=True,
        check=True,
    ).stdout
    graph = ProgramGraph.FromString(out)
    assert is_annotated(graph)
    assert any(NUMBER_FEATURE in n.features.feature for n in graph.node if n.type == Node.CONSTANT)
    plain = subprocess.run(
        [sys.executable, "-m", "programl", "build", str(path), "--format", "pb"], capture_output=True, check=True
    ).stdout
    assert ProgramGraph.FromString(plain) == graph_from_ir(IR, path=str(path))


# ---------------------------------------------------------------------------------------------------------------
# Constants no int or float holds: the graph builds, and they get their digits with the exponent clipped

HUGE = "1" + "0" * 4999  # 5,000 digits: more than Python's int-string conversion takes (4,300)
NINES = "9" * 5000
HUGE_IR = f"""\
define i20000 @wide(i20000 %x) {{
  %y = add i20000 %x, {HUGE}
  %z = add i20000 %y, -{NINES}
  ret i20000 %z
}}
define x86_fp80 @fp80(x86_fp80 %x) {{
  %y = fadd x86_fp80 %x, 0xK7FFEFFFFFFFFFFFFFFFF
  %z = fmul x86_fp80 %y, 0xK00000000000000000001
  ret x86_fp80 %z
}}
define fp128 @quad(fp128 %x) {{
  %y = fadd fp128 %x, 0xLFFFFFFFFFFFFFFFF7FFEFFFFFFFFFFFF
  %z = fsub fp128 %y, 0xLFFFFFFFFFFFFFFFFFFFEFFFFFFFFFFFF
  %w = fmul fp128 %z, 0xL00000000000000003FFF000000000000
  ret fp128 %w
}}
define i32 @small(i32 %x) {{
  %y = add i32 %x, 7
  ret i32 %y
}}
"""
LARGEST_FINITE = [2, 0, 64, 1, 1, 8, 9, 7, 3, 1]  # 1.189731e4932, the largest finite x86_fp80 and fp128


def test_constants_beyond_int_and_float_build_with_clipped_digits():
    """A 5,000-digit integer constant (beyond Python's int-string limit) and the largest finite ``x86_fp80`` /
    ``fp128`` constants (beyond a double: ``OverflowError``) lost the whole graph; now it builds, they get their
    first seven digits with the exponent clipped to 64, and every other node is as without the option."""
    plain = graph_from_ir(HUGE_IR)
    rich = graph_from_ir(HUGE_IR, options=BuildOptions(numbers_and_types=True))
    found = {text[:40] if len(text) > 99 else text: v[NUMBER_FEATURE] for text, v in features_by_text(rich).items()}
    assert found[f"i20000 {HUGE}"[:40]] == [1, 0, 64, 1, 0, 0, 0, 0, 0, 0]
    assert found[f"i20000 -{NINES}"[:40]] == [1, 1, 64, 1, 0, 0, 0, 0, 0, 0]  # rounds up to 1.000000e5000
    assert found["x86_fp80 0xK7FFEFFFFFFFFFFFFFFFF"] == LARGEST_FINITE
    assert found["x86_fp80 0xK00000000000000000001"] == [2, 0, -64, 3, 6, 4, 5, 2, 0, 0]  # 3.6e-4951, not 0
    assert found["fp128 0xLFFFFFFFFFFFFFFFF7FFEFFFFFFFFFFFF"] == LARGEST_FINITE
    assert found["fp128 0xLFFFFFFFFFFFFFFFFFFFEFFFFFFFFFFFF"] == [2, 1, *LARGEST_FINITE[2:]]  # the most negative
    assert found["fp128 0xL00000000000000003FFF000000000000"] == [2, 0, 0, 1, 0, 0, 0, 0, 0, 0]
    assert found["i32 7"] == [1, 0, 0, 7, 0, 0, 0, 0, 0, 0]
    assert len(found) == 8
    for node in rich.node:  # without the added features: the faithful graph, byte for byte
        for key in (NUMBER_FEATURE, TYPE_FEATURE):
            if key in node.features.feature:
                del node.features.feature[key]
    del rich.module[0].features.feature[MARKER]
    assert rich.SerializeToString() == plain.SerializeToString()


def test_number_of_beyond_int_and_float():
    assert number_of(f"i20000 {HUGE}") == Decimal(HUGE) and number_of(f"i20000 -{NINES}") == Decimal(f"-{NINES}")
    assert number_of("i64 -9223372036854775808") == -(2**63)  # still an int where an int holds it
    largest = number_of("x86_fp80 0xK7FFEFFFFFFFFFFFFFFFF")
    assert isinstance(largest, Decimal) and f"{largest:.19e}" == "1.1897314953572317650e+4932"
    assert f"{number_of('x86_fp80 0xKFFFEFFFFFFFFFFFFFFFF'):.6e}" == "-1.189731e+4932"
    assert encode_number(Decimal(HUGE)) == [2, 0, 64, 1, 0, 0, 0, 0, 0, 0]  # a Decimal is floating point ...
    assert encode_number(Decimal(HUGE), integer=True)[0] == 1  # ... unless said
    assert encode_number(Decimal("Infinity")) == [3, 0, 0, 0, 0, 0, 0, 0, 0, 0]


def test_a_lowered_int_string_limit_does_not_lose_the_graph():
    """``sys.set_int_max_str_digits(640)`` (the least limit) and the largest ``i8192`` constant (2,466 digits)."""
    largest = "5453740678" + "0" * 2456  # not its digits, but as many: LLVM prints what the IR says, modulo 2**8192
    ir = f"define i8192 @f(i8192 %x) {{\n  %y = add i8192 %x, {largest}\n  ret i8192 %y\n}}\n"
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        graph = graph_from_ir(ir, options=BuildOptions(numbers_and_types=True))
    finally:
        sys.set_int_max_str_digits(before)
    values = [v[NUMBER_FEATURE] for t, v in features_by_text(graph).items() if t.startswith("i8192 ")]
    assert values == [[1, 0, 64, 5, 4, 5, 3, 7, 4, 1]]


@pytest.mark.parametrize(
    "text",
    ["i" + "9" * 5000, "[" + "9" * 5000 + " x i8]", "<" + "1" * 30 + " x float>", "i32 " + "0" * 5000 + "7"],
)
def test_hostile_texts_of_a_graph_read_from_disk(text):
    """:func:`annotate` runs on graphs read from disk, whose texts need not be what LLVM prints: none raises."""
    graph = ProgramGraph()
    node = graph.node.add(type=Node.CONSTANT, text=text.split(" ")[0])
    node.features.feature["full_text"].bytes_list.value.append(text.encode())
    graph.node.add(type=Node.VARIABLE, text=text)
    annotate(graph)
    digits = node.features.feature[NUMBER_FEATURE].int64_list.value
    assert list(digits) == ([1, 0, 0, 7, 0, 0, 0, 0, 0, 0] if text.startswith("i32 ") else [])


def test_cli_builds_the_graph_of_huge_constants(tmp_path):
    path = tmp_path / "huge.ll"
    path.write_text(HUGE_IR)
    run = subprocess.run(
        [sys.executable, "-m", "programl", "build", str(path), "--numbers-and-types", "--format", "pb"],
        capture_output=True,
    )
    assert run.returncode == 0 and run.stderr == b"", run.stderr
    graph = ProgramGraph.FromString(run.stdout)
    assert is_annotated(graph) and graph == graph_from_ir(
        HUGE_IR, path=str(path), options=BuildOptions(numbers_and_types=True)
    )
