"""The tasks, by name: ``TASKS[name]`` is the :class:`~programl.tasks.base.TaskSpec` of ``programl train <name>``.

A new task is a package ``programl/tasks/<name>/`` (``spec.py``, ``predict.py``, ``train.py``) and one line here (or
one :func:`register_task` call for a task that lives outside the package); nothing else in the package changes. The
command line, the export of pretrained models, their cards and ``programl predict`` look a task up here
(:func:`get_task`) and never compare its name. Importing this module imports no torch.
"""

from __future__ import annotations

from programl.exceptions import ProgramlError
from programl.tasks.base import TaskSpec
from programl.tasks.classifyapp.spec import ClassifyappSpec
from programl.tasks.dataflow.spec import DataflowSpec
from programl.tasks.devmap.spec import DevmapSpec

__all__ = ["TASKS", "get_task", "register_task"]

#: name -> task, in the order ``--help`` lists them.
TASKS: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add ``spec`` to :data:`TASKS` under its name (after the tasks there: ``--help`` lists it last) and return it.
    Register a task before the command line is built (:func:`programl.cli.make_parser`) to give it its commands.

    Raises:
        ValueError: ``spec`` is not a :class:`~programl.tasks.base.TaskSpec` instance, or another task has its name.
    """
    if not isinstance(spec, TaskSpec):
        raise ValueError(f"expected a TaskSpec instance, not {type(spec).__name__}")
    name = getattr(spec, "name", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a task's name is a Python identifier, not {name!r}")
    if name in TASKS and type(TASKS[name]) is not type(spec):
        raise ValueError(f"a task called {name!r} is registered already ({type(TASKS[name]).__name__})")
    TASKS[name] = spec
    return spec


for _spec in (DevmapSpec(), ClassifyappSpec(), DataflowSpec()):
    register_task(_spec)


def get_task(name: object, where: str = "") -> TaskSpec:
    """The task called ``name``; an unknown one is one line (``where``: the file that named it)."""
    if isinstance(name, str) and name in TASKS:
        return TASKS[name]
    prefix = f"{where}: " if where else ""
    raise ProgramlError(f"{prefix}unknown task {name!r} (expected one of {', '.join(TASKS)})")
