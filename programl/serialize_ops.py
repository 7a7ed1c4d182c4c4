"""programl 0.3.2's ``programl.serialize_ops`` module, for code written against it
(docs/spec/python-api.md#serialization).

The same six functions with the same arguments and results, from :mod:`programl.io.serialize`: ``ProgramGraphList``
bytes (gzip by default), protobuf text, and files of them. See docs/compat.md for the differences.
"""

from __future__ import annotations

from programl.exceptions import GraphCreationError
from programl.io.serialize import from_bytes, from_string, load_graphs, save_graphs, to_bytes, to_string
from programl.proto import ProgramGraph, ProgramGraphList

__all__ = [
    "GraphCreationError",
    "ProgramGraph",
    "ProgramGraphList",
    "from_bytes",
    "from_string",
    "load_graphs",
    "save_graphs",
    "to_bytes",
    "to_string",
]
