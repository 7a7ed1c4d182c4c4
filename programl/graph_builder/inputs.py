"""The graph of one input file, built as ``programl build`` builds it (docs/spec/graph.md).

The kind of an input comes from its suffix: a source (C, C++, OpenCL, CUDA: clang-22; Fortran: flang-22), textual IR
(``.ll``), bitcode (``.bc``, or any bytes that start with bitcode's magic) or a serialized XLA ``HloProto``
(``.pb``); an input read from stdin is IR or bitcode unless a language is given. ``programl build``,
``programl predict`` and ``programl view`` read their inputs through :func:`graph_of_input`, so that one file gives
the same graph in each of them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from programl.exceptions import GraphCreationError
from programl.graph_builder import clang, flang

if TYPE_CHECKING:
    from programl.graph_builder.llvm import BuildOptions
    from programl.proto import ProgramGraph

__all__ = [
    "BITCODE_MAGIC",
    "FORTRAN_SUFFIXES",
    "HLO_SUFFIXES",
    "IR_SUFFIXES",
    "PB_ADVICE",
    "SOURCE_SUFFIXES",
    "graph_of_input",
]

#: Textual IR and bitcode, and what each is.
IR_SUFFIXES = {".ll": "ir", ".bc": "bitcode"}
#: Sources that clang-22 compiles (:data:`programl.graph_builder.clang.LANGUAGES` says the language of each).
SOURCE_SUFFIXES = tuple(clang.LANGUAGES)
#: Sources that flang-22 compiles.
FORTRAN_SUFFIXES = flang.FORTRAN_SUFFIXES
#: The first bytes of bitcode: raw, and in its wrapper.
BITCODE_MAGIC = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")
#: A serialized XLA HloProto (``--xla_dump_hlo_as_proto`` writes ``<name>.hlo.pb``).
HLO_SUFFIXES = (".pb",)
#: What to use instead when a .pb is one of this project's own messages
#: (:func:`programl.graph_builder.xla.other_message_kind`).
PB_ADVICE = {
    "ProgramGraph": "use `programl convert` or `programl stats`",
    "ProgramGraphFeaturesList": "data-flow labels; `programl analyze` writes them",
}


def _read(path: str, data: bytes | None, fd: int | None) -> tuple[bytes, str]:
    """The bytes of an input and the graph's module name for it."""
    if data is not None:
        return data, "<stdin>"
    if fd is not None:
        with open(fd, "rb", closefd=False) as f:
            return f.read(), "<stdin>" if path == "-" else path
    if os.path.isdir(path):
        raise GraphCreationError("is a directory", path)
    if not os.path.exists(path):
        raise GraphCreationError("no such file", path)
    with open(path, "rb") as f:
        return f.read(), path


def _text(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise GraphCreationError(f"not UTF-8 text: {error.reason}", path) from None


def graph_of_input(
    path: str,
    *,
    data: bytes | None = None,
    fd: int | None = None,
    language: str | None = None,
    flags: Sequence[str] = (),
    timeout: float | None = 300,
    options: BuildOptions | None = None,
) -> ProgramGraph:
    """The graph of the input ``path``, of the kind its suffix says (module docstring).

    Args:
        path: The input's path (``-`` for stdin); it names the graph's errors and, for sources, its module.
        data: The input's bytes, already read (stdin): then ``path`` only names it.
        fd: Read the input from this open file descriptor instead (stdin, ``/dev/fd/N``); it is not closed.
        language: The source language (``c``, ``c++``, ``cl``, ``cuda``, ``fortran``) instead of the suffix's.
        flags: More compiler flags for a source.
        timeout: Seconds the compiler may run.
        options: How to build the graph (default: the faithful ProGraML graph); not used for XLA HLO.

    Raises:
        GraphCreationError: The input is missing, empty, does not compile or is not of its kind (one line naming
            it, ``file:line:col`` where the compiler says).
        UnsupportedCompiler: The compiler it needs is not installed.
    """
    from programl.graph_builder.llvm import BuildOptions, graph_from_bitcode, graph_from_ir

    from_stdin = data is not None or fd is not None  # IR or bitcode unless the language says otherwise
    data, name = _read(path, data, fd)
    options = options if options is not None else BuildOptions()
    if not data:
        raise GraphCreationError("empty file", path)
    suffix = os.path.splitext(path)[1].lower()
    language = language or (clang.language_of(path) if suffix in SOURCE_SUFFIXES else None)
    if language is None and suffix in FORTRAN_SUFFIXES:
        language = "fortran"
    flags = tuple(flags)
    if language == "fortran":
        if from_stdin:
            ir = flang.compile_source(_text(data, path), flags, timeout=timeout)
        else:
            ir = flang.compile_file(path, flags, timeout=timeout)
        return graph_from_ir(ir, path=path, module_name=name, options=options)
    if language:
        if from_stdin:
            ir = clang.compile_source(_text(data, path), language, flags, timeout=timeout)
        else:
            ir = clang.compile_file(path, flags, language=language, timeout=timeout)
        return graph_from_ir(ir, path=path, module_name=name, options=options)
    if suffix in HLO_SUFFIXES and not from_stdin:
        from programl.graph_builder.xla import graph_from_hlo_bytes, other_message_kind

        try:
            # the builder options do not apply (docs/spec/graph.md#xla-hlo-graphs)
            return graph_from_hlo_bytes(data, path=path)
        except GraphCreationError:
            kind = other_message_kind(data)  # a .pb this project wrote: say what it is and what reads it
            if kind is not None:
                raise GraphCreationError(f"already a {kind}, not an XLA HloProto ({PB_ADVICE[kind]})", path) from None
            raise
    if suffix == ".bc" or data.startswith(BITCODE_MAGIC):
        return graph_from_bitcode(data, path=path, module_name=name, options=options)
    if suffix == ".ll" or from_stdin:
        return graph_from_ir(data, path=path, module_name=name, options=options)
    raise GraphCreationError(
        "unknown input type (expected .ll, .bc, .c, .cc, .cpp, .cxx, .cl, .cu, .f, .f90 or an XLA .pb;"
        " --language for others)",
        path,
    )
