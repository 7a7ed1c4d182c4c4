"""LLVM IR -> ProGraML ``ProgramGraph``, node for node and edge for edge as ProGraML 0.3.2 builds it.

Implements SPEC §1 (the graph: §1.2 node fields, §1.3 positions, §1.4 operands, §1.5 construction order, §1.6
special constructs, §1.7 type texts, §1.8 function/module messages, §1.9 options) with the deliberate differences
of SPEC "Policy": LLVM 22 texts (every pointer is ``ptr``), a deterministic order where the reference iterates hash
maps, switch case values at DATA positions 2+2k, and the ``llvm_version`` module feature.

This is the only module that walks LLVM objects. It parses with llvmlite (LLVM 22; older textual IR and bitcode
are upgraded by LLVM on read) in a fresh LLVM context per module, prints the module once and cuts the text into
instruction texts (:mod:`programl.graph_builder.ir_text`), and walks the structure through llvmlite's C functions
(:mod:`programl.graph_builder._ffi`). Time is linear in the size of the module.

Hostile input (issue 12, item 4): LLVM parses and prints nested constant expressions, types and metadata
recursively, about 1.3 KB of stack per level, so deep nesting overflows the stack and kills the process (a
segfault Python cannot catch). Textual IR is measured first (:func:`~programl.graph_builder.ir_text.nesting_depth`,
linear): deeper than :data:`MAX_NESTING` is a :class:`GraphCreationError` at the offending bracket; deeper than a
few hundred levels is parsed and built in a thread with a 64 MB stack (room for ~50,000 levels). Bitcode cannot be
measured before LLVM reads it (its reader is iterative, but printing recurses), so a large bitcode input is read and
built in a thread whose stack grows with the input's size.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import threading
from collections import deque
from dataclasses import dataclass

import llvmlite.binding as llvm

from programl.exceptions import GraphCreationError
from programl.graph_builder import _ffi as ffi
from programl.graph_builder._encode import encode_graph
from programl.graph_builder.ir_text import (
    ModuleText,
    llvm_identifier,
    nesting_depth,
    opcode_of,
    result_name_of,
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
    """Builder options (SPEC §1.9, ``ProgramGraphOptions``).

    Attributes:
        instructions_only: No VARIABLE/CONSTANT nodes and no DATA edges.
        ignore_call_returns: Only forward CALL edges (external -> entry, call site -> callee entry).
        strict: Fail when the module has no functions or some node has no edge (SPEC §1.5 step 7).
    """

    instructions_only: bool = False
    ignore_call_returns: bool = False
    strict: bool = False


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
    if _DEBUG_INFO_FLAG not in text:
        return _parse_assembly(text, path, context)
    _check_verifies(text, path)
    with _captured_stderr(path):
        return _parse_assembly(text, path, context)


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


def _upgrade_legacy_attributes(text: str) -> str:
    """Rewrite old IR spellings that LLVM 22 no longer reads (untyped ``byval``/``sret``, old ``inrange``)."""
    text = _UNTYPED_POINTER_ATTRIBUTE.sub(lambda m: f"{m.group(1)}*{m.group(2)} {m.group(3)}({m.group(1)})", text)
    return _OLD_INRANGE.sub(r"\1", text)


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
    """Build the graph of textual LLVM IR (SPEC §1).

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
    """Build the ProGraML graph of a parsed module (SPEC §1.5).

    Args:
        module: An llvmlite module.
        module_name: The name to use when the module has no source file name of its own.
        options: Builder options.
        path: For error messages.
    """
    text = split_module(str(module))
    builder = _Builder(text, options)
    builder.build(ffi.module_handle(module))
    name = text.source_filename
    if name is None or name == _LLVMLITE_BUFFER_NAME:
        name = module_name
    graph = builder.to_proto(name, module.triple, str(module.data_layout))
    if options.strict:
        _check_strict(graph, name, path)
    return graph


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
    """Accumulates nodes and edges in flat lists, in the reference's emission order."""

    def __init__(self, text: ModuleText, options: BuildOptions) -> None:
        self.text = text
        self.options = options
        # nodes
        self.node_type: list[int] = [INSTRUCTION]
        self.node_text: list[str] = [EXTERNAL_TEXT]
        self.node_function: list[int] = [0]
        self.node_block: list[int] = [0]
        self.node_full_text: list[str | None] = [None]  # None: no features message (the external node)
        self.node_int_features: dict[int, list[tuple[str, int]]] = {}
        # edges (flat lists; an edge is (flow, position, source, target))
        self.edges: list[tuple[int, int, int, int]] = []
        # functions: (name, int features)
        self.functions: list[tuple[str, list[tuple[str, int]]]] = []
        self.function_entry: list[int] = []
        self.function_exits: list[list[int]] = []
        self.call_sites: list[tuple[int, int]] = []  # (call node, callee function index)
        # constants: key -> [uses]; key is the constant's printed text (LLVM uniques constants by value)
        self.constant_uses: dict[str, list[tuple[int, int]]] = {}
        self.constant_text: dict[str, str] = {}
        self.constant_key_of: dict[int, str] = {}  # constant handle -> key
        self.type_text: dict[int, str] = {}  # type handle -> text (§1.7 collapsed)
        self.function_index: dict[int, int] = {}  # function handle -> index
        self.function_signature: dict[int, tuple] = {}
        self.block_count = 0

    # -- types and constants ----------------------------------------------------------------------------------

    def type_text_of(self, type_: int) -> str:
        text = self.type_text.get(type_)
        if text is None:
            # §1.7: a struct (after stripping pointer levels; with opaque pointers there are none) is `struct`
            text = "struct" if ffi.type_kind(type_) == ffi.TYPE_STRUCT else ffi.print_type(type_)
            self.type_text[type_] = text
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
                self.constant_text[key] = self.type_text_of(ffi.type_of(value))
        return key

    def use_constant(self, key: str, user: int, position: int) -> None:
        uses = self.constant_uses.get(key)
        if uses is None:
            self.constant_uses[key] = [(user, position)]
        else:
            uses.append((user, position))

    # -- nodes ------------------------------------------------------------------------------------------------

    def add_node(self, type_: int, text: str, function: int, block: int, full_text: str | None) -> int:
        self.node_type.append(type_)
        self.node_text.append(text)
        self.node_function.append(function)
        self.node_block.append(block)
        self.node_full_text.append(full_text)
        return len(self.node_type) - 1

    # -- the walk ---------------------------------------------------------------------------------------------

    def build(self, module: int) -> None:
        functions = ffi.functions(module)
        for index, function in enumerate(functions):
            self.function_index[function] = index
        definitions = iter(self.text.functions)
        for index, function in enumerate(functions):
            name = ffi.value_name(function)
            if ffi.is_declaration(function):
                self.functions.append((name, []))
                node = self.add_node(INSTRUCTION, UNDEFINED_FUNCTION_TEXT, index, 0, "")
                self.function_entry.append(node)
                self.function_exits.append([node])
            else:
                function_text = next(definitions, None)
                header = function_text.header if function_text else ""
                self.functions.append((name, self.function_profile(header)))
                self.visit_definition(index, function, function_text.instructions if function_text else None)
        self.add_call_edges()

    def function_profile(self, header: str) -> list[tuple[str, int]]:
        """``llvm_profile_entry_count`` from a ``!prof`` attachment on the ``define`` line (SPEC §1.8)."""
        match = re.search(r"!prof (![0-9]+)", header)
        if not match:
            return []
        fields = _metadata_fields(self.text.metadata.get(match.group(1), ""))
        if len(fields) >= 2 and fields[0] == '!"function_entry_count"':
            count = _metadata_int(fields[1])
            if count is not None:
                return [("llvm_profile_entry_count", count)]
        return []

    def visit_definition(self, function_index: int, function: int, texts: list[str] | None) -> None:
        blocks = ffi.blocks(function)
        block_instructions = [ffi.instructions(block) for block in blocks]
        count = sum(len(instructions) for instructions in block_instructions)
        if texts is None or len(texts) != count:
            # The printed text did not cut cleanly (an unusual printing): print instructions one by one.
            texts = [ffi.print_value(i).lstrip() for instructions in block_instructions for i in instructions]

        data_nodes = not self.options.instructions_only
        edges = self.edges
        append_edge = edges.append
        node_type, node_text = self.node_type, self.node_text
        node_function, node_block, node_full_text = self.node_function, self.node_block, self.node_full_text
        type_text_of = self.type_text_of
        constant_key_of = self.constant_key_of
        constant_key = self.constant_key
        use_constant = self.use_constant
        operands_of = ffi.operands
        value_kind = ffi.value_kind
        type_of = ffi.type_of
        CONSTANT_KINDS = ffi.CONSTANT_KINDS
        function_handles = self.function_index

        block_index = {block: local for local, block in enumerate(blocks)}
        instructions_of_function = {i for instructions in block_instructions for i in instructions}
        arguments_of_function = set(ffi.arguments(function))
        first_node: list[int] = []
        last_node: list[int] = []
        successors: list[list[int]] = []
        instruction_node: dict[int, int] = {}
        instruction_text: dict[int, str] = {}
        variable_text: dict[int, str] = {}  # producer -> text of its variables
        argument_uses: dict[int, list[tuple[int, int]]] = {}
        deferred: list[tuple[int, int]] = []  # (producer instruction, variable node)
        text_iter = iter(texts)
        base_block = self.block_count

        for local, instructions in enumerate(block_instructions):
            block_id = base_block + local
            previous = -1
            block_successors: list[int] = []
            for instruction in instructions:
                text = next(text_iter)
                opcode = opcode_of(text)
                node = len(node_type)
                node_type.append(INSTRUCTION)
                node_text.append(opcode)
                node_function.append(function_index)
                node_block.append(block_id)
                node_full_text.append(text)
                instruction_node[instruction] = node
                instruction_text[instruction] = text
                if previous >= 0:
                    append_edge((CONTROL, 0, previous, node))
                else:
                    first_node.append(node)
                previous = node

                operands = operands_of(instruction)
                if not operands:
                    continue
                if opcode == "switch":
                    # LLVM 22 keeps case values out of the operand list; LLVM 10 listed them at 2, 4, ... (Policy 3)
                    positions = [0] + [-1] * (len(operands) - 1)
                    if data_nodes:
                        self.switch_cases(text, node)
                else:
                    positions = range(len(operands))
                for operand, position in zip(operands, positions):
                    # classify by what this function is known to hold; ask LLVM only about the rest
                    if operand in instructions_of_function:
                        if data_nodes:
                            text_of_variable = variable_text.get(operand)
                            if text_of_variable is None:
                                text_of_variable = variable_text[operand] = type_text_of(type_of(operand))
                            variable = len(node_type)
                            node_type.append(VARIABLE)
                            node_text.append(text_of_variable)
                            node_function.append(function_index)
                            node_block.append(block_id)
                            node_full_text.append("")
                            append_edge((DATA, position, variable, node))
                            deferred.append((operand, variable))
                        continue
                    successor = block_index.get(operand)
                    if successor is not None:
                        block_successors.append(successor)
                        continue
                    if not data_nodes:
                        continue
                    key = constant_key_of.get(operand)
                    if key is not None:
                        use_constant(key, node, position)
                    elif operand in arguments_of_function:
                        uses = argument_uses.get(operand)
                        if uses is None:
                            argument_uses[operand] = [(node, position)]
                        else:
                            uses.append((node, position))
                    elif operand not in function_handles:
                        kind = value_kind(operand)
                        if kind in CONSTANT_KINDS:
                            use_constant(constant_key(operand, kind), node, position)
                    # functions, metadata, inline asm: no node, but the position still advances (§1.4)
                if opcode == "call" and operands[-1] in function_handles:  # a function as the callee
                    self.maybe_call_site(node, text, operands, instruction)
                elif opcode == "br" and len(block_successors) == 2:
                    block_successors.reverse()  # operands are (cond, false, true); successors are (true, false)
            last_node.append(previous)
            successors.append(block_successors)

        self.block_count = base_block + len(blocks)

        # argument nodes, in parameter order (Policy 2), block one past the function's last block (§1.5)
        if argument_uses:
            for position, argument in enumerate(ffi.arguments(function)):
                uses = argument_uses.get(argument)
                if not uses:
                    continue
                type_ = ffi.type_of(argument)
                printed_type = ffi.print_type(type_)
                name = ffi.value_name(argument)
                identifier = llvm_identifier(name, "%") if name else f"%{_unnamed_argument_slot(function, position)}"
                node = self.add_node(
                    VARIABLE, type_text_of(type_), function_index, self.block_count, f"{printed_type} {identifier}"
                )
                edges.extend((DATA, use_position, node, user) for user, use_position in uses)

        # producer -> variable edges, in variable creation order
        node_full_text = self.node_full_text
        node_text = self.node_text
        result_name: dict[int, str] = {}
        for producer, variable in deferred:
            source = instruction_node.get(producer)
            if source is None:  # cannot happen in valid IR (operands are in the same function)
                continue
            edges.append((DATA, 0, source, variable))
            name = result_name.get(producer)
            if name is None:
                name = result_name[producer] = result_name_of(instruction_text[producer])
            node_full_text[variable] = f"{node_text[variable]} {name}"

        # control edges between blocks: breadth-first from the entry block (§1.5)
        exits: list[int] = []
        visited = bytearray(len(blocks))
        visited[0] = 1
        queue = deque([0])
        while queue:
            current = queue.popleft()
            block_successors = successors[current]
            if not block_successors:
                exits.append(last_node[current])
            for position, successor in enumerate(block_successors):
                edges.append((CONTROL, position, last_node[current], first_node[successor]))
                if not visited[successor]:
                    visited[successor] = 1
                    queue.append(successor)
        self.function_entry.append(first_node[0])
        self.function_exits.append(exits)

        if any("!prof " in t for t in texts):
            self.instruction_profiles(instruction_node, instruction_text)

    def switch_cases(self, text: str, node: int) -> None:
        """Case values of a ``switch`` become constant uses at positions 2, 4, ... (SPEC §1.3, Policy 3)."""
        for k, line in enumerate(text.split("\n")[1:-1]):
            value = line.strip().rsplit(", label ", 1)[0]
            if value not in self.constant_text:
                self.constant_text[value] = value.split(" ", 1)[0]  # integer type: never a struct
            self.use_constant(value, node, 2 + 2 * k)

    def maybe_call_site(self, node: int, text: str, operands: list[int], instruction: int) -> None:
        """Record a CALL edge when LLVM's ``CallInst::getCalledFunction()`` is non-null (SPEC §1.5).

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
            )
            self.function_signature[callee] = signature
        return_type, params, vararg, printed = signature
        callee_name = llvm_identifier(ffi.value_name(callee), "@")
        if vararg:
            matches = f" {printed} {callee_name}(" in text
        else:
            arguments = operands[:-1]
            matches = (
                f"...) {callee_name}(" not in text
                and len(arguments) == len(params)
                and ffi.type_of(instruction) == return_type
                and all(ffi.type_of(a) == p for a, p in zip(arguments, params))
            )
        if matches:
            self.call_sites.append((node, index))

    def instruction_profiles(self, instruction_node: dict[int, int], instruction_text: dict[int, str]) -> None:
        """Profile features of instructions with ``!prof`` metadata (SPEC §1.2)."""
        for instruction, text in instruction_text.items():
            match = re.search(r"!prof (![0-9]+)", text)
            if not match:
                continue
            fields = _metadata_fields(self.text.metadata.get(match.group(1), ""))
            features = _profile_features(fields, opcode_of(text), text)
            if features:
                self.node_int_features[instruction_node[instruction]] = features

    def add_call_edges(self) -> None:
        """CALL edges: external <-> every function, then call sites <-> callees (SPEC §1.5 step 4, Policy 2)."""
        edges = self.edges
        returns = not self.options.ignore_call_returns
        for entry, exits in zip(self.function_entry, self.function_exits):
            edges.append((CALL, 0, 0, entry))
            if returns:
                edges.extend((CALL, 0, exit_, 0) for exit_ in exits)
        for site, callee in self.call_sites:
            edges.append((CALL, 0, site, self.function_entry[callee]))
            if returns:
                edges.extend((CALL, 0, exit_, site) for exit_ in self.function_exits[callee])

    # -- output -----------------------------------------------------------------------------------------------

    def to_proto(self, module_name: str, triple: str, data_layout: str) -> ProgramGraph:
        # constants last (SPEC §1.5 step 5): function unset, block = total number of blocks
        for key, uses in self.constant_uses.items():
            node = self.add_node(CONSTANT, self.constant_text[key], 0, self.block_count, key)
            self.edges.extend((DATA, position, node, user) for user, position in uses)
        module_features = [
            ("llvm_target_triple", triple.encode("utf-8")),
            ("llvm_data_layout", data_layout.encode("utf-8")),
            ("llvm_version", LLVM_VERSION.encode("utf-8")),
        ]
        data = encode_graph(
            self.node_type,
            self.node_text,
            self.node_function,
            self.node_block,
            self.node_full_text,
            self.node_int_features,
            self.edges,
            self.functions,
            [(module_name, module_features, _module_profile_summary(self.text))],
        )
        return ProgramGraph.FromString(data)


def _unnamed_argument_slot(function: int, position: int) -> int:
    """The slot number of the unnamed argument at ``position``: unnamed arguments are numbered 0, 1, ... first."""
    return sum(1 for argument in ffi.arguments(function)[:position] if not ffi.value_name(argument))


# ----------------------------------------------------------------------------------------------------------------
# Profile metadata (SPEC §1.2, §1.5 step 6)


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
