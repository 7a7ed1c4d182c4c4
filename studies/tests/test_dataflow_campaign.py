"""studies/dataflow_campaign.sh: data set, training, export and table for one analysis, resumed by running it again
(issue 11 item 3). A size-2 DeepDataFlow-22 build and a 100-example budget: a real run, in seconds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "studies" / "dataflow_campaign.sh"
SHARED = Path(os.environ.get("PROGRAML_SHARED_DATA", ROOT.parent / "shared" / "data"))

needs_data = [
    pytest.mark.skipif(shutil.which("clang-22") is None, reason="clang-22 not installed (apt-get install clang-22)"),
    pytest.mark.skipif(not (SHARED / "poj104" / "poj104.tar.xz").is_file(), reason=f"no POJ-104 archive in {SHARED}"),
]


def run(tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        PROGRAML=str(Path(sys.executable).with_name("programl")),
        PYTHON=sys.executable,
        SHARED=str(SHARED),
        SIZE="2",
        SCHEDULE="50 100",
        LR_DECAY="cosine",
        JOBS="1",
        EXPORT_DIR=str(tmp_path / "models"),
        OMP_NUM_THREADS="1",
    )
    argv = ["bash", str(SCRIPT), "datadep", str(tmp_path / "data"), str(tmp_path / "runs")]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
@needs_data[0]
@needs_data[1]
def test_one_command_from_data_to_model_and_again(tmp_path: Path) -> None:
    (tmp_path / "runs" / "stopped").mkdir(parents=True)  # a stopped run (no result.json) is left out of the table
    first = run(tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    model = tmp_path / "models" / "datadep"
    assert sorted(p.name for p in model.iterdir()) == ["MODEL_CARD.md", "model.json", "vocab.csv", "weights.pt"]
    assert json.loads((model / "model.json").read_text())["analysis"] == "datadep"
    assert "| datadep |" in first.stdout
    log = (tmp_path / "runs" / "datadep" / "log.jsonl").read_text()
    assert [json.loads(line)["epoch"] for line in log.splitlines()] == [1, 2]
    config = json.loads((tmp_path / "runs" / "datadep" / "config.json").read_text())
    assert config["model"]["lr_decay"] == "cosine" and config["model"]["train_examples"] == [50, 100]
    second = run(tmp_path)  # everything done: nothing is rebuilt or retrained, the same table comes out
    assert second.returncode == 0, second.stderr[-2000:]
    assert (tmp_path / "runs" / "datadep" / "log.jsonl").read_text() == log
    assert second.stdout == first.stdout


def test_usage(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2 and "dataflow_campaign.sh ANALYSIS" in done.stderr
