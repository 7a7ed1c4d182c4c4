"""Numbers and types in the graph (``docs/numbers_types.md``): opt-in node features beyond the original graph.

ProGraML's graph says a constant's *type* (``i32``) but not its value, and a value's type only as text
(``<4 x float>``, ``[256 x float]``, ``struct``), so a model cannot read a loop bound or a vector width.
PERFOGRAPH (Tehranijamsaz et al., NeurIPS 2023) adds both. This module adds them as node **features** of the
ordinary ``ProgramGraph`` (no new proto fields, no new nodes or edges), so the original's tools still read the
graphs, and the graph with the option off stays the faithful graph byte for byte.

Features written (keys not used by ProGraML, whose node features are ``full_text``, ``llvm_profile_*``,
``inst2vec_*`` and ``source_node_index``; docs/spec/graph.md#node-fields):

``number_digits`` (int64 x 10), on CONSTANT nodes that are a number (an integer, a floating-point value, a splat
vector of one): a bounded scientific-notation digit encoding ``[kind, sign, exponent, d1, ..., d7]``:

* ``kind``: 1 integer (``i1 true`` is 1), 2 floating point, 3 not finite (inf, NaN: the rest 0);
* ``sign``: 1 when negative;
* ``exponent``: the decimal exponent ``e`` of ``|v| = d1.d2...d7 x 10^e``, clipped to ``[-64, 64]`` (0 for 0);
* ``d1`` .. ``d7``: the first seven significant decimal digits (rounded; ``d1`` is 0 only for the value 0).

Each component takes a handful of values, so a model embeds them as words (PERFOGRAPH embeds digits by position
as well); integers of up to seven digits are exact, larger values keep seven significant digits.

Every constant LLVM prints gets these features, however large: an integer of any width (``i20000`` constants of
5,000 digits, more than Python's int-string limit converts) is read from its digits as a :class:`~decimal.Decimal`,
and an ``x86_fp80`` or ``fp128`` value beyond a double's range (the largest finite one, about ``1.19e4932``, or a
nonzero one below ``4.9e-324``) is computed from its bits to 40 significant digits; both keep their first seven
significant digits and their sign, and their exponent is clipped to ``[-64, 64]`` like any other (the largest finite
``x86_fp80`` is ``[2, 0, 64, 1, 1, 8, 9, 7, 3, 1]``).

``type_shape`` (int64 x 6), on nodes whose type is a vector, array or struct (VARIABLE / CONSTANT: the value's
type; ``alloca``: the allocated type; ``getelementptr``: the source element type; a global variable's CONSTANT
node: the global's value type): ``[kind, elements, scalars, bits, element_bits, element_is_float]``:

* ``kind``: 1 vector, 2 array, 3 struct;
* ``elements``: the outer count (vector / array length, struct member count);
* ``scalars``: scalar leaves when flattened (``[4 x <2 x float>]``: 8);
* ``bits``: total size in bits without padding (pointers 64);
* ``element_bits``, ``element_is_float``: the first scalar leaf's width and whether it is floating point.

A named struct (``%struct.S``) is looked up in the module's type definitions, given by the builder; annotating a
graph alone (:func:`annotate` without ``structs``) knows named structs only as ``kind`` 3 with zeros, as does a
variable whose text the collapsing rule made ``struct`` (docs/spec/graph.md#type-texts).

The module feature ``numbers_and_types`` (int64, the encoding's version, :data:`VERSION`) marks an annotated graph.
No torch: :func:`programl.io.pyg.to_pyg` turns the features into ``x_num`` / ``x_type``.
"""

from __future__ import annotations

import math
import re
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation, localcontext
from typing import NamedTuple

from programl.proto import Node, ProgramGraph

__all__ = [
    "DIGITS",
    "NUMBER_FEATURE",
    "NUMBER_WIDTH",
    "TYPE_FEATURE",
    "TYPE_WIDTH",
    "VERSION",
    "MARKER",
    "TypeShape",
    "annotate",
    "encode_number",
    "is_annotated",
    "number_of",
    "parse_type",
    "struct_definitions",
    "type_shape",
]

#: Node feature keys and widths, and the module feature that marks an annotated graph (value: :data:`VERSION`).
NUMBER_FEATURE, TYPE_FEATURE, MARKER = "number_digits", "type_shape", "numbers_and_types"
VERSION = 1
DIGITS = 7
NUMBER_WIDTH = 3 + DIGITS
TYPE_WIDTH = 6
MAX_EXPONENT = 64
VECTOR, ARRAY, STRUCT = 1, 2, 3
_POINTER_BITS = 64
_FLOAT_BITS = {"half": 16, "bfloat": 16, "float": 32, "double": 64, "x86_fp80": 80, "fp128": 128, "ppc_fp128": 128}


class TypeShape(NamedTuple):
    """A type's shape (module docstring, ``type_shape``); ``kind`` 0 for a scalar or a type of no interest."""

    kind: int = 0
    elements: int = 0
    scalars: int = 0
    bits: int = 0
    element_bits: int = 0
    element_is_float: int = 0


_SCALAR_VOID = TypeShape()
_MAX_COUNT_DIGITS = 20  # an array length or an integer width LLVM prints fits in a u64


class _TypeParser:
    """Recursive descent over LLVM 22's printing of a type, from an offset; returns (shape, end)."""

    _WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    _NAME = re.compile(r'%(?:"(?:[^"\\]|\\.)*"|[-A-Za-z$._0-9]+)')
    _INT = re.compile(r"\d+")

    def __init__(self, structs: dict[str, str] | None) -> None:
        self.structs = structs or {}
        self.named: dict[str, TypeShape] = {}

    def skip(self, text: str, at: int) -> int:
        while at < len(text) and text[at] == " ":
            at += 1
        return at

    def parse(self, text: str, at: int = 0, depth: int = 0) -> tuple[TypeShape, int] | None:
        if depth > 64:
            return None
        at = self.skip(text, at)
        if at >= len(text):
            return None
        c = text[at]
        if c in "<[":
            close = ">" if c == "<" else "]"
            if text.startswith("<{", at):  # packed struct
                return self.members(text, at + 2, "}>", depth)
            at = self.skip(text, at + 1)
            if text.startswith("vscale x ", at):
                at += len("vscale x ")
            m = self._INT.match(text, at)
            if not m or len(m.group()) > _MAX_COUNT_DIGITS or not text.startswith(" x ", m.end()):
                return None
            count = int(m.group())
            inner = self.parse(text, m.end() + 3, depth + 1)
            if inner is None:
                return None
            element, end = inner
            end = self.skip(text, end)
            if not text.startswith(close, end):
                return None
            leaf = _leaf(element)
            shape = TypeShape(
                VECTOR if c == "<" else ARRAY,
                count,
                count * max(element.scalars, 1),
                count * element.bits,
                leaf[0],
                leaf[1],
            )
            return shape, end + 1
        if c == "{":
            return self.members(text, at + 1, "}", depth)
        if c == "%":
            m = self._NAME.match(text, at)
            if not m:
                return None
            return self.named_struct(m.group(), depth), m.end()
        m = self._WORD.match(text, at)
        if not m:
            return None
        word, end = m.group(), m.end()
        if word == "ptr":
            if text.startswith(" addrspace(", end):
                close = text.find(")", end)
                end = close + 1 if close >= 0 else end
            return TypeShape(0, 0, 1, _POINTER_BITS, _POINTER_BITS, 0), end
        if word[0] == "i" and word[1:].isdigit():
            bits = int(word[1:]) if len(word) <= _MAX_COUNT_DIGITS else 0  # (a graph's text need not be LLVM's)
            return TypeShape(0, 0, 1, bits, bits, 0), end
        if word in _FLOAT_BITS:
            bits = _FLOAT_BITS[word]
            return TypeShape(0, 0, 1, bits, bits, 1), end
        if word == "target" and text.startswith("(", end):
            close = text.find(")", end)
            return _SCALAR_VOID, (close + 1 if close >= 0 else len(text))
        return _SCALAR_VOID, end  # void, label, token, metadata, x86_amx ...

    def members(self, text: str, at: int, close: str, depth: int) -> tuple[TypeShape, int] | None:
        shapes = []
        at = self.skip(text, at)
        if not text.startswith(close, at):
            while True:
                parsed = self.parse(text, at, depth + 1)
                if parsed is None:
                    return None
                shape, at = parsed
                shapes.append(shape)
                at = self.skip(text, at)
                if text.startswith(",", at):
                    at += 1
                    continue
                break
            at = self.skip(text, at)
            if not text.startswith(close, at):
                return None
        leaf = next((_leaf(s) for s in shapes if _leaf(s)[0]), (0, 0))
        shape = TypeShape(
            STRUCT, len(shapes), sum(max(s.scalars, 1) for s in shapes), sum(s.bits for s in shapes), leaf[0], leaf[1]
        )
        return shape, at + len(close)

    def named_struct(self, name: str, depth: int) -> TypeShape:
        shape = self.named.get(name)
        if shape is not None:
            return shape
        self.named[name] = TypeShape(STRUCT)  # (a cycle, impossible with opaque pointers, ends here)
        body = self.structs.get(name)
        parsed = self.parse(body, 0, depth + 1) if body and body != "opaque" else None
        shape = parsed[0] if parsed is not None and parsed[0].kind == STRUCT else TypeShape(STRUCT)
        self.named[name] = shape
        return shape


def _leaf(shape: TypeShape) -> tuple[int, int]:
    return shape.element_bits, shape.element_is_float


def parse_type(text: str, structs: dict[str, str] | None = None) -> TypeShape | None:
    """The shape of the type printed at the start of ``text`` (None when it does not start with a type).

    Args:
        text: LLVM 22's printing of a type, possibly followed by more (``[4 x i32] [i32 1, ...]``).
        structs: Named struct bodies, ``{"%struct.S": "{ i32, float }"}`` (:func:`struct_definitions`).
    """
    parsed = _TypeParser(structs).parse(text)
    return parsed[0] if parsed is not None else None


_STRUCT_DEFINITION = re.compile(r'^(%(?:"(?:[^"\\]|\\.)*"|[-A-Za-z$._0-9]+)) = type (.*)$', re.MULTILINE)


def struct_definitions(module_text: str) -> dict[str, str]:
    """``{"%struct.S": "{ i32, float }"}`` from a printed module's ``%name = type ...`` lines."""
    found = {}
    for match in _STRUCT_DEFINITION.finditer(module_text):
        found[match.group(1)] = match.group(2).strip()
    return found


# ---------------------------------------------------------------------------------------------------------------
# numbers

_INTEGER = re.compile(r"i\d+ (-?\d+|true|false)\Z")
_FLOAT = re.compile(r"(half|bfloat|float|double|x86_fp80|fp128|ppc_fp128) (\S+)\Z")
_SPLAT = re.compile(r"<(?:vscale x )?\d+ x [^>]+> splat \((.*)\)\Z")


#: Integer constants of more digits are read as a Decimal: 640 is the least limit Python's int-string conversion
#: (``sys.set_int_max_str_digits``) can have, and converting a longer string to an int costs time quadratic in its
#: length (LLVM's widest integer, ``i8388607``, prints 2.5 million digits).
_MAX_INT_DIGITS = 640


def number_of(full_text: str) -> int | float | Decimal | None:
    """The number a CONSTANT node's ``full_text`` prints (``i32 -5``, ``float 1.000000e+00``, ``double
    0x3FB999999999999A``, ``<4 x i32> splat (i32 1)``), or None when it is not one (``ptr null``, globals,
    constant expressions, aggregates, ``undef``/``poison``/``zeroinitializer``).

    An int or a float, except where neither holds the value: a :class:`~decimal.Decimal` for an integer of more
    than 640 digits (exact) and for an ``x86_fp80`` or ``fp128`` value beyond a double's range (40 significant
    digits; module docstring).
    """
    number = _number(full_text)
    return None if number is None else number[0]


def _number(full_text: str) -> tuple[int | float | Decimal, bool] | None:
    """``(value, whether it is an integer constant)`` of :func:`number_of`."""
    text = full_text.strip()
    splat = _SPLAT.match(text)
    if splat:
        text = splat.group(1).strip()
    m = _INTEGER.match(text)
    if m:
        value = m.group(1)
        if value in ("true", "false"):
            return int(value == "true"), True
        return (int(value) if len(value) <= _MAX_INT_DIGITS else Decimal(value)), True
    m = _FLOAT.match(text)
    if m:
        value = _float_literal(m.group(1), m.group(2))
        return None if value is None else (value, False)
    return None


def _scaled(mantissa: int, exponent: int) -> float | Decimal:
    """``mantissa * 2**exponent`` as a float, or as a Decimal of 40 significant digits where a double cannot hold
    it (above its largest value, or nonzero below its smallest)."""
    try:
        value = math.ldexp(mantissa, exponent)
    except OverflowError:
        value = math.inf
    if value != math.inf and (value != 0.0 or mantissa == 0):
        return value
    with localcontext(Context(prec=40, Emax=MAX_EMAX, Emin=MIN_EMIN)):
        return Decimal(mantissa) * Decimal(2) ** exponent


def _float_literal(type_: str, literal: str) -> float | Decimal | None:
    if literal.startswith("0x"):
        digits = literal[2:]
        if digits[:1] in ("H", "R", "K", "L", "M"):  # half, bfloat, x86_fp80, fp128, ppc_fp128 bit patterns
            prefix, digits = digits[0], digits[1:]
            try:
                bits = int(digits, 16)
            except ValueError:
                return None
            if prefix == "H":
                return _from_bits(bits, 5, 10)
            if prefix == "R":
                return _from_bits(bits, 8, 7)
            if prefix == "L":  # LLVM prints the low 64 bits first
                low, high = bits >> 64, bits & ((1 << 64) - 1)
                return _from_bits(high << 64 | low, 15, 112)
            if prefix == "K":  # 1 sign, 15 exponent, explicit integer bit, 63 fraction
                sign, exponent, mantissa = bits >> 79 & 1, bits >> 64 & 0x7FFF, bits & ((1 << 64) - 1)
                if exponent == 0x7FFF:
                    return math.nan
                value = _scaled(mantissa, max(exponent, 1) - 16383 - 63)  # (a denormal's exponent is that of 1)
                return _negated(value) if sign else value
            return None  # ppc_fp128 (a double-double): not decoded
        try:
            return _from_bits(int(digits, 16), 11, 52)  # LLVM prints float and double as the double's bits
        except ValueError:
            return None
    try:
        return float(literal)
    except ValueError:
        return None


def _from_bits(bits: int, exponent_bits: int, fraction_bits: int) -> float | Decimal:
    sign = bits >> (exponent_bits + fraction_bits) & 1
    exponent = bits >> fraction_bits & ((1 << exponent_bits) - 1)
    fraction = bits & ((1 << fraction_bits) - 1)
    bias = (1 << (exponent_bits - 1)) - 1
    if exponent == (1 << exponent_bits) - 1:
        value = math.inf if fraction == 0 else math.nan
    elif exponent == 0:
        value = _scaled(fraction, 1 - bias - fraction_bits)
    else:
        value = _scaled(fraction | (1 << fraction_bits), exponent - bias - fraction_bits)
    return _negated(value) if sign else value


def _negated(value: float | Decimal) -> float | Decimal:
    return value.copy_negate() if isinstance(value, Decimal) else -value  # (unary minus rounds a Decimal)


def encode_number(value: int | float | Decimal, *, integer: bool | None = None) -> list[int]:
    """``[kind, sign, exponent, d1, ..., d7]`` (module docstring, ``number_digits``).

    Args:
        value: The number (:func:`number_of`); a Decimal of any size is encoded without converting it to an int or
            a float.
        integer: Whether ``value`` is an integer constant (kind 1) or a floating-point one (kind 2); default: an
            int is an integer, a float or a Decimal floating point.
    """
    is_float = isinstance(value, (float, Decimal)) if integer is None else not integer
    if isinstance(value, float) and not math.isfinite(value):
        return [3] + [0] * (NUMBER_WIDTH - 1)
    kind = 2 if is_float else 1
    negative = 1 if value < 0 else 0
    if value == 0:
        return [kind, negative] + [0] * (NUMBER_WIDTH - 2)
    try:
        if isinstance(value, Decimal):
            if not value.is_finite():
                return [3] + [0] * (NUMBER_WIDTH - 1)
            number = value.copy_abs()  # (exact: abs() would round to the context's precision first)
        else:
            number = Decimal(repr(abs(value))) if isinstance(value, float) else Decimal(abs(value))
        rounded = f"{number:.{DIGITS - 1}e}"  # "d.dddddde+XX"
    except (InvalidOperation, ValueError):
        return [3] + [0] * (NUMBER_WIDTH - 1)
    mantissa, exponent = rounded.split("e")
    digits = [int(d) for d in mantissa.replace(".", "")][:DIGITS]
    exponent_value = max(-MAX_EXPONENT, min(MAX_EXPONENT, int(exponent)))
    return [kind, negative, exponent_value] + digits + [0] * (DIGITS - len(digits))


# ---------------------------------------------------------------------------------------------------------------
# the graph

_GEP_FLAGS = re.compile(r"(?:inbounds |nuw |nusw |inrange\([^)]*\) )*")
_GLOBAL_TYPE = re.compile(r"^@\S+ = (?:[^\"]*? )?(?:global|constant) ")


def type_shape(
    node: Node, structs: dict[str, str] | None = None, *, parser: _TypeParser | None = None
) -> TypeShape | None:
    """The vector/array/struct shape a node shows (module docstring), or None."""
    parser = parser or _TypeParser(structs)
    text = node.text
    if node.type == Node.INSTRUCTION:
        if text not in ("alloca", "getelementptr"):
            return None
        full = _full_text(node)
        word = f"= {text} " if f"= {text} " in full else f"{text} "
        at = full.find(word)
        if at < 0:
            return None
        rest = full[at + len(word) :]
        if text == "getelementptr":
            rest = rest[_GEP_FLAGS.match(rest).end() :]
        elif rest.startswith("inalloca "):
            rest = rest[len("inalloca ") :]
        parsed = parser.parse(rest)
    elif node.type in (Node.VARIABLE, Node.CONSTANT):
        full = _full_text(node)
        if node.type == Node.CONSTANT and full.startswith("@"):
            m = _GLOBAL_TYPE.match(full)
            parsed = parser.parse(full, m.end()) if m else None
        elif text == "struct":
            parsed = parser.parse(full)  # "%struct.S %s" (arguments, constants); "struct %5" parses as nothing
            if parsed is None or parsed[0].kind != STRUCT:
                parsed = (TypeShape(STRUCT), 0)
        else:
            parsed = parser.parse(text)
    else:
        return None
    if parsed is None or parsed[0].kind == 0:
        return None
    return parsed[0]


def _full_text(node: Node) -> str:
    feature = node.features.feature.get("full_text")
    if feature is None or not feature.bytes_list.value:
        return ""
    return feature.bytes_list.value[0].decode("utf-8", "replace")


def annotate(graph: ProgramGraph, structs: dict[str, str] | None = None) -> ProgramGraph:
    """Add ``number_digits`` and ``type_shape`` node features and the ``numbers_and_types`` module feature to
    ``graph`` (in place; also returned). Idempotent.

    Args:
        graph: A graph built by this project (LLVM 22 texts) or read from disk.
        structs: Named struct bodies of the module (:func:`struct_definitions`); without them named structs are
            ``kind`` 3 with zeros.
    """
    parser = _TypeParser(structs)
    for node in graph.node:
        if node.type == Node.CONSTANT:
            number = _number(_full_text(node))
            if number is not None:
                _set(node, NUMBER_FEATURE, encode_number(number[0], integer=number[1]))
        shape = type_shape(node, parser=parser)
        if shape is not None:
            _set(node, TYPE_FEATURE, [min(int(v), (1 << 62)) for v in shape])
    for module in graph.module:
        _set_features(module.features, MARKER, [VERSION])
    return graph


def _set(node: Node, key: str, values: list[int]) -> None:
    _set_features(node.features, key, values)


def _set_features(features, key: str, values: list[int]) -> None:
    feature = features.feature[key]
    feature.int64_list.ClearField("value")
    feature.int64_list.value.extend(values)


def is_annotated(graph: ProgramGraph) -> bool:
    """Whether :func:`annotate` (or the builder option) added the features (the module marker)."""
    return any(MARKER in module.features.feature for module in graph.module)
