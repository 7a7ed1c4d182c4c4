"""The two control-flow floods of a root: what it reaches and what reaches it (issue 36 item 3; SPEC §4.2, §4.5).

Liveness is a question about control paths (SPEC §4.5): a value is live out of the root when a path of control flow
leads from the root to a use of it without passing its definition again. A GGNN run for T steps sees T hops around
the root, so on a large function it cannot tell a use that lies after the root from one that lies before it, and
that is where the faithful liveness model fails: on the validation split's graphs of more than 500 nodes, 93 % of its
errors are values whose nearest use the root does or does not reach along control flow (measured in
``docs/results.md`` §5 "Liveness over the control floods").

:func:`control_floods` computes the two relations the analysis walks, exactly, for a batch of rooted graphs:

* ``after``: the nodes reachable from the root along CONTROL edges (the root included): the reachability
  analysis's labels (SPEC §4.2);
* ``before``: the nodes from which the root is reachable along CONTROL edges (the root included): the same
  analysis on the reversed control flow.

Calls are not followed (every analysis is intra-procedural, SPEC §4.1), so both stay within the root's function.
:class:`~programl.models.DataflowGGNN` with ``control_floods=True`` reads them as two more input bits per node and
learns the rest (definitions, uses, loops). :class:`LearnedControlFloods` computes the same two columns with a
learned reachability model instead (its predictions from the root, and on the reversed control flow), so that the
whole prediction is learned; set it as the model's ``flood_source``, or hand the model floods of your own as
``data.control_floods``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = ["CONTROL_FLOW", "LearnedControlFloods", "control_floods"]

#: ``edge_flow`` of CONTROL edges (SPEC §2.3).
CONTROL_FLOW = 0


def _flood(sources: np.ndarray, targets: np.ndarray, roots: np.ndarray, num_nodes: int) -> np.ndarray:
    """A boolean mask of the nodes reachable from any of ``roots`` along the edges ``sources -> targets``."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    # one extra node with an edge to every root: a single breadth-first search floods every graph of the batch
    start = num_nodes
    rows = np.concatenate([sources, np.full(len(roots), start)])
    cols = np.concatenate([targets, roots])
    matrix = csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(num_nodes + 1, num_nodes + 1))
    order = breadth_first_order(matrix, start, directed=True, return_predecessors=False)
    mask = np.zeros(num_nodes + 1, dtype=bool)
    mask[order] = True
    return mask[:num_nodes]


def control_floods(edge_index: Tensor, edge_flow: Tensor, root: Tensor) -> Tensor:
    """``(N, 2)`` float 0/1 columns ``[after, before]`` of every node of a (batched) graph with one or more root
    nodes (``root`` is 1 at each). Graphs of a batch are disjoint, so each is flooded from its own root.

    >>> ei = torch.tensor([[0, 1, 3], [1, 2, 1]])      # 0 -> 1 -> 2 and 3 -> 1, all control
    >>> control_floods(ei, torch.zeros(3, dtype=torch.long), torch.tensor([0, 1, 0, 0])).tolist()
    [[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
    """
    num_nodes = int(root.numel())
    control = (edge_flow == CONTROL_FLOW).cpu().numpy()
    sources, targets = (edge_index[i].cpu().numpy()[control] for i in (0, 1))
    roots = np.flatnonzero(root.cpu().numpy())
    after = _flood(sources, targets, roots, num_nodes)
    before = _flood(targets, sources, roots, num_nodes)
    return torch.from_numpy(np.stack([after, before], axis=1).astype(np.float32)).to(root.device)


class LearnedControlFloods:
    """The two floods of :func:`control_floods`, predicted by a reachability model (a
    :class:`~programl.models.DataflowGGNN` trained on the reachability analysis): ``after`` is its prediction from
    the batch's roots, ``before`` its prediction on the same batch with every CONTROL edge reversed (reachability on
    the reversed control flow). ``until_stable``: ``(min_steps, max_steps, patience)`` of
    :meth:`~programl.models.DataflowGGNN.forward_until_stable` (a step-free variant's ``model.json`` inference), or
    None to run the model's own T.

    Not part of any weights: a runtime choice (``model.flood_source = LearnedControlFloods(reachability)``).
    """

    def __init__(self, reachability, until_stable: tuple[int, int, int] | None = None) -> None:
        self.reachability = reachability.eval()
        self.until_stable = until_stable

    def _predict(self, data) -> Tensor:
        if self.until_stable is None:
            logits = self.reachability(data)
        else:
            low, high, patience = self.until_stable
            logits, _ = self.reachability.forward_until_stable(data, min_steps=low, max_steps=high, patience=patience)
        return logits.argmax(-1).float()

    @torch.no_grad()
    def __call__(self, data) -> Tensor:
        after = self._predict(data)
        control = data.edge_flow == CONTROL_FLOW
        reversed_edges = data.edge_index.clone()
        reversed_edges[:, control] = data.edge_index[:, control].flip(0)
        flipped = data.clone()
        flipped.edge_index = reversed_edges
        if hasattr(flipped, "control_floods"):
            del flipped.control_floods
        before = self._predict(flipped)
        return torch.stack([after, before], dim=1)
