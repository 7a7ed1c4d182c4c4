"""Devices, threads and seeds (docs/spec/tasks.md#schedule): :func:`resolve_device` (CUDA when available, else CPU),
:func:`configure_threads`, :func:`seed_everything`, and :func:`rng_state` / :func:`set_rng_state` for bit-exact
resumption.

Importing this module does not import torch; the functions do.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from programl.exceptions import UsageError

__all__ = [
    "autocast",
    "compute_threads",
    "configure_threads",
    "resolve_device",
    "rng_state",
    "seed_everything",
    "set_rng_state",
]


def autocast(device, precision: str):
    """The context of a forward pass at ``precision``: ``torch.autocast`` to bfloat16 for ``"bf16"``, off for
    ``"fp32"``; ``device`` is a ``torch.device``, a string such as ``"cuda:0"``, or None (the CPU)."""
    import torch

    device_type = str(device or "cpu").split(":")[0]
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=precision == "bf16")


def resolve_device(spec: str = "auto", local_rank: int | None = None):
    """The ``torch.device`` for ``--device``: ``auto`` = ``cuda:<local_rank or 0>`` when CUDA is available, else CPU.

    Raises:
        UsageError: CUDA was asked for but is not available, or the name is not a device.
    """
    import torch

    spec = (spec or "auto").strip().lower()
    if spec == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", local_rank or 0)
        return torch.device("cpu")
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError):
        raise UsageError(f"--device {spec!r} is not a device (auto, cpu, cuda, cuda:N)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError("--device cuda: CUDA is not available on this machine (use --device cpu)")
        if device.index is None:
            device = torch.device("cuda", local_rank or 0)
    return device


def configure_threads(threads: int) -> None:
    """``torch.set_num_threads(threads)`` when ``threads`` > 0, and flush denormal floats to zero on CPUs.

    Denormals (GRU states and gradients that decay towards zero) make CPU arithmetic an order of magnitude slower;
    flushing them changes results by less than the smallest normal float. On a CPU shared with other work, one
    thread per process is often faster than several.
    """
    import torch

    if threads and threads > 0:
        torch.set_num_threads(threads)
    torch.set_flush_denormal(True)


def compute_threads(device) -> int:
    """The CPU threads each process computes with on ``device`` (1 on a GPU), as results record them: a run's
    CPU-hours are wall-clock x processes x threads."""
    import torch

    return 1 if torch.device(device).type == "cuda" else torch.get_num_threads()


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy and torch (CPU and CUDA)."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    """The states of Python's ``random``, numpy's global generator and torch's CPU (and CUDA) generators."""
    import numpy as np
    import torch

    # numpy's state as plain values (its uint32 key as a list of ints): a checkpoint then holds only what
    # torch.load(weights_only=True) reads without an allow-list (docs/security.md)
    kind, key, pos, has_gauss, cached = np.random.get_state()
    numpy_state = (kind, key.tolist(), int(pos), int(has_gauss), float(cached))
    state = {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore what :func:`rng_state` returned."""
    import numpy as np
    import torch

    random.setstate(state["python"])
    kind, key, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.asarray(key, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        # a checkpoint loaded with map_location="cuda" holds the states on the GPU; the setters take CPU bytes
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])
