"""POJ-104 algorithm classification (docs/spec/tasks.md#algorithm-classification, docs/spec/tasks.md#poj-104-table): the
problem (1..104) a C/C++ program solves.

* :mod:`programl.tasks.classifyapp.spec` - what the rest of the package knows of the task (no torch).
* :mod:`programl.tasks.classifyapp.train` - ``programl train classifyapp`` and ``programl evaluate classifyapp``.
"""
