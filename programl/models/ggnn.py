"""Typed gated graph neural network layer of ProGraML (docs/spec/models.md#typed-ggnn-layer,
docs/spec/models.md#classification-model).

One :class:`TypedGGNNConv` is one ProGraML ``MessagingLayer`` plus its GRU: a message function with one affine map
per edge type, position gating, mean aggregation over all edge types, and a ``GRUCell`` update. ProGraML applies the
same layer for many steps with shared weights (30 for DeepDataFlow); :meth:`TypedGGNNConv.forward` takes
``num_steps`` and prepares the edge bookkeeping once for all of them.

Edge types: the ``F`` forward flows (``Edge.Flow``: control 0, data 1, call 2) plus, with ``backward_edges``, one
backward type per flow (type ``F + f``: every edge reversed, keeping its position) -> 6 types for ProGraML.

Speed: :meth:`TypedGGNNConv.typed_edges` sorts the typed edges by target once per forward pass
(a stable sort), and each step sums its gated messages with :class:`_GatedSum`: ``index_add_`` over the sorted
targets in the forward pass (sequential writes, where the ``scatter_add_`` of ``MessagePassing`` wrote at random),
and in the backward pass exactly the operations autograd ran through ``index_select``, ``mul`` and ``scatter_add_``
before, in the original edge order. Both sum every target's (and every table row's) terms in the original edge
order, so the states, the logits and every gradient are bit-identical to the ``MessagePassing`` code this replaced
(``tests/models/test_ggnn.py`` compares them); ``benchmarks/ggnn_speed.py`` measures the two side by side.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing

from programl.models.fused_ggnn import MAX_PARTS, fused_plan, fused_steps

#: ``PROGRAML_GGNN_FUSED=1`` turns the fused steps on where a layer is built with ``fused=None`` (the default).
FUSED_ENVIRONMENT = "PROGRAML_GGNN_FUSED"

__all__ = [
    "TypedEdges",
    "TypedGGNNConv",
    "add_backward_edges",
    "sinusoidal_position_table",
]


def sinusoidal_position_table(num_positions: int, dim: int, pad: int = 0) -> Tensor:
    """The constant position table of docs/spec/models.md#typed-ggnn-layer: ``[sin(p f_k) for k < dim/2] + [cos(p f_k)
    for k < dim/2]``.

    ``f_k = 1 / 10000^(2k / dim)``; the sine and cosine halves are concatenated (not interleaved), then ``pad`` zero
    columns are appended (ProGraML appends 2 for the selector dimensions: 32 + 2 = 34).

    Args:
        num_positions: Rows (positions ``0 .. num_positions - 1``); ProGraML uses 1024.
        dim: Number of sinusoidal columns (even).
        pad: Zero columns appended.

    Returns:
        A float32 tensor of shape ``(num_positions, dim + pad)``.

    Raises:
        ValueError: ``dim`` is odd or negative.
    """
    if dim < 0 or dim % 2:
        raise ValueError(f"the sinusoidal part needs an even, non-negative width; got {dim}")
    half = dim // 2
    position = torch.arange(num_positions, dtype=torch.float64).unsqueeze(1)
    k = torch.arange(half, dtype=torch.float64)
    freq = 1.0 / torch.pow(10000.0, 2.0 * k / dim) if dim else k
    angle = position * freq
    table = torch.cat([torch.sin(angle), torch.cos(angle), torch.zeros(num_positions, pad, dtype=torch.float64)], 1)
    return table.to(torch.float32)


def add_backward_edges(
    edge_index: Tensor, edge_flow: Tensor, edge_pos: Tensor | None, num_flows: int
) -> tuple[Tensor, Tensor, Tensor | None]:
    """Append a reversed copy of every edge with type ``flow + num_flows`` and the same position.

    Args:
        edge_index: (2, E) long.
        edge_flow: (E,) long in ``[0, num_flows)``.
        edge_pos: (E,) long or None.
        num_flows: Number of forward edge types.

    Returns:
        ``(edge_index, edge_type, edge_pos)`` of the 2E typed edges (forward edges first, in input order).
    """
    index = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    edge_type = torch.cat([edge_flow, edge_flow + num_flows])
    pos = torch.cat([edge_pos, edge_pos]) if edge_pos is not None else None
    return index, edge_type, pos


class TypedEdges(NamedTuple):
    """Edge bookkeeping shared by all steps of a forward pass (see :meth:`TypedGGNNConv.typed_edges`).

    The typed edges are the forward edges in input order, then (with backward edges) their reversals: the *edge
    order*. ``index`` holds them sorted by target (a stable sort, so each target's edges keep the edge order):
    ``index[:, i]`` is typed edge ``order[i]``, and ``inverse`` undoes the sort.

    Attributes:
        index: (2, E') long, sorted by target; row 0 = ``source * num_types + type`` (a row of the
            (N * num_types, D) table of transformed states), row 1 = target.
        pos: (E',) long positions clamped to the table, in edge order (``pos[order]`` lines up with ``index``), or
            None without position gating.
        inv_degree: (N, 1) float, ``1 / max(in-degree over all types, 1)``.
        num_nodes: N.
        order: (E',) long, the sort: ``index[:, i]`` is typed edge ``order[i]``.
        inverse: (E',) long, ``order``'s inverse permutation.
        edge_index: (2, E') long, ``index`` in edge order (``index[:, inverse]``).
        meet: (2, M) long, ``[source; target]`` of the forward edges of the layer's ``meet_flow`` (the edges whose
            sources a node meets over), or None for a layer without a meet.
    """

    index: Tensor
    pos: Tensor | None
    inv_degree: Tensor
    num_nodes: int
    order: Tensor
    inverse: Tensor
    edge_index: Tensor
    meet: Tensor | None = None


class _GatedSum(torch.autograd.Function):
    """``out[v] = sum over typed edges (r -> v) of table[r] * gate`` with ProGraML's summation order, fast.

    Forward: one ``index_select`` of the table rows, one ``mul`` by the gates and one ``index_add_`` over the
    target-sorted edges (each target's terms added in edge order, as ``scatter_add_`` adds them). Backward: the
    gradients autograd computed for ``scatter_add_(index_select(table) * gate)`` in edge order, with the same
    operations (``gather`` of the output gradient, two ``mul``, ``index_add_`` into a zero table), so every
    table row's terms are summed in edge order too. Gates come (and their gradients go) in the sorted order.
    """

    @staticmethod
    def forward(ctx, table: Tensor, gates: Tensor | None, edges: TypedEdges) -> Tensor:  # type: ignore[override]
        rows = table.index_select(0, edges.index[0])
        messages = rows if gates is None else rows * gates
        out = table.new_zeros(edges.num_nodes, table.size(1)).index_add_(0, edges.index[1], messages)
        ctx.edges = edges
        ctx.table_rows = table.size(0)
        ctx.save_for_backward(rows if gates is not None and ctx.needs_input_grad[1] else None, gates)
        return out

    @staticmethod
    def backward(ctx, grad_out: Tensor):  # type: ignore[override]
        rows, gates = ctx.saved_tensors
        edges: TypedEdges = ctx.edges
        grad_table = grad_gates = None
        if ctx.needs_input_grad[1]:
            grad_gates = grad_out.index_select(0, edges.index[1]) * rows
        if ctx.needs_input_grad[0]:
            grad_messages = grad_out.index_select(0, edges.edge_index[1])
            if gates is not None:
                grad_messages = grad_messages * gates.index_select(0, edges.inverse)
            grad_table = grad_out.new_zeros(ctx.table_rows, grad_out.size(1)).index_add_(
                0, edges.edge_index[0], grad_messages
            )
        return grad_table, grad_gates, None


def _gru_update(gru: nn.GRUCell, inputs: Tensor, states: Tensor) -> Tensor:
    """``gru(inputs, states)``; under the CPU's bfloat16 autocast, in float32, which is faster there.

    Autocast runs ``GRUCell`` in bfloat16, and on the CPU its gates' ``tanh`` and ``sigmoid_`` then cost several times
    their float32 time: on an Intel Xeon with AMX the cell took 14.6 ms under autocast against 8.2 ms in float32
    ((10,000 x 34), one thread), more than the AMX products save, so bfloat16 inference was slower than float32
    (`docs/results.md` §4). The message map's products stay in bfloat16; the recurrence, whose states carry the
    result from step to step, keeps float32. Outside CPU autocast (float32, or a GPU's autocast) nothing changes.
    """
    if inputs.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        with torch.autocast("cpu", enabled=False):
            return gru(inputs.float(), states.float())
    return gru(inputs, states)


class TypedGGNNConv(MessagePassing):
    r"""ProGraML's typed GGNN layer (one message module + one GRU, applied ``num_steps`` times with shared weights).

    For every typed edge :math:`(u \to v, t, p)` (forward flows and, with ``backward_edges``, their reversals):

    .. math::
        m_{u \to v} = (W_t h_u + b_t) \odot g_p, \qquad
        g = 2\,\sigma(\mathrm{Linear}_{D \to D}(S)), \qquad
        a_v = \frac{1}{\max(1, \deg^-(v))} \sum_{u \to v} m_{u \to v}, \qquad
        h_v' = \mathrm{GRUCell}(a_v, h_v)

    where :math:`W_t, b_t` are chunk :math:`t` of one ``Linear(D, num_types * D)`` (Xavier-uniform weights, zero
    bias), :math:`S` is :func:`sinusoidal_position_table` (``max_position`` rows, ``D - position_pad`` sinusoidal
    columns and ``position_pad`` zero columns) and positions are clamped to ``[0, max_position - 1]``; the in-degree
    counts edges of all types. Without ``use_positions`` the gate is 1 (CDFG). Optional dropout is applied to the
    messages (``message_dropout``) and to the new state (``dropout``, ProGraML's ``graph_state_dropout``). With
    ``num_node_types > 1`` each node type has its own ``GRUCell`` (the classifyapp branch's ``use_node_types``).

    With ``meet_flow`` (not in the paper) the GRU's input also holds a *meet*, the per-channel
    minimum over a node's predecessors along the forward edges of that flow (:meth:`meet`):

    .. math::
        a_v \mathrel{+}= \min_{u \to v,\ \mathrm{flow}(u \to v) = f} (W_m h_u + b_m) \quad (0 \text{ without such
        predecessors})

    An analysis whose transfer intersects over control predecessors (dominance: a node is dominated by the root iff
    every predecessor is) needs "all", which a mean can only approximate: one undominated predecessor among four
    moves a mean by a quarter, a minimum all the way. :math:`W_m, b_m` start at zero, so a layer without a meet
    loads into one with it and computes the same states.

    Shapes:
        - **x**: (N, D) node states.
        - **edge_index**: (2, E) long, **edge_flow**: (E,) long in ``[0, num_flows)``, **edge_pos**: (E,) long.
        - **node_type**: (N,) long, only with ``num_node_types > 1``.
        - **output**: (N, D).

    Args:
        channels: State size D (34 for the data-flow GGNN: 32 text + 2 selector).
        num_flows: Forward edge types (3: control, data, call).
        backward_edges: Add a reversed type per flow (ProGraML's ``use_backward_edges``; on).
        use_positions: Gate messages by edge position (on for ProGraML, off for CDFG).
        position_pad: Zero columns at the end of the position table (2 = the selector dims of the data-flow GGNN).
        max_position: Rows of the position table (1024).
        edge_bias: Bias of the message map (``use_edge_bias``; on).
        dropout: Dropout on the new state.
        message_dropout: Dropout on messages.
        num_node_types: One GRU per node type when > 1.
        fused: Run :meth:`forward` with :mod:`programl.models.fused_ggnn`'s fused steps (the same function, faster
            on the CPU, rounded differently; only without dropout, with one GRU, outside autocast). None (default):
            on only where the environment sets ``PROGRAML_GGNN_FUSED=1``, so that a ``programl train`` run can use
            it without a model option; off otherwise.
        meet_flow: Add the meet over the forward edges of this flow (0: control); None (default): no meet, the
            paper's layer. The fused steps do not cover it.
    """

    def __init__(
        self,
        channels: int,
        num_flows: int = 3,
        *,
        backward_edges: bool = True,
        use_positions: bool = True,
        position_pad: int = 0,
        max_position: int = 1024,
        edge_bias: bool = True,
        dropout: float = 0.0,
        message_dropout: float = 0.0,
        num_node_types: int = 1,
        fused: bool | None = None,
        meet_flow: int | None = None,
    ) -> None:
        super().__init__(aggr="sum")
        if meet_flow is not None and not 0 <= meet_flow < num_flows:
            raise ValueError(f"meet_flow must be in [0, {num_flows}), got {meet_flow}")
        if not 0 <= position_pad <= channels:
            raise ValueError(f"position_pad must be in [0, {channels}], got {position_pad}")
        self.channels = channels
        self.num_flows = num_flows
        self.backward_edges = backward_edges
        self.num_types = num_flows * (2 if backward_edges else 1)
        self.use_positions = use_positions
        self.position_pad = position_pad
        self.max_position = max_position
        self.dropout = dropout
        self.message_dropout = message_dropout
        self.num_node_types = num_node_types
        self.fused = os.environ.get(FUSED_ENVIRONMENT) == "1" if fused is None else fused
        self.message_linear = nn.Linear(channels, self.num_types * channels, bias=edge_bias)
        if use_positions:
            table = sinusoidal_position_table(max_position, channels - position_pad, position_pad)
            self.register_buffer("position_table", table, persistent=False)
            self.position_linear = nn.Linear(channels, channels)
        else:
            self.register_buffer("position_table", None, persistent=False)
            self.position_linear = None
        self.grus = nn.ModuleList(nn.GRUCell(channels, channels) for _ in range(max(1, num_node_types)))
        self.meet_flow = meet_flow
        self.meet_linear = nn.Linear(channels, channels) if meet_flow is not None else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform weights and zero biases for the message and position maps; PyTorch's GRU init."""
        super().reset_parameters()
        nn.init.xavier_uniform_(self.message_linear.weight)
        if self.message_linear.bias is not None:
            nn.init.zeros_(self.message_linear.bias)
        if self.position_linear is not None:
            nn.init.xavier_uniform_(self.position_linear.weight)
            nn.init.zeros_(self.position_linear.bias)
        for gru in self.grus:
            gru.reset_parameters()
        if self.meet_linear is not None:  # zero: the meet adds nothing until trained
            nn.init.zeros_(self.meet_linear.weight)
            nn.init.zeros_(self.meet_linear.bias)

    # -- preparation (once per forward pass) --
    def typed_edges(self, edge_index: Tensor, edge_flow: Tensor, edge_pos: Tensor | None, num_nodes: int) -> TypedEdges:
        """Add backward edges, flatten (source, type) to rows of the message table, sort the edges by target (stable)
        and count in-degrees.

        Raises:
            ValueError: An edge flow is outside ``[0, num_flows)`` (e.g. TYPE edges of the development branch).
        """
        if edge_flow.numel() and (int(edge_flow.min()) < 0 or int(edge_flow.max()) >= self.num_flows):
            raise ValueError(
                f"edge flows must be in [0, {self.num_flows}); got {int(edge_flow.min())}..{int(edge_flow.max())}"
            )
        if self.use_positions and edge_pos is None:
            raise ValueError("this layer gates messages by position: edge_pos is required")
        pos = edge_pos if self.use_positions else None
        meet = edge_index[:, edge_flow == self.meet_flow] if self.meet_flow is not None else None
        if self.backward_edges:
            edge_index, edge_type, pos = add_backward_edges(edge_index, edge_flow, pos, self.num_flows)
        else:
            edge_type = edge_flow
        if pos is not None:
            pos = pos.clamp(0, self.max_position - 1)
        row = edge_index[0] * self.num_types + edge_type
        unsorted = torch.stack([row, edge_index[1]])
        order = torch.sort(edge_index[1], stable=True).indices
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(order.numel(), device=order.device)
        degree = torch.bincount(edge_index[1], minlength=num_nodes).clamp_(min=1)
        inv_degree = degree.reciprocal().to(self.message_linear.weight.dtype).unsqueeze(1)
        return TypedEdges(unsorted[:, order], pos, inv_degree, num_nodes, order, inverse, unsorted, meet)

    def position_gates(self) -> Tensor | None:
        """The gate table ``2 sigmoid(Linear(S))``, shape (max_position, D), or None without positions."""
        if self.position_linear is None:
            return None
        return 2.0 * torch.sigmoid(self.position_linear(self.position_table))

    def edge_gates(self, edges: TypedEdges) -> Tensor | None:
        """Per-edge gates ``g[p]``, shape (E', D), in the sorted order of ``edges.index``, or None without positions.

        Gathered in edge order and then permuted, so the gate table's gradient sums its terms in edge order.
        """
        gates = self.position_gates()
        return None if gates is None or edges.pos is None else gates[edges.pos].index_select(0, edges.order)

    def node_groups(self, node_type: Tensor | None, num_nodes: int) -> list[Tensor] | None:
        """Node indices per node type (for the per-type GRUs); None with a single GRU."""
        if len(self.grus) == 1:
            return None
        if node_type is None:
            raise ValueError("num_node_types > 1 needs node_type")
        node_type = node_type.clamp(0, len(self.grus) - 1)
        return [torch.nonzero(node_type == t, as_tuple=True)[0] for t in range(len(self.grus))]

    # -- one step --
    def step(self, x: Tensor, edges: TypedEdges, gates: Tensor | None, groups: list[Tensor] | None = None) -> Tensor:
        """One message-passing step: aggregate typed, gated messages and update the states with the GRU."""
        n, d = x.shape
        table = self.message_linear(x).view(n * self.num_types, d)
        if self.message_dropout and self.training:
            aggregated = self._dropout_messages(table, edges, gates)
        else:
            aggregated = _GatedSum.apply(table, gates, edges)
        aggregated = aggregated * edges.inv_degree
        if self.meet_linear is not None:
            aggregated = aggregated + self.meet(x, edges)
        if groups is None:
            new = _gru_update(self.grus[0], aggregated, x)
        else:
            new = x.new_zeros(x.shape)
            for gru, idx in zip(self.grus, groups, strict=True):
                if idx.numel():
                    new = new.index_copy(0, idx, _gru_update(gru, aggregated[idx], x[idx]))
        if self.dropout:
            new = F.dropout(new, p=self.dropout, training=self.training)
        return new

    def meet(self, x: Tensor, edges: TypedEdges) -> Tensor:
        """``min`` over each node's ``meet_flow`` predecessors ``u`` of ``W_m h_u + b_m``, per channel; 0 for a node
        without such predecessors (N, D). Ties share the gradient (``scatter_reduce``'s ``amin``)."""
        source, target = edges.meet
        values = self.meet_linear(x).index_select(0, source)
        out = x.new_zeros(x.shape)
        return out.scatter_reduce(0, target.unsqueeze(1).expand_as(values), values, "amin", include_self=False)

    def _dropout_messages(self, table: Tensor, edges: TypedEdges, gates: Tensor | None) -> Tensor:
        """The summed messages with dropout, in edge order (the dropout mask is drawn as before the sort)."""
        msg = table.index_select(0, edges.edge_index[0])
        if gates is not None:
            msg = msg * gates.index_select(0, edges.inverse)
        msg = F.dropout(msg, p=self.message_dropout, training=self.training)
        target = edges.edge_index[1].view(-1, 1).expand_as(msg)
        return msg.new_zeros(edges.num_nodes, msg.size(1)).scatter_add_(0, target, msg)

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_flow: Tensor,
        edge_pos: Tensor | None = None,
        node_type: Tensor | None = None,
        num_steps: int = 1,
    ) -> Tensor:
        """Apply the layer ``num_steps`` times with shared weights (shapes in the class docstring)."""
        edges = self.typed_edges(edge_index, edge_flow, edge_pos, x.size(0))
        if self.fused and self._can_fuse(x):
            return self._fused_forward(x, edges, num_steps)
        gates = self.edge_gates(edges)
        groups = self.node_groups(node_type, x.size(0))
        for _ in range(num_steps):
            x = self.step(x, edges, gates, groups)
        return x

    def _can_fuse(self, x: Tensor) -> bool:
        """The fused steps cover one GRU, no meet, no dropout in training and no autocast."""
        dropout = self.training and (self.dropout or self.message_dropout)
        plain = len(self.grus) == 1 and self.meet_linear is None
        return plain and not dropout and not torch.is_autocast_enabled(x.device.type)

    def _fused_forward(self, x: Tensor, edges: TypedEdges, num_steps: int) -> Tensor:
        """:func:`~programl.models.fused_ggnn.fused_steps` over ``edges`` (in-degree folded into the gates)."""
        row, target = edges.edge_index
        threads = torch.get_num_threads()
        parts = threads if x.device.type == "cpu" and threads <= MAX_PARTS else 1
        plan = fused_plan(row // self.num_types, target, row % self.num_types, self.num_types, x.size(0), parts)
        scale = edges.inv_degree.index_select(0, target.index_select(0, plan.order))
        gates = self.position_gates()
        if gates is None or edges.pos is None:
            gates = scale.expand(-1, x.size(1)).contiguous()
        else:
            gates = gates[edges.pos.index_select(0, plan.order)] * scale
        return fused_steps(x, plan, gates, self.message_linear, self.grus[0], num_steps)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}({self.channels}, num_types={self.num_types}, "
            f"positions={self.use_positions}, grus={len(self.grus)}"
            + (f", meet_flow={self.meet_flow})" if self.meet_flow is not None else ")")
        )
