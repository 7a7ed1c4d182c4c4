"""Loaders: node-budget batches of a data set, collated by ``torch_geometric.loader.DataLoader``
(docs/spec/tasks.md#data-flow-protocol, docs/spec/tasks.md#batching).

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
the three tasks batches with: an iterable of index lists for
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

The training engine decides which examples form each batch (the sampler's plans, the task's
:meth:`~programl.training.engine.TrainingTask.plan`); :func:`make_loader` reads and collates them, in ``workers``
worker processes when asked (``Batch.from_data_list`` of ``dataset[i]``, the data set's transform applied), so
reading the next batches overlaps the current step. The batches and their order are the plan's, so a run's
arithmetic does not depend on the number of workers.

:class:`PlannedBatches` is the batch sampler of a training run: the engine feeds it the steps of an epoch, each with
the training state after it, and takes that state back when the step's batch arrives (any iterable of index
lists is a batch sampler to a ``DataLoader``). A loader with workers draws
its sampler ahead of the step being trained (``prefetch_factor`` batches per worker), so the state of a checkpoint
must be that of the trained step, not of the last one drawn.

The loader is given its own ``torch.Generator``: a ``DataLoader`` draws a base seed for its workers from the global
RNG on every pass otherwise, which would change a run's dropout draws.

Importing this module does not import torch (the training engine imports it, and ``programl --help`` stays fast):
torch is imported when a loader is made.
"""

from __future__ import annotations

import signal
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

import numpy as np

__all__ = ["NodeBudgetBatchSampler", "PlannedBatches", "Policy", "make_loader", "plan_batches"]

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


class NodeBudgetBatchSampler:
    """Batches of example indices of at most ``max_nodes`` nodes, for ``DataLoader(batch_sampler=...)``
    (docs/spec/tasks.md#data-flow-protocol). A batch sampler to a ``DataLoader`` is any iterable of index lists with
    a length; this one does not derive from ``torch.utils.data.Sampler``, so that importing it imports no torch.

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


class PlannedBatches:
    """A batch sampler whose batches the engine plans: :meth:`feed` it ``(indices, state after the step)`` pairs;
    iterating yields the indices and queues the states, which :meth:`take` returns in the same order."""

    def __init__(self) -> None:
        self._steps: Iterable[tuple[list[int], Any]] = ()
        self._pending: deque[Any] = deque()

    def feed(self, steps: Iterable[tuple[list[int], Any]]) -> None:
        """The steps of the next pass of the loader (what was queued and not taken is dropped)."""
        self._steps = steps
        self._pending.clear()

    def take(self) -> Any:
        """The state after the step whose batch the loader gave last."""
        return self._pending.popleft()

    def __iter__(self) -> Iterator[list[int]]:
        for indices, after in self._steps:
            self._pending.append(after)
            yield indices


def make_loader(dataset, batches: Iterable[list[int]], workers: int = 0, device=None):
    """A ``DataLoader`` of ``dataset`` that collates the index lists of ``batches`` (a list, or a batch sampler) in
    ``workers`` processes (0: in this one), in order; pinned memory when the batches go to a GPU.

    Args:
        dataset: Anything indexable that gives ``Data`` (a data set of :mod:`programl.datasets`, or a view of one).
        batches: The batches' example indices (re-iterated on every pass over the loader).
        workers: Worker processes (kept between passes).
        device: Where the batches go (pins memory for CUDA).

    Workers leave Ctrl-C to the training process (:func:`_init_worker`), which shuts them down as it exits.
    """
    import torch  # torch is imported when a loader is made, not with the engine (docs/spec/design.md#package-layout)
    from torch_geometric.loader import DataLoader

    return DataLoader(
        dataset,
        batch_sampler=batches,
        num_workers=workers,
        persistent_workers=workers > 0,
        pin_memory=device is not None and torch.device(device).type == "cuda",
        generator=torch.Generator(),
        worker_init_fn=_init_worker if workers > 0 else None,
    )


def _init_worker(worker_id: int) -> None:  # noqa: ARG001 - DataLoader's worker_init_fn signature
    """A loader worker leaves Ctrl-C to the training process, and says nothing when that process goes away in the
    middle of taking a batch (multiprocessing's resource sharer thread would print a ``ConnectionResetError``
    traceback after ``programl: interrupted``); other errors are printed as before."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous = sys.excepthook

    def excepthook(kind, value, traceback) -> None:
        if not issubclass(kind, ConnectionError):
            previous(kind, value, traceback)

    sys.excepthook = excepthook
