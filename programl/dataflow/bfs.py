"""The reference's breadth-first search with its duplicate-dequeue quirk, without running the queue (SPEC §4.1).

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
"""

from __future__ import annotations

from dataclasses import dataclass

from programl.exceptions import AnalysisError

__all__ = ["QueueTrace", "trace_bfs", "count_entries"]


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


def trace_bfs(indptr: list[int], indices: list[int], root: int, start: int) -> QueueTrace:
    """Replay the reference's BFS from ``(root, start)`` over one adjacency (neighbours in the reference's order).

    Args:
        indptr: CSR row pointers (a Python list, see ``GraphView.adjacency_lists``).
        indices: CSR neighbours.
        root: Start node.
        start: Distance of the start entry.

    Returns:
        The distinct (node, level) pairs the queue would hold; see :class:`QueueTrace`.
    """
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
    first enqueuers), so the work is linear in the edges when late nodes are rare.

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
    total = sum(len(level) for level in levels[: first + 1])
    transitions = []
    for d in range(first, len(levels) - 1):
        level, nxt = levels[d], levels[d + 1]
        pos = {u: i for i, u in enumerate(level)}
        pos_next = {v: j for j, v in enumerate(nxt)}
        enqueuers: list[list[int]] = [[] for _ in nxt]  # per node of nxt: rows of its in-edges from level
        first_row = [-1] * len(nxt)  # the row of `level` whose first entry enqueued nxt[j] first ...
        first_slot = [0] * len(nxt)  # ... and the slot of its adjacency that did
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
        transitions.append((pos, pos_next, enqueuers, first_row, first_slot, late))
    # Which prefix-count rows each level needs: those of late nodes' first entries and, transitively, of the
    # first enqueuers of needed rows.
    needed: list[set[int]] = [set() for _ in levels]
    for d in range(len(levels) - 2, first - 1, -1):
        _, _, _, first_row, _, late = transitions[d - first]
        needed[d].update(first_row[x] for x in needed[d + 1])
        needed[d].update(late.values())
    counts = [1] * len(levels[first])
    pre = {x: [1] * x + [0] * (len(counts) - x) for x in needed[first]}
    for d in range(first, len(levels) - 1):
        pos, pos_next, enqueuers, first_row, first_slot, late = transitions[d - first]
        counts_next = []
        for j, rows in enumerate(enqueuers):
            iw = late.get(j)
            source = counts if iw is None else pre[iw]
            counts_next.append(sum(source[i] for i in rows))
        pre_next = {}
        for x in needed[d + 1]:
            p = first_row[x]
            row_p = pre[p]
            vector = []
            for j, rows in enumerate(enqueuers):
                iw = late.get(j)
                if iw is not None and p >= iw:  # all entries of a late node precede x's first enqueuer
                    vector.append(counts_next[j])
                else:
                    vector.append(sum(row_p[i] for i in rows))
            base = indptr[levels[d][p]]
            for t in range(first_slot[x]):
                jj = pos_next.get(indices[base + t])
                if jj is not None:
                    iv = late.get(jj)
                    if iv is None or iv > p:
                        vector[jj] += 1
            pre_next[x] = vector
        total += sum(counts_next)
        counts, pre = counts_next, pre_next
    if total >= 2**63:
        raise AnalysisError("BFS queue entry count exceeds 2**63 - 1; the reference cannot finish this graph either")
    return total
