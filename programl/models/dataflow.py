"""Node classifiers for the DeepDataFlow analyses (docs/spec/models.md#data-flow-ggnn,
docs/spec/models.md#graph-tensors).

:class:`DataflowGGNN` is ProGraML's GGNN exactly as configured for the paper (``flags/programl.txt``):

* input ``h0_v = [E_text[x_v] ; S[root_v]]``: a trainable (|V|+1) x 32 text embedding (N(0, 1) init; row |V| is the
  OOV id) and the fixed selector table ``S = [[50, 0], [0, 50]]`` -> D = 34;
* one :class:`~programl.models.ggnn.TypedGGNNConv` (6 edge types, position gating, mean aggregation, GRUCell)
  applied for T = 30 steps with shared weights (T can be raised at inference, e.g. 60 or 200);
* gated readout ``sigmoid(Linear_{2D->2}([h0; hT])) * Linear_{D->2}(hT)`` -> 2 logits per node; CE loss.

With a 2,230-entry vocabulary it has 87,070 parameters: embedding 2,231 x 32 = 71,392; message map 34 x 204 + 204 =
7,140; position map 34 x 34 + 34 = 1,190; GRUCell 7,140; readout 138 + 70.

:class:`DataflowRGCN` is a drop-in alternative with the same embedding, selector, recurrence and readout, whose
message function is torch-geometric's :class:`~torch_geometric.nn.conv.RGCNConv` over the same 6 edge types (per-type
mean, a root weight, no position gating).

Both take a :class:`torch_geometric.data.Data`/``Batch`` made by :func:`programl.io.pyg.to_pyg` with labels
(``x``, ``root``, ``edge_index``, ``edge_flow``, ``edge_pos``) and return (N, 2) logits.

``root_context=True`` (not in the paper; reported beside the faithful model, never instead of it) adds
:class:`~programl.models.readout.RootContextReadout` to the readout: each node also reads its graph's root states.
Why: the faithful subexpressions model's false positives are mostly instructions of *another* opcode that share an
operand with the root (1,685 of 1,780 on validation; a store root, 30 loads of the same global flagged): under mean
aggregation the root's text reaches them averaged with every other user of that operand, so "same opcode as the
root" cannot be told apart once an operand has many users. The extra term is zero at initialisation, so a faithful
checkpoint loads into it (``init_from_missing_ok``) and starts out computing the same logits.

``control_floods=True`` (not in the paper; shipped as ``liveness-floods``) adds to each
node's text embedding four learned vectors, scaled like the selector, where the node lies after / before the root
along control flow, with and without the loops' back edges (:mod:`programl.models.control_floods`). Why: a
30-step GGNN cannot tell a use after the root from one before it on a large function, which is where liveness
failed (F1 0.83 on graphs over 500 nodes; 0.976 with the floods). The vectors start at zero, so a faithful
checkpoint starts from its own logits.

``meet=True`` (not in the paper) gives the layer a meet over control predecessors
(:class:`~programl.models.ggnn.TypedGGNNConv`'s ``meet_flow=0``): each step's input also holds the per-channel
minimum of a learned map of the node's control predecessors' states. Why: dominance intersects over control
predecessors (a node is dominated iff every predecessor is), and the step-free dominance model's errors that no
halting rule fixes were joins where three predecessors of four were dominated, predicted dominated (the mean
outvotes the one that is not; DFA-Net's meet functions, Brauckmann et al., CC 2025). The map starts at zero, so a
checkpoint without it starts from its own logits.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import RGCNConv

from programl.models.control_floods import control_floods
from programl.models.ggnn import TypedGGNNConv, add_backward_edges
from programl.models.readout import GatedReadout, RootContextReadout

__all__ = ["DataflowGGNN", "DataflowRGCN"]


class _DataflowNodeClassifier(nn.Module):
    """Shared input embedding, readout and loss of the data-flow node classifiers."""

    def __init__(
        self,
        vocabulary_size: int,
        *,
        embedding_dim: int,
        selector_value: float,
        num_steps: int,
        output_dropout: float,
        class_weight: tuple[float, float] | None,
        root_context: bool = False,
        control_floods: bool = False,
    ) -> None:
        super().__init__()
        if vocabulary_size < 0:
            raise ValueError(f"vocabulary_size must be >= 0, got {vocabulary_size}")
        if num_steps < 0:
            raise ValueError(f"num_steps must be >= 0, got {num_steps}")
        self.vocabulary_size = vocabulary_size
        self.num_steps = num_steps
        self.channels = embedding_dim + 2
        self.embedding = nn.Embedding(vocabulary_size + 1, embedding_dim)  # default init: N(0, 1)
        selector = torch.tensor([[selector_value, 0.0], [0.0, selector_value]])
        self.register_buffer("selector_table", selector, persistent=False)
        self.readout = GatedReadout(self.channels, 2, dropout=output_dropout)
        weight = torch.tensor(class_weight, dtype=torch.float32) if class_weight is not None else None
        self.register_buffer("class_weight", weight, persistent=False)
        self.root_context = RootContextReadout(self.channels, 2) if root_context else None
        # four vectors added to the text embedding where a node lies after / before the root along control flow
        # (with and without the loops' back edges: control_floods),
        # scaled like the selector so that they grow at the rate of the embedding's own scale; zero at first
        self.flood_embedding = nn.Parameter(torch.zeros(4, embedding_dim)) if control_floods else None
        self.flood_gain = selector_value
        #: Where the floods come from when a batch has none (None: computed exactly); not part of the weights.
        self.flood_source = None

    #: Parameters that a checkpoint of the faithful model lacks and that start at zero effect (``--init-from``).
    init_from_missing_ok = ("root_context.", "flood_embedding", "conv.meet_linear.")

    def embed(self, x: Tensor, root: Tensor) -> Tensor:
        """``h0 = [E_text[x] ; S[root]]``: (N,) ids and (N,) 0/1 selectors -> (N, D)."""
        return torch.cat([self.embedding(x), self.selector_table[root]], dim=-1)

    def inputs(self, data: Data) -> Tensor:
        """The input states ``h0`` of a batch: :meth:`embed`, and with ``control_floods`` (not in the paper; issue
        36 item 3) ``E_text[x] + gain * floods @ W_flood`` in the text part, where the four ``floods`` say whether the
        node lies after / before the root along control flow, with and without the loops' back edges
        (:func:`~programl.models.control_floods.control_floods`, exact, unless the batch carries its own
        ``control_floods`` or :attr:`flood_source` is set, e.g. to a
        :class:`~programl.models.control_floods.LearnedControlFloods`)."""
        if self.flood_embedding is None:
            return self.embed(data.x, data.root)
        floods = getattr(data, "control_floods", None)
        if floods is None and self.flood_source is not None:
            floods = self.flood_source(data)
        if floods is None:
            floods = control_floods(data.edge_index, data.edge_flow, data.root)
        text = self.embedding(data.x) + self.flood_gain * (floods.to(self.flood_embedding.dtype) @ self.flood_embedding)
        return torch.cat([text, self.selector_table[data.root]], dim=-1)

    def propagate_states(self, h0: Tensor, data: Data, num_steps: int) -> Tensor:  # pragma: no cover - abstract
        """The node states after ``num_steps`` message-passing steps from ``h0``: (N, D) -> (N, D)."""
        raise NotImplementedError

    def forward(self, data: Data, num_steps: int | None = None) -> Tensor:
        """Node logits (N, 2) of a ``Data``/``Batch`` with ``x``, ``root``, ``edge_index``, ``edge_flow``, ``edge_pos``.

        Args:
            data: The (batched) example(s).
            num_steps: Message-passing steps; default :attr:`num_steps` (30).
        """
        h0 = self.inputs(data)
        hT = self.propagate_states(h0, data, self.num_steps if num_steps is None else num_steps)
        logits = self.readout(h0, hT)
        if self.root_context is not None:
            logits = logits + self.root_context(h0, hT, data.root, getattr(data, "batch", None))
        return logits

    def loss(self, logits: Tensor, y: Tensor) -> Tensor:
        """Cross-entropy averaged over all nodes (class weights only when ``class_weight`` was given)."""
        return F.cross_entropy(logits, y, weight=self.class_weight)


class DataflowGGNN(_DataflowNodeClassifier):
    """ProGraML's data-flow GGNN (docs/spec/models.md#data-flow-ggnn); see the module docstring.

    Args:
        vocabulary_size: ``len(vocabulary)``; the embedding has one more row for the OOV id.
        embedding_dim: Text embedding width (32); the state is 2 wider (selector).
        selector_value: The selector table's non-zero value (50).
        num_steps: Default number of message-passing steps T (30).
        use_positions: Position gating (on; off for the CDFG baseline).
        backward_edges: Reversed edge types (on).
        num_flows: Forward edge types (3).
        dropout: ``graph_state_dropout`` on each new state (0 in the paper's flag file).
        output_dropout: Dropout on the readout (0).
        class_weight: Cross-entropy class weights; ProGraML's ``loss_weighting`` w != 0.5 means ``(1 - w, w)``.
        max_position: Rows of the position table (1024).
        root_context: Add :class:`~programl.models.readout.RootContextReadout` (off: the paper's model).
        control_floods: Read whether each node lies after / before the root along control flow (:meth:`inputs`;
            off: the paper's model).
        meet: A meet (per-channel minimum) over each node's control predecessors in every step (off: the paper's
            model; the fused steps do not cover it).
        fused: The layer's fused steps (:mod:`programl.models.fused_ggnn`: the same function, faster on the CPU, not
            bit-identical to the faithful path). None: as the environment's ``PROGRAML_GGNN_FUSED`` says (off
            unless it is 1). Not part of the weights: a checkpoint loads either way.

    Example:
        >>> model = DataflowGGNN(vocabulary_size=2230)
        >>> sum(p.numel() for p in model.parameters())
        87070
    """

    def __init__(
        self,
        vocabulary_size: int,
        *,
        embedding_dim: int = 32,
        selector_value: float = 50.0,
        num_steps: int = 30,
        use_positions: bool = True,
        backward_edges: bool = True,
        num_flows: int = 3,
        dropout: float = 0.0,
        output_dropout: float = 0.0,
        class_weight: tuple[float, float] | None = None,
        max_position: int = 1024,
        root_context: bool = False,
        control_floods: bool = False,
        meet: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            vocabulary_size,
            embedding_dim=embedding_dim,
            selector_value=selector_value,
            num_steps=num_steps,
            output_dropout=output_dropout,
            class_weight=class_weight,
            root_context=root_context,
            control_floods=control_floods,
        )
        self.conv = TypedGGNNConv(
            self.channels,
            num_flows,
            backward_edges=backward_edges,
            use_positions=use_positions,
            position_pad=2,
            max_position=max_position,
            dropout=dropout,
            fused=fused,
            meet_flow=0 if meet else None,
        )

    def propagate_states(self, h0: Tensor, data: Data, num_steps: int) -> Tensor:
        """Run the shared layer for ``num_steps`` steps from ``h0``: (N, D) -> (N, D)."""
        edge_pos = data.edge_pos if self.conv.use_positions else None
        return self.conv(h0, data.edge_index, data.edge_flow, edge_pos, num_steps=num_steps)

    @torch.no_grad()
    def forward_until_stable(
        self,
        data: Data,
        *,
        min_steps: int | None = None,
        max_steps: int = 200,
        patience: int = 3,
        latch: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """Node logits with a step count per graph: message passing runs on until the graph's predictions stop
        changing, as the analysis runs to its fixed point (inference only, not the paper's).

        Every graph takes at least ``min_steps`` steps (default: :attr:`num_steps`, the T it was trained at) and at
        most ``max_steps``; after ``min_steps`` it halts once no node's predicted class has changed for
        ``patience`` consecutive steps, and its states stay as they were then (the other graphs of the batch go
        on). With ``max_steps == min_steps`` this is :meth:`forward` at that T.

        ``latch`` (for an analysis whose true set only grows as it iterates, such as reachability): after
        ``min_steps`` a node keeps the logits of the step at which it was most confidently true, so a node once
        predicted true stays true, as the analysis never takes a fact back; "changed" then means a node turned true.
        The recurrence was trained over at most a few hundred steps, and run for thousands its predicted set can
        shrink again after the wavefront passed (reachability-step-free did on the longest kernels).

        Returns:
            The (N, 2) logits and the (G,) steps each graph of the batch took.
        """
        return self.forward_until_stable_each(
            data, min_steps=min_steps, max_steps=max_steps, patiences=(patience,), latch=latch
        )[patience]

    @torch.no_grad()
    def logits_each_step(self, data: Data, max_steps: int):
        """Yield the node logits (N, 2) after each step 1, 2, ..., ``max_steps`` of one pass (the logits of step T
        are :meth:`forward` at T): for recording how a model's predictions evolve step by step
        (``studies/dataflow_steps.py``: telling an early halt from drift from a node never right)."""
        h, step, logits_of = self._stepping(data, getattr(data, "batch", None))
        for _ in range(max_steps):
            h = step(h)
            yield logits_of(h)

    def _stepping(self, data: Data, batch: Tensor | None):
        """One pass's pieces, the edges and gates prepared once: the input states ``h0``, ``step(h)`` (one
        message-passing step) and ``logits_of(h)`` (the readout, with the root's context where the model has it)."""
        h0 = self.inputs(data)
        edge_pos = data.edge_pos if self.conv.use_positions else None
        edges = self.conv.typed_edges(data.edge_index, data.edge_flow, edge_pos, h0.size(0))
        gates = self.conv.edge_gates(edges)

        def step(h: Tensor) -> Tensor:
            return self.conv.step(h, edges, gates)

        def logits_of(h: Tensor) -> Tensor:
            out = self.readout(h0, h)
            if self.root_context is not None:
                out = out + self.root_context(h0, h, data.root, batch)
            return out

        return h0, step, logits_of

    @torch.no_grad()
    def forward_until_stable_each(
        self,
        data: Data,
        *,
        min_steps: int | None = None,
        max_steps: int = 200,
        patiences=(3,),
        latch: bool = False,
    ) -> dict[int, tuple[Tensor, Tensor]]:
        """:meth:`forward_until_stable` at several patiences in one pass: ``{patience: (logits, steps)}``, each
        exactly what :meth:`forward_until_stable` gives at that patience (a graph's logits are taken when it halts
        at that patience; the pass runs on until every graph halted at the largest). For choosing the patience
        on a validation split without one pass per candidate."""
        min_steps = self.num_steps if min_steps is None else min_steps
        patiences = sorted(set(patiences))
        if not 0 <= min_steps <= max_steps or not patiences or patiences[0] < 1:
            raise ValueError(
                f"need 0 <= min_steps <= max_steps and patience >= 1: {min_steps}, {max_steps}, {patiences}"
            )
        batch = getattr(data, "batch", None)
        if batch is None:
            batch = data.x.new_zeros(data.x.size(0))
        graphs = int(batch.max()) + 1 if batch.numel() else 0
        h, step, logits_of = self._stepping(data, batch)
        for _ in range(min_steps):
            h = step(h)

        def margin(out: Tensor) -> Tensor:  # (N, 1): how much more true than false
            return (out[:, 1] - out[:, 0]).unsqueeze(1)

        logits = best = logits_of(h)
        predicted = logits.argmax(-1)
        # per patience: its steps, whether halted, and (below the largest) the logits kept, a halted graph's rows as
        # they were when it halted; at the largest a halted graph's states stay as they are, so its rows of the last
        # logits are the ones it halted with
        kept = {p: logits.clone() for p in patiences[:-1]}
        steps = {p: torch.full((graphs,), min_steps, dtype=torch.long, device=h.device) for p in patiences}
        halted = {p: torch.zeros(graphs, dtype=torch.bool, device=h.device) for p in patiences}
        last = patiences[-1]
        quiet = torch.zeros(graphs, dtype=torch.long, device=h.device)
        for _ in range(max_steps - min_steps):
            running = ~halted[last][batch]
            h = torch.where(running.unsqueeze(1), step(h), h)
            logits = logits_of(h)
            if latch:  # each node's most confident true so far (a true prediction is never taken back)
                logits = torch.where(margin(logits) > margin(best), logits, best)
                best = logits
            now = logits.argmax(-1)
            flips = torch.zeros(graphs, dtype=torch.long, device=h.device).index_add_(
                0, batch, (now != predicted).long()
            )
            predicted = now
            quiet = torch.where(flips > 0, torch.zeros_like(quiet), quiet + 1)
            for p in patiences:
                going = ~halted[p]
                if p in kept:
                    kept[p] = torch.where(going[batch].unsqueeze(1), logits, kept[p])
                steps[p] += going.long()
                halted[p] |= quiet >= p
            if bool(halted[last].all()):
                break
        kept[last] = logits
        return {p: (kept[p], steps[p]) for p in patiences}


class DataflowRGCN(_DataflowNodeClassifier):
    r"""Drop-in alternative to :class:`DataflowGGNN` with an R-GCN message function.

    Same input embedding, recurrence (``GRUCell``, shared weights for T steps) and gated readout; the aggregated
    message is PyG's :class:`~torch_geometric.nn.conv.RGCNConv` over the 6 edge types (3 flows + reversed):

    .. math::
        a_v = \Theta_{root} h_v + \sum_t \frac{1}{|N_t(v)|} \sum_{u \in N_t(v)} \Theta_t h_u + b,
        \qquad h_v' = \mathrm{GRUCell}(a_v, h_v)

    Edge positions are not used. Runs without compiled PyG extensions (RGCNConv falls back to a loop over types).

    ``vocabulary_size``, ``embedding_dim``, ``selector_value``, ``num_steps``, ``dropout``, ``output_dropout``,
    ``class_weight``, ``num_flows`` and ``backward_edges`` are as for :class:`DataflowGGNN`.

    Args:
        num_bases: Basis decomposition of the relation weights (None = a full matrix per type).
    """

    def __init__(
        self,
        vocabulary_size: int,
        *,
        embedding_dim: int = 32,
        selector_value: float = 50.0,
        num_steps: int = 30,
        backward_edges: bool = True,
        num_flows: int = 3,
        dropout: float = 0.0,
        output_dropout: float = 0.0,
        class_weight: tuple[float, float] | None = None,
        num_bases: int | None = None,
    ) -> None:
        super().__init__(
            vocabulary_size,
            embedding_dim=embedding_dim,
            selector_value=selector_value,
            num_steps=num_steps,
            output_dropout=output_dropout,
            class_weight=class_weight,
        )
        self.num_flows = num_flows
        self.backward_edges = backward_edges
        num_relations = num_flows * (2 if backward_edges else 1)
        self.conv = RGCNConv(self.channels, self.channels, num_relations, num_bases=num_bases, aggr="mean")
        self.gru = nn.GRUCell(self.channels, self.channels)
        self.dropout = dropout

    def propagate_states(self, h0: Tensor, data: Data, num_steps: int) -> Tensor:
        """Run the R-GCN message function and the GRU for ``num_steps`` steps from ``h0``: (N, D) -> (N, D)."""
        edge_index, edge_type = data.edge_index, data.edge_flow
        if edge_type.numel() and int(edge_type.max()) >= self.num_flows:
            raise ValueError(f"edge flows must be in [0, {self.num_flows}); got {int(edge_type.max())}")
        if self.backward_edges:
            edge_index, edge_type, _ = add_backward_edges(edge_index, edge_type, None, self.num_flows)
        h = h0
        for _ in range(num_steps):
            h = self.gru(self.conv(h, edge_index, edge_type), h)
            if self.dropout:
                h = F.dropout(h, p=self.dropout, training=self.training)
        return h
