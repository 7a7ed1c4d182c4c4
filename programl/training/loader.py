"""Batches from a data set, for the engine: ``torch_geometric.loader.DataLoader`` over planned index lists
(docs/spec/tasks.md#batching).

The engine decides which examples form each batch (:class:`~programl.data.batching.NodeBudgetBatchSampler`'s plans,
the task's :meth:`~programl.training.engine.TrainingTask.plan`); the loader reads and collates them, in
``workers`` worker processes when asked (``Batch.from_data_list`` of ``dataset[i]``, the data set's transform
applied), so reading the next batches overlaps the current step. The batches and their order are the plan's, so a
run's arithmetic does not depend on the number of workers.

:class:`PlannedBatches` is the batch sampler of a training run: the engine feeds it the steps of an epoch, each with
the training state after it, and takes that state back when the step's batch arrives (any iterable of index
lists is a batch sampler to a ``DataLoader``). A loader with workers draws
its sampler ahead of the step being trained (``prefetch_factor`` batches per worker), so the state of a checkpoint
must be that of the trained step, not of the last one drawn.

The loader is given its own ``torch.Generator``: a ``DataLoader`` draws a base seed for its workers from the global
RNG on every pass otherwise, which would change a run's dropout draws.
"""

from __future__ import annotations

import signal
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["PlannedBatches", "make_loader"]


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
