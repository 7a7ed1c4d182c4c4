"""programl: ProGraML program graphs from LLVM IR, C, C++, OpenCL, CUDA and Fortran; data-flow labels; GNNs.

The public API mirrors programl 0.3.2 (docs/spec/python-api.md), whose modules ``programl.create_ops``,
``programl.serialize_ops`` and ``programl.transform_ops`` also exist (docs/compat.md). Attributes are resolved
lazily, so ``import programl`` stays cheap: nothing heavy (llvmlite, networkx, torch) is imported until the function
that needs it is used.

A graph of the repository's ``examples/dot_product.ll``, and the same graph for networkx:

>>> import programl
>>> graph = programl.from_llvm_ir(open("examples/dot_product.ll").read())
>>> len(graph.node), len(graph.edge)
(38, 59)
>>> print(programl.to_networkx(graph))
MultiDiGraph with 38 nodes and 59 edges
"""

from __future__ import annotations

import importlib
from typing import Any

from programl.util.lazy import lazy_getattr

__version__ = "0.4.0"

#: The ``version=`` values of ``from_llvm_ir`` (as ``programl.create_ops.LLVM_VERSIONS``): 0.3.2's, whose IR is read
#: with LLVM 22 after one warning, and "22" (llvmlite's bundled LLVM; older IR is upgraded on read).
LLVM_VERSIONS = ["10", "6", "3.8", "22"]
#: The ``version=`` values of ``from_cpp`` / ``from_clang``: 0.3.2's "10" (clang-22 is used after one warning), "22".
CLANG_VERSIONS = ["10", "22"]

# public name -> module that defines it
_EXPORTS = {
    # creation (docs/spec/python-api.md#creation)
    "from_llvm_ir": "programl.create",
    "from_bitcode": "programl.create",
    "from_clang": "programl.create",
    "from_cpp": "programl.create",
    "from_opencl": "programl.create",
    "from_xla_hlo_proto": "programl.create",
    "from_cuda": "programl.create",
    "from_fortran": "programl.create",
    # serialization (docs/spec/python-api.md#serialization)
    "save_graphs": "programl.io.serialize",
    "load_graphs": "programl.io.serialize",
    "to_bytes": "programl.io.serialize",
    "from_bytes": "programl.io.serialize",
    "to_string": "programl.io.serialize",
    "from_string": "programl.io.serialize",
    # transforms (docs/spec/python-api.md#transforms)
    "to_networkx": "programl.io.networkx_convert",
    "from_networkx": "programl.io.networkx_convert",
    "to_json": "programl.io.json_convert",
    "from_json": "programl.io.json_convert",
    "to_dot": "programl.io.dot",
    "render_dot": "programl.io.dot",
    "to_dgl": "programl.transform_ops",
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


# Submodules that 0.3.2 imported with the package, so that code reads them as attributes (``programl.proto.Node``,
# ``programl.create_ops.LLVM2GRAPH_BINARIES``); imported here on first use.
_SUBMODULES = frozenset({"create_ops", "exceptions", "proto", "serialize_ops", "transform_ops", "util"})


_exported = lazy_getattr(globals(), _EXPORTS)

#: The import names of the ``ml`` extra (``pip install 'programl[ml]'``) and the names users know them by.
_ML_PACKAGES = {"torch": "PyTorch", "torch_geometric": "torch-geometric"}
#: Public names whose module needs the ``ml`` extra.
_ML_EXPORTS = frozenset({"to_pyg", "to_hetero", "from_pyg"})


def _ml_missing() -> list[str]:
    """The packages of the ``ml`` extra that cannot be imported (found by ``importlib.util.find_spec``, which imports
    nothing; the CLI asks before a command that needs them, so ``programl --help`` never imports torch)."""
    import importlib.util

    missing = []
    for name in _ML_PACKAGES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def _ml_message(what: str, missing: list[str] | None = None) -> str:
    """One line: ``<what> needs PyTorch and torch-geometric (not installed): pip install 'programl[ml]'``, naming the
    missing one when the other is there."""
    missing = _ml_missing() if missing is None else missing
    which = f"{_ML_PACKAGES.get(missing[0], missing[0])} is " if len(missing) == 1 else ""
    return f"{what} needs PyTorch and torch-geometric ({which}not installed): pip install 'programl[ml]'"


def _ml_import_error(what: str, error: ModuleNotFoundError) -> ModuleNotFoundError | None:
    """A one-line ``ModuleNotFoundError`` saying which extra to install, when ``error`` is a package of the ``ml``
    extra that is not installed; None for any other module (and for a torch that is installed but lacks a part)."""
    if (error.name or "").partition(".")[0] not in _ML_PACKAGES:
        return None
    missing = _ml_missing()
    return ModuleNotFoundError(_ml_message(what, missing), name=missing[0]) if missing else None


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"programl.{name}")
    if name in _ML_EXPORTS:
        try:
            return _exported(name)
        except ModuleNotFoundError as error:  # installed without the ml extra: one line, saying which to install
            replacement = _ml_import_error(f"programl.{name}", error)
            if replacement is None:
                raise
            raise replacement from None
    return _exported(name)


def __dir__() -> list[str]:
    return __all__
