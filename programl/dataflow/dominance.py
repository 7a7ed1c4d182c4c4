"""Dominance: the nodes of the root's function that the root dominates, by the reference's iteration
(docs/spec/analyses.md#dominance).

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

The sweeps are played exactly (the step count depends on the in-place order), with three savings that change no
set and no count:

* nodes of S without any control edge (variables, constants) always take ``{n}`` in the first sweep and feed
  nobody, so they are counted rather than swept, and stand in the bit sets as one shared bit;
* a straight line ``h -> c1 -> ... -> cL`` (consecutive in the sweep order, each the other's only neighbour) is swept
  as one unit: ``Dom(cj) = Dom(h) | {c1..cj}`` is evaluated right after ``h`` and changes exactly when ``Dom(h)``
  does (``cL`` excepted when only ``{c1..cL}`` itself left or joined ``Dom(h)``), so ``c1..cL`` share one bit and
  add ``L`` (or ``L - 1``) steps to each change of ``h``; the lines are cut once per function, and the root starts
  a line of its own;
* a unit is re-evaluated only when a predecessor changed since its last evaluation (in this sweep if that
  predecessor comes before it, otherwise in the next one), since otherwise its new set equals its current one.

Sets are Python ints used as bit sets.
"""

from __future__ import annotations

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
        self._functions: dict[int, tuple] = {}

    def eligible_roots(self) -> np.ndarray:
        return self.view.nodes_of_type(INSTRUCTION)

    def _problem(self, root: int) -> _Lines:
        """The swept nodes of the root's function cut into straight lines (cached per function)."""
        function = int(self.view.node_function[root])
        hit = self._functions.get(function)
        if hit is None or not self._has_control[root]:
            members = np.flatnonzero(self.view.node_function == function)
            members = members[members >= 1]
            swept = members[self._has_control[members] | (members == root)]
            hit = _lines(self._fwd, self._rev, swept, self._local, len(members))
            if self._has_control[root]:
                self._functions[function] = hit
        return hit

    def run_one(self, root: int) -> tuple[np.ndarray, int, int]:
        lines = self._problem(root)
        num_members, swept = lines.num_members, lines.swept
        k = len(swept)
        # Nodes without control edges: each takes {n} in the first sweep, a change unless S = {root, n}.
        steps = (num_members - k) if num_members > 2 else 0
        if steps > MAX_STEPS:
            raise AnalysisError(f"Dominance fixed-point not found in {MAX_STEPS} steps")
        # Straight lines h -> c1 -> ... -> cL (consecutive in the sweep order, one edge between neighbours) are
        # swept as one unit: Dom(cj) = Dom(h) | {c1..cj}, evaluated right after h and changed exactly when h
        # changes, except that cL keeps its set when only {c1..cL} left or joined Dom(h). The root starts a line.
        first, length, bpreds, bsuccs, rb = lines.split_at(int(np.searchsorted(swept, root)))
        nb = len(first)
        inner = [(1 << (nb + b)) if length[b] else 0 for b in range(nb)]  # one bit for c1..cL of each line
        shared = (1 << (2 * nb)) if num_members > k else 0  # one bit for all the unswept nodes of S
        initial = (((1 << nb) - 1) | sum(inner) | shared) & ~(1 << rb)
        dom = [initial] * nb
        # The root's own set is {root} throughout; the rest of its line takes {root, c1..cj} at its place in the
        # first sweep (until then its last node, which its successors read, still holds the initial set).
        dom[rb] = initial if length[rb] else 1 << rb
        exits = [d | i for d, i in zip(dom, inner, strict=True)]  # the set of each line's last node
        # Sweeps in order. The first evaluates every unit; later ones only units with a predecessor that changed
        # since their last evaluation (in this sweep if it comes before them, otherwise in the next one).
        dirty = bytearray([1]) * nb
        if not length[rb]:
            dirty[rb] = 0
        while True:
            later = bytearray(nb)
            b = dirty.find(1)
            while b >= 0:
                old = dom[b]
                if b == rb:
                    new = 1 << rb
                    count = length[b]
                else:
                    plist = bpreds[b]
                    if plist is None:
                        new = 1 << b
                    else:
                        acc = exits[plist[0]]
                        for p in plist[1:]:
                            acc &= exits[p]
                        new = acc | (1 << b)
                    count = 1 + length[b]
                if new != old:
                    dom[b] = new
                    changed = old ^ new
                    if changed == inner[b] and length[b]:
                        count -= 1  # only {c1..cL} left or joined Dom(h): cL's set is unchanged
                    steps += count
                    if steps > MAX_STEPS:
                        raise AnalysisError(f"Dominance fixed-point not found in {MAX_STEPS} steps")
                    if changed & ~inner[b]:  # the line's last node changed: its successors must look again
                        exits[b] = new | inner[b]
                        for j in bsuccs[b]:
                            if j > b:
                                dirty[j] = 1
                            elif j != rb:
                                later[j] = 1
                b = dirty.find(1, b + 1)
            if later.find(1) < 0:
                break
            dirty = later
        positives = [i for b in range(nb) if (dom[b] >> rb) & 1 for i in range(first[b], first[b] + length[b] + 1)]
        return swept[positives], steps, len(positives)


class _Lines:
    """The swept nodes of one function (local numbering = sweep order) cut into straight lines.

    Line ``b`` is ``first[b] .. first[b] + length[b]``; ``preds[b]``: the lines whose last node precedes its first
    node (``None``: no predecessor, or one outside the function); ``succs[b]``: the lines whose first node follows
    its last node.
    """

    def __init__(self, num_members, swept, first, length, preds, succs):
        self.num_members, self.swept = num_members, swept
        self.first, self.length, self.preds, self.succs = first, length, preds, succs
        self.line_of = np.repeat(np.arange(len(first)), np.asarray(length) + 1) if first else np.zeros(0, np.int64)

    def split_at(self, r: int) -> tuple[list[int], list[int], list, list[list[int]], int]:
        """``(first, length, preds, succs, root_line)`` with local node ``r`` starting a line of its own."""
        b = int(self.line_of[r])
        if self.first[b] == r:
            return self.first, self.length, self.preds, self.succs, b

        def shift_pred(x):  # the old line b ends in the root's new line b + 1
            return x + 1 if x >= b else x

        def shift_succ(x):  # lines after b move up by one; line b keeps its first node
            return x + 1 if x > b else x

        h, end = self.first[b], self.first[b] + self.length[b]
        first = self.first[: b + 1] + [r] + self.first[b + 1 :]
        length = self.length[:b] + [r - 1 - h, end - r] + self.length[b + 1 :]
        preds = [None if pl is None else [shift_pred(x) for x in pl] for pl in self.preds]
        preds.insert(b + 1, [b])
        succs = [[shift_succ(x) for x in sl] for sl in self.succs]
        succs.insert(b, [b + 1])
        return first, length, preds, succs, b + 1


def _lines(fwd, rev, swept: np.ndarray, local: np.ndarray, num_members: int) -> _Lines:
    """Cut the swept nodes into straight lines: node ``i`` continues the line of ``i - 1`` when its only
    predecessor is ``i - 1`` and it is the only successor of ``i - 1``."""
    k = len(swept)
    local[swept] = np.arange(k)
    preds = _local_lists(rev, swept, local, outside_is_none=True)
    succs = _local_lists(fwd, swept, local, outside_is_none=False)
    local[swept] = -1
    chained = [i > 0 and preds[i] == [i - 1] and succs[i - 1] == [i] for i in range(k)]
    first = [i for i in range(k) if not chained[i]]
    last = [f - 1 for f in first[1:]] + [k - 1]
    line_of = [0] * k
    for b, (f, e) in enumerate(zip(first, last, strict=True)):
        line_of[f : e + 1] = [b] * (e + 1 - f)
    bpreds = [None if preds[f] is None else [line_of[p] for p in preds[f]] for f in first]
    bsuccs = [[line_of[x] for x in succs[e]] for e in last]
    length = [e - f for f, e in zip(first, last, strict=True)]
    return _Lines(num_members, swept, first, length, bpreds, bsuccs)


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
