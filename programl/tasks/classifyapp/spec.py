"""The POJ-104 classification task as the package sees it (issue 35; SPEC §6.6, §7.4): the network of a run's
options, what its pretrained models' ``model.json`` and cards say, and how ``programl predict classifyapp`` uses
them. No torch."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError
from programl.tasks.base import TaskSpec, count_argument, require_options
from programl.tasks.run_files import RunFiles
from programl.util.text import fmt, markdown_table

__all__ = ["CXX_SOURCES", "ClassifyappSpec"]

#: The sources ``programl predict classifyapp`` compiles as the POJ-104 graphs were.
CXX_SOURCES = (".c", ".cc", ".cpp", ".cxx", ".c++")


class ClassifyappSpec(TaskSpec):
    name = "classifyapp"
    summary = "learn POJ-104 algorithm classification (104 classes of C/C++ programs)"
    title = "ProGraML POJ-104 algorithm classification"
    train_module = "programl.tasks.classifyapp.train"
    predict_help = "the POJ-104 class of C/C++ programs"
    predict_examples = """\
examples:
  programl predict classifyapp examples/quicksort.cc                  the 5 most likely POJ-104 classes
  programl predict classifyapp --top 3 --json a.c b.cc
"""
    predict_order = 3

    def model_spec(self, config: Mapping[str, Any], vocabulary_size: int, where: str = "config.json") -> dict:
        from programl.data.poj104 import NUM_CLASSES  # numpy: not for --help

        o = require_options(config, ("model", "hidden", "layer_timesteps", "dropout"), where)
        common = {
            "hidden_channels": o["hidden"],
            "layer_timesteps": list(o["layer_timesteps"]),
            "dropout": o["dropout"],
        }
        if o["model"] == "rgcn":
            return {"class": "RGCNGraphClassifier", "args": [vocabulary_size, NUM_CLASSES], "kwargs": common}
        if o["model"] != "ggnn":
            raise ProgramlError(f"{where}: unknown classifyapp model {o['model']!r}")
        extra = require_options(config, ("no_positions", "node_type_gru"), where)
        return {
            "class": "GGNNGraphClassifier",
            "args": [vocabulary_size, NUM_CLASSES],
            "kwargs": {**common, "use_positions": not extra["no_positions"], "node_type_gru": extra["node_type_gru"]},
        }

    # ---------------------------------------------------------------------------------------------------- export
    def outputs(self, files: RunFiles) -> dict[str, Any]:
        from programl.data.poj104 import NUM_CLASSES

        return {
            "level": "graph",
            "classes": [str(c) for c in range(1, NUM_CLASSES + 1)],
            "meaning": "the POJ-104 problem (1..104) the program solves",
        }

    def inputs(self, files: RunFiles) -> dict[str, Any]:
        from programl.data.poj104 import OPT_SETTINGS

        settings = files.config["model"].get("settings") or [0]
        return {
            "sources": "C/C++ programs, compiled as the POJ-104 graphs were (C++11, ProGraML's header of "
            "includes, void main -> int main; fallback recipes), with the flags below",
            "flags": list(OPT_SETTINGS[settings[0]]),
            "settings": list(settings),
        }

    def scores(self, files: RunFiles) -> dict[str, Any]:
        result = files.result
        drop = ("confusion_matrix", "per_class_accuracy", "rows", "predictions")
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
            f"POJ-104 programs compiled by clang-22 at optimisation settings {options.get('settings')}, split 3:1:1 "
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
    def predict(self, model, graph, **options):
        from programl.pretrained.inference import predict_classifyapp

        return predict_classifyapp(model, graph, **options)

    def add_predict_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--top", type=count_argument(1), default=5, metavar="K", help="how many classes (default: 5)"
        )

    def source_graph(
        self, path: str, suffix: str, compile_flags: tuple[str, ...], flags: tuple[str, ...], timeout: float
    ):
        """A C/C++ program compiled as the POJ-104 graphs (:func:`programl.data.poj104.compile_program`); a compiler
        error is located in the file, not in the text with the header that clang read from stdin."""
        if suffix not in CXX_SOURCES:
            return None
        from programl.data.poj104 import RECIPES, compile_program
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
