"""Node-budget batching: pack examples into disjoint-graph batches of at most ``max_nodes`` nodes (SPEC §6.1).

ProGraML batches by node count, not by graph count: examples (one graph with one label record each) are appended
to the current batch until the next one would push it over the budget (10,000 nodes for the data-flow GGNN).

Two policies:

* ``"carry"`` (default): the example that would overflow the budget starts the next batch, and an example larger
  than the budget on its own becomes a batch by itself (this is what the paper describes). Every example is used
  exactly once.
* ``"drop"`` (the original code, v0.1.0 ``DataflowGgnnBatchBuilder``): the overflowing example is *dropped* (the
  current batch is emitted without it), and an example larger than the budget is skipped. Use it to reproduce the
  original training runs.

:func:`plan_batches` does the packing on node counts only (cheap to test and to reuse);
:class:`NodeBudgetBatchSampler` is the one batch sampler built on it: a ``torch.utils.data.Sampler`` of index lists
for ``torch_geometric.loader.DataLoader(dataset, batch_sampler=...)`` (so batches are collated in ``num_workers``
worker processes), with a seeded shuffle per epoch and a share per DDP rank; :class:`NodeBudgetBatcher` applies the
same sampler to a sequence of :class:`torch_geometric.data.Data` in-process and yields
:class:`torch_geometric.data.Batch` objects. The same ``seed`` and epoch give the same batches.

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
from torch_geometric.data import Batch, Data

__all__ = ["NodeBudgetBatchSampler", "NodeBudgetBatcher", "Policy", "plan_batches"]

Policy = Literal["carry", "drop"]


def plan_batches(
    sizes: Iterable[int],
    max_nodes: int = 10_000,
    policy: Policy = "carry",
) -> Iterator[list[int]]:
    """Group example indices into batches of at most ``max_nodes`` nodes, in the given order.

    Args:
        sizes: Node count of each example, in the order they are to be consumed (consumed lazily).
        max_nodes: The node budget per batch (must be positive).
        policy: ``"carry"`` or ``"drop"`` (module docstring).

    Yields:
        Lists of indices into ``sizes``; with ``"carry"`` a batch exceeds ``max_nodes`` only when it is a single
        oversized example, with ``"drop"`` never.

    Raises:
        ValueError: ``max_nodes`` is not positive or ``policy`` is unknown.
    """
    if max_nodes <= 0:
        raise ValueError(f"max_nodes must be positive, got {max_nodes}")
    if policy not in ("carry", "drop"):
        raise ValueError(f"unknown batching policy {policy!r} (expected 'carry' or 'drop')")
    current: list[int] = []
    nodes = 0
    for i, size in enumerate(sizes):
        size = int(size)
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


class NodeBudgetBatchSampler(Sampler[list[int]]):
    """Batches of example indices of at most ``max_nodes`` nodes, for ``DataLoader(batch_sampler=...)`` (SPEC §6.1).

    Args:
        sizes: Node count of every example, in dataset order (e.g. ``dataset.sizes``).
        max_nodes: Node budget per batch (default 10,000, the data-flow flag file's ``batch_size``).
        shuffle: Visit the examples in a seeded random order, a new one per epoch (:meth:`set_epoch`).
        seed: Seed of the shuffle; the order of epoch ``e`` is a function of ``(seed, e)`` only.
        policy: ``"carry"`` (default) or ``"drop"`` (the original's quirk), see the module docstring.
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
        num_replicas: int = 1,
        rank: int = 0,
    ) -> None:
        if max_nodes <= 0:
            raise ValueError(f"max_nodes must be positive, got {max_nodes}")
        if policy not in ("carry", "drop"):
            raise ValueError(f"unknown batching policy {policy!r} (expected 'carry' or 'drop')")
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} is not one of {num_replicas} replicas")
        self.sizes = np.asarray(sizes, dtype=np.int64)
        if self.sizes.ndim != 1 or (self.sizes.size and self.sizes.min() < 0):
            raise ValueError("sizes must be a sequence of node counts >= 0")
        self.max_nodes = max_nodes
        self.shuffle = shuffle
        self.seed = seed
        self.policy: Policy = policy
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
        batches = [
            [int(order[j]) for j in batch] for batch in plan_batches(self.sizes[order], self.max_nodes, self.policy)
        ]
        if self.num_replicas == 1:
            return batches
        per_rank = len(batches) // self.num_replicas
        return batches[self.rank :: self.num_replicas][:per_rank]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.plan())

    def __len__(self) -> int:
        return len(self.plan())


class NodeBudgetBatcher:
    """Iterate over ``examples`` in node-budget batches, in-process (SPEC §6.1; :class:`NodeBudgetBatchSampler`).

    Args:
        examples: A sequence of ``Data`` (anything with ``num_nodes``); indexed, so a list or a PyG ``Dataset``.
        max_nodes: Node budget per batch (default 10,000, the data-flow flag file's ``batch_size``).
        shuffle: Visit the examples in a seeded random order (a new order per epoch, see :meth:`set_epoch`).
        seed: Seed of the shuffle; the order of epoch ``e`` is a function of ``(seed, e)`` only.
        policy: ``"carry"`` (default) or ``"drop"`` (the original's quirk), see the module docstring.
        sizes: Node counts of the examples, if known (saves touching every example to read ``num_nodes``).

    Example:
        >>> batcher = NodeBudgetBatcher(examples, max_nodes=10_000, shuffle=True, seed=0)  # doctest: +SKIP
        >>> for batch in batcher:                                                           # doctest: +SKIP
        ...     logits = model(batch)
    """

    def __init__(
        self,
        examples: Sequence[Data],
        max_nodes: int = 10_000,
        *,
        shuffle: bool = False,
        seed: int = 0,
        policy: Policy = "carry",
        sizes: Sequence[int] | None = None,
    ) -> None:
        if max_nodes <= 0:
            raise ValueError(f"max_nodes must be positive, got {max_nodes}")
        if policy not in ("carry", "drop"):
            raise ValueError(f"unknown batching policy {policy!r} (expected 'carry' or 'drop')")
        self.examples = examples
        self.max_nodes = max_nodes
        self.shuffle = shuffle
        self.seed = seed
        self.policy: Policy = policy
        if sizes is None:
            sizes = [int(example.num_nodes) for example in examples]
        if len(sizes) != len(examples):
            raise ValueError(f"{len(sizes)} sizes for {len(examples)} examples")
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.epoch = 0

    @property
    def sampler(self) -> NodeBudgetBatchSampler:
        """The :class:`NodeBudgetBatchSampler` of the current settings and epoch."""
        sampler = NodeBudgetBatchSampler(
            self.sizes, self.max_nodes, shuffle=self.shuffle, seed=self.seed, policy=self.policy
        )
        sampler.set_epoch(self.epoch)
        return sampler

    def set_epoch(self, epoch: int) -> None:
        """Select the shuffle of epoch ``epoch`` (as ``DistributedSampler.set_epoch``)."""
        self.epoch = epoch

    def order(self) -> np.ndarray:
        """The example order of the current epoch."""
        return self.sampler.order()

    def plan(self) -> list[list[int]]:
        """The batches of the current epoch as lists of example indices (into ``examples``)."""
        return self.sampler.plan()

    def __iter__(self) -> Iterator[Batch]:
        for indices in self.plan():
            yield Batch.from_data_list([self.examples[i] for i in indices])

    def __len__(self) -> int:
        return len(self.plan())
