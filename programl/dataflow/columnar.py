"""A columnar (numpy) view of a ProgramGraph, built once and shared by every analysis and root
(docs/spec/analyses.md#common-rules).

The analyses of docs/spec/analyses.md never touch the protobuf per root: they read the node kinds, node functions and
the edge list from flat numpy arrays, and walk adjacency in compressed-sparse-row (CSR) form, one CSR per flow and
direction. docs/spec/analyses.md#common-rules: the reference builds its adjacency lists *in edge order*, and the step
counts of the BFS-based analyses depend on that order, so each CSR row lists its neighbours in the order of the edges
that produced them (a stable sort by source, or by target for the reverse direction). Parallel edges stay (a node
appears twice).

CSRs are built lazily and cached, as are the Python-list copies that the per-root loops iterate over, and per-graph
results of an analysis's ``Init`` (e.g. liveness sets) may be cached in :attr:`GraphView.cache`.

:func:`cached_view` keeps the views of the last two ``ProgramGraph`` messages, each with a private copy of the message
it was built from (protobuf messages are mutable and take no weak references, so identity cannot be trusted): a
message equal to a copy (``==``, compared in C, about half the cost of serialising it) gets that copy's view. Calling
``analyze(graph, a)`` once per analysis builds the view, its adjacency and the per-graph sets once (not
once per call), and a graph changed between calls gets a new view.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np

from programl.exceptions import AnalysisError

__all__ = [
    "CONTROL",
    "DATA",
    "CALL",
    "INSTRUCTION",
    "VARIABLE",
    "CONSTANT",
    "CSR",
    "GraphView",
    "as_view",
    "cached_view",
    "clear_view_cache",
]

# Node.Type and Edge.Flow values (docs/spec/graph.md#node-and-edge-kinds)
INSTRUCTION, VARIABLE, CONSTANT = 0, 1, 2
CONTROL, DATA, CALL = 0, 1, 2


@dataclass(frozen=True)
class CSR:
    """Adjacency of one flow in one direction, rows in node order and neighbours in edge order.

    Attributes:
        indptr: ``(num_nodes + 1,)`` int64; the neighbours of node ``i`` are ``indices[indptr[i]:indptr[i + 1]]``.
        indices: ``(num_edges_of_flow,)`` int32 neighbour node indices (targets, or sources when reversed).
        edge_ids: ``(num_edges_of_flow,)`` int64 index into the graph's edge list for each entry of ``indices``.
    """

    indptr: np.ndarray
    indices: np.ndarray
    edge_ids: np.ndarray

    def degree(self) -> np.ndarray:
        """Number of neighbours (with multiplicity) of every node."""
        return np.diff(self.indptr)


class GraphView:
    """Flat arrays of one program graph: what the data-flow analyses read.

    Build it once with :meth:`from_graph` (or :func:`as_view`) and pass it to any number of analyses.

    Attributes:
        num_nodes: Number of nodes.
        num_edges: Number of edges.
        node_type: ``(N,)`` int8 ``Node.Type`` (0 instruction, 1 variable, 2 constant).
        node_function: ``(N,)`` int32 ``Node.function`` (0 when unset, as for constants and the external node).
        edge_src, edge_dst: ``(E,)`` int32 endpoints, in edge order.
        edge_flow: ``(E,)`` int8 ``Edge.Flow`` (0 control, 1 data, 2 call).
        edge_pos: ``(E,)`` int32 ``Edge.position``.
        cache: Free-form per-graph cache for analyses (e.g. liveness sets), keyed by analysis name.
    """

    def __init__(
        self,
        node_type: Sequence[int] | np.ndarray,
        node_function: Sequence[int] | np.ndarray,
        edge_src: Sequence[int] | np.ndarray,
        edge_dst: Sequence[int] | np.ndarray,
        edge_flow: Sequence[int] | np.ndarray,
        edge_pos: Sequence[int] | np.ndarray | None = None,
        node_text: Sequence[str] | None = None,
        graph: Any = None,
    ) -> None:
        """Wrap already-extracted arrays (see :meth:`from_graph` for a ProgramGraph).

        Args:
            node_type: Node kinds.
            node_function: Function index of every node.
            edge_src: Edge sources.
            edge_dst: Edge targets.
            edge_flow: Edge flows.
            edge_pos: Edge positions (zeros when omitted).
            node_text: Node texts; when omitted they are read lazily from ``graph``.
            graph: The ProgramGraph the arrays came from, if any (used for lazy node texts).

        Raises:
            AnalysisError: If an edge refers to a node that does not exist.
        """
        self.node_type = np.asarray(node_type, dtype=np.int8)
        self.node_function = np.asarray(node_function, dtype=np.int32)
        self.edge_src = np.asarray(edge_src, dtype=np.int32)
        self.edge_dst = np.asarray(edge_dst, dtype=np.int32)
        self.edge_flow = np.asarray(edge_flow, dtype=np.int8)
        self.edge_pos = (
            np.zeros(len(self.edge_src), np.int32) if edge_pos is None else np.asarray(edge_pos, dtype=np.int32)
        )
        self.num_nodes = int(len(self.node_type))
        self.num_edges = int(len(self.edge_src))
        if len(self.node_function) != self.num_nodes:
            raise AnalysisError("node_type and node_function differ in length")
        if not (len(self.edge_dst) == len(self.edge_flow) == len(self.edge_pos) == self.num_edges):
            raise AnalysisError("edge arrays differ in length")
        if self.num_edges:
            lo = min(int(self.edge_src.min()), int(self.edge_dst.min()))
            hi = max(int(self.edge_src.max()), int(self.edge_dst.max()))
            if lo < 0 or hi >= self.num_nodes:
                raise AnalysisError(f"edge endpoint out of range in graph with {self.num_nodes} nodes")
        self._node_text = None if node_text is None else list(node_text)
        self._graph = graph
        self._csr: dict[tuple, CSR] = {}
        self._lists: dict[tuple, Any] = {}
        self.cache: dict[str, Any] = {}

    @classmethod
    def from_graph(cls, graph: Any) -> GraphView:
        """Extract the arrays of a ``ProgramGraph`` message (one pass over nodes, one over edges, both in C)."""
        edges = _columns(graph.edge, _EDGE_FIELDS, 4)
        node_cols = _columns(graph.node, _NODE_FIELDS, 2)
        return cls(
            node_type=node_cols[:, 0],
            node_function=node_cols[:, 1],
            edge_src=edges[:, 0],
            edge_dst=edges[:, 1],
            edge_flow=edges[:, 2],
            edge_pos=edges[:, 3],
            graph=graph,
        )

    # ----------------------------------------------------------------------------------------------- node texts
    def text(self, node: int) -> str:
        """The ``text`` of one node (the opcode of an instruction)."""
        if self._node_text is not None:
            return self._node_text[node]
        if self._graph is None:
            raise AnalysisError("this GraphView has no node texts")
        return self._graph.node[node].text

    @property
    def node_text(self) -> list[str]:
        """Texts of all nodes (read from the graph on first use)."""
        if self._node_text is None:
            if self._graph is None:
                raise AnalysisError("this GraphView has no node texts")
            self._node_text = [n.text for n in self._graph.node]
        return self._node_text

    # ------------------------------------------------------------------------------------------------- adjacency
    def csr(self, flow: int, reverse: bool = False) -> CSR:
        """Adjacency of ``flow`` (forward: successors; ``reverse``: predecessors), neighbours in edge order."""
        key = (flow, reverse)
        hit = self._csr.get(key)
        if hit is not None:
            return hit
        eids = np.flatnonzero(self.edge_flow == flow)
        rows = (self.edge_dst if reverse else self.edge_src)[eids]
        cols = (self.edge_src if reverse else self.edge_dst)[eids]
        order = np.argsort(rows, kind="stable")
        indptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.num_nodes), out=indptr[1:])
        csr = CSR(indptr=indptr, indices=cols[order].astype(np.int32), edge_ids=eids[order])
        self._csr[key] = csr
        return csr

    def adjacency_lists(self, flows: tuple[int, ...], reverse: bool = False) -> tuple[list[int], list[int]]:
        """``(indptr, indices)`` as Python lists for the per-root loops, flows concatenated per row.

        For several flows each row lists the neighbours of the first flow (in edge order), then those of the
        second, and so on: the order in which the reference's liveness BFS visits control then data successors.
        """
        key = (flows, reverse)
        hit = self._lists.get(key)
        if hit is not None:
            return hit
        if len(flows) == 1:
            csr = self.csr(flows[0], reverse)
            result = (csr.indptr.tolist(), csr.indices.tolist())
        else:
            parts = [self.csr(f, reverse) for f in flows]
            degree = sum(p.degree() for p in parts)
            indptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
            np.cumsum(degree, out=indptr[1:])
            indices = np.empty(int(indptr[-1]), dtype=np.int32)
            offset = indptr[:-1].copy()
            for part in parts:
                deg = part.degree()
                # destination slot of every entry of this part: row offset + rank inside the row
                rank = np.arange(len(part.indices)) - np.repeat(part.indptr[:-1], deg)
                indices[np.repeat(offset, deg) + rank] = part.indices
                offset += deg
            result = (indptr.tolist(), indices.tolist())
        self._lists[key] = result
        return result

    def only_neighbours(self, flows: tuple[int, ...], reverse: bool = False) -> list[int]:
        """Per node, its single neighbour in :meth:`adjacency_lists` ``(flows, reverse)``, or -1 (none or several).

        Most instructions have one control successor and one predecessor: the per-root loops use this list to skip
        slicing their adjacency.
        """
        key = ("only", flows, reverse)
        hit = self._lists.get(key)
        if hit is None:
            indptr, indices = (np.asarray(a, dtype=np.int64) for a in self.adjacency_lists(flows, reverse))
            if len(indices):
                first = indices[np.minimum(indptr[:-1], len(indices) - 1)]
                hit = np.where(np.diff(indptr) == 1, first, -1).tolist()
            else:
                hit = [-1] * self.num_nodes
            self._lists[key] = hit
        return hit

    def nodes_of_type(self, node_type: int) -> np.ndarray:
        """Indices >= 1 of the nodes of one kind, ascending (docs/spec/analyses.md#common-rules: index 0 is never a
        root)."""
        idx = np.flatnonzero(self.node_type == node_type)
        return idx[idx >= 1]

    def __repr__(self) -> str:
        return f"GraphView(num_nodes={self.num_nodes}, num_edges={self.num_edges})"


_EDGE_FIELDS = attrgetter("source", "target", "flow", "position")
_NODE_FIELDS = attrgetter("type", "function")


def _columns(items: Any, fields: attrgetter, width: int) -> np.ndarray:
    """``(len(items), width)`` int64 of the ``fields`` of every item (``map`` and ``fromiter`` loop in C)."""
    flat = itertools.chain.from_iterable(map(fields, items))
    try:
        count = width * len(items)
    except TypeError:
        count = -1
    return np.fromiter(flat, dtype=np.int64, count=count).reshape(-1, width)


def as_view(graph: Any) -> GraphView:
    """Return ``graph`` if it is a :class:`GraphView`, else build one from a ``ProgramGraph``."""
    if isinstance(graph, GraphView):
        return graph
    if hasattr(graph, "node") and hasattr(graph, "edge"):
        return GraphView.from_graph(graph)
    raise TypeError(f"expected a ProgramGraph or a GraphView, got {type(graph).__name__}")


# cached_view: at most this many views, holding at most this many nodes in all (the newest view always stays); a
# cached view keeps its per-analysis state (liveness sets) alive, so only the graphs just analysed are kept
_CACHE_VIEWS = 2
_CACHE_NODES = 1_000_000
_cache: OrderedDict[int, tuple[Any, GraphView]] = OrderedDict()  # serial number -> (private copy, its view)
_serial = itertools.count()
_cache_lock = threading.Lock()


def cached_view(graph: Any) -> GraphView:
    """Like :func:`as_view`, but a ``ProgramGraph`` equal to one seen recently gets the same view back (with its
    adjacency and per-analysis caches).

    Each cached view keeps a private copy of the message it was built from (the view reads its node texts from it,
    when an analysis needs them) and is found by comparing the argument with these copies (``==``, in C): a graph
    modified since, in any field, gets a fresh view. (A message that differs from itself, through a NaN float
    feature, is never found again: each call builds its view anew.)
    """
    if isinstance(graph, GraphView):
        return graph
    if not callable(getattr(graph, "CopyFrom", None)):
        return as_view(graph)
    with _cache_lock:
        entries = list(_cache.items())
    kind = type(graph)
    for key, (copy, view) in reversed(entries):
        if type(copy) is kind and copy == graph:
            with _cache_lock:
                if key in _cache:
                    _cache.move_to_end(key)
            return view
    copy = kind()
    copy.CopyFrom(graph)
    view = GraphView.from_graph(copy)  # the copy is never modified: the view may read its texts later
    with _cache_lock:
        _cache[next(_serial)] = (copy, view)
        while len(_cache) > 1 and (
            len(_cache) > _CACHE_VIEWS or sum(v.num_nodes for _, v in _cache.values()) > _CACHE_NODES
        ):
            _cache.popitem(last=False)
    return view


def clear_view_cache() -> None:
    """Forget the views kept by :func:`cached_view`."""
    with _cache_lock:
        _cache.clear()
