"""The control-flow floods of a root: what it reaches and what reaches it (docs/spec/analyses.md#reachability,
docs/spec/analyses.md#liveness).

Liveness is a question about control paths (docs/spec/analyses.md#liveness): a value is live out of the root when a path
of control flow leads from the root to a use of it without passing its definition again. A GGNN run for T steps sees T
hops around the root, so on a large function it cannot tell a use that lies after the root from one that lies before it,
and that is where the faithful liveness model fails: on the validation split's graphs of more than 500 nodes, 93 % of
its errors are values whose nearest use the root does or does not reach along control flow (measured in
``studies/history/results-history.md`` §5 "Liveness over the control floods").

:func:`control_floods` computes the relations the analysis walks, exactly, for a batch of rooted graphs:

* ``after``: the nodes reachable from the root along CONTROL edges (the root included): the reachability
  analysis's labels (docs/spec/analyses.md#reachability);
* ``before``: the nodes from which the root is reachable along CONTROL edges (the root included): the same
  analysis on the reversed control flow;
* ``after_acyclic`` and ``before_acyclic``: the same two without the loops' back edges. Inside a loop every node
  is both after and before the root, so the first two cannot say whether a definition comes before the root in
  the same iteration; on the validation graphs of more than 1,000 nodes, with the first two alone, 74 % of the
  errors left were values defined inside the root's loop.

Calls are not followed (every analysis is intra-procedural, docs/spec/analyses.md#common-rules), so all four stay within
the root's function. :class:`~programl.models.DataflowGGNN` with ``control_floods=True`` reads them as four more input
bits per node and learns the rest (definitions, uses, loops). A model reads floods of your own instead when they are
handed to it as ``data.control_floods``, or computed by the callable set as its ``flood_source``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = ["CONTROL_FLOW", "back_edges", "control_floods"]

#: ``edge_flow`` of CONTROL edges (docs/spec/wire-format.md#program-graph-messages, ``Edge.Flow``).
CONTROL_FLOW = 0


def _control_edges(edge_index: Tensor, edge_flow: Tensor) -> tuple[Tensor, np.ndarray, np.ndarray]:
    """The CONTROL edges of a batch: their mask over ``edge_index`` (a tensor on its device) and their sources and
    targets (numpy, on the host)."""
    control = edge_flow == CONTROL_FLOW
    sources, targets = (edge_index[i][control].cpu().numpy() for i in (0, 1))
    return control, sources, targets


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


def back_edges(sources: np.ndarray, targets: np.ndarray, num_nodes: int) -> np.ndarray:
    """A boolean mask of the edges ``sources -> targets`` that close a cycle in a depth-first search (to a node
    still on the search's stack): the back edges of the loops. The search starts from every node without a
    predecessor (function entries: LLVM never branches to an entry block) in index order, then from any node still
    unvisited, and takes each node's edges in the order given, so the mask is deterministic; on reducible control
    flow it is every loop's back edges whatever the order."""
    order = np.argsort(sources, kind="stable")
    starts = np.searchsorted(sources[order], np.arange(num_nodes + 1))
    indegree = np.bincount(targets, minlength=num_nodes)
    state = np.zeros(num_nodes, dtype=np.int8)  # 0 new, 1 on the stack, 2 done
    back = np.zeros(len(sources), dtype=bool)
    succ_edges = order.tolist()
    bounds = starts.tolist()
    target_list = targets.tolist()
    for start in [*np.flatnonzero(indegree == 0).tolist(), *range(num_nodes)]:
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, bounds[start])]
        while stack:
            node, at = stack[-1]
            if at == bounds[node + 1]:
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, at + 1)
            edge = succ_edges[at]
            nxt = target_list[edge]
            if state[nxt] == 1:
                back[edge] = True
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, bounds[nxt]))
    return back


def control_floods(edge_index: Tensor, edge_flow: Tensor, root: Tensor) -> Tensor:
    """``(N, 4)`` float 0/1 columns ``[after, before, after_acyclic, before_acyclic]`` of every node of a (batched)
    graph with one or more root nodes (``root`` is 1 at each): what the root reaches along control flow and what
    reaches it, then the same without the loops' back edges (:func:`back_edges`), which tells, inside a loop, what
    comes later in the same iteration from what comes in the next. Graphs of a batch are disjoint, so each is
    flooded from its own root.

    >>> ei = torch.tensor([[0, 1, 2, 3], [1, 2, 1, 1]])      # 0 -> 1 -> 2 -> 1 (a loop) and 3 -> 1, all control
    >>> control_floods(ei, torch.zeros(4, dtype=torch.long), torch.tensor([0, 0, 1, 0])).tolist()
    [[0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0]]
    """
    num_nodes = int(root.numel())
    _, sources, targets = _control_edges(edge_index, edge_flow)
    roots = np.flatnonzero(root.cpu().numpy())
    forward = ~back_edges(sources, targets, num_nodes)
    columns = [
        _flood(sources, targets, roots, num_nodes),
        _flood(targets, sources, roots, num_nodes),
        _flood(sources[forward], targets[forward], roots, num_nodes),
        _flood(targets[forward], sources[forward], roots, num_nodes),
    ]
    return torch.from_numpy(np.stack(columns, axis=1).astype(np.float32)).to(root.device)
