"""studies/devmap_epoch_rules.py on a tiny devmap run that kept every epoch's weights (SPEC §6.5): its best-validation
rule picks the epoch the training picked and scores what best.pt scores; its mean of all epochs is the run's
--average-last result; a run without every epoch's weights is one line."""

from __future__ import annotations

import argparse
import json
import runpy
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch  # noqa: E402

from programl.data.vocabulary import Vocabulary  # noqa: E402
from programl.datasets import DevMap, EncodeVocabulary  # noqa: E402
from programl.tasks.devmap import train as devmap  # noqa: E402
from programl.tasks.devmap.folds import network  # noqa: E402
from programl.training import load_checkpoint  # noqa: E402

RULES = runpy.run_path(str(Path(__file__).resolve().parents[1] / "devmap_epoch_rules.py"), run_name="x")


def _train(shared_data, run_dir: Path, data_dir: Path, *extra: str) -> None:
    parser = argparse.ArgumentParser()
    devmap.add_train_arguments(parser)
    argv = ["--source-dir", shared_data / "devmap", "--data-dir", data_dir, "--variant", "ncc", "--platform", "amd"]
    argv += ["--subset", "60", "--folds", "3", "--hidden", "8", "--steps", "2", "--layers", "1"]
    argv += ["--message-dropout", "0", "--lr", "0.01", "--batch-nodes", "3000", "--threads", "1", "-q"]
    argv += ["--run-dir", run_dir, "--epochs", "4", *extra]
    assert devmap.train_main(parser.parse_args([str(a) for a in argv])) == 0


def test_rules_of_a_run_with_every_epoch(shared_data, tmp_path, capsys) -> None:
    run = tmp_path / "run"
    _train(shared_data, run, tmp_path / "data", "--average-last", "4")
    folds, labels = RULES["epoch_scores"](run, "amd")
    assert [f["fold"] for f in folds] == [0, 1, 2] and all(len(f["val_acc"]) == 4 for f in folds)
    scores = RULES["rule_scores"](folds, labels, [4, 2])
    config = json.loads((run / "config.json").read_text())["model"]
    everything = DevMap(
        tmp_path / "data", "amd", "ncc", folds=3, subset=60, mirrors=[shared_data / "devmap"], log=False
    )
    assert labels.tolist() == everything.y.tolist()  # the labels of the run's data set, in its order
    for k, fold in enumerate(folds):
        result = json.loads((run / "amd" / f"fold_{k}" / "result.json").read_text())
        assert RULES["best_val_epoch"](fold) == result["best_epoch"]
        assert scores["mean-last-4"][k] == pytest.approx(result["test"]["accuracy"])
        # best.pt on the test fold, read through DevMap and the fold's vocabulary
        fold_dir = run / "amd" / f"fold_{k}"
        test = DevMap(tmp_path / "data", "amd", "ncc", "test", fold=k, folds=3, subset=60, log=False)
        assert sorted(fold["test_rows"]) == test.indices()
        vocabulary = Vocabulary.load(fold_dir / "vocab.csv")
        encode = EncodeVocabulary(vocabulary, test.texts)
        model = network(config, len(vocabulary))
        load_checkpoint(fold_dir / "best.pt", model=model, restore_rng=False)
        model.eval()
        with torch.no_grad():
            predictions = model(Batch.from_data_list([encode(d) for d in test])).logits.argmax(-1)
        best_accuracy = float((predictions == test.y).float().mean())
        assert scores["best-val"][k] == pytest.approx(best_accuracy)
        assert scores["last"][k] == pytest.approx(
            float((fold["test_p"][-1].argmax(-1) == labels[fold["test_rows"]]).mean())
        )
    out = tmp_path / "rules.json"
    assert RULES["main"](["--run-dir", str(run), "--platform", "amd", "--mean-last", "4", "--json", str(out)]) == 0
    assert "| mean-last-4 |" in capsys.readouterr().out
    assert np.allclose(json.loads(out.read_text())["scores"]["mean-last-4"], scores["mean-last-4"])


def test_a_run_without_every_epoch_is_one_line(shared_data, tmp_path, capsys) -> None:
    run = tmp_path / "run"
    _train(shared_data, run, tmp_path / "data", "--average-last", "2")
    assert RULES["main"](["--run-dir", str(run), "--platform", "amd"]) == 1
    assert "train with --average-last 4" in capsys.readouterr().err
