"""Node-budget batching: pack examples into disjoint-graph batches of at most ``max_nodes`` nodes
(docs/spec/tasks.md#data-flow-protocol).

ProGraML batches by node count, not by graph count: examples (one graph with one label record each) are appended
to the current batch until the next one would push it over the budget (10,000 nodes for the data-flow GGNN). The
graph-level tasks cap a batch's graphs too (``max_graphs``: devmap, classifyapp) and, when training with BatchNorm,
never leave a graph alone in a batch (``min_graphs=2``).

Two policies:

* ``"carry"`` (default): the example that would overflow the budget starts the next batch, and an example larger
  than the budget on its own becomes a batch by itself (this is what the paper describes). Every example is used
  exactly once.
* ``"drop"`` (the original code, v0.1.0 ``DataflowGgnnBatchBuilder``): the overflowing example is *dropped* (the
  current batch is emitted without it), and an example larger than the budget is skipped. Use it to reproduce the
  original training runs.

:func:`plan_batches` does the packing on node counts only (cheap to test and to reuse);
:class:`NodeBudgetBatchSampler` is the one batch sampler built on it, the one every training run and evaluation of
the three tasks batches with: a ``torch.utils.data.Sampler`` of index lists for
``torch_geometric.loader.DataLoader(dataset, batch_sampler=...)`` (so batches are collated in ``num_workers`` worker
processes), with a seeded shuffle per epoch and a share per DDP rank. The same ``seed`` and epoch give the same
batches.

Example (any data set of :mod:`programl.datasets`; ``sizes`` saves touching every example)::

    from torch_geometric.loader import DataLoader
    sampler = NodeBudgetBatchSampler(dataset.sizes, 10_000, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_sampler=sampler, num_workers=2)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            ...
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

import numpy as np
from torch.utils.data import Sampler

__all__ = ["NodeBudgetBatchSampler", "Policy", "plan_batches"]

Policy = Literal["carry", "drop"]


def _check(max_nodes: int, policy: str, max_graphs: int | None, min_graphs: int) -> None:
    if max_nodes <= 0:
        raise ValueError(f"max_nodes must be positive, got {max_nodes}")
    if policy not in ("carry", "drop"):
        raise ValueError(f"unknown batching policy {policy!r} (expected 'carry' or 'drop')")
    if max_graphs is not None and max_graphs < 1:
        raise ValueError(f"max_graphs must be positive, got {max_graphs}")
    if min_graphs < 1:
        raise ValueError(f"min_graphs must be positive, got {min_graphs}")


def plan_batches(
    sizes: Iterable[int],
    max_nodes: int = 10_000,
    policy: Policy = "carry",
    *,
    max_graphs: int | None = None,
    min_graphs: int = 1,
) -> Iterator[list[int]]:
    """Group example indices into batches of at most ``max_nodes`` nodes, in the given order.

    Args:
        sizes: Node count of each example, in the order they are to be consumed (consumed lazily unless
            ``min_graphs`` > 1).
        max_nodes: The node budget per batch (must be positive).
        policy: ``"carry"`` or ``"drop"`` (module docstring).
        max_graphs: A batch also closes at this many examples (None: no cap).
        min_graphs: With 2 (training with BatchNorm, whose batch statistics need two samples), a batch of fewer
            examples is merged into the batch before it (or after it, for the first); then a batch may exceed the
            budgets.

    Yields:
        Lists of indices into ``sizes``; with ``"carry"`` a batch exceeds ``max_nodes`` only when it is a single
        oversized example (or a merged one), with ``"drop"`` never.

    Raises:
        ValueError: ``max_nodes``, ``max_graphs`` or ``min_graphs`` is not positive, or ``policy`` is unknown.
    """
    _check(max_nodes, policy, max_graphs, min_graphs)
    batches = _pack(sizes, max_nodes, policy, max_graphs)
    if min_graphs > 1:
        batches = iter(_merge_small(list(batches), min_graphs))
    yield from batches


def _pack(sizes: Iterable[int], max_nodes: int, policy: str, max_graphs: int | None) -> Iterator[list[int]]:
    current: list[int] = []
    nodes = 0
    for i, size in enumerate(sizes):
        size = int(size)
        if current and max_graphs is not None and len(current) >= max_graphs:
            yield current
            current, nodes = [], 0
        if nodes + size > max_nodes:
            if policy == "drop":
                # Original: emit what we have (if anything) and lose this example.
                if current:
                    yield current
                current, nodes = [], 0
                continue
            if current:
                yield current
            current, nodes = [], 0
            if size > max_nodes:  # oversized: a batch of its own
                yield [i]
                continue
        current.append(i)
        nodes += size
    if current:
        yield current


def _merge_small(batches: list[list[int]], min_graphs: int) -> list[list[int]]:
    """Batches of fewer than ``min_graphs`` examples merged into their neighbour (:func:`plan_batches`)."""
    if len(batches) < 2:
        return batches
    merged: list[list[int]] = []
    for batch in batches:
        if merged and (len(batch) < min_graphs or len(merged[-1]) < min_graphs):
            merged[-1].extend(batch)
        else:
            merged.append(batch)
    return merged


class NodeBudgetBatchSampler(Sampler[list[int]]):
    """Batches of example indices of at most ``max_nodes`` nodes, for ``DataLoader(batch_sampler=...)``
    (docs/spec/tasks.md#data-flow-protocol).

    Args:
        sizes: Node count of every example, in dataset order (e.g. ``dataset.sizes``).
        max_nodes: Node budget per batch (default 10,000, the data-flow flag file's ``batch_size``).
        shuffle: Visit the examples in a seeded random order, a new one per epoch (:meth:`set_epoch`).
        seed: Seed of the shuffle; the order of epoch ``e`` is a function of ``(seed, e)`` only.
        policy: ``"carry"`` (default) or ``"drop"`` (the original's quirk), see the module docstring.
        max_graphs, min_graphs: Graph-count caps of a batch (:func:`plan_batches`; graph-level tasks).
        num_replicas, rank: Under DDP, rank ``r`` of ``n`` gets batches ``r, r + n, ...`` of the epoch's plan, cut to
            the same count on every rank (a rank never waits on a batch another rank lacks); default: all batches.

    Raises:
        ValueError: ``max_nodes`` is not positive, ``policy`` is unknown, or ``rank`` is outside ``num_replicas``.
    """

    def __init__(
        self,
        sizes: Sequence[int] | np.ndarray,
        max_nodes: int = 10_000,
        *,
        shuffle: bool = False,
        seed: int = 0,
        policy: Policy = "carry",
        max_graphs: int | None = None,
        min_graphs: int = 1,
        num_replicas: int = 1,
        rank: int = 0,
    ) -> None:
        _check(max_nodes, policy, max_graphs, min_graphs)
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} is not one of {num_replicas} replicas")
        self.sizes = np.asarray(sizes, dtype=np.int64)
        if self.sizes.ndim != 1 or (self.sizes.size and self.sizes.min() < 0):
            raise ValueError("sizes must be a sequence of node counts >= 0")
        self.max_nodes = max_nodes
        self.shuffle = shuffle
        self.seed = seed
        self.policy: Policy = policy
        self.max_graphs = max_graphs
        self.min_graphs = min_graphs
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Select the shuffle of epoch ``epoch`` (as ``DistributedSampler.set_epoch``)."""
        self.epoch = epoch

    def order(self) -> np.ndarray:
        """The example order of the current epoch."""
        if not self.shuffle:
            return np.arange(len(self.sizes))
        return np.random.default_rng([self.seed, self.epoch]).permutation(len(self.sizes))

    def plan(self) -> list[list[int]]:
        """This rank's batches of the current epoch, as lists of example indices."""
        order = self.order()
        planned = plan_batches(
            self.sizes[order], self.max_nodes, self.policy, max_graphs=self.max_graphs, min_graphs=self.min_graphs
        )
        batches = [[int(order[j]) for j in batch] for batch in planned]
        if self.num_replicas == 1:
            return batches
        per_rank = len(batches) // self.num_replicas
        return batches[self.rank :: self.num_replicas][:per_rank]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.plan())

    def __len__(self) -> int:
        return len(self.plan())
