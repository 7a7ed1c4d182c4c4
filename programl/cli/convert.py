"""``programl convert``: a saved graph (.pb, .pbtxt, .json, .gz) in another format (pb, pbtxt, json, dot, svg, png).

Lossless between pb, pbtxt and json (SPEC Policy 5); dot/svg/png are pictures (SPEC §3.2 ``to_dot``).
"""

from __future__ import annotations

import argparse
import os
import sys

from programl.cli.common import Summary, add_output_option, progress, usage_error
from programl.cli.formats import FORMATS, SUFFIXES
from programl.cli.helptext import description

__all__ = ["add_parser", "run"]

EXAMPLES = """\
examples:
  programl convert out/foo.ProgramGraph.pb --format json         print the node-link JSON
  programl convert out/*.ProgramGraph.pb --format svg -o pictures
  programl convert graph.json --format pb -o graphs
"""

GRAPH_SUFFIXES = (".ProgramGraph.pb", ".ProgramGraph.pbtxt", ".ProgramGraph.json", ".pb", ".pbtxt", ".json", ".gz")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="convert saved graphs to another format",
        description=description(__doc__),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="GRAPH", help="graph files (.pb, .pbtxt, .json, .gz)")
    parser.add_argument("--format", choices=FORMATS, required=True, help="output format")
    add_output_option(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    parser.set_defaults(run=run, parser=parser)


def output_path(directory: str, path: str, fmt: str) -> str:
    base = os.path.basename(path)
    for suffix in GRAPH_SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return os.path.join(directory, base + SUFFIXES[fmt])


def run(args: argparse.Namespace) -> int:
    from programl.cli.formats import serialize_graph
    from programl.io.files import read_graph
    from programl.util.fs import atomic_write_bytes, output_directory_problem

    if args.output is None and len(args.inputs) > 1:
        return usage_error(args.parser, "several inputs need -o DIR")
    if args.output:
        problem = output_directory_problem(args.output)
        if problem:
            return usage_error(args.parser, f"-o {problem}")
    summary = Summary("convert")
    for path in progress(args.inputs, len(args.inputs), "converting", enabled=not args.quiet):
        try:
            graphs = read_graph(path)
            graph = graphs[0] if isinstance(graphs, list) else graphs
            data = serialize_graph(graph, args.format)
            if args.output:
                atomic_write_bytes(output_path(args.output, path, args.format), data)
            else:
                sys.stdout.buffer.write(data)
            summary.add(nodes=len(graph.node), edges=len(graph.edge))
        except Exception as error:  # noqa: BLE001 - reported per file; the batch goes on
            summary.fail(error, path)
    if not args.quiet and (args.output or summary.failed):
        print(summary.line("graphs"), file=sys.stderr)
    return summary.exit_code()
