"""Compiler states: a module's bitcode, the passes that made it, and what has been computed about it
(docs/gym.md#how-an-action-runs).

A :class:`State` never changes: an action makes a new one (:func:`apply_pipeline` runs ``opt-22`` on the bitcode in
its own process, :mod:`programl.gym.tools`). Everything observed about a state is computed on first request and
cached in the state, so that the environment, its forks and a search that revisits a state compute it once.

The module is read back into this process (llvmlite, the same LLVM 22) only as bitcode that ``opt-22`` wrote: a
received file is parsed and verified by ``opt-22`` first (:func:`assemble`), never by this process.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from programl.gym.errors import BenchmarkError, ObservationError, PassError
from programl.gym.tools import DEFAULT_MAX_MEMORY, DEFAULT_TIMEOUT, ToolFailure, find_llvm_tool, run_tool

__all__ = [
    "BASELINE_PIPELINES",
    "State",
    "Toolchain",
    "apply_pipeline",
    "assemble",
    "disassemble",
    "ir_sha1",
    "strip_optnone",
]

#: The pipelines of the baselines (``opt-22 -passes=``): CompilerGym's ``-O3`` (optimisation level 3) and ``-Oz``
#: (level 2, size level 2), as LLVM 22's new pass manager spells them.
BASELINE_PIPELINES = {"O3": "default<O3>", "Oz": "default<Oz>"}

# ``optnone`` as a function attribute (in an attribute group or on a ``define`` line), not inside a name or string
_OPTNONE = re.compile(r"(?<=[\s{])optnone(?=[\s}])")


@dataclass(frozen=True)
class Toolchain:
    """The tools an environment runs and the limits of each run.

    Attributes:
        opt: ``opt`` to run (a path or name; default: ``$PROGRAML_OPT``, else ``opt-22`` on ``PATH``).
        llc: ``llc`` to run (default: ``$PROGRAML_LLC``, else ``llc-22``).
        timeout: Seconds one tool run may take.
        max_memory: Address-space limit of one tool run in bytes (None: none).
    """

    opt: str | None = None
    llc: str | None = None
    timeout: float | None = DEFAULT_TIMEOUT
    max_memory: int | None = DEFAULT_MAX_MEMORY

    @property
    def opt_path(self) -> str:
        """The path of ``opt`` (:func:`~programl.gym.tools.find_llvm_tool`)."""
        return find_llvm_tool("opt", self.opt)

    @property
    def llc_path(self) -> str:
        """The path of ``llc``."""
        return find_llvm_tool("llc", self.llc)

    def run(self, command: list[str], stdin: bytes | None = None, path: str | None = None) -> bytes:
        """:func:`~programl.gym.tools.run_tool` under this toolchain's limits."""
        return run_tool(command, stdin, timeout=self.timeout, max_memory=self.max_memory, path=path)


def strip_optnone(text: str) -> str:
    """IR text without the ``optnone`` function attribute, which makes every pass skip a function (clang puts it on
    every function at ``-O0``; CompilerGym removes it from its benchmarks too)."""
    return _OPTNONE.sub("", text)


def assemble(text: str | bytes, path: str, toolchain: Toolchain) -> bytes:
    """Textual IR -> bitcode, parsed and verified by ``opt-22`` in its own process.

    Raises:
        BenchmarkError: The IR does not parse or verify (``path:line:column: opt-22: error: ...``), or ``opt-22``
            crashed or ran past its limits on it.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        return toolchain.run([toolchain.opt_path, "-o", "-"], data, path=path)
    except ToolFailure as failure:
        raise BenchmarkError(_with_path(str(failure), path)) from None


def disassemble(bitcode: bytes, path: str, toolchain: Toolchain) -> str:
    """Bitcode -> textual IR, read and verified by ``opt-22`` in its own process.

    Raises:
        BenchmarkError: Not valid LLVM 22 bitcode, or ``opt-22`` crashed or ran past its limits on it.
    """
    try:
        data = toolchain.run([toolchain.opt_path, "-S", "-o", "-"], bitcode, path=path)
    except ToolFailure as failure:
        raise BenchmarkError(_with_path(str(failure), path)) from None
    return data.decode("utf-8", "replace")


def _with_path(message: str, path: str) -> str:
    return message if message.startswith(path) else f"{path}: {message}"


def apply_pipeline(bitcode: bytes, pipeline: str, toolchain: Toolchain, what: str = "") -> bytes:
    """Run ``opt-22 -passes=<pipeline>`` on bitcode in its own process and return the bitcode it writes.

    Args:
        bitcode: The module.
        pipeline: The pass pipeline (``function(instcombine)``; empty: none).
        toolchain: Which ``opt`` and the limits.
        what: Names the module in error messages (its benchmark URI).

    Raises:
        PassError: ``opt-22`` crashed, ran past its timeout or memory limit, or failed (one line that says which
            passes, on what, and how).
    """
    try:
        return toolchain.run([toolchain.opt_path, f"-passes={pipeline}", "-o", "-"], bitcode, path=what or None)
    except ToolFailure as failure:
        raise PassError(f"{what + ': ' if what else ''}{pipeline}: {failure}") from None


def ir_sha1(text: str) -> str:
    """The SHA-1 of IR text without its first ``; ModuleID = ...`` line (which names where the module was read from,
    not what it holds). The ``IrSha1`` observation hashes the IR with value names stripped
    (:mod:`programl.gym.observations`)."""
    if text.startswith("; ModuleID = "):
        text = text[text.find("\n") + 1 :]
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


@dataclass(eq=False)
class State:
    """One compiler state: a module's bitcode, the actions that made it from the benchmark's, and a cache.

    Attributes:
        bitcode: The module, as ``opt-22`` wrote it.
        actions: The indices of the actions applied since the benchmark's initial state.
        cache: Observation name -> value, filled on request (:meth:`get`).
    """

    bitcode: bytes
    actions: tuple[int, ...] = ()
    cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get(self, name: str, compute) -> Any:
        """The cached value of ``name``, computed by ``compute(self)`` on first request.

        Raises:
            ObservationError: ``compute`` failed; the failure is cached too, so a repeat raises it again at once.
        """
        with self._lock:
            if name in self.cache:
                value = self.cache[name]
                if isinstance(value, _Failure):
                    raise ObservationError(value.message)
                return value
        try:
            value = compute(self)
        except ObservationError as error:
            with self._lock:
                self.cache[name] = _Failure(str(error))
            raise
        with self._lock:
            self.cache.setdefault(name, value)
            return self.cache[name]


@dataclass(frozen=True)
class _Failure:
    message: str
