"""What a devmap run reports (docs/spec/tasks.md#device-mapping, docs/spec/tasks.md#device-mapping-table): the metrics
of a set of predictions (:func:`devmap_metrics`), and per platform the fold means and spreads, the pooled confusion
matrix, ``predictions.csv`` and ``confusion.png`` (:func:`platform_report`), and the run's summary beside the published
numbers (:func:`write_summary`)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
from sklearn.metrics import f1_score, precision_recall_fscore_support

from programl.datasets import DevMap
from programl.training import plot_confusion_matrix, write_json
from programl.util.fs import atomic_write_text

__all__ = ["PUBLISHED", "devmap_metrics", "platform_report", "summary_table", "write_summary"]

#: arXiv table (docs/spec/tasks.md#device-mapping-table): accuracy %, precision, recall, F1 per platform.
PUBLISHED = {
    "Static mapping": {"amd": (58.8, 0.35, 0.59, 0.44), "nvidia": (56.9, 0.32, 0.57, 0.41)},
    "DeepTune": {"amd": (71.9, 0.72, 0.72, 0.72), "nvidia": (61.0, 0.69, 0.61, 0.65)},
    "NCC (inst2vec)": {"amd": (80.3, 0.81, 0.80, 0.80), "nvidia": (78.5, 0.79, 0.79, 0.79)},
    "ProGraML": {"amd": (86.6, 0.89, 0.87, 0.88), "nvidia": (80.0, 0.81, 0.80, 0.80)},
}


def devmap_metrics(
    labels: np.ndarray, predictions: np.ndarray, runtimes: np.ndarray, static_device: int
) -> dict[str, float]:
    """Accuracy, weighted and GPU-class precision / recall / F1, and speedups over the static mapping.

    Args:
        labels: (N,) 0 = CPU faster, 1 = GPU faster.
        predictions: (N,) predicted devices.
        runtimes: (N, 2) runtimes on CPU and GPU.
        static_device: The device of the static mapping.

    Returns:
        ``accuracy``, ``precision``, ``recall``, ``f1`` (weighted by class support, sklearn's
        ``average="weighted"``, as the published tables), ``f1_gpu`` (binary, GPU positive), ``speedup_geomean``,
        ``speedup_mean`` (over the static mapping) and ``oracle_speedup_geomean``, ``oracle_speedup_mean``.
    """

    labels = np.asarray(labels, dtype=np.int64)
    predictions = np.asarray(predictions, dtype=np.int64)
    runtimes = np.asarray(runtimes, dtype=np.float64)
    precision, recall, f1, _ = precision_recall_fscore_support(
        labels, predictions, average="weighted", labels=[0, 1], zero_division=0
    )
    rows = np.arange(len(labels))
    static = runtimes[:, static_device]
    speedup = static / runtimes[rows, predictions]
    oracle = static / runtimes.min(axis=1)
    return {
        "accuracy": float(np.mean(labels == predictions)),
        "precision": float(precision),
        "recall": float(recall),
        "f1": float(f1),
        "f1_gpu": float(f1_score(labels, predictions, pos_label=1, zero_division=0)),
        "speedup_geomean": float(np.exp(np.mean(np.log(speedup)))),
        "speedup_mean": float(np.mean(speedup)),
        "oracle_speedup_geomean": float(np.exp(np.mean(np.log(oracle)))),
        "oracle_speedup_mean": float(np.mean(oracle)),
    }


def platform_report(dataset: DevMap, results: list[dict], directory: Path, platform: str) -> dict:
    """Fold means and spreads, pooled confusion matrix, predictions.csv and confusion.png of one platform (the
    results' ``rows`` index ``dataset``, the platform's examples)."""
    labels, runtimes, csv_rows = dataset.y.numpy(), dataset.runtimes.numpy(), dataset.row.numpy()
    keys = list(results[0]["test"]) if results else []
    folds = {k: [r["test"][k] for r in results] for k in keys}
    rows = np.array([i for r in results for i in r["rows"]], dtype=np.int64)
    pred = np.array([p for r in results for p in r["predictions"]], dtype=np.int64)
    static = np.array([r["static_device"] for r in results for _ in r["rows"]], dtype=np.int64)
    cm = np.zeros((2, 2), dtype=np.int64)
    np.add.at(cm, (labels[rows], pred), 1)
    static_acc = [float(np.mean(labels[r["rows"]] == r["static_device"])) for r in results]
    report = {
        "platform": platform,
        "folds": len(results),
        "examples": int(rows.size),
        "mean": {k: float(np.mean(v)) for k, v in folds.items()},
        "std": {k: float(np.std(v)) for k, v in folds.items()},
        "per_fold": folds,
        "best_epochs": [r.get("best_epoch") for r in results],
        "static_mapping_accuracy": float(np.mean(static_acc)) if static_acc else math.nan,
        "pooled_accuracy": float(np.mean(labels[rows] == pred)) if rows.size else math.nan,
        "confusion_matrix": cm.tolist(),
    }
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / "report.json", report)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["row", "name", "fold", "label", "prediction", "static", "runtime_cpu", "runtime_gpu"])
    fold_of = [r["fold"] for r in results for _ in r["rows"]]
    for row, p, s, f in zip(rows, pred, static, fold_of):
        writer.writerow(
            [
                int(csv_rows[row]),
                dataset.names[row],
                f,
                int(labels[row]),
                int(p),
                int(s),
                runtimes[row, 0],
                runtimes[row, 1],
            ]
        )
    atomic_write_text(directory / "predictions.csv", out.getvalue())
    if rows.size:
        plot_confusion_matrix(
            cm,
            directory / "confusion.png",
            labels=["CPU", "GPU"],
            title=f"devmap {DevMap.PLATFORM_NAMES[platform]}: {rows.size} test predictions",
        )
    return report


def write_summary(run_dir: Path, summary: dict, config: dict) -> None:
    """``summary.json`` (``config``: the options it reports on, ``platforms``: :func:`platform_report` by platform)
    and ``summary.md`` (:func:`summary_table`) in ``run_dir``."""
    write_json(run_dir / "summary.json", {"config": config, "platforms": summary})
    atomic_write_text(run_dir / "summary.md", summary_table(summary) + "\n")


def summary_table(summary: dict) -> str:
    """A Markdown table of the platforms' fold means and spreads, beside the paper's ProGraML row."""
    lines = [
        "| platform | folds | accuracy % | precision | recall | F1 | F1 (GPU) | speedup (geo / mean) "
        "| oracle speedup (geo / mean) | ProGraML (paper) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for platform, report in summary.items():
        if not report["folds"]:
            continue
        m, s = report["mean"], report["std"]
        paper = PUBLISHED["ProGraML"][platform]
        lines.append(
            f"| {DevMap.PLATFORM_NAMES[platform]} | {report['folds']} "
            f"| {100 * m['accuracy']:.1f} ± {100 * s['accuracy']:.1f} "
            f"| {m['precision']:.2f} | {m['recall']:.2f} | {m['f1']:.2f} ± {s['f1']:.2f} | {m['f1_gpu']:.2f} "
            f"| {m['speedup_geomean']:.2f} / {m['speedup_mean']:.2f} "
            f"| {m['oracle_speedup_geomean']:.2f} / {m['oracle_speedup_mean']:.2f} "
            f"| {paper[0]:.1f} %, F1 {paper[3]:.2f} |"
        )
    return "\n".join(lines)
