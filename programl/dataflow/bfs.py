"""The reference's breadth-first search with its duplicate-dequeue quirk, without running the queue
(docs/spec/analyses.md#common-rules).

The reference BFS holds ``(node, distance)`` pairs in a FIFO queue, marks a node visited when it is *dequeued*,
and enqueues every neighbour that is not yet visited, without checking whether it is already queued. A node can
therefore be dequeued several times: reachability counts every dequeue (``data_flow_active_node_count``), and the
step counts of reachability, datadep and liveness read the distance of such duplicate entries. Played literally,
the queue can grow exponentially: every diamond whose two arms have the same length doubles the entries of all
nodes below it. This module gets the same numbers in time linear in the edges reached (plus a small dense
computation when duplicates occur).

Facts used (all follow from the FIFO order, distances grow by one per hop):

* The queue is a sequence of *levels*: all entries of distance ``d`` come before those of distance ``d + 1``.
* A node ``v`` is dequeued at its BFS distance ``dist(v)`` and possibly at ``dist(v) + 1`` (a *late* entry,
  enqueued by a node of level ``dist(v)`` that was dequeued before ``v``), never at any other distance.
* Within a level the visited set only grows, so a repeated entry of ``u`` enqueues a subset of what the first
  entry of ``u`` in that level enqueued. Hence the distinct nodes of level ``d + 1``, in the order of their first
  entries, follow from the *first* entries of level ``d`` alone: :func:`trace_bfs` walks these (node, level)
  pairs, at most two per node.
* The number of entries per node and level (needed only for reachability's dequeue count) follows from prefix
  counts: how many entries of ``u`` precede the first entry of ``x`` in level ``d``. :func:`count_entries`
  propagates these (exact Python integers) from the first level in which some node was enqueued twice (before it,
  every (node, level) pair is a single entry), and only for the few rows that late entries need.
* Most queues of real code hold only a few entries per (node, level) pair even after that level: then playing the
  queue from that level on costs less than propagating the counts level by level. :func:`count_dequeues` plays it
  within a budget of entries proportional to those pairs, and falls back to :func:`count_entries` past it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from programl.exceptions import AnalysisError

__all__ = ["QueueTrace", "trace_bfs", "count_dequeues", "count_entries"]


@dataclass
class QueueTrace:
    """What the reference's queue would have dequeued, level by level.

    Attributes:
        levels: ``levels[k]`` lists the distinct nodes with an entry of distance ``start + k``, in the order of
            their first entry in that level. A node is in at most two consecutive levels.
        start: Distance of the root entry (1 for reachability and liveness, 0 for datadep).
        visited: Every node dequeued at least once.
        first_duplicate_level: Index into ``levels`` of the first level whose processing enqueued a node twice
            (``None`` if none did: then every (node, level) pair of ``levels`` is exactly one queue entry).
    """

    levels: list[list[int]]
    start: int
    visited: set[int]
    first_duplicate_level: int | None

    @property
    def last_distance(self) -> int:
        """Distance of the last dequeued entry."""
        return self.start + len(self.levels) - 1


class _NoneSingle:
    def __getitem__(self, node: int) -> int:
        return -1


def trace_bfs(
    indptr: list[int], indices: list[int], root: int, start: int, single: list[int] | None = None
) -> QueueTrace:
    """Replay the reference's BFS from ``(root, start)`` over one adjacency (neighbours in the reference's order).

    Args:
        indptr: CSR row pointers (a Python list, see ``GraphView.adjacency_lists``).
        indices: CSR neighbours.
        root: Start node.
        start: Distance of the start entry.
        single: Optional per-node single neighbour or -1 (``GraphView.only_neighbours``), a shortcut only.

    Returns:
        The distinct (node, level) pairs the queue would hold; see :class:`QueueTrace`.
    """
    if single is None:
        single = _NoneSingle()
    visited: set[int] = set()
    cur = [root]
    levels = [cur]
    first_duplicate = None
    add = visited.add
    while True:
        nxt: list[int] = []
        pushed: set[int] = set()
        for u in cur:
            add(u)
            v = single[u]
            if v >= 0:  # the loop below, inlined for the common single neighbour (no list slice)
                if v in visited:
                    continue
                if v in pushed:
                    if first_duplicate is None:
                        first_duplicate = len(levels) - 1
                    continue
                pushed.add(v)
                nxt.append(v)
                continue
            for v in indices[indptr[u] : indptr[u + 1]]:
                if v in visited:
                    continue
                if v in pushed:
                    if first_duplicate is None:
                        first_duplicate = len(levels) - 1
                    continue
                pushed.add(v)
                nxt.append(v)
        if not nxt:
            return QueueTrace(levels=levels, start=start, visited=visited, first_duplicate_level=first_duplicate)
        levels.append(nxt)
        cur = nxt


def count_entries(indptr: list[int], indices: list[int], trace: QueueTrace) -> int:
    """Total number of dequeues of the reference's BFS (duplicates included).

    Up to the first level in which a node was enqueued twice, every (node, level) pair of the trace is one entry.
    From there on, with ``F`` a level in first-entry order and ``G`` the next one:

    * entries of a node ``w`` of ``G`` that was not dequeued in ``F``: the sum, over the edges ``u -> w`` from
      ``F``, of the entries of ``u`` (every entry of ``u`` enqueues ``w``);
    * entries of a *late* node ``w`` (first dequeued in ``F``): the sum, over those edges, of the entries of ``u``
      that precede the first entry of ``w`` in ``F``;
    * and the entries of ``u`` that precede the first entry of ``x`` in ``G`` follow from the same sums over the
      entries before the first entry of ``x``'s first enqueuer ``p`` in ``F`` (or of ``w``, whichever comes first,
      for a late ``w``), plus the slots of ``p``'s adjacency before the one that enqueued ``x``.

    Only the prefix-count rows that some later late node needs are computed (found by a backward pass over the
    first enqueuers), so the work is linear in the edges when late nodes are rare; when many rows are needed the
    sums run on numpy int64 arrays (falling back to Python integers should a count approach ``2**62``).

    Args:
        indptr: The CSR that produced ``trace``.
        indices: The CSR that produced ``trace``.
        trace: Output of :func:`trace_bfs`.

    Returns:
        The exact number of queue entries.

    Raises:
        AnalysisError: If the count does not fit in a signed 64-bit integer (the reference, which plays the queue,
            could not finish such a graph either).
    """
    levels = trace.levels
    first = trace.first_duplicate_level
    if first is None:
        return sum(len(level) for level in levels)
    transitions = _transitions(indptr, indices, levels, first)
    # Which prefix-count rows each level needs: those of late nodes' first entries and, transitively, of the
    # first enqueuers of needed rows.
    needed: list[set[int]] = [set() for _ in levels]
    for d in range(len(levels) - 2, first - 1, -1):
        step = transitions[d - first]
        needed[d].update(step.first_row[x] for x in needed[d + 1])
        needed[d].update(step.late.values())
    work = sum(len(needed[d + 1]) * len(t.edge_from) for d, t in enumerate(transitions, start=first))
    total = sum(len(level) for level in levels[: first + 1])
    if work > _NUMPY_WORK:
        try:
            total += _propagate_numpy(indptr, indices, levels, first, transitions, needed)
        except OverflowError:
            total += _propagate(indptr, indices, levels, first, transitions, needed)
    else:
        total += _propagate(indptr, indices, levels, first, transitions, needed)
    if total >= 2**63:
        raise AnalysisError("BFS queue entry count exceeds 2**63 - 1; the reference cannot finish this graph either")
    return total


#: :func:`count_dequeues` plays the queue for at most this many entries per (node, level) pair from the first level
#: with a duplicate on (plus :data:`PLAY_SLACK`); past that it propagates counts (:func:`count_entries`).
PLAY_PER_PAIR = 64
PLAY_SLACK = 1024


def count_dequeues(indptr: list[int], indices: list[int], trace: QueueTrace) -> int:
    """The number of dequeues of the reference's BFS, as :func:`count_entries`: the queue is played from the first
    level with a duplicate entry on, when it holds at most ``PLAY_PER_PAIR`` entries per (node, level) pair of the
    trace from there (plus ``PLAY_SLACK``); otherwise (an exponential queue) the counts are propagated.
    """
    levels = trace.levels
    first = trace.first_duplicate_level
    if first is None:
        return sum(len(level) for level in levels)
    before = sum(len(level) for level in levels[:first])
    budget = PLAY_PER_PAIR * (sum(len(level) for level in levels[first:])) + PLAY_SLACK
    played = _play(indptr, indices, levels, first, budget)
    return before + played if played is not None else count_entries(indptr, indices, trace)


def _play(indptr: list[int], indices: list[int], levels: list[list[int]], first: int, budget: int) -> int | None:
    """Dequeues from level ``first`` on, playing the literal queue (None past ``budget`` entries).

    Before level ``first`` every (node, level) pair is one entry, so the queue at its start holds one entry per node
    of ``levels[first]``, in that order, and every node of the levels before it has been dequeued.
    """
    visited = set().union(*levels[:first])
    mark = visited.add
    queue = deque(levels[first])
    pop, push = queue.popleft, queue.append
    count = 0
    while queue:
        u = pop()
        count += 1
        mark(u)
        for v in indices[indptr[u] : indptr[u + 1]]:
            if v not in visited:
                push(v)
        if count + len(queue) > budget:
            return None
    return count


#: Above this many (needed row x edge) products, the propagation runs on numpy arrays.
_NUMPY_WORK = 20_000


@dataclass
class _Transition:
    """The edges from one level ``F`` to the next ``G`` (rows: positions in first-entry order)."""

    pos: dict[int, int]  # node -> row in F
    pos_next: dict[int, int]  # node -> row in G
    edge_from: list[int]  # every edge F -> G with multiplicity, grouped by target row ...
    edge_to: list[int]  # ... in ascending order (every row of G has at least one)
    first_row: list[int]  # the row of F whose first entry enqueued G[j] first ...
    first_slot: list[int]  # ... and the slot of its adjacency that did
    late: dict[int, int]  # row in G -> row in F, for nodes first dequeued in F


def _transitions(indptr, indices, levels, first) -> list[_Transition]:
    out = []
    for d in range(first, len(levels) - 1):
        level, nxt = levels[d], levels[d + 1]
        pos = {u: i for i, u in enumerate(level)}
        pos_next = {v: j for j, v in enumerate(nxt)}
        enqueuers: list[list[int]] = [[] for _ in nxt]
        first_row = [-1] * len(nxt)
        first_slot = [0] * len(nxt)
        for i, u in enumerate(level):
            for k, v in enumerate(indices[indptr[u] : indptr[u + 1]]):
                j = pos_next.get(v)
                if j is None:
                    continue
                enqueuers[j].append(i)
                if first_row[j] < 0:
                    iv = pos.get(v)
                    if iv is None or iv > i:  # v still unvisited at the first entry of u
                        first_row[j] = i
                        first_slot[j] = k
        late = {j: pos[v] for j, v in enumerate(nxt) if v in pos}
        edge_from = [i for rows in enqueuers for i in rows]
        edge_to = [j for j, rows in enumerate(enqueuers) for _ in rows]
        out.append(_Transition(pos, pos_next, edge_from, edge_to, first_row, first_slot, late))
    return out


def _slots_before(indptr, indices, level, step: _Transition, x: int):
    """Rows of G that the first enqueuer of ``G[x]`` enqueues, in its first entry, before ``G[x]``."""
    p = step.first_row[x]
    base = indptr[level[p]]
    for t in range(step.first_slot[x]):
        jj = step.pos_next.get(indices[base + t])
        if jj is not None:
            iv = step.late.get(jj)
            if iv is None or iv > p:
                yield jj


def _propagate(indptr, indices, levels, first, transitions, needed) -> int:
    """Entries of levels ``first + 1`` onwards, with Python integers (exact at any size)."""
    counts = [1] * len(levels[first])
    pre = {x: [1] * x + [0] * (len(counts) - x) for x in needed[first]}
    total = 0
    for d in range(first, len(levels) - 1):
        step = transitions[d - first]
        late = step.late
        width = len(levels[d + 1])
        enqueuers: list[list[int]] = [[] for _ in range(width)]
        for i, j in zip(step.edge_from, step.edge_to, strict=True):
            enqueuers[j].append(i)
        counts_next = []
        for j, rows in enumerate(enqueuers):
            iw = late.get(j)
            source = counts if iw is None else pre[iw]
            counts_next.append(sum(source[i] for i in rows))
        pre_next = {}
        for x in needed[d + 1]:
            p = step.first_row[x]
            row_p = pre[p]
            vector = []
            for j, rows in enumerate(enqueuers):
                iw = late.get(j)
                if iw is not None and p >= iw:  # all entries of a late node precede x's first enqueuer
                    vector.append(counts_next[j])
                else:
                    vector.append(sum(row_p[i] for i in rows))
            for jj in _slots_before(indptr, indices, levels[d], step, x):
                vector[jj] += 1
            pre_next[x] = vector
        total += sum(counts_next)
        counts, pre = counts_next, pre_next
    return total


def _propagate_numpy(indptr, indices, levels, first, transitions, needed) -> int:
    """:func:`_propagate` on int64 arrays; raises OverflowError when a count could pass ``2**62``."""
    width = len(levels[first])
    counts = np.ones(width, dtype=np.int64)
    rows = sorted(needed[first])
    pre = np.tril(np.ones((width, width), dtype=np.int64), -1)[rows] if rows else np.zeros((0, width), np.int64)
    row_of = {x: k for k, x in enumerate(rows)}
    total = 0
    for d in range(first, len(levels) - 1):
        step = transitions[d - first]
        src = np.asarray(step.edge_from, dtype=np.int64)
        dst = np.asarray(step.edge_to, dtype=np.int64)
        if float(counts.astype(np.float64)[src].sum()) > 2.0**62:
            raise OverflowError
        starts = np.flatnonzero(np.r_[True, dst[1:] != dst[:-1]])
        counts_next = np.add.reduceat(counts[src], starts)
        if step.late:
            late_cols = np.fromiter(step.late.keys(), dtype=np.int64, count=len(step.late))
            late_rows = np.fromiter(step.late.values(), dtype=np.int64, count=len(step.late))
            which = np.zeros(len(counts_next), dtype=np.int64)
            which[late_cols] = [row_of[iw] for iw in late_rows.tolist()]
            counts_next[late_cols] = np.add.reduceat(pre[which[dst], src], starts)[late_cols]
        rows_next = sorted(needed[d + 1])
        if rows_next:
            firsts = np.asarray([step.first_row[x] for x in rows_next], dtype=np.int64)
            pre_next = np.add.reduceat(pre[[row_of[p] for p in firsts.tolist()]][:, src], starts, axis=1)
            if step.late:
                behind = firsts[:, None] >= late_rows[None, :]  # x's first enqueuer comes after the late node
                pre_next[:, late_cols] = np.where(behind, counts_next[late_cols][None, :], pre_next[:, late_cols])
            for k, x in enumerate(rows_next):
                for jj in _slots_before(indptr, indices, levels[d], step, x):
                    pre_next[k, jj] += 1
        else:
            pre_next = np.zeros((0, len(counts_next)), dtype=np.int64)
        total += int(counts_next.sum())
        counts, pre, row_of = counts_next, pre_next, {x: k for k, x in enumerate(rows_next)}
    return total
