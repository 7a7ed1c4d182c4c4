"""The OpenCL device-mapping task (SPEC §6.5, §7.3): CPU or GPU for a kernel, by 10-fold cross-validation.

* :mod:`programl.tasks.devmap.spec` - what the rest of the package knows of the task (no torch).
* :mod:`programl.tasks.devmap.train` - ``programl train devmap`` and ``programl evaluate devmap``.
"""
