"""The data-flow task (SPEC §6.1, §7.1): node labels of the five analyses, learned by the typed GGNN.

* :mod:`programl.tasks.dataflow.spec` - what the rest of the package knows of the task (no torch).
* :mod:`programl.tasks.dataflow.train` - ``programl train dataflow`` and ``programl evaluate dataflow``.
"""
