"""An R-GCN graph classifier: the typed PyG alternative to :class:`~programl.models.GGNNGraphClassifier` for POJ-104
(``programl train classifyapp --model rgcn``; docs/spec/models.md#classification-model).

An embedding; per parameter set a :class:`torch_geometric.nn.RGCNConv` over the 6 edge types (3 flows and their
reversals; per-type mean and a root weight) followed by a ``GRUCell``, used for ``layer_timesteps[i]`` steps each;
the gated node readout summed per graph. Same interface as :class:`~programl.models.GGNNGraphClassifier`:
``forward(data) -> GraphOutput``, ``predict(data)`` and ``loss(output, target)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import RGCNConv

from programl.models.ggnn import add_backward_edges
from programl.models.graph_classifier import GraphOutput
from programl.models.readout import GatedReadout

__all__ = ["RGCNGraphClassifier"]


class RGCNGraphClassifier(nn.Module):
    """Graph classification with R-GCN layers and GRU state updates (module docstring).

    Args:
        vocabulary_size: Node text vocabulary (index ``vocabulary_size`` is "unknown").
        num_classes: Output classes (104 for POJ-104).
        hidden_channels: Embedding and state size.
        layer_timesteps: Steps per parameter set (``[2, 2, 2, 2]``: 8 steps, 4 sets).
        dropout: Dropout on the node states after each step.
        num_flows: Edge flows (control, data, call); their reversals are added.
    """

    def __init__(
        self,
        vocabulary_size: int,
        num_classes: int,
        *,
        hidden_channels: int = 200,
        layer_timesteps: Sequence[int] = (2, 2, 2, 2),
        dropout: float = 0.0,
        num_flows: int = 3,
    ) -> None:
        super().__init__()
        self.num_flows = num_flows
        self.schedule = [layer for layer, steps in enumerate(layer_timesteps) for _ in range(steps)]
        self.embedding = nn.Embedding(vocabulary_size + 1, hidden_channels)
        self.convs = nn.ModuleList(
            RGCNConv(hidden_channels, hidden_channels, 2 * num_flows, aggr="mean") for _ in layer_timesteps
        )
        self.grus = nn.ModuleList(nn.GRUCell(hidden_channels, hidden_channels) for _ in layer_timesteps)
        self.readout = GatedReadout(hidden_channels, num_classes)
        self.dropout = dropout

    def forward(self, data) -> GraphOutput:
        edge_index, edge_type, _ = add_backward_edges(data.edge_index, data.edge_flow, None, self.num_flows)
        h0 = self.embedding(data.x)
        h = h0
        for layer in self.schedule:
            h = self.grus[layer](self.convs[layer](h, edge_index, edge_type), h)
            if self.dropout:
                h = F.dropout(h, p=self.dropout, training=self.training)
        node_logits = self.readout(h0, h)
        batch = getattr(data, "batch", None)
        if batch is None:
            logits = node_logits.sum(0, keepdim=True)
        else:
            logits = node_logits.new_zeros(int(data.num_graphs), node_logits.size(1)).index_add_(0, batch, node_logits)
        return GraphOutput(logits, logits)

    def predict(self, data) -> Tensor:
        """Predicted class per graph, (B,) long."""
        return self.forward(data).logits.argmax(dim=-1)

    def loss(self, output: GraphOutput, target: Tensor) -> Tensor:
        """Cross-entropy of the logits against the class targets (B,)."""
        return F.cross_entropy(output.logits, target)
