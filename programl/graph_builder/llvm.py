"""LLVM IR -> ProGraML ``ProgramGraph``, node for node and edge for edge as ProGraML 0.3.2 builds it.

Implements the whole of docs/spec/graph.md (node fields, edge positions, operands, construction order, special
constructs, type texts, functions and modules, builder options) with the deliberate differences of
docs/spec/policy.md: LLVM 22 texts (every pointer is ``ptr``), a deterministic order where the reference iterates hash
maps, switch case values at DATA positions 2+2k, and the ``llvm_version`` module feature.

This is the only module that walks LLVM objects. It parses with llvmlite (LLVM 22; older textual IR and bitcode
are upgraded by LLVM on read) in a fresh LLVM context per module, prints the module once and cuts the text into
instruction texts (:mod:`programl.graph_builder.ir_text`), and walks the structure through llvmlite's C functions
(:mod:`programl.graph_builder._ffi`). Time is linear in the size of the module.

Hostile input: LLVM parses and prints nested constant expressions, types and metadata
recursively, about 1.3 KB of stack per level, so deep nesting overflows the stack and kills the process (a
segfault Python cannot catch). Textual IR is measured first (:func:`~programl.graph_builder.ir_text.nesting_depth`,
linear): deeper than :data:`MAX_NESTING` is a :class:`GraphCreationError` at the offending bracket; deeper than a
few hundred levels is parsed and built in a thread with a 64 MB stack (room for ~50,000 levels). Bitcode cannot be
measured before LLVM reads it (its reader is iterative, but printing recurses), so a large bitcode input is read and
built in a thread whose stack grows with the input's size.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import re
import sys
import tempfile
import threading
from collections import deque
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from programl.exceptions import GraphCreationError
from programl.graph_builder import _ffi as ffi
from programl.graph_builder._encode import encode_graph_columns
from programl.graph_builder.ir_text import (
    ModuleText,
    llvm_identifier,
    nesting_depth,
    opcode_of,
    opcodes_of,
    result_names_of,
    split_module,
)
from programl.proto import Edge, Node, ProgramGraph

__all__ = [
    "BuildOptions",
    "LLVM_VERSION",
    "MAX_NESTING",
    "build_graph",
    "graph_from_bitcode",
    "graph_from_ir",
    "parse_bitcode",
    "parse_ir",
]

#: The version of the LLVM that reads IR (llvmlite's, e.g. ``22.1.0``); graphs record it
#: (docs/spec/policy.md#provenance).
LLVM_VERSION = ".".join(str(part) for part in llvm.llvm_version_info)

INSTRUCTION, VARIABLE, CONSTANT = Node.INSTRUCTION, Node.VARIABLE, Node.CONSTANT
CONTROL, DATA, CALL = Edge.CONTROL, Edge.DATA, Edge.CALL

EXTERNAL_TEXT = "[external]"
UNDEFINED_FUNCTION_TEXT = "; undefined function"

# the buffer name llvmlite gives to parsed text; LLVM uses it as source_filename when the IR has none
_LLVMLITE_BUFFER_NAME = "<string>"
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


@dataclass(frozen=True)
class BuildOptions:
    """Builder options (docs/spec/graph.md#builder-options, ``ProgramGraphOptions``).

    Attributes:
        instructions_only: No VARIABLE/CONSTANT nodes and no DATA edges.
        ignore_call_returns: Only forward CALL edges (external -> entry, call site -> callee entry).
        strict: Fail when the module has no functions or some node has no edge (docs/spec/graph.md#construction-order
            step 7).
        numbers_and_types: Not in ProGraML (``docs/numbers_types.md``): add the node features
            ``number_digits`` (the value of numeric constants) and ``type_shape`` (vector, array and struct types)
            and the module feature ``numbers_and_types`` (:mod:`programl.graph_builder.numbers_types`). Off: the
            faithful graph, byte for byte.
        string_bytes: Not in ProGraML (``docs/numbers_types.md``): add the node feature
            ``string_bytes`` (the bytes of string constants) and its module feature
            (:mod:`programl.graph_builder.string_bytes`). Off: the faithful graph, byte for byte.
    """

    instructions_only: bool = False
    ignore_call_returns: bool = False
    strict: bool = False
    numbers_and_types: bool = False
    string_bytes: bool = False


# ----------------------------------------------------------------------------------------------------------------
# Parsing


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


def parse_ir(text: str | bytes, path: str | None = None, context=None) -> llvm.ModuleRef:
    """Parse textual LLVM IR with LLVM 22.

    Args:
        text: The IR (``str``, or UTF-8 ``bytes``).
        path: Where it came from, for error messages.
        context: An llvmlite context (default: a fresh one, so that parallel threads never share one).

    Raises:
        GraphCreationError: The text is not valid IR (with line and column), not UTF-8, binary data, or nests
            deeper than :data:`MAX_NESTING`.
        TypeError: ``text`` is neither ``str`` nor bytes.
    """
    text = _decode(text, path)
    if _needs_big_stack(text, path):
        return _call_on_stack(_BIG_STACK, path, _parse_text, text, path, context)
    return _parse_text(text, path, context)


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


def parse_bitcode(data: bytes, path: str | None = None, context=None) -> llvm.ModuleRef:
    """Parse LLVM bitcode with LLVM 22.

    Raises:
        GraphCreationError: The data is not valid bitcode.
    """
    try:
        with _captured_stderr(path):  # the reader verifies debug info as the text parser does
            return llvm.parse_bitcode(bytes(data), context=context or llvm.create_context())
    except RuntimeError as error:
        message = str(error).replace("LLVM bitcode parsing error\n", "").strip().replace("\n", " ")
        raise GraphCreationError(f"invalid bitcode: {message}", path) from None


def _parse_error(message: str, path: str | None) -> GraphCreationError:
    match = _PARSE_ERROR.search(message)
    if match:
        return GraphCreationError(match.group(3).strip(), path, int(match.group(1)), int(match.group(2)))
    detail = message.replace("LLVM IR parsing error", "").strip().splitlines()
    return GraphCreationError(detail[0] if detail else "invalid LLVM IR", path)


def graph_from_ir(
    text: str | bytes,
    path: str | None = None,
    module_name: str | None = None,
    options: BuildOptions = BuildOptions(),
) -> ProgramGraph:
    """Build the graph of textual LLVM IR (docs/spec/graph.md).

    Args:
        text: The IR.
        path: Where it came from (error messages; the module name when the IR has no ``source_filename``).
        module_name: The module name to use when the IR has no ``source_filename`` (default: ``path`` or
            ``<stdin>``, as the reference names IR read from stdin).
        options: Builder options.

    Raises:
        GraphCreationError: Invalid input, or a strict-mode violation.
    """
    text = _decode(text, path)
    if _needs_big_stack(text, path):
        return _call_on_stack(_BIG_STACK, path, _graph_from_text, text, path, module_name, options)
    return _graph_from_text(text, path, module_name, options)


def _graph_from_text(text: str, path: str | None, module_name: str | None, options: BuildOptions) -> ProgramGraph:
    context = llvm.create_context()
    module = _parse_text(text, path, context)
    try:
        return build_graph(module, module_name=module_name or path or "<stdin>", options=options, path=path)
    finally:
        module.close()
        context.close()


def graph_from_bitcode(
    data: bytes,
    path: str | None = None,
    module_name: str | None = None,
    options: BuildOptions = BuildOptions(),
) -> ProgramGraph:
    """Build the graph of LLVM bitcode (see :func:`graph_from_ir`).

    Bitcode larger than 4 KB is read and built in a thread whose stack grows with its size (1 KB per byte, at
    most 1 GB): deep nesting takes several bytes of bitcode per level, and printing it ~1.3 KB of stack.

    Raises:
        GraphCreationError: The data is not valid bitcode.
        TypeError: ``data`` is not bytes.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"LLVM bitcode must be bytes, not {type(data).__name__}")
    data = bytes(data)
    if len(data) <= _INLINE_BITCODE:
        return _graph_from_bitcode(data, path, module_name, options)
    stack = min(max(len(data) * _STACK_PER_BITCODE_BYTE, _BIG_STACK), _MAX_STACK)
    return _call_on_stack(stack, path, _graph_from_bitcode, data, path, module_name, options)


def _graph_from_bitcode(data: bytes, path: str | None, module_name: str | None, options: BuildOptions) -> ProgramGraph:
    context = llvm.create_context()
    module = parse_bitcode(data, path, context)
    try:
        return build_graph(module, module_name=module_name or path or "<stdin>", options=options, path=path)
    finally:
        module.close()
        context.close()


# ----------------------------------------------------------------------------------------------------------------
# Building


def build_graph(
    module: llvm.ModuleRef,
    module_name: str = "<stdin>",
    options: BuildOptions = BuildOptions(),
    path: str | None = None,
) -> ProgramGraph:
    """Build the ProGraML graph of a parsed module (docs/spec/graph.md#construction-order).

    Args:
        module: An llvmlite module.
        module_name: The name to use when the module has no source file name of its own.
        options: Builder options.
        path: For error messages.
    """
    with _gc_paused():
        printed = str(module)
        text = split_module(printed)
        builder = _Builder(text, options)
        builder.build(ffi.module_handle(module))
        name = text.source_filename
        if name is None or name == _LLVMLITE_BUFFER_NAME:
            name = module_name
        graph = builder.to_proto(name, module.triple, str(module.data_layout))
    if options.strict:
        _check_strict(graph, name, path)
    if options.numbers_and_types:
        from programl.graph_builder.numbers_types import annotate, struct_definitions

        annotate(graph, struct_definitions(printed))
    if options.string_bytes:
        from programl.graph_builder import string_bytes

        string_bytes.annotate(graph)
    return graph


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector off meanwhile: a build allocates a few hundred thousand objects that hold
    no cycles (strings, lists of ints), and would otherwise trigger collections that scan every live object."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _check_strict(graph: ProgramGraph, name: str, path: str | None) -> None:
    if not graph.function:
        raise GraphCreationError(f"Module `{name}` is empty", path)
    has_edge = bytearray(len(graph.node))
    for edge in graph.edge:
        has_edge[edge.source] = 1
        has_edge[edge.target] = 1
    for index, flag in enumerate(has_edge):
        if not flag:
            node = graph.node[index]
            raise GraphCreationError(f"Node {index} (`{node.text}`) has no edges", path)


class _Builder:
    """Walks a parsed module into node and edge columns, in the reference's emission order
    (docs/spec/graph.md#construction-order).

    LLVM is asked for what the printed text cannot give: the handles of functions, blocks, instructions, arguments
    and operands (read in C, one list per object), the types of used values and the printed form of constants.
    Everything per node and per edge is then numpy over those columns: operands are classified by a sorted search
    over the handles of the module's instructions, blocks, arguments and functions, and nodes and edges are numbered
    in exactly the order of the reference's one-pass walk (per function: each instruction and the variables of its
    operands; the used arguments; then the edges of each instruction, of the arguments, from the producers, and
    between blocks breadth-first). Python loops are left per block (successors, breadth-first search), per call
    site, per switch, per used value or argument and per distinct constant, never per operand.
    """

    def __init__(self, text: ModuleText, options: BuildOptions) -> None:
        self.text = text
        self.options = options
        self.functions: list[tuple[str, list[tuple[str, int]]]] = []  # (name, int features)
        self.call_sites: list[tuple[int, int]] = []  # (call node, callee function index)
        self.node_int_features: dict[int, list[tuple[str, int]]] = {}
        # constants: the key is the constant's printed text (LLVM uniques constants by value)
        self.constant_text: dict[str, str] = {}
        self.constant_key_of: dict[int, str] = {}  # constant handle -> key
        self.type_text: dict[int, str] = {}  # type handle -> text, structs collapsed (docs/spec/graph.md#type-texts)
        self.function_index: dict[int, int] = {}  # function handle -> index
        self.function_signature: dict[int, tuple] = {}
        self.heads: dict[tuple[int, str], int] = {}  # (node type, node text) -> head id
        self.value_type: dict[int, int] = {}  # value handle -> type handle
        self.printed_type: dict[int, str] = {}  # type handle -> LLVM's printing

    # -- types and constants ----------------------------------------------------------------------------------

    def type_text_of(self, type_: int) -> str:
        text = self.type_text.get(type_)
        if text is None:
            # docs/spec/graph.md#type-texts: a struct (after stripping pointer levels; with opaque pointers there are
            # none) is `struct`
            text = "struct" if ffi.type_kind(type_) == ffi.TYPE_STRUCT else self.print_type(type_)
            self.type_text[type_] = text
        return text

    def type_of(self, value: int) -> int:
        type_ = self.value_type.get(value)
        if type_ is None:
            type_ = self.value_type[value] = ffi.type_of(value)
        return type_

    def print_type(self, type_: int) -> str:
        text = self.printed_type.get(type_)
        if text is None:
            text = self.printed_type[type_] = ffi.print_type(type_)
        return text

    def constant_key(self, value: int, kind: int) -> str:
        key = self.constant_key_of.get(value)
        if key is None:
            if kind in ffi.GLOBAL_KINDS:
                name = ffi.value_name(value)
                key = self.text.globals.get(llvm_identifier(name, "@")) if name else None
                if key is None:  # unnamed (@0) or an unusual spelling: ask LLVM
                    key = ffi.print_value(value).strip()
            else:
                key = ffi.print_value(value)
            self.constant_key_of[value] = key
            if key not in self.constant_text:
                self.constant_text[key] = self.type_text_of(self.type_of(value))
        return key

    def head(self, type_: int, text: str) -> int:
        head = self.heads.get((type_, text))
        if head is None:
            head = self.heads[(type_, text)] = len(self.heads)
        return head

    # -- the walk ---------------------------------------------------------------------------------------------

    def build(self, module: int) -> None:
        """Read the module's handles from LLVM, then number its nodes and edges (see the class docstring)."""
        data_nodes = not self.options.instructions_only
        functions = ffi.functions(module)
        self.function_index = {function: index for index, function in enumerate(functions)}
        definitions = iter(self.text.functions)

        instructions: list[int] = []  # every instruction of every definition, in module order
        texts: list[str] = []
        blocks: list[int] = []
        block_ends: list[int] = []  # per block: the flat index just past its last instruction
        arguments: list[int] = []
        defined: list[int] = []  # per definition: its function index
        declared: list[int] = []
        definition_blocks = [0]  # per definition: where its blocks start (and the last one ends)
        definition_arguments = [0]
        for index, function in enumerate(functions):
            name = ffi.value_name(function)
            if ffi.is_declaration(function):
                self.functions.append((name, []))
                declared.append(index)
                continue
            function_text = next(definitions, None)
            self.functions.append((name, self.function_profile(function_text.header if function_text else "")))
            start = len(instructions)
            function_blocks = ffi.blocks(function)
            for block in function_blocks:
                ffi.extend_instructions(instructions, block)
                block_ends.append(len(instructions))
            function_texts = function_text.instructions if function_text else None
            if function_texts is None or len(function_texts) != len(instructions) - start:
                # The printed text did not cut cleanly (an unusual printing): print instructions one by one.
                function_texts = [ffi.print_value(i).lstrip() for i in instructions[start:]]
            texts.extend(function_texts)
            blocks.extend(function_blocks)
            arguments.extend(ffi.arguments(function))
            defined.append(index)
            definition_blocks.append(len(blocks))
            definition_arguments.append(len(arguments))

        n_functions, n_definitions = len(functions), len(defined)
        n_instructions, n_blocks, n_arguments = len(instructions), len(blocks), len(arguments)
        arange = np.arange
        block_end = np.array(block_ends, dtype=np.int64)
        block_start = np.zeros(n_blocks, dtype=np.int64)
        block_start[1:] = block_end[:-1]
        if (block_end <= block_start).any():
            raise GraphCreationError("a basic block without instructions")
        definition_block = np.array(definition_blocks, dtype=np.int64)
        inst_block = np.repeat(arange(n_blocks), block_end - block_start)
        block_def = np.repeat(arange(n_definitions), np.diff(definition_block))
        inst_def = block_def[inst_block]
        def_inst_start = block_start[definition_block[:-1]] if n_definitions else np.zeros(0, dtype=np.int64)
        def_inst_end = block_end[definition_block[1:] - 1] if n_definitions else np.zeros(0, dtype=np.int64)
        arg_def = np.repeat(arange(n_definitions), np.diff(np.array(definition_arguments, dtype=np.int64)))
        defined_index = np.array(defined, dtype=np.int64)

        opcodes = opcodes_of(texts)
        opcode_ids = {name: k for k, name in enumerate(dict.fromkeys(opcodes))}
        opcode = np.fromiter(map(opcode_ids.__getitem__, opcodes), dtype=np.int64, count=n_instructions)

        def is_opcode(name: str) -> np.ndarray:
            return opcode == opcode_ids.get(name, -1)

        # operands: flat, with their user instruction and index; classified by what they are in the module
        flat = np.array(ffi.operands_flat(instructions), dtype=np.uint64)
        ends = np.flatnonzero(flat == 0)
        counts = ends - np.concatenate(([-1], ends[:-1])) - 1
        handles = flat[flat != 0]
        n_operands = len(handles)
        op_user = np.repeat(arange(n_instructions), counts)
        op_first = np.cumsum(counts) - counts
        op_index = arange(n_operands) - op_first[op_user]
        instruction_handles = np.array(instructions, dtype=np.uint64)
        keys = np.concatenate((instruction_handles, np.array(blocks + arguments + functions, dtype=np.uint64)))
        kinds = np.repeat(np.array([1, 2, 3, 4], dtype=np.int8), [n_instructions, n_blocks, n_arguments, n_functions])
        ids = np.concatenate((arange(n_instructions), arange(n_blocks), arange(n_arguments), arange(n_functions)))
        owner = np.concatenate((inst_def, block_def, arg_def, np.full(n_functions, -1)))
        order = np.argsort(keys)  # (handles are distinct)
        keys, kinds, ids, owner = keys[order], kinds[order], ids[order], owner[order]
        found = np.minimum(np.searchsorted(keys, handles), max(len(keys) - 1, 0))
        op_kind = np.where(keys[found] == handles, kinds[found], 0) if len(keys) else np.zeros(0, dtype=np.int8)
        op_id = ids[found] if len(keys) else np.zeros(0, dtype=np.int64)
        # an instruction, block or argument of another function is nothing here (cannot happen in valid IR)
        op_kind[(op_kind >= 1) & (op_kind <= 3) & (owner[found] != inst_def[op_user])] = 5
        position = op_index.copy()
        switch = is_opcode("switch")
        # LLVM 22 keeps case values out of a switch's operands; LLVM 10 listed them at 2, 4, ...
        # (docs/spec/policy.md#switch-case-positions)
        position[switch[op_user] & (op_index > 0)] = -1

        # variables: one per use of an instruction's result; used arguments
        if data_nodes:
            is_variable = op_kind == 1
            var_user, var_position, var_producer = op_user[is_variable], position[is_variable], op_id[is_variable]
            argument_ops = np.flatnonzero(op_kind == 3)
        else:
            var_user = var_position = var_producer = argument_ops = np.zeros(0, dtype=np.int64)
        n_variables = np.bincount(var_user, minlength=n_instructions)
        argument_used = np.zeros(n_arguments, dtype=bool)
        argument_used[op_id[argument_ops]] = True
        used_arguments = np.flatnonzero(argument_used)

        # node numbers: per function, each instruction then its variables, then its used arguments
        # (docs/spec/graph.md#construction-order)
        items = np.concatenate(([0], np.cumsum(1 + n_variables)))
        def_items = items[def_inst_end] - items[def_inst_start]
        def_used = np.bincount(arg_def[used_arguments], minlength=n_definitions)
        per_function = np.ones(n_functions, dtype=np.int64)
        per_function[defined_index] = def_items + def_used
        function_base = 1 + np.cumsum(per_function) - per_function
        def_base = function_base[defined_index]
        inst_node = def_base[inst_def] + items[:-1] - items[def_inst_start][inst_def]
        var_rank = arange(len(var_user)) - (np.cumsum(n_variables) - n_variables)[var_user]
        var_node = inst_node[var_user] + 1 + var_rank
        used_def = arg_def[used_arguments]
        argument_node = np.zeros(n_arguments, dtype=np.int64)
        argument_node[used_arguments] = (
            def_base[used_def]
            + def_items[used_def]
            + arange(len(used_arguments))
            - (np.cumsum(def_used) - def_used)[used_def]
        )
        n_before_constants = 1 + int(per_function.sum())

        # edges of each definition, in four runs: instructions (control within the block, then the variables of
        # the operands), arguments to their uses, producers to their variables, control between blocks
        not_first = np.ones(n_instructions, dtype=bool)
        not_first[block_start] = False
        per_instruction = not_first + n_variables
        run_start = np.cumsum(per_instruction) - per_instruction
        instruction_edges = np.empty((int(per_instruction.sum()), 4), dtype=np.int64)
        follows = np.flatnonzero(not_first)
        instruction_edges[run_start[follows]] = np.stack(
            (
                np.full(len(follows), CONTROL),
                np.zeros(len(follows), dtype=np.int64),
                inst_node[follows - 1],
                inst_node[follows],
            ),
            axis=1,
        )
        instruction_edges[run_start[var_user] + not_first[var_user] + var_rank] = np.stack(
            (np.full(len(var_user), DATA), var_position, var_node, inst_node[var_user]), axis=1
        )
        by_argument = argument_ops[np.argsort(op_id[argument_ops], kind="stable")]
        argument_edges = np.stack(
            (
                np.full(len(by_argument), DATA),
                position[by_argument],
                argument_node[op_id[by_argument]],
                inst_node[op_user[by_argument]],
            ),
            axis=1,
        )
        producer_edges = np.stack(
            (np.full(len(var_user), DATA), np.zeros(len(var_user), dtype=np.int64), inst_node[var_producer], var_node),
            axis=1,
        )
        block_edges, block_edge_def, entries, exits = self.control_between_blocks(
            op_kind, op_id, op_user, inst_block, inst_node, block_start, block_end, is_opcode("br"), definition_blocks
        )
        edges = _interleave_runs(
            (instruction_edges, argument_edges, producer_edges, block_edges.reshape(-1, 4)),
            (np.repeat(inst_def, per_instruction), arg_def[op_id[by_argument]], inst_def[var_user], block_edge_def),
            n_definitions,
        )

        # declarations: one node each, entry and exit
        function_entry = [0] * n_functions
        function_exits: list[list[int]] = [[] for _ in range(n_functions)]
        for d, index in enumerate(defined):
            function_entry[index] = entries[d]
            function_exits[index] = exits[d]
        for index in declared:
            node = int(function_base[index])
            function_entry[index] = node
            function_exits[index] = [node]

        # the types of used values, read once (call sites compare them too)
        if len(var_user):
            is_producer = np.zeros(n_instructions, dtype=bool)
            is_producer[var_producer] = True
            producers = np.flatnonzero(is_producer)
            producer_rank = (np.cumsum(is_producer) - 1)[var_producer]
            producer_types = list(map(ffi.type_of, instruction_handles[producers].tolist()))
            # call sites compare the types of their arguments: share those already read
            call_arguments = np.unique(op_id[(op_kind == 1) & is_opcode("call")[op_user]])
            if len(call_arguments):
                at = np.searchsorted(producers, call_arguments).tolist()
                self.value_type.update(
                    zip(instruction_handles[call_arguments].tolist(), map(producer_types.__getitem__, at))
                )

        # call sites: a call whose callee operand is a function (docs/spec/graph.md#construction-order)
        calls = np.flatnonzero(is_opcode("call") & (counts > 0))
        calls = calls[op_kind[op_first[calls] + counts[calls] - 1] == 4]
        inst_node_list = inst_node.tolist()
        for i in calls.tolist():
            callee_operands = handles[op_first[i] : op_first[i] + counts[i]].tolist()
            self.maybe_call_site(inst_node_list[i], texts[i], callee_operands, instructions[i])
        call_edges = self.call_edges(function_entry, function_exits)

        if any("!prof " in t for t in texts):
            self.instruction_profiles(texts, inst_node_list)

        # nodes, as columns; full texts as indices into `sources` (the instruction texts, then the others)
        head = np.zeros(n_before_constants, dtype=np.int64)
        function_of = np.zeros(n_before_constants, dtype=np.int64)
        block_of = np.zeros(n_before_constants, dtype=np.int64)
        sources = texts + [""]
        source_of = np.full(n_before_constants, n_instructions, dtype=np.int64)  # "" unless set below
        head[0] = self.head(INSTRUCTION, EXTERNAL_TEXT)
        opcode_head = np.array([self.head(INSTRUCTION, name) for name in opcode_ids], dtype=np.int64)
        head[inst_node] = opcode_head[opcode] if n_instructions else 0
        function_of[inst_node] = defined_index[inst_def]
        block_of[inst_node] = inst_block
        source_of[inst_node] = arange(n_instructions)
        if len(var_user):
            types, type_rank = np.unique(np.array(producer_types, dtype=np.uint64), return_inverse=True)
            type_rank = type_rank.reshape(-1)
            type_text = [self.type_text_of(t) for t in types.tolist()]
            type_head = np.array([self.head(VARIABLE, text) for text in type_text], dtype=np.int64)
            head[var_node] = type_head[type_rank][producer_rank]
            function_of[var_node] = function_of[inst_node[var_user]]
            block_of[var_node] = inst_block[var_user]
            source_of[var_node] = len(sources) + producer_rank
            # "<type> <name>" per producer, concatenated in C
            names = result_names_of(list(map(texts.__getitem__, producers.tolist())))
            spaced = [text + " " for text in type_text]
            sources += map(str.__add__, map(spaced.__getitem__, type_rank.tolist()), names)
        unnamed_slots: dict[int, list[int]] = {}  # definition -> slot number of each unnamed argument
        for a in used_arguments.tolist():
            d = int(arg_def[a])
            node = int(argument_node[a])
            argument = arguments[a]
            type_ = self.type_of(argument)
            printed_type = self.print_type(type_)
            name = ffi.value_name(argument)
            if name:
                identifier = llvm_identifier(name, "%")
            else:
                slots = unnamed_slots.get(d)
                if slots is None:
                    slots = unnamed_slots[d] = _unnamed_argument_slots(functions[defined[d]])
                identifier = f"%{slots[a - definition_arguments[d]]}"
            head[node] = self.head(VARIABLE, self.type_text_of(type_))
            function_of[node] = defined[d]
            # one past the function's last block (docs/spec/graph.md#construction-order)
            block_of[node] = definition_blocks[d + 1]
            source_of[node] = len(sources)
            sources.append(f"{printed_type} {identifier}")
        undefined_head = self.head(INSTRUCTION, UNDEFINED_FUNCTION_TEXT)
        for index in declared:
            node = int(function_base[index])
            head[node] = undefined_head
            function_of[node] = index

        # constants last (docs/spec/graph.md#construction-order step 5): function unset, block = total number of blocks
        constant_keys, constant_edges = (
            self.constants(op_kind, op_user, position, handles, switch, texts, inst_node, n_before_constants)
            if data_nodes
            else ([], np.zeros((0, 4), dtype=np.int64))
        )
        self.node_head = np.concatenate(
            (head, np.array([self.head(CONSTANT, self.constant_text[key]) for key in constant_keys], dtype=np.int64))
        )
        self.node_function = np.concatenate((function_of, np.zeros(len(constant_keys), dtype=np.int64)))
        self.node_block = np.concatenate((block_of, np.full(len(constant_keys), n_blocks, dtype=np.int64)))
        # full texts by index: the encoder copies each distinct text's bytes once per node, without a str per node
        self.node_full_text = (
            sources + constant_keys,
            np.concatenate((source_of, len(sources) + np.arange(len(constant_keys), dtype=np.int64))),
        )
        self.edges = np.concatenate((edges, call_edges, constant_edges))

    def control_between_blocks(
        self, op_kind, op_id, op_user, inst_block, inst_node, block_start, block_end, is_br, definition_blocks
    ):
        """CONTROL edges between blocks, breadth-first from each function's entry block
        (docs/spec/graph.md#construction-order), and each function's entry and exits. Successors are the block operands
        in operand order, except a two-way ``br`` (operands cond, false, true): successors true, false."""
        n_blocks = len(block_start)
        successors: list[list[int]] = [[] for _ in range(n_blocks)]
        block_ops = np.flatnonzero(op_kind == 2)
        for source, target in zip(inst_block[op_user[block_ops]].tolist(), op_id[block_ops].tolist()):
            successors[source].append(target)
        for block in np.flatnonzero(is_br[block_end - 1]).tolist() if n_blocks else ():
            if len(successors[block]) == 2:
                successors[block].reverse()
        first_node = inst_node[block_start].tolist() if n_blocks else []
        last_node = inst_node[block_end - 1].tolist() if n_blocks else []
        edges: list[int] = []
        edge_def: list[int] = []
        entries: list[int] = []
        exits_of: list[list[int]] = []
        visited = bytearray(n_blocks)
        for d in range(len(definition_blocks) - 1):
            entry = definition_blocks[d]
            before = len(edges)
            exits: list[int] = []
            visited[entry] = 1
            queue = deque([entry])
            while queue:
                current = queue.popleft()
                block_successors = successors[current]
                if not block_successors:
                    exits.append(last_node[current])
                for position, successor in enumerate(block_successors):
                    edges += (CONTROL, position, last_node[current], first_node[successor])
                    if not visited[successor]:
                        visited[successor] = 1
                        queue.append(successor)
            edge_def += [d] * ((len(edges) - before) // 4)
            entries.append(first_node[entry])
            exits_of.append(exits)
        return np.array(edges, dtype=np.int64), np.array(edge_def, dtype=np.int64), entries, exits_of

    def constants(self, op_kind, op_user, position, handles, switch, texts, inst_node, first_node):
        """The constants in order of first use (keys), and their DATA edges (one per use, grouped by constant).

        A use is a constant operand (a printed value; a global: its definition line) or a switch case value
        (before the switch's operands, at positions 2, 4, ...: docs/spec/graph.md#edge-positions,
        docs/spec/policy.md#switch-case-positions)."""
        key_id: dict[str, int] = {}
        keys: list[str] = []

        def register(key: str) -> int:
            kid = key_id.get(key)
            if kid is None:
                kid = key_id[key] = len(keys)
                keys.append(key)
            return kid

        constant_ops = np.flatnonzero(op_kind == 0)
        unique, first, inverse = np.unique(handles[constant_ops], return_index=True, return_inverse=True)
        unique_kid = np.full(len(unique), -1, dtype=np.int64)
        for u in np.argsort(first, kind="stable").tolist():
            value = int(unique[u])
            key = self.constant_key_of.get(value)
            if key is None:
                kind = ffi.value_kind(value)
                if kind not in ffi.CONSTANT_KINDS:
                    # functions, metadata, inline asm: no node, but the position still advances
                    # (docs/spec/graph.md#operands)
                    continue
                key = self.constant_key(value, kind)
            unique_kid[u] = register(key)
        op_kid = unique_kid[inverse.reshape(-1)]
        used = op_kid >= 0
        constant_ops = constant_ops[used]
        major = [op_user[constant_ops] * 2 + 1]
        minor = [constant_ops]
        kid = [op_kid[used]]
        user = [op_user[constant_ops]]
        where = [position[constant_ops]]
        cases: list[tuple[int, int, int]] = []
        for s in np.flatnonzero(switch).tolist():
            for k, line in enumerate(texts[s].split("\n")[1:-1]):
                value = line.strip().rsplit(", label ", 1)[0]
                if value not in self.constant_text:
                    self.constant_text[value] = value.split(" ", 1)[0]  # integer type: never a struct
                cases.append((s, k, register(value)))
        if cases:
            case = np.array(cases, dtype=np.int64)
            major.append(case[:, 0] * 2)
            minor.append(case[:, 1])
            kid.append(case[:, 2])
            user.append(case[:, 0])
            where.append(2 + 2 * case[:, 1])
        major, minor, kid, user, where = (np.concatenate(x) for x in (major, minor, kid, user, where))
        order = np.lexsort((minor, major))
        kid, user, where = kid[order], user[order], where[order]
        first_use = np.full(len(keys), len(kid), dtype=np.int64)
        np.minimum.at(first_use, kid, np.arange(len(kid)))
        key_order = np.argsort(first_use, kind="stable")
        rank = np.empty(len(keys), dtype=np.int64)
        rank[key_order] = np.arange(len(keys))
        by_constant = np.argsort(rank[kid], kind="stable")
        edges = np.stack(
            (
                np.full(len(kid), DATA),
                where[by_constant],
                first_node + rank[kid[by_constant]],
                inst_node[user[by_constant]],
            ),
            axis=1,
        )
        return [keys[k] for k in key_order.tolist()], edges

    def function_profile(self, header: str) -> list[tuple[str, int]]:
        """``llvm_profile_entry_count`` from a ``!prof`` attachment on the ``define`` line
        (docs/spec/graph.md#functions-and-modules)."""
        match = re.search(r"!prof (![0-9]+)", header)
        if not match:
            return []
        fields = _metadata_fields(self.text.metadata.get(match.group(1), ""))
        if len(fields) >= 2 and fields[0] == '!"function_entry_count"':
            count = _metadata_int(fields[1])
            if count is not None:
                return [("llvm_profile_entry_count", count)]
        return []

    def maybe_call_site(self, node: int, text: str, operands: list[int], instruction: int) -> None:
        """Record a CALL edge when LLVM's ``CallInst::getCalledFunction()`` is non-null
        (docs/spec/graph.md#construction-order).

        In LLVM 22 that needs the callee operand to be a function whose type equals the call's function type.
        The call's function type is vararg exactly when it is printed before the callee (``call i32 (ptr, ...)
        @printf(``); otherwise its parameters are the argument types.
        """
        callee = operands[-1]
        index = self.function_index.get(callee)
        if index is None:
            return
        signature = self.function_signature.get(callee)
        if signature is None:
            function_type = ffi.function_value_type(callee)
            vararg = ffi.function_type_is_vararg(function_type)
            signature = (
                ffi.function_type_return(function_type),
                ffi.function_type_params(function_type),
                vararg,
                ffi.print_type(function_type) if vararg else "",
                llvm_identifier(ffi.value_name(callee), "@"),
            )
            self.function_signature[callee] = signature
        return_type, params, vararg, printed, callee_name = signature
        if vararg:
            matches = f" {printed} {callee_name}(" in text
        else:
            arguments = operands[:-1]
            matches = (
                f"...) {callee_name}(" not in text
                and len(arguments) == len(params)
                and self.type_of(instruction) == return_type
                and all(self.type_of(a) == p for a, p in zip(arguments, params))
            )
        if matches:
            self.call_sites.append((node, index))

    def instruction_profiles(self, texts: list[str], inst_node: list[int]) -> None:
        """Profile features of instructions with ``!prof`` metadata (docs/spec/graph.md#node-fields)."""
        for index, text in enumerate(texts):
            if "!prof " not in text:
                continue
            match = re.search(r"!prof (![0-9]+)", text)
            if not match:
                continue
            fields = _metadata_fields(self.text.metadata.get(match.group(1), ""))
            features = _profile_features(fields, opcode_of(text), text)
            if features:
                self.node_int_features[inst_node[index]] = features

    def call_edges(self, function_entry: list[int], function_exits: list[list[int]]) -> np.ndarray:
        """CALL edges: external <-> every function, then call sites <-> callees (docs/spec/graph.md#construction-order
        step 4, docs/spec/policy.md#deterministic-order)."""
        edges: list[int] = []
        returns = not self.options.ignore_call_returns
        for entry, exits in zip(function_entry, function_exits):
            edges += (CALL, 0, 0, entry)
            if returns:
                for exit_ in exits:
                    edges += (CALL, 0, exit_, 0)
        for site, callee in self.call_sites:
            edges += (CALL, 0, site, function_entry[callee])
            if returns:
                for exit_ in function_exits[callee]:
                    edges += (CALL, 0, exit_, site)
        return np.array(edges, dtype=np.int64).reshape(-1, 4)

    # -- output -----------------------------------------------------------------------------------------------

    def to_proto(self, module_name: str, triple: str, data_layout: str) -> ProgramGraph:
        module_features = [
            ("llvm_target_triple", triple.encode("utf-8")),
            ("llvm_data_layout", data_layout.encode("utf-8")),
            ("llvm_version", LLVM_VERSION.encode("utf-8")),
        ]
        has_features = np.ones(len(self.node_head), dtype=bool)
        has_features[0] = False  # the external node has no features message
        data = encode_graph_columns(
            self.node_head,
            list(self.heads),
            self.node_function,
            self.node_block,
            self.node_full_text,
            has_features,
            self.node_int_features,
            self.edges,
            self.functions,
            [(module_name, module_features, _module_profile_summary(self.text))],
        )
        return ProgramGraph.FromString(data)


def _interleave_runs(runs: tuple[np.ndarray, ...], owners: tuple[np.ndarray, ...], n_owners: int) -> np.ndarray:
    """The rows of several runs, owner by owner: for each owner, its rows of the first run, then of the second ...

    The same order as a stable sort of all rows by ``(owner, run)``. When each run's owners are non-decreasing (as
    the builder makes them) every row's place is counted out in linear time; otherwise rows are sorted.
    """
    if all(len(owner) < 2 or bool((owner[1:] >= owner[:-1]).all()) for owner in owners):
        counts = np.stack([np.bincount(owner, minlength=n_owners) for owner in owners], axis=1)  # owner x run
        starts = (np.cumsum(counts.ravel()) - counts.ravel()).reshape(counts.shape)
        out = np.empty((int(counts.sum()), runs[0].shape[1]), dtype=runs[0].dtype)
        for run, (rows, owner) in enumerate(zip(runs, owners)):
            if len(owner):
                first_in_run = np.cumsum(counts[:, run]) - counts[:, run]
                out[(starts[:, run] - first_in_run)[owner] + np.arange(len(owner))] = rows
        return out
    keys = np.concatenate([owner * len(runs) + run for run, owner in enumerate(owners)])
    return np.concatenate(runs)[np.argsort(keys, kind="stable")]


def _unnamed_argument_slots(function: int) -> list[int]:
    """For each argument position, the slot number an unnamed argument there has: unnamed arguments are numbered
    0, 1, ... first (the number of unnamed arguments before it)."""
    slots = []
    count = 0
    for argument in ffi.arguments(function):
        slots.append(count)
        if not ffi.value_name(argument):
            count += 1
    return slots


# ----------------------------------------------------------------------------------------------------------------
# Profile metadata (docs/spec/graph.md#node-fields, docs/spec/graph.md#construction-order step 6)


def _metadata_fields(value: str) -> list[str]:
    """The top-level fields of a metadata tuple ``!{!"name", i32 1, ...}`` (``distinct`` accepted)."""
    value = value.strip()
    if value.startswith("distinct "):
        value = value[len("distinct ") :]
    if not value.startswith("!{") or not value.endswith("}"):
        return []
    return [field.strip() for field in value[2:-1].split(",") if field.strip()]


def _metadata_int(field: str) -> int | None:
    parts = field.split()
    if len(parts) == 2 and parts[0].startswith("i"):
        try:
            return int(parts[1])
        except ValueError:
            return None
    return None


def _profile_features(fields: list[str], opcode: str, text: str) -> list[tuple[str, int]]:
    """``extractProfTotalWeight`` and (for two-way ``br``/``select``) ``extractProfMetadata`` of LLVM 10."""
    if len(fields) < 2:
        return []
    features: list[tuple[str, int]] = []
    kind = fields[0]
    weights = [f for f in fields[1:] if not f.startswith('!"')]  # LLVM 22 may add !"expected"
    if kind == '!"branch_weights"':
        values = [_metadata_int(f) for f in weights]
        if all(v is not None for v in values):
            features.append(("llvm_profile_total_weight", sum(values) & 0xFFFFFFFFFFFFFFFF))
        if opcode in ("br", "select") and len(values) == 2 and all(v is not None for v in values):
            features.append(("llvm_profile_true_weight", values[0]))
            features.append(("llvm_profile_false_weight", values[1]))
    elif kind == '!"VP"' and len(fields) > 3:
        total = _metadata_int(fields[2])
        if total is not None:
            features.append(("llvm_profile_total_weight", total))
    return features


_SUMMARY_KEYS = {
    "NumFunctions": "llvm_profile_num_functions",
    "MaxFunctionCount": "llvm_profile_max_function_count",
    "NumCounts": "llvm_profile_num_counts",
    "TotalCount": "llvm_profile_total_count",
    "MaxCount": "llvm_profile_max_count",
    "MaxInternalCount": "llvm_profile_max_internal_count",
}


def _module_profile_summary(text: ModuleText) -> list[tuple[str, int]]:
    """Module features from a ``ProfileSummary`` module flag, in the reference's order."""
    if not any('!"ProfileSummary"' in line for line in text.metadata_lines):
        return []
    metadata = text.metadata
    summary = None
    for value in metadata.values():
        fields = _metadata_fields(value)
        if len(fields) == 3 and fields[1] == '!"ProfileSummary"':
            summary = fields[2]
    if summary is None:
        return []
    found: dict[str, int] = {}
    for reference in _metadata_fields(metadata.get(summary, "")):
        entry = _metadata_fields(metadata.get(reference, ""))
        if len(entry) == 2 and entry[0].strip('!"') in _SUMMARY_KEYS:
            value = _metadata_int(entry[1])
            if value is not None:
                found[_SUMMARY_KEYS[entry[0].strip('!"')]] = value
    return [(key, found[key]) for key in _SUMMARY_KEYS.values() if key in found]
