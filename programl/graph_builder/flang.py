"""Fortran -> LLVM IR with flang-22 (front ends: docs/spec/python-api.md#creation;
docs/spec/design.md#building-graphs-fast).

flang, LLVM's Fortran compiler, must have the same major version as llvmlite's LLVM (22), as clang must. It is
found through ``$PROGRAML_FLANG``, then ``flang-22`` on ``PATH``, then a ``flang`` on ``PATH`` whose major version is
22; when none is found, :class:`~programl.exceptions.UnsupportedCompiler` says how to install it. Errors are
:class:`~programl.graph_builder.clang.CompilerError` (``file:line:col: error: message``), flags that change flang's
output are rejected, as for clang.

flang names every module ``FIRModule``; the graph's module is named after the input file instead (``-`` for source
text, as for C). flang writes a ``.mod`` file for each Fortran module it compiles; they go to a temporary folder
(``-module-dir``) that is removed afterwards, unless the flags name a folder (``-module-dir``, ``-J``).

flang's driver runs the compiler proper (``flang -fc1``) as a child process. programl asks the driver for that
command (``-###``) and runs it itself, as one process, so that

* a timeout kills the compiler: killing the driver left its ``-fc1`` child running, reparented to init, for as long
  as the input kept it busy (minutes for a large file, for ever on a bomb);
* a crash writes nothing outside: the driver copied the crashing input and a script into ``$TMPDIR`` (world-readable
  ``/tmp/<name>-XXXXXX`` files, after running the preprocessor once more) on every crash, and flang 22 has no
  ``-fno-crash-diagnostics``. A crash is one line, ``flang crashed (SIGSEGV)``; an input that nests too deeply for
  flang's stack is such a crash;
* ``RLIMIT_AS`` (``--max-memory``) and the worker's process group cover the one process that does the work.

A temporary module folder that a killed worker could not remove (a timeout of ``programl build`` kills the worker)
is removed by the next process that compiles Fortran, once its owner is gone.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence

from programl.exceptions import UnsupportedCompiler
from programl.graph_builder.clang import (
    CLANG_MAJOR,
    CompilerError,
    _error_from_stderr,
    _ir_string,
    check_flags,
    find_tool,
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


_MODULE_DIR_PREFIX = "programl-flang-"
_CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGABRT, signal.SIGFPE})
_swept = False


def _sweep_stale_module_dirs() -> None:
    """Remove the temporary module folders of processes that are gone (a worker killed by its timeout cannot remove
    its own); once per process."""
    global _swept
    if _swept:
        return
    _swept = True
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), f"{_MODULE_DIR_PREFIX}*-*")):
        owner = os.path.basename(folder)[len(_MODULE_DIR_PREFIX) :].split("-", 1)[0]
        if not owner.isdigit() or int(owner) == os.getpid():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # alive, but another user's
            pass


def _run(command: list[str], stdin: bytes | None, path: str, timeout: float | None, env=None):
    """Run one process; TimeoutError when it runs past ``timeout`` (it is killed)."""
    try:
        return subprocess.run(command, input=stdin, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as error:
        raise TimeoutError(f"flang timed out after {timeout:g} s") from error
    except OSError as error:
        raise UnsupportedCompiler(f"cannot run {command[0]}: {error.strerror or error}") from None


def _error(stderr: bytes, path: str, returncode: int) -> CompilerError:
    """One line for a failed flang run (``file:line:col: error: ...`` as for clang)."""
    text = stderr.decode("utf-8", "replace")
    input_token = "\x00input\x00"
    if "\n" in path or "\r" in path:  # flang prints the name as it is: keep its diagnostic on one line
        text = text.replace(f"./{path}", input_token).replace(path, input_token)
    error = _error_from_stderr(text, path, returncode, tool="flang")
    if error.path == input_token:
        error = CompilerError(error.message, path, error.line, error.column)
    if returncode < 0 and error.message.startswith("flang was killed by") and -returncode in _CRASH_SIGNALS:
        return CompilerError(f"flang crashed ({signal.Signals(-returncode).name})", path)
    if error.message.startswith("too many nested INCLUDE"):
        # flang puts this at line 1 of the innermost file; where it was included from is more use (clang's
        # "#include nested too deeply" points at the #include line)
        here = re.search(r"^(?P<file>[^\n]*?):(?P<line>\d+):(?P<column>\d+): error: included here$", text, re.M)
        if here and error.path is not None:
            return CompilerError(error.message, error.path, int(here.group("line")), int(here.group("column")))
    return error


_ARGUMENT = re.compile(r' "((?:[^"\\]|\\.)*)"', re.S)  # how the driver's -### quotes an argument


def _jobs(text: str) -> list[list[str]]:
    """The commands in the driver's ``-###`` output: lines of quoted arguments (an argument may hold a newline)."""
    jobs: list[list[str]] = []
    position = 0
    while True:
        start = text.find('\n "', position)
        if start < 0:
            return jobs
        position, job = start + 1, []
        while match := _ARGUMENT.match(text, position):
            job.append(re.sub(r"\\(.)", r"\1", match.group(1), flags=re.S))
            position = match.end()
        jobs.append(job)


def _compiler_command(driver: list[str], path: str, timeout: float | None) -> list[str] | None:
    """The ``flang -fc1`` command the driver would run (None when it would run anything else)."""
    result = _run([*driver[:1], "-###", *driver[1:]], None, path, timeout)
    if result.returncode:
        raise _error(result.stderr, path, result.returncode)
    jobs = _jobs("\n" + result.stderr.decode("utf-8", "surrogateescape"))
    if len(jobs) != 1 or len(jobs[0]) < 3 or jobs[0][1] != "-fc1" or jobs[0][-1] != driver[-1]:
        return None
    return jobs[0]


def _run_flang(command: list[str], flags: Sequence[str], stdin: bytes | None, path: str, timeout: float | None) -> str:
    """Run flang (``command`` ends with the input) with its ``.mod`` files in a temporary folder, and return the IR.

    Raises:
        TimeoutError: flang ran past ``timeout`` seconds (it is killed).
        CompilerError: flang failed (its first error, "ran out of memory", "crashed"), or wrote no IR.
    """
    if any(flag in ("-J", "-module-dir") or flag.startswith("-J") for flag in flags):
        return _compile(command, stdin, path, timeout, None)
    _sweep_stale_module_dirs()
    with tempfile.TemporaryDirectory(prefix=f"{_MODULE_DIR_PREFIX}{os.getpid()}-") as modules:
        return _compile([*command[:-1], "-module-dir", modules, command[-1]], stdin, path, timeout, modules)


def _compile(driver: list[str], stdin: bytes | None, path: str, timeout: float | None, scratch: str | None) -> str:
    start = time.monotonic()
    job = _compiler_command(driver, path, timeout)
    if timeout is not None:  # one limit for both runs; the message names the caller's
        left = max(timeout - (time.monotonic() - start), 0.001)
    env = None
    if job is None:  # run the driver itself; a crash's reproducer files then go to the scratch folder
        job = driver
        if scratch is not None:
            env = {**os.environ, "TMPDIR": scratch}
    try:
        result = _run(job, stdin, path, left if timeout is not None else None, env)
    except TimeoutError:
        raise TimeoutError(f"flang timed out after {timeout:g} s") from None
    if result.returncode:
        raise _error(result.stderr, path, result.returncode)
    try:
        text = result.stdout.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CompilerError(f"flang produced non-UTF-8 IR: {error}", path) from None
    if not text.strip():
        raise CompilerError("flang wrote no LLVM IR", path)
    return text


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
    # a name that starts with '-' would be read as a flag (by the driver and by flang -fc1)
    argument = os.path.join(".", path) if path.startswith("-") and path != "-" else path
    command = [find_flang(), "-S", "-emit-llvm", "-w", *flags, "-o", "-", argument]
    return _named(_run_flang(command, flags, None, path, timeout), path)
