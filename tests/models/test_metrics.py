"""Tests of programl.models.metrics against scikit-learn (SPEC §6.1 "Metrics")."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from programl.models.metrics import MetricsAccumulator, batch_metrics, confusion_matrix  # noqa: E402


def sklearn_batch(pred, target):
    kw = dict(average="binary", pos_label=1, zero_division=0)
    return (
        sklearn_metrics.accuracy_score(target, pred),
        sklearn_metrics.precision_score(target, pred, **kw),
        sklearn_metrics.recall_score(target, pred, **kw),
        sklearn_metrics.f1_score(target, pred, **kw),
    )


binary_batch = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 1), min_size=n, max_size=n), st.lists(st.integers(0, 1), min_size=n, max_size=n)
    )
)


@settings(max_examples=150, deadline=None)
@given(binary_batch)
def test_batch_metrics_match_sklearn(batch):
    pred, target = batch
    m = batch_metrics(torch.tensor(pred), torch.tensor(target))
    expected = sklearn_batch(pred, target)
    for got, want in zip((m.accuracy, m.precision, m.recall, m.f1), expected, strict=True):
        assert math.isclose(got, want, abs_tol=1e-12)
    assert m.count == len(pred)
    np.testing.assert_array_equal(m.confusion, sklearn_metrics.confusion_matrix(target, pred, labels=[0, 1]))


def test_logits_are_argmaxed():
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 1.5]])
    m = batch_metrics(logits, torch.tensor([0, 1, 0]))
    assert m.accuracy == pytest.approx(2 / 3) and m.precision == 0.5 and m.recall == 1.0


@settings(max_examples=50, deadline=None)
@given(st.lists(binary_batch, min_size=1, max_size=6))
def test_epoch_values_are_node_weighted_batch_averages(batches):
    acc = MetricsAccumulator()
    for pred, target in batches:
        acc.update(torch.tensor(pred), torch.tensor(target), loss=len(pred) / 10)
    out = acc.compute()
    weights = np.array([len(p) for p, _ in batches], dtype=float)
    per_batch = np.array([sklearn_batch(p, t) for p, t in batches])
    expected = (per_batch * weights[:, None]).sum(0) / weights.sum()
    got = [out["mean_accuracy"], out["mean_precision"], out["mean_recall"], out["mean_f1"]]
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert out["mean_loss"] == pytest.approx(float((weights / 10 * weights).sum() / weights.sum()))
    all_pred = [x for p, _ in batches for x in p]
    all_target = [x for _, t in batches for x in t]
    assert out["confusion_matrix"] == sklearn_metrics.confusion_matrix(all_target, all_pred, labels=[0, 1]).tolist()
    assert out["count"] == len(all_pred) and out["batches"] == len(batches)


def test_weighted_average_differs_from_pooled_f1():
    """The epoch F1 is the node-weighted mean of batch F1s, not the F1 of the pooled confusion matrix (SPEC §6.1)."""
    acc = MetricsAccumulator()
    acc.update(torch.tensor([1, 1, 0, 0]), torch.tensor([1, 0, 0, 0]))  # P 0.5 R 1 F1 2/3
    acc.update(torch.tensor([0, 0, 0, 0]), torch.tensor([1, 1, 0, 0]))  # P 0 R 0 F1 0
    out = acc.compute()
    assert out["mean_f1"] == pytest.approx(1 / 3)
    pooled_f1 = sklearn_metrics.f1_score([1, 0, 0, 0, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0])
    assert pooled_f1 == pytest.approx(0.4) and out["mean_f1"] != pytest.approx(pooled_f1)


def test_multiclass_confusion_and_empty_accumulator():
    cm = confusion_matrix(torch.tensor([0, 2, 1, 2]), torch.tensor([0, 1, 1, 2]), num_classes=3)
    assert cm.tolist() == [[1, 0, 0], [0, 1, 1], [0, 0, 1]]
    m = batch_metrics(torch.tensor([0, 2, 1, 2]), torch.tensor([0, 1, 1, 2]), num_classes=3)
    assert m.accuracy == 0.75
    out = MetricsAccumulator().compute()
    assert math.isnan(out["mean_f1"]) and math.isnan(out["mean_loss"]) and out["confusion_matrix"] == [[0, 0], [0, 0]]


def test_pooled_values_are_reported_beside_the_per_batch_means():
    acc = MetricsAccumulator()
    acc.update(torch.tensor([1, 1, 0, 0]), torch.tensor([1, 0, 0, 0]))
    acc.update(torch.tensor([0, 0, 0, 0]), torch.tensor([1, 1, 0, 0]))
    out = acc.compute()
    truth, pred = [1, 0, 0, 0, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0]
    assert out["pooled_f1"] == pytest.approx(sklearn_metrics.f1_score(truth, pred))
    assert out["pooled_precision"] == pytest.approx(sklearn_metrics.precision_score(truth, pred))
    assert out["pooled_recall"] == pytest.approx(sklearn_metrics.recall_score(truth, pred))
    assert out["mean_f1"] == pytest.approx(1 / 3)


@settings(max_examples=30, deadline=None)
@given(st.lists(binary_batch, min_size=1, max_size=6), st.integers(1, 5))
def test_merging_accumulators_equals_one_accumulator(batches, cut):
    """What DDP does with the public API: the processes' accumulators summed equal one accumulator of every batch."""
    whole, first, second = MetricsAccumulator(), MetricsAccumulator(), MetricsAccumulator()
    for i, (pred, target) in enumerate(batches):
        whole.update(torch.tensor(pred), torch.tensor(target), loss=len(pred) / 7)
        (first if i < cut else second).update(torch.tensor(pred), torch.tensor(target), loss=len(pred) / 7)
    others = second.to_tensor()
    merged = first.all_reduce(lambda vector: vector.add_(others))  # an all-reduce over two "processes"
    expected, got = whole.compute(), merged.compute()
    assert got["confusion_matrix"] == expected["confusion_matrix"] and got["batches"] == expected["batches"]
    for key in ("mean_f1", "mean_accuracy", "mean_loss", "pooled_f1", "count"):
        assert got[key] == pytest.approx(expected[key], rel=1e-12), key
    again = MetricsAccumulator().merge(first)
    assert again.compute()["mean_f1"] == pytest.approx(expected["mean_f1"], rel=1e-12)
    with pytest.raises(ValueError, match="num_classes"):
        MetricsAccumulator(num_classes=3).load_tensor(whole.to_tensor())
