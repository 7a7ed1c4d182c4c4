"""``programl analyze``: data-flow labels for saved graphs, in the DeepDataFlow layout
(docs/spec/analyses.md#label-files, docs/spec/datasets.md#deepdataflow-layout).

For each graph ``<name>.ProgramGraph.pb`` and each analysis, writes
``<DIR>/labels/<analysis>/<name>.ProgramGraphFeaturesList.pb``: one record per sampled root
(docs/spec/wire-format.md#label-records). A graph is read once and its columnar view shared by all analyses. Graphs run
in worker processes (``-j``) with a timeout each and a memory limit (a single graph too: it is read and labelled in its
worker); a bad graph is reported on one line and the batch goes on; writes are atomic and a rerun skips label files that
are up to date: made from the same graph bytes with the same analysis, format, seed, ``--max-roots`` and programl
version, as ``DIR/.programl-fresh.jsonl`` says (:mod:`programl.util.freshness`). A graph with no eligible root for an
analysis gets no label file for it (as in the original's dataset scripts): it is reported and counted, not treated as a
failure, and listed in ``labels/<analysis>/no_eligible_root.txt``.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from programl import __version__
from programl.cli.common import (
    Summary,
    add_limit_options,
    finish_batch,
    print_line,
    progress,
    quote_path,
    usage_error,
    worker_outcomes,
)
from programl.cli.helptext import SUMMARIES, description
from programl.dataflow.names import ANALYSES
from programl.util.freshness import FreshnessRecord, freshness_key
from programl.util.fs import output_directory_problem

__all__ = ["add_parser", "run"]

LABEL_SUFFIXES = {
    "pb": ".ProgramGraphFeaturesList.pb",
    "pbtxt": ".ProgramGraphFeaturesList.pbtxt",
    "json": ".ProgramGraphFeaturesList.json",
}
GRAPH_SUFFIXES = (".ProgramGraph.pb", ".ProgramGraph.pbtxt", ".ProgramGraph.json")
#: per analysis, the graphs that have no eligible root (and so no label file), so that a rerun skips them too
NO_ROOT_FILE = "no_eligible_root.txt"

EXAMPLES = """\
examples:
  programl analyze liveness out/foo.ProgramGraph.pb                 print the labels (protobuf text)
  programl analyze all graphs/ -o dataset -j 2                       dataset/labels/<analysis>/<name>...pb
  programl analyze reachability graphs/*.pb -o dataset --seed 7 --max-roots 5
  programl analyze dominance foo.ProgramGraph.pb -o x --format json  labels a person can read
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help=SUMMARIES["analyze"],
        description=description(__doc__),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("analysis", choices=(*ANALYSES, "all"), help="an analysis, or all five")
    parser.add_argument("inputs", nargs="+", metavar="GRAPH", help="*.ProgramGraph.pb files, or directories of them")
    parser.add_argument("-o", "--output", metavar="DIR", help="write DIR/labels/<analysis>/<name>... (default: stdout)")
    parser.add_argument("--format", choices=tuple(LABEL_SUFFIXES), help="label file format (default: pb with -o)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the root sample (default: 0)")
    parser.add_argument("--max-roots", type=int, default=10, metavar="N", help="most roots per graph (default: 10)")
    parser.add_argument("-j", "--jobs", type=int, default=0, metavar="N", help="worker processes (default: all CPUs)")
    add_limit_options(parser, per="graph")
    parser.add_argument("--force", action="store_true", help="relabel graphs whose labels are up to date")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    parser.set_defaults(run=run, parser=parser)


@dataclass(frozen=True)
class Task:
    """One graph and the label files to write for it: ``(analysis, output path or None)`` pairs."""

    path: str
    outputs: tuple[tuple[str, str | None], ...]
    fmt: str
    seed: int
    max_roots: int


def label_one(task: Task) -> list[tuple[str, int | str, bytes | None]]:
    """Label one graph: per analysis ``(analysis, number of records or the reason there are none, bytes or None)``."""
    from programl.dataflow import GraphView, analyze_arrays, arrays_to_labels, labels_to_bytes
    from programl.exceptions import AnalysisError
    from programl.io.files import read_graph, write_features_list
    from programl.util.fs import atomic_write_bytes

    view = GraphView.from_graph(read_graph(task.path))
    results = []
    for analysis, output in task.outputs:
        try:
            result = analyze_arrays(view, analysis, max_roots=task.max_roots, seed=task.seed)
        except AnalysisError as error:
            results.append((analysis, str(error), None))
            continue
        records = len(result.roots)
        if task.fmt == "pb":
            data = labels_to_bytes(result)
            if output is None:
                results.append((analysis, records, data))
            else:
                atomic_write_bytes(output, data)
                results.append((analysis, records, None))
        elif output is None:
            from google.protobuf import text_format

            text = text_format.MessageToString(arrays_to_labels(result)).encode("utf-8")
            results.append((analysis, records, text))
        else:
            write_features_list(output, arrays_to_labels(result))
            results.append((analysis, records, None))
    return results


def graph_name(path: str) -> str:
    base = os.path.basename(path)
    for suffix in GRAPH_SUFFIXES:
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return os.path.splitext(base)[0]


def expand_inputs(inputs: list[str]) -> list[str]:
    """Files as given; a directory stands for its ``*.ProgramGraph.pb`` files (a dataset root: its ``graphs/``)."""
    paths = []
    for path in inputs:
        if os.path.isdir(path):
            directory = os.path.join(path, "graphs") if os.path.isdir(os.path.join(path, "graphs")) else path
            paths.extend(
                sorted(os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".ProgramGraph.pb"))
            )
        else:
            paths.append(path)
    return paths


def run(args: argparse.Namespace) -> int:
    from programl.util.executor import PoolError

    analyses = ANALYSES if args.analysis == "all" else (args.analysis,)
    paths = expand_inputs(args.inputs)
    if not paths:
        return usage_error(args.parser, "no *.ProgramGraph.pb graphs found in the inputs")
    if args.output is None and (len(paths) > 1 or len(analyses) > 1):
        return usage_error(args.parser, "several graphs or analyses need -o DIR")
    if args.max_roots < 1:
        return usage_error(args.parser, "--max-roots must be at least 1")
    fmt = args.format or ("pb" if args.output else "pbtxt")
    if args.output:
        problem = output_directory_problem(args.output)
        if problem:
            return usage_error(args.parser, f"-o {problem}")

    summary = Summary("analyze")
    no_root = {analysis: _read_no_root(args.output, analysis) for analysis in analyses} if args.output else {}
    record = FreshnessRecord(args.output) if args.output else None
    keys: dict[str, str | None] = {}  # label file -> freshness key of its graph and options
    tasks = []
    for path in paths:
        outputs = []
        content = _read(path) if args.output else None  # once for all analyses
        for analysis in analyses:
            if args.output is None:
                outputs.append((analysis, None))
                continue
            output = os.path.join(args.output, "labels", analysis, graph_name(path) + LABEL_SUFFIXES[fmt])
            options = {"command": "analyze", "analysis": analysis, "format": fmt}
            options.update(seed=args.seed, max_roots=args.max_roots)
            keys[output] = None if content is None else freshness_key(content, options, version=__version__)
            if not args.force and record.is_fresh(output, keys[output]):
                summary.skipped += 1
                if not os.path.exists(output):  # fresh without a file: no eligible root
                    no_root[analysis][graph_name(path)] = None
                continue
            outputs.append((analysis, output))
        if outputs:
            tasks.append(Task(path, tuple(outputs), fmt, args.seed, args.max_roots))

    try:
        with worker_outcomes(label_one, tasks, args) as outcomes:
            for outcome in progress(outcomes, len(tasks), "labelling", enabled=not args.quiet):
                if not outcome.ok:
                    summary.fail(outcome.error, outcome.input.path)
                    continue
                for analysis, records, data in outcome.value:
                    output = dict(outcome.input.outputs)[analysis]
                    if isinstance(records, str):
                        notes = summary.notes
                        notes["without an eligible root"] = notes.get("without an eligible root", 0) + 1
                        if args.output:
                            no_root[analysis][graph_name(outcome.input.path)] = None
                            _remove_stale(output)
                            record.add(output, keys[output], made=False)
                        if not args.quiet:
                            print_line(f"{quote_path(outcome.input.path)}: {analysis}: {records} (no label file)")
                        continue
                    summary.add(examples=records)
                    if args.output:
                        no_root[analysis].pop(graph_name(outcome.input.path), None)
                        record.add(output, keys[output])
                    if data is not None:
                        sys.stdout.buffer.write(data)
                        sys.stdout.buffer.flush()
    except KeyboardInterrupt:
        summary.interrupted = True
    except PoolError as error:
        summary.abort(error)
    finally:
        if args.output:
            for analysis, names in no_root.items():
                try:
                    _write_no_root(args.output, analysis, names)
                except OSError as error:  # e.g. a full disk: said on one line; the next run writes it again
                    summary.fail(error, error.filename or os.path.join(args.output, "labels", analysis, NO_ROOT_FILE))
    return finish_batch(summary, record, args, "label files")


def _read(path: str) -> bytes | None:
    """A graph file's bytes for its freshness key; None when it cannot be read (the worker then says why)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _remove_stale(output: str) -> None:
    """Remove the label file an earlier run (other options) left where these options make none."""
    try:
        os.unlink(output)
    except OSError:
        pass


def _read_no_root(directory: str, analysis: str) -> dict[str, str | None]:
    """Graph name -> the no-root list it was recorded in, for one analysis."""
    path = os.path.join(directory, "labels", analysis, NO_ROOT_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            return {line.strip(): path for line in f if line.strip()}
    except OSError:
        return {}


def _write_no_root(directory: str, analysis: str, names: dict[str, str | None]) -> None:
    from programl.util.fs import atomic_write_text

    if names:
        path = os.path.join(directory, "labels", analysis, NO_ROOT_FILE)
        atomic_write_text(path, "".join(f"{name}\n" for name in sorted(names)))
