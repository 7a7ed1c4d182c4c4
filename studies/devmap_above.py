"""Devmap above the anchors (issue 40, item 3): a nested cross-validation of cheap heuristics on the devmap folds.

The outer protocol is ``programl train devmap``'s: the seeded stratified 10-fold partition
(:meth:`programl.datasets.DevMap.cross_validation_splits`, fold seed 204); outer split ``k`` tests once on fold ``k``
and trains on the other folds (``--train-on train+val``, the default: the 9 folds that are not the test fold, as
a plain 10-fold cross-validation; ``--train-on train``: only the split's 8 training folds, as the GGNN and
``studies/devmap_peers.py``). Every choice is made **inside** the outer training rows: a stratified
``--inner-folds``-fold cross-validation of those rows alone (seeded by the model seed) scores each candidate below
by its out-of-fold accuracy, the best is refitted on all the outer training rows and predicts the test fold once.
The outer test rows are never passed to a fit, to a feature that reads labels, or to the choice
(:func:`nested_cv_folds` returns the index sets; the tests check they are disjoint).

Candidates (each gives P(GPU) of its query rows):

* ``forest``: ``studies/heuristics.py``'s ``rf-aux+texts`` (500 trees on ``log1p`` of ``transfer`` and
  ``wgsize``, the graph's node-text counts and sizes), the best non-graph baseline of the earlier tables;
* ``forest_kernel``: a forest (300 trees) on the same columns plus ``log(transfer / wgsize)`` and the *kernel
  neighbour* columns (:func:`kernel_features`);
* ``xgb``: XGBoost (200 rounds, depth 4, learning rate 0.1, row and column subsampling 0.8) on the forest's columns
  plus ``log(transfer / wgsize)`` and the 20 numbers/types aggregates of ``studies/devmap_numbers_types.py``;
* ``xgb_kernel``: the same XGBoost on the forest's columns, ``log(transfer / wgsize)`` and the kernel neighbour
  columns;
* ``xgb_ir2vec``: the same XGBoost on the forest's columns, ``log(transfer / wgsize)`` and the IR2Vec Flow-Aware
  program vector (``--no-ir2vec`` drops it);
* ``xgb_regress_kernel``: an XGBoost regressor of ``log(runtime_cpu / runtime_gpu)`` (the CSVs hold both runtimes)
  on the ``xgb_kernel`` columns; P(GPU) = sigmoid(prediction), so GPU where the predicted ratio is above 1;
* ``kernel_nn``: kernel-local: among the training rows of the same kernel (identical node-text counts), the label of
  the nearest in ``(log1p transfer, log1p wgsize)`` (the mean label of the nearest when several are as near); a
  kernel with no training row falls back to ``forest``;
* soft votes (the mean P): ``vote_forest_xgb_kernel`` (forest, xgb_kernel), ``vote_kernel`` (forest_kernel,
  xgb_kernel, xgb_regress_kernel), ``vote_all`` (the six fitted models), ``vote_nn`` (kernel_nn, forest,
  xgb_kernel).

Kernel neighbour columns of a row, from the *training* rows of its kernel other than itself (a training row never
sees its own label): how many there are, the label, distance and log runtime ratio of the nearest in the two inputs,
their fraction of GPU labels, and the labels of the nearest with a smaller and with a larger transfer (missing when
there is none). The kernel of a row is its node-text count vector (the same program at another problem size has the
same counts: 249 distinct vectors among the 680 rows, 256 benchmark names).

Baselines on the same outer training rows and model seeds, side by side: ``forest`` (the candidate above, scored
whether chosen or not), IR2Vec Flow-Aware / Symbolic with its paper's XGBoost (``studies/devmap_peers.py``'s
``ir2vec_predict``), ``static``. Every candidate's outer test accuracy is printed too, as a diagnostic only: the
nested choice does not read it.

Usage::

    python studies/devmap_above.py --source-dir ../shared/data/devmap --data-dir ~/.cache/programl/devmap
    python studies/devmap_above.py --seeds 0 --rows 0 1 2 ... --no-ir2vec     # a quick check; not a result

The graphs must have been built (``programl train devmap`` builds them under its ``--data-dir``, the root of the
``programl.datasets.DevMap`` data set this study reads; ``--source-dir`` is the mirror of its raw files);
IR2Vec embeddings are cached as ``studies/devmap_peers.py`` caches them.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from devmap_numbers_types import numbers_types_features, paired_difference  # noqa: E402
from heuristics import features  # noqa: E402

from programl.datasets import DevMap  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from programl.graph_builder.numbers_types import annotate  # noqa: E402
from programl.tasks.devmap.train import devmap_metrics  # noqa: E402
from programl.util.text import markdown_table  # noqa: E402

BASE_MODELS = ("forest", "forest_kernel", "xgb", "xgb_kernel", "xgb_ir2vec", "xgb_regress_kernel")
VOTES = {
    "vote_forest_xgb_kernel": ("forest", "xgb_kernel"),
    "vote_kernel": ("forest_kernel", "xgb_kernel", "xgb_regress_kernel"),
    "vote_all": BASE_MODELS,
    "vote_nn": ("kernel_nn", "forest", "xgb_kernel"),
}
#: Candidates in order of preference when the inner accuracies tie (the simplest first).
CANDIDATES = ("forest", "kernel_nn", "xgb", "xgb_kernel", "forest_kernel", "xgb_regress_kernel", "xgb_ir2vec", *VOTES)
XGB_PARAMS = {"n_estimators": 200, "max_depth": 4, "learning_rate": 0.1, "subsample": 0.8, "colsample_bytree": 0.8}
KERNEL_COLUMNS = 7
FOREST_TREES = {"forest": 500, "forest_kernel": 300}


# ---------------------------------------------------------------------------------------------------------------
# Features


def feature_blocks(data, ir2vec: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Label-free columns of every row: ``rich`` (the forest's), ``ratio`` (log transfer / wgsize), ``nt``
    (numbers/types aggregates), ``ir2vec`` (when given), ``aux`` (log1p of the inputs) and ``kernel`` (an integer
    id per distinct node-text count vector)."""
    aux, counts, rich = features(data)
    _, kernel = np.unique(counts, axis=0, return_inverse=True)
    ratio = np.array([[np.log(r.transfer + 1) - np.log(r.wgsize + 1)] for r in data.rows])
    for graph in data.graphs:
        annotate(graph)
    blocks = {
        "rich": rich,
        "ratio": ratio,
        "nt": np.array([numbers_types_features(g) for g in data.graphs]),
        "aux": aux,
        "kernel": kernel.reshape(-1),
    }
    if ir2vec is not None:
        blocks["ir2vec"] = ir2vec
    return blocks


def log_runtime_ratio(runtimes: np.ndarray) -> np.ndarray:
    """``log(runtime_cpu / runtime_gpu)``: positive where the GPU is faster (label 1)."""
    return np.log(runtimes[:, 0]) - np.log(runtimes[:, 1])


def kernel_features(
    kernel: np.ndarray, aux: np.ndarray, labels: np.ndarray, ratio: np.ndarray, train: np.ndarray, query: np.ndarray
) -> np.ndarray:
    """The kernel neighbour columns (module docstring) of ``query`` rows from the ``train`` rows only; a query row
    that is itself a training row is left out of its own neighbours. NaN where a column has no value."""
    by_kernel: dict[int, list[int]] = collections.defaultdict(list)
    for row in train:
        by_kernel[int(kernel[row])].append(int(row))
    out = np.full((len(query), KERNEL_COLUMNS), np.nan)
    for i, q in enumerate(query):
        rows = np.array([r for r in by_kernel[int(kernel[q])] if r != q], dtype=np.int64)
        out[i, 0] = len(rows)
        if not len(rows):
            continue
        distance = np.abs(aux[rows] - aux[q]).sum(axis=1)
        nearest = rows[distance == distance.min()]
        out[i, 1] = labels[nearest].mean()
        out[i, 2] = distance.min()
        out[i, 3] = ratio[nearest].mean()
        out[i, 4] = labels[rows].mean()
        below, above = rows[aux[rows, 0] < aux[q, 0]], rows[aux[rows, 0] > aux[q, 0]]
        if len(below):
            out[i, 5] = labels[below[aux[below, 0] == aux[below, 0].max()]].mean()
        if len(above):
            out[i, 6] = labels[above[aux[above, 0] == aux[above, 0].min()]].mean()
    return out


# ---------------------------------------------------------------------------------------------------------------
# Models


def _forest(x, y, x_query, seed: int, trees: int) -> np.ndarray:
    from sklearn.ensemble import RandomForestClassifier

    forest = RandomForestClassifier(n_estimators=trees, random_state=seed, n_jobs=1)
    return forest.fit(np.nan_to_num(x, nan=-1.0), y).predict_proba(np.nan_to_num(x_query, nan=-1.0))[:, 1]


def _xgb(x, y, x_query, seed: int) -> np.ndarray:
    import xgboost

    model = xgboost.XGBClassifier(**XGB_PARAMS, n_jobs=1, random_state=seed)
    return model.fit(x, y).predict_proba(x_query)[:, 1]


def _xgb_regress(x, target, x_query, seed: int) -> np.ndarray:
    import xgboost

    model = xgboost.XGBRegressor(**XGB_PARAMS, n_jobs=1, random_state=seed)
    return 1.0 / (1.0 + np.exp(-model.fit(x, target).predict(x_query)))


def candidate_probabilities(
    blocks: dict[str, np.ndarray],
    labels: np.ndarray,
    ratio: np.ndarray,
    train: np.ndarray,
    query: np.ndarray,
    seed: int,
    names=CANDIDATES,
) -> dict[str, np.ndarray]:
    """P(GPU) of the ``query`` rows by each candidate in ``names`` (and the models its votes need), every model
    fitted on the ``train`` rows only; ``query`` must not overlap ``train``."""
    if np.intersect1d(train, query).size:
        raise ValueError("query rows overlap the training rows")
    wanted = set(names) | {m for n in names for m in VOTES.get(n, ())}
    if "kernel_nn" in wanted:
        wanted.add("forest")
    if "ir2vec" not in blocks:
        wanted.discard("xgb_ir2vec")
    y = labels[train]
    base = np.hstack([blocks["rich"], blocks["ratio"]])
    kernel_train = kernel_features(blocks["kernel"], blocks["aux"], labels, ratio, train, train)
    kernel_query = kernel_features(blocks["kernel"], blocks["aux"], labels, ratio, train, query)
    with_kernel = (np.hstack([base[train], kernel_train]), np.hstack([base[query], kernel_query]))
    p: dict[str, np.ndarray] = {}
    if "forest" in wanted:
        rich = blocks["rich"]
        p["forest"] = _forest(rich[train], y, rich[query], seed, FOREST_TREES["forest"])
    if "forest_kernel" in wanted:
        p["forest_kernel"] = _forest(with_kernel[0], y, with_kernel[1], seed, FOREST_TREES["forest_kernel"])
    if "xgb" in wanted:
        x = np.hstack([base, blocks["nt"]])
        p["xgb"] = _xgb(x[train], y, x[query], seed)
    if "xgb_kernel" in wanted:
        p["xgb_kernel"] = _xgb(with_kernel[0], y, with_kernel[1], seed)
    if "xgb_ir2vec" in wanted:
        x = np.hstack([base, blocks["ir2vec"]])
        p["xgb_ir2vec"] = _xgb(x[train], y, x[query], seed)
    if "xgb_regress_kernel" in wanted:
        p["xgb_regress_kernel"] = _xgb_regress(with_kernel[0], ratio[train], with_kernel[1], seed)
    if "kernel_nn" in wanted:
        seen = kernel_query[:, 0] > 0
        p["kernel_nn"] = np.where(seen, np.nan_to_num(kernel_query[:, 1]), p["forest"])
    for name, members in VOTES.items():
        if name in wanted:
            p[name] = np.mean([p[m] for m in members if m in p], axis=0)
    return {name: p[name] for name in names if name in p}


def nested_cv_folds(labels: np.ndarray, outer_train: np.ndarray, inner_folds: int, seed: int):
    """The inner ``(train, validation)`` row indices of a stratified ``inner_folds``-fold partition of
    ``outer_train`` (seeded by ``seed``): both are subsets of ``outer_train``, so never an outer test row."""
    from sklearn.model_selection import StratifiedKFold

    kfold = StratifiedKFold(n_splits=inner_folds, shuffle=True, random_state=seed)
    return [
        (outer_train[np.sort(a)], outer_train[np.sort(b)])
        for a, b in kfold.split(np.zeros(len(outer_train)), labels[outer_train])
    ]


def choose(blocks, labels, ratio, outer_train, inner_folds: int, seed: int, names=CANDIDATES):
    """The candidate of highest out-of-fold accuracy over the inner folds of ``outer_train`` (ties: the earlier in
    ``names``), and every candidate's inner accuracy."""
    correct = collections.Counter()
    for inner_train, inner_val in nested_cv_folds(labels, outer_train, inner_folds, seed):
        for name, p in candidate_probabilities(blocks, labels, ratio, inner_train, inner_val, seed, names).items():
            correct[name] += int(((p > 0.5).astype(int) == labels[inner_val]).sum())
    scores = {name: correct[name] / len(outer_train) for name in names if name in correct}
    best = max(scores, key=lambda n: (scores[n], -names.index(n)))
    return best, scores


# ---------------------------------------------------------------------------------------------------------------
# The run


def outer_splits(labels: np.ndarray, folds: int, fold_seeds, train_on: str) -> list[tuple]:
    """``(fold seed, fold, train rows, test rows)`` of every outer split: the stratified ``folds``-fold partition of
    each fold seed (training on the 9 other folds, or on the split's 8 training folds), or, for the fold seed
    ``"perfograph"``, PERFOGRAPH's ten random stratified 90/10 splits (``studies/devmap_peers.py``)."""
    out = []
    for fold_seed in fold_seeds:
        if fold_seed == "perfograph":
            from devmap_peers import perfograph_splits

            out += [(fold_seed, k, train, test) for k, (train, test) in enumerate(perfograph_splits(labels))]
            continue
        for split in DevMap.cross_validation_splits(labels, folds, fold_seed):
            train = np.sort(np.concatenate([split.train, split.val])) if train_on == "train+val" else split.train
            out.append((fold_seed, split.fold, train, split.test))
    return out


def run_platform(data, blocks, seeds, folds, fold_seeds, inner_folds, train_on, ir2vec_inputs, fixed=None, log=print):
    """Per outer split (of each fold seed) and model seed: the nested choice (or the ``fixed`` candidate, with no
    inner cross-validation), its test metrics, and every candidate's and baseline's."""
    labels, runtimes = data.labels, data.runtimes
    ratio = log_runtime_ratio(runtimes)
    records = []
    for fold_seed, fold, train, test in outer_splits(labels, folds, fold_seeds, train_on):
        static = int(np.bincount(labels[train], minlength=2).argmax())
        for seed in seeds:
            started = time.perf_counter()
            if fixed:
                chosen, inner = fixed, {}
            else:
                chosen, inner = choose(blocks, labels, ratio, train, inner_folds, seed)
            p = candidate_probabilities(blocks, labels, ratio, train, test, seed)
            metrics = {
                name: devmap_metrics(labels[test], (q > 0.5).astype(int), runtimes[test], static)
                for name, q in p.items()
            }
            metrics["nested"] = metrics[chosen]
            metrics["static"] = devmap_metrics(labels[test], np.full(len(test), static), runtimes[test], static)
            for name, x in ir2vec_inputs.items():
                from devmap_peers import ir2vec_predict

                pred = ir2vec_predict(x, labels, train, test, seed)
                metrics[name] = devmap_metrics(labels[test], pred, runtimes[test], static)
            records.append(
                {
                    "fold_seed": fold_seed,
                    "fold": fold,
                    "seed": seed,
                    "chosen": chosen,
                    "inner": inner,
                    "test": metrics,
                }
            )
            inner_note = f"inner {100 * inner[chosen]:.1f} %" if inner else "fixed"
            log(
                f"{data.platform} fold seed {fold_seed} fold {fold} seed {seed}: chose {chosen} ({inner_note}), "
                f"test {100 * metrics['nested']['accuracy']:.1f} %, forest {100 * metrics['forest']['accuracy']:.1f} %"
                f" ({time.perf_counter() - started:.0f} s)"
            )
    return records


def summarise(records: list[dict]) -> dict[str, dict]:
    """Per method: mean ± std over the folds of each fold's mean over the seeds, the seeds' means' range, F1. With
    several fold seeds a fold is a (fold seed, fold) pair: every partition's folds count alike."""
    folds = sorted({_fold(r) for r in records})
    seeds = sorted({r["seed"] for r in records})
    out = {}
    for name in records[0]["test"]:
        acc = np.array([[_at(records, f, s)[name]["accuracy"] for s in seeds] for f in folds])  # folds x seeds
        f1 = np.array([[_at(records, f, s)[name]["f1"] for s in seeds] for f in folds])
        out[name] = {
            "accuracy_mean": float(acc.mean()),
            "accuracy_std": float(acc.mean(axis=1).std()),
            "accuracy_by_seed": acc.mean(axis=0).tolist(),
            "accuracy_by_fold": acc.mean(axis=1).tolist(),
            "f1_mean": float(f1.mean()),
        }
        if all(fold_seed == "perfograph" for fold_seed, _ in folds):
            out[name]["perfograph_best"] = float(acc.mean(axis=1).max())  # the number that protocol reports
    out["nested"]["chosen"] = dict(collections.Counter(r["chosen"] for r in records).most_common())
    gaps = [np.subtract(*sorted(r["inner"].values(), reverse=True)[:5:4]) for r in records if len(r["inner"]) >= 5]
    if gaps:
        out["nested"]["inner_gap_best_to_fifth"] = {"median": float(np.median(gaps)), "max": float(np.max(gaps))}
    return out


def _fold(record) -> tuple:
    """A record's fold: (fold seed, fold); runs before ``--fold-seed`` took several seeds used 204 only."""
    return record.get("fold_seed", 204), record["fold"]


def _at(records, fold, seed):
    return next(r["test"] for r in records if _fold(r) == fold and r["seed"] == seed)


LABELS = {
    "nested": "**nested choice** (inner CV picks per outer split and seed)",
    "forest": "forest, aux + node-text counts (baseline)",
    "ir2vec": "IR2Vec Flow-Aware + its paper's XGBoost (baseline)",
    "ir2vec_symbolic": "IR2Vec Symbolic + its paper's XGBoost (baseline)",
    "static": "static mapping",
}


def print_table(summary: dict[str, dict], fixed: str | None = None) -> None:
    labels = dict(LABELS)
    if fixed:
        labels["nested"] = f"**`{fixed}`, fixed in advance** (no inner choice)"
    first = ["nested", "forest", "ir2vec", "ir2vec_symbolic", "static"]
    names = [n for n in first if n in summary["amd"]] + [n for n in summary["amd"] if n not in first]
    rows = []
    for name in names:
        cells = []
        for platform in DevMap.PLATFORMS:
            e = summary[platform][name]
            lo, hi = min(e["accuracy_by_seed"]), max(e["accuracy_by_seed"])
            best = f"best {100 * e['perfograph_best']:.1f}; mean " if "perfograph_best" in e else ""
            cells += [
                f"{best}{100 * e['accuracy_mean']:.1f} ± {100 * e['accuracy_std']:.1f} ({100 * lo:.1f}-{100 * hi:.1f})",
                f"{e['f1_mean']:.2f}",
            ]
        label = labels.get(name, f"candidate `{name}` alone (diagnostic: the choice does not read it)")
        rows.append((label, *cells))
    header = ("method", "AMD accuracy % (seeds' range)", "AMD F1", "NVIDIA accuracy % (seeds' range)", "NVIDIA F1")
    print("\n".join(markdown_table(header, rows)))
    for platform in DevMap.PLATFORMS:
        chosen = ", ".join(f"{n} {c}" for n, c in summary[platform]["nested"]["chosen"].items())
        print(f"\n{platform}: the inner CV chose {chosen}")
        gap = summary[platform]["nested"].get("inner_gap_best_to_fifth")
        if gap:
            print(
                f"{platform}: inner out-of-fold accuracy, best candidate minus the fifth best: median "
                f"{100 * gap['median']:.2f} points, largest {100 * gap['max']:.2f}"
            )


def compare(summary: dict[str, dict], against=("forest", "ir2vec", "ir2vec_symbolic")) -> list[tuple]:
    """The nested choice against each baseline, per platform: the mean per-fold difference of the seeds' mean
    accuracy (points), its standard error over the folds, and the folds above / level / below."""
    rows = []
    for platform in summary:
        ours = np.array(summary[platform]["nested"]["accuracy_by_fold"])
        for name in against:
            if name not in summary[platform]:
                continue
            mean, se, counts = paired_difference(ours, summary[platform][name]["accuracy_by_fold"])
            rows.append((platform, LABELS.get(name, name), f"{mean:+.2f}", f"{se:.2f}", " / ".join(map(str, counts))))
    return rows


def report(summary: dict[str, dict], fixed: str | None = None) -> None:
    """The table, the paired comparisons and the inner CV's choices."""
    print_table(summary, fixed)
    header = (
        "platform",
        "nested choice minus",
        "mean per-fold difference (points)",
        "standard error",
        "folds above / level / below",
    )
    print()
    print("\n".join(markdown_table(header, compare(summary))))


def ir2vec_blocks(source_dir: Path, data_dir: Path, cache_dir: Path, rows, modes=("fa", "sym")):
    """The IR2Vec vectors (NCC's IR, as ``devmap_peers.py --ir ncc``) of ``rows`` per mode, NaN where unreadable."""
    from devmap_peers import row_ir_paths
    from ir2vec_embed import embed_files

    paths, _ = row_ir_paths(source_dir, data_dir, cache_dir, "ncc")
    out = {}
    for mode in modes:
        found, _ = embed_files([paths[r] for r in rows], mode, cache_dir)
        out[mode] = np.array([found.get(paths[r], [np.nan] * 300) for r in rows], dtype=np.float64)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-dir", default="../shared/data/devmap")
    parser.add_argument("--data-dir", default=os.path.expanduser("~/.cache/programl/devmap"))
    parser.add_argument("--cache-dir", default=os.path.expanduser("~/.cache/programl/devmap-peers"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="model seeds")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument(
        "--fold-seed",
        type=int,
        nargs="+",
        default=[204],
        help="the outer partitions' seeds (several: every fold of each)",
    )
    parser.add_argument(
        "--perfograph",
        action="store_true",
        help="PERFOGRAPH's protocol instead of the folds: ten random stratified 90/10 splits (seeds 0-9); the "
        "tables' mean is over the ten splits, and the JSON also keeps the best split (the number that protocol "
        "reports)",
    )
    parser.add_argument("--inner-folds", type=int, default=5)
    parser.add_argument("--train-on", choices=("train+val", "train"), default="train+val")
    parser.add_argument("--platforms", nargs="+", choices=DevMap.PLATFORMS, default=list(DevMap.PLATFORMS))
    parser.add_argument("--rows", type=int, nargs="*", help="only these rows (a quick check; not a result)")
    parser.add_argument(
        "--fixed",
        choices=CANDIDATES,
        help="a candidate fixed in advance (pre-registered) instead of the inner choice: no inner cross-validation",
    )
    parser.add_argument("--no-ir2vec", action="store_true", help="without IR2Vec (its candidate and baselines)")
    parser.add_argument("-o", "--output", default="bench-results/devmap_above.json")
    parser.add_argument("--from-json", help="print the tables of an earlier run's output (JSON) and stop")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.from_json:
        earlier = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        summary = {platform: summarise(records) for platform, records in earlier["records"].items()}
        report(summary, earlier.get("fixed"))
        return 0
    source_dir, data_dir = Path(args.source_dir), Path(args.data_dir)
    try:
        datas = {
            p: DevMap(data_dir, p, "ncc", rows=args.rows, mirrors=[source_dir], build=False).load_graphs()
            for p in args.platforms
        }
    except ProgramlError as error:
        print(f"devmap_above.py: {error}", file=sys.stderr)
        return 1
    rows = [r.row for r in next(iter(datas.values())).rows]
    vectors = {} if args.no_ir2vec else ir2vec_blocks(source_dir, data_dir, Path(args.cache_dir), rows)
    summary, records = {}, {}
    for platform, data in datas.items():
        blocks = feature_blocks(data, vectors.get("fa"))
        inputs = {}
        if vectors:
            from devmap_peers import ir2vec_features

            inputs = {"ir2vec": ir2vec_features(vectors["fa"], data.rows)}
            inputs["ir2vec_symbolic"] = ir2vec_features(vectors["sym"], data.rows)
        records[platform] = run_platform(
            data,
            blocks,
            args.seeds,
            args.folds,
            ["perfograph"] if args.perfograph else args.fold_seed,
            args.inner_folds,
            args.train_on,
            inputs,
            fixed=args.fixed,
            log=lambda line: print(line, file=sys.stderr, flush=True),
        )
        summary[platform] = summarise(records[platform])
    if set(summary) == set(DevMap.PLATFORMS):
        report(summary, args.fixed)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: getattr(args, k) for k in ("seeds", "folds", "fold_seed", "inner_folds", "train_on", "fixed")}
    if args.perfograph:
        meta.update(fold_seed=["perfograph"], protocol="perfograph: best of ten random stratified 90/10 splits")
    meta.update(rows=len(rows), xgboost=XGB_PARAMS, seconds=time.perf_counter() - started)
    out.write_text(json.dumps({**meta, "summary": summary, "records": records}, indent=1))
    print(f"wrote {out} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
