"""devmap by a random forest that also reads the program graph (not in the paper; issue 11, item 5).

The forest of ``studies/heuristics.py`` (``rf-aux+texts``: 500 trees on the two auxiliary inputs, the counts of
every node text and the node and edge counts) gets K more columns: the first K principal components of a
label-free representation of each kernel's ProGraML graph, the final states of the five shipped faithful data-flow
GGNNs (``programl.pretrained.pretrained``: reachability, dominance, datadep, liveness, subexpressions; 30 steps, no
root selected), each averaged over the graph's nodes (5 x 34 = 170 columns). The components are fitted on each
fold's training kernels only; no devmap label reaches the GGNNs. Each forest seed trains both forests, with and
without the graph columns, on the same folds as ``programl train devmap`` (10 folds, seed 204), so the difference is
paired. Prints per platform the two accuracies, their per-seed difference (mean and standard error over the seeds)
and the folds on which the forest with the graph is above, level with or below the one without (fold accuracies
averaged over the seeds); writes JSON.

    python studies/devmap_graph_forest.py --source-dir ../shared/data/devmap --data-dir ~/.cache/programl/devmap \\
        --forest-seeds 10 11 12 13 14 15 16 17 18 19 --cache states.npz -o graph-forest.json

The pooled states took 1,043 s of one CPU thread for 1,085 graphs; devmap's 1,360 rows (both platforms) hold 580
distinct graphs once their graph features (inputs and label) are set aside, and only those are computed.
``--cache FILE`` keeps them (keyed by each graph's sha256, recomputed when the graphs differ). Exit 1 with one line
when the devmap graphs were not built.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import runpy
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from programl.datasets import DevMap  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from programl.tasks.devmap.train import devmap_metrics  # noqa: E402
from programl.util.fs import atomic_write_bytes, atomic_write_text  # noqa: E402
from studies import paired  # noqa: E402

HEURISTICS = runpy.run_path(str(Path(__file__).with_name("heuristics.py")))
ANALYSES = ("reachability", "dominance", "datadep", "liveness", "subexpressions")
WITHOUT, WITH = "rf-aux+texts", "rf-aux+texts+graph"


def pooled_states(graphs, analyses=ANALYSES, batch_graphs: int = 32) -> np.ndarray:
    """Each graph's node-mean final state under each shipped data-flow GGNN (no root): ``(graphs, 34 x analyses)``."""
    import torch
    from torch_geometric.data import Batch

    from programl.io.pyg import to_pyg
    from programl.pretrained import pretrained
    from programl.util.progress import progress

    columns = []
    for name in analyses:
        model = pretrained(name)
        network, rows = model.model.eval(), []
        for start in progress(range(0, len(graphs), batch_graphs), None, f"{name} states", unit="batch"):
            datas = []
            for graph in graphs[start : start + batch_graphs]:
                data = to_pyg(graph, model.vocabulary)
                data.root = torch.zeros(data.num_nodes, dtype=torch.long)
                datas.append(data)
            batch = Batch.from_data_list(datas)
            with torch.no_grad():
                states = network.propagate_states(network.embed(batch.x, batch.root), batch, network.num_steps)
            sums = torch.zeros(batch.num_graphs, states.size(1)).index_add_(0, batch.batch, states)
            sizes = torch.bincount(batch.batch, minlength=batch.num_graphs).clamp(min=1).unsqueeze(1)
            rows.append((sums / sizes).double().numpy())
        columns.append(np.concatenate(rows))
    return np.hstack(columns)


def graph_key(graph) -> str:
    """The sha256 of the graph without its graph features: the rows of one kernel differ only in those (their
    inputs and label, SPEC §1.8), and the GGNNs read nodes and edges only."""
    structure = type(graph)()
    structure.CopyFrom(graph)
    structure.ClearField("features")
    return hashlib.sha256(structure.SerializeToString(deterministic=True)).hexdigest()


def cached_states(graphs, keys: list[str], cache: Path | None) -> np.ndarray:
    """:func:`pooled_states` of ``graphs`` (whose :func:`graph_key` are ``keys``), read from ``cache`` when it holds
    exactly these graphs, else computed (and written there atomically)."""
    keys = np.array(keys)
    if cache is not None and cache.is_file():
        with np.load(cache) as saved:
            if np.array_equal(saved["keys"], keys) and list(saved["analyses"]) == list(ANALYSES):
                return saved["states"]
        print(f"{cache}: other graphs; recomputing", file=sys.stderr)
    states = pooled_states(graphs)
    if cache is not None:
        buffer = io.BytesIO()
        np.savez(buffer, keys=keys, analyses=np.array(ANALYSES), states=states)
        atomic_write_bytes(cache, buffer.getvalue())
    return states


def forest_pair(
    rich, graph_states, labels, runtimes, split, seed: int, components: int, jobs: int = 1
) -> dict[str, dict]:
    """One fold's metrics of the forest of seed ``seed`` without and with the graph's first principal components
    (``jobs`` threads grow the trees; the forest is the same for any number)."""
    from sklearn.decomposition import PCA
    from sklearn.ensemble import RandomForestClassifier

    pca = PCA(components, random_state=0).fit(graph_states[split.train])
    inputs = {WITHOUT: rich, WITH: np.hstack([rich, pca.transform(graph_states)])}
    static = int(np.bincount(labels[split.train], minlength=2).argmax())
    metrics = {}
    for name, x in inputs.items():
        forest = RandomForestClassifier(n_estimators=500, random_state=seed, n_jobs=jobs)
        pred = forest.fit(x[split.train], labels[split.train]).predict(x[split.test])
        metrics[name] = devmap_metrics(labels[split.test], pred, runtimes[split.test], static)
    return metrics


def paired_difference(with_graph: list[float], without: list[float]) -> tuple[float, float]:
    """Mean of the per-seed differences and its standard error (sample standard deviation over sqrt(seeds);
    NaN for one seed; :func:`studies.paired.paired_difference`)."""
    d = paired.paired_difference(with_graph, without, scale=1.0)
    return d.mean, d.standard_error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-dir", default="../shared/data/devmap")
    parser.add_argument("--data-dir", default=str(Path("~/.cache/programl/devmap").expanduser()))
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--fold-seed", type=int, default=204)
    parser.add_argument("--forest-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--components", type=int, default=4, help="principal components of the states (default: 4)")
    parser.add_argument("--jobs", type=int, default=1, help="threads per forest (default: 1)")
    parser.add_argument("--cache", type=Path, help="an .npz keeping the pooled states between runs")
    parser.add_argument("-o", "--output", type=Path, default=Path("bench-results/devmap-graph-forest.json"))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:  # NCC's IR, as the headline devmap rows
        datas = {
            p: DevMap(args.data_dir, p, "ncc", mirrors=[args.source_dir], build=False).load_graphs()
            for p in DevMap.PLATFORMS
        }
    except ProgramlError as error:
        print(f"devmap_graph_forest.py: {error}", file=sys.stderr)
        return 1
    keys = {platform: [graph_key(g) for g in data.graphs] for platform, data in datas.items()}
    unique: dict[str, object] = {}  # key -> graph, in first-seen order
    for platform, data in datas.items():
        for key, graph in zip(keys[platform], data.graphs):
            unique.setdefault(key, graph)
    index = {key: i for i, key in enumerate(unique)}
    states = cached_states(list(unique.values()), list(unique), args.cache)
    print(
        f"| platform | {WITHOUT} % | {WITH} (PCA {args.components}) % | difference, points (SE over seeds) "
        "| folds above / level / below |"
    )
    print("|---|---|---|---|---|")
    results = {}
    for platform, data in datas.items():
        graph_states = states[[index[key] for key in keys[platform]]]
        _, _, rich = HEURISTICS["features"](data)
        folds: dict[str, list[dict]] = {WITHOUT: [], WITH: []}
        for split in DevMap.cross_validation_splits(data.labels, args.folds, args.fold_seed):
            by_seed = [
                forest_pair(rich, graph_states, data.labels, data.runtimes, split, seed, args.components, args.jobs)
                for seed in args.forest_seeds
            ]
            for name in folds:
                folds[name].append(HEURISTICS["mean_metrics"]([m[name] for m in by_seed]))
        by_method = {}
        for name, per_fold in folds.items():
            by_seed_acc = np.mean([f["accuracy_by_seed"] for f in per_fold], axis=0)
            by_method[name] = {
                "accuracy_mean": float(np.mean([f["accuracy"] for f in per_fold])),
                "accuracy_by_seed": by_seed_acc.tolist(),
                "folds": per_fold,
            }
        diff, se = paired_difference(by_method[WITH]["accuracy_by_seed"], by_method[WITHOUT]["accuracy_by_seed"])
        fold_diff = [a["accuracy"] - b["accuracy"] for a, b in zip(folds[WITH], folds[WITHOUT])]
        above, below = sum(d > 1e-9 for d in fold_diff), sum(d < -1e-9 for d in fold_diff)
        results[platform] = {**by_method, "difference": diff, "difference_se": se}
        without, with_graph = by_method[WITHOUT]["accuracy_mean"], by_method[WITH]["accuracy_mean"]
        spread = "one seed" if math.isnan(se) else f"{100 * se:.2f}"
        print(
            f"| {platform} | {100 * without:.2f} | {100 * with_graph:.2f} "
            f"| {100 * diff:+.2f} ({spread}) | {above} / {len(fold_diff) - above - below} / {below} |"
        )
    document = {
        "folds": args.folds,
        "fold_seed": args.fold_seed,
        "forest_seeds": args.forest_seeds,
        "components": args.components,
        "analyses": list(ANALYSES),
        "seconds": time.perf_counter() - started,
        "results": results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.output, json.dumps(document, indent=1) + "\n")
    print(f"wrote {args.output} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
