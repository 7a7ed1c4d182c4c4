"""``programl train TASK``: train a model for a task (docs/spec/tasks.md): one sub-command per task of
:data:`programl.tasks.registry.TASKS` (``dataflow``, ``devmap``, ``classifyapp``).

Each task's spec declares its options (:meth:`TaskSpec.add_train_arguments
<programl.tasks.base.TaskSpec.add_train_arguments>`, ``add_evaluate_arguments``), its training module
(:attr:`TaskSpec.train_module <programl.tasks.base.TaskSpec.train_module>`) has ``train_main(args) -> int`` and
``evaluate_main(args) -> int``; :func:`add_task_commands` gives every task its own sub-command for ``train`` here and
for ``evaluate`` (:mod:`programl.cli.evaluate`). The training module is imported only when the command runs.
An error the library raises on purpose (missing data, a bad checkpoint ...) is printed
on one line and exits 1; a wrong option exits 2 (docs/reliability.md: what hostile inputs give).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from programl.cli.common import EXIT_FAILED, usage_error
from programl.cli.helptext import SUMMARIES, description, help_text
from programl.exceptions import ProgramlError, UsageError
from programl.tasks.registry import TASKS as REGISTRY

__all__ = ["add_parser", "add_task_commands", "describe", "run"]


def add_task_commands(parser: argparse.ArgumentParser, command: str) -> None:
    """Give ``parser`` one sub-command per task of the registry (``command``: train or evaluate), with the options
    its spec declares."""
    subparsers = parser.add_subparsers(dest="task", metavar="TASK")
    subparsers.required = True
    for name, spec in REGISTRY.items():
        sub = subparsers.add_parser(
            name,
            help=spec.summary,
            description=help_text(spec.description),
            epilog=getattr(spec, f"{command}_epilog") or None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        getattr(spec, f"add_{command}_arguments")(sub)
        sub.set_defaults(
            run=run, parser=sub, task_module=spec.train_module, task_entry=f"{command}_main", command_name=command
        )


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help=SUMMARIES["train"],
        description=description(__doc__),
    )
    add_task_commands(parser, "train")


def run(args: argparse.Namespace) -> int:
    """Run the task's entry point; library, file and memory errors become one line and exit code 1, option errors
    exit 2 (Ctrl-C is left to :func:`programl.cli.main`: exit 130, the last checkpoint kept)."""

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
