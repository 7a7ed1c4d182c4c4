"""Readout heads of ProGraML's GGNNs (docs/spec/models.md).

* :class:`GatedReadout`: per-node logits ``sigmoid(Linear_{2D->C}([h0; hT])) * Linear_{D->C}(hT)`` (Gilmer et al.
  eq. 4), used per node by the data-flow GGNN and summed per graph by the graph classifiers.
* :class:`RootContextReadout`: an optional extra term of the data-flow readout that reads the root's states (not in
  the paper).
* :class:`AuxiliaryReadout`: devmap's head that mixes the graph logits with auxiliary per-graph inputs.
* :class:`ThermometerEncoding`: an optional encoding of those inputs as threshold bits (not in the paper; below).
* :class:`TextCountEncoding`: an optional further input of that head, the graph's node-text counts (not in the paper).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["AuxiliaryReadout", "GatedReadout", "RootContextReadout", "TextCountEncoding", "ThermometerEncoding"]


class GatedReadout(nn.Module):
    r"""Gated node readout: :math:`o_v = \sigma(W_g [h^0_v; h^T_v] + b_g) \odot (W_o h^T_v + b_o)`.

    Both linear maps have Xavier-uniform weights and zero biases (docs/spec/models.md#data-flow-ggnn).

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
        """Xavier-uniform weights and zero biases for the gate and the transform."""
        for linear in (self.gate, self.transform):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)

    def forward(self, h0: Tensor, hT: Tensor) -> Tensor:
        gate = torch.sigmoid(self.gate(torch.cat([h0, hT], dim=-1)))
        return self.dropout(gate * self.transform(hT))


class RootContextReadout(nn.Module):
    r"""Per-node logits from the node's and its graph's root states (not in the paper; :mod:`programl.models.dataflow`
    says why):

    .. math::
        o_v = W_2\,\mathrm{ReLU}(W_1 [h^0_v; h^0_r; h^0_v \odot h^0_r; h^T_v; h^T_r] + b_1) + b_2

    where ``r`` is the root of ``v``'s graph (the mean of its root-marked nodes' states; zeros for a graph without
    one). :math:`W_2, b_2` start at zero, so the term is 0 until trained.

    Shapes:
        - **h0**, **hT**: (N, D); **root**: (N,) 0/1; **batch**: (N,) graph index or None (one graph).
        - **output**: (N, C).

    Args:
        channels: State size D.
        out_channels: C.
        hidden: Width of the hidden layer (64).
    """

    def __init__(self, channels: int, out_channels: int, hidden: int = 64) -> None:
        super().__init__()
        self.hidden = nn.Linear(5 * channels, hidden)
        self.out = nn.Linear(hidden, out_channels)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, h0: Tensor, hT: Tensor, root: Tensor, batch: Tensor | None) -> Tensor:
        if batch is None:
            batch = torch.zeros(h0.size(0), dtype=torch.long, device=h0.device)
        graphs = int(batch.max()) + 1 if batch.numel() else 0
        marked = root.to(h0.dtype).unsqueeze(-1)
        count = torch.zeros(graphs, 1, dtype=h0.dtype, device=h0.device).index_add_(0, batch, marked)
        count = count.clamp(min=1.0)

        def root_state(h: Tensor) -> Tensor:
            total = torch.zeros(graphs, h.size(1), dtype=h.dtype, device=h.device).index_add_(0, batch, h * marked)
            return (total / count)[batch]

        r0, rT = root_state(h0), root_state(hT)
        features = torch.cat([h0, r0, h0 * r0, hT, rT], dim=-1)
        return self.out(torch.relu(self.hidden(features)))


class ThermometerEncoding(nn.Module):
    r"""Each input ``x_j`` as ``bins`` bits :math:`[x_j > t_{j,1}], \dots, [x_j > t_{j,bins}]` (thermometer code).

    Not in the paper. The devmap labels change at sharp, kernel-specific values of the transfer size and work-group
    size: a random forest on these two inputs alone gets 87.6 % / 81.3 % on the paper's folds, an MLP on their
    ``log1p`` 77 % / 71 %. Threshold bits let a linear layer build the forest's step functions. The thresholds
    are quantiles of the training inputs (:meth:`fit`), kept as a buffer, so they travel with the weights; unused
    thresholds (fewer distinct training values than ``bins``) are +inf and always give 0.

    Shapes:
        - **input**: (B, A).
        - **output**: (B, A x bins), 0/1 floats.

    Args:
        num_inputs: A.
        bins: Thresholds per input.
    """

    def __init__(self, num_inputs: int, bins: int) -> None:
        super().__init__()
        if num_inputs < 1 or bins < 1:
            raise ValueError(f"need num_inputs >= 1 and bins >= 1, got {num_inputs}, {bins}")
        self.bins = bins
        self.register_buffer("thresholds", torch.full((num_inputs, bins), float("inf")))

    @property
    def out_channels(self) -> int:
        """Features per graph: one per threshold (of every input)."""
        return self.thresholds.numel()

    @torch.no_grad()
    def fit(self, values: Tensor) -> ThermometerEncoding:
        """Set the thresholds from training inputs ``values`` (N, A): per input, the distinct values among its
        ``bins`` evenly spaced inner quantiles, ascending, +inf after them. Returns ``self``."""
        values = values.to(self.thresholds.dtype).to(self.thresholds.device)
        if values.dim() != 2 or values.size(1) != self.thresholds.size(0) or values.size(0) == 0:
            raise ValueError(f"expected a non-empty (N, {self.thresholds.size(0)}) tensor, got {tuple(values.shape)}")
        levels = torch.linspace(0, 1, self.bins + 2, dtype=values.dtype, device=values.device)[1:-1]
        self.thresholds.fill_(float("inf"))
        for j in range(values.size(1)):
            distinct = torch.unique(torch.quantile(values[:, j], levels))
            self.thresholds[j, : distinct.numel()] = distinct
        return self

    def forward(self, values: Tensor) -> Tensor:
        bits = values.to(self.thresholds.dtype).unsqueeze(-1) > self.thresholds
        return bits.flatten(1).to(values.dtype if values.is_floating_point() else self.thresholds.dtype)


class TextCountEncoding(nn.Module):
    r"""Per graph, how often each vocabulary id occurs among its nodes, as :math:`\log(1 + c_t) / s_t`.

    Not in the paper. On devmap, a random forest on the auxiliary inputs and these counts (91.0 % / 87.1 % on the
    paper's folds) beats the GGNN whose head sees a few pooled channels (87.8 % / 84.0 %), and an MLP on the inputs'
    threshold bits and these counts gets 92.6 % / 86.8 % (``docs/results.md`` §6): the counts carry what the pooled
    channels lose. The scales :math:`s_t` are the largest :math:`\log(1 + c_t)` of the training graphs (:meth:`fit`;
    1 for a text that no training graph has), a buffer saved with the weights.

    Shapes:
        - **x**: (N,) vocabulary ids in ``[0, num_texts)``; **batch**: (N,) graph of each node.
        - **output**: (B, num_texts).

    Args:
        num_texts: Vocabulary ids, the out-of-vocabulary id included.
    """

    def __init__(self, num_texts: int) -> None:
        super().__init__()
        if num_texts < 1:
            raise ValueError(f"need num_texts >= 1, got {num_texts}")
        self.register_buffer("scale", torch.ones(num_texts))

    @property
    def out_channels(self) -> int:
        """Features per graph: one per text counted."""
        return self.scale.numel()

    def log_counts(self, x: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        """``log(1 + count)`` per graph and text, unscaled, (B, num_texts)."""
        counts = torch.zeros(num_graphs, self.out_channels, dtype=self.scale.dtype, device=x.device)
        counts.index_put_((batch, x), torch.ones_like(x, dtype=counts.dtype), accumulate=True)
        return torch.log1p(counts)

    @torch.no_grad()
    def fit(self, x: Tensor, batch: Tensor, num_graphs: int) -> TextCountEncoding:
        """Set the scales from the training graphs' nodes (``x``, ``batch`` as :meth:`forward`). Returns ``self``."""
        if num_graphs < 1:
            raise ValueError("need at least one training graph")
        largest = self.log_counts(x, batch, num_graphs).amax(dim=0)
        self.scale.copy_(torch.where(largest > 0, largest, torch.ones_like(largest)))
        return self

    def forward(self, x: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        return self.log_counts(x, batch, num_graphs) / self.scale


class AuxiliaryReadout(nn.Module):
    r"""Devmap head (docs/spec/models.md#device-mapping-model): ``Linear(Dropout(ReLU(Linear(BatchNorm([g; a])))))``.

    ``g`` are the graph logits, ``a`` the auxiliary inputs (``log1p`` applied when ``log1p`` is set, as ProGraML's
    ``log1p_graph_x``). With ``aux_bins`` > 0, ``a`` is instead the :class:`ThermometerEncoding` of the (``log1p``)
    inputs, ``aux_bins`` bits each (not in the paper); its thresholds must be fitted (:meth:`fit_aux`).

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
        aux_bins: Thermometer bits per auxiliary input (0: the inputs themselves, the paper's head).
        extra_channels: Further per-graph inputs that :meth:`forward` gets as ``extra`` (0 in the paper's head;
            :class:`TextCountEncoding` gives them).
    """

    def __init__(
        self,
        num_logits: int,
        aux_channels: int,
        hidden_channels: int = 32,
        out_channels: int = 2,
        dropout: float = 0.0,
        log1p: bool = True,
        aux_bins: int = 0,
        extra_channels: int = 0,
    ) -> None:
        super().__init__()
        self.log1p = log1p
        self.encoding = ThermometerEncoding(aux_channels, aux_bins) if aux_bins > 0 else None
        width = num_logits + (self.encoding.out_channels if self.encoding is not None else aux_channels)
        width += extra_channels
        self.norm = nn.BatchNorm1d(width)
        self.hidden = nn.Linear(width, hidden_channels)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden_channels, out_channels)

    def _prepare(self, aux: Tensor, dtype: torch.dtype) -> Tensor:
        aux = aux.to(dtype)
        return torch.log1p(aux) if self.log1p else aux

    def fit_aux(self, aux: Tensor) -> None:
        """Fit the thermometer thresholds to the training rows' auxiliary inputs ``aux`` (N, A), raw as
        :meth:`forward` takes them; nothing to do without ``aux_bins``."""
        if self.encoding is not None:
            self.encoding.fit(self._prepare(aux, self.encoding.thresholds.dtype))

    def forward(self, graph_logits: Tensor, aux: Tensor, extra: Tensor | None = None) -> Tensor:
        aux = self._prepare(aux, graph_logits.dtype)
        if self.encoding is not None:
            aux = self.encoding(aux)
        inputs = [graph_logits, aux] if extra is None else [graph_logits, aux, extra.to(graph_logits.dtype)]
        h = self.norm(torch.cat(inputs, dim=-1))
        return self.out(self.dropout(torch.relu(self.hidden(h))))
