"""Training metrics as ProGraML reports them (SPEC §6.1 "Metrics").

Per batch: accuracy and the binary (positive class = 1) precision, recall and F1 of the predictions, with
scikit-learn's conventions (an undefined ratio counts as 0). Per epoch: the per-batch values averaged with the batch's
node count as weight (*not* the F1 of the pooled counts), plus the confusion matrix pooled over all batches
(rows = true class, columns = predicted class). For more than two classes precision/recall/F1 are those of class 1
versus the rest, as in the binary case; accuracy and the confusion matrix are exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

__all__ = ["BatchMetrics", "MetricsAccumulator", "batch_metrics", "confusion_matrix"]


def confusion_matrix(pred: Tensor, target: Tensor, num_classes: int = 2) -> np.ndarray:
    """(num_classes, num_classes) int64 counts, ``[true, predicted]``."""
    pred = pred.detach().reshape(-1).to("cpu", torch.long)
    target = target.detach().reshape(-1).to("cpu", torch.long)
    counts = torch.bincount(target * num_classes + pred, minlength=num_classes * num_classes)
    return counts[: num_classes * num_classes].reshape(num_classes, num_classes).numpy().astype(np.int64)


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


@dataclass(frozen=True)
class BatchMetrics:
    """Metrics of one batch.

    Attributes:
        accuracy, precision, recall, f1: As in the module docstring.
        count: Number of predictions (nodes for node tasks, graphs for graph tasks): the batch's epoch weight.
        confusion: The batch's confusion matrix.
    """

    accuracy: float
    precision: float
    recall: float
    f1: float
    count: int
    confusion: np.ndarray


def batch_metrics(pred: Tensor, target: Tensor, num_classes: int = 2) -> BatchMetrics:
    """Accuracy and positive-class precision/recall/F1 of one batch of predictions (SPEC §6.1).

    Args:
        pred: Predicted classes (any shape), or logits of shape (..., num_classes) (argmax is taken).
        target: True classes, same number of elements as the predictions.
        num_classes: Size of the confusion matrix.
    """
    if pred.is_floating_point():
        pred = pred.argmax(dim=-1)
    cm = confusion_matrix(pred, target, num_classes)
    count = int(cm.sum())
    tp = float(cm[1, 1]) if num_classes > 1 else 0.0
    fp = float(cm[:, 1].sum() - cm[1, 1]) if num_classes > 1 else 0.0
    fn = float(cm[1, :].sum() - cm[1, 1]) if num_classes > 1 else 0.0
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    return BatchMetrics(
        accuracy=_ratio(float(np.trace(cm)), count),
        precision=precision,
        recall=recall,
        f1=_ratio(2 * precision * recall, precision + recall),
        count=count,
        confusion=cm,
    )


@dataclass
class MetricsAccumulator:
    """Accumulate per-batch metrics over an epoch (weights = batch counts) and pool the confusion matrix.

    Example:
        >>> acc = MetricsAccumulator()
        >>> acc.update(torch.tensor([1, 0, 1]), torch.tensor([1, 0, 0]), loss=0.5)
        >>> round(acc.compute()["mean_accuracy"], 3)
        0.667
    """

    num_classes: int = 2
    batches: int = 0
    count: int = 0
    _sums: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(("accuracy", "precision", "recall", "f1", "loss"), 0.0)
    )
    _loss_count: int = 0
    confusion: np.ndarray | None = None

    def update(self, pred: Tensor, target: Tensor, loss: float | Tensor | None = None) -> BatchMetrics:
        """Add one batch (predictions or logits, targets, and optionally its mean loss); returns its metrics."""
        m = batch_metrics(pred, target, self.num_classes)
        self.batches += 1
        self.count += m.count
        for name in ("accuracy", "precision", "recall", "f1"):
            self._sums[name] += getattr(m, name) * m.count
        if loss is not None:
            self._sums["loss"] += float(loss) * m.count
            self._loss_count += m.count
        self.confusion = m.confusion if self.confusion is None else self.confusion + m.confusion
        return m

    def compute(self) -> dict[str, object]:
        """Epoch values: ``mean_accuracy``, ``mean_precision``, ``mean_recall``, ``mean_f1``, ``mean_loss`` (NaN
        when no loss was given), ``count``, ``batches`` and ``confusion_matrix`` (a nested list)."""
        out: dict[str, object] = {
            f"mean_{name}": (self._sums[name] / self.count if self.count else float("nan"))
            for name in ("accuracy", "precision", "recall", "f1")
        }
        out["mean_loss"] = self._sums["loss"] / self._loss_count if self._loss_count else float("nan")
        out["count"] = self.count
        out["batches"] = self.batches
        cm = self.confusion if self.confusion is not None else np.zeros((self.num_classes,) * 2, dtype=np.int64)
        out["confusion_matrix"] = cm.tolist()
        return out
