"""Training and evaluation loops (SPEC §6; DESIGN §1 ``tasks/``).

One module per task, each with the same interface, used by ``programl train <task>`` and ``programl evaluate
<task>`` (the registry is :data:`programl.cli.train.TASKS`):

* ``add_train_arguments(parser)`` / ``train_main(args) -> int``;
* ``add_evaluate_arguments(parser)`` / ``evaluate_main(args) -> int``.

Task modules import torch inside those functions only, so building the command-line parser stays fast.

* :mod:`programl.tasks.devmap` - OpenCL device mapping, 10-fold cross-validation per platform (SPEC §6.5).
* :mod:`programl.tasks.classifyapp` - POJ-104 algorithm classification (SPEC §6.6).
What the tasks share (options, run directories, checkpoints, logs, DDP) is :mod:`programl.training`.
"""

__all__: list[str] = []
