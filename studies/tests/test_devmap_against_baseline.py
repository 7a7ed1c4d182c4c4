"""studies/devmap_against_baseline.py: a devmap summary against a heuristics.py baseline, fold by fold."""

from __future__ import annotations

import json
import math
import runpy
from pathlib import Path

import pytest

SCRIPT = runpy.run_path(str(Path(__file__).resolve().parents[1] / "devmap_against_baseline.py"))


def _files(tmp_path, model, baseline, folds=4, seed=204, baseline_seed=204):
    summary = tmp_path / "summary.json"
    summary.write_text(
        json.dumps(
            {
                "config": {"folds": folds, "fold_seed": seed},
                "platforms": {"amd": {"per_fold": {"accuracy": model}}},
            }
        )
    )
    heuristics = tmp_path / "heuristics.json"
    folds_json = [{"accuracy": a} for a in baseline]
    heuristics.write_text(
        json.dumps(
            {
                "folds": folds,
                "fold_seed": baseline_seed,
                "results": {p: {"rf-aux+texts": {"folds": folds_json}} for p in ("amd", "nvidia")},
            }
        )
    )
    return summary, heuristics


def test_compare_counts_and_standard_error():
    c = SCRIPT["compare"]([0.9, 0.8, 0.7, 0.6], [0.8, 0.8, 0.8, 0.8])
    assert (c["above"], c["level"], c["below"]) == (1, 1, 2)
    differences = [10.0, 0.0, -10.0, -20.0]
    mean = sum(differences) / 4
    assert c["mean_difference"] == pytest.approx(mean)
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / 3)
    assert c["standard_error"] == pytest.approx(sd / 2)
    assert c["model"] == pytest.approx(75.0) and c["baseline"] == pytest.approx(80.0)


def test_main_prints_the_table(tmp_path, capsys):
    summary, heuristics = _files(tmp_path, [0.9, 0.8, 0.7, 0.6], [0.8, 0.8, 0.8, 0.8])
    assert SCRIPT["main"]([str(summary), str(heuristics)]) == 0
    out = capsys.readouterr().out
    assert "| amd | 75.0 | 80.0 | 1 / 1 / 2 | -5.00 (6.45) |" in out
    assert "amd per fold (model/baseline): 90.0/80.0 80.0/80.0 70.0/80.0 60.0/80.0" in out


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"baseline_seed": 5}, "not the same folds"),
        ({"model": [0.9, 0.8]}, "compare it when every fold has finished"),
    ],
)
def test_other_folds_are_one_line(tmp_path, capsys, kwargs, message):
    model = kwargs.pop("model", [0.9, 0.8, 0.7, 0.6])
    summary, heuristics = _files(tmp_path, model, [0.8] * 4, **kwargs)
    assert SCRIPT["main"]([str(summary), str(heuristics)]) == 1
    error = capsys.readouterr().err.strip()
    assert message in error and "\n" not in error


def test_damaged_and_missing_files_are_one_line(tmp_path, capsys):
    summary, heuristics = _files(tmp_path, [0.9] * 4, [0.8] * 4)
    assert SCRIPT["main"]([str(tmp_path / "none.json"), str(heuristics)]) == 1
    assert "no such file" in capsys.readouterr().err
    summary.write_text("{not json")
    assert SCRIPT["main"]([str(summary), str(heuristics)]) == 1
    assert "summary.json:1:2: not JSON" in capsys.readouterr().err
    summary.write_text(json.dumps({"platforms": {}}))
    assert SCRIPT["main"]([str(summary), str(heuristics)]) == 1
    assert "not a devmap summary.json" in capsys.readouterr().err
    _files(tmp_path, [0.9] * 4, [0.8] * 4)
    assert SCRIPT["main"]([str(summary), str(heuristics), "--method", "mlp"]) == 1
    assert "no method 'mlp'" in capsys.readouterr().err


def test_a_run_against_another_run(tmp_path, capsys):
    """The baseline may be a second run's summary.json (an ablation: one design with and without an input)."""
    summary, _ = _files(tmp_path, [0.9, 0.8, 0.7, 0.6], [0.8] * 4)
    other = tmp_path / "other.json"
    other.write_text(
        json.dumps(
            {"config": {"folds": 4, "fold_seed": 204}, "platforms": {"amd": {"per_fold": {"accuracy": [0.8] * 4}}}}
        )
    )
    assert SCRIPT["main"]([str(summary), str(other)]) == 0
    out = capsys.readouterr().out
    assert "| platform | model % | baseline run % |" in out
    assert "| amd | 75.0 | 80.0 | 1 / 1 / 2 | -5.00 (6.45) |" in out
    other.write_text(
        json.dumps(
            {"config": {"folds": 4, "fold_seed": 1}, "platforms": {"amd": {"per_fold": {"accuracy": [0.8] * 4}}}}
        )
    )
    assert SCRIPT["main"]([str(summary), str(other)]) == 1
    assert "not the same folds" in capsys.readouterr().err
