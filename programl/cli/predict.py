"""``programl predict dataflow|devmap|classifyapp FILE...``: what a pretrained model says about programs (issue 11
item 6; SPEC §6.1, §6.5, §6.6).

Each input (anything ``programl build`` reads, or a saved ``*.ProgramGraph.pb|pbtxt|json``) is built into a graph in
a worker process (``-j``, ``--timeout``, ``--max-memory``; flags after ``--`` go to clang), as the model's training
graphs were: OpenCL kernels for devmap with the DevMap flags, C/C++ programs for classifyapp with POJ-104's header
and C++11. Then the model predicts:

* ``dataflow``: for each root (``--root N``, ``--roots K``, or the analyses' own sample of SPEC §4.1, seeded by
  ``--seed``), the nodes predicted true (id, type, text, probability); ``--compare`` adds the exact labels of the
  analysis. Every analysis with an installed model, or those of ``--analysis``.
* ``devmap``: CPU or GPU, with its probability, per platform (``--platform``), given ``--transfer BYTES`` and
  ``--wgsize N`` (default: a DevMap graph's own values, else the medians of the DevMap data: see ``--help``).
* ``classifyapp``: the ``--top`` (5) most likely POJ-104 classes with their probabilities.

The model's step runs in a worker process of its own too, under the same limits (``--timeout`` seconds per input and
step, ``--max-memory``; with a GPU ``--device`` the address-space limit cannot apply to it, as CUDA reserves more
address space than any sensible limit): a prediction that runs too long or needs too much memory fails its input
("timed out after N s", "out of memory") and the batch goes on. The worker loads the models once (checked against
their sha256 again), before its first input's time starts.

``--json`` prints one JSON object per input (JSON lines). A bad input (one that does not build, an empty graph, a
corrupt one with an edge to a node that does not exist) is reported on one line and the others go on (exit 1); a
missing or damaged model stops the command with one line (exit 1); a bad option exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from programl.cli.common import (
    Summary,
    add_limit_options,
    print_line,
    progress,
    stdout_to_devnull,
    usage_error,
    worker_outcomes,
)

__all__ = ["add_parser", "run"]

PLATFORMS = ("amd", "nvidia")
#: What predict reads as a saved graph rather than a program.
GRAPH_MARK = ".ProgramGraph"
CXX_SOURCES = (".c", ".cc", ".cpp", ".cxx", ".c++")

EXAMPLES = {
    "dataflow": """\
examples:
  programl predict dataflow examples/dot_product.ll                        every installed analysis, sampled roots
  programl predict dataflow --analysis liveness --root 12 --compare f.c    one root, beside the exact labels
  programl predict dataflow --analysis reachability --roots 3 --json *.ll
""",
    "devmap": """\
examples:
  programl predict devmap examples/vector_add.cl                      both platforms, the default inputs
  programl predict devmap --platform amd --transfer 4194304 --wgsize 256 kernel.cl
""",
    "classifyapp": """\
examples:
  programl predict classifyapp examples/quicksort.cc                  the 5 most likely POJ-104 classes
  programl predict classifyapp --top 3 --json a.c b.cc
""",
}


def _count(minimum: int, maximum: int = 2**31 - 1):
    """An argparse type: an integer in [minimum, maximum] (node indices, steps and counts fit an int32)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}: {text!r}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}: {text!r}")
        return value

    return parse


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "predict",
        help="predict with a pretrained model: dataflow, devmap, classifyapp",
        description="What a pretrained model says about programs: the nodes a data-flow analysis labels, the "
        "faster device for an OpenCL kernel, the POJ-104 class of a C/C++ program.",
    )
    tasks = parser.add_subparsers(dest="task", metavar="TASK")
    tasks.required = True
    helps = {
        "dataflow": "the nodes a data-flow analysis labels, per root",
        "devmap": "CPU or GPU for OpenCL kernels",
        "classifyapp": "the POJ-104 class of C/C++ programs",
    }
    for task, text in helps.items():
        sub = tasks.add_parser(
            task,
            help=text,
            description=f"Predict {text} with a pretrained model.",
            epilog=EXAMPLES[task],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.add_argument(
            "inputs",
            nargs="+",
            metavar="FILE",
            help="programs (.ll, .bc, .c, .cc, .cl ...), saved graphs (*.ProgramGraph.pb), '-' for IR on stdin",
        )
        getattr(sys.modules[__name__], f"_add_{task}_arguments")(sub)
        sub.add_argument("--model", metavar="NAME|DIR", help="use this pretrained model (a name or a directory)")
        sub.add_argument(
            "--model-dir",
            metavar="DIR",
            help="look models up in DIR instead of the package's (programl/models/weights)",
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


def _add_dataflow_arguments(parser: argparse.ArgumentParser) -> None:
    from programl.dataflow.names import ANALYSES

    parser.add_argument(
        "--analysis",
        action="append",
        choices=ANALYSES,
        metavar="A",
        help=f"one of {', '.join(ANALYSES)} (repeatable; default: every analysis with a model)",
    )
    roots = parser.add_mutually_exclusive_group()
    roots.add_argument(
        "--root",
        type=_count(0),
        action="append",
        metavar="N",
        help="predict for root node N (repeatable); it must be an eligible root of the analysis",
    )
    roots.add_argument(
        "--roots",
        type=_count(1),
        metavar="K",
        help="K roots, the first of a seeded shuffle of the eligible ones (default: the analyses' "
        "own sample, min(ceil(eligible / 10), 10) roots)",
    )
    parser.add_argument(
        "--seed", type=_count(0, 2**63 - 1), default=0, help="seed of the root sample (default: 0, as analyze)"
    )
    parser.add_argument("--steps", type=_count(0), metavar="T", help="message-passing steps (default: the model's, 30)")
    parser.add_argument(
        "--compare", action="store_true", help="show the exact labels of the analysis beside the predicted ones"
    )


def _add_devmap_arguments(parser: argparse.ArgumentParser) -> None:
    from programl.data.devmap import AUX_MEDIANS as d

    parser.add_argument(
        "--platform",
        choices=(*PLATFORMS, "all"),
        default="all",
        help="amd (AMD Tahiti 7970), nvidia (NVIDIA GTX 970) or all (default: all with a model)",
    )
    parser.add_argument(
        "--transfer",
        type=_count(0),
        metavar="BYTES",
        help="bytes transferred to the device (default: a DevMap graph's own value, else the "
        f"median of the DevMap data: {d['amd']['transfer']:,} on amd, "
        f"{d['nvidia']['transfer']:,} on nvidia)",
    )
    parser.add_argument(
        "--wgsize",
        type=_count(0),
        metavar="N",
        help="work-group size (default: a DevMap graph's own value, else the median of the DevMap "
        f"data: {d['amd']['wgsize']} on amd, {d['nvidia']['wgsize']} on nvidia)",
    )


def _add_classifyapp_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--top", type=_count(1), default=5, metavar="K", help="how many classes (default: 5)")


# ---------------------------------------------------------------------------------------------------------------
# Models


def _explicit_choice(args: argparse.Namespace) -> bool:
    """Whether the user named the analyses / platform (then each needs a model), rather than "all there are"."""
    if args.task == "dataflow":
        return bool(args.analysis)
    if args.task == "devmap":
        return args.platform != "all"
    return True


def _select_models(args: argparse.Namespace) -> list:
    """The pretrained models to run (loaded), or a :class:`~programl.exceptions.ProgramlError` that says why
    there are none."""
    from programl.dataflow.names import ANALYSES
    from programl.exceptions import ProgramlError
    from programl.pretrained.hub import find_pretrained, pretrained, pretrained_names

    directory = args.model_dir
    if args.model:
        model = pretrained(args.model, directory=directory, device=args.device)
        if model.task != args.task:
            raise ProgramlError(f"{args.model}: a {model.task} model, not a {args.task} one")
        if args.task == "dataflow" and args.analysis and model.analysis not in args.analysis:
            raise ProgramlError(f"{args.model}: a {model.analysis} model, not a {' or '.join(args.analysis)} one")
        return [model]
    if args.task == "dataflow":
        wanted = [("analysis", a) for a in (args.analysis or ANALYSES)]
    elif args.task == "devmap":
        wanted = [("platform", p) for p in (PLATFORMS if args.platform == "all" else (args.platform,))]
    else:
        wanted = [(None, None)]
    explicit = _explicit_choice(args)
    names, missing = [], []
    for key, value in wanted:
        found = find_pretrained(args.task, directory=directory, **({key: value} if key else {}))
        if found:  # sorted: the model named after the analysis (the faithful one) before its variants
            names.append(found[0])
        else:
            missing.append(value)
    if not names or (explicit and missing):
        installed = pretrained_names(directory)
        what = f"{args.task} model" + (f" for {', '.join(missing)}" if explicit and any(missing) else "")
        listing = f"installed: {', '.join(installed)}" if installed else "none is installed"
        raise ProgramlError(f"no pretrained {what} ({listing}; `programl export-pretrained RUN_DIR` installs one)")
    return [pretrained(name, directory=directory, device=args.device) for name in names]


# ---------------------------------------------------------------------------------------------------------------
# Graphs (in worker processes)


@dataclass(frozen=True)
class Input:
    """What a worker needs to make one input's graph."""

    path: str
    data: bytes | None  # stdin
    task: str
    flags: tuple[str, ...]  # after --
    compile_flags: tuple[str, ...]  # the model's (devmap, classifyapp)
    timeout: float
    fd: int | None = None  # read the input from this inherited descriptor (stdin, /dev/fd/N), in the worker


def make_graph(item: Input) -> bytes:
    """The serialized ``ProgramGraph`` of an input, built as the model's training graphs were."""
    from programl.cli.build import Task, build_one
    from programl.graph_builder.llvm import BuildOptions, graph_from_ir

    path = item.path
    name = os.path.basename(path)
    suffix = os.path.splitext(name)[1].lower()
    if item.data is None and GRAPH_MARK in name:
        from programl.io.files import read_graph

        return read_graph(path).SerializeToString(deterministic=True)
    if item.data is None and item.task == "devmap" and suffix == ".cl":
        from programl.graph_builder import clang

        include = ("-I", os.path.dirname(path) or ".")
        ir = clang.compile_file(path, (*item.compile_flags, *include, *item.flags), "cl", timeout=item.timeout)
        return graph_from_ir(ir, path=path).SerializeToString(deterministic=True)
    if item.data is None and item.task == "classifyapp" and suffix in CXX_SOURCES:
        return _poj104_graph(path, item).SerializeToString(deterministic=True)
    task = Task(path, item.data, None, "pb", None, item.flags, item.timeout, item.fd)
    return build_one(task, BuildOptions())[2]


def _poj104_graph(path: str, item: Input):
    """A C/C++ program compiled as the POJ-104 graphs (:func:`programl.data.poj104.compile_program`); a compiler
    error is located in the file, not in the text with the header that clang read from stdin."""
    from programl.data.poj104 import RECIPES, compile_program
    from programl.exceptions import GraphCreationError
    from programl.graph_builder.llvm import graph_from_ir

    try:
        text = Path(path).read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        raise GraphCreationError("no such file", path) from None
    try:
        ir, _ = compile_program(text, (*item.compile_flags, *item.flags), timeout=item.timeout)
    except GraphCreationError as error:
        if error.path not in (None, "-"):
            raise
        offset = RECIPES[0].header.count("\n")  # the error is the first recipe's, which prepends its header
        line = error.line - offset if error.line is not None and error.line > offset else None
        raise type(error)(error.message, path, line, error.column if line else None) from None
    return graph_from_ir(ir, path=path)


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
    explicit: bool  # the analyses / platform were named (:func:`_explicit_choice`)
    root: tuple[int, ...] | None = None
    roots: int | None = None
    seed: int = 0
    steps: int | None = None
    compare: bool = False
    transfer: int | None = None
    wgsize: int | None = None
    top: int = 5
    notes: bool = True  # say (on stderr) why a model was skipped for an input

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Request:
        get = lambda name, default=None: getattr(args, name, default)  # noqa: E731 - each task has its own options
        return cls(
            task=args.task,
            explicit=_explicit_choice(args),
            root=tuple(args.root) if get("root") else None,
            roots=get("roots"),
            seed=get("seed", 0),
            steps=get("steps"),
            compare=bool(get("compare", False)),
            transfer=get("transfer"),
            wgsize=get("wgsize"),
            top=get("top", 5),
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


def _predict_dataflow(path: str, graph, model, request: Request, out: Predicted) -> dict:
    """One data-flow model's prediction; an analysis without an eligible root (or, when the analyses were not
    named, for which ``--root`` is not eligible) is skipped with a note, not failed."""
    from programl.exceptions import AnalysisError

    try:
        prediction = model.predict(
            graph,
            roots=list(request.root) if request.root else None,
            num_roots=request.roots,
            seed=request.seed,
            steps=request.steps,
            compare=request.compare,
        )
    except AnalysisError as error:
        no_root = str(error).startswith("No eligible root")
        if not no_root and request.explicit:
            raise
        if no_root:
            out.notes["without a root"] = out.notes.get("without a root", 0) + 1
        if request.notes:
            out.messages.append(f"{path}: {model.analysis}: {error}")
        return {"model": model.name, "analysis": model.analysis, "skipped": str(error)}
    return {"model": model.name, **prediction.to_dict()}


def _predict_one(path: str, graph, models, request: Request, out: Predicted) -> dict:
    """Every model's prediction on one graph (the record ``--json`` prints)."""
    from programl.exceptions import AnalysisError
    from programl.pretrained.inference import check_graph

    check_graph(graph)  # an empty or corrupt graph fails the input, whatever the models would make of it
    record: dict = {"file": path, "task": request.task, "nodes": len(graph.node), "predictions": []}
    for model in models:
        if request.task == "dataflow":
            entry = _predict_dataflow(path, graph, model, request, out)
        elif request.task == "devmap":
            prediction = model.predict(graph, transfer=request.transfer, wgsize=request.wgsize)
            entry = {"model": model.name, **prediction.to_dict()}
        else:
            entry = {"model": model.name, **model.predict(graph, top=request.top).to_dict()}
        record["predictions"].append(entry)
    if request.task == "dataflow" and request.root and all("skipped" in e for e in record["predictions"]):
        raise AnalysisError(f"node {request.root[0]} is an eligible root of none of the analyses")
    return record


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


# ---------------------------------------------------------------------------------------------------------------
# Output


def _dataflow_text(path: str, name: str, nodes: int, result: dict) -> list[str]:
    lines = []
    compared = "exact_true" in (result["roots"][0] if result["roots"] else {})
    for entry in result["roots"]:
        root = entry["root"]
        head = (
            f"{path}: {result['analysis']} (model {name}, T={result['steps']}) root {root['id']} "
            f"({root['type']} {root['text']}): {entry['predicted_true']} of {nodes} nodes predicted true"
        )
        if compared:
            c = entry["confusion"]
            head += (
                f"; exact {entry['exact_true']} (true positives {c['true_positives']}, false positives "
                f"{c['false_positives']}, missed {c['false_negatives']})"
            )
        lines.append(head)
        lines.append(f"  {'id':>6}  {'type':<11}  {'p(true)':>7}" + ("  exact " if compared else "") + "  text")
        for node in entry["nodes"]:
            mark = ""
            if compared:
                mark = "  " + (
                    "yes   " if node["exact"] and node["predicted"] else "no    " if node["predicted"] else "MISSED"
                )
            lines.append(f"  {node['id']:>6}  {node['type']:<11}  {node['probability']:>7.3f}{mark}  {node['text']}")
    return lines


def _devmap_text(path: str, name: str, result: dict) -> list[str]:
    from programl.data.devmap import PLATFORM_NAMES

    platform = result["platform"]
    return [
        f"{path}: {platform} ({PLATFORM_NAMES.get(platform, platform)}): {result['device']} "
        f"(p={result['probability']:.3f}; transfer {result['transfer']:,} bytes, wgsize {result['wgsize']}: "
        f"{result['aux_inputs']}; model {name})"
    ]


def _classifyapp_text(path: str, name: str, result: dict) -> list[str]:
    lines = [f"{path}: POJ-104 classes (model {name})"]
    lines += [
        f"  {rank}. class {item['class']:>3}  p={item['probability']:.3f}"
        for rank, item in enumerate(result["top"], start=1)
    ]
    return lines


def _print_record(record: dict, args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(record, sort_keys=True), flush=True)
        return
    lines = []
    for entry in record["predictions"]:
        if "skipped" in entry:
            continue
        if args.task == "dataflow":
            lines += _dataflow_text(record["file"], entry["model"], record["nodes"], entry)
        elif args.task == "devmap":
            lines += _devmap_text(record["file"], entry["model"], entry)
        else:
            lines += _classifyapp_text(record["file"], entry["model"], entry)
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
        tasks.append(Input(path, data, args.task, flags, compile_flags, args.timeout, fd))
    request = Request.from_args(args)
    refs = tuple(ModelRef(os.path.abspath(model.directory), str(args.device)) for model in models)
    try:
        with (
            worker_outcomes(make_graph, tasks, args, pass_fds=tuple(passed)) as outcomes,
            _prediction_pool(args) as pool,
        ):
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
