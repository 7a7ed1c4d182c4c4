"""The toy task as the package sees it: what a new task must say, and nothing else."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from programl.tasks.base import TaskSpec
from programl.tasks.options import TaskOptions, option
from programl.tasks.run_files import RunFiles
from programl.tasks.run_options import RUN_GROUP, RunOptions, run_dir_option
from tests.tasks.toy_task.predict import ToyPredictor

MODEL_GROUP = "model"
CLASSES = ["small", "large"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToyOptions(TaskOptions):
    """The options of ``programl train toy`` (``config.json``'s ``model`` entry)."""

    GROUPS = (MODEL_GROUP,)

    hidden: int = option(8, group=MODEL_GROUP, low=1, high=64, help="node state size")
    steps: int = option(2, group=MODEL_GROUP, low=1, high=8, help="message-passing steps")
    threshold: int = option(20, group=MODEL_GROUP, low=0, help="a program of more instructions is large")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToyRunOptions(RunOptions):
    """Where ``programl train toy`` reads its programs and writes its run."""

    inputs: list[str] = option(["examples/dot_product.ll"], group=RUN_GROUP, metavar="FILE", help="IR files")
    run_dir: str = run_dir_option("toy")
    epochs: int = option(3, group=RUN_GROUP, low=1, high=100, help="training epochs")


class ToySpec(TaskSpec):
    """Small or large programs."""

    name = "toy"
    summary = "learn whether a program is small or large (a toy task)"
    options = ToyOptions
    run_options = ToyRunOptions
    predictor = ToyPredictor

    def model_spec(self, config: Mapping[str, Any], vocabulary_size: int, where: str = "config.json") -> dict:
        return {
            "class": "GGNNGraphClassifier",
            "args": [vocabulary_size, len(CLASSES)],
            "kwargs": {"hidden_channels": config["hidden"], "layer_timesteps": [config["steps"]]},
        }

    def outputs(self, files: RunFiles) -> dict[str, Any]:
        threshold = files.config["model"]["threshold"]
        return {"level": "graph", "classes": CLASSES, "meaning": f"whether a program has over {threshold} instructions"}
