"""``programl predict dataflow|devmap|classifyapp FILE...``: what a pretrained model says about programs
(docs/spec/tasks.md).

Each input (anything ``programl build`` reads, or a saved ``*.ProgramGraph.pb|pbtxt|json``) is built into a graph in
a worker process (``-j``, ``--timeout``, ``--max-memory``; flags after ``--`` go to clang), as the model's training
graphs were: OpenCL kernels for devmap with the DevMap flags, C/C++ programs for classifyapp with POJ-104's header
and C++11. Then the model predicts:

* ``dataflow``: for each root (``--root N``, ``--roots K``, or the analyses' own sample of
  docs/spec/analyses.md#common-rules, seeded by ``--seed``), the nodes predicted true (id, type, text, probability);
  ``--compare`` adds the exact labels of the analysis. Every analysis with an installed model, or those of
  ``--analysis``.
* ``devmap``: CPU or GPU, with its probability, per platform (``--platform``), given ``--transfer BYTES`` and
  ``--wgsize N`` (default: a DevMap graph's own values, else the medians of the DevMap data: see ``--help``).
* ``classifyapp``: the ``--top`` (5) most likely POJ-104 classes with their probabilities.

The model's step runs in a worker process of its own too, under the same limits (``--timeout`` seconds per input and
step, ``--max-memory``; with a GPU ``--device`` the address-space limit cannot apply to it, as CUDA reserves more
address space than any sensible limit): a prediction that runs too long or needs too much memory fails its input
("timed out after N s", "out of memory") and the batch goes on. The command itself reads only each model's
``model.json`` (checked field by field, :mod:`programl.pretrained.metadata`); the worker reads the weights and the
vocabulary (each a regular file of the size ``model.json`` records, sha256-checked) and builds the networks once,
as a task of its own under the same ``--timeout`` and ``--max-memory``, before the first input: a model directory
whose files block, never end or need too much memory stops the command with one line (exit 1).

A saved graph built by the original ProGraML 0.3.2 (``llvm2graph-10``, the released DeepDataFlow graphs) has LLVM 10
pointer texts (``i32*``, ``struct*``); ``--typed-pointers auto`` (the default) reads each one the model's vocabulary
lacks as LLVM 22 prints it (``ptr``), ``map`` reads every text so, ``keep`` reads them as they are
(:mod:`programl.io.typed_pointers`).

``--json`` prints one JSON object per input (JSON lines). A bad input (one that does not build, an empty graph, a
corrupt one with an edge to a node that does not exist) is reported on one line and the others go on (exit 1); a
missing or damaged model stops the command with one line (exit 1); a bad option (``--model ''`` included) exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from dataclasses import dataclass, field

from programl.cli.common import (
    Summary,
    add_limit_options,
    print_line,
    progress,
    stdout_to_devnull,
    usage_error,
    worker_outcomes,
)
from programl.cli.helptext import SUMMARIES
from programl.tasks.base import TaskSpec
from programl.tasks.registry import TASKS

__all__ = ["add_parser", "run"]

#: What predict reads as a saved graph rather than a program.
GRAPH_MARK = ".ProgramGraph"

#: ``--typed-pointers`` (spelled out: :data:`programl.io.typed_pointers.TYPED_POINTER_MODES` would import the
#: builder's protobufs at start-up; a test keeps the two equal).
TYPED_POINTER_MODES = ("auto", "map", "keep")


def add_parser(subparsers) -> None:
    specs = sorted(TASKS.values(), key=lambda spec: spec.predict_order)  # stable: ties in the registry's order
    parser = subparsers.add_parser(
        "predict",
        help=SUMMARIES["predict"],
        description="What a pretrained model says about programs: the nodes a data-flow analysis labels, the "
        "faster device for an OpenCL kernel, the POJ-104 class of a C/C++ program.",
    )
    tasks = parser.add_subparsers(dest="task", metavar="TASK")
    tasks.required = True
    for spec in specs:
        sub = tasks.add_parser(
            spec.name,
            help=spec.predict_help,
            description=f"Predict {spec.predict_help} with a pretrained model.",
            epilog=spec.predict_examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.add_argument(
            "inputs",
            nargs="+",
            metavar="FILE",
            help="programs (.ll, .bc, .c, .cc, .cl ...), saved graphs (*.ProgramGraph.pb), '-' for IR on stdin",
        )
        spec.add_predict_arguments(sub)
        sub.add_argument(
            "--model",
            type=_not_empty,
            metavar="NAME|DIR",
            help="use this pretrained model (a name or a directory)",
        )
        sub.add_argument(
            "--model-dir",
            type=_not_empty,
            metavar="DIR",
            help="look models up in DIR instead of the package's (programl/pretrained/weights)",
        )
        sub.add_argument(
            "--typed-pointers",
            choices=TYPED_POINTER_MODES,
            default="auto",
            help="graphs built by the original ProGraML 0.3.2 (LLVM 10) say i32*, struct*, [4 x i8*] where the "
            "models' vocabularies say ptr, [4 x ptr]: auto (default) reads such a text the vocabulary lacks in its "
            "LLVM 22 form, map reads every text so, keep reads texts as they are",
        )
        sub.add_argument("--json", action="store_true", help="one JSON object per input (JSON lines)")
        sub.add_argument("--device", default="cpu", help="where the model runs: cpu (default), cuda, cuda:1 ...")
        sub.add_argument(
            "-j",
            "--jobs",
            type=int,
            default=0,
            metavar="N",
            help="worker processes building graphs (default: all CPUs)",
        )
        add_limit_options(sub)
        sub.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
        sub.set_defaults(run=run, parser=sub)


def _not_empty(text: str) -> str:
    """``--model`` / ``--model-dir``: an empty value is a usage error, not the default (the package's models)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty name (give a model's name or directory, or leave the option out)")
    return text


# ---------------------------------------------------------------------------------------------------------------
# Models


def _explicit_choice(args: argparse.Namespace) -> bool:
    """Whether the user named the analyses / platform (then each needs a model), rather than "all there are"
    (:meth:`~programl.tasks.base.TaskSpec.predict_wanted`)."""
    return TASKS[args.task].predict_wanted(args)[1]


def _select_models(args: argparse.Namespace) -> list:
    """The pretrained models to run, or a :class:`~programl.exceptions.ProgramlError` that says why there are none.

    Only their ``model.json`` is read and checked here (:class:`~programl.pretrained.hub.ModelInfo`); the weights and
    the vocabulary are read, and the networks built, in the prediction worker (:func:`load_models`), under
    ``--timeout`` and ``--max-memory``.
    """
    from programl.exceptions import ProgramlError
    from programl.pretrained.hub import find_model, find_pretrained_metadata, pretrained_names

    spec = TASKS[args.task]
    directory = args.model_dir
    if args.model:
        model = find_model(args.model, directory=directory)
        if model.task != args.task:
            raise ProgramlError(f"{args.model}: a {model.task} model, not a {args.task} one")
        spec.check_predict_model(model, args)
        return [model]
    wanted, explicit = spec.predict_wanted(args)
    names, missing = [], []
    for filters in wanted:
        found = find_pretrained_metadata(args.task, directory=directory, **filters)
        if found:  # sorted: the model named after the analysis (the faithful one) before its variants
            names.append(spec.predict_default(list(found), found, args))
        else:
            missing.append(", ".join(map(str, filters.values())))  # "" for the task's one model
    if not names or (explicit and missing):
        installed = pretrained_names(directory)
        what = f"{args.task} model" + (f" for {', '.join(missing)}" if explicit and any(missing) else "")
        listing = f"installed: {', '.join(installed)}" if installed else "none is installed"
        raise ProgramlError(f"no pretrained {what} ({listing}; `programl export-pretrained RUN_DIR` installs one)")
    return [find_model(name, directory=directory) for name in names]


# ---------------------------------------------------------------------------------------------------------------
# Graphs (in worker processes)


@dataclass(frozen=True)
class Input:
    """What a worker needs to make one input's graph."""

    path: str
    data: bytes | None  # stdin
    task: TaskSpec  # pickled as its class: a task registered outside the package works in the worker too
    flags: tuple[str, ...]  # after --
    compile_flags: tuple[str, ...]  # the model's (model.json inputs.flags)
    timeout: float
    fd: int | None = None  # read the input from this inherited descriptor (stdin, /dev/fd/N), in the worker


def make_graph(item: Input) -> bytes:
    """The serialized ``ProgramGraph`` of an input, built as the model's training graphs were (the task's
    :meth:`~programl.tasks.base.TaskSpec.source_graph`, else as ``programl build`` builds it)."""
    from programl.cli.build import Task, build_one
    from programl.graph_builder.llvm import BuildOptions

    path = item.path
    name = os.path.basename(path)
    suffix = os.path.splitext(name)[1].lower()
    if item.data is None and GRAPH_MARK in name:
        from programl.io.files import read_graph

        return read_graph(path).SerializeToString(deterministic=True)
    if item.data is None:
        graph = item.task.source_graph(path, suffix, item.compile_flags, item.flags, item.timeout)
        if graph is not None:
            return graph.SerializeToString(deterministic=True)
    task = Task(path, item.data, None, "pb", None, item.flags, item.timeout, item.fd)
    return build_one(task, BuildOptions())[2]


# ---------------------------------------------------------------------------------------------------------------
# Predictions (in a worker process of their own, under the same limits)

#: The models a prediction worker loaded, by (directory, device): loaded once per worker process.
_LOADED: dict = {}


def _loaded_model(directory: str, device: str):
    """The pretrained model in ``directory`` on ``device``, loaded once per worker process (what a
    :class:`ModelRef` unpickles to)."""
    key = (directory, device)
    if key not in _LOADED:
        from programl.pretrained.hub import pretrained

        try:
            _LOADED[key] = pretrained(directory, device=device)
        except (ImportError, OSError) as error:  # torch's libraries do not map under a small --max-memory
            if _is_allocation_failure(error):
                raise MemoryError() from None
            raise
    return _LOADED[key]


def _import_model_code() -> None:
    """Import the code that loads a model (torch, torch-geometric, the networks, the model zoo)."""
    import programl.pretrained.hub  # noqa: F401


@dataclass(frozen=True)
class ModelCode:
    """Pickled into a :func:`load_models` task: the worker imports the model code as it unpickles the task, before
    the task's timeout starts (as it imports a task's module), so ``--timeout`` bounds the model's files and
    network, not the import of torch on a busy machine."""

    def __reduce__(self):
        return _import_model_code, ()


def load_models(item: tuple) -> int:
    """Load the models of ``item`` (``((directory, device), ...)``, a :class:`ModelCode` and their task's
    :class:`~programl.tasks.base.TaskSpec`) in a prediction worker, as a task of its own, so that ``--timeout`` and
    ``--max-memory`` bound the reading of their files and the building of their networks; the worker keeps them for
    the inputs' tasks (:func:`_loaded_model`). A task the program running ``predict`` registered
    (:func:`~programl.tasks.registry.register_task`) is registered in the worker too, so that it reads the models'
    ``model.json``. Returns how many it loaded."""
    from programl.tasks.registry import register_task

    models, _, spec = item
    if spec.name not in TASKS:
        register_task(spec)
    for directory, device in models:
        _loaded_model(directory, device)
    return len(models)


@dataclass(frozen=True)
class ModelRef:
    """A model the parent checked and loaded, as a prediction worker gets it: pickled as its directory and device,
    it unpickles to the loaded :class:`~programl.pretrained.hub.PretrainedModel` (:func:`_loaded_model`). The worker
    unpickles a task before its timeout starts, so loading torch and the weights is not an input's time."""

    directory: str
    device: str

    def __reduce__(self):
        return _loaded_model, (self.directory, self.device)


@dataclass(frozen=True)
class Request:
    """The options of a prediction (the parts of the command line a worker needs)."""

    task: str
    spec: TaskSpec  # the task's, pickled as its class (a task registered outside the package works in the worker)
    explicit: bool  # the analyses / platform were named (:func:`_explicit_choice`)
    options: dict = field(default_factory=dict)  # of the model's predict (TaskSpec.predict_options)
    notes: bool = True  # say (on stderr) why a model was skipped for an input

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Request:
        return cls(
            task=args.task,
            spec=TASKS[args.task],
            explicit=_explicit_choice(args),
            options={**TASKS[args.task].predict_options(args), "typed_pointers": args.typed_pointers},
            notes=not args.json and not args.quiet,
        )


@dataclass(frozen=True)
class PredictTask:
    """One input's prediction: its serialized graph, the models (:class:`ModelRef`) and the options."""

    path: str
    graph: bytes
    models: tuple
    request: Request


@dataclass
class Predicted:
    """What a prediction worker sends back: the record ``--json`` prints (None when the input failed: ``error``),
    the lines to print on stderr before it (models skipped for the input) and the counts for the summary line."""

    record: dict | None
    messages: list[str] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)
    error: BaseException | None = None


#: What torch, numpy and the dynamic loader say when an allocation fails (they raise RuntimeError or OSError, not
#: MemoryError).
_ALLOCATION_FAILURES = (
    "can't allocate memory",
    "cannot allocate memory",
    "not enough memory",
    "out of memory",
    "failed to map segment",
    "std::bad_alloc",
)


def _is_allocation_failure(error: BaseException) -> bool:
    text = str(error).lower()
    return any(marker in text for marker in _ALLOCATION_FAILURES)


def predict_graph(task: PredictTask) -> Predicted:
    """Every model's prediction on one input's graph (run in a prediction worker). A failed input comes back as
    ``Predicted.error`` with the lines said before it; running out of memory raises :class:`MemoryError` (the pool
    reports it with the limit in force)."""
    from programl.exceptions import ProgramlError
    from programl.proto import ProgramGraph

    graph = ProgramGraph.FromString(task.graph)
    out = Predicted(None)
    try:
        out.record = _predict_one(task.path, graph, task.models, task.request, out)
    except MemoryError:
        raise
    except Exception as error:  # noqa: BLE001 - reported on one line by the parent; the other inputs go on
        if _is_allocation_failure(error) and not isinstance(error, ProgramlError):
            raise MemoryError() from None
        out.error = error
    return out


def _predict_one(path: str, graph, models, request: Request, out: Predicted) -> dict:
    """Every model's prediction on one graph (the record ``--json`` prints)."""
    from programl.tasks.predict import check_graph

    check_graph(graph)  # an empty or corrupt graph fails the input, whatever the models would make of it
    entries = request.spec.predict_entries(path, graph, models, request, out)
    return {"file": path, "task": request.task, "nodes": len(graph.node), "predictions": entries}


@contextlib.contextmanager
def _prediction_pool(args: argparse.Namespace):
    """One worker process for the model's step, under ``--max-memory`` (on the CPU; a GPU device needs more
    address space than any limit, see the module docstring) with ``--timeout`` per input; killed on an exception."""
    import torch

    from programl.util.executor import TimeoutProcessPool

    limit = args.max_memory if torch.device(args.device).type == "cpu" else None
    pool = TimeoutProcessPool(max_workers=1, max_memory=limit)
    completed = False
    try:
        yield pool
        completed = True
    finally:
        if completed:
            pool.shutdown(cancel_futures=True)
        else:
            pool.terminate()


def _load_in_worker(pool, refs: tuple, spec: TaskSpec, timeout: float | None) -> str | None:
    """Load the models in the prediction worker (:func:`load_models`), under ``--timeout`` and ``--max-memory``;
    None when they loaded, else the one line (``error: ...``) that stops the command."""
    from programl.cli.common import describe_error, quote_path
    from programl.exceptions import ProgramlError
    from programl.util.executor import execute_outcomes

    models = tuple((ref.directory, ref.device) for ref in refs)
    (done,) = execute_outcomes(load_models, [(models, ModelCode(), spec)], executor=pool, timeout=timeout)
    if done.ok:
        return None
    text = describe_error(done.error)  # "error: ..."
    if isinstance(done.error, ProgramlError):  # its message names the file
        return text
    where = ", ".join(quote_path(directory) for directory, _ in models)  # timed out, out of memory, crashed
    return text.replace("error: ", f"error: {where}: loading the model: ", 1)


# ---------------------------------------------------------------------------------------------------------------
# Output


def _print_record(record: dict, args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(record, sort_keys=True), flush=True)
        return
    spec = TASKS[args.task]
    lines = []
    for entry in record["predictions"]:
        if "skipped" in entry:
            continue
        lines += spec.predict_text(record["file"], entry["model"], record["nodes"], entry)
    if lines:
        print("\n".join(lines), flush=True)


# ---------------------------------------------------------------------------------------------------------------
# The command


def run(args: argparse.Namespace) -> int:
    from programl.cli.common import EXIT_FAILED, one_line
    from programl.cli.train import describe
    from programl.exceptions import GraphCreationError, ProgramlError
    from programl.graph_builder.clang import check_flags
    from programl.util.executor import PoolError, execute_outcomes

    parser = args.parser
    if args.inputs.count("-") > 1:
        return usage_error(parser, "'-' (stdin) can be given only once")
    if args.jobs < 0:
        return usage_error(parser, "-j must be positive")
    flags = tuple(getattr(args, "extra_args", ()) or ())
    try:
        check_flags(flags)
    except GraphCreationError as error:
        return usage_error(parser, error.message)
    try:
        import torch

        torch.device(args.device)
    except (RuntimeError, ValueError) as error:
        return usage_error(parser, f"--device {args.device}: {one_line(str(error))}")
    try:
        models = _select_models(args)
    except (ProgramlError, OSError) as error:
        print(f"programl predict {args.task}: error: {one_line(describe(error))}", file=sys.stderr)
        return EXIT_FAILED
    compile_flags = tuple(models[0].metadata.get("inputs", {}).get("flags", ()))
    summary = Summary(f"predict {args.task}")
    from programl.cli.build import inherited_fd

    passed: dict[int, bool] = {}  # descriptors the workers inherit -> whether it is a duplicate made here
    tasks = []
    for path in args.inputs:
        inherited = inherited_fd(path) if path == "-" else None  # stdin is read by its worker, under its timeout
        if inherited:
            passed[inherited[0]] = inherited[1]
        data = sys.stdin.buffer.read() if path == "-" and not inherited else None
        fd = inherited[0] if inherited else None
        tasks.append(Input(path, data, TASKS[args.task], flags, compile_flags, args.timeout, fd))
    request = Request.from_args(args)
    refs = tuple(ModelRef(os.path.abspath(model.directory), str(args.device)) for model in models)
    try:
        with _prediction_pool(args) as pool:
            problem = _load_in_worker(pool, refs, TASKS[args.task], args.timeout)
            if problem is not None:  # a damaged or hostile model stops the command, as a missing one does
                print(f"programl predict {args.task}: {problem}", file=sys.stderr)
                return EXIT_FAILED
            with worker_outcomes(make_graph, tasks, args, pass_fds=tuple(passed)) as outcomes:
                for outcome in progress(outcomes, len(tasks), "predicting", enabled=not args.quiet and not args.json):
                    path = outcome.input.path
                    if not outcome.ok:
                        summary.fail(outcome.error, path)
                        continue
                    item = PredictTask(path, outcome.value, refs, request)
                    (done,) = execute_outcomes(predict_graph, [item], executor=pool, timeout=args.timeout)
                    if not done.ok:  # timed out, out of memory, crashed
                        summary.fail(done.error, path)
                        continue
                    result = done.value
                    for line in result.messages:
                        print_line(line)
                    for what, count in result.notes.items():
                        summary.notes[what] = summary.notes.get(what, 0) + count
                    if result.error is not None:
                        summary.fail(result.error, path)
                        continue
                    _print_record(result.record, args)
                    summary.add()
    except KeyboardInterrupt:
        summary.interrupted = True
    except PoolError as error:
        summary.abort(error)
    except BrokenPipeError:  # the reader of stdout went away (`| head`): stop quietly, as a pipeline expects
        stdout_to_devnull()
        return summary.exit_code()
    finally:
        for fd, duplicate in passed.items():
            if duplicate:
                os.close(fd)
    if not args.quiet and (summary.failed or summary.stopped or summary.notes):
        print(summary.line("predicted"), file=sys.stderr)
    return summary.exit_code()
