"""A source file to LLVM IR by the front end its language names: clang-22 for C, C++, OpenCL and CUDA, an older
clang for ``<language>@clang-<major>`` (its bitcode read by LLVM 22), flang-22 for ``fortran``
(docs/spec/graph.md). The one entry for callers that compile files of several languages, such as the data-set
builder; :mod:`programl.graph_builder.clang` and :mod:`programl.graph_builder.flang` each know their own compiler
only.
"""

from __future__ import annotations

from collections.abc import Sequence

from programl.exceptions import UnsupportedCompiler
from programl.graph_builder import clang, flang

__all__ = ["compile_file"]


def compile_file(path: str, flags: Sequence[str] = (), language: str | None = None, timeout: float | None = 300) -> str:
    """Compile ``path`` to textual LLVM IR with the compiler ``language`` names (module docstring; default: clang-22
    and the language of the file's suffix).

    Raises:
        UnsupportedCompiler: The compiler named is not supported, or not installed.
        CompilerError: The file does not compile, its language is unknown, or a flag changes the compiler's output.
    """
    base, compiler = clang.split_language(language)
    if base == "fortran":
        if compiler not in (None, f"flang-{flang.FLANG_MAJOR}"):
            raise UnsupportedCompiler(f"{compiler} is not a supported Fortran compiler (flang-{flang.FLANG_MAJOR} is)")
        return flang.compile_file(path, flags, timeout=timeout)
    return clang.compile_file(path, flags, language=language, timeout=timeout)
