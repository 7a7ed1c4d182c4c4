"""Reference points for OpenCL device mapping on the folds of ``programl train devmap`` (SPEC §6.5, §7.3).

Not graph neural networks: what simple learners get from the same inputs, on the same rotating 10-fold splits
(:meth:`programl.datasets.DevMap.cross_validation_splits`, seed 204), tested on every test fold once:

* ``static``: always the device that is fastest for most training kernels;
* ``rf-aux``: a random forest (500 trees, scikit-learn defaults, seed 0) on ``log1p(transfer)``, ``log1p(wgsize)``;
* ``rf-aux+texts``: the same forest on the auxiliary inputs plus the count of every node text of the graph (a bag
  of words of the ProGraML graph) and its node and edge counts; for both forests, ``--forest-seeds 0 1 ... 9``
  trains one forest per seed and takes each fold's metrics as the mean over the seeds (the JSON keeps each seed's
  accuracy as ``accuracy_by_seed``), to show how far a forest's own draw moves its accuracy;
* ``mlp-bits+texts``: the GGNN's head without the graph (``programl train devmap --aux-bins 64 --text-counts``): the
  two inputs as 64 threshold bits each (:class:`~programl.models.readout.ThermometerEncoding`) and ``log1p`` of the
  counts of the texts of the training kernels (the others counted as one unknown text) scaled by the training
  kernels' largest, BatchNorm, Linear -> 64, ReLU, Linear -> 2; Adam 2e-3,
  batches of 64 kernels, 50 epochs, the epoch chosen on the split's validation fold as the GGNN's (higher accuracy,
  then lower loss, then earlier); the mean probability of seeds 204, 205 and 206, as the GGNN's three-seed ensemble.

Nothing is tuned. Prints a table (mean and standard deviation over the folds of the accuracy and the weighted F1
that the published tables report) and writes JSON.

Usage::

    python studies/heuristics.py --source-dir ../shared/data/devmap --data-dir ~/.cache/programl/devmap
    python studies/heuristics.py --variant clang22 -o heuristics.json
    python studies/heuristics.py --forest-seeds 0 1 2 3 4 5 6 7 8 9 --mlp-seeds -o forests.json   # the seed spread

The graphs must have been built (``programl train devmap`` builds them under its ``--data-dir``, the root of the
``programl.datasets.DevMap`` data set this study reads; ``--source-dir`` is the mirror of its raw files).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from programl.datasets import DevMap  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from programl.tasks.devmap.folds import better as _better  # noqa: E402
from programl.tasks.devmap.report import devmap_metrics  # noqa: E402


def features(data) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(aux, node-text counts, aux + counts + sizes) feature matrices of a platform's rows."""
    texts = sorted({node.text for graph in data.graphs for node in graph.node})
    index = {t: i for i, t in enumerate(texts)}
    counts = np.zeros((len(data), len(texts)))
    for i, graph in enumerate(data.graphs):
        for node in graph.node:
            counts[i, index[node.text]] += 1
    aux = np.array([(np.log1p(r.transfer), np.log1p(r.wgsize)) for r in data.rows])
    sizes = np.array([(len(g.node), len(g.edge)) for g in data.graphs])
    return aux, counts, np.hstack([aux, counts, sizes])


def mean_metrics(by_seed: list[dict]) -> dict:
    """One fold's metrics of several forests (one per seed): each metric's mean, and each seed's accuracy."""
    mean = {key: float(np.mean([m[key] for m in by_seed])) for key in by_seed[0]}
    return {**mean, "accuracy_by_seed": [m["accuracy"] for m in by_seed]}


def mlp_probabilities(
    aux: np.ndarray, counts: np.ndarray, labels: np.ndarray, split, seed: int, epochs: int = 50
) -> np.ndarray:
    """P(GPU) of the split's test rows by ``mlp-bits+texts`` (module docstring) with one seed, one thread."""
    import torch
    from torch import nn

    from programl.models.readout import ThermometerEncoding

    torch.set_num_threads(1)
    bits = ThermometerEncoding(2, 64).fit(torch.tensor(aux[split.train]))
    seen = counts[split.train].sum(axis=0) > 0  # the fold's vocabulary; other texts count as one unknown text
    logs = np.log1p(np.hstack([counts[:, seen], counts[:, ~seen].sum(axis=1, keepdims=True)]))
    scale = logs[split.train].max(axis=0)
    scale[scale == 0] = 1
    x = torch.cat([bits(torch.tensor(aux)), torch.tensor(logs / scale)], dim=1).float()
    y = torch.tensor(labels, dtype=torch.long)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.BatchNorm1d(x.size(1)), nn.Linear(x.size(1), 64), nn.ReLU(), nn.Linear(64, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    order = torch.Generator().manual_seed(seed)
    train, val, test = (torch.as_tensor(rows) for rows in (split.train, split.val, split.test))
    best, chosen = None, None
    for _ in range(epochs):
        model.train()
        shuffled = train[torch.randperm(len(train), generator=order)]
        for start in range(0, len(shuffled), 64):
            rows = shuffled[start : start + 64]
            if len(rows) < 2:  # BatchNorm needs two
                continue
            loss = nn.functional.cross_entropy(model(x[rows]), y[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            logits = model(x)
        candidate = (
            float((logits[val].argmax(1) == y[val]).float().mean()),
            float(nn.functional.cross_entropy(logits[val], y[val])),
        )
        if _better(candidate, best):  # the GGNN's rule
            best, chosen = candidate, logits[test].softmax(1)[:, 1].numpy()
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-dir", default="../shared/data/devmap")
    parser.add_argument("--data-dir", default=os.path.expanduser("~/.cache/programl/devmap"))
    parser.add_argument("--variant", default="ncc", choices=("ncc", "clang22"))
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--fold-seed", type=int, default=204)
    parser.add_argument("--mlp-seeds", type=int, nargs="*", default=[204, 205, 206], help="none: skip the MLP")
    parser.add_argument(
        "--forest-seeds", type=int, nargs="+", default=[0], help="one forest per seed, metrics averaged (default: 0)"
    )
    parser.add_argument("-o", "--output", default="bench-results/heuristics.json")
    args = parser.parse_args(argv)
    from sklearn.ensemble import RandomForestClassifier

    results: dict[str, dict] = {}
    print(f"| method | platform | accuracy % (mean ± std over {args.folds} folds) | weighted F1 |")
    print("|---|---|---|---|")
    started = time.perf_counter()
    for platform in DevMap.PLATFORMS:
        try:
            data = DevMap(args.data_dir, platform, args.variant, mirrors=[args.source_dir], build=False).load_graphs()
        except ProgramlError as error:  # the graphs were not built, or another source's: one line, not a traceback
            print(f"heuristics.py: {error}", file=sys.stderr)
            return 1
        aux, counts, rich = features(data)
        labels, runtimes = data.labels, data.runtimes
        per_method: dict[str, list[dict]] = {"static": [], "rf-aux": [], "rf-aux+texts": []}
        if args.mlp_seeds:
            per_method["mlp-bits+texts"] = []
        for split in DevMap.cross_validation_splits(labels, args.folds, args.fold_seed):
            static = int(np.bincount(labels[split.train], minlength=2).argmax())
            test = split.test
            predictions = {"static": np.full(len(test), static)}
            for name, x in (("rf-aux", aux), ("rf-aux+texts", rich)):
                by_seed = []
                for seed in args.forest_seeds:
                    forest = RandomForestClassifier(n_estimators=500, random_state=seed, n_jobs=1)
                    pred = forest.fit(x[split.train], labels[split.train]).predict(x[test])
                    by_seed.append(devmap_metrics(labels[test], pred, runtimes[test], static))
                per_method[name].append(mean_metrics(by_seed))
            if args.mlp_seeds:
                runs = [mlp_probabilities(aux, counts, labels, split, seed) for seed in args.mlp_seeds]
                predictions["mlp-bits+texts"] = (np.mean(runs, axis=0) > 0.5).astype(int)
            for name, pred in predictions.items():
                per_method[name].append(devmap_metrics(labels[test], pred, runtimes[test], static))
        results[platform] = {}
        for name, folds in per_method.items():
            acc = np.array([f["accuracy"] for f in folds])
            f1 = np.array([f["f1"] for f in folds])
            results[platform][name] = {
                "accuracy_mean": acc.mean(),
                "accuracy_std": acc.std(),
                "f1_mean": f1.mean(),
                "f1_std": f1.std(),
                "folds": folds,
            }
            spread = ""
            if "accuracy_by_seed" in folds[0] and len(args.forest_seeds) > 1:
                by_seed = np.mean([f["accuracy_by_seed"] for f in folds], axis=0)  # each seed's mean over the folds
                results[platform][name]["accuracy_by_seed"] = by_seed.tolist()
                spread = f" (seeds {100 * by_seed.min():.1f}-{100 * by_seed.max():.1f})"
            print(
                f"| {name} | {platform} | {100 * acc.mean():.1f} ± {100 * acc.std():.1f}{spread} "
                f"| {f1.mean():.2f} ± {f1.std():.2f} |"
            )
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "variant": args.variant,
                "folds": args.folds,
                "mlp_seeds": args.mlp_seeds,
                "forest_seeds": args.forest_seeds,
                "fold_seed": args.fold_seed,
                "seconds": time.perf_counter() - started,
                "results": results,
            },
            indent=1,
        )
    )
    print(f"wrote {out} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
