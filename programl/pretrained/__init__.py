"""The model zoo (issue 11 item 6, issue 35 item 4): trained models as directories of ``weights.pt``, ``vocab.csv``,
``model.json`` and ``MODEL_CARD.md``; the ones shipped live in ``programl/models/weights/``.

* :mod:`~programl.pretrained.hub` - the on-disk format, listing and loading (:func:`pretrained`,
  :func:`pretrained_names`; weights read without running code, docs/security.md).
* :mod:`~programl.pretrained.export` - a finished training run -> a model directory (``programl export-pretrained``).
* :mod:`~programl.pretrained.card` - ``MODEL_CARD.md`` from ``model.json``.
* :mod:`~programl.pretrained.inference` - what ``programl predict`` and :meth:`PretrainedModel.predict` run.

What differs between tasks (the network, where a run keeps its model, what the card says) comes from the task's
:class:`~programl.tasks.base.TaskSpec` (:data:`programl.tasks.registry.TASKS`).
"""

from programl.pretrained.hub import PRETRAINED_DIR, PretrainedModel, find_pretrained, pretrained, pretrained_names

__all__ = ["PRETRAINED_DIR", "PretrainedModel", "find_pretrained", "pretrained", "pretrained_names"]
