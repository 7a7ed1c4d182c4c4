"""A network from its description: ``{"class", "args", "kwargs"}``, the ``model`` entry of a
pretrained model's ``model.json`` and what :meth:`TaskSpec.model_spec <programl.tasks.base.TaskSpec.model_spec>`
makes of a run's options. Training and the model zoo build every network through :func:`build_model`, so the two
cannot drift apart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from programl.exceptions import ProgramlError

__all__ = ["ModelTooLargeError", "build_model", "model_classes"]


class ModelTooLargeError(ProgramlError, MemoryError):
    """The network does not fit in memory: a :class:`ProgramlError` for the model zoo (one line) and a
    ``MemoryError`` for training, whose command line says "out of memory; try smaller options"."""


def model_classes() -> dict[str, type]:
    """The classes a description may name: every ``torch.nn.Module`` that :mod:`programl.models` exports."""
    import programl.models as models  # the package's __init__ imports this module

    out = {}
    for name in models.__all__:
        value = getattr(models, name)
        if isinstance(value, type) and issubclass(value, torch.nn.Module):
            out[value.__name__] = value
    return out


def build_model(spec: Mapping[str, Any]):
    """Construct the model a description holds (untrained; load the weights after).

    Args:
        spec: ``{"class": "DataflowGGNN", "args": [2230], "kwargs": {"num_steps": 30}}``; an argument that is itself
            such a mapping (e.g. the ``graph_model`` of a :class:`~programl.models.PooledReadoutClassifier`) is built
            first. ``class`` must be a module of :mod:`programl.models` (:func:`model_classes`).

    Raises:
        ProgramlError: An unknown class, or arguments the class does not take (one line).
    """
    classes = model_classes()
    name = spec.get("class") if isinstance(spec, Mapping) else None
    if name not in classes:
        raise ProgramlError(f"unknown model class {name!r} (expected one of {', '.join(sorted(classes))})")

    def value(v):
        return build_model(v) if isinstance(v, Mapping) and "class" in v else v

    args = [value(a) for a in spec.get("args", [])]
    kwargs = {k: value(v) for k, v in spec.get("kwargs", {}).items()}
    try:
        return classes[name](*args, **kwargs)
    except (TypeError, ValueError, RuntimeError, MemoryError) as error:  # bad or absurd sizes: one line, not a trace
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if isinstance(error, MemoryError) or "allocate" in reason or "out of memory" in reason:
            raise ModelTooLargeError(f"cannot build {name}: out of memory ({reason[:200]})") from None
        raise ProgramlError(f"cannot build {name}: {reason}") from None
