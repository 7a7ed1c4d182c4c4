"""The POJ-104 classification task as the package sees it (docs/spec/tasks.md#algorithm-classification,
docs/spec/tasks.md#poj-104-table): the network of a run's options, what its pretrained models' ``model.json`` and cards
say, and how ``programl predict classifyapp`` uses them. No torch."""

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
from programl.tasks.classifyapp.predict import ClassifyappPredictor
from programl.tasks.options import SEED_RANGE, TaskOptions, add_options, option
from programl.tasks.run_files import RunFiles
from programl.tasks.run_options import (
    DATA_GROUP,
    RunOptions,
    checkpoint_minutes_option,
    config_option,
    data_dir_option,
    epochs_option,
    evaluation_output_option,
    jobs_option,
    restart_option,
    run_dir_option,
    seed_option,
    time_limit_option,
)
from programl.util.text import fmt, markdown_table

__all__ = [
    "CXX_SOURCES",
    "MODEL_GROUP",
    "OPTIMISATION_GROUP",
    "SCOPE_GROUP",
    "ClassifyappEvaluateOptions",
    "ClassifyappOptions",
    "ClassifyappRunOptions",
    "ClassifyappSpec",
]

#: The sources ``programl predict classifyapp`` compiles as the POJ-104 graphs were.
CXX_SOURCES = (".c", ".cc", ".cpp", ".cxx", ".c++")

#: The argument groups of ``programl train classifyapp --help``.
SCOPE_GROUP = "scope"
MODEL_GROUP = "model"
OPTIMISATION_GROUP = "optimisation"


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassifyappOptions(TaskOptions):
    """The options of ``programl train classifyapp`` (``config.json``'s ``model`` entry; ``--config`` reads them
    back). ``seed`` is the training engine's ``--seed``."""

    GROUPS = (SCOPE_GROUP, MODEL_GROUP, OPTIMISATION_GROUP)

    settings: list[int] = option(
        [0],
        group=SCOPE_GROUP,
        metavar="I",
        low=0,
        high=7,
        range_text="in 0..7",
        help="optimisation settings 0..7 (-O0..-O3, then with -ffast-math)",
    )
    eval_settings: list[int] | None = option(
        None,
        group=SCOPE_GROUP,
        metavar="I",
        low=0,
        high=7,
        range_text="in 0..7",
        help="optimisation settings of the validation and test splits (e.g. 0: train on compilation variants, "
        "choose and score on -O0 as the single-setting runs do)",
        default_text="those of --settings",
    )
    per_class: int | None = option(
        None,
        group=SCOPE_GROUP,
        metavar="N",
        low=5,
        range_text="at least 5 (3 train, 1 val, 1 test)",
        help="use N programs per class, 3:1:1",
        default_text="all, ~500",
    )
    split_seed: int = option(204, group=SCOPE_GROUP, help="seed of the 3:1:1 split", **SEED_RANGE)
    model: str = option("ggnn", group=MODEL_GROUP, choices=("ggnn", "rgcn"), help="the network")
    hidden: int = option(200, group=MODEL_GROUP, help="embedding and state size")
    layer_timesteps: list[int] = option(
        [2, 2, 2, 2],
        group=MODEL_GROUP,
        metavar="T",
        low=1,
        help="steps per parameter set",
        default_text="2 2 2 2 = 8 steps, 4 sets",
    )
    no_positions: bool = option(False, group=MODEL_GROUP, help="no position gating")
    node_type_gru: bool = option(False, group=MODEL_GROUP, help="one GRU per node type")
    numbers_and_types: bool = option(
        False,
        group=MODEL_GROUP,
        help="give the network the value of each numeric constant and the shape of each vector, array and struct "
        "type as node inputs (ggnn; docs/numbers_types.md; not in the paper)",
    )
    string_bytes: bool = option(
        False,
        group=MODEL_GROUP,
        help="give the network the first bytes of each string constant as node inputs (ggnn; docs/numbers_types.md; "
        "not in the paper)",
    )
    dropout: float = option(
        0.2, group=MODEL_GROUP, low=0.0, high=1.0 - 1e-9, range_text="in [0, 1)", help="graph-state dropout"
    )
    lr: float = option(
        2.5e-4, group=OPTIMISATION_GROUP, low=math.ulp(0.0), help="AdamW learning rate", default_text="2.5e-4"
    )
    weight_decay: float = option(0.01, group=OPTIMISATION_GROUP, low=0.0, help="AdamW weight decay")
    new_inputs_lr: float | None = option(
        None,
        group=OPTIMISATION_GROUP,
        metavar="LR",
        low=math.ulp(0.0),
        help="AdamW learning rate of the --numbers-and-types and --string-bytes embeddings: from --init-from weights "
        "without them they start at zero, and at a fine-tuning --lr they would hardly move in a short run",
        default_text="--lr",
    )
    batch_graphs: int = option(128, group=OPTIMISATION_GROUP, low=1, help="graphs per batch at most")
    batch_nodes: int = option(200_000, group=OPTIMISATION_GROUP, low=1, help="nodes per batch at most")
    seed: int

    def __post_init__(self) -> None:
        """Check, then keep ``eval_settings`` as the data set reads it: ascending, each once, and None when it names
        the training settings (``--eval-settings 0`` beside ``--settings 0`` is a single-setting run, so its card and
        a resumption of it say so)."""
        super().__post_init__()
        if self.eval_settings:  # (an empty list stays for the data set to refuse)
            from programl.datasets.poj104_info import canonical_settings, distinct_eval_settings  # not for --help

            chosen = distinct_eval_settings(canonical_settings(self.settings), self.eval_settings)
            object.__setattr__(self, "eval_settings", None if chosen is None else list(chosen))


def _source_option():
    """``--source PATH``: the POJ-104 programs the data set is processed from."""
    return option(
        None,
        group=DATA_GROUP,
        metavar="PATH",
        help="poj104.tar.xz, its directory or a codexglue/ directory, read when the data set is processed",
        default_text="$PROGRAML_SHARED_DATA/poj104 or ../shared/data/poj104",
    )


def _no_verify_option():
    """``--no-verify``."""
    return option(
        False, group=DATA_GROUP, help="accept a source that is not the published POJ-104 (other programs, tests)"
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassifyappRunOptions(RunOptions):
    """The run options of ``programl train classifyapp``: where the data and the run are, what is built, the epoch
    and time budget (not recorded as the model's options, except ``seed``)."""

    GROUPS = (DATA_GROUP,)

    source: str | None = _source_option()
    no_verify: bool = _no_verify_option()
    legacy_source: str | None = option(
        None,
        group=DATA_GROUP,
        metavar="PATH",
        help="llvm_ir.tar.bz2 or its directory, the extra test set",
        default_text="beside --source in ../legacy-ir, when present",
    )
    no_legacy: bool = option(False, group=DATA_GROUP, help="no legacy IR test set")
    data_dir: str = data_dir_option("poj104")
    jobs: int = jobs_option()
    no_build: bool = option(
        False,
        group=SCOPE_GROUP,
        help="use the graphs already built (every graph of the scope built or failed to compile); build nothing",
    )
    time_limit: float | None = time_limit_option(
        OPTIMISATION_GROUP, "stop before an epoch that would end past this many minutes of training"
    )
    checkpoint_minutes: float = checkpoint_minutes_option()
    run_dir: str = run_dir_option("classifyapp")
    epochs: int = epochs_option(25)
    restart: bool = restart_option()
    config: str | None = config_option("classifyapp")
    seed: int = seed_option(42)


#: The fields of :class:`ClassifyappRunOptions` that ``--help`` lists before the task's options, and after them (then
#: the runtime options).
_RUN_BEFORE = ("source", "no_verify", "legacy_source", "no_legacy", "data_dir", "jobs")
_RUN_AFTER = ("no_build", "time_limit", "checkpoint_minutes", "run_dir", "epochs", "restart", "config")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassifyappEvaluateOptions(RunOptions):
    """The options of ``programl evaluate classifyapp`` (the model's are the trained run's)."""

    run_dir: str = option(
        os.path.join("runs", "classifyapp"), metavar="DIR", help="a run of 'programl train classifyapp'"
    )
    checkpoint: str = option("best", choices=("best", "last"), help="default: best", default_text="")
    split: str = option(
        "all",
        choices=("test", "val", "legacy", "all"),
        help="default: all (test, val and legacy)",
        default_text="",
    )
    data_dir: str | None = option(
        None, group=DATA_GROUP, metavar="DIR", help="as for training", default_text="the run's"
    )
    source: str | None = _source_option()
    no_verify: bool = _no_verify_option()
    out: str | None = evaluation_output_option()


TRAIN_EXAMPLES = """\
examples:
  programl train classifyapp --per-class 100 --epochs 10 --hidden 64 --threads 2     a CPU-sized run
  programl train classifyapp --settings 0 1 2 3 4 5 6 7 --epochs 80 --hidden 200 --device cuda   the full protocol
  programl train classifyapp --settings 0 1 2 3 --eval-settings 0     variants augment training; chosen, scored at -O0
  torchrun --nproc_per_node 2 -m programl.tasks.classifyapp train --run-dir runs/poj104 ...  DDP

--data-dir is the root of the POJ-104 data set (raw/, processed/). Its files processed/poj104-*.pt and .json are
all a run needs: copied under processed/ of another machine's --data-dir, they train there without source, clang
or graphs (a GPU machine), and a run resumed there is the same run.
"""
EVALUATE_EXAMPLES = """\
examples:
  programl evaluate classifyapp --run-dir runs/classifyapp                 test and legacy error of best.pt
  programl evaluate classifyapp --run-dir runs/classifyapp --split val --checkpoint last
  programl evaluate classifyapp --run-dir runs/classifyapp --split test --out eval   a run still training
"""


# ---------------------------------------------------------------------------------------------------------------
# Command line


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``programl train classifyapp``: :class:`~programl.tasks.classifyapp.spec.ClassifyappOptions` and
    :class:`ClassifyappRunOptions`."""
    groups = add_options(parser, ClassifyappRunOptions, only=_RUN_BEFORE)
    add_options(parser, ClassifyappOptions, groups=groups)
    add_options(parser, ClassifyappRunOptions, only=_RUN_AFTER, groups=groups)
    add_options(parser, ClassifyappRunOptions, only=RunOptions.keys(), groups=groups)


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``programl evaluate classifyapp``: :class:`ClassifyappEvaluateOptions` (its own, then the runtime
    options)."""
    own = tuple(key for key in ClassifyappEvaluateOptions.keys() if key not in RunOptions.keys())
    groups = add_options(parser, ClassifyappEvaluateOptions, only=own)
    add_options(parser, ClassifyappEvaluateOptions, only=RunOptions.keys(), groups=groups)


class ClassifyappSpec(TaskSpec):
    """POJ-104 algorithm classification (docs/spec/tasks.md#algorithm-classification): one graph-level model per run,
    104 classes."""

    name = "classifyapp"
    summary = "learn POJ-104 algorithm classification (104 classes of C/C++ programs)"
    title = "ProGraML POJ-104 algorithm classification"
    train_module = "programl.tasks.classifyapp.train"
    train_epilog = TRAIN_EXAMPLES
    evaluate_epilog = EVALUATE_EXAMPLES
    add_train_arguments = staticmethod(add_train_arguments)
    add_evaluate_arguments = staticmethod(add_evaluate_arguments)
    options = ClassifyappOptions
    predictor = ClassifyappPredictor
    predict_help = "the POJ-104 class of C/C++ programs"
    predict_examples = """\
examples:
  programl predict classifyapp examples/quicksort.cc                  the 5 most likely POJ-104 classes
  programl predict classifyapp --top 3 --json a.c b.cc
"""
    predict_order = 3

    def model_spec(self, config: Mapping[str, Any], vocabulary_size: int, where: str = "config.json") -> dict:
        from programl.datasets.poj104_info import NUM_CLASSES  # numpy: not for --help

        o = require_options(config, ("model", "hidden", "layer_timesteps", "dropout"), where)
        common = {
            "hidden_channels": o["hidden"],
            "layer_timesteps": list(o["layer_timesteps"]),
            "dropout": o["dropout"],
        }
        optional = {k: True for k in ("numbers_and_types", "string_bytes") if config.get(k, False)}
        if o["model"] == "rgcn":
            for key in optional:
                flag = "--" + key.replace("_", "-")
                raise ProgramlError(f"{where}: {flag} is a ggnn option (the rgcn does not read them)")
            return {"class": "RGCNGraphClassifier", "args": [vocabulary_size, NUM_CLASSES], "kwargs": common}
        if o["model"] != "ggnn":
            raise ProgramlError(f"{where}: unknown classifyapp model {o['model']!r}")
        extra = require_options(config, ("no_positions", "node_type_gru"), where)
        return {
            "class": "GGNNGraphClassifier",
            "args": [vocabulary_size, NUM_CLASSES],
            "kwargs": {
                **common,
                "use_positions": not extra["no_positions"],
                "node_type_gru": extra["node_type_gru"],
                # (only when on: the model.json of the paper's model stays as it was)
                **optional,
            },
        }

    # ---------------------------------------------------------------------------------------------------- export
    def outputs(self, files: RunFiles) -> dict[str, Any]:
        from programl.datasets.poj104_info import NUM_CLASSES

        return {
            "level": "graph",
            "classes": [str(c) for c in range(1, NUM_CLASSES + 1)],
            "meaning": "the POJ-104 problem (1..104) the program solves",
        }

    def inputs(self, files: RunFiles) -> dict[str, Any]:
        from programl.datasets.poj104_info import OPT_SETTINGS

        settings = files.config["model"].get("settings") or [0]
        return {
            "sources": "C/C++ programs, compiled as the POJ-104 graphs were (C++11, ProGraML's header of "
            "includes, void main -> int main; fallback recipes), with the flags below",
            "flags": list(OPT_SETTINGS[settings[0]]),
            "settings": list(settings),
        }

    def scores(self, files: RunFiles) -> dict[str, Any]:
        result = files.result
        drop = ("confusion_matrix", "per_class_accuracy", "confused_pairs", "rows", "predictions")
        keep = ("checkpoint", "checkpoint_epoch", "best_epoch", "best_val_accuracy")
        out = {k: result[k] for k in keep if k in result}
        for split in ("test", "val", "legacy"):
            if isinstance(result.get(split), dict):
                out[split] = {k: v for k, v in result[split].items() if k not in drop}
        return out

    # ---------------------------------------------------------------------------------------------------- card
    def card_task_line(self, m: Mapping[str, Any]) -> str:
        return "classifyapp (POJ-104)"

    def card_data(self, m: Mapping[str, Any]) -> list[str]:
        config = m["training"]["config"]
        options, scope = config.get("model", {}), config.get("scope", {})
        graphs, per_class = scope.get("graphs", {}), options.get("per_class")
        return [
            f"POJ-104 programs compiled by clang-22 at optimisation settings {options.get('settings')}"
            + (
                f" (validation and test at {options['eval_settings']})"
                if options.get("eval_settings") and options["eval_settings"] != options.get("settings")
                else ""
            )
            + ", split 3:1:1 "
            f"per class by program (seed {fmt(options.get('split_seed'))})"
            + (f", {per_class} programs per class" if per_class else ", all programs")
            + f": {fmt(graphs.get('train'))} training, {fmt(graphs.get('val'))} validation and "
            f"{fmt(graphs.get('test'))} test graphs. Graphs: `{fmt(config.get('data_dir'))}`."
        ]

    def card_scores(self, s: Mapping[str, Any]) -> list[str]:
        rows = [
            (
                split,
                fmt(s[split].get("count")),
                fmt(100 * s[split]["error"] if "error" in s[split] else None, ".2f"),
                fmt(s[split].get("accuracy"), ".4f"),
            )
            for split in ("test", "val", "legacy")
            if split in s
        ]
        lines = [
            f"Checkpoint of epoch {fmt(s.get('checkpoint_epoch'))} (best validation accuracy "
            f"{fmt(s.get('best_val_accuracy'), '.4f')}); top-1:",
            "",
        ]
        return lines + markdown_table(("split", "graphs", "error %", "accuracy"), rows)

    def card_limitations(self, m: Mapping[str, Any]) -> list[str]:
        return [
            "The classes are POJ-104's 104 programming problems (student solutions); any other program "
            "still gets five classes. Sources are compiled as in training (C++11, ProGraML's header, "
            f"flags {m.get('inputs', {}).get('flags')}); IR made otherwise is off the training "
            "distribution."
        ]

    def predict_command(self, m: Mapping[str, Any]) -> str:
        return "programl predict classifyapp PROGRAM.cc"

    # ---------------------------------------------------------------------------------------------------- predict
    def add_predict_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--top", type=count_argument(1), default=5, metavar="K", help="how many classes (default: 5)"
        )

    def source_graph(
        self, path: str, suffix: str, compile_flags: tuple[str, ...], flags: tuple[str, ...], timeout: float
    ):
        """A C/C++ program compiled as the POJ-104 graphs (:meth:`programl.datasets.POJ104.compile_program`); a compiler
        error is located in the file, not in the text with the header that clang read from stdin."""
        if suffix not in CXX_SOURCES:
            return None
        from programl.datasets.poj104_info import RECIPES, compile_program
        from programl.exceptions import GraphCreationError
        from programl.graph_builder.llvm import graph_from_ir

        try:
            text = Path(path).read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            raise GraphCreationError("no such file", path) from None
        try:
            ir, _ = compile_program(text, (*compile_flags, *flags), timeout=timeout)
        except GraphCreationError as error:
            if error.path not in (None, "-"):
                raise
            offset = RECIPES[0].header.count("\n")  # the error is the first recipe's, which prepends its header
            line = error.line - offset if error.line is not None and error.line > offset else None
            raise type(error)(error.message, path, line, error.column if line else None) from None
        return graph_from_ir(ir, path=path)

    def predict_options(self, args: argparse.Namespace) -> dict[str, Any]:
        return {"top": args.top}

    def predict_text(self, path: str, name: str, nodes: int, result: Mapping[str, Any]) -> list[str]:
        lines = [f"{path}: POJ-104 classes (model {name})"]
        lines += [
            f"  {rank}. class {item['class']:>3}  p={item['probability']:.3f}"
            for rank, item in enumerate(result["top"], start=1)
        ]
        return lines
