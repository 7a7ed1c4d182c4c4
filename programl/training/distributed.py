"""Distributed data parallel under ``torchrun`` (not in the specification; docs/spec/design.md#package-layout):
:func:`init_distributed` -> :class:`Distributed` (gloo on CPU, nccl on GPU; rank, world size, barrier, all-reduce, model
wrapping) and :func:`shard` (``DistributedSampler``-style shares that keep every process in lock step)."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from programl.training.runtime import resolve_device

__all__ = ["Distributed", "init_distributed", "shard"]


@dataclass
class Distributed:
    """This process's place in a ``torchrun`` job (a single process when not launched by torchrun).

    Attributes:
        rank, world_size, local_rank: From torchrun's environment (0, 1, 0 without it).
        device: The device of this process (``cuda:<local_rank>`` on GPUs).
        backend: ``"nccl"`` on GPUs, ``"gloo"`` on CPUs, None for a single process.
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: Any = None
    backend: str | None = None

    @property
    def is_main(self) -> bool:
        """True on rank 0 (the process that logs, plots and writes checkpoints)."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        """Whether more than one process trains (under ``torchrun``)."""
        return self.world_size > 1

    def barrier(self) -> None:
        """Wait for every process (nothing to wait for in a single process)."""
        if self.enabled:
            import torch.distributed as dist

            dist.barrier()

    def all_reduce_sum(self, tensor):
        """Sum ``tensor`` over all processes, in place (no-op for one process); returns it. A CPU tensor (the
        metric accumulators') is summed on this process's GPU under nccl, which reduces GPU tensors only."""
        if self.enabled:
            import torch.distributed as dist

            if self.backend == "nccl" and tensor.device.type != "cuda":
                moved = tensor.to(self.device)
                dist.all_reduce(moved, op=dist.ReduceOp.SUM)
                tensor.copy_(moved.cpu())
            else:
                dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is true in any process (every process gets the same answer; a decision all must share,
        such as stopping at a time limit that each process measures on its own clock)."""
        if not self.enabled:
            return bool(flag)
        import torch

        return float(self.all_reduce_sum(torch.tensor([float(flag)]))[0]) > 0

    def wrap(self, model):
        """``DistributedDataParallel(model)`` in a torchrun job, else ``model``."""
        if not self.enabled:
            return model
        from torch.nn.parallel import DistributedDataParallel

        if self.device is not None and self.device.type == "cuda":
            return DistributedDataParallel(model, device_ids=[self.device.index])
        return DistributedDataParallel(model)

    def shutdown(self) -> None:
        """Leave the torchrun job. Called from a ``finally:``; on the normal path every process first waits for the
        others, because gloo can hang in ``destroy_process_group`` when a peer has already exited (pytorch#75097).
        While an exception propagates nothing collective is attempted: torchrun stops the other processes."""
        if self.enabled:
            import torch.distributed as dist

            if dist.is_initialized() and sys.exc_info()[0] is None:
                dist.barrier()
                dist.destroy_process_group()


def init_distributed(device: str = "auto") -> Distributed:
    """Join the ``torchrun`` job described by ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK`` (if any).

    The backend is nccl when the process's device is a GPU, gloo otherwise. Without torchrun (``WORLD_SIZE`` unset
    or 1) nothing is initialised and a single-process :class:`Distributed` is returned.
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    resolved = resolve_device(device, local_rank if world_size > 1 else None)
    if world_size <= 1:
        return Distributed(device=resolved)
    import torch
    import torch.distributed as dist

    backend = "nccl" if resolved.type == "cuda" else "gloo"
    if resolved.type == "cuda":
        torch.cuda.set_device(resolved)
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, rank=rank, world_size=world_size)
    return Distributed(rank, world_size, local_rank, resolved, backend)


def shard(items: Sequence[Any], rank: int, world_size: int) -> list[Any]:
    """This rank's share of ``items``, as ``DistributedSampler`` (without shuffling) takes it.

    The list is padded by repeating its first items until its length is a multiple of ``world_size``; rank ``r``
    takes items ``r, r + world_size, ...``. Every rank gets the same number of items (so DDP steps stay in lock
    step), and the shares together cover every item.
    """
    items = list(items)
    if world_size <= 1 or not items:
        return items
    total = math.ceil(len(items) / world_size) * world_size
    padded = items + [items[i % len(items)] for i in range(total - len(items))]
    return padded[rank::world_size]
