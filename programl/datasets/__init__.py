"""PyG data sets of ProGraML's three tasks, as ``torch_geometric.datasets`` is to PyG (issue 10; SPEC §6, §9).

* :class:`DeepDataFlow` - DeepDataFlow-22: per-node data-flow labels, one example per label record (SPEC §6.1, §9.1);
  on disk, memory-mapped.
* :class:`DeepDataFlowDataset` - the same examples of a data set directory already built (``programl dataset
  build``, a wide recipe, or ProGraML's released DeepDataFlow): what ``programl train dataflow --dataset`` reads.
* :class:`POJ104` - algorithm classification, 104 classes (SPEC §6.6); in memory.
* :class:`DevMap` - OpenCL device mapping, CPU or GPU, with the auxiliary inputs (SPEC §6.5); in memory.

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

Needs the ``ml`` extra: without torch or torch-geometric, importing this package raises a ``ModuleNotFoundError``
whose one line says ``pip install 'programl[ml]'``.
"""

import programl

try:
    from programl.datasets.deepdataflow import DEEPDATAFLOW22, DeepDataFlow
    from programl.datasets.devmap import DevMap
    from programl.datasets.directory import DeepDataFlowDataset
    from programl.datasets.poj104 import POJ104
    from programl.datasets.transforms import AddDeadBranches, EncodeVocabulary
except ModuleNotFoundError as _error:  # installed without the ml extra: one line that says which extra to install
    _replacement = programl._ml_import_error("programl.datasets", _error)
    if _replacement is None:
        raise
    raise _replacement from None

__all__ = [
    "DEEPDATAFLOW22",
    "POJ104",
    "AddDeadBranches",
    "DeepDataFlow",
    "DeepDataFlowDataset",
    "DevMap",
    "EncodeVocabulary",
]
