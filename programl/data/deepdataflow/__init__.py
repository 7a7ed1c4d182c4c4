"""DeepDataFlow data sets: the on-disk layout, the builder, the split and the DeepDataFlow-22 recipe
(docs/spec/datasets.md#deepdataflow-layout, docs/spec/datasets.md#builds).

* :mod:`~programl.data.deepdataflow.layout` - where each file lives; the manifest;
* :mod:`~programl.data.deepdataflow.labels` - label files in either form (the original's protobuf per graph and
  analysis, or one compact file per graph, the builder's default), and conversion between them;
* :mod:`~programl.data.deepdataflow.inputs` - what a build consumes (:class:`Input`, :func:`discover_inputs`);
* :mod:`~programl.data.deepdataflow.builder` - :func:`build_dataset` (parallel, resumable, atomic);
* :mod:`~programl.data.deepdataflow.split` - the seeded 3:1:1 split by source program;
* :mod:`~programl.data.deepdataflow.recipe` - recipes such as DeepDataFlow-22 (POJ-104 + devmap OpenCL).

Nothing here imports torch; the PyG data set over this layout is
:meth:`programl.datasets.DeepDataFlow.from_directory`.
"""

from programl.data.deepdataflow.builder import BuildReport, build_dataset, graph_seed, load_summary
from programl.data.deepdataflow.inputs import Input, discover_inputs
from programl.data.deepdataflow.layout import SPLITS, Layout, read_manifest
from programl.data.deepdataflow.split import split_groups
from programl.dataflow.names import ANALYSES

__all__ = [
    "ANALYSES",
    "SPLITS",
    "BuildReport",
    "Input",
    "Layout",
    "build_dataset",
    "discover_inputs",
    "graph_seed",
    "load_summary",
    "read_manifest",
    "split_groups",
]
