"""A toy task, a whole task in one package outside ``programl/``: whether a program is small or large (more
instructions than ``--threshold``), learned by a tiny graph classifier. ``tests/tasks/test_toy_task.py`` registers it
(:func:`programl.tasks.registry.register_task`, the one line a task needs besides its package) and shows that
``programl train``, ``export-pretrained``, the model card and ``programl predict`` work for it unchanged.

* ``spec.py``: :class:`~tests.tasks.toy_task.spec.ToySpec`, what the task must say (its name, summary, options,
  predictor, network and outputs); every other method of :class:`~programl.tasks.base.TaskSpec` keeps its default.
* ``predict.py``: its predictor, the shared graph classifier's three steps with the instruction count added.
* ``train.py``: ``train_main`` / ``evaluate_main``.
"""
