"""DevMap's cross-validation: the paper's rotating splits of a seeded stratified partition, and a seeded stratified
sample of the rows (:mod:`programl.data.devmap`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Split", "cross_validation_splits", "stratified_rows"]


def stratified_rows(labels: Sequence[int], size: int, seed: int = 204) -> list[int]:
    """A seeded sample of about ``size`` of the rows, stratified by ``labels`` (0/1), sorted (quick looks, tests).

    Each class contributes ``round(size * class share)`` rows, drawn by a permutation of its rows with
    ``numpy.random.default_rng(seed)`` (class 0 first), so the sample of ``size`` rows is the same on both platforms
    when ``labels`` are one platform's (``programl train devmap --subset`` uses the AMD labels).

    Raises:
        ValueError: ``size`` is not in ``2..len(labels)``.
    """
    labels = np.asarray(labels)
    if not 2 <= size <= len(labels):
        raise ValueError(f"a sample of {size} rows is not in 2..{len(labels)}")
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for label in (0, 1):
        members = np.flatnonzero(labels == label)
        take = round(size * len(members) / len(labels))
        chosen.extend(rng.permutation(members)[:take].tolist())
    return sorted(chosen)


@dataclass(frozen=True)
class Split:
    """Indices of one cross-validation fold."""

    fold: int
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def cross_validation_splits(labels: Sequence[int], n_folds: int = 10, seed: int = 204) -> list[Split]:
    """Rotating train/validation/test splits of a seeded, stratified ``n_folds``-fold partition
    (docs/spec/tasks.md#device-mapping).

    The examples are partitioned into ``n_folds`` folds with the class proportions of ``labels`` (scikit-learn's
    ``StratifiedKFold(shuffle=True, random_state=seed)``). Split ``k`` tests on fold ``k``, validates on fold
    ``(k + 1) % n_folds`` and trains on the others (80/10/10 for 10 folds): every example is tested exactly once, and
    the validation set used to choose the epoch is disjoint from the test set.

    Raises:
        ValueError: ``n_folds < 3``, or a class has fewer than ``n_folds`` examples.
    """
    from sklearn.model_selection import StratifiedKFold

    if n_folds < 3:
        raise ValueError(f"need at least 3 folds for train/validation/test, got {n_folds}")
    labels = np.asarray(labels)
    kfold = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    folds = [np.sort(test) for _, test in kfold.split(np.zeros(len(labels)), labels)]
    splits = []
    for k in range(n_folds):
        val = folds[(k + 1) % n_folds]
        train = np.sort(np.concatenate([folds[j] for j in range(n_folds) if j not in (k, (k + 1) % n_folds)]))
        splits.append(Split(k, train, val, folds[k]))
    return splits
