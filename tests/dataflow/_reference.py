"""Slow, literal implementations of the five analyses of SPEC §4: the oracle for exact labels *and* counters.

Each function follows the prose of SPEC §4 step by step with plain Python containers (a real FIFO queue, real
sets, sweeps in index order), with no cleverness: the production code in ``programl.dataflow`` must agree with
these on every graph. ``QueueTooLong`` is raised when a BFS queue would exceed ``MAX_ENTRIES`` (the literal queue
is exponential on some graphs), so that tests can discard such examples.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

INSTRUCTION, VARIABLE, CONSTANT = 0, 1, 2
CONTROL, DATA, CALL = 0, 1, 2
MAX_ENTRIES = 200_000


class QueueTooLong(Exception):
    """The literal queue would hold more than MAX_ENTRIES entries."""


class RefError(Exception):
    """The reference analysis fails (same message as the reference)."""


@dataclass
class Graph:
    """A program graph as plain lists (node i: types[i], functions[i], texts[i]; edges: (src, dst, flow, pos))."""

    types: list[int]
    functions: list[int]
    texts: list[str]
    edges: list[tuple[int, int, int, int]] = field(default_factory=list)

    @classmethod
    def from_proto(cls, g) -> Graph:
        return cls(
            types=[n.type for n in g.node],
            functions=[n.function for n in g.node],
            texts=[n.text for n in g.node],
            edges=[(e.source, e.target, e.flow, e.position) for e in g.edge],
        )

    @property
    def n(self) -> int:
        return len(self.types)

    def adj(self, flow: int, reverse: bool = False) -> list[list[int]]:
        """Adjacency lists built by appending edges in edge order (SPEC §4.1)."""
        out: list[list[int]] = [[] for _ in range(self.n)]
        for s, t, f, _ in self.edges:
            if f == flow:
                if reverse:
                    out[t].append(s)
                else:
                    out[s].append(t)
        return out

    def reverse_data_positions(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.n)]
        for _, t, f, p in self.edges:
            if f == DATA:
                out[t].append(p)
        return out


def quirky_bfs(neighbours, root: int, start: int, n: int) -> list[tuple[int, int]]:
    """The reference queue: mark on dequeue, enqueue every unvisited neighbour. Returns every dequeued entry."""
    visited = [False] * n
    q = deque([(root, start)])
    out = []
    while q:
        node, dist = q.popleft()
        out.append((node, dist))
        if len(out) + len(q) > MAX_ENTRIES:
            raise QueueTooLong
        visited[node] = True
        for nxt in neighbours(node):
            if not visited[nxt]:
                q.append((nxt, dist + 1))
    return out


def instructions(g: Graph) -> list[int]:
    return [i for i in range(1, g.n) if g.types[i] == INSTRUCTION]


def variables(g: Graph) -> list[int]:
    return [i for i in range(1, g.n) if g.types[i] == VARIABLE]


# ------------------------------------------------------------------------------------------------ §4.2 reachability
def reachability(g: Graph, root: int):
    cfg = g.adj(CONTROL)
    entries = quirky_bfs(lambda u: cfg[u], root, 1, g.n)
    seen = {u for u, _ in entries}
    labels = [1 if i in seen else 0 for i in range(g.n)]
    return labels, entries[-1][1], len(entries)


# ---------------------------------------------------------------------------------------------------- §4.3 dominance
def dominance(g: Graph, root: int):
    rcfg = g.adj(CONTROL, reverse=True)
    f = g.functions[root]
    members = [i for i in range(g.n) if i and g.functions[i] == f]
    initial = set(members) - {root}
    dom: dict[int, set[int]] = {m: ({root} if m == root else set(initial)) for m in members}
    steps = 0
    changed = True
    while changed:
        changed = False
        for m in members:
            if m == root:
                continue
            preds = rcfg[m]
            if preds:
                inter = None
                for p in preds:
                    s = dom.get(p, set())  # a predecessor outside the function contributes an empty set
                    inter = set(s) if inter is None else inter & s
            else:
                inter = set()
            new = {m} | inter
            if new != dom[m]:
                steps += 1
                if steps > 1000:
                    raise RefError("Dominance fixed-point not found in 1000 steps")
                dom[m] = new
                changed = True
    labels = [1 if (i in dom and root in dom[i]) else 0 for i in range(g.n)]
    return labels, steps, sum(labels)


# ------------------------------------------------------------------------------------------------------ §4.4 datadep
def datadep(g: Graph, root: int):
    rdfg = g.adj(DATA, reverse=True)
    entries = quirky_bfs(lambda u: rdfg[u], root, 0, g.n)
    seen = {u for u, _ in entries}
    labels = [1 if (i in seen and g.types[i] == INSTRUCTION) else 0 for i in range(g.n)]
    return labels, entries[-1][1], sum(labels)


# ----------------------------------------------------------------------------------------------------- §4.5 liveness
def liveness_sets(g: Graph):
    """Live-in/live-out sets by the reference's FIFO work list. Raises RefError past max(2|V|, 5000) pops."""
    cfg, rcfg = g.adj(CONTROL), g.adj(CONTROL, reverse=True)
    dfg, rdfg = g.adj(DATA), g.adj(DATA, reverse=True)
    live_in = [set() for _ in range(g.n)]
    live_out = [set() for _ in range(g.n)]
    work = deque(i for i in range(g.n) if g.types[i] == INSTRUCTION and not cfg[i])
    in_work = set(work)
    if not work:
        return live_in, live_out, 0
    pops = 0
    while work:
        pops += 1
        if pops > max(2 * g.n, 5000):
            raise RefError("Failed to terminate liveness computation in 5000 steps")
        n = work.popleft()
        in_work.discard(n)
        out = set()
        for s in cfg[n]:
            out |= live_in[s]
        new_in = set(rdfg[n]) | (out - set(dfg[n]))
        if not new_in or new_in != live_in[n]:
            live_in[n] = new_in
            for p in rcfg[n]:
                if p not in in_work:
                    work.append(p)
                    in_work.add(p)
        live_out[n] = out
    return live_in, live_out, pops


def liveness_eligible(g: Graph) -> list[int]:
    _, live_out, _ = liveness_sets(g)
    return [i for i in range(g.n) if live_out[i]]


def liveness(g: Graph, root: int):
    _, live_out, _ = liveness_sets(g)
    if g.types[root] != INSTRUCTION:
        raise RefError("Root node must be an instruction")
    out = live_out[root]
    labels = [1 if i in out else 0 for i in range(g.n)]
    cfg, dfg = g.adj(CONTROL), g.adj(DATA)
    entries = quirky_bfs(lambda u: cfg[u] + dfg[u], root, 1, g.n)
    step = max((d for u, d in entries if u in out), default=0)
    return labels, step, len(out)


# ----------------------------------------------------------------------------------------------- §4.6 subexpressions
COMMUTATIVE = {"add", "fadd", "mul", "fmul", "or", "and", "xor"}


def subexpression_groups(g: Graph) -> list[set[int]]:
    rdfg, rdp = g.adj(DATA, reverse=True), g.reverse_data_positions()
    table: dict[tuple, set[int]] = {}
    for i in range(1, g.n):
        if g.types[i] != INSTRUCTION or not rdfg[i]:
            continue
        pairs = list(zip(rdp[i], rdfg[i], strict=True))
        if g.texts[i] in COMMUTATIVE:
            pairs.sort(key=lambda pr: pr[1])
        else:
            pairs.sort()  # by position (ties, which real graphs never have, by source)
        table.setdefault((g.texts[i], tuple(s for _, s in pairs)), set()).add(i)
    return [s for s in table.values() if len(s) > 1]


def subexpressions(g: Graph, root: int):
    for group in subexpression_groups(g):
        if root in group:
            labels = [1 if i in group else 0 for i in range(g.n)]
            return labels, 2, len(group)
    raise RefError("root is in no group")


# ---------------------------------------------------------------------------------------------------------- common
def eligible(g: Graph, analysis: str) -> list[int]:
    if analysis in ("reachability", "dominance"):
        return instructions(g)
    if analysis == "datadep":
        return variables(g)
    if analysis == "liveness":
        return liveness_eligible(g)
    if analysis == "subexpressions":
        return sorted(i for s in subexpression_groups(g) for i in s)
    raise KeyError(analysis)


RUN_ONE = {
    "reachability": reachability,
    "dominance": dominance,
    "datadep": datadep,
    "liveness": liveness,
    "subexpressions": subexpressions,
}


def num_roots(num_eligible: int, max_roots: int = 10) -> int:
    return min(math.ceil(num_eligible / 10), max_roots)
