"""Liveness: the variables and constants live out of an instruction (docs/spec/analyses.md#liveness).

``Init`` (once per graph) plays the reference's backward work list exactly:

* The FIFO work list is seeded, in index order, with every INSTRUCTION node without an outgoing CONTROL edge.
* Pop ``n``: ``OUT = union of IN(s)`` over its control successors; ``IN_new = uses(n) | (OUT - defs(n))`` with
  ``uses`` = sources of DATA edges into ``n`` (variables and constants) and ``defs`` = targets of DATA edges out of
  ``n``. If ``IN_new`` is empty or differs from ``IN(n)``: store it and append every control predecessor that is
  not in the work list. Always store ``OUT(n) = OUT``.
* More than ``max(2 |V|, 5000)`` pops is an error ("Failed to terminate liveness computation in 5000 steps").

Then per root:

* Eligible roots: nodes with a non-empty ``OUT``. Labels: ``OUT(root)``; ``data_flow_active_node_count``: its size.
* ``data_flow_step_count``: the reference's BFS from ``(root, 1)`` over CONTROL then DATA successors (duplicate
  entries included, docs/spec/analyses.md#common-rules); the largest distance of an entry whose node is in
  ``OUT(root)``, 0 if none.

Sets are Python ints used as bit sets. When every control edge stays inside one function (always, for built graphs)
each function numbers only the values its own instructions use, so the bit sets stay as small as the function;
otherwise all values share one numbering. The shared FIFO queue gives every function the same sequence of pops it
would get alone, so each function runs alone, smallest first (a graph bound to exceed the limit then fails on cheap
bit sets); this changes no set and no count.

Memory: one bit set per node is quadratic in the size of a function (478k nodes of one function
needed more than 14 GB). A function with more than :data:`DENSE_VALUES` values keeps each set as a tuple of
:data:`CHUNK_BITS`-bit chunks instead, and a node's set shares every chunk its own uses and definitions leave
unchanged with its successor's set (the same int objects), so a node costs a tuple of pointers plus the few chunks it
changes. Same sets, same pops, same counts.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from programl.dataflow.base import RootedAnalysis
from programl.dataflow.bfs import trace_bfs
from programl.dataflow.columnar import CONTROL, DATA, INSTRUCTION, GraphView
from programl.exceptions import AnalysisError

__all__ = ["CHUNK_BITS", "DENSE_VALUES", "MIN_POPS", "POPS_PER_NODE", "Liveness", "LiveSets", "live_sets"]

#: Functions with more values than this keep their sets in chunks (below it a set is at most 512 bytes).
DENSE_VALUES = 4096
#: Bits per chunk of a chunked set.
CHUNK_BITS = 2048


def _bit_positions(bits: int) -> np.ndarray:
    """Positions of the set bits of a non-negative int, ascending."""
    if not bits:
        return np.zeros(0, dtype=np.int64)
    raw = np.frombuffer(bits.to_bytes((bits.bit_length() + 7) // 8, "little"), dtype=np.uint8)
    return np.flatnonzero(np.unpackbits(raw, bitorder="little"))


class LiveSets:
    """Live-out sets of every node, as bit sets over per-group value numberings.

    Attributes:
        live_out: ``live_out[n]`` bit set of the values live out of node ``n`` (an int, or for a chunked function a
            tuple of ints, chunk ``k`` holding bits ``k * CHUNK_BITS ...``).
        live_in: ``live_in[n]`` bit set of the values live into node ``n`` (likewise).
        pops: Number of work-list pops the reference makes.
    """

    def __init__(self, live_in: list[int], live_out: list[int], group: np.ndarray, values: list[np.ndarray], pops: int):
        self.live_in = live_in
        self.live_out = live_out
        self.pops = pops
        self.chunk_bits = CHUNK_BITS  # of the chunked sets (read when they were built)
        self._group = group
        self._values = values

    def nodes(self, bits: int, node: int) -> np.ndarray:
        """Node indices (ascending) of a bit set that belongs to ``node``'s group."""
        values = self._values[int(self._group[node])]
        if isinstance(bits, tuple):
            positions = [_bit_positions(chunk) + k * self.chunk_bits for k, chunk in enumerate(bits) if chunk]
            return np.sort(values[np.concatenate(positions)]) if positions else np.zeros(0, dtype=np.int64)
        return np.sort(values[_bit_positions(bits)])

    def has_out(self) -> np.ndarray:
        """``(N,)`` bool: whether ``OUT(n)`` is non-empty."""
        return np.fromiter(
            (any(bits) if isinstance(bits, tuple) else bool(bits) for bits in self.live_out),
            dtype=bool,
            count=len(self.live_out),
        )

    def out_nodes(self, node: int) -> np.ndarray:
        """``OUT(node)`` as node indices."""
        return self.nodes(self.live_out[node], node)

    def in_nodes(self, node: int) -> np.ndarray:
        """``IN(node)`` as node indices."""
        return self.nodes(self.live_in[node], node)


def live_sets(view: GraphView) -> LiveSets:
    """Run the reference's liveness work list on a graph (cached in ``view.cache``).

    Raises:
        AnalysisError: Past ``max(2 |V|, 5000)`` pops, with the reference's message.
    """
    hit = view.cache.get("liveness.sets")
    if hit is not None:
        if isinstance(hit, AnalysisError):
            raise hit
        return hit
    try:
        sets = _live_sets(view)
    except AnalysisError as error:
        view.cache["liveness.sets"] = error
        raise
    view.cache["liveness.sets"] = sets
    return sets


def _live_sets(view: GraphView) -> LiveSets:
    n = view.num_nodes
    ctrl = view.csr(CONTROL)
    ctrl_src, ctrl_dst = view.edge_src[ctrl.edge_ids], ctrl.indices
    if np.array_equal(view.node_function[ctrl_src], view.node_function[ctrl_dst]):
        group = view.node_function.astype(np.int64)
        group -= group.min(initial=0)
    else:
        group = np.zeros(n, dtype=np.int64)
    num_groups = int(group.max(initial=0)) + 1

    # Only instructions and nodes with a control successor are ever popped: only their uses and defs matter.
    poppable = (view.node_type == INSTRUCTION) | (ctrl.degree() > 0)
    data = view.edge_flow == DATA
    d_src = view.edge_src[data].astype(np.int64)
    d_dst = view.edge_dst[data].astype(np.int64)
    defining = poppable[d_src]
    used = poppable[d_dst]
    d_src, d_dst, def_src, def_dst = d_src[used], d_dst[used], d_src[defining], d_dst[defining]
    # Value numbering: per group, the distinct sources of DATA edges into the group's nodes, by node index.
    use_key = group[d_dst] * n + d_src
    keys, use_id = np.unique(use_key, return_inverse=True)
    key_group = keys // n
    group_start = np.searchsorted(key_group, np.arange(num_groups))
    use_bit = use_id - group_start[group[d_dst]]
    values = np.split(keys % n, group_start[1:])
    # A definition matters only if the defined node is a value of the defining node's group.
    def_key = group[def_src] * n + def_dst
    where = np.minimum(np.searchsorted(keys, def_key), max(len(keys) - 1, 0))
    is_value = (keys[where] == def_key) if len(keys) else np.zeros(len(def_key), dtype=bool)
    def_bit = where - group_start[group[def_src]]

    group_size = np.diff(np.append(group_start, len(keys)))  # values per group
    chunked = group_size > DENSE_VALUES
    # dense groups: one int per node; chunked groups: sparse (chunk, bits) pairs per node (never a wide int)
    uses: list = [0] * n
    kills: list = [-1] * n  # ~defs(n): Python ints are two's complement, so `out & kills[n]` removes defs(n)
    use_nodes, use_bits = d_dst.tolist(), use_bit.tolist()
    def_nodes, def_bits = def_src[is_value].tolist(), def_bit[is_value].tolist()
    if chunked.any():
        node_chunked = chunked[group].tolist()
        sparse_uses: dict[int, dict[int, int]] = {}
        sparse_defs: dict[int, dict[int, int]] = {}
        for nodes, bits, sparse in ((use_nodes, use_bits, sparse_uses), (def_nodes, def_bits, sparse_defs)):
            for node, bit in zip(nodes, bits, strict=True):
                if node_chunked[node]:
                    chunks = sparse.setdefault(node, {})
                    k, b = divmod(bit, CHUNK_BITS)
                    chunks[k] = chunks.get(k, 0) | (1 << b)
        for node in np.flatnonzero(chunked[group]).tolist():
            uses[node] = tuple(sorted(sparse_uses.get(node, {}).items()))
            kills[node] = tuple(sorted(sparse_defs.get(node, {}).items()))
        keep = [not node_chunked[node] for node in use_nodes]
        use_nodes = [node for node, k in zip(use_nodes, keep, strict=True) if k]
        use_bits = [bit for bit, k in zip(use_bits, keep, strict=True) if k]
        keep = [not node_chunked[node] for node in def_nodes]
        def_nodes = [node for node, k in zip(def_nodes, keep, strict=True) if k]
        def_bits = [bit for bit, k in zip(def_bits, keep, strict=True) if k]
    for node, bit in zip(use_nodes, use_bits, strict=True):
        uses[node] |= 1 << bit
    for node, bit in zip(def_nodes, def_bits, strict=True):
        kills[node] &= ~(1 << bit)
    live_in: list = [0] * n
    live_out: list = [0] * n
    for g in np.flatnonzero(chunked).tolist():
        empty = (0,) * -(-int(group_size[g]) // CHUNK_BITS)
        for node in np.flatnonzero(group == g).tolist():
            live_in[node] = live_out[node] = empty

    s_ptr, s_idx = view.adjacency_lists((CONTROL,))
    p_ptr, p_idx = view.adjacency_lists((CONTROL,), reverse=True)
    out_degree = ctrl.degree()
    seeds = np.flatnonzero((view.node_type == INSTRUCTION) & (out_degree == 0))
    # Groups never exchange work-list entries, so each can be run alone (its pops are those it would make in the
    # shared queue); small groups go first, so that a graph bound to exceed the limit fails on cheap bit sets.
    size = np.bincount(group, minlength=num_groups)
    order = np.lexsort((seeds, group[seeds], size[group[seeds]]))
    seeds = seeds[order]
    bounds = np.flatnonzero(np.diff(group[seeds])) + 1
    queued = bytearray(n)
    single = view.only_neighbours((CONTROL,))  # most nodes have one control successor and one predecessor
    single_pred = view.only_neighbours((CONTROL,), reverse=True)
    limit = max(POPS_PER_NODE * n, MIN_POPS)
    pops = 0
    for part in np.split(seeds, bounds) if len(seeds) else []:
        work = deque(part.tolist())
        for s in work:
            queued[s] = 1
        pop, push = work.popleft, work.append
        if chunked[group[part[0]]]:
            empty = live_in[int(part[0])]  # every set of the group is still the empty tuple
            pops = _run_chunked(
                work, queued, pops, limit, empty, uses, kills, live_in, live_out, s_ptr, s_idx, p_ptr, p_idx
            )
            continue
        while work:
            pops += 1
            if pops > limit:
                raise AnalysisError(_LIMIT_MESSAGE)
            node = pop()
            queued[node] = 0
            s = single[node]
            if s >= 0:
                out = live_in[s]
            else:
                out = 0
                for s in s_idx[s_ptr[node] : s_ptr[node + 1]]:
                    out |= live_in[s]
            new = uses[node] | (out & kills[node])
            if not new or new != live_in[node]:
                live_in[node] = new
                p = single_pred[node]
                if p >= 0:
                    if not queued[p]:
                        queued[p] = 1
                        push(p)
                else:
                    for p in p_idx[p_ptr[node] : p_ptr[node + 1]]:
                        if not queued[p]:
                            queued[p] = 1
                            push(p)
            live_out[node] = out
    return LiveSets(live_in, live_out, group, values, pops)


#: The reference's limit on work-list pops, ``max(2 |V|, 5000)``: labels past it are an error, as the data set has
#: none for such a graph (a benchmark that needs labels of the largest functions raises both).
POPS_PER_NODE = 2
MIN_POPS = 5000
_LIMIT_MESSAGE = "Failed to terminate liveness computation in 5000 steps"


def _chunks_of(bits: int) -> tuple[tuple[int, int], ...]:
    """A (non-negative) bit set as its non-zero ``(chunk index, chunk bits)`` pairs."""
    pairs = []
    k = 0
    mask = (1 << CHUNK_BITS) - 1
    while bits:
        chunk = bits & mask
        if chunk:
            pairs.append((k, chunk))
        bits >>= CHUNK_BITS
        k += 1
    return tuple(pairs)


def _union(a: tuple, b: tuple) -> tuple:
    """Chunk-wise union that reuses the int objects of ``a`` or ``b`` wherever a chunk is unchanged."""
    if a is b:
        return a
    merged = []
    for x, y in zip(a, b):
        if x is y or not y:
            merged.append(x)
        elif not x:
            merged.append(y)
        else:
            z = x | y
            merged.append(x if z == x else y if z == y else z)
    return tuple(merged)


def _run_chunked(work, queued, pops, limit, empty, uses, kills, live_in, live_out, s_ptr, s_idx, p_ptr, p_idx) -> int:
    """The work list of one chunked group (the dense loop of :func:`_live_sets`, on tuples of chunks)."""
    pop, push = work.popleft, work.append
    while work:
        pops += 1
        if pops > limit:
            raise AnalysisError(_LIMIT_MESSAGE)
        node = pop()
        queued[node] = 0
        successors = s_idx[s_ptr[node] : s_ptr[node + 1]]
        out = live_in[successors[0]] if successors else empty
        for s in successors[1:]:
            out = _union(out, live_in[s])
        new = out
        killed, used = kills[node], uses[node]
        if killed or used:
            chunks = list(out)
            for k, bits in killed:
                old = chunks[k]
                if old & bits:
                    chunks[k] = old & ~bits
            for k, bits in used:
                old = chunks[k]
                if (old | bits) != old:
                    chunks[k] = old | bits
            new = tuple(chunks)
        if not any(new) or new != live_in[node]:
            live_in[node] = new
            for p in p_idx[p_ptr[node] : p_ptr[node + 1]]:
                if not queued[p]:
                    queued[p] = 1
                    push(p)
        live_out[node] = out
    return pops


class Liveness(RootedAnalysis):
    """Live-out variables and constants of an instruction."""

    name = "liveness"

    def __init__(self, view: GraphView) -> None:
        super().__init__(view)
        self.sets = live_sets(view)
        self._indptr, self._indices = view.adjacency_lists((CONTROL, DATA))
        self._single = view.only_neighbours((CONTROL, DATA))

    def eligible_roots(self) -> np.ndarray:
        return np.flatnonzero(self.sets.has_out()).astype(np.int64)

    def run_one(self, root: int) -> tuple[np.ndarray, int, int]:
        if self.view.node_type[root] != INSTRUCTION:
            raise AnalysisError("Root node must be an instruction")
        live = self.sets.out_nodes(root)
        wanted = set(live.tolist())
        trace = trace_bfs(self._indptr, self._indices, root, 1, self._single)
        step = 0
        for k, level in enumerate(trace.levels):
            if not wanted.isdisjoint(level):
                step = trace.start + k
        return live, step, len(live)
