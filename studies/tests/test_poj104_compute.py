"""studies/poj104_compute.py: ways of training POJ-104 compared at equal compute."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

SCRIPT = runpy.run_path(str(Path(__file__).resolve().parents[1] / "poj104_compute.py"))


def _run(directory: Path, errors: list[float], seconds: float, threads: int = 1, test_epoch: int | None = None):
    directory.mkdir()
    records = [
        {"epoch": e + 1, "val_error": v, "seconds": seconds + 100, "val_seconds": 100, "threads": threads}
        for e, v in enumerate(errors)
    ]
    (directory / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if test_epoch is not None:
        (directory / "result.json").write_text(json.dumps({"checkpoint_epoch": test_epoch, "test": {"error": 0.2}}))
    return directory


def test_compute_is_training_time_times_threads(tmp_path):
    arm = SCRIPT["read_arm"]("a", _run(tmp_path / "a", [0.5, 0.4, 0.3], 3600, threads=2, test_epoch=3))
    assert arm["hours"] == pytest.approx([2, 4, 6]) and arm["val"] == pytest.approx([50, 40, 30])
    assert arm["best_val"] == pytest.approx(30) and arm["best_epoch"] == 3
    assert arm["test"] == {"epoch": 3, "hours": pytest.approx(6), "error": pytest.approx(20)}
    # a record without val_seconds counts its whole epoch
    old = tmp_path / "old"
    old.mkdir()
    (old / "log.jsonl").write_text(json.dumps({"epoch": 1, "val_error": 0.5, "seconds": 1800}) + "\n")
    assert SCRIPT["read_arm"]("old", old)["hours"] == pytest.approx([0.5])


def test_hours_to_reach_interpolates_log_log():
    arm = {"hours": [1.0, 4.0], "val": [40.0, 10.0]}
    assert SCRIPT["hours_to_reach"](arm, 20.0) == pytest.approx(2.0)  # halfway in log error is halfway in log hours
    assert SCRIPT["hours_to_reach"](arm, 40.0) == pytest.approx(1.0)
    assert SCRIPT["hours_to_reach"](arm, 5.0) is None


def test_multiplier_is_against_the_first_arms_best(tmp_path):
    base = SCRIPT["read_arm"]("base", _run(tmp_path / "base", [0.4, 0.2, 0.1, 0.08, 0.07], 3600))
    fast = SCRIPT["read_arm"]("fast", _run(tmp_path / "fast", [0.2, 0.07, 0.05, 0.04, 0.035, 0.033, 0.032], 3600))
    rows = SCRIPT["compare"]([base, fast], [10.0], fit=("base", "fast"))
    assert rows[0]["multiplier"] == pytest.approx(1.0) and rows[1]["multiplier"] == pytest.approx(2.5)
    assert rows[0]["hours_to"]["10"] == pytest.approx(3.0) and rows[1]["hours_to"]["10"] < 2.0
    fit = rows[1]["fit"]
    assert fit is not None and 0.0 <= fit["floor"] < 3.2 and fit["b"] > 0
    assert rows[0]["fit"] is None  # five epochs: too short a curve to fit
    text = SCRIPT["table"](rows, [10.0], "base")
    assert "| fast | 7 | 7.00 | 3.20 % (epoch 7) | – |" in text and "2.50×" in text


def test_main_writes_png_and_json_or_says_why_not(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    a = _run(tmp_path / "a", [0.5, 0.4], 1800, test_epoch=2)
    out, data = tmp_path / "c.png", tmp_path / "c.json"
    assert SCRIPT["main"]([f"A={a}", f"B={a}", "-o", str(out), "--json", str(data), "--level", "45"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads(data.read_text())
    assert [row["label"] for row in saved["arms"]] == ["A", "B"] and saved["arms"][0]["hours_to"]["45"] > 0
    assert SCRIPT["main"]([str(a)]) == 1
    assert SCRIPT["main"]([f"M={tmp_path / 'missing'}"]) == 1
    assert capsys.readouterr().err.count("poj104_compute.py:") == 2


def test_a_run_known_by_its_table_counts_gpu_epochs_as_the_median_cpu_epoch(tmp_path, capsys):
    table = tmp_path / "run.csv"
    table.write_text(
        'epoch,where,seconds,train_error,val_error\n1,"CPU, 2 threads",1800,50,40\n2,H200,100,30,20\n'
        '3,"CPU, 1 thread",5400,20,10\n'
    )
    arm = SCRIPT["read_table"]("t", table)
    # CPU epochs: 1.0 and 1.5 hours; the GPU epoch counts as their median, 1.25
    assert arm["hours"] == pytest.approx([1.0, 2.25, 3.75]) and arm["best_val"] == 10 and arm["best_epoch"] == 3
    assert SCRIPT["main"](["--csv", f"t={table}"]) == 0
    assert "| t | 3 | 3.75 | 10.00 % (epoch 3) | – |" in capsys.readouterr().out
    (tmp_path / "bad.csv").write_text("epoch,val_error\n1,5\n")
    assert SCRIPT["main"](["--csv", f"b={tmp_path / 'bad.csv'}"]) == 1
    assert SCRIPT["main"]([]) == 1
    assert "give at least one arm" in capsys.readouterr().err
    assert SCRIPT["main"](["--csv", f"t={table}", "--fit", "x"]) == 1
    assert "--fit names no arm: x" in capsys.readouterr().err


def test_tables_joined_by_commas_are_one_run_with_a_test_star_per_row_that_has_one(tmp_path, capsys):
    """A fine-tuning cycle's table continues the run's (``--csv LABEL=RUN.csv,CYCLES.csv``); its CPU-hours add on."""
    run, cycles = tmp_path / "run.csv", tmp_path / "cycles.csv"
    run.write_text('epoch,where,seconds,train_error,val_error\n1,"CPU, 2 threads",1800,50,40\n2,H200,100,30,20\n')
    cycles.write_text(
        'epoch,where,seconds,train_error,val_error,test_error\n1,"CPU, 2 threads",900,20,15,\n'
        '2,"CPU, 2 threads",900,18,12,13.5\n'
    )
    arm = SCRIPT["read_table"]("t", Path(f"{run},{cycles}"))
    # CPU rows: 1.0, 0.5 and 0.5 hours (the epochs repeat across the tables; each row counts once); the GPU row: 0.5
    assert arm["hours"] == pytest.approx([1.0, 1.5, 2.0, 2.5]) and arm["val"] == [40, 20, 15, 12]
    assert arm["test"] == {"epoch": 4, "hours": pytest.approx(2.5), "error": 13.5} and len(arm["tests"]) == 1
    out = tmp_path / "c.png"
    assert SCRIPT["main"](["--csv", f"t={run},{cycles}", "-o", str(out)]) == 0
    assert "| t | 4 | 2.50 | 12.00 % (epoch 4) | 13.50 % |" in capsys.readouterr().out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cycles.write_text('epoch,where,seconds,train_error,val_error,test_error\n1,"CPU, 2 threads",900,20,15,low\n')
    assert SCRIPT["main"](["--csv", f"t={run},{cycles}"]) == 1
    assert "not a number" in capsys.readouterr().err


def test_fitted_hours_solve_the_fit_or_say_never():
    fit = {"floor": 1.0, "a": 8.0, "b": 1.0}
    assert SCRIPT["fitted_hours"](fit, 3.0) == pytest.approx(4.0)  # 1 + 8 / 4 = 3
    assert SCRIPT["fitted_hours"](fit, 1.0) is None and SCRIPT["fitted_hours"](None, 3.0) is None
