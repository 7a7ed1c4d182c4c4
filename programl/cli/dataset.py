"""``programl dataset``: build and inspect DeepDataFlow data sets (docs/spec/datasets.md#deepdataflow-layout,
docs/spec/datasets.md#builds).

* ``programl dataset build SOURCES... OUT``: compile C/C++/OpenCL sources (or take ``.ll``/``.bc``), build graphs,
  label them with the five analyses, split 3:1:1 by source program (seeded) and build the training vocabulary, in the
  DeepDataFlow layout with a ``manifest.jsonl``. ``--recipe FILE`` builds a recipe's sources instead (e.g.
  ``datasets/deepdataflow22/recipe.json``), ``--size N`` a small version of it. Parallel (``-j``, or a dask
  scheduler with ``--dask``), a timeout per input, atomic writes, resumable (a rerun skips finished inputs), a
  progress bar; failures are recorded in the manifest and counted (exit code 1), never fatal.
* ``programl dataset info DIR``: graphs, examples per analysis and split (and within 30/60/200 steps), failures.
* ``programl dataset prepare DIR``: convert splits to the memory-mapped PyG form ahead of training.
* ``programl dataset convert DIR --label-format compact|protobuf``: rewrite a data set's label files in the other
  form, in place (``compact``: one small file per graph, the builder's default; ``protobuf``: the original's
  ``ProgramGraphFeaturesList`` per graph and analysis, byte-identical to a protobuf build).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections import Counter

from programl.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    add_limit_options,
    describe_error,
    one_line,
    print_line,
    quote_path,
    usage_error,
)
from programl.cli.helptext import SUMMARIES, description
from programl.dataflow.names import ANALYSES
from programl.util.fs import output_directory_problem

__all__ = ["add_parser", "run"]

#: :data:`programl.data.deepdataflow.layout.LABEL_FORMATS`, not imported here (it would import the builder at start-up)
LABEL_FORMATS = ("compact", "protobuf")

EXAMPLES = """\
examples:
  programl dataset build src/ out/ddf -O0 -O2 -j 2             every .c/.cc/.cl/.ll under src/, two settings
  programl dataset build a.c b.ll out/ddf -- -DN=4             flags after -- go to clang
  programl dataset build --recipe datasets/deepdataflow22/recipe.json --data ../shared/data out/ddf22 --size 50
  programl dataset info out/ddf22
  programl dataset prepare out/ddf22 --analysis reachability -j 2
  programl dataset convert out/ddf22 --label-format protobuf  the original's label files (for ProGraML's tools)
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "dataset",
        help=SUMMARIES["dataset"],
        description=description(__doc__),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="dataset_command", metavar="COMMAND")
    sub.required = True

    build = sub.add_parser(
        "build",
        help="compile, build, label, split",
        description="Compile sources (or take IR), build graphs, label them with the five analyses, split them 3:1:1\n"
        "by source program and build the training vocabulary, in the DeepDataFlow layout.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build.add_argument("paths", nargs="+", metavar="PATH", help="SOURCES... OUT: inputs (files, directories), then OUT")
    build.add_argument("--recipe", metavar="FILE", help="build a recipe's sources (then SOURCES are not given)")
    build.add_argument(
        "--data",
        metavar="DIR",
        help="where the recipe's sources are (default: $PROGRAML_SHARED_DATA, else ../shared/data)",
    )
    build.add_argument("--size", type=int, metavar="N", help="at most N source programs per recipe source")
    build.add_argument(
        "-O",
        dest="settings",
        action="append",
        metavar="LEVEL",
        help="an optimisation setting: -O0, -O2, -Os, -O '3 -ffast-math' (repeatable; default -O0)",
    )
    build.add_argument("--analyses", nargs="+", choices=ANALYSES, metavar="A", help="analyses (default: all five)")
    build.add_argument("--seed", type=int, help="seed of the root samples and of the split (default: 204)")
    build.add_argument("--max-roots", type=int, metavar="N", help="most label records per graph (default: 10)")
    build.add_argument(
        "--label-format",
        choices=LABEL_FORMATS,
        default="compact",
        help="compact: labels/all/<name>.DataFlowLabels.bin, one small file per graph (default); protobuf: the "
        "original's labels/<analysis>/<name>.ProgramGraphFeaturesList.pb (label files of finished inputs in the "
        "other form are converted)",
    )
    build.add_argument("-j", "--jobs", type=int, default=0, metavar="N", help="worker processes (default: all CPUs)")
    build.add_argument("--dask", metavar="ADDRESS", help="run on a dask scheduler (tcp://host:port, or 'local')")
    add_limit_options(build)
    build.add_argument("--retry-failed", action="store_true", help="retry inputs whose last build failed")
    build.add_argument("--force", action="store_true", help="rebuild inputs that are up to date")
    build.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no per-input errors")
    build.set_defaults(run=run, parser=build)

    info = sub.add_parser("info", help="what a data set holds", description="Graphs, examples and failures.")
    info.add_argument("root", metavar="DIR", help="a data set (the OUT of programl dataset build)")
    info.set_defaults(run=run, parser=info)

    prepare = sub.add_parser(
        "prepare", help="convert to the PyG form", description="Convert splits to the memory-mapped PyG form."
    )
    prepare.add_argument("root", metavar="DIR", help="a data set (the OUT of programl dataset build)")
    prepare.add_argument(
        "--analysis",
        nargs="+",
        choices=ANALYSES,
        default=list(ANALYSES),
        metavar="A",
        help=f"analyses to prepare (default: all five: {', '.join(ANALYSES)})",
    )
    prepare.add_argument(
        "--split", nargs="+", default=["train", "val", "test"], metavar="S", help="splits (default: train val test)"
    )
    prepare.add_argument("--processed-dir", metavar="DIR", help="where the PyG form goes (default: DIR/processed)")
    prepare.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="worker processes (default: 1)")
    prepare.add_argument("--force", action="store_true", help="convert again even when a converted split is current")
    prepare.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no line per split")
    prepare.set_defaults(run=run, parser=prepare)

    convert = sub.add_parser(
        "convert",
        help="label files to the other form",
        description="Rewrite the label files of a data set in place: compact (one small file per graph, the "
        "builder's default) or protobuf (the original's ProgramGraphFeaturesList per graph and analysis, "
        "byte-identical to a protobuf build). Resumable: graphs already converted are left alone.",
    )
    convert.add_argument("root", metavar="DIR", help="a data set")
    convert.add_argument("--label-format", required=True, choices=LABEL_FORMATS, help="the form to write")
    convert.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="worker processes (default: 1)")
    convert.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    convert.set_defaults(run=run, parser=convert)
    parser.set_defaults(parser=parser)


def run(args: argparse.Namespace) -> int:
    """Run ``programl dataset build|info|prepare``."""
    commands = {"build": run_build, "info": run_info, "prepare": run_prepare, "convert": run_convert}
    return commands[args.dataset_command](args)


def _progress(enabled: bool):
    if not enabled:
        return None

    def wrap(items, total, description):
        from programl.cli.common import progress

        return progress(items, total, description)

    return wrap


def _ignore_ctrl_c_plugin():
    """A dask worker plugin: the worker process ignores SIGINT (the driver of a local cluster handles Ctrl-C).
    Defined here, so that importing this module does not import dask; dask sends it to the workers by value."""
    from distributed import WorkerPlugin

    class IgnoreCtrlC(WorkerPlugin):
        def setup(self, worker) -> None:
            import signal

            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            except ValueError:  # not the worker's main thread: it keeps Python's handler
                pass

    return IgnoreCtrlC()


def _dask_executor(address: str, jobs: int):
    """``(executor, closer)`` for a dask scheduler address, or a local cluster of ``jobs`` worker processes.

    dask's own logging is silenced (a lost worker, or a Ctrl-C that cancels the running tasks, made it print
    several lines with tracebacks and task keys, some after the command's summary); a worker that dies while the
    build runs (``kill -9``, the kernel's OOM killer) is said on one line instead, and dask runs its inputs again.
    ``closer`` closes the client (and the local cluster) without a word, and is safe to call twice.
    """
    import logging

    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise SystemExit(
            "programl dataset build: --dask needs dask[distributed] (pip install 'programl[cluster]')"
        ) from None
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    cluster = None
    if address == "local":
        # A terminal's Ctrl-C goes to the whole process group: the driver stops the build and closes the cluster;
        # its workers (and the compilers they start) ignore it, rather than each print a KeyboardInterrupt
        # traceback or fail the input they were compiling. Workers started now inherit the ignored signal; the
        # plugin covers those a nanny restarts later.
        import signal

        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            cluster = LocalCluster(
                n_workers=jobs or os.cpu_count() or 1,
                threads_per_worker=1,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            )
            client = Client(cluster)
            client.register_plugin(_ignore_ctrl_c_plugin(), name="programl-ignore-ctrl-c")
        finally:
            signal.signal(signal.SIGINT, previous)
    else:
        client = Client(address)
    closing = False

    def on_event(event) -> None:
        _, message = event
        if closing or not isinstance(message, dict) or message.get("action") != "remove-worker":
            return
        if message.get("expected"):  # retired on purpose (adaptive scaling)
            return
        lost = len(message.get("processing-tasks") or ()) + len(message.get("lost-computed-tasks") or ())
        print_line(
            f"programl dataset build: warning: dask worker {message.get('worker', '?')} died; "
            f"{lost} input{'' if lost == 1 else 's'} in flight on it will run again"
        )

    try:
        client.subscribe_topic("all", on_event)
    except Exception:  # noqa: BLE001 - an older scheduler: dask's own recovery still runs, unannounced
        pass

    def close() -> None:
        nonlocal closing
        if closing:
            return
        closing = True
        try:
            client.unsubscribe_topic("all")  # else the scheduler logs that it cannot tell a closed client it closed
        except Exception:  # noqa: BLE001
            pass
        try:
            client.close()
            if cluster is not None:
                cluster.close()
        except Exception:  # noqa: BLE001 - the build is over; a cluster that does not close cleanly says nothing
            pass

    return client.get_executor(), close


def run_build(args: argparse.Namespace) -> int:
    from programl.data.deepdataflow.builder import build_dataset
    from programl.data.deepdataflow.inputs import discover_inputs
    from programl.exceptions import ProgramlError

    parser = args.parser
    *sources, output = args.paths
    if args.recipe and sources:
        return usage_error(parser, "give either SOURCES or --recipe, not both")
    if not args.recipe and not sources:
        return usage_error(parser, "no SOURCES given (or use --recipe FILE)")
    if args.jobs < 0:
        return usage_error(parser, "-j must be positive")
    if args.size is not None and args.size < 1:
        return usage_error(parser, "--size must be at least 1")
    recipe = None
    if args.recipe:  # a received recipe is checked whole before OUT is made or anything is fetched
        from programl.data.deepdataflow.recipe import load_recipe

        try:
            recipe = load_recipe(args.recipe)
        except ProgramlError as error:
            print(f"programl dataset build: error: {error}", file=sys.stderr)
            return EXIT_FAILED
    problem = output_directory_problem(output)
    if problem:
        return usage_error(parser, f"OUT {problem}")
    flags = tuple(getattr(args, "extra_args", ()) or ())
    settings = [tuple((s if s.startswith("-") else "-O" + s).split()) for s in args.settings or ["0"]]
    options: dict = {}
    try:
        if recipe is not None:
            from programl.data.deepdataflow.recipe import recipe_inputs, recipe_settings
            from programl.data.download import shared_data

            data = args.data or shared_data("")
            if not data:
                return usage_error(
                    parser,
                    "--recipe needs --data DIR (where its sources are; no $PROGRAML_SHARED_DATA or ../shared/data)",
                )
            options.update(recipe_settings(recipe))
            inputs = recipe_inputs(recipe, data, os.path.join(output, "sources"), size=args.size)
        else:
            inputs = discover_inputs(sources, settings, flags)
    except ProgramlError as error:
        print(f"programl dataset build: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as error:  # extracting a recipe's sources into OUT/sources (e.g. a full disk)
        where = error.filename or os.path.join(output, "sources")
        print(f"programl dataset build: {describe_error(error, where)}", file=sys.stderr)
        return EXIT_FAILED
    for key in ("seed", "max_roots"):
        if getattr(args, key) is not None:
            options[key] = getattr(args, key)
    if args.analyses:
        options["analyses"] = tuple(args.analyses)
    if not inputs:
        return usage_error(parser, "no inputs found")

    executor, close = (None, None)
    if args.dask:
        executor, close = _dask_executor(args.dask, args.jobs)

    sources = {item.name: item.source or item.path or item.name for item in inputs}
    settings_of = Counter(sources.values())

    def report_failure(name: str, error: BaseException) -> None:
        """One line, as ``programl build`` says it: ``file:line:col: error: message`` (the input's name added when
        one source gives several inputs)."""
        if args.quiet:
            return
        from programl.exceptions import GraphCreationError

        where = sources.get(name, name)
        written = getattr(error, "filename", None) if isinstance(error, OSError) else None
        if written and os.path.abspath(written).startswith(os.path.abspath(output) + os.sep):
            # the data set could not be written (not the input read): the line names the output file
            if isinstance(error, FileExistsError):  # a file where a folder of the data set belongs
                error = NotADirectoryError(errno.ENOTDIR, "a file stands where a folder of the data set belongs")
            print_line(f"{describe_error(error, written)} (writing the data set) [{name}]")
            return
        if isinstance(error, GraphCreationError) and error.path in (None, "-", "<stdin>"):  # compiled from memory
            error = GraphCreationError(error.message, where, error.line, error.column)
        line = describe_error(error, where)
        print_line(f"{line} [{name}]" if settings_of[where] > 1 else line)

    counts: Counter = Counter()  # what finished, for the summary of an interrupted build

    def count(entry: dict) -> None:
        counts[entry.get("status")] += 1

    from programl.util.executor import PoolError

    try:
        report = build_dataset(
            inputs,
            output,
            jobs=args.jobs or None,
            timeout=args.timeout,
            max_memory=args.max_memory,
            executor=executor,
            retry_failed=args.retry_failed,
            force=args.force,
            label_format=args.label_format,
            progress=_progress(not args.quiet),
            on_entry=count,
            on_failure=report_failure,
            **options,
        )
    except (KeyboardInterrupt, PoolError) as error:
        interrupted = isinstance(error, KeyboardInterrupt)
        if close is not None:  # dask's workers stop before the summary, which stays the last line
            close()
        if not interrupted:
            print(one_line(f"programl dataset build: error: {error}"), file=sys.stderr)
        if not args.quiet or not interrupted:
            print(
                f"programl dataset build: {counts['ok']:,} built, {counts['failed']:,} failed, "
                f"{'interrupted' if interrupted else 'stopped'} (a rerun resumes; finished inputs are in "
                f"{os.path.join(output, 'manifest.jsonl')})",
                file=sys.stderr,
            )
        return EXIT_INTERRUPTED if interrupted else EXIT_FAILED
    finally:
        if close is not None:
            close()
    for error in report.errors:  # the data set's own files (a full disk): what the next run has to redo
        line = describe_error(error, error.filename)
        print(line if error.filename else f"programl dataset build: {line}", file=sys.stderr)
    if not args.quiet:
        examples = ", ".join(f"{a} {sum(s.values()):,}" for a, s in report.examples.items())
        splits = "/".join(f"{report.splits.get(s, 0):,}" for s in ("train", "val", "test"))
        print(
            f"programl dataset build: {report.summary()}; "
            f"graphs train/val/test {splits}; examples {examples}; vocabulary {report.vocabulary_size}",
            file=sys.stderr,
        )
    return report.exit_code


def run_info(args: argparse.Namespace) -> int:
    from programl.data.deepdataflow.layout import Layout

    layout = Layout(args.root)
    if not layout.graphs_dir.is_dir():
        return usage_error(args.parser, f"{args.root} is not a DeepDataFlow data set (no graphs/ directory)")
    import contextlib
    import io

    report = io.StringIO()  # the whole report, written once the data set has been read
    try:
        with contextlib.redirect_stdout(report):
            _print_info(layout)
    except Exception as error:  # noqa: BLE001 - a damaged manifest or vocabulary is one line, not a traceback
        reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        print(one_line(f"programl dataset info: error: {args.root}: a damaged data set ({reason})"), file=sys.stderr)
        return EXIT_FAILED
    sys.stdout.write(report.getvalue())
    return EXIT_OK


def _print_info(layout) -> None:
    from programl.data.deepdataflow.layout import SPLITS, read_manifest

    entries = read_manifest(layout.manifest)
    split_of = {}
    for split in SPLITS:
        try:
            for name in layout.split_names(split):
                split_of[name] = split
        except FileNotFoundError:
            pass
    print(f"{layout.root}: {len(layout.graph_names()):,} graphs")
    print("graphs      " + "".join(f"{s:>10}" for s in SPLITS))
    print("            " + "".join(f"{sum(1 for v in split_of.values() if v == s):>10,}" for s in SPLITS))
    if entries:
        print(f"\nexamples (label records; within 30 / 60 / 200 steps) from {layout.manifest.name}")
        print(f"{'analysis':<16}" + "".join(f"{s:>34}" for s in SPLITS))
        for analysis in ANALYSES:
            cells = []
            for split in SPLITS:
                steps = [
                    s
                    for name, e in entries.items()
                    if split_of.get(name) == split and e.get("status") == "ok"
                    for s in ((e.get("labels") or {}).get(analysis) or {}).get("steps", ())
                ]
                within = " / ".join(f"{sum(1 for s in steps if s <= t):,}" for t in (30, 60, 200))
                cells.append(f"{len(steps):,} ({within})")
            print(f"{analysis:<16}" + "".join(f"{c:>34}" for c in cells))
        failed = [e for e in entries.values() if e.get("status") == "failed"]
        print(f"\ninputs: {len(entries):,} in the manifest, {len(failed):,} failed")
        reasons = Counter((e.get("error") or "").split(": ")[-1][:80] for e in failed)
        for reason, count in reasons.most_common(5):
            print(f"  {count:>6,}  {reason}")
    else:
        from programl.data.deepdataflow.labels import labelled_names

        for analysis in ANALYSES:
            print(f"{analysis:<16}{len(labelled_names(layout, analysis)):>10,} graphs with labels")
    if layout.vocabulary.is_file():
        from programl.data.vocabulary import Vocabulary

        print(f"vocabulary: {len(Vocabulary.load(layout.vocabulary)):,} texts ({layout.vocabulary})")


def run_prepare(args: argparse.Namespace) -> int:
    from programl.data.deepdataflow import Layout
    from programl.data.deepdataflow.labels import label_file
    from programl.data.deepdataflow.store import prepare_split
    from programl.exceptions import ProgramlError

    if args.jobs < 1:
        return usage_error(args.parser, "-j must be at least 1")
    bad = [split for split in args.split if not split or os.sep in split or split in (".", "..")]
    if bad:
        return usage_error(args.parser, f"--split {bad[0]!r}: a split is a directory name of the data set")
    layout = Layout(args.root)
    failed = 0
    reported: set[str] = set()  # a graph that cannot be read is said once, not once per analysis
    for split in args.split:
        for analysis in args.analysis:
            try:
                graphs, labels = prepare_split(
                    args.root,
                    analysis,
                    split,
                    processed_dir=args.processed_dir,
                    jobs=args.jobs,
                    progress=_progress(not args.quiet),
                    force=args.force,
                )
                skipped = [(layout.resolve_graph(split, n), why) for n, why in _skipped(graphs).items()]
                skipped += [(label_file(layout, analysis, n), why) for n, why in _skipped(labels).items()]
            except (OSError, ValueError, ProgramlError) as error:
                print(one_line(f"programl dataset prepare: error: {error}"), file=sys.stderr)
                return EXIT_FAILED
            for path, why in skipped:  # left out of the store (meta.json lists them too); the others are in it
                failed += 1
                if str(path) not in reported and not args.quiet:
                    print(one_line(f"{quote_path(str(path))}: error: {why}"), file=sys.stderr)
                reported.add(str(path))
            if not args.quiet:
                print(f"{split} {analysis}: {labels}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


def _skipped(store) -> dict[str, str]:
    """The files a store left out, and why (its ``meta.json``'s ``skipped``)."""
    import json

    meta = json.loads((store / "meta.json").read_text(encoding="utf-8"))
    return dict(meta.get("skipped") or {})


def run_convert(args: argparse.Namespace) -> int:
    from programl.data.deepdataflow import Layout
    from programl.data.deepdataflow.labels import LabelWriteError, convert_labels

    if args.jobs < 1:
        return usage_error(args.parser, "-j must be at least 1")
    layout = Layout(args.root)
    if not layout.graphs_dir.is_dir():
        return usage_error(args.parser, f"{args.root} is not a DeepDataFlow data set (no graphs/ directory)")
    try:
        failed = convert_labels(args.root, args.label_format, jobs=args.jobs, progress=_progress(not args.quiet))
    except OSError as error:  # a label directory that cannot be listed or written
        print(one_line(f"programl dataset convert: {describe_error(error, error.filename)}"), file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("programl dataset convert: interrupted (a rerun resumes)", file=sys.stderr)
        return EXIT_INTERRUPTED
    for name, error in failed.items():  # each names its file (and, when not written, the operating system's reason)
        print(one_line(f"{quote_path(name)}: error: {type(error).__name__}: {error}"), file=sys.stderr)
    if not args.quiet:
        unwritten = [error for error in failed.values() if isinstance(error, LabelWriteError)]
        unread = len(failed) - len(unwritten)
        print(
            one_line(
                f"programl dataset convert: labels of {args.root} are {args.label_format}"
                + (f"; {unread:,} graphs could not be read and were left as they were" if unread else "")
                + (
                    f"; {len(unwritten):,} graphs could not be written and were left as they were (the first: "
                    f"{unwritten[0]})"
                    if unwritten
                    else ""
                )
            ),
            file=sys.stderr,
        )
    return EXIT_FAILED if failed else EXIT_OK
