"""``python -m programl.tasks.<task> {train,evaluate} ...``, what ``torchrun -m`` runs: :func:`run_task_module`."""

from __future__ import annotations

import argparse
import sys

from programl.exceptions import ProgramlError, UsageError
from programl.tasks.base import TaskSpec

__all__ = ["run_task_module"]


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
