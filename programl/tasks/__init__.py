"""The tasks: what to learn, from which data, and how its models are exported and used (docs/spec/tasks.md;
docs/spec/design.md#package-layout ``tasks/``).

* :data:`~programl.tasks.registry.TASKS` - ``name -> TaskSpec``: the one place the rest of the package learns what a
  task is (:class:`~programl.tasks.base.TaskSpec`: the network of its options, its models' ``model.json`` and card).
* One package per task: :mod:`programl.tasks.dataflow` (docs/spec/tasks.md#data-flow-protocol),
  :mod:`programl.tasks.devmap` (docs/spec/tasks.md#device-mapping), :mod:`programl.tasks.classifyapp`
  (docs/spec/tasks.md#algorithm-classification), each with ``spec.py`` (no torch), ``predict.py`` (its predictor:
  preprocess, forward, postprocess) and ``train.py`` (``programl train`` / ``programl evaluate``;
  ``python -m programl.tasks.<name>`` for torchrun).
* :func:`~programl.tasks.registry.register_task` - a new task is one package and one call.

What the tasks share (options, run directories, checkpoints, logs, DDP, the engine) is :mod:`programl.training`.
"""

from programl.tasks.base import TaskSpec
from programl.tasks.registry import TASKS, get_task, register_task

__all__ = ["TASKS", "TaskSpec", "get_task", "register_task"]
