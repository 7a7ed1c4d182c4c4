"""The OpenCL device-mapping task (docs/spec/tasks.md#device-mapping, docs/spec/tasks.md#device-mapping-table): CPU or
GPU for a kernel, by 10-fold cross-validation.

* :mod:`programl.tasks.devmap.spec` - what the rest of the package knows of the task (no torch).
* :mod:`programl.tasks.devmap.train` - ``programl train devmap`` and ``programl evaluate devmap``.
"""
