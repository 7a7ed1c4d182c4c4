"""What every task's options hold (docs/spec/tasks.md#schedule): :class:`TaskOptions`, the base of the
frozen options dataclass of each ``programl/tasks/<task>/spec.py``, with the training engine's schedule options
(all off by default: the numerics of a run without them are unchanged).

A task declares each of its options once, as a field (:func:`~programl.util.options.option`); ``programl train
<task>`` gets its ``argparse`` options from the fields (:func:`~programl.util.options.add_options`), the run's
``config.json`` its ``model`` entry (:meth:`~programl.util.options.Options.config`). No torch, no numpy.
"""

from __future__ import annotations

import dataclasses
import math

from programl.util.options import Options, add_options, option

__all__ = ["PRECISIONS", "SCHEDULE_DEFAULTS", "SCHEDULE_GROUP", "TaskOptions", "add_options", "option"]

#: The values of ``--precision``: float32 throughout, or the training steps' forward passes under bfloat16 autocast
#: (:func:`~programl.training.runtime.autocast`).
PRECISIONS = ("fp32", "bf16")

#: The argument group of the training engine's schedule options (:class:`TaskOptions`' own fields).
SCHEDULE_GROUP = "schedule (the training engine; off by default)"


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskOptions(Options):
    """A task's options as ``config.json`` keeps them (its ``model`` entry): a task's subclass (a frozen, keyword-only
    dataclass) declares one field per option and inherits the engine's schedule options below
    (:meth:`programl.training.schedule.Schedule.of` reads them)."""

    warmup_examples: int = option(
        0,
        group=SCHEDULE_GROUP,
        metavar="N",
        low=0,
        help="raise the learning rate linearly from 0 over the first N training examples",
        default_text="0, none",
    )
    lr_decay: str = option(
        "off",
        group=SCHEDULE_GROUP,
        choices=("off", "cosine"),
        help="cosine: decay the learning rate to 0 over the training budget",
    )
    clip_grad_norm: float | None = option(
        None,
        group=SCHEDULE_GROUP,
        metavar="X",
        low=math.ulp(0.0),
        help="clip the gradient norm to X before each step; the log records the norms before clipping "
        "(train_grad_norm, train_grad_norm_max)",
        default_text="no clipping",
    )
    init_from: str | None = option(
        None,
        group=SCHEDULE_GROUP,
        metavar="WEIGHTS",
        help="start from WEIGHTS with a new optimizer, e.g. to go on at a lower learning rate: a run's best.pt or "
        "last.pt, an exported model's weights.pt, or its directory (programl/models/weights/NAME), of the same "
        "model options and vocabulary",
        default_text="random weights",
    )
    precision: str = option(
        "fp32",
        group=SCHEDULE_GROUP,
        choices=PRECISIONS,
        help="bf16: run the training steps' forward pass under bfloat16 autocast (weights, optimizer, the GGNN's GRU "
        "on the CPU and scoring stay float32; about 2 times faster for the POJ-104 classifier on a CPU with AVX-512 "
        "BF16)",
    )


#: The schedule options as a run written before they existed had them (off).
SCHEDULE_DEFAULTS = TaskOptions.defaults()
