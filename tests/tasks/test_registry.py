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


@pytest.mark.parametrize("module", ["cli/train.py", "cli/evaluate.py", "models/export.py", "models/card.py"])
def test_no_task_name_is_compared_outside_the_tasks(module) -> None:
    """The modules that went through the registry in this step; the rest of the package follows in issue 35."""
    text = (REPO / "programl" / module).read_text(encoding="utf-8")
    assert not _COMPARISON.findall(text), _COMPARISON.findall(text)


def test_every_shipped_card_is_written_from_its_model_json_by_the_registry() -> None:
    """The cards come from the task's spec now: the shipped models exported by the current code get their card back
    byte for byte (the data-flow models' cards were written by an older card, with other words in two places)."""
    import json

    from programl.pretrained.card import model_card

    weights = REPO / "programl" / "models" / "weights"
    for directory in sorted(p for p in weights.iterdir() if p.is_dir()):
        metadata = json.loads((directory / "model.json").read_text())
        card = model_card(metadata)
        assert card.startswith(f"# {metadata['name']}: {TASKS[metadata['task']].title}")
        if directory.name in ("classifyapp", "devmap-amd", "devmap-nvidia"):  # exported by the current code
            assert card == (directory / "MODEL_CARD.md").read_text(), directory.name
