"""From a task's command line to the engine: ``python -m programl.tasks.<task> {train,evaluate} ...`` (what
``torchrun -m`` runs: :func:`run_task_module`), and the :class:`~programl.training.Trainer` of a run's options
(:func:`start_trainer`, from the :class:`~programl.tasks.options.TaskRun` that the task's entry point made)."""

from __future__ import annotations

import argparse
import sys

from programl.exceptions import ProgramlError, UsageError
from programl.tasks.base import TaskSpec
from programl.tasks.options import TaskRun
from programl.training import Budget, Schedule, Trainer, TrainingTask

__all__ = ["run_task_module", "start_trainer"]


def start_trainer(
    task: TrainingTask, run_dir, budget: Budget, opts: TaskRun, *, dist, show: bool, vocabulary
) -> Trainer:
    """The started :class:`~programl.training.Trainer` of a ``programl train <task>`` run of the options ``opts``:
    resumed from ``last.pt`` unless ``--restart``, checkpoints every ``--checkpoint-minutes``, ``--workers`` loader
    processes (its run options), the schedule and ``--init-from`` of its model options (a
    :class:`~programl.tasks.options.TaskOptions`).

    Args:
        vocabulary: The run's vocabulary (the ``--init-from`` model's must equal it).
    """
    return Trainer(
        task,
        run_dir,
        budget,
        dist=dist,
        resume=not opts.run.restart,
        show=show,
        checkpoint_minutes=opts.run.checkpoint_minutes,
        schedule=Schedule.of(opts.model),
        init_from=opts.model.init_from,
        init_vocabulary=vocabulary,
        workers=opts.run.workers,
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
