"""Serialization and conversion of program graphs (docs/spec/python-api.md#transforms,
docs/spec/python-api.md#serialization, docs/spec/datasets.md#deepdataflow-layout;
docs/spec/policy.md#lossless-conversions; docs/spec/design.md#data-model).

* :mod:`~programl.io.serialize`: ``ProgramGraphList`` bytes / text / files (``save_graphs``, ``load_graphs``, ...).
* :mod:`~programl.io.json_convert`: networkx node-link JSON (``to_json``, ``from_json``).
* :mod:`~programl.io.networkx_convert`: ``networkx.MultiDiGraph`` (``to_networkx``, ``from_networkx``).
* :mod:`~programl.io.dot`: Graphviz DOT text and rendering (``to_dot``, ``render_dot``).
* :mod:`~programl.io.files`: single graph / label files by suffix (``read_graph``, ``write_graph``, ...).
* :mod:`~programl.io.compiler_gym`: CompilerGym's ``Programl`` / ``ProgramlJson`` observations.
* :mod:`~programl.io.typed_pointers`: node texts of the original's (LLVM 10) graphs as LLVM 22 prints them
  (``llvm22_text``: ``i32*`` -> ``ptr``).

All conversions are lossless: pb <-> pbtxt <-> JSON <-> networkx <-> ``ProgramGraph`` give equal protobufs.
Nothing here needs torch (the torch-geometric conversion lives in :mod:`programl.io.pyg`). Names are imported
lazily, so ``import programl.io`` does not import networkx.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "from_bytes",
    "from_json",
    "from_networkx",
    "from_string",
    "llvm22_text",
    "load_graphs",
    "read_features_list",
    "read_graph",
    "render_dot",
    "save_graphs",
    "to_bytes",
    "to_dot",
    "to_json",
    "to_networkx",
    "to_string",
    "write_features_list",
    "write_graph",
]

_MODULES = {
    "from_bytes": "serialize",
    "from_string": "serialize",
    "load_graphs": "serialize",
    "save_graphs": "serialize",
    "to_bytes": "serialize",
    "to_string": "serialize",
    "from_json": "json_convert",
    "to_json": "json_convert",
    "from_networkx": "networkx_convert",
    "to_networkx": "networkx_convert",
    "render_dot": "dot",
    "to_dot": "dot",
    "read_features_list": "files",
    "read_graph": "files",
    "write_features_list": "files",
    "write_graph": "files",
    "llvm22_text": "typed_pointers",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'programl.io' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"programl.io.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(globals()))
