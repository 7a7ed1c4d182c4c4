"""studies/plot_dataflow_runs.py: one PNG from the logs of several dataflow runs; a missing log is an error."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

SCRIPT = Path(__file__).resolve().parents[1] / "plot_dataflow_runs.py"


def load_script():
    spec = importlib.util.spec_from_file_location("plot_dataflow_runs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_run(directory: Path, analysis: str, with_result: bool) -> Path:
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps({"model": {"analysis": analysis}}))
    records = [{"epoch": e, "train_examples": 2500 * e, "val_f1": 0.2 * e} for e in (1, 2, 3)]
    (directory / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if with_result:
        result = {"best_epoch": 2, "train_examples_seen": 7500, "tests": {"T30": {"f1": 0.41}}}
        (directory / "result.json").write_text(json.dumps(result))
    return directory


def test_plots_runs_with_and_without_results(tmp_path: Path, capsys) -> None:
    module = load_script()
    runs = [make_run(tmp_path / "a", "reachability", True), make_run(tmp_path / "b", "liveness", False)]
    assert module.read_log(runs[0])[1] == {"epoch": 2, "train_examples": 5000, "val_f1": 0.4}
    out = tmp_path / "img" / "curves.png"
    assert module.main([str(r) for r in runs] + ["-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in capsys.readouterr().out


def test_dir_labels_tell_apart_runs_of_one_analysis(tmp_path: Path) -> None:
    module = load_script()
    runs = [
        make_run(tmp_path / "campaign" / "liveness", "liveness", True),
        make_run(tmp_path / "campaign4" / "liveness", "liveness", True),
    ]
    configs = [json.loads((r / "config.json").read_text()) for r in runs]
    assert {module.line_label(r, c, "analysis") for r, c in zip(runs, configs)} == {"liveness"}
    assert [module.line_label(r, c, "dir") for r, c in zip(runs, configs)] == [str(r) for r in runs]
    assert module.main([str(r) for r in runs] + ["-o", str(tmp_path / "x.png"), "--label", "dir"]) == 0


def test_missing_log_is_an_error(tmp_path: Path, capsys) -> None:
    module = load_script()
    assert module.main([str(tmp_path / "nope"), "-o", str(tmp_path / "x.png")]) == 1
    assert "nope" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("damaged", ["config.json", "log.jsonl", "result.json"])
def test_damaged_run_is_one_line(tmp_path: Path, capsys, damaged: str) -> None:
    run = make_run(tmp_path / "run", "reachability", with_result=True)
    (run / damaged).write_text('{"epoch": 1,')
    assert load_script().main([str(run), "-o", str(tmp_path / "x.png")]) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"{run}: not a dataflow run") and "\n" not in error
    if damaged != "log.jsonl":  # the JSON files' errors name the file, line and column
        assert f"{run / damaged}:1:13: not JSON" in error
    assert not (tmp_path / "x.png").exists()


def test_settings_labels_and_gradient_norm_panel(tmp_path: Path) -> None:
    module = load_script()
    run = make_run(tmp_path / "a", "datadep", False)
    config = {"model": {"analysis": "datadep", "lr": 0.001, "warmup_examples": 2000, "clip_grad_norm": 1.0}}
    (run / "config.json").write_text(json.dumps(config))
    records = [{"epoch": 1, "train_examples": 2500, "val_f1": 0.3, "train_grad_norm_max": 6.5}]
    (run / "log.jsonl").write_text(json.dumps(records[0]) + "\n")
    assert module.settings_label(config) == "lr 0.001, warm-up 2k, clip 1"
    assert module.settings_label({"model": {"lr": 0.001, "clip_grad_norm": 1e9}}) == "lr 0.001"
    out = tmp_path / "lr.png"
    assert module.main([str(run), "-o", str(out), "--label", "settings", "--grad-norms", "--title", "t"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
