"""``python -m programl.tasks.<task> {train,evaluate} ...``, what ``torchrun -m`` runs: :func:`run_task_module`."""

from __future__ import annotations

import argparse
import sys

from programl.exceptions import ProgramlError, UsageError

__all__ = ["run_task_module"]


def run_task_module(module, argv: list[str] | None = None, name: str | None = None) -> int:
    """``python -m programl.tasks.<name> {train,evaluate} ...`` for a task's training module (the entry points that
    :class:`programl.tasks.registry.TaskSpec` names); usage errors exit 2, library and file errors print one line and
    exit 1."""
    qualified = module.__spec__.name if module.__spec__ else module.__name__  # not "__main__" under ``-m``
    if name is None:
        name = qualified.split(".")[2] if qualified.startswith("programl.tasks.") else qualified.rsplit(".", 1)[-1]
    prog = f"python -m programl.tasks.{name}" if qualified.startswith("programl.tasks.") else f"python -m {qualified}"
    parser = argparse.ArgumentParser(prog=prog, description=module.__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    module.add_train_arguments(sub.add_parser("train"))
    module.add_evaluate_arguments(sub.add_parser("evaluate"))
    args = parser.parse_args(argv)
    try:
        return module.train_main(args) if args.command == "train" else module.evaluate_main(args)
    except UsageError as error:
        parser.error(str(error))
    except (ProgramlError, OSError) as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        return 1
    return 0
