"""``programl train TASK``: train a model for a task (SPEC §6): one sub-command per task of
:data:`programl.tasks.registry.TASKS` (``dataflow``, ``devmap``, ``classifyapp``).

Each task's training module (:attr:`TaskSpec.train_module <programl.tasks.base.TaskSpec.train_module>`) has
``add_train_arguments(parser)`` / ``train_main(args) -> int`` and ``add_evaluate_arguments(parser)`` /
``evaluate_main(args) -> int``; :func:`add_task_commands` gives every task its own sub-command for ``train`` here and
for ``evaluate`` (:mod:`programl.cli.evaluate`). Task modules do not import torch until they run.
An error the library raises on purpose (missing data, a bad checkpoint ...) is printed
on one line and exits 1; a wrong option exits 2 (docs/reliability.md: what hostile inputs give).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from programl.cli.common import EXIT_FAILED, usage_error
from programl.cli.helptext import description
from programl.tasks.registry import TASKS as REGISTRY

__all__ = ["TASKS", "add_parser", "add_task_commands", "describe", "run"]

#: task name -> module with the task's train/evaluate entry points (``programl train <name>``), from the registry
TASKS = {name: spec.train_module for name, spec in REGISTRY.items()}


def add_task_commands(parser: argparse.ArgumentParser, command: str, adder: str, entry: str) -> None:
    """Give ``parser`` one sub-command per task of :data:`TASKS`, set up by the task module's ``adder``."""
    subparsers = parser.add_subparsers(dest="task", metavar="TASK")
    subparsers.required = True
    for name, module_name in TASKS.items():
        module = importlib.import_module(module_name)
        doc = description(module.__doc__)
        sub = subparsers.add_parser(
            name,
            help=doc.splitlines()[0] if doc else name,
            description=doc,
            epilog=getattr(module, f"{command.upper()}_EXAMPLES", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        getattr(module, adder)(sub)
        sub.set_defaults(run=run, parser=sub, task_module=module_name, task_entry=entry, command_name=command)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help=f"train a model: {', '.join(REGISTRY)}",
        description=description(__doc__),
    )
    add_task_commands(parser, "train", "add_train_arguments", "train_main")


def run(args: argparse.Namespace) -> int:
    """Run the task's entry point; library, file and memory errors become one line and exit code 1, option errors
    exit 2 (Ctrl-C is left to :func:`programl.cli.main`: exit 130, the last checkpoint kept)."""
    from programl.exceptions import ProgramlError
    from programl.training import UsageError

    module = importlib.import_module(args.task_module)
    try:
        return int(getattr(module, args.task_entry)(args) or 0)
    except UsageError as error:
        return usage_error(args.parser, str(error))
    except (ProgramlError, OSError, MemoryError) as error:
        print(f"programl {args.command_name} {args.task}: error: {describe(error)}", file=sys.stderr)
        return EXIT_FAILED
    except RuntimeError as error:  # torch reports exhausted (GPU) memory as a RuntimeError
        if not _out_of_memory(error):
            raise
        print(f"programl {args.command_name} {args.task}: error: {describe(error)}", file=sys.stderr)
        return EXIT_FAILED


def describe(error: BaseException) -> str:
    """One line for an error of a training run: the file it concerns when an ``OSError`` names one."""
    if isinstance(error, MemoryError) or (isinstance(error, RuntimeError) and _out_of_memory(error)):
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        detail = f" ({first[:200]})" if first else ""
        return f"out of memory{detail}; try smaller options (--batch-nodes, --hidden ...)"
    if isinstance(error, OSError) and error.strerror:
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror}"
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _out_of_memory(error: BaseException) -> bool:
    text = str(error).lower()
    return "out of memory" in text or "not enough memory" in text or "can't allocate memory" in text
