"""Precision, recall and F1 of the positive class from confusion counts (docs/spec/tasks.md#metrics).

scikit-learn's conventions: an undefined ratio (a zero denominator) counts as 0. One home for the formulas, without
torch, so that :mod:`programl.models.metrics` and the studies (``studies/``) share them.
"""

from __future__ import annotations

__all__ = ["precision_recall_f1", "ratio"]


def ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, or 0 when the denominator is 0."""
    return numerator / denominator if denominator else 0.0


def precision_recall_f1(tp: float, fn: float, fp: float) -> dict[str, float]:
    """``{"precision", "recall", "f1"}`` of the positive class from true positives, false negatives, false positives."""
    precision, recall = ratio(tp, tp + fp), ratio(tp, tp + fn)
    return {"precision": precision, "recall": recall, "f1": ratio(2 * precision * recall, precision + recall)}
