"""String constants' bytes in the graph (``docs/numbers_types.md``, "String bytes"): an opt-in node feature.

ProGraML's graph keeps a string global (``@.str = private unnamed_addr constant [4 x i8] c" %d\\00"``) as a
CONSTANT node whose text is ``ptr`` (docs/spec/graph.md#node-fields): its bytes are only in ``full_text``, which no
model reads, so two programs that differ only in their output format (``"%d\\n"`` against ``"%d "``) give the model the
same graph. POJ-104's most confused class pairs are such programs (``docs/results.md`` §7, "Where the errors are"). This
module adds the bytes as a node **feature** of the ordinary ``ProgramGraph``, as
:mod:`programl.graph_builder.numbers_types` adds numbers and shapes: no new nodes, edges or proto fields, and the
graph with the option off is the faithful graph byte for byte.

``string_bytes`` (int64 x :data:`STRING_WIDTH` = 17), on each CONSTANT node whose ``full_text`` holds a character
array constant (LLVM's ``c"..."``: a string global, or a ``[N x i8] c"..."`` operand):
``[length, b1, ..., b16]``:

* ``length``: the array's length in bytes (with the terminating NUL, when there is one);
* ``b1`` .. ``b16``: the first sixteen bytes, each as its value plus one (1 .. 256; 0 past the end).

The module feature ``string_bytes`` (int64, the encoding's version, :data:`VERSION`) marks an annotated graph.
No torch: :func:`programl.io.pyg.to_pyg` turns the feature into ``x_str``.
"""

from __future__ import annotations

import re

from programl.graph_builder.numbers_types import _full_text, _set_features
from programl.proto import Node, ProgramGraph

__all__ = [
    "MARKER",
    "PLACES",
    "STRING_FEATURE",
    "STRING_WIDTH",
    "VERSION",
    "annotate",
    "encode_string",
    "is_annotated",
    "string_of",
]

#: The node feature key and the module feature that marks an annotated graph (value: :data:`VERSION`).
STRING_FEATURE = MARKER = "string_bytes"
VERSION = 1
#: Bytes kept of each string (the first ones), and the feature's width (the length, then the bytes).
PLACES = 16
STRING_WIDTH = 1 + PLACES

# LLVM prints a character array as c"...": printable ASCII as itself except '"' and '\' ('\' as \\), every
# other byte as \XX (and reads either spelling of a backslash).
_CHARS = re.compile(r'c"((?:[^"\\]|\\[0-9A-Fa-f]{2}|\\\\)*)"')
_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2}|\\)")


def string_of(full_text: str) -> bytes | None:
    """The bytes of the first character array constant (``c"..."``) in an instruction's or constant's text, or
    None (no string there)."""
    match = _CHARS.search(full_text)
    if match is None:
        return None
    body = match.group(1)
    out = bytearray()
    at = 0
    for escape in _ESCAPE.finditer(body):
        out += body[at : escape.start()].encode("latin-1", "replace")
        out.append(0x5C if escape.group(1) == "\\" else int(escape.group(1), 16))
        at = escape.end()
    out += body[at:].encode("latin-1", "replace")
    return bytes(out)


def encode_string(data: bytes) -> list[int]:
    """``[length, b1 + 1, ..., b16 + 1]`` (module docstring), zeros past the end."""
    head = [b + 1 for b in data[:PLACES]]
    return [len(data), *head, *([0] * (PLACES - len(head)))]


def annotate(graph: ProgramGraph) -> ProgramGraph:
    """Add the ``string_bytes`` node feature to every CONSTANT node that holds a character array, and the
    ``string_bytes`` module feature, to ``graph`` (in place; also returned). Idempotent."""
    for node in graph.node:
        if node.type != Node.CONSTANT:
            continue
        data = string_of(_full_text(node))
        if data is not None:
            _set_features(node.features, STRING_FEATURE, encode_string(data))
    for module in graph.module:
        _set_features(module.features, MARKER, [VERSION])
    return graph


def is_annotated(graph: ProgramGraph) -> bool:
    """Whether :func:`annotate` (or the builder option) added the feature (the module marker)."""
    return any(MARKER in module.features.feature for module in graph.module)
