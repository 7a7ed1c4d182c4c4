"""Dominance: the nodes of the root's function that the root dominates, by the reference's iteration (SPEC §4.3).

* Eligible roots: every INSTRUCTION node with index >= 1.
* Node set S: every node ``i >= 1`` whose ``function`` equals the root's (variables too; all constants when that
  function is 0). ``Dom(root) = {root}``; ``Dom(n) = S - {root}`` for the others.
* Sweeps over S in index order until nothing changes: ``new = {n} | intersection of Dom(p)`` over the CONTROL
  predecessors ``p`` of ``n`` (empty when ``n`` has none, or when one of them is outside S). Every ``new != Dom(n)``
  is one step; more than 1000 steps is an error ("Dominance fixed-point not found in 1000 steps").
* Labels: ``root in Dom(n)``; ``data_flow_step_count``: the number of steps; ``data_flow_active_node_count``: the
  number of labelled nodes.

Note that ``root`` is left out of the initial sets, so it propagates like a least fixed point: a node on a cycle
that does not pass through the root (or below such a cycle) is never labelled, unlike textbook dominance.

The sweeps are played exactly (the step count depends on the in-place order), with two savings that do not change
any set or count: nodes of S without any control edge (variables, constants) always take ``{n}`` in the first sweep
and feed nobody, so they are counted rather than swept, and stand in the bit sets as one shared bit; and a node is
re-evaluated only when a predecessor changed since its last evaluation (in this sweep if that predecessor comes
before it, otherwise in the next one), since otherwise its new set equals its current one. Sets are Python ints
used as bit sets over the swept nodes.
"""

from __future__ import annotations

import heapq

import numpy as np

from programl.dataflow.base import RootedAnalysis
from programl.dataflow.columnar import CONTROL, INSTRUCTION, GraphView
from programl.exceptions import AnalysisError

__all__ = ["MAX_STEPS", "Dominance"]

#: The reference gives up after this many set updates.
MAX_STEPS = 1000


class Dominance(RootedAnalysis):
    """Iterative dominator sets within the root's function, as the reference computes them."""

    name = "dominance"

    def __init__(self, view: GraphView) -> None:
        super().__init__(view)
        fwd, rev = view.csr(CONTROL), view.csr(CONTROL, reverse=True)
        self._fwd, self._rev = fwd, rev
        self._has_control = (fwd.degree() + rev.degree()) > 0
        self._local = np.full(view.num_nodes, -1, dtype=np.int64)

    def eligible_roots(self) -> np.ndarray:
        return self.view.nodes_of_type(INSTRUCTION)

    def run_one(self, root: int) -> tuple[np.ndarray, int, int]:
        view = self.view
        members = np.flatnonzero(view.node_function == view.node_function[root])
        members = members[members >= 1]
        swept = members[self._has_control[members] | (members == root)]
        k = len(swept)
        # Nodes without control edges: each takes {n} in the first sweep, a change unless S = {root, n}.
        steps = (len(members) - k) if len(members) > 2 else 0
        if steps > MAX_STEPS:
            raise AnalysisError(f"Dominance fixed-point not found in {MAX_STEPS} steps")
        local = self._local
        local[swept] = np.arange(k)
        r = int(local[root])
        preds = _local_lists(self._rev, swept, local, outside_is_none=True)
        succs = _local_lists(self._fwd, swept, local, outside_is_none=False)
        local[swept] = -1
        shared = (1 << k) if len(members) > k else 0  # one bit for all the unswept nodes of S
        initial = (((1 << k) - 1) | shared) & ~(1 << r)
        dom = [initial] * k
        dom[r] = 1 << r
        pending = [i for i in range(k) if i != r]
        while pending:
            heap = pending  # ascending, hence a heap
            queued = set(heap)
            later: set[int] = set()
            while heap:
                i = heapq.heappop(heap)
                queued.discard(i)
                plist = preds[i]
                if plist is None:
                    new = 1 << i
                else:
                    acc = dom[plist[0]]
                    for p in plist[1:]:
                        acc &= dom[p]
                    new = acc | (1 << i)
                if new != dom[i]:
                    dom[i] = new
                    steps += 1
                    if steps > MAX_STEPS:
                        raise AnalysisError(f"Dominance fixed-point not found in {MAX_STEPS} steps")
                    for j in succs[i]:
                        if j == r:
                            continue
                        if j > i:
                            if j not in queued:
                                heapq.heappush(heap, j)
                                queued.add(j)
                        else:
                            later.add(j)
            pending = sorted(later)
        positives = swept[[i for i in range(k) if (dom[i] >> r) & 1]]
        return positives, steps, len(positives)


def _local_lists(csr, swept: np.ndarray, local: np.ndarray, outside_is_none: bool) -> list:
    """Neighbour lists of the swept nodes in local numbering.

    With ``outside_is_none`` (predecessors), a node whose list is empty or names a node outside the swept set gets
    ``None`` (its new set is just itself); otherwise outside neighbours are dropped.
    """
    start, stop = csr.indptr[swept], csr.indptr[swept + 1]
    degree = stop - start
    flat = np.repeat(start - np.cumsum(np.concatenate(([0], degree[:-1]))), degree) + np.arange(int(degree.sum()))
    neighbours = local[csr.indices[flat]]
    bounds = np.concatenate(([0], np.cumsum(degree))).tolist()
    values = neighbours.tolist()
    out: list = []
    if outside_is_none:
        has_outside = np.zeros(len(swept), dtype=bool)
        if len(neighbours):
            owner = np.repeat(np.arange(len(swept)), degree)
            np.logical_or.at(has_outside, owner, neighbours < 0)
        for i, bad in enumerate(has_outside.tolist()):
            lo, hi = bounds[i], bounds[i + 1]
            out.append(None if bad or lo == hi else values[lo:hi])
    else:
        for i in range(len(swept)):
            out.append([v for v in values[bounds[i] : bounds[i + 1]] if v >= 0])
    return out
