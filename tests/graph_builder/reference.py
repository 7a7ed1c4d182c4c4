"""The original ProGraML 0.3.2 builder (``llvm2graph-10``) as an oracle for differential tests and benchmarks.

The original is never imported (it needs dgl and protobuf 3); its binary is run as a subprocess. It reads LLVM 10
IR only, so C and C++ are compiled with clang-14 (``-Xclang -disable-noundef-analysis``) and the few LLVM 11-14
spellings it does not know are rewritten away (:func:`llvm10_compatible`). LLVM 22 reads the same text, so both
builders see one program. Where the binary comes from: ``make reference`` installs ``programl==0.3.2`` into
``.venv-ref`` (plus Debian's ``libtinfo5`` and ``clang-14``); ``$PROGRAML_LLVM2GRAPH`` overrides the path.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from programl.exceptions import GraphCreationError
from programl.proto import ProgramGraph

__all__ = [
    "find_clang14",
    "find_llvm2graph",
    "find_reference_tool",
    "llvm10_compatible",
    "llvm10_ir",
    "reference_graph",
]

_REPO_ROOT = Path(__file__).resolve().parents[2]


def find_reference_tool(name: str) -> str | None:
    """Path of a working tool of ProGraML 0.3.2 (``llvm2graph-10``, ``graph2json``, ``graph2dot``), or None.

    Looked up in ``$PROGRAML_REFERENCE_BIN`` (a directory), then ``.venv-ref`` (``make reference``), then PATH.
    """
    candidates = []
    if os.environ.get("PROGRAML_REFERENCE_BIN"):
        candidates.append(os.path.join(os.environ["PROGRAML_REFERENCE_BIN"], name))
    candidates += sorted(glob.glob(str(_REPO_ROOT / f".venv-ref/lib/python3*/site-packages/programl/bin/{name}")))
    candidates.append(shutil.which(name) or "")
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            probe = subprocess.run([candidate, "--help"], capture_output=True)
            if probe.returncode in (0, 1):  # it runs (libtinfo5 is present)
                return candidate
    return None


def find_llvm2graph() -> str | None:
    """Path of a working ``llvm2graph-10`` (``$PROGRAML_LLVM2GRAPH`` first), or None."""
    explicit = os.environ.get("PROGRAML_LLVM2GRAPH")
    if explicit and os.access(explicit, os.X_OK):
        return explicit
    return find_reference_tool("llvm2graph-10")


def find_clang14() -> str | None:
    """Path of clang-14 (makes IR that LLVM 10 reads), or None."""
    return os.environ.get("PROGRAML_CLANG14") or shutil.which("clang-14")


_LLVM10_UNKNOWN_WORDS = re.compile(r"\b(?:noundef|mustprogress|willreturn|elementtype\([^()]*\)) ?")
_TYPED_SRET = re.compile(r"\bsret\((?:[^()]|\([^()]*\))*\)")  # LLVM 12+; LLVM 10 reads a plain `sret`
_ATOMIC_ALIGN = re.compile(r"^(\s*(?:%\S+ = )?(?:atomicrmw|cmpxchg) .*?), align \d+", re.MULTILINE)


def llvm10_compatible(ir: str) -> str:
    """Rewrite clang-14 IR so that LLVM 10 reads it: drop attributes LLVM 10 does not know, ``sret(T)`` ->
    ``sret``, ``poison`` -> ``undef``, no ``align`` on atomic instructions."""
    ir = _LLVM10_UNKNOWN_WORDS.sub("", ir)
    ir = _TYPED_SRET.sub("sret", ir)
    ir = re.sub(r"\bpoison\b", "undef", ir)
    return _ATOMIC_ALIGN.sub(r"\1", ir)


def llvm10_ir(source: str | os.PathLike, flags: list[str] = (), clang: str | None = None) -> str:
    """Compile a C/C++ file with clang-14 to IR that LLVM 10 (and LLVM 22) reads.

    Raises:
        GraphCreationError: clang-14 is missing or the file does not compile.
    """
    clang = clang or find_clang14()
    if not clang:
        raise GraphCreationError("clang-14 not found (apt-get install clang-14)", str(source))
    language = "c++" if str(source).endswith((".cc", ".cpp", ".cxx")) else "c"
    command = [
        clang,
        "-x",
        language,
        "-S",
        "-emit-llvm",
        "-O0",
        "-Xclang",
        "-disable-noundef-analysis",
        "-w",
        *flags,
        str(source),
        "-o",
        "-",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        raise GraphCreationError(
            result.stderr.strip().splitlines()[0] if result.stderr else "clang-14 failed", str(source)
        )
    return llvm10_compatible(result.stdout)


def reference_graph(ir: str, binary: str | None = None, timeout: float = 600) -> ProgramGraph:
    """Build a graph with the original ``llvm2graph-10``.

    Raises:
        GraphCreationError: The binary is missing or rejected the IR.
    """
    binary = binary or find_llvm2graph()
    if not binary:
        raise GraphCreationError("llvm2graph-10 not found (make reference)")
    result = subprocess.run([binary, "--stdout_fmt=pb"], input=ir.encode("utf-8"), capture_output=True, timeout=timeout)
    if result.returncode:
        raise GraphCreationError(f"llvm2graph-10: {result.stderr.decode('utf-8', 'replace').strip()[:500]}")
    return ProgramGraph.FromString(result.stdout)
