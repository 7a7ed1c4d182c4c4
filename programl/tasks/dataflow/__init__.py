"""The data-flow task (docs/spec/tasks.md#data-flow-protocol, docs/spec/tasks.md#deepdataflow-table): node labels of the
five analyses, learned by the typed GGNN.

* :mod:`programl.tasks.dataflow.spec` - what the rest of the package knows of the task (no torch).
* :mod:`programl.tasks.dataflow.train` - ``programl train dataflow`` and ``programl evaluate dataflow``.
"""
