#!/usr/bin/env python3
"""How much a devmap result depends on the rule that picks each fold's model (``studies/history/results-history.md`` §6;
issue 11 item 5).

Reads a ``programl train devmap`` run that kept every epoch's weights (``--average-last`` equal to ``--epochs``: the
training is the same as without it, only the weights of each epoch stay), predicts each fold's validation and test
kernels with every epoch's model, and scores the test folds under several rules, none of which looks at a test fold:

* ``best-val``: the epoch of highest validation accuracy, then lower validation loss, then the earlier (the paper's);
* ``last``: the last epoch;
* ``mean-last-K``: the mean class probabilities of the last K epochs' models (``--average-last K``);
* ``pooled-val``: the epoch of highest mean validation accuracy over the other folds' runs whose validation fold is
  not this fold's test fold.

Usage::

    programl train devmap --platform amd --variant ncc ... --epochs 50 --average-last 50 --run-dir runs/devmap-all
    python studies/devmap_epoch_rules.py --run-dir runs/devmap-all --platform amd --json rules-amd.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("Usage::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--run-dir", required=True, type=Path, help="a devmap run with --average-last = --epochs")
    parser.add_argument("--platform", required=True, choices=("amd", "nvidia"))
    parser.add_argument("--mean-last", type=int, nargs="+", default=[25, 40], metavar="K", help="default: 25 40")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the per-fold scores here")
    return parser.parse_args(argv)


def epoch_scores(run_dir: Path, platform: str) -> tuple[list[dict], np.ndarray]:
    """Per finished fold: every epoch's validation accuracy and loss and test probabilities (rows: indices into the
    run's DevMap data set); and that data set's labels."""
    import torch

    from programl.data.vocabulary import Vocabulary
    from programl.exceptions import ProgramlError
    from programl.tasks.devmap import folds as devmap
    from programl.tasks.devmap.evaluate import read_devmap_run, run_source
    from programl.tasks.devmap.spec import DevmapOptions
    from programl.training import load_checkpoint
    from programl.training.engine import epoch_path

    torch.set_num_threads(1)
    saved = read_devmap_run(run_dir)
    config = saved["model"]
    options = DevmapOptions.from_config(config, run_dir / "config.json")
    if config.get("average_last", 0) != config["epochs"]:
        raise ProgramlError(f"{run_dir}: needs every epoch's weights (train with --average-last {config['epochs']})")
    source = run_source(saved, options)
    labels = source.dataset(platform).y.numpy()
    folds = []
    for split in devmap.splits(labels, options.folds, options.fold_seed):
        fold_dir = run_dir / platform / f"fold_{split.fold}"
        if not (fold_dir / "result.json").is_file():
            continue
        vocabulary = Vocabulary.load(fold_dir / "vocab.csv")
        val = source.fold_dataset(platform, "val", split.fold, vocabulary)
        test = source.fold_dataset(platform, "test", split.fold, vocabulary)
        model = devmap.network(config, len(vocabulary))
        val_acc, val_loss, test_p = [], [], []
        for epoch in range(1, config["epochs"] + 1):
            load_checkpoint(epoch_path(fold_dir, epoch), model=model, restore_rng=False)
            val_scores = devmap.predict(val, model, options, torch.device("cpu"))
            test_scores = devmap.predict(test, model, options, torch.device("cpu"))
            val_acc.append(float((val_scores["predictions"] == val_scores["labels"]).mean()))
            val_loss.append(val_scores["loss"])
            test_p.append(test_scores["probabilities"])
        folds.append(
            {
                "fold": split.fold,
                "val_rows": np.sort(split.val),
                "test_rows": test_scores["rows"],
                "val_acc": np.array(val_acc),
                "val_loss": np.array(val_loss),
                "test_p": np.array(test_p),
            }
        )
    return folds, labels


def best_val_epoch(fold: dict) -> int:
    """The epoch (1-based) the training chose: highest validation accuracy, then lower loss, then the earlier."""
    from programl.tasks.devmap.folds import better as _better

    best, chosen = None, 0
    for epoch, candidate in enumerate(zip(fold["val_acc"], fold["val_loss"]), start=1):
        if _better(candidate, best):
            best, chosen = candidate, epoch
    return chosen


def rule_scores(folds: list[dict], labels: np.ndarray, mean_last: list[int]) -> dict[str, list[float]]:
    """Test accuracy per fold under each rule (module docstring)."""

    def accuracy(fold: dict, probabilities: np.ndarray) -> float:
        return float((probabilities.argmax(-1) == labels[fold["test_rows"]]).mean())

    scores: dict[str, list[float]] = {"best-val": [], "last": [], "pooled-val": []}
    scores.update({f"mean-last-{k}": [] for k in mean_last})
    for fold in folds:
        scores["best-val"].append(accuracy(fold, fold["test_p"][best_val_epoch(fold) - 1]))
        scores["last"].append(accuracy(fold, fold["test_p"][-1]))
        for k in mean_last:
            scores[f"mean-last-{k}"].append(accuracy(fold, fold["test_p"][-k:].mean(axis=0)))
        test_rows = np.sort(fold["test_rows"])
        others = [f["val_acc"] for f in folds if f is not fold and not np.array_equal(f["val_rows"], test_rows)]
        epoch = int(np.argmax(np.mean(others, axis=0))) if others else len(fold["val_acc"]) - 1
        scores["pooled-val"].append(accuracy(fold, fold["test_p"][epoch]))
    return scores


def main(argv: list[str] | None = None) -> int:
    from programl.exceptions import ProgramlError

    args = parse_args(argv)
    try:
        folds, labels = epoch_scores(args.run_dir, args.platform)
    except ProgramlError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if not folds:
        print(f"error: {args.run_dir / args.platform}: no finished fold", file=sys.stderr)
        return 1
    scores = rule_scores(folds, labels, args.mean_last)
    print(f"| rule | {args.platform} accuracy % (mean ± std over {len(folds)} folds) | per fold |")
    print("|---|---|---|")
    for rule, values in scores.items():
        per_fold = " ".join(f"{100 * v:.1f}" for v in values)
        print(f"| {rule} | {100 * np.mean(values):.1f} ± {100 * np.std(values):.1f} | {per_fold} |")
    print(f"folds {[f['fold'] for f in folds]}; epochs chosen on validation {[best_val_epoch(f) for f in folds]}")
    if args.json:
        args.json.write_text(json.dumps({"folds": [f["fold"] for f in folds], "scores": scores}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
