"""``programl train`` / ``programl evaluate``: task sub-commands, fast help, one-line errors and exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

import programl.cli as cli
from programl.tasks.registry import TASKS


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    """The commands as ``programl.cli`` registers them (a no-op once they are registered there)."""
    monkeypatch.setitem(cli.COMMANDS, "train", "programl.cli.train")
    monkeypatch.setitem(cli.COMMANDS, "evaluate", "programl.cli.evaluate")


def run_cli(capsys, *args) -> tuple[int, str, str]:
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exit:  # argparse: --help and usage errors
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_registry_lists_the_tasks() -> None:
    assert {name: spec.train_module for name, spec in TASKS.items()} == {
        "devmap": "programl.tasks.devmap.train",
        "classifyapp": "programl.tasks.classifyapp.train",
        "dataflow": "programl.tasks.dataflow.train",
    }


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_help_lists_every_task(capsys, command) -> None:
    code, out, _ = run_cli(capsys, command, "--help")
    assert code == 0
    for task in TASKS:
        assert task in out


def test_task_help_has_examples(capsys) -> None:
    code, out, _ = run_cli(capsys, "train", "devmap", "--help")
    assert code == 0 and "--platform" in out and "examples:" in out
    code, out, _ = run_cli(capsys, "train", "classifyapp", "--help")
    assert code == 0 and "--per-class" in out and "torchrun" in out
    code, out, _ = run_cli(capsys, "evaluate", "classifyapp", "--help")
    assert code == 0 and "--checkpoint" in out


def test_building_the_parser_does_not_import_torch() -> None:
    code = "import sys, programl.cli as c; c.make_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("argv", [["--help"], ["train", "dataflow", "--help"], ["evaluate", "devmap", "--help"]])
def test_help_imports_only_what_it_lists(argv) -> None:
    """``programl --help`` imports no command module (nor numpy); a task's ``--help`` imports its spec, not its
    training module (which imports torch at its top)."""
    code = (
        "import sys, contextlib, io, programl.cli as c\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: c.main(sys.argv[1:])\n"
        "    except SystemExit: pass\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('programl.', 'numpy', 'torch')))))"
    )
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True).stdout
    loaded = set(out.split())
    assert not {m for m in loaded if m.startswith(("torch", "programl.training"))}
    assert not {m for m in loaded if m.endswith(".train") and m.startswith("programl.tasks.")}
    if argv == ["--help"]:
        assert not {
            m for m in loaded if m.startswith("numpy") or m.startswith("programl.cli.") and m != "programl.cli.helptext"
        }


def test_missing_task_is_a_usage_error(capsys) -> None:
    code, _, err = run_cli(capsys, "train")
    assert code == 2 and "TASK" in err


def test_bad_option_values_exit_2(capsys, tmp_path) -> None:
    code, _, err = run_cli(capsys, "train", "devmap", "--folds", "2", "--source-dir", tmp_path, "-q")
    assert code == 2 and "--folds must be at least 3" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "train", "classifyapp", "--settings", "9", "-q")
    assert code == 2 and "--settings" in err
    code, _, err = run_cli(capsys, "train", "devmap", "--device", "tpu-9000", "-q", "--source-dir", tmp_path)
    assert code == 2 and "not a device" in err


def test_missing_data_is_one_line_and_exit_1(capsys, tmp_path) -> None:
    code, _, err = run_cli(
        capsys,
        "train",
        "devmap",
        "--source-dir",
        tmp_path / "nowhere",
        "--data-dir",
        tmp_path / "data",
        "--run-dir",
        tmp_path / "run",
        "-q",
    )
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("programl train devmap: ") and "cgo17-amd.csv: missing" in lines[0]
    code, _, err = run_cli(
        capsys,
        "train",
        "classifyapp",
        "--source",
        tmp_path / "nowhere",
        "--data-dir",
        tmp_path / "data",
        "--run-dir",
        tmp_path / "run2",
        "-q",
    )
    assert code == 1 and len(err.strip().splitlines()) == 1 and "missing" in err


@pytest.mark.parametrize("task", ["devmap", "classifyapp"])
def test_evaluate_without_a_run_is_one_line_and_exit_1(capsys, tmp_path, task) -> None:
    code, _, err = run_cli(capsys, "evaluate", task, "--run-dir", tmp_path, "-q")
    assert code == 1
    assert (
        err.strip() == f"programl evaluate {task}: error: {tmp_path}: no config.json (not a `programl train "
        f"{task}` run)"
    )


@pytest.mark.parametrize("command", ["train", "evaluate"])
@pytest.mark.parametrize("task", [None, *TASKS])
def test_help_has_no_rst_markup_or_spec_references(capsys, command, task) -> None:
    """``--help`` is read by users of the package, which ships no SPEC and renders no reStructuredText."""
    code, out, _ = run_cli(capsys, command, *([task] if task else []), "--help")
    assert code == 0
    for markup in ("``", "SPEC", ":mod:", ":class:", ":func:", "`programl"):
        assert markup not in out, (markup, out)


def test_dataflow_help_shows_the_real_run_dir_default(capsys) -> None:
    code, out, _ = run_cli(capsys, "train", "dataflow", "--help")
    assert code == 0 and "(default: runs/dataflow/ANALYSIS)" in " ".join(out.split())
