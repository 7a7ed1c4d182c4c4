"""Parsing LLVM IR and bitcode for :mod:`programl.graph_builder.llvm`: checks of the text before LLVM reads it (NUL
bytes, UTF-8, nesting depth), a big-stack thread for deep nesting, the old spellings LLVM 22 no longer reads, and
LLVM's own diagnostics turned into one-line errors and warnings (module docstring of :mod:`programl.graph_builder.llvm`,
"Hostile input")."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import threading

import llvmlite.binding as llvm

from programl.exceptions import GraphCreationError
from programl.graph_builder.ir_text import nesting_depth

__all__ = ["LLVM_VERSION", "MAX_NESTING"]

#: The version of the LLVM that reads IR (llvmlite's, e.g. ``22.1.0``); graphs record it
#: (docs/spec/policy.md#provenance).
LLVM_VERSION = ".".join(str(part) for part in llvm.llvm_version_info)

#: The deepest bracket nesting accepted in textual IR (real IR nests a few dozen levels at most; LLVM 22 on an 8 MB
#: stack crashes past ~6,700 levels of constant expressions).
MAX_NESTING = 4096
# Nesting up to this depth is parsed on the caller's stack (a few hundred KB of it); deeper in a big-stack thread.
_INLINE_NESTING = 256
_BIG_STACK = 64 << 20  # ~50,000 levels of constant expressions: 12x the stack MAX_NESTING needs
# Bitcode: a level of nesting takes a few bytes of bitcode and ~1.3 KB of stack to print; allow 1 KB per byte.
_STACK_PER_BITCODE_BYTE = 1024
_INLINE_BITCODE = 4096  # at most ~1,400 levels: under 2 MB of the caller's stack
_MAX_STACK = 1 << 30
_STACK_LOCK = threading.Lock()

# LLVM verifies a module that declares this debug-info version while it parses it, and prints what it finds
# invalid (ten lines for one bad !dbg) straight to the process's stderr before dropping the debug info
_DEBUG_INFO_FLAG = '"Debug Info Version"'
_STDERR_LOCK = threading.Lock()
_LOG = logging.getLogger("programl.graph_builder")

_PARSE_ERROR = re.compile(r"^(?:<string>|[^:\n]*):(\d+):(\d+): error: (.*)$", re.MULTILINE)


def _check_text(text: str, path: str | None) -> None:
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        column = nul - (text.rfind("\n", 0, nul) + 1) + 1
        raise GraphCreationError("binary data, not LLVM IR text (NUL byte)", path, line, column)


def _decode(text: str | bytes, path: str | None) -> str:
    """IR as ``str``: UTF-8 bytes decoded, NUL bytes and excessive nesting rejected."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        data = bytes(text)
        if b"\0" in data:
            _check_text(data.decode("latin-1"), path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
            raise GraphCreationError(f"not UTF-8 text (byte 0x{data[error.start]:02x})", path, line, column) from None
    elif not isinstance(text, str):
        raise TypeError(f"LLVM IR must be str or bytes, not {type(text).__name__}")
    _check_text(text, path)
    return text


def _needs_big_stack(text: str, path: str | None) -> bool:
    """Whether ``text`` must be parsed on a big stack; raises for nesting past :data:`MAX_NESTING`."""
    depth, offset = nesting_depth(text, MAX_NESTING)
    if offset is not None:
        data = text.encode("utf-8", "surrogatepass")
        line = data.count(b"\n", 0, offset) + 1
        column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
        raise GraphCreationError(
            f"brackets nest deeper than {MAX_NESTING} levels (LLVM's recursive parser would overflow its stack)",
            path,
            line,
            column,
        )
    return depth > _INLINE_NESTING


def _call_on_stack(stack_size: int, path: str | None, fn, /, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a new thread with a ``stack_size`` stack (halved until the thread starts)."""
    outcome: list = []

    def target() -> None:
        try:
            outcome.append((True, fn(*args, **kwargs)))
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            outcome.append((False, error))

    thread = None
    size = stack_size
    with _STACK_LOCK:  # threading.stack_size is process-wide: restore it before anyone else starts a thread
        previous = threading.stack_size()
        try:
            while thread is None and size >= _BIG_STACK:
                try:
                    threading.stack_size(size)
                    thread = threading.Thread(target=target, name="programl-llvm", daemon=True)
                    thread.start()
                except (RuntimeError, MemoryError, ValueError):  # no address space for the stack (RLIMIT_AS)
                    thread = None
                    size //= 2
        finally:
            threading.stack_size(previous)
    if thread is None:
        raise GraphCreationError("not enough memory for a parser stack deep enough for this input", path)
    while thread.is_alive():
        thread.join(0.1)  # wakes up for KeyboardInterrupt
    ok, value = outcome[0]
    if ok:
        return value
    raise value


def _parse_text(text: str, path: str | None, context) -> llvm.ModuleRef:
    _check_upgradable(text, path)
    if _DEBUG_INFO_FLAG not in text:
        return _parse_assembly(text, path, context)
    _check_verifies(text, path)
    with _captured_stderr(path):
        return _parse_assembly(text, path, context)


_OLD_CORO_END_DECLARATION = re.compile(r"^\s*declare\b[^\n]*\bi1 @llvm\.coro\.end\(", re.MULTILINE)
_CORO_END_USE = re.compile(r"@llvm\.coro\.end\(")


def _check_upgradable(text: str, path: str | None) -> None:
    """Fail, without LLVM's abort, on IR whose automatic upgrade to LLVM 22 breaks an assertion of llvmlite's LLVM.

    LLVM 10's ``i1 @llvm.coro.end(i8*, i1)`` (in IR written before coroutine lowering) is upgraded to LLVM 22's
    ``void`` intrinsic, whose call then replaces an ``i1`` value: an assertion that aborts the process. Text IR that
    declares the old form and calls it is refused at the first call (docs/llvm22.md lists what cannot be upgraded).

    Raises:
        GraphCreationError: The first use of the old ``llvm.coro.end``, with its line and column.
    """
    if "@llvm.coro.end(" not in text or not _OLD_CORO_END_DECLARATION.search(text):
        return
    for match in _CORO_END_USE.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        if text[start : match.start()].lstrip().startswith("declare"):
            continue
        line, column = text.count("\n", 0, match.start()) + 1, match.start() - start + 1
        raise GraphCreationError(
            "LLVM 22 cannot upgrade this LLVM 10 call of i1 @llvm.coro.end (IR from before coroutine lowering; "
            "LLVM would abort on it)",
            path,
            line,
            column,
        )


def _check_verifies(text: str, path: str | None) -> None:
    """Fail like the verifier, without LLVM's abort, on a module that declares debug info and is broken otherwise.

    LLVM verifies such a module while parsing it and calls ``report_fatal_error`` ("Broken module found") when
    something other than debug info is wrong, which aborts the process. A copy whose flag is renamed (same length:
    same line:col) is parsed with its debug info dropped and no verification, then verified by llvmlite.

    Raises:
        GraphCreationError: The module is broken (the verifier's first line), or does not parse.
    """
    probe = text.replace(_DEBUG_INFO_FLAG, '"Debug Info Versio_"')
    context = llvm.create_context()
    try:
        with _captured_stderr(path, report=False):  # "ignoring debug info with an invalid version": ours
            module = _parse_assembly(probe, path, context)
        try:
            module.verify()
        except RuntimeError as error:
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            detail = lines[0] if lines else "invalid module"
            raise GraphCreationError(f"invalid module: {detail} (LLVM would abort on it)", path) from None
        finally:
            module.close()
    finally:
        context.close()


@contextlib.contextmanager
def _captured_stderr(path: str | None, report: bool = True):
    """Collect what LLVM writes to file descriptor 2 meanwhile, and log it (logger ``programl.graph_builder``) as
    one line per diagnostic, attributed to ``path`` (or drop it: ``report=False``). Serialised by a lock: file
    descriptor 2 is process-wide."""
    with _STDERR_LOCK, tempfile.TemporaryFile() as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
        finally:
            os.close(saved)
        sink.seek(0)
        output = sink.read().decode("utf-8", "replace")
    for line in _llvm_diagnostics(output, path) if report else ():
        _LOG.warning(line)


def _llvm_diagnostics(output: str, path: str | None) -> list[str]:
    """LLVM's stderr output while parsing, as one line per diagnostic, attributed to ``path``."""
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return []
    where = f"{path}: " if path else ""
    if any("ignoring invalid debug info" in line for line in lines):
        # the verifier's first line says what is wrong; the rest are the IR objects involved
        return [f"{where}warning: ignoring invalid debug info: {lines[0].strip()}"]
    found = []
    for line in lines:
        match = re.match(r"^(?:<string>|[^:]*?):?(?:(\d+):(\d+):)? *(warning|error): (.*?)(?: in <string>)?$", line)
        if match and match.group(3):
            position = f"{path or '<input>'}:{match.group(1)}:{match.group(2)}: " if match.group(1) else where
            found.append(f"{position}{match.group(3)}: {match.group(4)}")
    return found or [f"{where}warning: {lines[0].strip()}"]


def _parse_assembly(text: str, path: str | None, context) -> llvm.ModuleRef:
    context = context or llvm.create_context()
    try:
        return llvm.parse_assembly(text, context=context)
    except RuntimeError as error:
        upgraded = _upgrade_legacy_attributes(text)
        if upgraded != text:  # old typed-pointer IR that LLVM 22 reads once its attributes are spelled out
            try:
                return llvm.parse_assembly(upgraded, context=context)
            except RuntimeError:
                pass
        raise _parse_error(str(error), path) from None


# `T* byval` (LLVM < 13) must be `T* byval(T)` since LLVM 13; likewise sret, inalloca, preallocated. Other parameter
# attributes may stand between the type and the attribute (`%struct.S* noalias sret align 4 %0`).
_OTHER_ATTRIBUTES = (
    r"(?: (?:noalias|nonnull|nocapture|readonly|readnone|writeonly|noundef|signext|zeroext|inreg|returned|nofree|"
    r"nest|swiftself|immarg|align \d+|dereferenceable(?:_or_null)?\(\d+\)))*"
)
_UNTYPED_POINTER_ATTRIBUTE = re.compile(
    r'((?:%"[^"]+"|%[-\w.$]+|i\d+|half|float|double|x86_fp80|fp128|\[[^\[\]]*\]|\{[^{}]*\}|<[^<>]*>))\*'
    r"(" + _OTHER_ATTRIBUTES + r") (byval|sret|inalloca|preallocated)\b(?!\()"
)


# `getelementptr (..., inrange i32 0, i32 2)` (LLVM < 19) is `getelementptr inrange(...) (...)` since LLVM 19;
# the hint only enables optimisations, so dropping it keeps the program the same.
_OLD_INRANGE = re.compile(r"\binrange (i\d+ )")


_LEGACY_WORDS = ("byval", "sret", "inalloca", "preallocated", "inrange ")


def _upgrade_legacy_attributes(text: str) -> str:
    """Rewrite old IR spellings that LLVM 22 no longer reads (untyped ``byval``/``sret``, old ``inrange``).

    Only the lines holding one of the words are rewritten (a regular expression over a whole 20 MB module takes
    seconds; ``str.find`` finds the few lines in milliseconds): both spellings sit on one line as LLVM prints IR.
    """
    lines = set()
    for word in _LEGACY_WORDS:
        at = text.find(word)
        while at >= 0:
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            lines.add((text.rfind("\n", 0, at) + 1, end))
            at = text.find(word, end)
    pieces = []
    done = 0
    for start, end in sorted(lines):
        pieces.append(text[done:start])
        pieces.append(_upgrade_line(text[start:end]))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _upgrade_line(line: str) -> str:
    line = _UNTYPED_POINTER_ATTRIBUTE.sub(lambda m: f"{m.group(1)}*{m.group(2)} {m.group(3)}({m.group(1)})", line)
    return _OLD_INRANGE.sub(r"\1", line)


def _parse_error(message: str, path: str | None) -> GraphCreationError:
    match = _PARSE_ERROR.search(message)
    if match:
        return GraphCreationError(match.group(3).strip(), path, int(match.group(1)), int(match.group(2)))
    detail = message.replace("LLVM IR parsing error", "").strip().splitlines()
    return GraphCreationError(detail[0] if detail else "invalid LLVM IR", path)
