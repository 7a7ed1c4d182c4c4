"""A devmap classifier with another graph readout (``programl train devmap --readout-channels K --pooling mean``;
SPEC §6.5).

It wraps a :class:`~programl.models.GGNNGraphClassifier` built with K output channels and no auxiliary head: the
gated node readout has K channels, pooled per graph by sum or mean; an auxiliary head reads all K with the graph's
auxiliary inputs (``data.graph_x``, 2 per graph), and the intermediate loss is taken on the first 2 channels, the
paper's graph logits. With K = 2 and sum pooling this is the paper's model, which the task then builds directly.
``aux_bins`` > 0 feeds the auxiliary inputs to the head as thermometer bits
(:class:`~programl.models.readout.ThermometerEncoding`; ``programl train devmap --aux-bins N``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.utils import scatter

from programl.models.graph_classifier import GGNNGraphClassifier, GraphOutput
from programl.models.readout import AuxiliaryReadout

__all__ = ["PooledReadoutClassifier"]


class PooledReadoutClassifier(nn.Module):
    """Graph classification from K pooled readout channels and 2 auxiliary inputs (module docstring).

    Args:
        graph_model: The GGNN whose node states and readout are used (``num_classes`` = K channels).
        pooling: ``"sum"`` or ``"mean"`` over each graph's nodes.
        aux_hidden: Hidden size of the auxiliary head.
        aux_dropout: Dropout of the auxiliary head.
        aux_bins: Thermometer bits per auxiliary input (0: their ``log1p``, the paper's head); the thresholds are set
            by :meth:`fit_aux` from the training rows and saved with the weights.
    """

    def __init__(
        self,
        graph_model: GGNNGraphClassifier,
        *,
        pooling: str = "sum",
        aux_hidden: int = 32,
        aux_dropout: float = 0.0,
        aux_bins: int = 0,
    ) -> None:
        super().__init__()
        self.graph_model = graph_model
        self.pooling = pooling
        self.aux = AuxiliaryReadout(graph_model.num_classes, 2, aux_hidden, 2, dropout=aux_dropout, aux_bins=aux_bins)
        self.intermediate_loss_weight = graph_model.intermediate_loss_weight

    def forward(self, data) -> GraphOutput:
        h0, hT = self.graph_model.node_states(data)
        node_logits = self.graph_model.readout(h0, hT)
        batch = getattr(data, "batch", None)
        if batch is None:
            batch = node_logits.new_zeros(node_logits.size(0), dtype=torch.long)
        channels = scatter(node_logits, batch, dim=0, dim_size=data.graph_x.view(-1, 2).size(0), reduce=self.pooling)
        return GraphOutput(self.aux(channels, data.graph_x.view(channels.size(0), -1)), channels[:, :2])

    def fit_aux(self, graph_x: Tensor) -> None:
        """Fit the auxiliary head's thermometer thresholds to the training rows' ``graph_x`` (N, 2)."""
        self.aux.fit_aux(graph_x.view(-1, 2))

    def predict(self, data) -> Tensor:
        """Predicted class per graph, (B,) long."""
        return self.forward(data).logits.argmax(dim=-1)

    def loss(self, output: GraphOutput, target: Tensor) -> Tensor:
        return F.cross_entropy(output.logits, target) + self.intermediate_loss_weight * F.cross_entropy(
            output.graph_logits, target
        )
