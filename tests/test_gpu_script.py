"""benchmarks/gpu.sh, the script a session lent a GPU runs there, tried on this machine's CPU so that it does not rot
between loans: a POJ-104 run from a data set's processed files alone, its outputs, and a second call that resumes from
what the first returned (as on a new GPU machine), with a time limit of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from tests.tasks.test_classifyapp import synthetic_data_set  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMALL = "--hidden 8 --layer-timesteps 1 --dropout 0 --lr 0.01 --batch-graphs 6 --threads 1 -q"


def gpu_script(tmp_path: Path, out: Path, run: Path, epochs: int, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu.sh")],
        cwd=tmp_path,  # no .whl/ there: nothing to install
        env={
            **os.environ,
            "PYTHON": sys.executable,
            "PYTHONPATH": str(ROOT),
            "OUT": str(out),
            "CHECKS": "0",
            "POJ_DEVICE": "cpu",
            "POJ_RUN": str(run),
            "POJ_MINUTES": "60",
            "POJ_ROOT": str(run) + "-data",
            "POJ_ARGS": f"{SMALL} --epochs {epochs}",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
def test_a_run_from_processed_files_returns_what_resumes_it_on_another_machine(tmp_path) -> None:
    if shutil.which("xz") is None:
        pytest.skip("xz not installed")
    root = synthetic_data_set(tmp_path / "poj")
    data = tmp_path / "poj104-data.tar"  # what the script's header says to make of a data set root
    subprocess.run(["tar", "-C", str(root), "-cf", str(data), "--exclude", "processed/build", "processed"], check=True)
    subprocess.run(["xz", "-k", str(data)], check=True)
    first = tmp_path / "out1"
    done = gpu_script(tmp_path, first, tmp_path / "run1", 2, POJ_DATA=f"{data}.xz")
    assert done.returncode == 0, done.stdout + done.stderr
    names = sorted(p.name for p in first.iterdir())
    assert names[:2] == ["best.pt", "last.pt.part-aa"] and names[-1] == "summary.tar.gz"
    with tarfile.open(first / "summary.tar.gz") as archive:
        members = set(archive.getnames())
        log = archive.extractfile("summary/poj104-log.jsonl").read().decode()
    assert {"summary/poj104-result.json", "summary/poj104-config.json", "summary/poj104.txt"} <= members
    assert [json.loads(line)["epoch"] for line in log.splitlines()] == [1, 2]

    # a run that trained for hours before (on a CPU, before a GPU was lent): POJ_MINUTES is this call's time, where
    # `--time-limit` alone, which counts every resumption, would stop the call after one epoch
    (part,) = first.glob("last.pt.part-*")  # a small run's last.pt is one part
    saved = torch.load(part, map_location="cpu", weights_only=False)
    saved["extra"]["state"]["seconds"] = 10 * 3600.0
    torch.save(saved, part)

    # a new machine: nothing but the first call's outputs and the data, less best.pt (which need not travel: the
    # carried tree has 64 MiB); the run goes on from epoch 2 (under another root: the same files, the same run)
    (first / "best.pt").unlink()
    second = tmp_path / "out2"
    done = gpu_script(
        tmp_path, second, tmp_path / "run2", 4, POJ_DATA=str(data), POJ_RUN_FROM=str(first), POJ_MINUTES="30"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    resumed = (tmp_path / "run2" / "log.jsonl").read_text().splitlines()
    assert resumed[:2] == log.splitlines()  # epochs 1-2 are the first call's records (with their times), not redone
    assert [json.loads(line)["epoch"] for line in resumed] == [1, 2, 3, 4]
    assert json.loads((tmp_path / "run2" / "result.json").read_text())["test"]["count"] == 6


@pytest.mark.slow  # make test-all
def test_a_run_of_this_machine_packed_for_the_gpu_resumes_there(tmp_path) -> None:
    """benchmarks/gpu_carry.sh packs a run trained here (and its data set's processed files) in the layout gpu.sh
    reads; gpu.sh, under another data root as on a lent machine, goes on with the same run."""
    root, run = _trained_here(tmp_path, epochs=2)
    carry = tmp_path / "carry"
    usage = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_carry.sh"), str(run)], capture_output=True, text=True
    )
    assert usage.returncode == 2 and "usage" in usage.stderr
    packed = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_carry.sh"), str(run), str(root), str(carry)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert packed.returncode == 0, packed.stderr
    assert "of the 64 MiB a device call carries" in packed.stdout  # the tree, the data and the run, counted together
    assert sorted(p.name for p in (carry / "run").iterdir()) == ["last.pt.part-aa", "summary.tar.gz"]
    # only the processed files of the run's kind travel: a --numbers-and-types run's -nt files, or the faithful ones
    faithful = _packed(carry / "poj104-data.tar.xz")
    assert faithful and not [n for n in faithful if "-nt" in n] and "processed/build" not in "".join(faithful)
    for name in ("poj104-0123456789ab-nt-train.pt", "poj104-0123456789ab-nt-str-train.pt", "poj104-legacy-str.pt"):
        (root / "processed" / name).write_bytes(b"x")
    for options, kind in ((["numbers_and_types"], "nt"), (["numbers_and_types", "string_bytes"], "nt-str")):
        other = tmp_path / f"{kind}-run"
        shutil.copytree(run, other)
        config = json.loads((other / "config.json").read_text())
        config["model"].update({option: True for option in options})
        (other / "config.json").write_text(json.dumps(config))
        assert (
            subprocess.run(
                ["bash", str(ROOT / "benchmarks" / "gpu_carry.sh"), str(other), str(root), str(tmp_path / kind)],
                capture_output=True,
                text=True,
                timeout=300,
            ).returncode
            == 0
        )
        assert _packed(tmp_path / kind / "poj104-data.tar.xz") == [
            f"processed/poj104-0123456789ab-{kind}-train.pt",
            "processed/pre_filter.pt",
            "processed/pre_transform.pt",
        ]
    assert _packed(carry / "poj104-data.tar.xz") == faithful
    done = gpu_script(
        tmp_path,
        tmp_path / "out",
        tmp_path / "there",
        4,
        POJ_DATA=str(carry / "poj104-data.tar.xz"),
        POJ_RUN_FROM=str(carry / "run"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    resumed = (tmp_path / "there" / "log.jsonl").read_text().splitlines()
    assert resumed[:2] == (run / "log.jsonl").read_text().splitlines()  # epochs 1-2 are this machine's
    assert [json.loads(line)["epoch"] for line in resumed] == [1, 2, 3, 4]


def _packed(archive) -> list[str]:
    """The file names in a .tar.xz, sorted."""
    import tarfile

    with tarfile.open(archive) as tar:
        return sorted(m.name for m in tar.getmembers() if m.isfile())


@pytest.mark.slow  # make test-all
def test_a_chain_of_cycles_from_a_shipped_model_exports_each_one_that_beats_the_last(tmp_path) -> None:
    """POJ_CYCLES: fine-tuning cycles chained from an exported model (as from the shipped classifyapp), the data packed
    by `gpu_carry.sh --kind`; a cycle below the bar is exported and starts the next; one that is not ends the chain."""
    root, run = _trained_here(tmp_path, epochs=1)
    shipped = tmp_path / "shipped"
    export = [sys.executable, "-m", "programl", "export-pretrained", str(run), "classifyapp", "-o", str(shipped)]
    assert subprocess.run(export, cwd=ROOT, capture_output=True, timeout=300).returncode == 0
    carry = tmp_path / "carry"
    for wrong in (["--kind", "-xyz", str(root)], ["--kind", "-nt"]):
        usage = subprocess.run(
            ["bash", str(ROOT / "benchmarks" / "gpu_carry.sh"), *wrong], capture_output=True, text=True
        )
        assert usage.returncode == 2 and "--kind" in usage.stderr
    packed = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_carry.sh"), "--kind", "faithful", str(root), str(carry)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert packed.returncode == 0, packed.stderr
    assert sorted(p.name for p in carry.iterdir()) == ["poj104-data.tar.xz"]  # the data alone: no run travels

    def cycles(out: Path, beat: str) -> tuple[list[str], Path]:
        done = gpu_script(
            tmp_path,
            out,
            tmp_path / f"run-{out.name}",
            1,
            POJ_DATA=str(carry / "poj104-data.tar.xz"),
            POJ_CYCLES="2",
            POJ_BEAT=beat,
            POJ_INIT=str(shipped / "classifyapp"),
            POJ_COMMIT="abc1234",
        )
        assert done.returncode == 0, done.stdout + done.stderr
        with tarfile.open(out / "summary.tar.gz") as archive:
            lines = archive.extractfile("summary/cycles.txt").read().decode().splitlines()
            assert "summary/cycle1-log.jsonl" in archive.getnames()
        return [line for line in lines if line.startswith("cycle ")], out

    # every cycle beats a bar of 100 % until one does not beat its predecessor's error (or both do)
    lines, out = cycles(tmp_path / "out", "100")
    assert lines[0].startswith("cycle 1: validation error ") and "below 100 %: exported (" in lines[0]
    assert sorted(p.name for p in (out / "classifyapp").iterdir()) == [
        "MODEL_CARD.md",
        "model.json",
        "vocab.csv",
        "weights.pt",
    ]
    card = json.loads((out / "classifyapp" / "model.json").read_text())
    assert "Cycle " in card["compute"]["note"] and "abc1234" in (out / "classifyapp" / "MODEL_CARD.md").read_text()
    assert len(lines) == 2 and ("exported" in lines[1] or "the chain stops" in lines[1])
    # a bar no cycle can pass: nothing is exported, and the chain stops after the first cycle
    lines, out = cycles(tmp_path / "none", "0")
    assert len(lines) == 1 and lines[0].endswith("not below 0 %: the chain stops")
    assert not (out / "classifyapp").exists()


def _trained_here(tmp_path: Path, epochs: int) -> tuple[Path, Path]:
    """A synthetic POJ-104 data set root and a small run trained on it on this CPU (skips without xz, which the
    packing needs)."""
    if shutil.which("xz") is None:
        pytest.skip("xz not installed")
    root = synthetic_data_set(tmp_path / "poj")
    run = tmp_path / "here"
    trained = subprocess.run(
        [sys.executable, "-m", "programl", "train", "classifyapp", "--data-dir", str(root), "--run-dir", str(run)]
        + ["--device", "cpu", "--epochs", str(epochs), *SMALL.split()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert trained.returncode == 0, trained.stderr
    return root, run
