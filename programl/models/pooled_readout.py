"""A devmap classifier with another graph readout (``programl train devmap --readout-channels K --pooling mean``;
docs/spec/models.md#device-mapping-model).

It wraps a :class:`~programl.models.GGNNGraphClassifier` built with K output channels and no auxiliary head: the
gated node readout has K channels, pooled per graph by sum or mean; an auxiliary head reads all K with the graph's
auxiliary inputs (``data.graph_x``, 2 per graph), and the intermediate loss is taken on the first 2 channels, the
paper's graph logits. With K = 2 and sum pooling this is the paper's model, which the task then builds directly.
``aux_bins`` > 0 feeds the auxiliary inputs to the head as thermometer bits
(:class:`~programl.models.readout.ThermometerEncoding`; ``programl train devmap --aux-bins N``). ``text_counts`` > 0
feeds the head the graph's node-text counts as well (:class:`~programl.models.readout.TextCountEncoding`;
``programl train devmap --text-counts``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.utils import scatter

from programl.models.graph_classifier import GGNNGraphClassifier, GraphOutput
from programl.models.readout import AuxiliaryReadout, TextCountEncoding

__all__ = ["PooledReadoutClassifier", "is_paper_head"]


def is_paper_head(
    readout_channels: int = 2, pooling: str = "sum", aux_bins: int = 0, text_counts: bool = False
) -> bool:
    """Whether these devmap options give the paper's model (a :class:`~programl.models.GGNNGraphClassifier` with its
    own auxiliary head, docs/spec/models.md#device-mapping-model) rather than a :class:`PooledReadoutClassifier`: 2
    channels summed per graph, the auxiliary inputs as ``log1p`` values, no text counts. The training task and the
    exporter both decide by this."""
    return readout_channels == 2 and pooling == "sum" and not aux_bins and not text_counts


class PooledReadoutClassifier(nn.Module):
    """Graph classification from K pooled readout channels and 2 auxiliary inputs (module docstring).

    Args:
        graph_model: The GGNN whose node states and readout are used (``num_classes`` = K channels).
        pooling: ``"sum"`` or ``"mean"`` over each graph's nodes.
        aux_hidden: Hidden size of the auxiliary head.
        aux_dropout: Dropout of the auxiliary head.
        aux_bins: Thermometer bits per auxiliary input (0: their ``log1p``, the paper's head); the thresholds are set
            by :meth:`fit_aux` from the training rows and saved with the weights.
        text_counts: Vocabulary ids (the out-of-vocabulary id included) whose per-graph counts the head reads as well
            (0: none); their scales are set by :meth:`fit_text_counts` from the training graphs.
    """

    def __init__(
        self,
        graph_model: GGNNGraphClassifier,
        *,
        pooling: str = "sum",
        aux_hidden: int = 32,
        aux_dropout: float = 0.0,
        aux_bins: int = 0,
        text_counts: int = 0,
    ) -> None:
        super().__init__()
        self.graph_model = graph_model
        self.pooling = pooling
        self.text_counts = TextCountEncoding(text_counts) if text_counts > 0 else None
        self.aux = AuxiliaryReadout(
            graph_model.num_classes,
            2,
            aux_hidden,
            2,
            dropout=aux_dropout,
            aux_bins=aux_bins,
            extra_channels=text_counts,
        )
        self.intermediate_loss_weight = graph_model.intermediate_loss_weight

    def forward(self, data) -> GraphOutput:
        h0, hT = self.graph_model.node_states(data)
        node_logits = self.graph_model.readout(h0, hT)
        batch = getattr(data, "batch", None)
        if batch is None:
            batch = node_logits.new_zeros(node_logits.size(0), dtype=torch.long)
        num_graphs = data.graph_x.view(-1, 2).size(0)
        channels = scatter(node_logits, batch, dim=0, dim_size=num_graphs, reduce=self.pooling)
        extra = None if self.text_counts is None else self.text_counts(data.x, batch, num_graphs)
        return GraphOutput(self.aux(channels, data.graph_x.view(num_graphs, -1), extra), channels[:, :2])

    def fit_aux(self, graph_x: Tensor) -> None:
        """Fit the auxiliary head's thermometer thresholds to the training rows' ``graph_x`` (N, 2)."""
        self.aux.fit_aux(graph_x.view(-1, 2))

    def fit_text_counts(self, x: Tensor, batch: Tensor, num_graphs: int) -> None:
        """Fit the text-count scales to the training graphs' nodes; nothing to do without ``text_counts``."""
        if self.text_counts is not None:
            self.text_counts.fit(x, batch, num_graphs)

    def predict(self, data) -> Tensor:
        """Predicted class per graph, (B,) long."""
        return self.forward(data).logits.argmax(dim=-1)

    def loss(self, output: GraphOutput, target: Tensor) -> Tensor:
        """CE(final logits) + ``intermediate_loss_weight`` x CE(graph logits)."""
        return F.cross_entropy(output.logits, target) + self.intermediate_loss_weight * F.cross_entropy(
            output.graph_logits, target
        )
