"""A data-flow node classifier shaped like the analysis it learns, which halts at its fixed point (not in the paper;
docs/spec/models.md#fixpoint-model).

The paper's GGNN keeps a 34-wide state per node and runs a fixed T steps; on a function of 20,000 nodes it neither
knows when to stop nor keeps a fact alive over thousands of steps. :class:`DataflowFixpoint` follows the analyses
instead (the lesson of DFA-GNN, ISSTA 2025: one state slot per fact, an aggregation that is the analysis's meet, a
simple update, as many iterations as the input needs):

* **one bit per node** (for one root): whether the node holds the fact;
* ``h0 = root OR gen`` (the analysis starts at its root); each step
  ``h_v = gen_v OR (pass_v AND meet over v's incoming typed edges of h_u)``, where ``meet`` is the analysis's:
  ``any`` (some selected neighbour holds it: reachability, data dependence), ``all`` (every selected neighbour holds
  it, and there is one: dominance) or ``mixed`` (``all`` at an instruction, ``any`` elsewhere: subexpressions, where
  an instruction matches the root when all its operands are the root's);
* the label is ``out_v AND h_v``.

What is **fixed** is this form and the meet (chosen per analysis, as DFA-GNN's framework fixes it). What is
**learned** from the labels: ``gen`` (which nodes hold the fact before any step), ``pass`` (which take it from their
neighbours), ``out`` (which are labelled when they hold it), each a small network of the node's text, type and root
flag (and, with ``root_text``, whether its text is the root's), and which of the six edge kinds (control, data,
call, each forward and reversed; with ``gate_by_type``, per node type of the edge's target) carry it.

Training runs the update with probabilities for the batch's step count: the gates are sigmoids, ``any`` the
largest ``gate * h_u``, ``all`` the smallest ``1 - gate * (1 - h_u)`` (an edge of an unselected kind does not
constrain it) times the largest gate, ``OR`` the maximum. Maxima and minima never raise a probability above its
sources', so a fact cannot grow out of nothing around a loop, as it would under a noisy-or. Inference
(:meth:`DataflowFixpoint.forward_until_stable`) thresholds the learned gates once and iterates bits until no bit
changes: the iteration only sets bits (every gate is fixed and both meets are monotone), so it reaches its fixed
point in at most N + 1 steps whatever the weights, and stops exactly there: no patience, no cap that leaves nodes
unlabelled. On a graph whose labels it has learned, the steps it takes are the analysis's own synchronous rounds.

Example:
    >>> import torch
    >>> from torch_geometric.data import Data
    >>> model = DataflowFixpoint(vocabulary_size=10, meet="any")
    >>> chain = Data(x=torch.zeros(4, dtype=torch.long), root=torch.tensor([1, 0, 0, 0]),
    ...              node_type=torch.zeros(4, dtype=torch.long), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
    ...              edge_flow=torch.zeros(3, dtype=torch.long), edge_pos=torch.zeros(3, dtype=torch.long))
    >>> logits, steps = model.forward_until_stable(chain)
    >>> logits.shape, int(steps[0]) <= 5
    (torch.Size([4, 2]), True)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data

__all__ = ["MEETS", "DataflowFixpoint"]

#: The meets a :class:`DataflowFixpoint` takes: some selected neighbour (``any``), every one (``all``), or ``all``
#: at an instruction and ``any`` elsewhere (``mixed``: an instruction takes the fact when all its operands hold it).
MEETS = ("any", "all", "mixed")
#: ``Node.Type`` values (instruction, variable, constant, type) and the edge kinds (3 flows, forward and reversed).
_NODE_TYPES = 4
_NUM_FLOWS = 3
_EDGE_KINDS = 2 * _NUM_FLOWS
#: Logit of a hard bit (inference) and the probability clamp of the soft one (training).
_HARD_LOGIT = 20.0
_EPS = 1e-6


def same_text_as_root(data: Data) -> Tensor:
    """(N,) bool: whether each node's text id is its graph's root's (the roots of a batch, one per graph)."""
    batch = getattr(data, "batch", None)
    if batch is None:
        batch = torch.zeros_like(data.x)
    graphs = int(batch.max()) + 1 if batch.numel() else 0
    is_root = data.root > 0
    root_text = torch.full((graphs,), -1, dtype=data.x.dtype, device=data.x.device)
    root_text[batch[is_root]] = data.x[is_root]
    return data.x == root_text[batch]


class _NodeGate(nn.Module):
    """A per-node probability from ``[text embedding ; node type ; root flag]``: two layers, ``bias`` at first."""

    def __init__(self, in_features: int, hidden: int, bias: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        nn.init.constant_(self.net[2].bias, bias)

    def forward(self, features: Tensor) -> Tensor:
        return self.net(features).squeeze(-1)  # logits (N,)


class DataflowFixpoint(nn.Module):
    """See the module docstring (docs/spec/models.md#fixpoint-model).

    Args:
        vocabulary_size: ``len(vocabulary)``; the embedding has one more row for the OOV id.
        meet: ``"any"`` or ``"all"`` (:data:`MEETS`).
        embedding_dim: Text embedding width (16).
        hidden: Width of the three node gates' hidden layer (32).
        num_steps: Default steps of :meth:`forward` (training; inference runs to the fixed point).

    Takes the ``Data``/``Batch`` of :func:`programl.io.pyg.to_pyg` with labels (``x``, ``node_type``, ``root``,
    ``edge_index``, ``edge_flow``) and returns (N, 2) logits, like :class:`~programl.models.DataflowGGNN`.
    """

    def __init__(
        self,
        vocabulary_size: int,
        *,
        meet: str = "any",
        gate_by_type: bool = False,
        root_text: bool = False,
        gate_cost: float = 0.0,
        embedding_dim: int = 16,
        hidden: int = 32,
        num_steps: int = 30,
    ) -> None:
        super().__init__()
        if vocabulary_size < 0:
            raise ValueError(f"vocabulary_size must be >= 0, got {vocabulary_size}")
        if meet not in MEETS:
            raise ValueError(f"meet must be one of {', '.join(MEETS)}, got {meet!r}")
        if num_steps < 0:
            raise ValueError(f"num_steps must be >= 0, got {num_steps}")
        if gate_cost < 0:
            raise ValueError(f"gate_cost must be >= 0, got {gate_cost}")
        self.vocabulary_size, self.meet, self.num_steps = vocabulary_size, meet, num_steps
        self.gate_by_type, self.root_text = gate_by_type, root_text
        #: Added to the loss times the mean open probability of the edge gates: of two gate settings that fit the
        #: labels alike, the one with fewer open edges costs less (a gate no label needs closes).
        self.gate_cost = gate_cost
        self.embedding = nn.Embedding(vocabulary_size + 1, embedding_dim)
        features = embedding_dim + _NODE_TYPES + 1 + int(root_text)
        self.gen = _NodeGate(features, hidden, -4.0)
        self.passes = _NodeGate(features, hidden, 2.0)
        self.out = _NodeGate(features, hidden, 2.0)
        #: One logit per edge kind (control, data, call; then the same reversed), or per edge kind and node type of
        #: the edge's target: whether facts travel along it. One per kind starts open (the fact floods, then the
        #: loss closes the gates it should not pass); one per kind and type starts closed (open, an instruction's
        #: ``all`` would wait on neighbours of every kind, which never hold the fact, and learn nothing).
        shape = (_EDGE_KINDS, _NODE_TYPES) if gate_by_type else (_EDGE_KINDS,)
        self.edge_gate = nn.Parameter(torch.full(shape, -2.0 if gate_by_type else 2.0))

    # ------------------------------------------------------------------------------------------------- pieces
    def _node_logits(self, data: Data) -> tuple[Tensor, Tensor, Tensor]:
        """The (N,) logits of ``gen``, ``pass`` and ``out``."""
        dtype = self.embedding.weight.dtype
        node_type = data.node_type.clamp(0, _NODE_TYPES - 1)
        root = data.root.to(dtype).unsqueeze(-1)
        parts = [self.embedding(data.x), F.one_hot(node_type, _NODE_TYPES).to(dtype), root]
        if self.root_text:
            parts.append(same_text_as_root(data).to(dtype).unsqueeze(-1))
        features = torch.cat(parts, dim=-1)
        return self.gen(features), self.passes(features), self.out(features)

    def _any_meet(self, data: Data) -> Tensor:
        """(N,) bool: the nodes whose meet is ``any`` (the others' is ``all``)."""
        if self.meet == "mixed":
            return data.node_type != 0
        return torch.full_like(data.node_type, self.meet == "any", dtype=torch.bool)

    def _edge_gate_logits(self, data: Data, dst: Tensor, kind: Tensor) -> Tensor:
        """The gate logit of every typed edge: its kind's, or its kind's for the node type of its target."""
        if not self.gate_by_type:
            return self.edge_gate[kind]
        return self.edge_gate[kind, data.node_type.clamp(0, _NODE_TYPES - 1)[dst]]

    @staticmethod
    def _typed_edges(data: Data) -> tuple[Tensor, Tensor, Tensor]:
        """(source, target, kind) of every edge and its reversal (kind ``flow`` forward, ``3 + flow`` reversed)."""
        src, dst = data.edge_index
        flow = data.edge_flow.clamp(0, _NUM_FLOWS - 1)
        return torch.cat([src, dst]), torch.cat([dst, src]), torch.cat([flow, flow + _NUM_FLOWS])

    # ------------------------------------------------------------------------------------------------- training
    def forward(self, data: Data, num_steps: int | None = None) -> Tensor:
        """Node logits (N, 2) after ``num_steps`` soft steps (default :attr:`num_steps`); it stops early once no
        probability moves by more than 1e-4. The loss of training and the logits of a fixed T."""
        steps = self.num_steps if num_steps is None else num_steps
        gen_logit, pass_logit, out_logit = self._node_logits(data)
        gen, keep, out = torch.sigmoid(gen_logit), torch.sigmoid(pass_logit), torch.sigmoid(out_logit)
        src, dst, kind = self._typed_edges(data)
        gate = torch.sigmoid(self._edge_gate_logits(data, dst, kind))
        gen = torch.maximum(gen, data.root.to(gen.dtype))  # the analysis starts at its root
        n = gen.size(0)
        if self.meet != "any":  # "there is a selected neighbour": the largest gate
            has = gen.new_zeros(n).scatter_reduce(0, dst, gate, reduce="amax", include_self=False)
        some = self._any_meet(data).to(gen.dtype) if self.meet == "mixed" else None
        h = gen
        for _ in range(steps):
            aggregates = []
            if self.meet != "all":
                largest = h.new_zeros(n).scatter_reduce(0, dst, gate * h[src], reduce="amax", include_self=False)
                aggregates.append(largest)
            if self.meet != "any":  # an unselected edge (gate 0) sends 1 and so does not constrain the minimum
                message = 1.0 - gate * (1.0 - h[src])
                smallest = h.new_ones(n).scatter_reduce(0, dst, message, reduce="amin", include_self=False)
                aggregates.append(has * smallest)
            agg = aggregates[0] if some is None else some * aggregates[0] + (1.0 - some) * aggregates[1]
            new = torch.maximum(gen, keep * agg)
            moved = float((new - h).detach().abs().max()) if n else 0.0
            h = new
            if moved < 1e-4:
                break
        p = (out * h).clamp(_EPS, 1.0 - _EPS)
        logit = torch.log(p) - torch.log1p(-p)
        return torch.stack([torch.zeros_like(logit), logit], dim=-1)

    def loss(self, logits: Tensor, y: Tensor) -> Tensor:
        """Cross-entropy averaged over the true nodes and over the false ones, the two means added: an analysis
        labels few nodes (datadep: 2 of 600 is common), and a plain mean is then lowest by closing every gate; plus
        ``gate_cost`` times the edge gates' mean open probability."""
        each = F.cross_entropy(logits, y, reduction="none")
        positive = y == 1
        total = each.new_zeros(())
        for part in (positive, ~positive):
            if bool(part.any()):
                total = total + each[part].mean()
        if self.gate_cost:
            total = total + self.gate_cost * torch.sigmoid(self.edge_gate).mean()
        return total

    # ------------------------------------------------------------------------------------------------- inference
    @torch.no_grad()
    def fixpoint(self, data: Data) -> tuple[Tensor, Tensor, Tensor]:
        """The hard iteration: ``(labels (N,) bool, steps (G,) per graph, rounds (G,))``.

        The gates are thresholded once (logit > 0); then ``h = root | gen``, and each step
        ``h = gen | (pass & meet(h))`` over the selected edge kinds, for every graph of the batch until none of its bits
        changes. ``steps`` counts
        every step a graph ran, the last (which changed nothing) included; ``rounds`` the steps that changed a bit.
        """
        gen_logit, pass_logit, out_logit = self._node_logits(data)
        gen, keep, out = (gen_logit > 0) | (data.root > 0), pass_logit > 0, out_logit > 0
        src, dst, kind = self._typed_edges(data)
        chosen = self._edge_gate_logits(data, dst, kind) > 0
        src, dst = src[chosen], dst[chosen]
        n = gen.size(0)
        batch = getattr(data, "batch", None)
        if batch is None:
            batch = torch.zeros(n, dtype=torch.long, device=gen.device)
        graphs = int(batch.max()) + 1 if n else 0
        indegree = torch.zeros(n, dtype=torch.long, device=gen.device).index_add_(0, dst, torch.ones_like(dst))
        some = self._any_meet(data)
        h = gen.clone()
        steps = torch.zeros(graphs, dtype=torch.long, device=gen.device)
        rounds = torch.zeros(graphs, dtype=torch.long, device=gen.device)
        running = torch.ones(graphs, dtype=torch.bool, device=gen.device)
        for _ in range(n + 1):  # bits are only ever set: the fixed point comes within N + 1 steps
            count = torch.zeros(n, dtype=torch.long, device=gen.device).index_add_(0, dst, h[src].long())
            agg = torch.where(some, count > 0, (indegree > 0) & (count == indegree))
            new = gen | (keep & agg)
            changed = torch.zeros(graphs, dtype=torch.long, device=gen.device).index_add_(0, batch, (new != h).long())
            steps += running.long()
            rounds += (changed > 0).long()
            running = changed > 0
            h = new
            if not bool(running.any()):
                break
        return out & h, steps, rounds

    @torch.no_grad()
    def forward_until_stable(self, data: Data, **_bounds) -> tuple[Tensor, Tensor]:
        """Node logits (N, 2) at the fixed point (:meth:`fixpoint`) and the steps each graph took: the call the
        step-free GGNN answers, so evaluation and prediction run either model. Its bounds (``min_steps``,
        ``max_steps``, ``patience``, ``latch``) do not apply: this model stops at its fixed point."""
        labels, steps, _ = self.fixpoint(data)
        logit = torch.where(labels, _HARD_LOGIT, -_HARD_LOGIT).to(self.embedding.weight.dtype)
        return torch.stack([torch.zeros_like(logit), logit], dim=-1), steps

    @torch.no_grad()
    def forward_until_stable_each(self, data: Data, *, patiences=(3,), **_bounds) -> dict[int, tuple[Tensor, Tensor]]:
        """:meth:`forward_until_stable` under each patience of ``patiences`` (the step-free GGNN's way of choosing
        one; here every patience gives the same fixed point)."""
        result = self.forward_until_stable(data)
        return {patience: result for patience in patiences}
