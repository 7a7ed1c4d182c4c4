"""Readout heads of ProGraML's GGNNs (SPEC §6.1 "Readout", §6.5 auxiliary readout, §6.6 graph readout).

* :class:`GatedReadout`: per-node logits ``sigmoid(Linear_{2D->C}([h0; hT])) * Linear_{D->C}(hT)`` (Gilmer et al.
  eq. 4), used per node by the data-flow GGNN and summed per graph by the graph classifiers.
* :class:`AuxiliaryReadout`: devmap's head that mixes the graph logits with auxiliary per-graph inputs.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["AuxiliaryReadout", "GatedReadout"]


class GatedReadout(nn.Module):
    r"""Gated node readout: :math:`o_v = \sigma(W_g [h^0_v; h^T_v] + b_g) \odot (W_o h^T_v + b_o)`.

    Both linear maps have Xavier-uniform weights and zero biases (SPEC §6.1).

    Shapes:
        - **h0**, **hT**: (N, D) initial and final node states.
        - **output**: (N, C).

    Args:
        channels: State size D.
        out_channels: Number of outputs C (2 for the data-flow labels).
        dropout: Dropout on the output (ProGraML's ``output_layer_dropout``; 0).
    """

    def __init__(self, channels: int, out_channels: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.gate = nn.Linear(2 * channels, out_channels)
        self.transform = nn.Linear(channels, out_channels)
        self.dropout = nn.Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for linear in (self.gate, self.transform):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)

    def forward(self, h0: Tensor, hT: Tensor) -> Tensor:
        gate = torch.sigmoid(self.gate(torch.cat([h0, hT], dim=-1)))
        return self.dropout(gate * self.transform(hT))


class AuxiliaryReadout(nn.Module):
    r"""Devmap head (SPEC §6.5): ``Linear(Dropout(ReLU(Linear(BatchNorm([g; a])))))``.

    ``g`` are the graph logits, ``a`` the auxiliary inputs (``log1p`` applied when ``log1p`` is set, as ProGraML's
    ``log1p_graph_x``).

    Shapes:
        - **graph_logits**: (B, C), **aux**: (B, A).
        - **output**: (B, out_channels).

    Args:
        num_logits: C.
        aux_channels: A (2 for devmap: transfer bytes and work-group size).
        hidden_channels: Width of the hidden layer (32).
        out_channels: Number of outputs (2 for devmap).
        dropout: Dropout after the ReLU.
        log1p: Apply ``log1p`` to the auxiliary inputs.
    """

    def __init__(
        self,
        num_logits: int,
        aux_channels: int,
        hidden_channels: int = 32,
        out_channels: int = 2,
        dropout: float = 0.0,
        log1p: bool = True,
    ) -> None:
        super().__init__()
        self.log1p = log1p
        self.norm = nn.BatchNorm1d(num_logits + aux_channels)
        self.hidden = nn.Linear(num_logits + aux_channels, hidden_channels)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden_channels, out_channels)

    def forward(self, graph_logits: Tensor, aux: Tensor) -> Tensor:
        aux = aux.to(graph_logits.dtype)
        if self.log1p:
            aux = torch.log1p(aux)
        h = self.norm(torch.cat([graph_logits, aux], dim=-1))
        return self.out(self.dropout(torch.relu(self.hidden(h))))
