"""The LLVM 22 tools the environment runs, each in its own process (docs/gym.md#how-an-action-runs).

``opt-22`` applies passes, ``llc-22`` makes object files, ``llvm-stress-22`` and ``csmith`` generate programs. Each is
found through an environment variable (``$PROGRAML_OPT``, ``$PROGRAML_LLC``, ``$PROGRAML_LLVM_STRESS``,
``$PROGRAML_CSMITH``) or on ``PATH`` (``opt-22``, then an ``opt`` whose ``--version`` says LLVM 22), and checked once.

:func:`run_tool` runs one command under a wall-clock timeout and an address-space limit, in its own process group (a
timeout kills the group, so a tool's children cannot hold its pipes open) and in a private empty working directory
(a pass that writes files, such as profiling notes, writes them there). A crash, a hang, running out of memory or an
error becomes one line (:func:`failure_message`), never the tool's stack dump, and never the end of the Python
process.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence

from programl.exceptions import UnsupportedCompiler

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "DEFAULT_TIMEOUT",
    "LLVM_MAJOR",
    "ToolFailure",
    "failure_message",
    "find_csmith",
    "find_llvm_tool",
    "run_tool",
]

#: The LLVM major version of the tools (that of llvmlite 0.50, so that their IR and bitcode read back here).
LLVM_MAJOR = 22
#: Seconds one tool run may take by default (one pass on one module; ``-Oz`` and ``-O3`` pipelines too).
DEFAULT_TIMEOUT = 60.0
#: Address-space limit of one tool run by default (bytes): a pass that runs away with memory fails alone.
DEFAULT_MAX_MEMORY = 8 << 30

_VARIABLES = {"opt": "PROGRAML_OPT", "llc": "PROGRAML_LLC", "llvm-stress": "PROGRAML_LLVM_STRESS"}
_HINT = "install it with `apt-get install llvm-{major}` (apt.llvm.org) or point ${variable} at an LLVM {major} {tool}"
_CSMITH_HINT = "install it with `apt-get install csmith` or point $PROGRAML_CSMITH at a csmith binary"
_VERSION = re.compile(r"LLVM version (\d+)")
_OUT_OF_MEMORY = (
    "out of memory",
    "std::bad_alloc",
    "Cannot allocate memory",
    "Unable to allocate memory",
    "failed to map segment",
)
_CRASH = ("PLEASE submit a bug report", "Stack dump:")
_DIAGNOSTIC = re.compile(r"^(?:\S+: )?(?P<where>[^\n]*?):(?P<line>\d+):(?P<column>\d+): error: (?P<message>.*)$", re.M)


class ToolFailure(Exception):
    """A tool run failed; ``str()`` is one line, ``kind`` one of ``crash``, ``timeout``, ``memory``, ``error``."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def _major_version(binary: str) -> int | None:
    try:
        output = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION.search(output)
    return int(match.group(1)) if match else None


@functools.cache
def _find(tool: str, explicit: str | None) -> str:
    variable = _VARIABLES[tool]
    hint = _HINT.format(major=LLVM_MAJOR, variable=variable, tool=tool)
    if explicit:
        path = shutil.which(explicit) or (explicit if os.access(explicit, os.X_OK) else None)
        if not path:
            raise UnsupportedCompiler(f"{explicit} is not an executable; {hint}")
        major = _major_version(path)
        if major != LLVM_MAJOR:
            raise UnsupportedCompiler(f"{path} is not LLVM {LLVM_MAJOR}'s {tool} (it says LLVM {major}); {hint}")
        return path
    for name in (f"{tool}-{LLVM_MAJOR}", tool):
        path = shutil.which(name)
        if path and _major_version(path) == LLVM_MAJOR:
            return path
    raise UnsupportedCompiler(f"{tool}-{LLVM_MAJOR} not found; {hint}")


def find_llvm_tool(tool: str, explicit: str | None = None) -> str:
    """The path of LLVM 22's ``tool`` (``opt``, ``llc`` or ``llvm-stress``).

    Args:
        tool: The tool's name without version.
        explicit: A path or command name to use instead of ``$PROGRAML_<TOOL>`` and ``PATH``.

    Raises:
        UnsupportedCompiler: None found, or the one named is no LLVM 22 tool (the message says how to install one).
        ValueError: ``tool`` is not one of the three.
    """
    if tool not in _VARIABLES:
        raise ValueError(f"unknown LLVM tool {tool!r} (expected one of {', '.join(_VARIABLES)})")
    return _find(tool, explicit or os.environ.get(_VARIABLES[tool]) or None)


@functools.cache
def _find_csmith(explicit: str | None) -> tuple[str, str | None]:
    path = shutil.which(explicit or "csmith") or (explicit if explicit and os.access(explicit, os.X_OK) else None)
    if not path:
        raise UnsupportedCompiler(f"{explicit or 'csmith'} not found; {_CSMITH_HINT}")
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(path)))
    include = os.path.join(prefix, "include")
    candidates = sorted(n for n in os.listdir(include) if n.startswith("csmith")) if os.path.isdir(include) else []
    headers = [os.path.join(include, n) for n in candidates if os.path.isfile(os.path.join(include, n, "csmith.h"))]
    return path, (headers[-1] if headers else None)


def find_csmith() -> tuple[str, str | None]:
    """The path of ``csmith`` and the folder of its runtime header ``csmith.h`` (None when not found beside it).

    Raises:
        UnsupportedCompiler: csmith is not installed (the message says how to install it).
    """
    return _find_csmith(os.environ.get("PROGRAML_CSMITH") or None)


def _tool_name(command: Sequence[str]) -> str:
    return os.path.basename(command[0])


def failure_message(tool: str, stderr: str, returncode: int, path: str | None = None) -> tuple[str, str]:
    """One line and a kind (``crash``, ``memory``, ``error``) for a failed run of ``tool``.

    A diagnostic on the tool's standard input (``<stdin>:3:7: error: ...``) is reported against ``path``.
    """
    if any(marker in stderr for marker in _OUT_OF_MEMORY):
        return f"{tool} ran out of memory", "memory"
    match = _DIAGNOSTIC.search(stderr)
    if match:
        where = match.group("where")
        if where in ("<stdin>", "-") and path:
            where = path
        message = match.group("message").strip()
        return f"{where}:{match.group('line')}:{match.group('column')}: {tool}: error: {message}", "error"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"{tool} crashed (killed by {name})", "crash"
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    fatal = next((line for line in lines if line.startswith("LLVM ERROR: ")), None)
    if fatal:
        return f"{tool}: {fatal}", "crash"
    if any(marker in stderr for marker in _CRASH):
        return f"{tool} crashed (exit status {returncode})", "crash"
    first = next((line for line in lines if "error" in line), lines[0] if lines else f"exit status {returncode}")
    first = re.sub(r"^\S*" + re.escape(tool) + r"\S*: ", "", first)
    return f"{tool}: {first[:500]}", "error"


def _limited(command: Sequence[str], max_memory: int | None) -> list[str]:
    """``command`` started through ``/bin/sh`` after ``ulimit -v``: the address-space limit applies from the tool's
    first instruction, and the start stays a ``vfork`` (a ``preexec_fn`` would make Python fork its whole address
    space, which costs more than many passes take)."""
    if not max_memory:
        return list(command)
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        max_memory = min(max_memory, hard)
    return ["/bin/sh", "-c", f'ulimit -v {max(max_memory // 1024, 1)} && exec "$0" "$@"', *command]


def run_tool(
    command: Sequence[str],
    stdin: bytes | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    max_memory: int | None = DEFAULT_MAX_MEMORY,
    path: str | None = None,
) -> bytes:
    """Run ``command`` and return its standard output.

    Args:
        command: The program and its arguments.
        stdin: Bytes for its standard input (none: it reads an empty one).
        timeout: Seconds before its process group is killed (None: no limit).
        max_memory: Its address-space limit in bytes (None: no limit beyond this process's own).
        path: The file its standard input stands for, in error messages.

    Raises:
        ToolFailure: It crashed, timed out, ran out of memory, or exited with a non-zero status.
        UnsupportedCompiler: The program cannot be started.
    """
    tool = _tool_name(command)
    with tempfile.TemporaryDirectory(prefix="programl-gym-") as workdir:
        try:
            process = subprocess.Popen(
                _limited(command, max_memory),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                start_new_session=True,
            )
        except OSError as error:
            raise UnsupportedCompiler(f"cannot run {command[0]}: {error.strerror or error}") from None
        try:
            stdout, stderr = process.communicate(stdin or b"", timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            raise ToolFailure(f"{tool} timed out after {timeout:g} s", "timeout") from None
        except BaseException:  # KeyboardInterrupt and the like: leave no process behind
            _kill_group(process)
            process.communicate()
            raise
    if process.returncode:
        message, kind = failure_message(tool, stderr.decode("utf-8", "replace"), process.returncode, path)
        raise ToolFailure(message, kind)
    return stdout


def _kill_group(process: subprocess.Popen) -> None:
    """Kill the process group the tool leads (called before it is reaped, so the group id is still its own)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
