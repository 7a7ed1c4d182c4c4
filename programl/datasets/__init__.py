"""PyG data sets of ProGraML's three tasks, as ``torch_geometric.datasets`` is to PyG (docs/spec/tasks.md,
docs/spec/datasets.md).

* :class:`DeepDataFlow` - DeepDataFlow-22: per-node data-flow labels, one example per label record
  (docs/spec/tasks.md#data-flow-protocol, docs/spec/datasets.md#deepdataflow-layout); on disk, memory-mapped.
  :meth:`DeepDataFlow.from_directory` gives the same examples of a data set directory already built (``programl dataset
  build``, a wide recipe, or ProGraML's released DeepDataFlow): what ``programl train dataflow --dataset`` reads.
* :class:`POJ104` - algorithm classification, 104 classes (docs/spec/tasks.md#algorithm-classification); in memory.
* :class:`DevMap` - OpenCL device mapping, CPU or GPU, with the auxiliary inputs (docs/spec/tasks.md#device-mapping); in
  memory.

Each follows PyG's ``root``/``raw``/``processed`` convention: ``download()`` takes the public files from the shared
research data (``$PROGRAML_SHARED_DATA`` or ``../shared/data``) or their URLs, sha256-checked
(:mod:`programl.data.download`); ``process()`` runs the project's builders; ``split=`` selects a split. Node texts are
stored as ids of a per-data-set text table and mapped to a model's vocabulary by the transform
:class:`EncodeVocabulary`. Batches by node budget come from :class:`programl.loader.NodeBudgetBatchSampler`
with ``torch_geometric.loader.DataLoader(dataset, batch_sampler=...)``.

Processing is deterministic (the same options give the same examples) and resumable (the builders skip what is
built); each processed file set ends with a small JSON file written atomically after the data, so an interrupted
``process()`` is redone on the next use, and a damaged file is one :class:`~programl.exceptions.ProgramlError` line
(:mod:`programl.datasets.processed`). Options that change the processed data change ``processed_file_names``.

Each data set knows its own facts: constants, folds and checks of its raw files are attributes and methods of its
class (``DevMap.PLATFORM_NAMES``, ``DevMap.cross_validation_splits(...)``, ``POJ104.NUM_CLASSES``,
``POJ104.compile_program(...)``). Those that need no torch are also in :mod:`programl.datasets.devmap_info` and
:mod:`programl.datasets.poj104_info`, where a task's spec (its options, ``--help``, its model cards) reads them.
:class:`Vocabulary` is the data sets' vocabulary (count-ordered node texts; ``vocabulary()`` of a split).

The data set classes need the ``ml`` extra and are imported on first use: without torch or torch-geometric,
``from programl.datasets import DevMap`` (or ``import programl.datasets.devmap``) raises a ``ModuleNotFoundError``
whose one line says ``pip install 'programl[ml]'``; the torch-free modules import without it.
"""

from __future__ import annotations

import programl
from programl.util.lazy import lazy_getattr

# public name -> module that defines it
_EXPORTS = {
    "DEEPDATAFLOW22": "programl.datasets.deepdataflow",
    "DeepDataFlow": "programl.datasets.deepdataflow",
    "DevMap": "programl.datasets.devmap",
    "POJ104": "programl.datasets.poj104",
    "AddDeadBranches": "programl.datasets.transforms",
    "EncodeVocabulary": "programl.datasets.transforms",
    "Vocabulary": "programl.data.vocabulary",
}

__all__ = sorted(_EXPORTS)

_lazy_getattr = lazy_getattr(globals(), _EXPORTS)


def __getattr__(name: str):
    try:
        return _lazy_getattr(name)
    except ModuleNotFoundError as error:  # installed without the ml extra: one line that says which extra to install
        replacement = programl._ml_import_error("programl.datasets", error)
        if replacement is None:
            raise
        raise replacement from None


def __dir__() -> list[str]:
    return __all__
