"""Fortran -> LLVM IR with flang-22 (SPEC §3.1 front ends; DESIGN §4).

flang, LLVM's Fortran compiler, must have the same major version as llvmlite's LLVM (22), as clang must. It is
found through ``$PROGRAML_FLANG``, then ``flang-22`` on ``PATH``, then a ``flang`` on ``PATH`` whose major version is
22; when none is found, :class:`~programl.exceptions.UnsupportedCompiler` says how to install it. Errors are
:class:`~programl.graph_builder.clang.CompilerError` (``file:line:col: error: message``), flags that change flang's
output are rejected, as for clang.

flang names every module ``FIRModule``; the graph's module is named after the input file instead (``-`` for source
text, as for C). flang writes a ``.mod`` file for each Fortran module it compiles; they go to a temporary folder
(``-module-dir``) that is removed afterwards, unless the flags name a folder (``-module-dir``, ``-J``).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence

from programl.graph_builder.clang import (
    CLANG_MAJOR,
    CompilerError,
    _ir_string,
    check_flags,
    find_tool,
    run_compiler,
)

__all__ = ["FLANG_MAJOR", "FORTRAN_SUFFIXES", "compile_file", "compile_source", "find_flang", "is_fortran"]

FLANG_MAJOR = CLANG_MAJOR

#: Fortran file extensions flang reads: fixed form (``.f``, ``.for``, ``.f77``) and free form; upper-case
#: extensions are preprocessed first.
FORTRAN_SUFFIXES = (".f", ".for", ".f77", ".f90", ".f95", ".f03", ".f08")

INSTALL_HINT = "install it with `apt-get install flang-22` or point $PROGRAML_FLANG at a flang 22 binary"

_MODULE_NAME = re.compile(r'^source_filename = "FIRModule"$', re.M)


def find_flang() -> str:
    """The path of flang 22.

    Raises:
        UnsupportedCompiler: No flang 22 was found (the message says how to install it).
    """
    return find_tool("flang", os.environ.get("PROGRAML_FLANG") or None, "PROGRAML_FLANG", INSTALL_HINT)


def is_fortran(path: str) -> bool:
    """Whether a file name has a Fortran extension (:data:`FORTRAN_SUFFIXES`, any case)."""
    return os.path.splitext(path)[1].lower() in FORTRAN_SUFFIXES


def _named(ir: str, name: str) -> str:
    return _MODULE_NAME.sub(lambda _: f"source_filename = {_ir_string(name)}", ir, count=1)


def _run_flang(command: list[str], flags: Sequence[str], stdin: bytes | None, path: str, timeout: float | None) -> str:
    """Run flang (``command`` ends with the input) with its ``.mod`` files in a temporary folder."""
    if any(flag in ("-J", "-module-dir") or flag.startswith("-J") for flag in flags):
        return run_compiler(command, stdin, path, timeout, tool="flang")
    with tempfile.TemporaryDirectory(prefix="programl-flang-") as modules:
        return run_compiler([*command[:-1], "-module-dir", modules, command[-1]], stdin, path, timeout, tool="flang")


def compile_source(
    source: str,
    flags: Sequence[str] = (),
    fixed_form: bool = False,
    timeout: float | None = 300,
) -> str:
    """Compile Fortran source text (read by flang from stdin; the module is named ``-``) to textual LLVM IR.

    Args:
        source: The program text.
        flags: More flang flags (``-O2``, ``-I dir``, ``-cpp`` ...).
        fixed_form: The text is fixed-form Fortran (FORTRAN 77 layout) rather than free form.
        timeout: Seconds before flang is killed (:class:`TimeoutError`).

    Raises:
        UnsupportedCompiler: flang 22 is not installed.
        CompilerError: The program does not compile (line and column of the first error), or a flag changes
            flang's output.
    """
    check_flags(flags)
    form = ["-ffixed-form"] if fixed_form else []
    command = [find_flang(), "-S", "-emit-llvm", "-w", "-x", "f95", *form, *flags, "-o", "-", "-"]
    return _named(_run_flang(command, flags, source.encode("utf-8"), "-", timeout), "-")


def compile_file(path: str, flags: Sequence[str] = (), timeout: float | None = 300) -> str:
    """Compile a Fortran file to textual LLVM IR (the module is named after ``path``; flang picks fixed or free
    form from the extension).

    Raises:
        UnsupportedCompiler: flang 22 is not installed.
        CompilerError: The file does not compile, or a flag changes flang's output.
    """
    if not is_fortran(path):
        raise CompilerError(f"not a Fortran file (expected {', '.join(FORTRAN_SUFFIXES)})", path)
    check_flags(flags, path)
    command = [find_flang(), "-S", "-emit-llvm", "-w", *flags, "-o", "-", path]
    return _named(_run_flang(command, flags, None, path, timeout), path)
