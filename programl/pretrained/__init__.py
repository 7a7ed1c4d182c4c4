"""The model zoo: trained models as directories of ``weights.pt``, ``vocab.csv``,
``model.json`` and ``MODEL_CARD.md``; the ones shipped live in ``programl/pretrained/weights/``.

* :mod:`~programl.pretrained.hub` - the on-disk format, listing and loading (:func:`pretrained`,
  :func:`pretrained_names`; weights read without running code, docs/security.md).
* :mod:`~programl.pretrained.export` - a finished training run -> a model directory (``programl export-pretrained``).
* :mod:`~programl.pretrained.card` - ``MODEL_CARD.md`` from ``model.json``.
* :mod:`~programl.pretrained.metadata` - what each field of ``model.json`` may hold, and the limits of each file.

Needs the ``ml`` extra: without torch or torch-geometric, importing this package raises a ``ModuleNotFoundError``
whose one line says ``pip install 'programl[ml]'``.

What differs between tasks (the network, where a run keeps its model, what the card says, how a model predicts)
comes from the task's :class:`~programl.tasks.base.TaskSpec` (:data:`programl.tasks.registry.TASKS`): a loaded
model is handed to its task's predictor (``programl/tasks/<task>/predict.py``).
"""

import programl

try:
    from programl.pretrained.hub import PRETRAINED_DIR, PretrainedModel, find_pretrained, pretrained, pretrained_names
except ModuleNotFoundError as _error:  # installed without the ml extra: one line that says which extra to install
    _replacement = programl._ml_import_error("programl.pretrained", _error)
    if _replacement is None:
        raise
    raise _replacement from None

__all__ = ["PRETRAINED_DIR", "PretrainedModel", "find_pretrained", "pretrained", "pretrained_names"]
