"""POJ-104 algorithm classification (SPEC §6.6, §7.4): the problem (1..104) a C/C++ program solves.

* :mod:`programl.tasks.classifyapp.spec` - what the rest of the package knows of the task (no torch).
* :mod:`programl.tasks.classifyapp.train` - ``programl train classifyapp`` and ``programl evaluate classifyapp``.
"""
