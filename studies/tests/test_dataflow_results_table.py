"""studies/dataflow_results_table.py: the markdown rows and the ``docs/results.json`` entries of finished dataflow
runs; a damaged run or JSON file is one line, and the JSON file is written whole or not at all."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

SCRIPT = runpy.run_path(str(Path(__file__).resolve().parents[1] / "dataflow_results_table.py"))


def _run(directory: Path) -> Path:
    directory.mkdir()
    t30 = {
        "batch_nodes": 10000,
        "batch_policy": "carry",
        "examples_scored": 120,
        "precision": 0.99,
        "recall": 0.98,
        "f1": 0.9851,
        "pooled_f1": 0.9872,
        "seconds": 60.0,
    }
    result = {
        "analysis": "reachability",
        "tests": {"T30": t30},
        "train_examples_seen": 5000,
        "train_examples_available": 9000,
        "train_seconds": 3540.0,
        "best_epoch": 2,
        "best_val_f1": 0.97,
        "paper_ddf30": {"precision": 0.997, "recall": 0.995, "f1": 0.998},
    }
    (directory / "result.json").write_text(json.dumps(result))
    return directory


def test_rows_and_json(tmp_path, capsys):
    run = _run(tmp_path / "reach")
    doc = tmp_path / "results.json"
    doc.write_text(json.dumps({"devmap": {"amd": {"accuracy": 0.9}}}))
    assert SCRIPT["main"]([str(run), "--json", str(doc)]) == 0
    row = capsys.readouterr().out.splitlines()[-1]
    assert row.startswith("| reachability | 5,000 (9,000) | 59 min + 1 min test | 2 (0.970) | 120 |")
    assert "**0.985**" in row
    written = json.loads(doc.read_text())
    assert written["devmap"] == {"amd": {"accuracy": 0.9}}  # the other tasks' numbers stay
    assert written["dataflow"] == {
        "reachability": {"f1": 0.985, "pooled_f1": 0.987, "examples": 5000, "cpu_hours": 1.0}
    }


def test_damaged_files_are_one_line(tmp_path, capsys):
    run = _run(tmp_path / "reach")
    (run / "result.json").write_text('{"analysis": ')
    assert SCRIPT["main"]([str(run)]) == 1
    error = capsys.readouterr().err.strip()
    assert (
        error.startswith(f"{run}: not a finished dataflow run ({run / 'result.json'}:1:14: not JSON")
        and "\n" not in error
    )
    good = _run(tmp_path / "good")
    doc = tmp_path / "results.json"
    doc.write_text("{")
    assert SCRIPT["main"]([str(good), "--json", str(doc)]) == 1
    assert capsys.readouterr().err.strip().startswith(f"{doc}:1:2: not JSON")
    assert doc.read_text() == "{"  # left as it was
