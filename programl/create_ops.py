"""programl 0.3.2's ``programl.create_ops`` module, for code written against it
(docs/spec/python-api.md#creation).

The creation functions are those of :mod:`programl.create`. 0.3.2 ran one binary per LLVM / clang version
(``llvm2graph-10``, ``clang2graph-10`` ...); this package reads everything with LLVM 22 (llvmlite) and clang-22, so
the version-to-binary tables keep their keys, which client code iterates and passes back as ``version=``, and name
what now does the work instead of a binary path. A 0.3.2 version (``"10"``, ``"6"``, ``"3.8"``) is read with LLVM 22
after one :class:`~programl.create.LegacyVersionWarning`; see docs/compat.md.
"""

from __future__ import annotations

from programl.create import (
    LEGACY_CLANG_VERSIONS,
    LEGACY_LLVM_VERSIONS,
    SUPPORTED_VERSIONS,
    from_bitcode,
    from_clang,
    from_cpp,
    from_cuda,
    from_fortran,
    from_llvm_ir,
    from_opencl,
    from_xla_hlo_proto,
)
from programl.exceptions import GraphCreationError, UnsupportedCompiler
from programl.proto import ProgramGraph

__all__ = [
    "CLANG2GRAPH_BINARIES",
    "CLANG_VERSIONS",
    "LLVM2GRAPH_BINARIES",
    "LLVM_VERSIONS",
    "XLA2GRAPH",
    "GraphCreationError",
    "ProgramGraph",
    "UnsupportedCompiler",
    "from_bitcode",
    "from_clang",
    "from_cpp",
    "from_cuda",
    "from_fortran",
    "from_llvm_ir",
    "from_opencl",
    "from_xla_hlo_proto",
]

_LLVM22 = "programl.graph_builder.llvm (llvmlite, LLVM 22)"
_CLANG22 = "clang-22 + programl.graph_builder.llvm (LLVM 22)"

#: version -> what builds graphs from that version's IR (0.3.2: the path of ``llvm2graph-<version>``). 0.3.2's keys
#: first, in its order, then ``"22"``.
LLVM2GRAPH_BINARIES: dict[str, str] = {version: _LLVM22 for version in (*LEGACY_LLVM_VERSIONS, *SUPPORTED_VERSIONS)}
#: 0.3.2's ``LLVM_VERSIONS``: the keys of :data:`LLVM2GRAPH_BINARIES`.
LLVM_VERSIONS: list[str] = list(LLVM2GRAPH_BINARIES)
#: version -> what compiles C/C++ for that version (0.3.2: the path of ``clang2graph-10``).
CLANG2GRAPH_BINARIES: dict[str, str] = {v: _CLANG22 for v in (*LEGACY_CLANG_VERSIONS, *SUPPORTED_VERSIONS)}
#: 0.3.2's ``CLANG_VERSIONS``: the keys of :data:`CLANG2GRAPH_BINARIES`.
CLANG_VERSIONS: list[str] = list(CLANG2GRAPH_BINARIES)
#: 0.3.2: the path of ``xla2graph``; here the function that builds XLA HLO graphs.
XLA2GRAPH = "programl.create.from_xla_hlo_proto"
