"""What every task's options hold (docs/spec/tasks.md#schedule): :class:`TaskOptions`, the base of the
frozen options dataclass of each ``programl/tasks/<task>/spec.py``, with the training engine's schedule options
(all off by default: the numerics of a run without them are unchanged); and :class:`TaskRun`, the one options object of
a run: the task's options beside its run options (:mod:`programl.tasks.run_options`).

A task declares each of its options once, as a field (:func:`~programl.util.options.option`); ``programl train
<task>`` gets its ``argparse`` options from the fields (:func:`~programl.util.options.add_options`), the run's
``config.json`` its ``model`` entry (:meth:`~programl.util.options.Options.config`). No torch, no numpy.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Generic, TypeVar

from programl.util.options import Options, add_options, option

__all__ = [
    "PRECISIONS",
    "SCHEDULE_DEFAULTS",
    "SCHEDULE_GROUP",
    "SEED_RANGE",
    "TaskOptions",
    "TaskRun",
    "add_options",
    "option",
]

#: The values of ``--precision``: float32 throughout, or the training steps' forward passes under bfloat16 autocast
#: (:func:`~programl.training.runtime.autocast`).
PRECISIONS = ("fp32", "bf16")

#: The argument group of the training engine's schedule options (:class:`TaskOptions`' own fields).
SCHEDULE_GROUP = "schedule (the training engine; off by default)"

#: The range of a seed (:func:`option` keywords): numpy's legacy seeding takes 0..2^32-1; torch and Python take those.
SEED_RANGE = {"low": 0, "high": 2**32 - 1, "range_text": f"in 0..{2**32 - 1}"}


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
        "last.pt, an exported model's weights.pt, or its directory (the shipped ones: pretrained/weights/NAME in the "
        "package), of the same "
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


ModelT = TypeVar("ModelT", bound=TaskOptions)
RunT = TypeVar("RunT", bound=Options)


@dataclasses.dataclass(frozen=True)
class TaskRun(Generic[ModelT, RunT]):
    """The options of one ``programl train|evaluate <task>`` run, the one object its entry point
    (``train_main(args)``, ``evaluate_main(args)``) makes of the command line.

    Attributes:
        model: The task's options (a :class:`TaskOptions`): what the run learns with, which ``config.json`` keeps as
            its ``model`` entry; ``programl evaluate`` reads them back from the trained run
            (:meth:`~programl.util.options.Options.from_config`).
        run: Where and how it runs (directories, epoch budget, device, threads ...: the task's run options, a
            :class:`~programl.tasks.run_options.RunOptions`), which do not change what is learned.
    """

    model: ModelT
    run: RunT

    @classmethod
    def from_args(cls, args: argparse.Namespace, model: type[ModelT], run: type[RunT]) -> TaskRun[ModelT, RunT]:
        """The ``model`` and ``run`` options of the parsed command line ``args`` (``--config`` already applied).

        Raises:
            UsageError: A value out of its range (one line naming the option).
        """
        run_options = run.from_args(args)  # the run's first, as the command line's checks always were
        return cls(model.from_args(args), run_options)
