"""One typed options object per run: every option of ``programl train|evaluate <task>`` is a field of the task's
options or of its run options (the command line is generated from them), the entry points turn the parsed command
line into one :class:`~programl.tasks.options.TaskRun`, and nothing past them reads argparse's namespace or a config
dictionary."""

from __future__ import annotations

import argparse
import ast
import dataclasses
from pathlib import Path

import pytest

import programl
from programl.exceptions import UsageError
from programl.tasks.classifyapp.spec import ClassifyappEvaluateOptions, ClassifyappOptions, ClassifyappRunOptions
from programl.tasks.dataflow.spec import EVAL_OVERRIDES, DataflowEvaluateOptions, DataflowOptions, DataflowRunOptions
from programl.tasks.devmap.spec import DevmapEvaluateOptions, DevmapOptions, DevmapRunOptions
from programl.tasks.options import TaskRun
from programl.tasks.registry import TASKS

TASKS_DIR = Path(programl.__file__).parent / "tasks"

#: (model options, run options) of each command.
OPTIONS = {
    ("train", "devmap"): (DevmapOptions, DevmapRunOptions),
    ("evaluate", "devmap"): (None, DevmapEvaluateOptions),
    ("train", "classifyapp"): (ClassifyappOptions, ClassifyappRunOptions),
    ("evaluate", "classifyapp"): (None, ClassifyappEvaluateOptions),
    ("train", "dataflow"): (DataflowOptions, DataflowRunOptions),
    ("evaluate", "dataflow"): (None, DataflowEvaluateOptions),
}


def _parser(command: str, task: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"programl {command} {task}")
    getattr(TASKS[task], f"add_{command}_arguments")(parser)
    return parser


@pytest.mark.parametrize(("command", "task"), sorted(OPTIONS), ids=" ".join)
def test_every_option_is_a_field(command, task) -> None:
    """The parser holds exactly the option fields of the command's classes: no hand-written ``add_argument``, and
    no field left off the command line (an evaluation's overrides are the task options' own fields)."""
    model, run = OPTIONS[(command, task)]
    parser = _parser(command, task)
    dests = {a.dest for a in parser._actions if not isinstance(a, argparse._HelpAction)}
    fields = {f.name for f in dataclasses.fields(run) if "option" in f.metadata}
    if model is not None:
        fields |= {f.name for f in dataclasses.fields(model) if "option" in f.metadata}
        fields -= {"init_from"} if task == "devmap" else set()  # one start for every fold: not an option there
    if (command, task) == ("evaluate", "dataflow"):
        fields |= set(EVAL_OVERRIDES)
    assert dests == fields


@pytest.mark.parametrize("task", sorted(TASKS))
def test_the_entry_point_makes_one_typed_object(task, tmp_path) -> None:
    """The parsed defaults become a TaskRun whose ``model`` is config.json's ``model`` entry and whose ``run`` holds
    the rest; ``seed`` and ``epochs``, run options that the model options record too, agree."""
    model, run = OPTIONS[("train", task)]
    argv = ["--run-dir", str(tmp_path), "--seed", "7"]
    opts = TaskRun.from_args(_parser("train", task).parse_args(argv), model, run)
    assert isinstance(opts.model, model) and isinstance(opts.run, run)
    assert opts.run.run_dir == str(tmp_path) and opts.run.seed == opts.model.seed == 7
    assert set(opts.model.config()) == {f.name for f in dataclasses.fields(model)}
    assert not set(opts.model.config()) & ({f.name for f in dataclasses.fields(run)} - {"seed", "epochs"})
    if "epochs" in opts.model.config():
        assert opts.model.epochs == opts.run.epochs


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seed", "-1"], "--seed must be in 0..4294967295, not -1"),
        (["--threads", "5000"], r"--threads must be in 0..4096 \(0: torch's choice\), not 5000"),
        (["--workers", "-1"], "--workers must be in 0..256, not -1"),
        (["--epochs", "0"], r"--epochs must be in 1..10\^9, not 0"),
        (["--checkpoint-minutes", "nan"], "--checkpoint-minutes must be a finite number, not nan"),
        (["--time-limit", "0"], r"--time-limit must be positive \(minutes\), not 0"),
        (["--split-seed", str(2**32)], "--split-seed must be in 0..4294967295, not 4.29497e\\+09"),
    ],
)
def test_run_options_carry_their_ranges(argv, message) -> None:
    """A run option out of its range is one line naming it, from its field (as the task's options are)."""
    args = _parser("train", "classifyapp").parse_args(argv)
    with pytest.raises(UsageError, match=f"^{message}$"):
        TaskRun.from_args(args, ClassifyappOptions, ClassifyappRunOptions)


def _modules() -> list[Path]:
    """The training modules of the tasks: ``train.py`` and what devmap's was split into."""
    devmap = [TASKS_DIR / "devmap" / f"{name}.py" for name in ("folds", "evaluate", "report")]
    return sorted(TASKS_DIR.glob("*/train.py")) + devmap


@pytest.mark.parametrize("path", _modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_past_the_entry_point_no_namespace_and_no_config_dictionary(path) -> None:
    """No ``args.<name>`` (argparse's namespace) and no ``config["<name>"]`` / ``config.get("<name>")`` of the
    options: they read the TaskRun's typed fields."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "args":
            found.append(f"{path.name}:{node.lineno}: args.{node.attr}")
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "config":
            found.append(f"{path.name}:{node.lineno}: config[...]")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "config"
        ):
            found.append(f"{path.name}:{node.lineno}: config.{node.func.attr}(...)")
    assert found == []
