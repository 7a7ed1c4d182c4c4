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

:func:`plan_batches` does the packing on node counts only (cheap to test and to reuse); :class:`NodeBudgetBatcher`
applies it to a sequence of :class:`torch_geometric.data.Data` and yields :class:`torch_geometric.data.Batch`
objects. Shuffling is seeded: the same ``seed`` and epoch give the same batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

import numpy as np
from torch_geometric.data import Batch, Data

__all__ = ["NodeBudgetBatcher", "Policy", "plan_batches"]

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


class NodeBudgetBatcher:
    """Iterate over ``examples`` in node-budget batches (SPEC §6.1).

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

    def set_epoch(self, epoch: int) -> None:
        """Select the shuffle of epoch ``epoch`` (as ``DistributedSampler.set_epoch``)."""
        self.epoch = epoch

    def order(self) -> np.ndarray:
        """The example order of the current epoch."""
        if not self.shuffle:
            return np.arange(len(self.sizes))
        return np.random.default_rng([self.seed, self.epoch]).permutation(len(self.sizes))

    def plan(self) -> list[list[int]]:
        """The batches of the current epoch as lists of example indices (into ``examples``)."""
        order = self.order()
        return [
            [int(order[j]) for j in batch] for batch in plan_batches(self.sizes[order], self.max_nodes, self.policy)
        ]

    def __iter__(self) -> Iterator[Batch]:
        for indices in self.plan():
            yield Batch.from_data_list([self.examples[i] for i in indices])

    def __len__(self) -> int:
        return len(self.plan())
