"""Tiny seeded training runs of the three tasks, reduced to what must not change when the training loop is
refactored: the per-epoch records (without timings), the test metrics and a digest of the final weights.

:mod:`tests.training.test_golden` compares fresh runs with the values these functions gave on the code before the
shared engine (commit e42a90a); ``python tests/training/_golden.py OUT_DIR`` prints them as JSON (run it with
``PYTHONPATH`` pointing at the checkout whose values you want).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

# what depends on the machine, not the code: timings, the device and the threads (recorded since after the golden
# values)
TIMING = ("seconds", "elapsed_seconds", "val_seconds", "device", "threads")


def weights_digest(checkpoint: Path) -> str:
    """sha256 of a checkpoint's model tensors, by sorted name."""
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=True)["model"]
    h = hashlib.sha256()
    for name, tensor in sorted(state.items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def records(run_dir: Path) -> list[dict[str, Any]]:
    """The per-epoch records of ``log.jsonl`` without their timings."""
    lines = (run_dir / "log.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines]


def ddf_dataset(root: Path) -> Path:
    """The tiny DeepDataFlow data set of the task tests."""
    from programl.data.deepdataflow import build_dataset, discover_inputs
    from tests.data._ddf import write_sources

    src = write_sources(root / "src", chains=(2, 3, 4, 6, 8, 10, 12, 14, 16, 18, 20))
    build_dataset(discover_inputs([src]), root / "ddf", jobs=1)
    return root / "ddf"


def dataflow_run(ddf: Path, run_dir: Path, *extra: str) -> dict[str, Any]:
    from programl.tasks.dataflow import train as dataflow

    argv = [
        "train",
        "--analysis",
        "datadep",
        "--dataset",
        str(ddf),
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
        "--device",
        "cpu",
        "-q",
        *extra,
    ]
    assert dataflow.main(argv) == 0
    result = json.loads((run_dir / "result.json").read_text())
    return {
        "records": records(run_dir),
        "test": result["tests"]["T30"]["f1"],
        "best_epoch": result["best_epoch"],
        "digest": weights_digest(run_dir / "last.pt"),
    }


def devmap_run(source_dir: Path, root: Path, *extra: str) -> dict[str, Any]:
    from programl.tasks.devmap import train as devmap

    parser = argparse.ArgumentParser()
    devmap.add_train_arguments(parser)
    argv = [
        "--source-dir",
        source_dir,
        "--data-dir",
        root / "data",
        "--variant",
        "ncc",
        "--platform",
        "amd",
        "--subset",
        "60",
        "--folds",
        "3",
        "--only-folds",
        "0",
        "--hidden",
        "8",
        "--steps",
        "2",
        "--layers",
        "1",
        "--lr",
        "0.01",
        "--batch-nodes",
        "3000",
        "--threads",
        "1",
        "--epochs",
        "3",
        "--device",
        "cpu",
        "-q",
        "--run-dir",
        root / "run",
        *extra,
    ]
    assert devmap.train_main(parser.parse_args([str(a) for a in argv])) == 0
    fold = root / "run" / "amd" / "fold_0"
    result = json.loads((fold / "result.json").read_text())
    return {
        "records": records(fold),
        "test": result["test"]["accuracy"],
        "best_epoch": result["best_epoch"],
        "digest": weights_digest(fold / "last.pt"),
    }


def classifyapp_run(source: Path, data_dir: Path, run_dir: Path, *extra: str) -> dict[str, Any]:
    from programl.tasks.classifyapp import train as classifyapp

    parser = argparse.ArgumentParser()
    classifyapp.add_train_arguments(parser)
    argv = [
        "--source",
        source,
        "--data-dir",
        data_dir,
        "--no-verify",
        "--no-legacy",
        "--no-build",
        "--run-dir",
        run_dir,
        "--hidden",
        "16",
        "--layer-timesteps",
        "1",
        "1",
        "--dropout",
        "0.2",
        "--lr",
        "0.01",
        "--batch-graphs",
        "6",
        "--threads",
        "1",
        "--epochs",
        "3",
        "--device",
        "cpu",
        "-q",
        *extra,
    ]
    assert classifyapp.train_main(parser.parse_args([str(a) for a in argv])) == 0
    result = json.loads((run_dir / "result.json").read_text())
    return {
        "records": records(run_dir),
        "test": result["test"]["accuracy"],
        "best_epoch": result["best_epoch"],
        "digest": weights_digest(run_dir / "last.pt"),
    }


def poj104_dataset(root: Path) -> tuple[Path, Path]:
    """The synthetic POJ-104 programs of the classifyapp tests, built with clang-22."""
    from programl.data import poj104
    from tests.tasks.test_classifyapp import synthetic_codexglue

    source = synthetic_codexglue(root)
    programs = poj104.read_programs(source, verify=False)
    poj104.build_poj104(source, root / "data", [0], programs=programs, jobs=1)
    return source, root / "data"


def main(out: Path) -> None:
    from programl.training import configure_threads

    configure_threads(1)  # as the runs do; flush denormals from the start
    shared = Path(__file__).resolve().parents[3] / "shared" / "data"
    values = {
        "dataflow": dataflow_run(ddf_dataset(out / "d"), out / "d" / "run"),
        "devmap": devmap_run(shared / "devmap", out / "m"),
        "classifyapp": classifyapp_run(*poj104_dataset(out / "c"), out / "c" / "run"),
    }
    print(json.dumps(values, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
