"""C, C++ and OpenCL C -> LLVM IR with clang-22 (SPEC §3.1 front ends; DESIGN §4).

clang must have the same major version as llvmlite's LLVM (22) so that its IR always parses. It is found through
``$PROGRAML_CLANG``, then ``clang-22`` on ``PATH``, then a ``clang`` on ``PATH`` whose major version is 22; when
none is found, :class:`~programl.exceptions.UnsupportedCompiler` says how to install it. Compiler errors become
:class:`~programl.exceptions.GraphCreationError` with the file, line and column of clang's first error.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Sequence

from programl.exceptions import GraphCreationError, UnsupportedCompiler

__all__ = [
    "CLANG_MAJOR",
    "LANGUAGES",
    "OPENCL_FLAGS",
    "compile_args",
    "compile_file",
    "compile_source",
    "find_clang",
    "language_of",
]

CLANG_MAJOR = 22

#: ``-x`` language per file extension
LANGUAGES = {
    ".c": "c",
    ".cc": "c++",
    ".cpp": "c++",
    ".cxx": "c++",
    ".c++": "c++",
    ".cl": "cl",
}

#: Flags for OpenCL C kernels (SPEC §6.5; the devmap manifest's base command).
OPENCL_FLAGS = ("-cl-std=CL1.2", "-Xclang", "-finclude-default-header", "-target", "spir64")

INSTALL_HINT = "install it with `apt-get install clang-22` or point $PROGRAML_CLANG at a clang 22 binary"


def _major_version(binary: str) -> int | None:
    try:
        output = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"clang version (\d+)", output)
    return int(match.group(1)) if match else None


@functools.cache
def _find(explicit: str | None) -> str:
    if explicit:
        path = shutil.which(explicit) or (explicit if os.access(explicit, os.X_OK) else None)
        if not path:
            raise UnsupportedCompiler(f"$PROGRAML_CLANG={explicit} is not an executable; {INSTALL_HINT}")
        major = _major_version(path)
        if major != CLANG_MAJOR:
            raise UnsupportedCompiler(
                f"{path} is clang {major}, but programl reads IR with LLVM {CLANG_MAJOR}; {INSTALL_HINT}"
            )
        return path
    for name in (f"clang-{CLANG_MAJOR}", "clang"):
        path = shutil.which(name)
        if path and _major_version(path) == CLANG_MAJOR:
            return path
    raise UnsupportedCompiler(f"clang-{CLANG_MAJOR} not found; {INSTALL_HINT}")


def find_clang() -> str:
    """The path of clang 22.

    Raises:
        UnsupportedCompiler: No clang 22 was found (the message says how to install it).
    """
    return _find(os.environ.get("PROGRAML_CLANG") or None)


def language_of(path: str) -> str | None:
    """The clang ``-x`` language of a source file, from its extension (None when it is not a source file)."""
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


_DIAGNOSTIC = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<column>\d+): (?:fatal )?error: (?P<message>.*)$", re.M)


def _error_from_stderr(stderr: str, path: str | None) -> GraphCreationError:
    match = _DIAGNOSTIC.search(stderr)
    if match:
        file = match.group("file")
        where = path if file in ("<stdin>", "-") or path is None else file
        return GraphCreationError(match.group("message"), where, int(match.group("line")), int(match.group("column")))
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    fatal = next((line for line in lines if line.startswith("LLVM ERROR: ")), None)
    if fatal:  # clang crashed (e.g. out of memory under --max-memory): not its stack dump, which follows
        return GraphCreationError(f"clang: {fatal[len('LLVM ERROR: ') :].strip()}", path)
    message = next((line for line in lines if "error" in line), lines[0] if lines else "clang failed")
    return GraphCreationError(message.strip(), path)


def _run(command: list[str], stdin: bytes | None, path: str | None, timeout: float | None) -> str:
    # a crash (e.g. out of memory under a worker's limit) must not write reproducers to /tmp, nor take twice as long
    command = [command[0], "-fno-crash-diagnostics", *command[1:]]
    try:
        result = subprocess.run(command, input=stdin, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise TimeoutError(f"clang timed out after {timeout:g} s") from error
    if result.returncode:
        raise _error_from_stderr(result.stderr.decode("utf-8", "replace"), path)
    try:
        return result.stdout.decode("utf-8")
    except UnicodeDecodeError as error:
        raise GraphCreationError(f"clang produced non-UTF-8 IR: {error}", path) from None


def _language_flags(language: str) -> list[str]:
    return ["-x", language, *OPENCL_FLAGS] if language == "cl" else ["-x", language]


def compile_source(
    source: str,
    language: str = "c++",
    flags: Sequence[str] = (),
    timeout: float | None = 300,
    system_includes: bool = True,
) -> str:
    """Compile source text (read by clang from stdin, so the module is named ``-``) to textual LLVM IR.

    Args:
        source: The program text.
        language: ``c``, ``c++`` or ``cl`` (OpenCL C; :data:`OPENCL_FLAGS` are added).
        flags: More clang flags (``-O2``, ``-I dir``, ``-D X=1`` ...). Without an ``-O`` flag clang compiles at -O0.
        timeout: Seconds before clang is killed (:class:`TimeoutError`).
        system_includes: When False, clang does not search the system include directories (``-nostdlibinc``).

    Raises:
        UnsupportedCompiler: clang 22 is not installed.
        GraphCreationError: The program does not compile (file, line and column of the first error).
    """
    command = [find_clang(), *_language_flags(language), "-S", "-emit-llvm", "-o", "-", "-w", *flags, "-"]
    if not system_includes:
        command.insert(1, "-nostdlibinc")
    return _run(command, source.encode("utf-8"), "-", timeout)


def compile_file(
    path: str,
    flags: Sequence[str] = (),
    language: str | None = None,
    timeout: float | None = 300,
) -> str:
    """Compile a C / C++ / OpenCL file to textual LLVM IR (the module is named after ``path``).

    Raises:
        UnsupportedCompiler: clang 22 is not installed.
        GraphCreationError: The file does not compile, or its language is unknown.
    """
    language = language or language_of(path)
    if language is None:
        raise GraphCreationError("unknown source language (expected .c, .cc, .cpp, .cxx or .cl)", path)
    command = [find_clang(), *_language_flags(language), "-S", "-emit-llvm", "-o", "-", "-w", *flags, path]
    return _run(command, None, path, timeout)


def compile_args(args: Sequence[str], timeout: float | None = 300, system_includes: bool = True) -> str:
    """Run clang with the caller's arguments (which name exactly one input) and return its textual IR."""
    command = [find_clang(), *args, "-S", "-emit-llvm", "-o", "-", "-w"]
    if not system_includes:
        command.insert(1, "-nostdlibinc")
    inputs = [a for a in args if not a.startswith("-") and language_of(a)]
    return _run(command, None, inputs[0] if len(inputs) == 1 else None, timeout)
