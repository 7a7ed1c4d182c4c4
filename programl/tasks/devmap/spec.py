"""The devmap task as the package sees it (docs/spec/tasks.md#device-mapping,
docs/spec/tasks.md#device-mapping-table): the network of a run's options, where a run keeps its models (one per platform
and fold), what their ``model.json`` and cards say, and how ``programl predict devmap`` uses them. No torch."""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError
from programl.tasks.base import TaskSpec, count_argument, require_options
from programl.tasks.devmap.predict import DevmapPredictor
from programl.tasks.options import SEED_RANGE, TaskOptions, add_options, option
from programl.tasks.run_files import RunFiles, read_log_seconds
from programl.tasks.run_options import (
    DATA_GROUP,
    RunOptions,
    config_option,
    data_dir_option,
    epochs_option,
    jobs_option,
    restart_option,
    run_dir_option,
)
from programl.util.fs import read_json
from programl.util.text import fmt, markdown_table

__all__ = [
    "CV_GROUP",
    "MODEL_GROUP",
    "NETWORK_OPTIONS",
    "OPTIMISATION_GROUP",
    "PLATFORMS",
    "DevmapEvaluateOptions",
    "DevmapOptions",
    "DevmapRunOptions",
    "DevmapSpec",
    "fold_dirs",
]

#: The platforms ``programl predict devmap --platform`` chooses from.
PLATFORMS = ("amd", "nvidia")

#: The options of the graph model and its auxiliary head.
NETWORK_OPTIONS = (
    "hidden",
    "steps",
    "layers",
    "positions",
    "node_type_gru",
    "message_dropout",
    "state_dropout",
    "aux_dropout",
    "aux_hidden",
)
#: The argument groups of ``programl train devmap --help``.
CV_GROUP = "cross-validation"
MODEL_GROUP = "model"
OPTIMISATION_GROUP = "optimisation"
_DROPOUT = {"low": 0.0, "high": 1.0 - 1e-9, "range_text": "in [0, 1)"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class DevmapOptions(TaskOptions):
    """The options of ``programl train devmap`` (``config.json``'s ``model`` entry; ``--config`` reads them back).
    ``epochs`` and ``seed`` are the training engine's ``--epochs`` and ``--seed``."""

    GROUPS = (CV_GROUP, MODEL_GROUP, OPTIMISATION_GROUP)

    variant: str = option("clang22", choices=("clang22", "ncc"), help="graphs from clang-22 or from NCC's released IR")
    folds: int = option(10, group=CV_GROUP, low=3, range_text="at least 3", help="number of folds")
    fold_seed: int = option(204, group=CV_GROUP, help="seed of the stratified partition", **SEED_RANGE)
    subset: int | None = option(
        None,
        group=CV_GROUP,
        metavar="N",
        low=2,
        high=680,
        range_text="in 2..680",
        help="use a stratified sample of N kernels-with-inputs instead of all 680 (quick looks, tests)",
    )
    average_last: int = option(
        0,
        group=CV_GROUP,
        metavar="N",
        low=0,
        help="test each fold by the mean probability of its last N epochs' models instead of the epoch chosen on "
        "the validation fold (not in the paper)",
        default_text="0, the paper's choice",
    )
    hidden: int = option(64, group=MODEL_GROUP, help="node state size")
    steps: int = option(6, group=MODEL_GROUP, low=1, help="message-passing steps")
    layers: int = option(
        2,
        group=MODEL_GROUP,
        low=1,
        help="distinct parameter sets, used in turn",
        default_text="2 = even/odd steps share",
    )
    positions: bool = option(False, group=MODEL_GROUP, help="gate messages by edge position")
    node_type_gru: bool = option(False, group=MODEL_GROUP, help="one GRU per node type")
    message_dropout: float = option(0.1, group=MODEL_GROUP, help="dropout of the messages", **_DROPOUT)
    state_dropout: float = option(0.0, group=MODEL_GROUP, help="dropout of the node states", **_DROPOUT)
    aux_dropout: float = option(0.0, group=MODEL_GROUP, help="dropout in the auxiliary head", **_DROPOUT)
    aux_hidden: int = option(32, group=MODEL_GROUP, low=1, help="hidden units of the auxiliary head")
    intermediate_loss_weight: float = option(
        0.2,
        group=MODEL_GROUP,
        metavar="W",
        low=0.0,
        help="weight of CE(graph logits before the auxiliary head) in the loss",
    )
    pooling: str = option(
        "sum",
        group=MODEL_GROUP,
        choices=("sum", "mean"),
        help="pool the node readout per graph by sum (the paper) or mean",
    )
    readout_channels: int = option(
        2,
        group=MODEL_GROUP,
        metavar="K",
        low=2,
        range_text="at least 2",
        help="graph readout channels fed to the auxiliary head (K > 2 adds K - 2 learned graph features)",
        default_text="2, the paper's graph logits",
    )
    aux_bins: int = option(
        0,
        group=MODEL_GROUP,
        metavar="N",
        low=0,
        help="feed each auxiliary input to the head as N threshold bits at quantiles of the fold's training inputs "
        "(a thermometer code)",
        default_text="0, the paper's log1p values",
    )
    text_counts: bool = option(
        False,
        group=MODEL_GROUP,
        help="feed the head each kernel's node-text counts as well (log1p, scaled by the fold's training kernels; "
        "not in the paper)",
    )
    numbers_and_types: bool = option(
        False,
        group=MODEL_GROUP,
        help="give the network the value of each numeric constant and the shape of each vector, array and struct "
        "type as node inputs (docs/numbers_types.md; not in the paper)",
    )
    lr: float = option(1e-3, group=OPTIMISATION_GROUP, low=math.ulp(0.0), help="Adam learning rate")
    weight_decay: float = option(0.0, group=OPTIMISATION_GROUP, low=0.0, help="Adam weight decay")
    batch_nodes: int = option(18_000, group=OPTIMISATION_GROUP, low=1, help="node budget per batch")
    batch_graphs: int | None = option(
        None,
        group=OPTIMISATION_GROUP,
        metavar="N",
        low=2,
        range_text="at least 2 (BatchNorm)",
        help="at most N kernels per batch",
        default_text="no limit; the branch code used 64",
    )
    epochs: int
    seed: int


#: The choices of ``--platform``.
_PLATFORM_CHOICES = ("amd", "nvidia", "all")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DevmapRunOptions(RunOptions):
    """The run options of ``programl train devmap``: where the data and the run are, which platforms and folds, the
    epoch budget (not recorded as the model's options, except ``epochs`` and ``seed``)."""

    GROUPS = (DATA_GROUP,)

    source_dir: str | None = option(
        None,
        group=DATA_GROUP,
        metavar="DIR",
        help="the CSVs, zips and manifest",
        default_text="$PROGRAML_SHARED_DATA/devmap or ../shared/data/devmap",
    )
    download: bool = option(
        False, group=DATA_GROUP, help="download missing source files into DATA_DIR/raw (sha256-checked)"
    )
    data_dir: str = data_dir_option("devmap")
    jobs: int = jobs_option()
    platform: str = option("all", group=DATA_GROUP, choices=_PLATFORM_CHOICES, help="default: all", default_text="")
    only_folds: list[int] | None = option(None, group=CV_GROUP, metavar="K", help="run only these folds")
    run_dir: str = run_dir_option("devmap")
    epochs: int = epochs_option(100)
    restart: bool = restart_option()
    config: str | None = config_option("devmap")


#: The fields of :class:`DevmapRunOptions` that ``--help`` lists before the task's options, and after them (then the
#: runtime options).
_RUN_BEFORE = ("source_dir", "download", "data_dir", "jobs", "platform")
_RUN_AFTER = ("only_folds", "run_dir", "epochs", "restart", "config")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DevmapEvaluateOptions(RunOptions):
    """The options of ``programl evaluate devmap`` (the model's are the trained run's)."""

    run_dir: str = option(os.path.join("runs", "devmap"), metavar="DIR", help="a run of 'programl train devmap'")
    source_dir: str | None = option(None, metavar="DIR", help="as for training", default_text="the run's")
    data_dir: str | None = option(None, metavar="DIR", help="as for training", default_text="the run's")
    platform: str = option(
        "all",
        choices=_PLATFORM_CHOICES,
        help="default: all, the platforms the run has trained folds of",
        default_text="",
    )
    ensemble: list[Path] | None = option(
        None,
        metavar="DIR",
        help="more runs of the same folds (e.g. another --seed): each test kernel is predicted by the mean of the "
        "runs' probabilities (their chosen models); the reports go to --out",
    )
    out: Path | None = option(
        None,
        metavar="DIR",
        help="where the reports of an --ensemble go (required with it; the runs' own reports are left as they are)",
    )


_SCORES = ("accuracy", "precision", "recall", "f1", "f1_gpu", "speedup_geomean", "oracle_speedup_geomean")


def fold_dirs(platform_dir) -> dict[int, Any]:
    """``{k: <platform_dir>/fold_<k>}`` of the folds that hold a ``best.pt``, in fold order."""
    out = {}
    for d in platform_dir.glob("fold_*"):
        suffix = d.name.removeprefix("fold_")
        if suffix.isdigit() and (d / "best.pt").is_file():
            out[int(suffix)] = d
    return dict(sorted(out.items()))


TRAIN_EXAMPLES = """\
examples:
  programl train devmap --source-dir ../shared/data/devmap --run-dir runs/devmap
  programl train devmap --platform amd --variant ncc --folds 10 --epochs 80 --threads 2
  programl train devmap --platform nvidia --only-folds 0 1 --epochs 5     a quick look at two folds
"""
EVALUATE_EXAMPLES = """\
examples:
  programl evaluate devmap --run-dir runs/devmap          re-test every fold's chosen model
"""


# ---------------------------------------------------------------------------------------------------------------
# Command line


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``programl train devmap``: :class:`~programl.tasks.devmap.spec.DevmapOptions` (``--init-from``
    excluded: one start for every fold) and :class:`DevmapRunOptions`."""
    groups = add_options(parser, DevmapRunOptions, only=_RUN_BEFORE)
    add_options(parser, DevmapOptions, exclude=("init_from",), groups=groups)
    add_options(parser, DevmapRunOptions, only=_RUN_AFTER, groups=groups)
    add_options(parser, DevmapRunOptions, only=RunOptions.keys(), groups=groups)


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``programl evaluate devmap``: :class:`DevmapEvaluateOptions` (its own, then the runtime options)."""
    own = tuple(key for key in DevmapEvaluateOptions.keys() if key not in RunOptions.keys())
    groups = add_options(parser, DevmapEvaluateOptions, only=own)
    add_options(parser, DevmapEvaluateOptions, only=RunOptions.keys(), groups=groups)


class DevmapSpec(TaskSpec):
    """OpenCL device mapping (docs/spec/tasks.md#device-mapping): a graph-level model per platform and cross-validation
    fold."""

    name = "devmap"
    summary = "learn OpenCL device mapping (CPU or GPU) on the DevMap kernels, by cross-validation"
    title = "ProGraML OpenCL device mapping"
    train_module = "programl.tasks.devmap.train"
    train_epilog = TRAIN_EXAMPLES
    evaluate_epilog = EVALUATE_EXAMPLES
    add_train_arguments = staticmethod(add_train_arguments)
    add_evaluate_arguments = staticmethod(add_evaluate_arguments)
    options = DevmapOptions
    predictor = DevmapPredictor
    metadata_fields = ("platform",)
    fills_training_facts = False
    counts_init_from = False
    predict_help = "CPU or GPU for OpenCL kernels"
    predict_examples = """\
examples:
  programl predict devmap examples/vector_add.cl                      both platforms, the default inputs
  programl predict devmap --platform amd --transfer 4194304 --wgsize 256 kernel.cl
"""
    predict_order = 2

    def model_spec(self, config: Mapping[str, Any], vocabulary_size: int, where: str = "config.json") -> dict:
        o = require_options(config, NETWORK_OPTIONS, where)
        from programl.models.pooled_readout import is_paper_head  # torch: only when a network is described

        channels, pooling = config.get("readout_channels", 2), config.get("pooling", "sum")
        # the thermometer thresholds and the text-count scales are buffers of the saved weights
        aux_bins, text_counts = config.get("aux_bins", 0), config.get("text_counts", False)
        paper = is_paper_head(channels, pooling, aux_bins, text_counts)
        graph_model = {
            "class": "GGNNGraphClassifier",
            "args": [vocabulary_size, channels],
            "kwargs": {
                "hidden_channels": o["hidden"],
                "layer_schedule": [step % o["layers"] for step in range(o["steps"])],
                "use_positions": o["positions"],
                "node_type_gru": o["node_type_gru"],
                "dropout": o["state_dropout"],
                "message_dropout": o["message_dropout"],
                "aux_channels": 2 if paper else 0,
                "aux_hidden": o["aux_hidden"],
                "aux_dropout": o["aux_dropout"],
                "intermediate_loss_weight": config.get("intermediate_loss_weight", 0.2),
                **({"numbers_and_types": True} if config.get("numbers_and_types", False) else {}),
            },
        }
        if paper:
            return graph_model
        return {
            "class": "PooledReadoutClassifier",
            "args": [graph_model],
            "kwargs": {
                "pooling": pooling,
                "aux_hidden": o["aux_hidden"],
                "aux_dropout": o["aux_dropout"],
                **({"aux_bins": aux_bins} if aux_bins else {}),
                **({"text_counts": vocabulary_size + 1} if text_counts else {}),
            },
        }

    # ---------------------------------------------------------------------------------------------------- export
    def locate_model(self, files: RunFiles, platform: str | None, fold: int | None) -> None:
        """The model of one fold of one platform: ``<platform>/fold_<k>/`` (default: the only platform of the run,
        and its fold with the best validation accuracy; ties: the lower fold)."""
        from programl.datasets.devmap_info import PLATFORM_NAMES  # numpy: not for --help

        run_dir, config = files.run_dir, files.config
        if config["model"].get("average_last", 0):
            raise ProgramlError(
                f"{run_dir}: tested by the mean of each fold's last {config['model']['average_last']} epochs' models "
                "(--average-last), which one set of pretrained weights cannot hold; export a run without it"
            )
        present = [p for p in PLATFORM_NAMES if fold_dirs(run_dir / p)]
        if platform is None:
            if len(present) != 1:
                raise ProgramlError(
                    f"{run_dir}: "
                    + (
                        "no trained fold (<platform>/fold_<k>/best.pt)"
                        if not present
                        else "a run of both platforms: choose one with --platform amd|nvidia"
                    )
                )
            platform = present[0]
        folds = fold_dirs(run_dir / platform)
        if not folds:
            raise ProgramlError(f"{run_dir / platform}: no trained fold (fold_<k>/best.pt)")
        if fold is None:
            scored = {k: read_json(d / "result.json") for k, d in folds.items() if (d / "result.json").is_file()}
            if not scored:
                raise ProgramlError(f"{run_dir / platform}: no finished fold (fold_<k>/result.json)")
            fold = max(scored, key=lambda k: (scored[k].get("val_accuracy") or 0.0, -k))
        elif fold not in folds:
            raise ProgramlError(f"{run_dir / platform}: no trained fold {fold} (have {', '.join(map(str, folds))})")
        model_dir = folds[fold]
        files.platform, files.fold = platform, fold
        report = run_dir / platform / "report.json"
        files.report = read_json(report) if report.is_file() else None
        files.fold_seconds = read_log_seconds(model_dir / "log.jsonl")
        seconds = [read_log_seconds(d / "log.jsonl") for d in folds.values()]
        files.platform_seconds = sum(seconds) if None not in seconds else None
        files.checkpoint, files.vocabulary = model_dir / "best.pt", model_dir / files.vocabulary.name
        files.result_path = model_dir / "result.json"

    def default_name(self, files: RunFiles) -> str:
        return f"devmap-{files.platform}"

    def metadata_entries(self, files: RunFiles) -> dict[str, Any]:
        return {"platform": files.platform}

    def outputs(self, files: RunFiles) -> dict[str, Any]:
        from programl.datasets.devmap_info import PLATFORM_NAMES

        return {
            "level": "graph",
            "classes": ["CPU", "GPU"],
            "meaning": f"the faster device for the kernel on {PLATFORM_NAMES[files.platform]} (with its CPU, an "
            "Intel i7-3820), given the bytes transferred and the work-group size",
        }

    def inputs(self, files: RunFiles) -> dict[str, Any]:
        from programl.datasets.devmap_info import CLANG22_BASE_FLAGS

        return {
            "sources": "OpenCL C, compiled by clang-22 as the DevMap graphs were (-x cl -cl-std=CL1.2 "
            "-finclude-default-header -target spir64, the flags below, -I <the kernel's directory>)",
            "flags": list(CLANG22_BASE_FLAGS),
            "variant": files.config["model"].get("variant"),
            "aux": ["transfer_bytes", "wgsize"],
        }

    def scores(self, files: RunFiles) -> dict[str, Any]:
        result = files.result
        out = {k: result[k] for k in ("fold", "best_epoch", "val_accuracy", "epochs", "static_device") if k in result}
        out["test"] = dict(result.get("test") or {})
        if files.report:
            out["cross_validation"] = {
                k: files.report[k]
                for k in ("folds", "examples", "mean", "std", "static_mapping_accuracy")
                if k in files.report
            }
        return out

    def compute(self, files: RunFiles) -> dict[str, Any]:
        return {
            "train_seconds": files.fold_seconds,
            "processes": 1,
            "device": None,
            "machine": None,
            "all_folds_seconds": files.platform_seconds,
        }

    def command_options(self, files: RunFiles) -> str:
        return f" --platform {files.platform} --only-folds {files.fold}"

    def check_metadata(self, metadata: Mapping[str, Any], check) -> None:
        """``platform``: one of :data:`PLATFORMS`."""
        check.choice("platform", metadata.get("platform"), PLATFORMS)

    # ---------------------------------------------------------------------------------------------------- card
    def card_task_line(self, m: Mapping[str, Any]) -> str:
        return f"devmap ({m.get('platform')})"

    def card_data(self, m: Mapping[str, Any]) -> list[str]:
        config = m["training"]["config"]
        options = config.get("model", {})
        folds, subset = options.get("folds"), options.get("subset")
        return [
            f"OpenCL DevMap, platform {m.get('platform')}: "
            + (
                f"a stratified sample of {subset} of the 680 kernels-with-inputs"
                if subset
                else "the 680 kernels-with-inputs"
            )
            + f", graphs of the `{options.get('variant')}` variant; {fmt(folds)}-fold stratified cross-validation "
            f"(seed {fmt(options.get('fold_seed'))}). This is the model of fold {m['training'].get('fold')}: "
            f"trained on {fmt(folds - 2 if isinstance(folds, int) else None)} fold(s), its epoch chosen on one more "
            f"(validation), tested on fold {m['training'].get('fold')}. Sources: `{fmt(config.get('source_dir'))}`."
        ]

    def card_scores(self, s: Mapping[str, Any]) -> list[str]:
        t = s.get("test", {})
        lines = [
            f"Fold {fmt(s.get('fold'))} (epoch {fmt(s.get('best_epoch'))} of {fmt(s.get('epochs'))}, "
            f"validation accuracy {fmt(s.get('val_accuracy'), '.3f')}), on its test kernels:",
            "",
        ]
        lines += markdown_table(_SCORES, [tuple(fmt(t.get(k), ".3f") for k in _SCORES)])
        cv = s.get("cross_validation")
        if cv:
            mean, std = cv.get("mean", {}), cv.get("std", {})
            lines += [
                "",
                f"Cross-validation over {fmt(cv.get('folds'))} folds ({fmt(cv.get('examples'))} test "
                "predictions), mean ± standard deviation over folds:",
                "",
            ]
            lines += markdown_table(
                _SCORES, [tuple(f"{fmt(mean.get(k), '.3f')} ± {fmt(std.get(k), '.3f')}" for k in _SCORES)]
            )
            lines += ["", f"Static mapping accuracy: {fmt(cv.get('static_mapping_accuracy'), '.3f')}."]
        return lines

    def card_compute(self, m: Mapping[str, Any], line: str) -> str:
        c = m.get("compute", {})
        return (
            f"Training this fold: {fmt(c.get('train_seconds'), '.1f')} s (the sum of its epochs in `log.jsonl`); all "
            f"folds of the platform: {fmt(c.get('all_folds_seconds'), '.1f')} s; one process, device "
            f"{fmt(c.get('device'))}."
        )

    def card_limitations(self, m: Mapping[str, Any]) -> list[str]:
        items = [
            "One prediction per graph, i.e. per .cl file, as in training. The auxiliary inputs (bytes "
            "transferred, work-group size) change the prediction: without them, `programl predict` uses the "
            "DevMap medians of the platform.",
            f"Trained on fold {m['training'].get('fold')}'s training kernels only: most DevMap kernels "
            "were seen in training; the scores above are on the held-out fold.",
        ]
        if m.get("inputs", {}).get("variant") == "ncc":
            items.append(
                "Trained on graphs of NCC's released IR (LLVM 3.8), not clang-22's: graphs of sources "
                "compiled here are off the training distribution."
            )
        return items

    def predict_command(self, m: Mapping[str, Any]) -> str:
        return f"programl predict devmap --platform {m.get('platform')} KERNEL.cl --transfer BYTES --wgsize N"

    # ---------------------------------------------------------------------------------------------------- predict
    def add_predict_arguments(self, parser: argparse.ArgumentParser) -> None:
        from programl.datasets.devmap_info import AUX_MEDIANS as d

        parser.add_argument(
            "--platform",
            choices=(*PLATFORMS, "all"),
            default="all",
            help="amd (AMD Tahiti 7970), nvidia (NVIDIA GTX 970) or all (default: all with a model)",
        )
        parser.add_argument(
            "--transfer",
            type=count_argument(0),
            metavar="BYTES",
            help="bytes transferred to the device (default: a DevMap graph's own value, else the "
            f"median of the DevMap data: {d['amd']['transfer']:,} on amd, "
            f"{d['nvidia']['transfer']:,} on nvidia)",
        )
        parser.add_argument(
            "--wgsize",
            type=count_argument(0),
            metavar="N",
            help="work-group size (default: a DevMap graph's own value, else the median of the DevMap "
            f"data: {d['amd']['wgsize']} on amd, {d['nvidia']['wgsize']} on nvidia)",
        )

    def predict_wanted(self, args: argparse.Namespace) -> tuple[list[dict[str, str]], bool]:
        """An installed model per platform (``--platform``, default: both that have one)."""
        platforms = PLATFORMS if args.platform == "all" else (args.platform,)
        return [{"platform": p} for p in platforms], args.platform != "all"

    def source_graph(
        self, path: str, suffix: str, compile_flags: tuple[str, ...], flags: tuple[str, ...], timeout: float
    ):
        """An OpenCL kernel (``.cl``) compiled as the DevMap graphs were: the model's flags, ``-I`` its directory."""
        if suffix != ".cl":
            return None
        from programl.graph_builder import clang
        from programl.graph_builder.llvm import graph_from_ir

        include = ("-I", os.path.dirname(path) or ".")
        ir = clang.compile_file(path, (*compile_flags, *include, *flags), "cl", timeout=timeout)
        return graph_from_ir(ir, path=path)

    def predict_options(self, args: argparse.Namespace) -> dict[str, Any]:
        return {"transfer": args.transfer, "wgsize": args.wgsize}

    def predict_text(self, path: str, name: str, nodes: int, result: Mapping[str, Any]) -> list[str]:
        from programl.datasets.devmap_info import PLATFORM_NAMES

        platform = result["platform"]
        return [
            f"{path}: {platform} ({PLATFORM_NAMES.get(platform, platform)}): {result['device']} "
            f"(p={result['probability']:.3f}; transfer {result['transfer']:,} bytes, wgsize {result['wgsize']}: "
            f"{result['aux_inputs']}; model {name})"
        ]
