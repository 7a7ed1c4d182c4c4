"""From a task's command line to the engine: ``python -m programl.tasks.<task> {train,evaluate} ...`` (what
``torchrun -m`` runs: :func:`run_task_module`), and the :class:`~programl.training.Trainer` of a run's options
(:func:`start_trainer`)."""

from __future__ import annotations

import argparse
import sys

from programl.exceptions import ProgramlError, UsageError
from programl.tasks.base import TaskSpec
from programl.training import Budget, Schedule, Trainer, TrainingTask

__all__ = ["run_task_module", "start_trainer"]


def start_trainer(
    task: TrainingTask, run_dir, budget: Budget, args: argparse.Namespace, options, *, dist, show: bool, vocabulary
) -> Trainer:
    """The started :class:`~programl.training.Trainer` of a ``programl train <task>`` run: resumed from ``last.pt``
    unless ``--restart``, checkpoints every ``--checkpoint-minutes``, the schedule and ``--init-from`` of the task's
    ``options`` (a :class:`~programl.tasks.options.TaskOptions`), ``--workers`` loader processes.

    Args:
        vocabulary: The run's vocabulary (the ``--init-from`` model's must equal it).
    """
    return Trainer(
        task,
        run_dir,
        budget,
        dist=dist,
        resume=not args.restart,
        show=show,
        checkpoint_minutes=args.checkpoint_minutes,
        schedule=Schedule.of(options),
        init_from=options.init_from,
        init_vocabulary=vocabulary,
        workers=args.workers,
    ).start()


def run_task_module(spec: TaskSpec, module, argv: list[str] | None = None) -> int:
    """``python -m programl.tasks.<name> {train,evaluate} ...``: the options of the task's ``spec`` (a
    :class:`~programl.tasks.base.TaskSpec`), the entry points of its training ``module``; usage errors exit 2,
    library and file errors print one line and exit 1."""
    parser = argparse.ArgumentParser(prog=f"python -m programl.tasks.{spec.name}", description=spec.description)
    sub = parser.add_subparsers(dest="command", required=True)
    spec.add_train_arguments(sub.add_parser("train"))
    spec.add_evaluate_arguments(sub.add_parser("evaluate"))
    args = parser.parse_args(argv)
    try:
        return module.train_main(args) if args.command == "train" else module.evaluate_main(args)
    except UsageError as error:
        parser.error(str(error))
    except (ProgramlError, OSError) as error:
        print(f"{spec.name}: error: {error}", file=sys.stderr)
        return 1
    return 0
