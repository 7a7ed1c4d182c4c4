"""Pictures of a run (matplotlib, Agg backend, written atomically): :func:`plot_learning_curves` and
:func:`plot_confusion_matrix`.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from programl.util.fs import write_bytes

__all__ = ["plot_confusion_matrix", "plot_learning_curves"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_learning_curves(
    records: Sequence[Mapping[str, Any]],
    path: str | os.PathLike,
    *,
    title: str = "",
    metrics: Sequence[str] | None = None,
    splits: Sequence[str] = ("train", "val", "test"),
    mark_epoch: int | None = None,
) -> Path:
    """A PNG with one panel per metric and one line per split, from per-epoch records.

    Records hold ``epoch`` and keys ``<split>_<metric>`` (``train_loss``, ``val_accuracy`` ...).

    Args:
        records: The per-epoch log (:attr:`EpochLog.records`).
        path: The PNG to write (atomically).
        title: Figure title.
        metrics: Metrics to draw (default: every ``<split>_<metric>`` found, ``loss`` first).
        splits: Prefixes to look for.
        mark_epoch: Draw a dashed vertical line at this epoch (e.g. the epoch chosen on validation).
    """
    plt = _pyplot()
    if metrics is None:
        found: list[str] = []
        for record in records:
            for key, value in record.items():
                split, _, metric = key.partition("_")
                if split in splits and metric and metric not in found and isinstance(value, (int, float)):
                    found.append(metric)
        metrics = sorted(found, key=lambda m: (m != "loss", found.index(m)))
    metrics = list(metrics) or ["loss"]
    columns = min(3, len(metrics))
    rows = math.ceil(len(metrics) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.4 * rows), squeeze=False)
    epochs = [r.get("epoch") for r in records]
    for ax, metric in zip(axes.flat, metrics):
        for split in splits:
            key = f"{split}_{metric}"
            points = [
                (e, r[key])
                for e, r in zip(epochs, records)
                if key in r and isinstance(r[key], (int, float)) and math.isfinite(r[key])
            ]
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, marker="." if len(xs) < 40 else None, label=split)
        if mark_epoch is not None:
            ax.axvline(mark_epoch, color="grey", linestyle="--", linewidth=1)
        ax.set_title(metric)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(metrics) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return _save_figure(plt, fig, path)


def plot_confusion_matrix(
    matrix: Sequence[Sequence[int]],
    path: str | os.PathLike,
    *,
    labels: Sequence[str] | None = None,
    title: str = "",
) -> Path:
    """A PNG of a confusion matrix (rows = true class, columns = predicted), coloured by row-normalised rate.

    Counts are printed in the cells of matrices up to 12 x 12; larger ones (POJ-104's 104 classes) are drawn as a
    heat map with sparse tick labels.
    """
    import numpy as np

    plt = _pyplot()
    cm = np.asarray(matrix, dtype=np.int64)
    n = cm.shape[0]
    rates = cm / np.maximum(cm.sum(axis=1, keepdims=True), 1)
    size = 4.2 if n <= 12 else 9.0
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    image = ax.imshow(rates, cmap="Blues", vmin=0.0, vmax=1.0)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="fraction of the true class")
    names = list(labels) if labels is not None else [str(i) for i in range(n)]
    if n <= 12:
        ticks = list(range(n))
        for i in range(n):
            for j in range(n):
                ax.text(j, i, f"{cm[i, j]}", ha="center", va="center", color="white" if rates[i, j] > 0.5 else "black")
    else:
        step = max(1, n // 13)
        ticks = list(range(0, n, step))
    ax.set_xticks(ticks, [names[t] for t in ticks])
    ax.set_yticks(ticks, [names[t] for t in ticks])
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(title or f"confusion matrix ({int(cm.sum())} examples)")
    fig.tight_layout()
    return _save_figure(plt, fig, path)


def _save_figure(plt, fig, path: str | os.PathLike) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return write_bytes(path, buffer.getvalue())
