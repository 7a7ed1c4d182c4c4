"""studies/dataflow_grad_probe.py end to end: a two-epoch run on a tiny DeepDataFlow data set (tests/data/_ddf.py,
no compiler needed), then the probe of its checkpoint: the batches of the run's own plan, their norms, the JSON."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.tasks.dataflow import train as dataflow  # noqa: E402
from tests.data._ddf import tiny_dataset  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "dataflow_grad_probe.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, Path]:
    """(data set, checkpoint) of a datadep run of 60 examples in batches of at most 600 nodes."""
    root = tiny_dataset(tmp_path_factory.mktemp("tiny"), chains=(2, 3, 4, 6, 8, 10, 12, 14, 16, 18, 20))
    run_dir = tmp_path_factory.mktemp("run")
    args = [
        "train",
        "--analysis",
        "datadep",
        "--dataset",
        str(root),
        "--run-dir",
        str(run_dir),
        "--threads",
        "1",
        "--train-examples",
        "30",
        "60",
        "--val-examples",
        "20",
        "--batch-nodes",
        "600",
        "--test-steps",
        "30",
        "--test-examples",
        "5",
        "-q",
    ]
    assert dataflow.main(args) == 0
    return root, run_dir / "last.pt"


@pytest.fixture(scope="module")
def main():
    return runpy.run_path(str(SCRIPT), run_name="dataflow_grad_probe")["main"]


def test_probes_the_runs_own_batches(run, main, tmp_path: Path, capsys) -> None:
    root, checkpoint = run
    out = tmp_path / "probe.json"
    assert main([str(checkpoint), "--dataset", str(root), "--to", "60", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "gradient norm median" in text and "correlation of log gradient norm with log loss" in text
    rows = json.loads(out.read_text())["batches"]
    assert rows[0]["examples_before"] == 0 and rows[-1]["examples_before"] < 60
    assert all(r["nodes"] <= 600 or r["graphs"] == 1 for r in rows)
    assert all(r["grad_norm"] > 0 and r["loss"] > 0 and r["largest_graph"] <= r["nodes"] for r in rows)
    # the examples of consecutive batches add up: these are the run's batches in the run's order
    for before, after in zip(rows, rows[1:]):
        if after["pass"] == before["pass"]:
            assert after["examples_before"] == before["examples_before"] + before["graphs"]
    # every second batch, from example 20 on: a subset of the same batches
    assert (
        main(
            [str(checkpoint), "--dataset", str(root), "--from", "20", "--to", "60", "--every", "2", "--json", str(out)]
        )
        == 0
    )
    sampled = json.loads(out.read_text())["batches"]
    assert {(r["pass"], r["batch"]) for r in sampled} <= {(r["pass"], r["batch"]) for r in rows}
    assert all(r["batch"] % 2 == 0 and r["examples_before"] >= 20 for r in sampled)


def test_errors(run, main, tmp_path: Path, capsys) -> None:
    root, checkpoint = run
    assert main([str(tmp_path / "none.pt"), "--dataset", str(root), "--to", "10"]) == 1
    assert "no checkpoint" in capsys.readouterr().err
    (tmp_path / "junk.pt").write_bytes(b"junk")
    assert main([str(tmp_path / "junk.pt"), "--dataset", str(root), "--to", "10"]) == 1
    assert "not a readable checkpoint" in capsys.readouterr().err
    assert main([str(checkpoint), "--dataset", str(tmp_path / "nowhere"), "--to", "10"]) == 1
    assert "no vocabulary" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(tmp_path / "none.pt"), "--dataset", str(root), "--from", "10", "--to", "5"])
