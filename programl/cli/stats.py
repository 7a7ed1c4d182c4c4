"""``programl stats``: a table of what saved graphs hold (nodes per type, edges per flow, functions).

Each graph is read and counted in a worker process (``-j``) under ``--timeout`` and ``--max-memory``, like
``programl build``'s inputs, so a FIFO nobody writes to cannot block the command; a bad graph is reported on one line,
the table lists the others (in the order given) and the exit code is 1.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from programl.cli.common import Summary, add_limit_options, progress, usage_error, worker_outcomes
from programl.cli.helptext import SUMMARIES, description

__all__ = ["add_parser", "graph_stats", "run"]

COLUMNS = ("instructions", "variables", "constants", "control", "data", "call", "functions")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "stats",
        help=SUMMARIES["stats"],
        description=description(__doc__),
        epilog="example:\n  programl stats out/*.ProgramGraph.pb",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="GRAPH", help="graph files (.pb, .pbtxt, .json, .gz)")
    parser.add_argument("-j", "--jobs", type=int, default=0, metavar="N", help="worker processes (default: all CPUs)")
    add_limit_options(parser, per="graph")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(run=run, parser=parser)


def graph_stats(graph) -> dict[str, int]:
    """Counts of a ProgramGraph: nodes by type, edges by flow, functions (docs/spec/graph.md#node-and-edge-kinds,
    docs/spec/wire-format.md#program-graph-messages)."""
    nodes = Counter(node.type for node in graph.node)
    edges = Counter(edge.flow for edge in graph.edge)
    return {
        "instructions": nodes[0],
        "variables": nodes[1],
        "constants": nodes[2],
        "control": edges[0],
        "data": edges[1],
        "call": edges[2],
        "functions": len(graph.function),
    }


def stats_of_file(path: str) -> dict[str, int]:
    """:func:`graph_stats` of the graph saved in ``path`` (run in a worker)."""
    from programl.io.files import read_graph

    return graph_stats(read_graph(path))


def run(args: argparse.Namespace) -> int:
    from programl.util.executor import PoolError

    if args.jobs < 0:
        return usage_error(args.parser, "-j must be positive")
    summary = Summary("stats")
    rows: list[tuple[str, dict[str, int]]] = []  # outcomes come in the inputs' order
    try:
        with worker_outcomes(stats_of_file, args.inputs, args) as outcomes:
            for outcome in progress(outcomes, len(args.inputs), "reading", enabled=not args.quiet):
                if outcome.ok:
                    rows.append((outcome.input, outcome.value))
                    summary.add()
                else:
                    summary.fail(outcome.error, outcome.input)
    except KeyboardInterrupt:
        summary.interrupted = True
    except PoolError as error:
        summary.abort(error)
    if rows:
        width = max(len("graph"), *(len(path) for path, _ in rows))
        print(
            f"{'graph':<{width}}  {'nodes: inst':>11} {'var':>7} {'const':>7}  {'edges: ctrl':>11} {'data':>7} "
            f"{'call':>7}  {'functions':>9}"
        )
        totals = Counter()
        for path, stats in rows:
            totals.update(stats)
            print(f"{path:<{width}}  " + _row(stats))
        if len(rows) > 1:
            print(f"{'total':<{width}}  " + _row(totals))
    if summary.stopped:
        print(summary.line("graphs"), file=sys.stderr)
    return summary.exit_code()


def _row(stats) -> str:
    return (
        f"{stats['instructions']:>11,} {stats['variables']:>7,} {stats['constants']:>7,}  {stats['control']:>11,} "
        f"{stats['data']:>7,} {stats['call']:>7,}  {stats['functions']:>9,}"
    )
