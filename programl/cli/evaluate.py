"""``programl evaluate TASK``: evaluate a trained model on held-out data (docs/spec/tasks.md#device-mapping,
docs/spec/tasks.md#algorithm-classification).

The task sub-commands and their interface are those of ``programl train`` (:mod:`programl.cli.train`).
"""

from __future__ import annotations

from programl.cli.helptext import SUMMARIES, description
from programl.cli.train import add_task_commands

__all__ = ["add_parser"]


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help=SUMMARIES["evaluate"],
        description=description(__doc__),
    )
    add_task_commands(parser, "evaluate")
