"""The OpenCL device-mapping task (docs/spec/tasks.md#device-mapping, docs/spec/tasks.md#device-mapping-table): CPU or
GPU for a kernel, by 10-fold cross-validation.

* :mod:`programl.tasks.devmap.spec` - what the rest of the package knows of the task (no torch).
* :mod:`programl.tasks.devmap.train` - ``programl train devmap``.
* :mod:`programl.tasks.devmap.folds` - the cross-validation folds: data, network, training and prediction per fold.
* :mod:`programl.tasks.devmap.evaluate` - ``programl evaluate devmap`` (a run, or an ensemble of runs).
* :mod:`programl.tasks.devmap.report` - the scores and the summary of a run.
* :mod:`programl.tasks.devmap.predict` - the predictor of ``programl predict devmap``.
"""
