"""LLVM IR -> ProGraML ``ProgramGraph``, node for node and edge for edge as ProGraML 0.3.2 builds it.

Implements the whole of docs/spec/graph.md (node fields, edge positions, operands, construction order, special
constructs, type texts, functions and modules, builder options) with the deliberate differences of
docs/spec/policy.md: LLVM 22 texts (every pointer is ``ptr``), a deterministic order where the reference iterates hash
maps, switch case values at DATA positions 2+2k, and the ``llvm_version`` module feature.

This module and the three beside it are the only ones that walk LLVM objects. It parses with llvmlite (LLVM 22;
older textual IR and bitcode are upgraded by LLVM on read; :mod:`~programl.graph_builder.llvm_parse`) in a fresh LLVM
context per module, prints the module once and cuts the text into instruction texts
(:mod:`programl.graph_builder.ir_text`), and walks the structure through llvmlite's C functions
(:mod:`programl.graph_builder._ffi`; the walk: :mod:`~programl.graph_builder.llvm_walk`, its profile metadata:
:mod:`~programl.graph_builder.llvm_profile`). Time is linear in the size of the module.

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

import llvmlite.binding as llvm

from programl.exceptions import GraphCreationError
from programl.graph_builder import _ffi as ffi
from programl.graph_builder.build_options import BuildOptions
from programl.graph_builder.ir_text import split_module
from programl.graph_builder.llvm_parse import (
    _BIG_STACK,
    _INLINE_BITCODE,
    _MAX_STACK,
    _STACK_PER_BITCODE_BYTE,
    LLVM_VERSION,
    MAX_NESTING,
    _call_on_stack,
    _captured_stderr,
    _decode,
    _needs_big_stack,
    _parse_text,
)
from programl.graph_builder.llvm_walk import _Builder
from programl.proto import ProgramGraph

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

# the buffer name llvmlite gives to parsed text; LLVM uses it as source_filename when the IR has none
_LLVMLITE_BUFFER_NAME = "<string>"


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
