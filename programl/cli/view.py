"""``programl view FILE... -o DIR``: one self-contained HTML page per input, to look into its graph in a browser.

Each input (a program ``programl build`` reads, or a saved ``*.ProgramGraph.pb|pbtxt|json``) becomes
``DIR/<name>.html``: the graph with ProGraML's colours and shapes, one frame per function with its basic blocks along
the control flow; fold and unfold functions, zoom, search nodes by text, filter by flow; a node's text, full text and
source line (sources are compiled with ``-g`` for it). With ``--analysis``, pick a root and see the exact labels
beside a pretrained model's predictions, its mistakes highlighted. The page needs no network: its script is inlined.

The page is made to be shared, and debug information can name any file: source lines come only from the input
itself, the files below its directory and those below a ``--source-root DIR``; never from /proc, /sys or /dev, a
hidden file or directory, a FIFO or device, a symbolic link out of those directories, or a file over 16 MiB. The
files not embedded are named on one line of stderr, with why.

Graphs are built in worker processes (``-j``) under ``--timeout`` and ``--max-memory``, as ``programl build`` builds
them. With a model, the labels and predictions of each input are computed in a worker process of their own, under
the same limits, as ``programl predict`` runs its model: an input whose model step runs too long or needs too much
memory fails on one line ("timed out after N s", "out of memory") and gets no page. A bad input is reported on one
line and the others go on (exit 1); a missing model stops the command with one line (exit 1).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from dataclasses import dataclass
from typing import Any

from programl.cli.common import Summary, add_limit_options, print_line, progress, usage_error, worker_outcomes
from programl.cli.helptext import SUMMARIES, description
from programl.dataflow.names import ANALYSES

__all__ = ["add_parser", "output_name", "run"]

EXAMPLES = """\
examples:
  programl view examples/fizzbuzz.c -o out/view                  out/view/fizzbuzz.html
  programl view examples/fizzbuzz.c --analysis reachability      labels and the bundled model's predictions
  programl view big.ll --analysis liveness --no-model --roots 20 exact labels of 20 sampled roots
  programl view out/*.ProgramGraph.pb -o pages -j 2
  programl view build/foo.ll --source-root src                   source lines from src/ too
"""

#: Suffixes dropped from an input's name to name its page.
_SUFFIXES = (".ProgramGraph.pb", ".ProgramGraph.pbtxt", ".ProgramGraph.json", ".ProgramGraph.pb.gz", ".gz")


def add_parser(subparsers) -> None:
    from programl.view import DEFAULT_MAX_ROOTS, EXPAND_LIMIT, ROOT_BUDGET

    parser = subparsers.add_parser(
        "view",
        help=SUMMARIES["view"],
        description=description(__doc__),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "inputs", nargs="+", metavar="FILE", help="programs (.c, .cc, .cl, .cu, .f90, .ll, .bc ...) or saved graphs"
    )
    parser.add_argument("-o", "--output", metavar="DIR", default=".", help="write DIR/<name>.html (default: .)")
    parser.add_argument("--analysis", choices=ANALYSES, help="label roots with this data-flow analysis")
    parser.add_argument(
        "--model",
        metavar="NAME|DIR",
        help="with --analysis: the pretrained model whose predictions to show (default: the one programl predict "
        "runs for the analysis: its fixed-point or step-free variant where one is installed, else its faithful model)",
    )
    parser.add_argument("--no-model", action="store_true", help="with --analysis: the exact labels only")
    parser.add_argument(
        "--root", type=int, action="append", metavar="N", help="label this root (repeat for more; default: sampled)"
    )
    parser.add_argument(
        "--roots",
        type=int,
        metavar="K",
        help=f"label every eligible root if there are at most K, else a seeded sample of K (default: "
        f"{DEFAULT_MAX_ROOTS}, fewer on large graphs: at most {ROOT_BUDGET:,} nodes in all, at least 10 roots)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the root sample (default: 0)")
    parser.add_argument(
        "--expand",
        choices=("auto", "all", "none"),
        default="auto",
        help=f"functions unfolded when the page opens (auto: all for graphs of at most {EXPAND_LIMIT:,} nodes)",
    )
    parser.add_argument(
        "--no-debug-info", action="store_true", help="compile sources without -g (the page shows no source lines)"
    )
    parser.add_argument(
        "--source-root",
        action="append",
        metavar="DIR",
        help="also embed the source lines of files below DIR (repeat for more; default: only the input and the "
        "files below its directory, never /proc, /sys, /dev, hidden files, FIFOs, devices, links out of these "
        "directories or files over 16 MiB)",
    )
    parser.add_argument("-j", "--jobs", type=int, default=0, metavar="N", help="worker processes (default: all CPUs)")
    add_limit_options(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    parser.set_defaults(run=run, parser=parser)


def output_name(path: str) -> str:
    """The page's file name for input ``path``: its base name without the graph or source suffix, plus ``.html``."""
    name = os.path.basename(path)
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)] + ".html"
    stem, _ = os.path.splitext(name)
    return (stem or name) + ".html"


def _graph_of(path: str, flags: tuple[str, ...], debug_info: bool, timeout: float, source_root: tuple[str, ...] = ()):
    """The serialized graph of ``path`` and its source locations (run in a worker)."""
    from programl.view.inputs import read_input

    graph, locations = read_input(path, flags, debug_info=debug_info, timeout=timeout, source_root=source_root)
    return graph.SerializeToString(deterministic=True), locations


@dataclass(frozen=True)
class LabelTask:
    """One input's labels and predictions, as the prediction worker gets them: its serialized graph, the model (a
    :class:`programl.cli.predict.ModelRef`: loaded once per worker, before the input's time starts) and the roots."""

    graph: bytes
    analysis: str
    model: Any
    roots: tuple[int, ...] | None
    max_roots: int | None
    seed: int


def label_graph(task: LabelTask) -> dict:
    """:func:`programl.view.page.analysis_data` of one input (run in the prediction worker, under ``--timeout``
    and ``--max-memory``); an allocation that fails raises :class:`MemoryError`, which the pool reports with the
    limit in force."""
    from programl.cli.predict import _is_allocation_failure
    from programl.exceptions import ProgramlError
    from programl.proto import ProgramGraph
    from programl.view.page import analysis_data

    graph = ProgramGraph.FromString(task.graph)
    try:
        return analysis_data(
            graph, task.analysis, model=task.model, roots=task.roots, max_roots=task.max_roots, seed=task.seed
        )
    except (MemoryError, ProgramlError):
        raise
    except Exception as error:
        if _is_allocation_failure(error):
            raise MemoryError() from None
        raise


def _not_embedded_line(path: str, locations) -> str | None:
    """One line naming the source files whose lines the page of ``path`` does not hold, and why (None: none)."""
    from programl.cli.common import one_line, quote_path

    if not locations.not_embedded:
        return None
    shown = 5
    named = [f"{quote_path(name)} ({why})" for name, why in list(locations.not_embedded.items())[:shown]]
    more = len(locations.not_embedded) - shown
    if more > 0:
        named.append(f"{more} more")
    return one_line(
        f"programl view: {quote_path(path)}: source lines not embedded from {', '.join(named)}; --source-root DIR "
        "allows the files below DIR"
    )


def _load_model(args: argparse.Namespace):
    """The pretrained model of ``--analysis`` (None for the exact labels only); a ProgramlError says why not."""
    from programl import _ml_message, _ml_missing
    from programl.exceptions import ProgramlError

    if not args.analysis or args.no_model:
        return None
    missing = _ml_missing()
    if missing:
        if args.model:
            raise ProgramlError(_ml_message("--model", missing))
        if not args.quiet:
            print(f"programl view: {_ml_message('a model', missing)}; showing the exact labels only", file=sys.stderr)
        return None
    from programl.pretrained.hub import default_pretrained, pretrained

    if args.model:
        return pretrained(args.model)
    # what `programl predict` runs: the fixed-point or step-free variant where one is installed
    name = default_pretrained("dataflow", analysis=args.analysis)
    if name is None:
        if not args.quiet:
            print(f"programl view: no pretrained {args.analysis} model; showing the exact labels only", file=sys.stderr)
        return None
    return pretrained(name)


@dataclass(frozen=True)
class _LabelPool:
    """The prediction worker of ``programl predict`` and the model it runs."""

    executor: Any
    model: Any  # programl.cli.predict.ModelRef


@contextlib.contextmanager
def _label_pool(args: argparse.Namespace, model):
    """The worker process the model's step runs in (``programl predict``'s, under ``--timeout`` per input and
    ``--max-memory``, on the CPU), or None without a model (the exact labels are computed here: at most
    :data:`programl.view.ROOT_BUDGET` nodes' labels by default)."""
    if model is None:
        yield None
        return
    from programl.cli.predict import ModelRef, _prediction_pool

    limits = argparse.Namespace(device="cpu", max_memory=args.max_memory)
    with _prediction_pool(limits) as executor:
        yield _LabelPool(executor, ModelRef(os.path.abspath(model.directory), "cpu"))


def _roots(roots: list[int] | None) -> tuple[int, ...] | None:
    return None if roots is None else tuple(roots)


def run(args: argparse.Namespace) -> int:
    from programl.exceptions import GraphCreationError, ProgramlError
    from programl.graph_builder.clang import check_flags
    from programl.proto import ProgramGraph
    from programl.util.executor import PoolError
    from programl.util.fs import output_directory_problem

    parser = args.parser
    if args.jobs < 0:
        return usage_error(parser, "-j must be positive")
    if args.roots is not None and args.roots < 1:
        return usage_error(parser, "--roots must be a positive integer")
    if args.seed < 0:
        return usage_error(parser, "--seed must be >= 0")
    if (args.model or args.no_model or args.root) and not args.analysis:
        return usage_error(parser, "--model, --no-model and --root need --analysis")
    if args.model and args.no_model:
        return usage_error(parser, "--model and --no-model exclude each other")
    flags = tuple(getattr(args, "extra_args", ()) or ())
    try:
        check_flags(flags)
    except GraphCreationError as error:
        return usage_error(parser, error.message)
    problem = output_directory_problem(args.output)
    if problem:
        return usage_error(parser, f"-o {problem}")
    source_root = tuple(args.source_root or ())
    for root in source_root:
        if not os.path.isdir(root):
            return usage_error(parser, f"--source-root {root}: not a directory")
    outputs: dict[str, str] = {}
    summary = Summary("view")
    inputs = []
    for path in args.inputs:
        output = os.path.join(args.output, output_name(path))
        if output in outputs:
            summary.fail(GraphCreationError(f"output {output} is also the output of {outputs[output]}"), path)
            continue
        outputs[output] = path
        inputs.append(path)
    try:
        model = _load_model(args)
    except ProgramlError as error:
        print(f"programl view: error: {error}", file=sys.stderr)
        return 1
    from programl.util.executor import execute_outcomes
    from programl.view import write_html

    work = functools.partial(
        _graph_of, flags=flags, debug_info=not args.no_debug_info, timeout=args.timeout, source_root=source_root
    )
    expand = None if args.expand == "auto" else args.expand
    try:
        with worker_outcomes(work, inputs, args) as outcomes, _label_pool(args, model) as pool:
            for outcome in progress(outcomes, len(inputs), "viewing", enabled=not args.quiet):
                path = outcome.input
                if not outcome.ok:
                    summary.fail(outcome.error, path)
                    continue
                data, locations = outcome.value
                note = _not_embedded_line(path, locations)
                if note:
                    print_line(note)
                graph = ProgramGraph.FromString(data)
                labels = None
                if pool is not None:  # the model's step: in its worker, under --timeout and --max-memory
                    task = LabelTask(data, args.analysis, pool.model, _roots(args.root), args.roots, args.seed)
                    (done,) = execute_outcomes(label_graph, [task], executor=pool.executor, timeout=args.timeout)
                    if not done.ok:  # timed out, out of memory, crashed, or the analysis refused the graph
                        summary.fail(done.error, path)
                        continue
                    labels = done.value
                output = os.path.join(args.output, output_name(path))
                try:
                    size = write_html(
                        output,
                        graph,
                        title=path,
                        analysis=args.analysis if labels is None else None,
                        roots=args.root,
                        max_roots=args.roots,
                        seed=args.seed,
                        locations=locations,
                        expand=expand,
                        labels=labels,
                    )
                except (ProgramlError, OSError) as error:
                    summary.fail(error, path)
                    continue
                summary.add(nodes=len(graph.node), bytes=size)
                if not args.quiet:
                    print(output)
    except KeyboardInterrupt:
        summary.interrupted = True
    except PoolError as error:
        summary.abort(error)
    if not args.quiet or summary.failed or summary.stopped:
        print(summary.line("pages"), file=sys.stderr)
    return summary.exit_code()
