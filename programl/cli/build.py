"""``programl build``: program graphs from LLVM IR (.ll), bitcode (.bc), C, C++, OpenCL, CUDA and Fortran sources
(docs/spec/graph.md).

Inputs are built in worker processes (``-j``), each with a timeout and a memory limit (a single input too: it gets
the same isolation as many); a bad input is reported on one line (``file:line:col: error: ...``) and the others go
on. Reading an input also happens in its worker, under its timeout, so a FIFO or a stdin nobody writes to cannot
block the command for ever. Outputs are written atomically, and a rerun skips inputs whose output is up to date:
made from the same input bytes with the same options and programl version, as the directory's freshness record says
(:mod:`programl.util.freshness`; ``--force`` rebuilds).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from dataclasses import dataclass

from programl import __version__
from programl.cli.common import (
    EXIT_USAGE,
    Summary,
    add_graph_outcomes,
    add_limit_options,
    add_output_option,
    finish_batch,
    progress,
    usage_error,
    worker_outcomes,
)
from programl.cli.formats import FORMATS, SUFFIXES
from programl.cli.helptext import SUMMARIES, description
from programl.graph_builder.inputs import FORTRAN_SUFFIXES, HLO_SUFFIXES, IR_SUFFIXES, SOURCE_SUFFIXES
from programl.util.freshness import FreshnessRecord, file_key
from programl.util.fs import output_directory_problem

__all__ = ["add_parser", "run"]

LANGUAGES = ("c", "c++", "cl", "cuda", "fortran")

EXAMPLES = """\
examples:
  programl build foo.ll                         print the graph of foo.ll (protobuf text)
  programl build src/*.c -o graphs -j 4         one graphs/<name>.ProgramGraph.pb per file
  programl build kernel.cl -o out --format svg  a picture (needs graphviz)
  programl build a.c b.cc -o out -- -O2 -DN=4   flags after -- go to clang
  programl build saxpy.cu solver.f90 -o out     CUDA device code (clang-22), Fortran (flang-22)
  clang-22 -S -emit-llvm -o - x.c | programl build - --format json
  programl build module_0000.hlo.pb -o graphs   XLA HLO: a serialized HloProto, as xla2graph reads
  programl build k.cl --numbers-and-types       + constants' values, vector/array/struct shapes (not in ProGraML)
  programl build a.c --string-bytes             + the bytes of string constants (not in ProGraML)
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "build",
        help=SUMMARIES["build"],
        description=description(__doc__),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="FILE", help="input files; '-' reads IR (or bitcode) from stdin")
    add_output_option(parser)
    parser.add_argument("--format", choices=FORMATS, help="output format (default: pb with -o, pbtxt on stdout)")
    parser.add_argument("-j", "--jobs", type=int, default=0, metavar="N", help="worker processes (default: all CPUs)")
    add_limit_options(parser)
    parser.add_argument("--language", choices=LANGUAGES, help="source language for '-' or to override")
    parser.add_argument("--instructions-only", action="store_true", help="no variable/constant nodes")
    parser.add_argument("--ignore-call-returns", action="store_true", help="no return CALL edges")
    parser.add_argument("--strict", action="store_true", help="fail on empty modules and nodes without edges")
    parser.add_argument(
        "--numbers-and-types",
        action="store_true",
        help="not in ProGraML: add node features number_digits (the value of numeric constants) and type_shape "
        "(vector, array and struct types); see docs/numbers_types.md (off: the faithful graph)",
    )
    parser.add_argument(
        "--string-bytes",
        action="store_true",
        help="not in ProGraML: add the node feature string_bytes (the first bytes of each string constant); see "
        "docs/numbers_types.md (off: the faithful graph)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild outputs that are up to date")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    parser.set_defaults(run=run, parser=parser)


@dataclass(frozen=True)
class Task:
    """What a worker needs to build one input."""

    path: str
    data: bytes | None  # stdin contents
    output: str | None
    fmt: str
    language: str | None
    flags: tuple[str, ...]
    timeout: float
    fd: int | None = None  # read the input from this inherited file descriptor (stdin, /dev/fd/N)


def build_one(task: Task, options) -> tuple[int, int, bytes | None]:
    """Build one input and write (or return) its output: (nodes, edges, bytes for stdout or None); the graph is
    :func:`~programl.graph_builder.inputs.graph_of_input`'s."""
    from programl.cli.formats import serialize_graph
    from programl.graph_builder.inputs import graph_of_input
    from programl.util.fs import atomic_write_bytes

    graph = graph_of_input(
        task.path,
        data=task.data,
        fd=task.fd,
        language=task.language,
        flags=task.flags,
        timeout=task.timeout,
        options=options,
    )
    output = serialize_graph(graph, task.fmt, timeout=task.timeout)
    if task.output is None:
        return len(graph.node), len(graph.edge), output
    atomic_write_bytes(task.output, output)
    return len(graph.node), len(graph.edge), None


def output_path(directory: str, path: str, fmt: str) -> str:
    base = os.path.basename(path)
    stem, suffix = os.path.splitext(base)
    stem = stem if suffix.lower() in (*IR_SUFFIXES, *SOURCE_SUFFIXES, *FORTRAN_SUFFIXES, *HLO_SUFFIXES) else base
    return os.path.join(directory, stem + SUFFIXES[fmt])


def freshness_options(args: argparse.Namespace, path: str, fmt: str, flags: tuple[str, ...]) -> dict:
    """What, besides the input's bytes, makes an output: the options and the path (the graph's module name)."""
    from programl.graph_builder.llvm import LLVM_VERSION

    return {
        "command": "build",
        "path": path,
        "format": fmt,
        "language": args.language,
        "flags": list(flags),
        "instructions_only": args.instructions_only,
        "ignore_call_returns": args.ignore_call_returns,
        "strict": args.strict,
        "llvm": LLVM_VERSION,
        # only when set, so that the outputs of the faithful graph keep their freshness keys
        **({"numbers_and_types": True} if getattr(args, "numbers_and_types", False) else {}),
        **({"string_bytes": True} if getattr(args, "string_bytes", False) else {}),
    }


def up_to_date(record: FreshnessRecord, output: str, key: str | None) -> bool:
    """Whether ``output`` was made from the same input bytes and options (``record``: the directory's
    :class:`~programl.util.freshness.FreshnessRecord`; ``key``: :func:`~programl.util.freshness.file_key`)."""
    return record.is_fresh(output, key)


_FD_PATH = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")


def inherited_fd(path: str) -> tuple[int, bool] | None:
    """The descriptor a worker must inherit to read ``path``, and whether it is a duplicate made here (to close).

    A duplicate of stdin for ``-`` and ``/dev/stdin`` (a worker's own fd 0 is its task pipe), the descriptor itself
    for ``/dev/fd/N`` (a shell's ``<(...)``); None for other paths, or when there is no such descriptor (e.g. stdin
    replaced by a test harness: then the input is read here).
    """
    match = _FD_PATH.fullmatch(path)
    number = 0 if path in ("-", "/dev/stdin") else int(match.group(1)) if match else None
    if number is None:
        return None
    try:
        if number == 0:
            return os.dup(sys.stdin.fileno()), True
        os.fstat(number)
        return number, False
    except (OSError, ValueError, AttributeError):
        return None


def run(args: argparse.Namespace) -> int:
    from programl.exceptions import GraphCreationError
    from programl.graph_builder.clang import check_flags
    from programl.graph_builder.llvm import BuildOptions
    from programl.util.executor import PoolError

    parser = args.parser
    inputs: list[str] = args.inputs
    if inputs.count("-") > 1:
        return usage_error(parser, "'-' (stdin) can be given only once")
    if args.output is None and len(inputs) > 1:
        return usage_error(parser, "several inputs need -o DIR")
    if args.jobs < 0:
        return usage_error(parser, "-j must be positive")
    fmt = args.format or ("pb" if args.output else "pbtxt")
    options = BuildOptions(
        args.instructions_only,
        args.ignore_call_returns,
        args.strict,
        getattr(args, "numbers_and_types", False),
        getattr(args, "string_bytes", False),
    )
    flags = tuple(getattr(args, "extra_args", ()) or ())
    try:
        check_flags(flags)
    except GraphCreationError as error:
        return usage_error(parser, error.message)
    if args.output:
        problem = output_directory_problem(args.output)
        if problem:
            return usage_error(parser, f"-o {problem}")
    record = FreshnessRecord(args.output) if args.output else None
    keys: dict[str, str | None] = {}  # output -> freshness key of its input and options
    summary = Summary("build")

    tasks: list[Task] = []
    passed: dict[int, bool] = {}  # descriptors the workers inherit -> whether it is a duplicate made here
    claimed: dict[str, str] = {}
    for path in inputs:
        output = output_path(args.output, path if path != "-" else "stdin.ll", fmt) if args.output else None
        if output is not None:
            if output in claimed:
                summary.fail(GraphCreationError(f"output {output} is also the output of {claimed[output]}"), path)
                continue
            claimed[output] = path
            if path != "-":
                keys[output] = file_key(path, freshness_options(args, path, fmt, flags), version=__version__)
                if not args.force and up_to_date(record, output, keys[output]):
                    summary.skipped += 1
                    continue
        inherited = inherited_fd(path)
        fd = inherited[0] if inherited else None
        if inherited:
            passed[fd] = inherited[1]
        data = sys.stdin.buffer.read() if path == "-" and fd is None else None
        tasks.append(Task(path, data, output, fmt, args.language, flags, args.timeout, fd))

    work = functools.partial(build_one, options=options)
    try:
        with worker_outcomes(work, tasks, args, pass_fds=tuple(passed)) as outcomes:
            add_graph_outcomes(
                progress(outcomes, len(tasks), "building", enabled=not args.quiet), summary, record, keys
            )
    except KeyboardInterrupt:
        summary.interrupted = True
    except PoolError as error:
        summary.abort(error)
    finally:
        for fd, duplicate in passed.items():
            if duplicate:
                os.close(fd)
    return finish_batch(summary, record, args, "graphs")


del EXIT_USAGE  # re-exported through common; kept out of this module's namespace
