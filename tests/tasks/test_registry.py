"""The task registry (issue 35 item 1): a task plugs in through ``programl.tasks.registry.TASKS``; the command line,
the export of pretrained models and their cards look a task up there and never compare its name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from programl.exceptions import ProgramlError
from programl.tasks import TASKS, TaskSpec, get_task

REPO = Path(__file__).resolve().parents[2]
#: A comparison with a task's name: ``== "devmap"``, ``!= 'dataflow'``, ``in ("devmap", ...)``, a dict keyed by them.
_COMPARISON = re.compile(
    r"""(==|!=)\s*["'](dataflow|devmap|classifyapp)["']|["'](dataflow|devmap|classifyapp)["']\s*(==|!=)"""
    r"""|\bin\s*[(\[{]\s*["'](dataflow|devmap|classifyapp)["']"""
    r"""|^\s*["'](dataflow|devmap|classifyapp)["']\s*:""",
    re.MULTILINE,
)


def test_the_registry_holds_the_three_tasks_in_help_order() -> None:
    assert list(TASKS) == ["devmap", "classifyapp", "dataflow"]
    for name, spec in TASKS.items():
        assert isinstance(spec, TaskSpec) and spec.name == name and spec.summary and spec.title
        assert spec.train_module == f"programl.tasks.{name}.train"
    with pytest.raises(ProgramlError, match=r"config.json: unknown task 'nope' \(expected one of devmap, "):
        get_task("nope", "config.json")


def test_the_registry_imports_no_torch() -> None:
    code = "import sys, programl.tasks.registry; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "module",
    [
        "cli/train.py",
        "cli/evaluate.py",
        "cli/predict.py",
        "pretrained/export.py",
        "pretrained/card.py",
        "pretrained/hub.py",
        "pretrained/metadata.py",
        "tasks/predict.py",
    ],
)
def test_no_task_name_is_compared_outside_the_tasks(module) -> None:
    """The modules that went through the registry in this step; the rest of the package follows in issue 35."""
    text = (REPO / "programl" / module).read_text(encoding="utf-8")
    assert not _COMPARISON.findall(text), _COMPARISON.findall(text)


def test_predict_looks_a_task_up_in_the_registry(capsys) -> None:
    """``programl predict`` has a sub-command per task, in the order it always had, each set up by the task's spec
    (help, examples, options, the models wanted, how a source is compiled)."""
    import argparse

    from programl.cli import predict

    parser = argparse.ArgumentParser(prog="programl")
    predict.add_parser(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["predict", "nope"])
    assert "(choose from 'dataflow', 'devmap', 'classifyapp')" in capsys.readouterr().err
    argv = {"dataflow": "f.ll", "devmap": "f.cl", "classifyapp": "f.c"}
    args = {name: parser.parse_args(["predict", name, file]) for name, file in argv.items()}
    for name, a in args.items():
        spec = TASKS[a.task]
        assert a.task == name and a.parser.description == f"Predict {spec.predict_help} with a pretrained model."
        assert a.parser.epilog == spec.predict_examples and f"programl predict {name} " in a.parser.epilog
    assert {name: TASKS[name].predict_options(a) for name, a in args.items()} == {
        "dataflow": {"roots": None, "num_roots": None, "seed": 0, "steps": None, "compare": False},
        "devmap": {"transfer": None, "wgsize": None},
        "classifyapp": {"top": 5},
    }
    assert TASKS["devmap"].predict_wanted(args["devmap"]) == ([{"platform": "amd"}, {"platform": "nvidia"}], False)
    assert TASKS["classifyapp"].predict_wanted(args["classifyapp"]) == ([{}], True)
    assert TASKS["devmap"].source_graph("f.ll", ".ll", (), (), 1.0) is None  # built as `programl build` does


def test_every_shipped_card_is_written_from_its_model_json_by_the_registry() -> None:
    """The cards come from the task's spec now: the shipped models exported by the current code get their card back
    byte for byte (the data-flow models' cards were written by an older card, with other words in two places)."""
    import json

    from programl.pretrained.card import model_card

    weights = REPO / "programl" / "pretrained" / "weights"
    for directory in sorted(p for p in weights.iterdir() if p.is_dir()):
        metadata = json.loads((directory / "model.json").read_text())
        card = model_card(metadata)
        assert card.startswith(f"# {metadata['name']}: {TASKS[metadata['task']].title}")
        exported_now = directory.name.endswith(("-step-free", "-fixpoint"))
        if directory.name in ("classifyapp", "devmap-amd", "devmap-nvidia") or exported_now:
            # exported by the current code
            assert card == (directory / "MODEL_CARD.md").read_text(), directory.name
