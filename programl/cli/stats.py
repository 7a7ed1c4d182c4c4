"""``programl stats``: a table of what saved graphs hold (nodes per type, edges per flow, functions, module)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from programl.cli.common import Summary
from programl.cli.helptext import description

__all__ = ["add_parser", "graph_stats", "run"]


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "stats",
        help="print node and edge counts of saved graphs",
        description=description(__doc__),
        epilog="example:\n  programl stats out/*.ProgramGraph.pb",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="GRAPH", help="graph files (.pb, .pbtxt, .json, .gz)")
    parser.set_defaults(run=run, parser=parser)


def graph_stats(graph) -> dict[str, int]:
    """Counts of a ProgramGraph: nodes by type, edges by flow, functions."""
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


COLUMNS = ("instructions", "variables", "constants", "control", "data", "call", "functions")


def run(args: argparse.Namespace) -> int:
    from programl.io.files import read_graph

    summary = Summary("stats")
    rows = []
    for path in args.inputs:
        try:
            rows.append((path, graph_stats(read_graph(path))))
            summary.add()
        except Exception as error:  # noqa: BLE001 - reported per file
            summary.fail(error, path)
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
    return summary.exit_code()


def _row(stats) -> str:
    return (
        f"{stats['instructions']:>11,} {stats['variables']:>7,} {stats['constants']:>7,}  {stats['control']:>11,} "
        f"{stats['data']:>7,} {stats['call']:>7,}  {stats['functions']:>9,}"
    )


del sys
