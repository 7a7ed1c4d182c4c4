"""Graph-level GGNN classifier for the heuristics tasks (docs/spec/models.md#device-mapping-model,
docs/spec/models.md#classification-model).

The network follows the graph-level branch of ProGraML (``GGNN_POJ104_Config`` / ``GGNN_Devmap_Config``):

* node input: a trainable (|V|+1) x D embedding of the vocabulary id (no selector), D = ``hidden_channels``;
* message passing with :class:`~programl.models.ggnn.TypedGGNNConv` layers and weight sharing: ``layer_timesteps``
  ``[2, 2, 2, 2]`` means 4 parameter sets used for 2 consecutive steps each (the branch's 8 layers with
  ``message_weight_sharing = update_weight_sharing = 2``); ``layer_schedule`` gives any other pattern, e.g.
  ``[0, 1, 0, 1, 0, 1]`` for the paper's devmap model (6 steps, even and odd layers shared);
* optional numbers and types (``numbers_and_types``; not in ProGraML): the node input is the text
  embedding plus :class:`~programl.models.numbers_types.NumberTypeEmbedding` of ``x_num`` / ``x_type``; weights of
  a model without them (``--init-from``) load into it with that embedding at zero, so it starts from their logits;
  likewise string constants' bytes (``string_bytes``:
  :class:`~programl.models.numbers_types.StringBytesEmbedding` of ``x_str``);
* optional per-node-type GRUs (``node_type_gru``; the branch's ``use_node_types``; here constants get their own GRU
  instead of the branch's all-zero state);
* graph readout: the gated node readout summed over the nodes of each graph -> (B, C) graph logits;
* optional auxiliary readout (devmap): graph logits concatenated with ``graph_x`` (transfer bytes, work-group size;
  log1p), BatchNorm, Linear -> 32, ReLU, dropout, Linear -> C; loss = CE(final) + 0.2 CE(graph logits).

Input: a ``Data``/``Batch`` from :func:`programl.io.pyg.to_pyg` (``x``, ``edge_index``, ``edge_flow``, ``edge_pos``,
``node_type`` when ``node_type_gru``, ``graph_x`` when ``aux_channels > 0``, ``batch`` for batches), target
``graph_y``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data

from programl.models.ggnn import TypedGGNNConv
from programl.models.readout import AuxiliaryReadout, GatedReadout

__all__ = ["GGNNGraphClassifier", "GraphOutput"]


class GraphOutput(NamedTuple):
    """Output of :class:`GGNNGraphClassifier`.

    Attributes:
        logits: (B, C) final logits (after the auxiliary readout when there is one).
        graph_logits: (B, C) summed gated node readout, before the auxiliary readout.
    """

    logits: Tensor
    graph_logits: Tensor


class GGNNGraphClassifier(nn.Module):
    """GGNN graph classifier (module docstring).

    Args:
        vocabulary_size: ``len(vocabulary)`` (the embedding has one more row for OOV).
        num_classes: C (104 for POJ-104, 2 for devmap).
        hidden_channels: Embedding and state size D (200 in the branch configs).
        layer_timesteps: Steps per distinct parameter set (default ``[2, 2, 2, 2]``).
        layer_schedule: Parameter-set index of every step; overrides ``layer_timesteps``.
        num_flows: Forward edge types (3).
        backward_edges: Reversed edge types (on).
        use_positions: Position gating (on for POJ-104; the paper's devmap model has it off).
        node_type_gru: One GRU per node type (instruction, variable, constant).
        dropout: Graph-state dropout after each update (0.2 for POJ-104).
        message_dropout: Dropout on messages (0.1 for the paper's devmap model).
        aux_channels: Width of ``graph_x`` (2 for devmap); 0 = no auxiliary readout.
        aux_hidden: Hidden width of the auxiliary readout (32).
        aux_dropout: Dropout inside the auxiliary readout.
        log1p_aux: Apply ``log1p`` to ``graph_x``.
        intermediate_loss_weight: Weight of CE(graph logits) in :meth:`loss` when there is an auxiliary readout (0.2).
        max_position: Rows of the position table (1024).
        numbers_and_types: Add the embedding of ``x_num`` / ``x_type`` (constants' values, vector/array/struct
            shapes) to the node input; off by default (the paper's model).
        string_bytes: Add the embedding of ``x_str`` (string constants' first bytes) to the node input; off by
            default (the paper's model).
    """

    def __init__(
        self,
        vocabulary_size: int,
        num_classes: int,
        *,
        hidden_channels: int = 200,
        layer_timesteps: Sequence[int] = (2, 2, 2, 2),
        layer_schedule: Sequence[int] | None = None,
        num_flows: int = 3,
        backward_edges: bool = True,
        use_positions: bool = True,
        node_type_gru: bool = False,
        dropout: float = 0.0,
        message_dropout: float = 0.0,
        aux_channels: int = 0,
        aux_hidden: int = 32,
        aux_dropout: float = 0.0,
        log1p_aux: bool = True,
        intermediate_loss_weight: float = 0.2,
        max_position: int = 1024,
        numbers_and_types: bool = False,
        string_bytes: bool = False,
    ) -> None:
        super().__init__()
        if layer_schedule is None:
            layer_schedule = [layer for layer, steps in enumerate(layer_timesteps) for _ in range(steps)]
        schedule = [int(i) for i in layer_schedule]
        if not schedule or min(schedule) < 0:
            raise ValueError(f"invalid layer schedule {schedule}")
        num_layers = max(schedule) + 1
        if sorted(set(schedule)) != list(range(num_layers)):
            raise ValueError(f"layer schedule {schedule} leaves parameter sets unused")
        self.schedule = schedule
        self.num_classes = num_classes
        self.node_type_gru = node_type_gru
        self.intermediate_loss_weight = intermediate_loss_weight
        self.embedding = nn.Embedding(vocabulary_size + 1, hidden_channels)
        self.convs = nn.ModuleList(
            TypedGGNNConv(
                hidden_channels,
                num_flows,
                backward_edges=backward_edges,
                use_positions=use_positions,
                position_pad=0,
                max_position=max_position,
                dropout=dropout,
                message_dropout=message_dropout,
                num_node_types=3 if node_type_gru else 1,
            )
            for _ in range(num_layers)
        )
        self.readout = GatedReadout(hidden_channels, num_classes)
        self.aux = (
            AuxiliaryReadout(num_classes, aux_channels, aux_hidden, num_classes, dropout=aux_dropout, log1p=log1p_aux)
            if aux_channels > 0
            else None
        )
        if numbers_and_types:  # (no attribute at all when off: the state dict of the paper's model is unchanged;
            # drawn last, so that the other parameters are the same draws with and without it)
            from programl.models.numbers_types import NumberTypeEmbedding

            self.numbers_and_types = NumberTypeEmbedding(hidden_channels)
        if string_bytes:  # (likewise, after the numbers)
            from programl.models.numbers_types import StringBytesEmbedding

            self.string_bytes = StringBytesEmbedding(hidden_channels)

    _OPTIONAL_INPUTS = ("numbers_and_types", "string_bytes")

    @property
    def init_from_missing_ok(self) -> tuple[str, ...]:
        """What ``--init-from`` weights may lack: the numbers-and-types and string-bytes embeddings the model has
        (weights of a model without them then start it; :meth:`init_from_missing`)."""
        return tuple(f"{name}." for name in self._OPTIONAL_INPUTS if name in self._modules)

    def init_from_missing(self, keys: list[str]) -> None:
        """Start each optional input embedding that the ``--init-from`` weights lacked (``keys``) at zero: the
        model then begins computing the loaded model's logits, and learns from there what the new inputs add."""
        for name in self._OPTIONAL_INPUTS:
            if name in self._modules and any(k.startswith(f"{name}.") for k in keys):
                with torch.no_grad():
                    for parameter in self._modules[name].parameters():
                        parameter.zero_()

    def node_states(self, data: Data) -> tuple[Tensor, Tensor]:
        """Initial and final node states ``(h0, hT)``, each (N, D)."""
        h0 = self.embedding(data.x)
        if "numbers_and_types" in self._modules:
            h0 = h0 + self.numbers_and_types(data.x_num, data.x_type)
        if "string_bytes" in self._modules:
            h0 = h0 + self.string_bytes(data.x_str)
        edge_pos = getattr(data, "edge_pos", None)
        node_type = getattr(data, "node_type", None) if self.node_type_gru else None
        # The edge bookkeeping does not depend on the parameters: build it once for all layers.
        first = self.convs[0]
        edges = first.typed_edges(data.edge_index, data.edge_flow, edge_pos, h0.size(0))
        groups = first.node_groups(node_type, h0.size(0))
        gates = [conv.edge_gates(edges) for conv in self.convs]
        h = h0
        for layer in self.schedule:
            h = self.convs[layer].step(h, edges, gates[layer], groups)
        return h0, h

    def forward(self, data: Data) -> GraphOutput:
        """Graph logits for a ``Data`` (one graph) or ``Batch``."""
        h0, hT = self.node_states(data)
        node_logits = self.readout(h0, hT)
        batch = getattr(data, "batch", None)
        if batch is None:
            graph_logits = node_logits.sum(dim=0, keepdim=True)
        else:
            num_graphs = int(data.num_graphs)
            graph_logits = node_logits.new_zeros(num_graphs, node_logits.size(1)).index_add_(0, batch, node_logits)
        if self.aux is None:
            return GraphOutput(graph_logits, graph_logits)
        aux = data.graph_x.view(graph_logits.size(0), -1)
        return GraphOutput(self.aux(graph_logits, aux), graph_logits)

    def loss(self, output: GraphOutput, target: Tensor) -> Tensor:
        """CE(final logits), plus ``intermediate_loss_weight`` x CE(graph logits) with an auxiliary readout."""
        loss = F.cross_entropy(output.logits, target)
        if self.aux is not None and self.intermediate_loss_weight:
            loss = loss + self.intermediate_loss_weight * F.cross_entropy(output.graph_logits, target)
        return loss

    @torch.no_grad()
    def predict(self, data: Data) -> Tensor:
        """Predicted class per graph, (B,) long."""
        return self.forward(data).logits.argmax(dim=-1)
