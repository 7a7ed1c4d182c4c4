"""Graph neural networks of ProGraML on torch-geometric (docs/spec/models.md, docs/spec/design.md#package-layout).

* :class:`TypedGGNNConv` - the typed, position-gated GGNN layer (docs/spec/models.md#typed-ggnn-layer).
* :class:`DataflowGGNN` - the DeepDataFlow node classifier (87,070 parameters with a 2,230-entry vocabulary);
  :class:`DataflowRGCN` - a drop-in alternative built on PyG's ``RGCNConv``.
* :class:`GGNNGraphClassifier` - graph-level classifier for devmap and POJ-104
  (docs/spec/models.md#device-mapping-model, docs/spec/models.md#classification-model); :class:`RGCNGraphClassifier` -
  its R-GCN alternative for POJ-104; :class:`PooledReadoutClassifier` - devmap with another graph readout (K channels,
  sum or mean pooling).
* :mod:`programl.models.metrics` - ProGraML's per-batch and per-epoch metrics.
* :func:`build_model` - a network from its description (``model.json``'s ``model``; what training builds too).

The shipped models and their loader (``pretrained``, ``pretrained_names``, ``PretrainedModel``) are
:mod:`programl.pretrained`'s, which sits above this package (docs/architecture.md).
"""

from programl.models.build import build_model
from programl.models.dataflow import DataflowGGNN, DataflowRGCN
from programl.models.fixpoint import DataflowFixpoint
from programl.models.ggnn import TypedEdges, TypedGGNNConv, add_backward_edges, sinusoidal_position_table
from programl.models.graph_classifier import GGNNGraphClassifier, GraphOutput
from programl.models.metrics import (
    AccuracyAccumulator,
    BatchMetrics,
    MetricsAccumulator,
    batch_metrics,
    confusion_matrix,
    pooled_metrics,
)
from programl.models.pooled_readout import PooledReadoutClassifier
from programl.models.readout import (
    AuxiliaryReadout,
    GatedReadout,
    RootContextReadout,
    TextCountEncoding,
    ThermometerEncoding,
)
from programl.models.rgcn_classifier import RGCNGraphClassifier

#: Alias: the layer is ProGraML's GGNN "MessagingLayer" + GRU.
GGNNLayer = TypedGGNNConv

__all__ = [
    "AccuracyAccumulator",
    "AuxiliaryReadout",
    "BatchMetrics",
    "DataflowFixpoint",
    "DataflowGGNN",
    "DataflowRGCN",
    "GGNNGraphClassifier",
    "GGNNLayer",
    "GatedReadout",
    "GraphOutput",
    "MetricsAccumulator",
    "PooledReadoutClassifier",
    "RGCNGraphClassifier",
    "RootContextReadout",
    "TextCountEncoding",
    "ThermometerEncoding",
    "TypedEdges",
    "TypedGGNNConv",
    "add_backward_edges",
    "build_model",
    "batch_metrics",
    "confusion_matrix",
    "pooled_metrics",
    "sinusoidal_position_table",
]
