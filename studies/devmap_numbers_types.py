"""Devmap ablation of the numbers and types in the graph (issue 40 item 2; ``docs/numbers_types.md``).

What the graph adds, and what numbers and types add to it, measured with the forest of ``studies/heuristics.py``
(500 trees, scikit-learn defaults; ``--seeds``, default 0) on the rotating 10-fold splits of ``programl train
devmap`` (``--fold-seed``, default 204; several give several partitions), each fold's test rows tested once, nothing
tuned. A forest reads a fixed-width vector, so each graph is
summarised by features derived from it:

* ``graph``: its size: nodes, edges, nodes per type (instruction, variable, constant), edges per flow (control,
  data, call);
* ``numbers/types`` (from the ``number_digits`` / ``type_shape`` features, :mod:`programl.graph_builder.numbers_types`,
  the graphs annotated as ``DevMap(numbers_and_types=True)`` annotates them): numeric constants (count, integers,
  floating point, negative), a histogram of their decimal exponents (< 0, 0, 1, 2, 3, 4-5, >= 6), the largest
  integer's exponent; vector/array/struct nodes per kind, the widest vector, the largest array (elements and bits),
  the vectors of floating point, the bits allocated by ``alloca`` of aggregates;
* ``aux``: ``log1p`` of the two auxiliary inputs (transfer bytes, work-group size);
* ``texts``: the count of every node text (the bag of words of ``rf-aux+texts``).

Rows: graph; graph + numbers/types; graph + aux; graph + numbers/types + aux; graph + aux + texts;
graph + numbers/types + aux + texts. Prints a markdown table (the mean over every fold and forest seed, ± the
standard deviation over the folds of their mean over the seeds, the seeds' range), then what the numbers and types
add to each row without them, paired per fold, and writes JSON.

Usage::

    python studies/devmap_numbers_types.py --source-dir ../shared/data/devmap --data-dir ~/.cache/programl/devmap
    python studies/devmap_numbers_types.py --seeds 0 1 2 3 4      # the table of studies/history/results-history.md

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
from programl.graph_builder.numbers_types import NUMBER_FEATURE, TYPE_FEATURE, annotate  # noqa: E402
from programl.tasks.devmap.train import devmap_metrics  # noqa: E402
from studies import paired  # noqa: E402

ROWS = (
    ("graph", ("graph",)),
    ("graph + numbers/types", ("graph", "nt")),
    ("graph + aux", ("graph", "aux")),
    ("graph + numbers/types + aux", ("graph", "nt", "aux")),
    ("graph + aux + texts", ("graph", "aux", "texts")),
    ("graph + numbers/types + aux + texts", ("graph", "nt", "aux", "texts")),
)
_EXPONENT_EDGES = (0, 1, 2, 3, 4, 6)  # bins: < 0, 0, 1, 2, 3, 4-5, >= 6


def graph_features(graph) -> np.ndarray:
    types = np.bincount([n.type for n in graph.node], minlength=3)[:3]
    flows = np.bincount([e.flow for e in graph.edge], minlength=3)[:3]
    return np.concatenate([[len(graph.node), len(graph.edge)], types, flows]).astype(float)


def numbers_types_features(graph) -> np.ndarray:
    numbers, shapes, alloca_bits = [], [], 0
    for node in graph.node:
        features = node.features.feature
        if NUMBER_FEATURE in features:
            numbers.append(list(features[NUMBER_FEATURE].int64_list.value))
        if TYPE_FEATURE in features:
            shape = list(features[TYPE_FEATURE].int64_list.value)
            shapes.append(shape)
            if node.text == "alloca":
                alloca_bits += shape[3]
    n = np.array(numbers, dtype=float).reshape(-1, 10)
    s = np.array(shapes, dtype=float).reshape(-1, 6)
    exponent = n[:, 2]
    histogram = np.histogram(exponent, bins=(-1e9, *_EXPONENT_EDGES, 1e9))[0]
    ints = n[:, 0] == 1
    vectors, arrays = s[s[:, 0] == 1], s[s[:, 0] == 2]
    return np.array(
        [
            len(n),
            ints.sum(),
            (n[:, 0] == 2).sum(),
            n[:, 1].sum(),
            *histogram,
            exponent[ints].max() if ints.any() else -1,
            *np.bincount(s[:, 0].astype(int), minlength=4)[1:4],
            vectors[:, 1].max() if len(vectors) else 0,
            (vectors[:, 5] == 1).sum(),
            arrays[:, 2].max() if len(arrays) else 0,
            np.log1p(arrays[:, 3].max()) if len(arrays) else 0,
            np.log1p(alloca_bits),
        ],
        dtype=float,
    )


def feature_blocks(data) -> dict[str, np.ndarray]:
    texts = sorted({node.text for graph in data.graphs for node in graph.node})
    index = {t: i for i, t in enumerate(texts)}
    counts = np.zeros((len(data), len(texts)))
    for i, graph in enumerate(data.graphs):
        for node in graph.node:
            counts[i, index[node.text]] += 1
    for graph in data.graphs:
        annotate(graph)
    return {
        "graph": np.array([graph_features(g) for g in data.graphs]),
        "nt": np.array([numbers_types_features(g) for g in data.graphs]),
        "aux": np.array([(np.log1p(r.transfer), np.log1p(r.wgsize)) for r in data.rows]),
        "texts": counts,
    }


def forest_row(x: np.ndarray, labels, runtimes, splits, seeds, trees: int) -> dict:
    """One ablation row: a forest per (partition, fold, forest seed), each fold's test rows predicted once.

    ``splits`` is a list of (fold seed, fold index, split). Accuracy: the mean over every (fold, seed); ± the standard
    deviation over the folds of their mean over the seeds; the seeds' range of the mean over the folds."""
    from sklearn.ensemble import RandomForestClassifier

    folds = []
    for fold_seed, fold, split in splits:
        static = int(np.bincount(labels[split.train], minlength=2).argmax())
        by_seed = {}
        for seed in seeds:
            forest = RandomForestClassifier(n_estimators=trees, random_state=seed, n_jobs=1)
            pred = forest.fit(x[split.train], labels[split.train]).predict(x[split.test])
            by_seed[seed] = devmap_metrics(labels[split.test], pred, runtimes[split.test], static)
        folds.append({"fold_seed": fold_seed, "fold": fold, "by_seed": by_seed})
    acc = np.array([[f["by_seed"][s]["accuracy"] for s in seeds] for f in folds])  # (folds, seeds)
    f1 = np.array([[f["by_seed"][s]["f1"] for s in seeds] for f in folds])
    return {
        "features": x.shape[1],
        "accuracy_mean": float(acc.mean()),
        "accuracy_std": float(acc.mean(axis=1).std()),
        "accuracy_by_seed": acc.mean(axis=0).tolist(),
        "f1_mean": float(f1.mean()),
        "f1_std": float(f1.mean(axis=1).std()),
        "folds": folds,
    }


def fold_accuracy(row: dict) -> np.ndarray:
    """Each fold's accuracy, the mean over its forest seeds (a row of :func:`forest_row`, also read back from JSON)."""
    return np.array([np.mean([m["accuracy"] for m in f["by_seed"].values()]) for f in row["folds"]])


def paired_difference(ours, theirs) -> tuple[float, float, tuple[int, int, int]]:
    """Per-fold accuracies ``ours`` minus ``theirs`` on the same folds: the mean difference (points), its standard
    error over the folds and the folds above / level / below (:func:`studies.paired.paired_difference`)."""
    d = paired.paired_difference(ours, theirs)
    return d.mean, d.standard_error, d.counts


def numbers_types_gains(rows: dict[str, dict]) -> dict[str, dict]:
    """What the numbers and types add to each row without them (``rows``: one platform's rows by name)."""
    by_parts = {parts: name for name, parts in ROWS}
    gains = {}
    for name, parts in ROWS:
        if "nt" in parts:
            base = by_parts[tuple(p for p in parts if p != "nt")]
            mean, se, counts = paired_difference(fold_accuracy(rows[name]), fold_accuracy(rows[base]))
            gains[base] = {"difference": mean, "standard_error": se, "above_level_below": counts}
    return gains


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-dir", default="../shared/data/devmap")
    parser.add_argument("--data-dir", default=os.path.expanduser("~/.cache/programl/devmap"))
    parser.add_argument("--variant", default="ncc", choices=("ncc", "clang22"))
    parser.add_argument("--platforms", nargs="+", default=list(DevMap.PLATFORMS), choices=DevMap.PLATFORMS)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--fold-seed", type=int, nargs="+", default=[204], help="one partition per seed")
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="the forests' seeds")
    parser.add_argument("--rows", type=int, nargs="+", help="only these CSV rows (a quick check; not a result)")
    parser.add_argument("-o", "--output", default="bench-results/devmap_numbers_types.json")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    results: dict[str, dict] = {}
    seeds = f"forest seed{'s' if len(args.seeds) > 1 else ''} {', '.join(map(str, args.seeds))}"
    print(f"| features | platform | accuracy % (mean ± std over the folds; {seeds}: range) | weighted F1 |")
    print("|---|---|---|---|")
    for platform in args.platforms:
        try:
            data = DevMap(
                args.data_dir, platform, args.variant, rows=args.rows, mirrors=[args.source_dir], build=False
            ).load_graphs()
        except ProgramlError as error:
            print(f"devmap_numbers_types.py: {error}", file=sys.stderr)
            return 1
        blocks = feature_blocks(data)
        labels, runtimes = data.labels, data.runtimes
        splits = [
            (fold_seed, fold, split)
            for fold_seed in args.fold_seed
            for fold, split in enumerate(DevMap.cross_validation_splits(labels, args.folds, fold_seed))
        ]
        results[platform] = {}
        for name, parts in ROWS:
            x = np.hstack([blocks[p] for p in parts])
            row = results[platform][name] = forest_row(x, labels, runtimes, splits, args.seeds, args.trees)
            by_seed = 100 * np.array(row["accuracy_by_seed"])
            spread = f" ({by_seed.min():.1f}-{by_seed.max():.1f})" if len(args.seeds) > 1 else ""
            print(
                f"| {name} | {platform} | {100 * row['accuracy_mean']:.1f} ± {100 * row['accuracy_std']:.1f}{spread} | "
                f"{row['f1_mean']:.2f} ± {row['f1_std']:.2f} |",
                flush=True,
            )
    print(
        "\n| numbers/types added to | platform | mean per-fold difference (points) ± standard error | folds above / "
        "level / below |"
    )
    print("|---|---|---|---|")
    for platform, rows in results.items():
        for base, gain in numbers_types_gains(rows).items():
            above, level, below = gain["above_level_below"]
            print(
                f"| {base} | {platform} | {gain['difference']:+.2f} ± {gain['standard_error']:.2f} | "
                f"{above} / {level} / {below} |"
            )
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    seconds = time.perf_counter() - started
    summary = {
        "variant": args.variant,
        "folds": args.folds,
        "fold_seed": args.fold_seed,
        "trees": args.trees,
        "seeds": args.seeds,
        "rows": args.rows,
        "seconds": seconds,
        "results": results,
    }
    out.write_text(json.dumps(summary, indent=1))
    print(f"wrote {out} ({seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
