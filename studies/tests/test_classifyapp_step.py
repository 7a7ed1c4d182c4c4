"""studies/classifyapp_step.py, where one POJ-104 training step spends its time (benchmarks/gpu.sh runs it on a lent
GPU before the POJ-104 run), tried on this machine's CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from tests.tasks.test_classifyapp import synthetic_data_set  # noqa: E402

STUDIES = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_step_timer_runs_on_the_cpu(tmp_path, precision) -> None:
    """studies/classifyapp_step.py (which benchmarks/gpu.sh runs before the POJ-104 run) on a processed data set, on this
    CPU, in float32 and under bfloat16 autocast."""
    root = synthetic_data_set(tmp_path / "poj")
    done = subprocess.run(
        [
            sys.executable,
            str(STUDIES / "classifyapp_step.py"),
            "--data-dir",
            str(root),
            "--device",
            "cpu",
            "--batch-graphs",
            "4",
            "--batches",
            "2",
            "--warmup",
            "1",
            "--threads",
            "1",
            "--precision",
            precision,
            "-o",
            str(tmp_path / "s.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "s.json").read_text())
    assert set(record["median_seconds"]) == {"collate", "to_device", "forward", "backward", "optimizer"}
    assert record["step_seconds"] == pytest.approx(sum(record["median_seconds"].values()))
    assert record["precision"] == precision and done.stdout.splitlines()[0].endswith(precision)
    assert "s per POJ-104 epoch" in done.stdout and record["source"] == str(root)
