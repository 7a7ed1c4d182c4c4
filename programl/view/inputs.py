"""The graph of one input of ``programl view``, with its instructions' source lines where debug information has them.

Sources (C, C++, OpenCL, CUDA: clang-22; Fortran: flang-22) are compiled with ``-g`` unless told otherwise, then built
as ``programl build`` builds IR; textual IR (``.ll``) is read as it is (its own debug information, if any, gives the
lines); saved graphs (``*.ProgramGraph.pb|pbtxt|json``) and everything else ``programl build`` reads (bitcode, XLA
HLO) are read or built as ``programl build`` does, without source lines.

Source lines come only from the input itself, the files below its directory and those below the ``source_root``
directories (:mod:`programl.view.debuginfo` says which files are never read).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from programl.proto import ProgramGraph
from programl.view.debuginfo import SourceLocations, source_locations

__all__ = ["GRAPH_MARK", "read_input"]

#: A file whose name holds this is a saved graph, not a program.
GRAPH_MARK = ".ProgramGraph"


def read_input(
    path: str,
    flags: Sequence[str] = (),
    *,
    debug_info: bool = True,
    timeout: float | None = 300,
    source_root: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
) -> tuple[ProgramGraph, SourceLocations]:
    """The graph of the file ``path`` and the source locations of its instructions.

    Args:
        path: A program (``.c``, ``.cc``, ``.cl``, ``.cu``, ``.f90`` ..., ``.ll``, ``.bc``, ``.hlo.pb``) or a saved
            graph (``*.ProgramGraph.pb``, ``.pbtxt``, ``.json``).
        flags: More compiler flags for a source file.
        debug_info: Compile sources with ``-g`` (the graph is the same; the page then shows source lines).
        timeout: Seconds the compiler may run.
        source_root: A directory (or several) whose source files the lines may come from too, besides the input's
            own directory (:func:`~programl.view.debuginfo.source_locations`).

    Raises:
        GraphCreationError: The file is missing, does not compile or is not IR (``file:line:col`` where known).
        UnsupportedCompiler: The compiler it needs is not installed.
    """
    from programl.exceptions import GraphCreationError

    name = os.path.basename(path)
    suffix = os.path.splitext(name)[1].lower()
    if os.path.isdir(path):
        raise GraphCreationError("is a directory", path)
    if not os.path.exists(path):
        raise GraphCreationError("no such file", path)
    if GRAPH_MARK in name:  # read without loading LLVM
        from programl.io.files import read_graph

        return read_graph(path), SourceLocations()
    from programl.graph_builder import clang, flang
    from programl.graph_builder.inputs import FORTRAN_SUFFIXES, SOURCE_SUFFIXES, graph_of_input
    from programl.graph_builder.llvm import graph_from_ir

    extra = ["-g"] if debug_info and not any(flag.startswith("-g") for flag in flags) else []
    if suffix in SOURCE_SUFFIXES:
        ir = clang.compile_file(path, [*flags, *extra], timeout=timeout)
    elif suffix in FORTRAN_SUFFIXES:
        ir = flang.compile_file(path, [*flags, *extra], timeout=timeout)
    elif suffix == ".ll":
        with open(path, "rb") as file:
            data = file.read()
        if not data:
            raise GraphCreationError("empty file", path)
        try:
            ir = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise GraphCreationError(f"not UTF-8 text: {error.reason}", path) from None
    else:  # bitcode, XLA HLO: as `programl build` reads them
        graph = graph_of_input(path, flags=flags, timeout=timeout if timeout is not None else 300.0)
        return graph, SourceLocations()
    graph = graph_from_ir(ir, path=path, module_name=path)
    return graph, source_locations(ir, graph, near=path, source_root=source_root)
