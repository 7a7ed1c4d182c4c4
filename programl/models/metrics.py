"""Training metrics as ProGraML reports them (docs/spec/tasks.md#metrics).

Per batch: accuracy and the binary (positive class = 1) precision, recall and F1 of the predictions, with
scikit-learn's conventions (an undefined ratio counts as 0). Per epoch: the per-batch values averaged with the batch's
node count as weight (*not* the F1 of the pooled counts), plus the confusion matrix pooled over all batches
(rows = true class, columns = predicted class) and the precision, recall and F1 of those pooled counts (``pooled_*``).
The per-batch mean depends on how the examples were batched (the paper scored 10,000-node batches); the pooled values
do not, so both are reported side by side. For more than two classes precision/recall/F1 are those of class 1
versus the rest, as in the binary case; accuracy and the confusion matrix are exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from programl.util.scores import precision_recall_f1, ratio

__all__ = [
    "AccuracyAccumulator",
    "BatchMetrics",
    "MetricsAccumulator",
    "batch_metrics",
    "confusion_matrix",
    "pooled_metrics",
]


def confusion_matrix(pred: Tensor, target: Tensor, num_classes: int = 2) -> np.ndarray:
    """(num_classes, num_classes) int64 counts, ``[true, predicted]``."""
    pred = pred.detach().reshape(-1).to("cpu", torch.long)
    target = target.detach().reshape(-1).to("cpu", torch.long)
    counts = torch.bincount(target * num_classes + pred, minlength=num_classes * num_classes)
    return counts[: num_classes * num_classes].reshape(num_classes, num_classes).numpy().astype(np.int64)


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


def pooled_metrics(cm) -> dict[str, float]:
    """Positive-class (class 1) ``precision``, ``recall`` and ``f1`` of a confusion matrix (``[true, predicted]``)."""
    cm = np.asarray(cm, dtype=np.int64)
    if cm.shape[0] < 2:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    tp = float(cm[1, 1])
    return precision_recall_f1(tp, float(cm[1, :].sum()) - tp, float(cm[:, 1].sum()) - tp)


def batch_metrics(pred: Tensor, target: Tensor, num_classes: int = 2) -> BatchMetrics:
    """Accuracy and positive-class precision/recall/F1 of one batch of predictions (docs/spec/tasks.md#metrics).

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
    scores = precision_recall_f1(tp, fn, fp)
    return BatchMetrics(
        accuracy=ratio(float(np.trace(cm)), count),
        precision=scores["precision"],
        recall=scores["recall"],
        f1=scores["f1"],
        count=count,
        confusion=cm,
    )


#: The node-weighted sums of :class:`MetricsAccumulator`, in the order of :meth:`MetricsAccumulator.to_tensor`.
_SUMS = ("accuracy", "precision", "recall", "f1", "loss")


@dataclass
class MetricsAccumulator:
    """Accumulate per-batch metrics over an epoch (weights = batch counts) and pool the confusion matrix.

    Example:
        >>> acc = MetricsAccumulator()
        >>> batch = acc.update(torch.tensor([1, 0, 1]), torch.tensor([1, 0, 0]), loss=0.5)  # predictions, targets
        >>> batch.precision, batch.recall, batch.count
        (0.5, 1.0, 3)
        >>> _ = acc.update(torch.tensor([[2.0, -1.0]]), torch.tensor([0]), loss=0.1)  # the logits of one node
        >>> epoch = acc.compute()
        >>> epoch["mean_precision"], epoch["pooled_precision"], epoch["confusion_matrix"]
        (0.375, 0.5, [[2, 1], [0, 1]])

        The second batch predicts no positive, so its precision counts as 0 in the node-weighted mean
        ((3 x 0.5 + 1 x 0) / 4); the pooled counts give 1 / 2.
    """

    num_classes: int = 2
    batches: int = 0
    count: int = 0
    _sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_SUMS, 0.0))
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

    def to_tensor(self) -> Tensor:
        """Everything accumulated, as one float64 vector: the node-weighted sums, the counts and the confusion
        matrix. Summing the vectors of several accumulators (e.g. ``torch.distributed.all_reduce`` over DDP
        processes) and reading the sum back with :meth:`load_tensor` merges them."""
        cm = self._confusion()
        values = [self._sums[k] for k in _SUMS] + [self.count, self._loss_count, self.batches]
        return torch.tensor(values + cm.reshape(-1).tolist(), dtype=torch.float64)

    def load_tensor(self, vector: Tensor) -> MetricsAccumulator:
        """Replace the accumulated values by those of a :meth:`to_tensor` vector (or a sum of such); returns self."""
        values = vector.detach().to("cpu", torch.float64).tolist()
        expected = len(_SUMS) + 3 + self.num_classes**2
        if len(values) != expected:
            raise ValueError(f"a vector of {len(values)} values, not {expected} (num_classes={self.num_classes})")
        n = len(_SUMS)
        self._sums = dict(zip(_SUMS, values[:n]))
        self.count, self._loss_count, self.batches = (int(round(v)) for v in values[n : n + 3])
        cm = np.rint(np.asarray(values[n + 3 :], dtype=np.float64)).astype(np.int64)
        self.confusion = cm.reshape(self.num_classes, self.num_classes)
        return self

    def state_dict(self) -> dict[str, object]:
        """Everything accumulated, as tensors and plain values (a mid-epoch checkpoint keeps it; such a checkpoint
        is read back with ``weights_only=True``, so it holds no pickled object)."""
        return {"num_classes": self.num_classes, "vector": self.to_tensor()}

    def load_state_dict(self, state: dict[str, object]) -> MetricsAccumulator:
        """Replace the accumulated values by those of :meth:`state_dict`; returns self."""
        self.num_classes = int(state["num_classes"])
        return self.load_tensor(state["vector"])

    def all_reduce(self, reduce_sum: Callable[[Tensor], Tensor]) -> MetricsAccumulator:
        """Merge the accumulators of several processes in place: ``reduce_sum`` sums a tensor over them (in place
        or returned), e.g. :meth:`programl.training.Distributed.all_reduce_sum`; returns self."""
        vector = self.to_tensor()
        summed = reduce_sum(vector)
        return self.load_tensor(vector if summed is None else summed)

    def merge(self, other: MetricsAccumulator) -> MetricsAccumulator:
        """Add the batches of ``other`` to this accumulator; returns self."""
        return self.load_tensor(self.to_tensor() + other.to_tensor())

    def _confusion(self) -> np.ndarray:
        if self.confusion is None:
            return np.zeros((self.num_classes,) * 2, dtype=np.int64)
        return self.confusion

    def compute(self) -> dict[str, object]:
        """Epoch values: ``mean_accuracy``, ``mean_precision``, ``mean_recall``, ``mean_f1`` (per-batch values
        weighted by count), ``mean_loss`` (NaN when no loss was given), ``pooled_precision``, ``pooled_recall``,
        ``pooled_f1`` (of the pooled confusion matrix), ``count``, ``batches`` and ``confusion_matrix`` (a nested
        list)."""
        out: dict[str, object] = {
            f"mean_{name}": (self._sums[name] / self.count if self.count else float("nan"))
            for name in ("accuracy", "precision", "recall", "f1")
        }
        out["mean_loss"] = self._sums["loss"] / self._loss_count if self._loss_count else float("nan")
        out["count"] = self.count
        out["batches"] = self.batches
        cm = self._confusion()
        out.update({f"pooled_{name}": value for name, value in pooled_metrics(cm).items()})
        out["confusion_matrix"] = cm.tolist()
        return out


@dataclass
class AccuracyAccumulator:
    """Top-1 accuracy and mean loss of graph-level predictions over an epoch
    (docs/spec/tasks.md#algorithm-classification), with the public reduction of :class:`MetricsAccumulator`
    (``all_reduce``, ``compute``).

    Example:
        >>> acc = AccuracyAccumulator()
        >>> acc.update(torch.tensor([[0.1, 0.9], [0.8, 0.2]]), torch.tensor([1, 1]), loss=0.5)  # the predicted classes
        tensor([1, 0])
        >>> acc.compute()
        {'loss': 0.5, 'accuracy': 0.5, 'count': 2, 'error': 0.5}
    """

    #: loss * n, correct, n (float64)
    sums: Tensor = field(default_factory=lambda: torch.zeros(3, dtype=torch.float64))

    def update(self, logits: Tensor, target: Tensor, loss: float | Tensor) -> Tensor:
        """Add one batch (logits, targets, its mean loss); returns the predicted classes."""
        pred = logits.detach().argmax(-1)
        n = target.numel()
        # on the sums' own device: a checkpoint's partial metrics come back where ``map_location`` put them (a CPU
        # run resumed on a GPU)
        batch = [float(loss) * n, float((pred == target).sum()), n]
        self.sums += torch.tensor(batch, dtype=torch.float64, device=self.sums.device)
        return pred

    def state_dict(self) -> dict[str, Tensor]:
        """The sums (a mid-epoch checkpoint keeps them; :meth:`MetricsAccumulator.state_dict`)."""
        return {"sums": self.sums.clone()}

    def load_state_dict(self, state: dict[str, Tensor]) -> AccuracyAccumulator:
        """Replace the sums by those of :meth:`state_dict`; returns self."""
        self.sums = state["sums"].to(torch.float64).clone()
        return self

    def all_reduce(self, reduce_sum: Callable[[Tensor], Tensor]) -> AccuracyAccumulator:
        """Merge the accumulators of several processes in place (as :meth:`MetricsAccumulator.all_reduce`)."""
        summed = reduce_sum(self.sums)
        if summed is not None:
            self.sums = summed
        return self

    def compute(self) -> dict[str, object]:
        """``loss`` (mean), ``accuracy``, ``count`` and ``error`` (1 - accuracy)."""
        n = max(float(self.sums[2]), 1.0)
        out: dict[str, object] = {
            "loss": float(self.sums[0]) / n,
            "accuracy": float(self.sums[1]) / n,
            "count": int(self.sums[2]),
        }
        out["error"] = 1.0 - out["accuracy"]
        return out
