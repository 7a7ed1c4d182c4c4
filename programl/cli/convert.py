"""``programl convert``: a saved graph (.pb, .pbtxt, .json, .gz) in another format (pb, pbtxt, json, dot, svg, png).

Lossless between pb, pbtxt and json (docs/spec/policy.md#lossless-conversions); dot/svg/png are pictures
(docs/spec/python-api.md#transforms ``to_dot``).

A batch like ``programl build``'s: each graph is read and converted in a worker process (``-j``) under ``--timeout``
and ``--max-memory`` (a single graph too, so a FIFO nobody writes to, or Graphviz on a graph too big to lay out,
cannot block the command for ever); a bad graph is reported on one line and the others go on; outputs are written
atomically, and a rerun skips outputs made from the same graph bytes in the same format, as the directory's freshness
record says (:mod:`programl.util.freshness`; ``--force`` converts again).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from programl import __version__
from programl.cli.common import (
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
from programl.util.freshness import FreshnessRecord, file_key
from programl.util.fs import output_directory_problem

__all__ = ["add_parser", "run"]

EXAMPLES = """\
examples:
  programl convert out/foo.ProgramGraph.pb --format json         print the node-link JSON
  programl convert out/*.ProgramGraph.pb --format svg -o pictures -j 2
  programl convert graph.json --format pb -o graphs
"""

GRAPH_SUFFIXES = (".ProgramGraph.pb", ".ProgramGraph.pbtxt", ".ProgramGraph.json", ".pb", ".pbtxt", ".json", ".gz")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "convert",
        help=SUMMARIES["convert"],
        description=description(__doc__),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="GRAPH", help="graph files (.pb, .pbtxt, .json, .gz)")
    parser.add_argument("--format", choices=FORMATS, required=True, help="output format")
    add_output_option(parser)
    parser.add_argument("-j", "--jobs", type=int, default=0, metavar="N", help="worker processes (default: all CPUs)")
    add_limit_options(parser, per="graph")
    parser.add_argument("--force", action="store_true", help="convert graphs whose output is up to date")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    parser.set_defaults(run=run, parser=parser)


@dataclass(frozen=True)
class Task:
    """What a worker needs to convert one graph."""

    path: str
    output: str | None  # None: return the bytes for stdout
    fmt: str
    timeout: float  # Graphviz's limit for svg/png, the worker's own (its limit kills it, and dot, anyway)


def convert_one(task: Task) -> tuple[int, int, bytes | None]:
    """Read one graph and write (or return) it in ``task.fmt``: (nodes, edges, bytes for stdout or None)."""
    from programl.cli.formats import serialize_graph
    from programl.io.files import read_graph
    from programl.util.fs import atomic_write_bytes

    graph = read_graph(task.path)
    data = serialize_graph(graph, task.fmt, timeout=task.timeout)
    if task.output is None:
        return len(graph.node), len(graph.edge), data
    atomic_write_bytes(task.output, data)
    return len(graph.node), len(graph.edge), None


def output_path(directory: str, path: str, fmt: str) -> str:
    base = os.path.basename(path)
    for suffix in GRAPH_SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return os.path.join(directory, base + SUFFIXES[fmt])


def run(args: argparse.Namespace) -> int:
    from programl.exceptions import GraphTransformError
    from programl.util.executor import PoolError

    if args.output is None and len(args.inputs) > 1:
        return usage_error(args.parser, "several inputs need -o DIR")
    if args.jobs < 0:
        return usage_error(args.parser, "-j must be positive")
    if args.output:
        problem = output_directory_problem(args.output)
        if problem:
            return usage_error(args.parser, f"-o {problem}")
    record = FreshnessRecord(args.output) if args.output else None
    keys: dict[str, str | None] = {}  # output -> freshness key of its graph and format
    claimed: dict[str, str] = {}
    summary = Summary("convert")

    tasks: list[Task] = []
    for path in args.inputs:
        output = output_path(args.output, path, args.format) if args.output else None
        if output is not None:
            if output in claimed:
                summary.fail(GraphTransformError(f"output {output} is also the output of {claimed[output]}"), path)
                continue
            claimed[output] = path
            keys[output] = file_key(path, {"command": "convert", "format": args.format}, version=__version__)
            if not args.force and record.is_fresh(output, keys[output]):
                summary.skipped += 1
                continue
        tasks.append(Task(path, output, args.format, args.timeout))

    try:
        with worker_outcomes(convert_one, tasks, args) as outcomes:
            add_graph_outcomes(
                progress(outcomes, len(tasks), "converting", enabled=not args.quiet), summary, record, keys
            )
    except KeyboardInterrupt:
        summary.interrupted = True
    except PoolError as error:
        summary.abort(error)
    return finish_batch(summary, record, args, "graphs")
