"""The tasks, by name: ``TASKS[name]`` is the :class:`~programl.tasks.base.TaskSpec` of ``programl train <name>``.

A new task is a package ``programl/tasks/<name>/`` (``spec.py``, ``train.py``) and one line here; nothing else in
the package changes. The command line, the export of pretrained models, their cards and ``programl predict`` look a
task up here (:func:`get_task`) and never compare its name. Importing this module imports no torch.
"""

from __future__ import annotations

from programl.exceptions import ProgramlError
from programl.tasks.base import TaskSpec
from programl.tasks.classifyapp.spec import ClassifyappSpec
from programl.tasks.dataflow.spec import DataflowSpec
from programl.tasks.devmap.spec import DevmapSpec

__all__ = ["TASKS", "get_task"]

#: name -> task, in the order ``--help`` lists them.
TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        DevmapSpec(),
        ClassifyappSpec(),
        DataflowSpec(),
    )
}


def get_task(name: object, where: str = "") -> TaskSpec:
    """The task called ``name``; an unknown one is one line (``where``: the file that named it)."""
    if isinstance(name, str) and name in TASKS:
        return TASKS[name]
    prefix = f"{where}: " if where else ""
    raise ProgramlError(f"{prefix}unknown task {name!r} (expected one of {', '.join(TASKS)})")
