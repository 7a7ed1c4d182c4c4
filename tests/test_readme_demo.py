"""The README's first demo (issue 35, item 6): ``make demo`` shows both halves, a graph and a pretrained model's
prediction on a bundled example, and the README's opening shows those commands and their real output (trimmed)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
TASKS = {"dataflow", "devmap", "classifyapp"}


def _demo_recipe() -> list[str]:
    """The shell lines of the Makefile's ``demo`` target (continuations joined), ``$(BIN)/`` removed."""
    lines = (REPO / "Makefile").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("demo:"))
    recipe, current = [], ""
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        current += line.strip().lstrip("@").rstrip("\\") + " "
        if not line.endswith("\\"):
            recipe.append(" ".join(current.replace("$(BIN)/", "").split()))
            current = ""
    return recipe


def _demo_line(program: str) -> str:
    """The demo's ``programl PROGRAM ...`` line, as written (globs unexpanded)."""
    [line] = [line for line in _demo_recipe() if line.startswith(f"programl {program} ")]
    return line


def _opening() -> str:
    """The README before its first ``## `` heading."""
    return README[: README.index("\n## ")]


def _shown_output(command: str) -> list[str]:
    """The lines the README's opening shows after ``$ COMMAND``, up to the next ``$`` line or the block's end."""
    lines = _opening().splitlines()
    start = lines.index("$ " + command)
    shown = []
    for line in lines[start + 1 :]:
        if line.startswith("$ ") or line.startswith("```"):
            break
        shown.append(line)
    return shown


def test_the_demo_target_predicts_with_a_pretrained_model_on_a_bundled_example() -> None:
    argv = shlex.split(_demo_line("predict"))
    assert argv[2] in TASKS
    inputs = [arg for arg in argv[3:] if arg.startswith("examples/")]
    assert inputs and all((REPO / path).is_file() for path in inputs)
    assert "--model-dir" not in argv  # the models bundled in the package, no download
    assert _demo_recipe().index(_demo_line("predict")) > _demo_recipe().index(_demo_line("build"))


def test_the_readme_opens_with_the_two_commands_then_the_demo_output() -> None:
    assert README.startswith("# programl\n\n```\nmake demo ")
    first_block = README.split("```")[1]
    assert [line.split()[:2] for line in first_block.splitlines() if line.startswith("make")] == [
        ["make", "demo"],
        ["make", "test"],
    ]
    second_block = README.split("```")[3]
    assert README.index(second_block) < README.index("\n## ")
    for program in ("build", "predict"):
        assert "$ " + _demo_line(program) in second_block.splitlines(), program


def test_the_readme_shows_the_demo_prediction_as_it_is(clang22, capsys, monkeypatch) -> None:
    """The README's trimmed output of the demo's ``programl predict`` is that command's real output."""
    pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    from programl.cli import main

    monkeypatch.chdir(REPO)
    assert main(shlex.split(_demo_line("predict"))[1:]) == 0
    real = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    shown = [line.rstrip() for line in _shown_output(_demo_line("predict")) if line != "..."]
    assert shown and shown[0] == real[0]  # the summary line: root, counts, and the comparison with the analysis
    assert all(line in real for line in shown), [line for line in shown if line not in real]
