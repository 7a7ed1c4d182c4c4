"""Devmap peers side by side (issue 40, item 1): IR2Vec with its paper's classifier, the forest, the graph models.

Two tables, each row scored on the same rows of ``cgo17-<platform>.csv`` (680 per platform):

1. **Our protocol** (SPEC §6.5): the rotating 10-fold splits of ``programl train devmap``
   (:meth:`programl.datasets.DevMap.cross_validation_splits`, fold seed 204); every method trains on the split's 8
   training folds and is tested once on its test fold (nothing is chosen on a validation or test fold: no method
   here chooses anything). Mean ± standard deviation over the folds of each fold's mean over the model seeds, and
   the range of the seeds' means over the folds.

   * ``ir2vec`` / ``ir2vec_symbolic``: the ``ir2vec`` wheel's program vector (Flow-Aware / Symbolic, 300 numbers,
     :mod:`ir2vec_embed`) of the row's kernel IR, plus ``transfer`` and ``wgsize``, min-max scaled with the training
     rows' minimum and maximum (the authors scale over all rows), read by the classifier of the IR2Vec paper's
     Device_Mapping experiment (IITH-Compilers/IR2Vec, ``experiments/Device_Mapping/DevMap.ipynb``):
     ``xgboost.XGBClassifier(max_depth=10, learning_rate=0.5, n_estimators=70)``, xgboost's other defaults,
     ``random_state`` = the model seed. A kernel whose IR IR2Vec cannot read keeps its row with a missing embedding
     (NaN, which XGBoost routes as missing) and is reported.
   * ``forest`` / ``forest_aux``: ``studies/heuristics.py``'s ``rf-aux+texts`` / ``rf-aux`` (500 trees on
     ``log1p`` of the two inputs, plus for ``forest`` the ProGraML graph's node-text counts and sizes).
   * ``static``: the training rows' majority device.
   * the graph models' accuracies as ``docs/results.json`` records them (measured by ``programl train devmap`` and
     ``studies/devmap_graph_forest.py`` on the same folds; not re-run here).

2. **PERFOGRAPH's protocol**, labelled as such: ten random stratified 90/10 splits (``train_test_split`` seeds 0-9),
   each method trained on the 90 % and tested on the 10 % (68 rows), model seed 0; the best of the ten test
   accuracies (the number that protocol reports) beside the mean and standard deviation over the ten.

Usage::

    python studies/devmap_peers.py --data-dir ~/.cache/programl/devmap          # IR2Vec reads NCC's IR
    python studies/devmap_peers.py --ir clang14 -o bench-results/devmap_peers_clang14.json

``--ir ncc`` embeds NCC's released IR (``task_devmap.zip``; the files the IR2Vec authors used), ``--ir clangN``
compiles each kernel with ``clang-N`` and the manifest's flags (as the ``clang22`` graphs are made). The graphs
(for the forest) must have been built (``programl train devmap`` builds them under its ``--data-dir``, the root of
the ``programl.datasets.DevMap`` data set this study reads).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from heuristics import features, mean_metrics  # noqa: E402
from ir2vec_embed import MODES, embed_files, ir2vec_version  # noqa: E402

from programl.data.devmap import (  # noqa: E402
    MANIFEST_FILE,
    check_sources,
    extract_sources,
    opencl_source,
    read_manifest,
)
from programl.datasets import DevMap  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from programl.graph_builder.clang import OPENCL_FLAGS  # noqa: E402
from programl.tasks.devmap.train import devmap_metrics  # noqa: E402
from programl.util.text import markdown_table  # noqa: E402

#: The IR2Vec paper's device-mapping classifier (DevMap.ipynb: ``evaluate(max_depth=10, learning_rate=0.5,
#: n_estimators=70, seed=104)``, where ``seed`` seeds their folds, not the model).
XGB_PARAMS = {"max_depth": 10, "learning_rate": 0.5, "n_estimators": 70}
IR2VEC_NAMES = {"fa": "ir2vec", "sym": "ir2vec_symbolic"}
RESULTS_JSON = HERE.parent / "docs" / "results.json"


# ---------------------------------------------------------------------------------------------------------------
# The IR of each row


def compile_kernels(source_dir: Path, kernels_cl: Path, clang: str, out_dir: Path, progress=None):
    """Compile each manifest row's kernel with ``clang`` (OpenCL flags and the manifest's, as the clang22 graphs);
    returns ``({row: path}, {row: reason})``. Outputs are cached in ``out_dir`` (written atomically)."""
    rows = read_manifest(source_dir / MANIFEST_FILE)
    paths, failures = {}, {}
    items = rows if progress is None else progress(rows, len(rows), f"compile {Path(clang).name}")
    for m in items:
        out = out_dir / f"{m.name}.ll"
        if not out.is_file():
            text, flags = opencl_source(m, kernels_cl)
            command = [clang, "-x", "cl", *OPENCL_FLAGS, "-S", "-emit-llvm", "-w", *flags, "-", "-o", "-"]
            done = subprocess.run(command, input=text, capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                failures[m.row] = " | ".join(done.stderr.strip().splitlines()[-2:])
                continue
            out_dir.mkdir(parents=True, exist_ok=True)
            tmp = out.with_name(f".{out.name}.tmp")
            tmp.write_text(done.stdout, encoding="utf-8")
            os.replace(tmp, out)
        paths[m.row] = str(out)
    return paths, failures


def row_ir_paths(source_dir: Path, data_dir: Path, cache_dir: Path, ir: str, progress=None):
    """``({row: IR path}, {row: reason it has none})`` for ``--ir``."""
    kernels_cl, kernels_ir = extract_sources(check_sources(source_dir), data_dir)
    if ir == "ncc":
        return {m.row: str(kernels_ir / m.kernels_ir_file) for m in read_manifest(source_dir / MANIFEST_FILE)}, {}
    clang = shutil.which(f"clang-{ir.removeprefix('clang')}")
    if clang is None:
        raise ProgramlError(f"clang-{ir.removeprefix('clang')} is not on the PATH")
    return compile_kernels(source_dir, kernels_cl, clang, cache_dir / f"{ir}-ir", progress)


# ---------------------------------------------------------------------------------------------------------------
# Classifiers


def ir2vec_features(vectors: np.ndarray, rows) -> np.ndarray:
    """The IR2Vec classifier's input: the embedding, then the raw ``transfer`` and ``wgsize`` (scaled later)."""
    aux = np.array([(r.transfer, r.wgsize) for r in rows], dtype=np.float64)
    return np.hstack([vectors, aux])


def minmax(x: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Min-max scaling fitted on the training rows only (NaN, a missing embedding, stays NaN)."""
    low, high = np.nanmin(x[train], axis=0), np.nanmax(x[train], axis=0)
    span = np.where(high > low, high - low, 1.0)
    return (x - low) / span


def ir2vec_predict(x: np.ndarray, labels: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int) -> np.ndarray:
    """The IR2Vec paper's XGBoost (:data:`XGB_PARAMS`), one thread, on min-max scaled features."""
    import xgboost

    scaled = minmax(x, train)
    model = xgboost.XGBClassifier(**XGB_PARAMS, n_jobs=1, random_state=seed)
    return model.fit(scaled[train], labels[train]).predict(scaled[test]).astype(int)


def forest_predict(x: np.ndarray, labels: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int) -> np.ndarray:
    """``studies/heuristics.py``'s forest: 500 trees, scikit-learn's defaults, one thread."""
    from sklearn.ensemble import RandomForestClassifier

    forest = RandomForestClassifier(n_estimators=500, random_state=seed, n_jobs=1)
    return forest.fit(x[train], labels[train]).predict(x[test])


def methods(inputs: dict[str, np.ndarray]) -> dict[str, tuple]:
    """``{name: (predict function, features)}`` of every method whose features are in ``inputs``."""
    table = {name: (ir2vec_predict, inputs[name]) for name in IR2VEC_NAMES.values() if name in inputs}
    table.update({name: (forest_predict, inputs[name]) for name in ("forest", "forest_aux") if name in inputs})
    return table


def score(table, labels, runtimes, train, test, seeds) -> dict[str, dict]:
    """Each method's metrics on ``test`` (the mean over ``seeds``, each seed's accuracy kept), and ``static``'s."""
    static = int(np.bincount(labels[train], minlength=2).argmax())
    out = {"static": devmap_metrics(labels[test], np.full(len(test), static), runtimes[test], static)}
    for name, (predict, x) in table.items():
        by_seed = [
            devmap_metrics(labels[test], predict(x, labels, train, test, seed), runtimes[test], static)
            for seed in seeds
        ]
        out[name] = mean_metrics(by_seed)
    return out


def summarise(per_split: list[dict[str, dict]]) -> dict[str, dict]:
    """Mean, standard deviation, best and the seeds' range of each method's accuracy and F1 over the splits."""
    summary = {}
    for name in per_split[0]:
        acc = np.array([s[name]["accuracy"] for s in per_split])
        f1 = np.array([s[name]["f1"] for s in per_split])
        entry = {
            "accuracy_mean": float(acc.mean()),
            "accuracy_std": float(acc.std()),
            "accuracy_best": float(acc.max()),
            "f1_mean": float(f1.mean()),
            "f1_std": float(f1.std()),
            "splits": [s[name] for s in per_split],
        }
        if "accuracy_by_seed" in per_split[0][name]:
            by_seed = np.mean([s[name]["accuracy_by_seed"] for s in per_split], axis=0)
            entry["accuracy_by_seed"] = by_seed.tolist()
        summary[name] = entry
    return summary


def perfograph_splits(labels: np.ndarray, n: int = 10) -> list[tuple[np.ndarray, np.ndarray]]:
    """PERFOGRAPH's protocol: ``n`` random stratified 90/10 splits (seeds 0..n-1)."""
    from sklearn.model_selection import train_test_split

    rows = np.arange(len(labels))
    return [
        tuple(np.sort(part) for part in train_test_split(rows, test_size=0.1, stratify=labels, random_state=seed))
        for seed in range(n)
    ]


# ---------------------------------------------------------------------------------------------------------------
# Printing


def _graph_rows() -> list[tuple[str, dict[str, float]]]:
    """The graph models' accuracies as docs/results.json records them."""
    try:
        results = json.loads(RESULTS_JSON.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    rows = [("programl GGNN (docs/results.json)", {p: results["devmap"][p]["accuracy"] for p in DevMap.PLATFORMS})]
    for name, variant in results.get("devmap_variants", {}).items():
        rows.append((f"{name} (docs/results.json)", {p: variant[p]["accuracy"] for p in DevMap.PLATFORMS}))
    return rows


LABELS = {
    "static": "static mapping",
    "ir2vec": "IR2Vec Flow-Aware + XGBoost (paper's)",
    "ir2vec_symbolic": "IR2Vec Symbolic + XGBoost (paper's)",
    "forest": "forest, aux + node-text counts",
    "forest_aux": "forest, aux only",
}


def print_tables(results: dict, ir: str, seeds: list[int], folds: int = 10, fold_seed: int = 204) -> None:
    cv, pg = results["cv"], results["perfograph"]
    seed_text = f"model seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"model seed {seeds[0]}"
    print(f"\nOur protocol: rotating {folds}-fold splits (fold seed {fold_seed}), {seed_text}; IR2Vec reads {ir} IR")
    rows = []
    for name in cv["amd"]:
        cells = []
        for p in DevMap.PLATFORMS:
            e = cv[p][name]
            spread = ""
            if len(e.get("accuracy_by_seed", [])) > 1:
                lo, hi = min(e["accuracy_by_seed"]), max(e["accuracy_by_seed"])
                spread = f" (seeds {100 * lo:.1f}-{100 * hi:.1f})"
            cells += [f"{100 * e['accuracy_mean']:.1f} ± {100 * e['accuracy_std']:.1f}{spread}", f"{e['f1_mean']:.2f}"]
        rows.append((LABELS.get(name, name), *cells))
    rows += [(label, f"{acc['amd']:.1f}", "", f"{acc['nvidia']:.1f}", "") for label, acc in _graph_rows()]
    header = ("method", "AMD accuracy %", "AMD F1", "NVIDIA accuracy %", "NVIDIA F1")
    print("\n".join(markdown_table(header, rows)))
    print("\nPERFOGRAPH's protocol: best of ten random stratified 90/10 splits (seeds 0-9), model seed 0")
    rows = []
    for name in pg["amd"]:
        cells = []
        for p in DevMap.PLATFORMS:
            e = pg[p][name]
            cells += [
                f"{100 * e['accuracy_best']:.1f}",
                f"{100 * e['accuracy_mean']:.1f} ± {100 * e['accuracy_std']:.1f}",
            ]
        rows.append((LABELS.get(name, name), *cells))
    header = ("method", "AMD best %", "AMD mean ± std %", "NVIDIA best %", "NVIDIA mean ± std %")
    print("\n".join(markdown_table(header, rows)))


def _tqdm_progress(iterable, total, description):
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=description, file=sys.stderr)


# ---------------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-dir", default="../shared/data/devmap")
    parser.add_argument("--data-dir", default=os.path.expanduser("~/.cache/programl/devmap"))
    parser.add_argument("--cache-dir", default=os.path.expanduser("~/.cache/programl/devmap-peers"))
    parser.add_argument("--ir", default="ncc", help="ncc (NCC's released IR) or clangN (compile with clang-N)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="model seeds (our protocol)")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--fold-seed", type=int, default=204)
    parser.add_argument("--rows", type=int, nargs="*", help="only these rows (a quick check; not a result)")
    parser.add_argument("--no-forest", action="store_true", help="only IR2Vec (the forests do not depend on --ir)")
    parser.add_argument("--retry-failed", action="store_true", help="embed again the files cached as failed")
    parser.add_argument("-o", "--output", default="bench-results/devmap_peers.json")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"ncc|clang\d+", args.ir):
        parser.error(f"--ir {args.ir!r}: expected ncc or clangN")
    source_dir, data_dir, cache_dir = Path(args.source_dir), Path(args.data_dir), Path(args.cache_dir)
    started = time.perf_counter()
    try:
        ir_paths, ir_failures = row_ir_paths(source_dir, data_dir, cache_dir, args.ir, _tqdm_progress)
        datas = {
            p: DevMap(data_dir, p, "ncc", rows=args.rows, mirrors=[source_dir], build=False).load_graphs()
            for p in DevMap.PLATFORMS
        }
    except ProgramlError as error:
        print(f"devmap_peers.py: {error}", file=sys.stderr)
        return 1
    rows = [r.row for r in datas["amd"].rows]
    vectors, failures = {}, {}
    for mode in args.modes:
        paths = [ir_paths[r] for r in rows if r in ir_paths]
        found, failed = embed_files(paths, mode, cache_dir, retry_failed=args.retry_failed, progress=_tqdm_progress)
        vectors[mode] = np.array([found.get(ir_paths.get(r), [np.nan] * 300) for r in rows], dtype=np.float64)
        failures[mode] = {**{ir_paths[r]: failed[ir_paths[r]] for r in rows if ir_paths.get(r) in failed}}
        failures[mode].update({f"row {r}": ir_failures[r] for r in rows if r in ir_failures})
        for where, reason in sorted(failures[mode].items()):
            print(f"devmap_peers.py: ir2vec {mode}: {where}: {reason}", file=sys.stderr)
    results: dict = {"cv": {}, "perfograph": {}}
    for platform, data in datas.items():
        aux, _counts, rich = features(data)
        inputs = {} if args.no_forest else {"forest": rich, "forest_aux": aux}
        for mode in args.modes:
            inputs[IR2VEC_NAMES[mode]] = ir2vec_features(vectors[mode], data.rows)
        table, labels, runtimes = methods(inputs), data.labels, data.runtimes
        splits = DevMap.cross_validation_splits(labels, args.folds, args.fold_seed)
        cv = [score(table, labels, runtimes, s.train, s.test, args.seeds) for s in splits]
        results["cv"][platform] = summarise(cv)
        pg = [score(table, labels, runtimes, train, test, [0]) for train, test in perfograph_splits(labels)]
        results["perfograph"][platform] = summarise(pg)
        print(f"{platform} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    print_tables(results, args.ir, args.seeds, args.folds, args.fold_seed)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "ir": args.ir,
        "ir2vec_version": ir2vec_version(),
        "xgboost": XGB_PARAMS,
        "rows": len(rows),
        "seeds": args.seeds,
        "fold_seed": args.fold_seed,
        "folds": args.folds,
        "embedding_failures": {mode: failures[mode] for mode in args.modes},
        "seconds": time.perf_counter() - started,
    }
    out.write_text(json.dumps({**meta, **results}, indent=1))
    print(f"wrote {out} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
