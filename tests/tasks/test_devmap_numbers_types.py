"""programl train / evaluate devmap --numbers-and-types end to end, tiny (issue 40 item 2)."""

from __future__ import annotations

import argparse
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.tasks.devmap import train as devmap  # noqa: E402


def parse(command: str, *argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    (devmap.add_train_arguments if command == "train" else devmap.add_evaluate_arguments)(parser)
    return parser.parse_args([str(a) for a in argv])


def test_train_and_evaluate_with_numbers_and_types(shared_data, tmp_path) -> None:
    argv = [
        *("--source-dir", shared_data / "devmap", "--data-dir", tmp_path / "data", "--variant", "ncc"),
        *("--platform", "amd", "--subset", "30", "--folds", "3", "--only-folds", "0"),
        *("--hidden", "8", "--steps", "2", "--layers", "1", "--message-dropout", "0", "--batch-nodes", "3000"),
        *("--threads", "1", "-q", "--run-dir", tmp_path / "run", "--epochs", "1", "--numbers-and-types"),
    ]
    assert devmap.train_main(parse("train", *argv)) == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model"]["numbers_and_types"] is True
    assert list((tmp_path / "data" / "processed").glob("devmap-ncc-amd-*-nt.pt"))
    before = json.loads((tmp_path / "run" / "amd" / "report.json").read_text())
    assert devmap.evaluate_main(parse("evaluate", "--run-dir", tmp_path / "run", "--platform", "amd", "-q")) == 0
    after = json.loads((tmp_path / "run" / "amd" / "report.json").read_text())
    assert after["per_fold"] == before["per_fold"]
