"""The optional optimisation schedule of a run (docs/spec/tasks.md#schedule; ``--warmup-examples``, ``--lr-decay``,
``--clip-grad-norm``, ``--precision``): :class:`Schedule`, what the options say, and :func:`lr_factor`, the learning
rate multiplier of a step. Both the options (:mod:`~programl.tasks.options`) and the engine
(:mod:`~programl.training.engine`) read it; it imports neither, nor torch."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Schedule", "lr_factor"]


@dataclass(frozen=True)
class Schedule:
    """Optional optimisation steps around ``optimizer.step()`` (``--warmup-examples``, ``--lr-decay``,
    ``--clip-grad-norm``, ``--precision``). The learning rate of each step is the optimizer's own times
    :func:`lr_factor`; with ``clip_grad_norm`` the epoch record gets the mean and largest gradient norm before
    clipping (``train_grad_norm``, ``train_grad_norm_max``). With ``precision="bf16"`` each training step's
    :meth:`~programl.training.engine.TrainingTask.step` (forward pass and loss) runs under ``torch.autocast`` to
    bfloat16 (mixed precision: the weights, their gradients, the optimizer and validation stay float32)."""

    warmup_examples: int = 0
    lr_decay: str = "off"
    clip_grad_norm: float | None = None
    precision: str = "fp32"

    @classmethod
    def of(cls, options) -> Schedule:
        """The schedule of a task's options (:class:`programl.tasks.options.TaskOptions`: its ``warmup_examples``,
        ``lr_decay``, ``clip_grad_norm`` and ``precision``)."""
        return cls(options.warmup_examples, options.lr_decay, options.clip_grad_norm, options.precision)

    @property
    def changes_lr(self) -> bool:
        """Whether the learning rate varies within the run (warm-up or decay)."""
        return bool(self.warmup_examples) or self.lr_decay != "off"


def lr_factor(schedule: Schedule, examples: int, progress_fraction: float) -> float:
    """The multiplier of the learning rate for a step that ends at ``examples`` training examples, at
    ``progress_fraction`` (0..1) of the training budget: ``min(1, examples / warmup_examples)`` times, with cosine
    decay, ``(1 + cos(pi * progress_fraction)) / 2``."""
    factor = 1.0
    if schedule.warmup_examples:
        factor = min(1.0, examples / schedule.warmup_examples)
    if schedule.lr_decay == "cosine":
        factor *= 0.5 * (1.0 + math.cos(math.pi * min(max(progress_fraction, 0.0), 1.0)))
    return factor
