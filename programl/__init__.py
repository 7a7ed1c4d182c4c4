"""programl: ProGraML program graphs from LLVM IR, C, C++ and OpenCL; data-flow labels; graph neural networks.

The public API mirrors programl 0.3.2 (SPEC §3, DESIGN §3). Attributes are resolved lazily, so ``import programl``
stays cheap: nothing heavy (llvmlite, networkx, torch) is imported until the function that needs it is used.

>>> import programl
>>> graph = programl.from_llvm_ir(open("foo.ll").read())        # doctest: +SKIP
>>> programl.to_networkx(graph)                                  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.4.0"

#: LLVM versions whose IR this package reads (through llvmlite's bundled LLVM 22; older IR is upgraded on read).
LLVM_VERSIONS = ["22"]
#: clang versions used by the C / C++ / OpenCL front ends.
CLANG_VERSIONS = ["22"]

# public name -> module that defines it
_EXPORTS = {
    # creation (SPEC §3.1)
    "from_llvm_ir": "programl.create",
    "from_bitcode": "programl.create",
    "from_clang": "programl.create",
    "from_cpp": "programl.create",
    "from_opencl": "programl.create",
    "from_xla_hlo_proto": "programl.create",
    # serialization (SPEC §3.3)
    "save_graphs": "programl.io.serialize",
    "load_graphs": "programl.io.serialize",
    "to_bytes": "programl.io.serialize",
    "from_bytes": "programl.io.serialize",
    "to_string": "programl.io.serialize",
    "from_string": "programl.io.serialize",
    # transforms (SPEC §3.2)
    "to_networkx": "programl.io.networkx_convert",
    "from_networkx": "programl.io.networkx_convert",
    "to_json": "programl.io.json_convert",
    "from_json": "programl.io.json_convert",
    "to_dot": "programl.io.dot",
    "render_dot": "programl.io.dot",
    "to_pyg": "programl.io.pyg",
    "to_hetero": "programl.io.pyg",
    "from_pyg": "programl.io.pyg",
    # single files (the DeepDataFlow layout): .pb, .pbtxt, .json by suffix
    "read_graph": "programl.io.files",
    "write_graph": "programl.io.files",
    "read_features_list": "programl.io.files",
    "write_features_list": "programl.io.files",
    # exceptions
    "AnalysisError": "programl.exceptions",
    "GraphCreationError": "programl.exceptions",
    "GraphTransformError": "programl.exceptions",
    "UnsupportedCompiler": "programl.exceptions",
    # messages
    "ProgramGraph": "programl.proto",
    "ProgramGraphFeaturesList": "programl.proto",
    "ProgramGraphOptions": "programl.proto",
}

__all__ = sorted([*_EXPORTS, "CLANG_VERSIONS", "LLVM_VERSIONS", "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'programl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
