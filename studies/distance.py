"""How far each node is from a data-flow example's root, and node scores bucketed by that distance (issue 11 item 4;
roots and labels as in SPEC §4.1, scores as in SPEC §6.1).

A data-flow GGNN (SPEC §6.1) marks the root in the initial node states and passes messages along every edge in both
directions (forward and backward edge types) for T steps, so after T steps a node's state depends on the root only if
the root is at most T edges away, ignoring direction. Two distances per node, each a breadth-first search in numpy
(linear in the nodes and edges reached; :func:`bfs_distances`):

* ``hops`` (:func:`hop_distances`): the length of a shortest path from the root to the node over every edge (control,
  data and call), ignoring direction. What a T-step GGNN can see at all: a node more than T hops away gets the same
  prediction whatever the root is.
* ``control`` (:func:`control_distances`): the analysis's own distance, through forward control flow. An
  instruction's is the length of a shortest path of CONTROL edges (flow 0) from the root to it, followed forward
  (the root: 0). A variable's or constant's is one more than the smallest distance among the instructions that use
  it (targets of its DATA edges ``value -> instruction``): ``min over uses i of control(root, i) + 1``. This is the
  distance behind liveness (SPEC §4.5: a value is live out of the root when some forward control path from the root
  reaches a use of it before a definition), and for instructions the distance behind reachability (SPEC §4.2). A
  value used by the root itself gets 1, also when it is live out only because a loop leads back to the root. A
  node with no such path (an instruction that control flow from the root never reaches, a value none of whose
  users it reaches, anything in another function: call edges are not followed) is unreachable (-1).

Buckets (:data:`BUCKETS`): ``0-5``, ``6-10``, ``11-20``, ``21-30``, ``31-60``, ``61-200``, ``>200`` and
``unreachable``. :class:`DistanceScores` counts, per bucket, the true positives, false negatives and false positives
of a model's node predictions (positive class: label 1), with precision, recall and F1 per bucket, and each bucket's
share of all positives and of all misses; every node falls in exactly one bucket, so the pooled counts are those of
all nodes (:meth:`DistanceScores.pooled` is the pooled precision/recall/F1 of SPEC §6.1's ``pooled_*``).

No torch here: ``studies/distance_scores.py`` runs a model over a data set and feeds this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from programl.dataflow.columnar import CONTROL, DATA, INSTRUCTION, GraphView, as_view
from programl.util.scores import precision_recall_f1, ratio

__all__ = [
    "BUCKETS",
    "DISTANCES",
    "UNREACHABLE",
    "DistanceScores",
    "bfs_distances",
    "bucket_index",
    "control_distances",
    "hop_distances",
    "root_distances",
]

#: The distances :func:`root_distances` computes.
DISTANCES = ("hops", "control")
#: Distance of a node that no path from the root reaches.
UNREACHABLE = -1
#: Bucket names, in order; the first seven are ranges of distances (inclusive), the last is :data:`UNREACHABLE`.
BUCKETS = ("0-5", "6-10", "11-20", "21-30", "31-60", "61-200", ">200", "unreachable")
#: Upper bound (inclusive) of each finite bucket but the last (``>200``).
_UPPER = np.array([5, 10, 20, 30, 60, 200])


def bfs_distances(indptr: np.ndarray, indices: np.ndarray, sources) -> np.ndarray:
    """Breadth-first distances from ``sources`` in a CSR adjacency, one numpy step per level.

    Args:
        indptr: ``(N + 1,)`` row pointers; the neighbours of node ``i`` are ``indices[indptr[i]:indptr[i + 1]]``.
        indices: Neighbour node ids.
        sources: Start node(s), at distance 0.

    Returns:
        ``(N,)`` int64: the number of edges on a shortest path from a source, :data:`UNREACHABLE` where none.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    dist = np.full(len(indptr) - 1, UNREACHABLE, dtype=np.int64)
    frontier = np.unique(np.asarray(sources, dtype=np.int64).reshape(-1))
    dist[frontier] = 0
    level = 0
    while frontier.size:
        starts = indptr[frontier]
        counts = indptr[frontier + 1] - starts
        total = int(counts.sum())
        if not total:
            break
        # the positions of every frontier node's neighbours in ``indices``, without a Python loop
        first = np.cumsum(counts) - counts
        neighbours = indices[np.repeat(starts - first, counts) + np.arange(total)]
        frontier = np.unique(neighbours[dist[neighbours] == UNREACHABLE])
        level += 1
        dist[frontier] = level
    return dist


def _undirected(view: GraphView) -> tuple[np.ndarray, np.ndarray]:
    """CSR of every edge in both directions (cached in ``view.cache``)."""
    hit = view.cache.get("distance.undirected")
    if hit is None:
        src = np.concatenate([view.edge_src, view.edge_dst]).astype(np.int64)
        dst = np.concatenate([view.edge_dst, view.edge_src]).astype(np.int64)
        order = np.argsort(src, kind="stable")
        indptr = np.zeros(view.num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=view.num_nodes), out=indptr[1:])
        hit = view.cache["distance.undirected"] = (indptr, dst[order])
    return hit


def hop_distances(graph, root: int) -> np.ndarray:
    """``hops``: shortest path lengths from ``root`` over all edges (control, data, call), direction ignored.

    Args:
        graph: A ``ProgramGraph`` or a :class:`~programl.dataflow.GraphView` (whose cache keeps the adjacency for
            the graph's other roots).
        root: The root node.

    Returns:
        ``(N,)`` int64 distances, :data:`UNREACHABLE` (-1) for another connected component.
    """
    view = as_view(graph)
    return bfs_distances(*_undirected(view), [int(root)])


def control_distances(graph, root: int) -> np.ndarray:
    """``control``: forward control-flow distance from ``root`` (module docstring for the exact definition).

    Instructions: shortest path over CONTROL edges, forward. Variables and constants: ``min(control(i) + 1)`` over
    the instructions ``i`` their DATA edges lead to (their uses). The root itself: 0.

    Returns:
        ``(N,)`` int64 distances, :data:`UNREACHABLE` (-1) where there is no such path.
    """
    view = as_view(graph)
    csr = view.csr(CONTROL)
    dist = bfs_distances(csr.indptr, csr.indices, [int(root)])
    values = view.node_type != INSTRUCTION
    dist[values] = UNREACHABLE
    uses = (view.edge_flow == DATA) & values[view.edge_src] & ~values[view.edge_dst]
    src, dst = view.edge_src[uses].astype(np.int64), view.edge_dst[uses].astype(np.int64)
    reached = dist[dst] != UNREACHABLE
    best = np.full(view.num_nodes, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, src[reached], dist[dst[reached]] + 1)
    found = values & (best != np.iinfo(np.int64).max)
    dist[found] = best[found]
    dist[int(root)] = 0
    return dist


def root_distances(graph, root: int, kind: str) -> np.ndarray:
    """The ``kind`` distance (``hops`` or ``control``) of every node from ``root``.

    Raises:
        ValueError: An unknown ``kind``.
    """
    if kind == "hops":
        return hop_distances(graph, root)
    if kind == "control":
        return control_distances(graph, root)
    raise ValueError(f"unknown distance {kind!r}; expected one of {', '.join(DISTANCES)}")


def bucket_index(distances) -> np.ndarray:
    """Index into :data:`BUCKETS` of each distance (``0-5`` is 0 ... ``>200`` is 6, :data:`UNREACHABLE` is 7)."""
    d = np.asarray(distances, dtype=np.int64)
    out = np.searchsorted(_UPPER, d, side="left")  # 0..6 for d >= 0
    return np.where(d < 0, len(BUCKETS) - 1, out)


@dataclass
class DistanceScores:
    """Confusion counts of node predictions per distance bucket (module docstring).

    Attributes:
        counts: ``(len(BUCKETS), 4)`` int64: true positives, false negatives, false positives, true negatives.
        positives_at, misses_at: Positives and false negatives per exact finite distance (index = distance), for
            thresholds other than the bucket bounds (:meth:`beyond`).
        examples: Examples added.
    """

    counts: np.ndarray = field(default_factory=lambda: np.zeros((len(BUCKETS), 4), dtype=np.int64))
    positives_at: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    misses_at: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    examples: int = 0

    def add(self, distances, predicted, target) -> DistanceScores:
        """Add one example (or several, concatenated): per node its distance, predicted and true label.

        Args:
            distances: ``(N,)`` distances from the root (:data:`UNREACHABLE` for none).
            predicted: ``(N,)`` predicted labels (bool or 0/1).
            target: ``(N,)`` true labels.

        Returns:
            self.
        """
        d = np.asarray(distances, dtype=np.int64).reshape(-1)
        p = np.asarray(predicted).reshape(-1).astype(bool)
        t = np.asarray(target).reshape(-1).astype(bool)
        if not (len(d) == len(p) == len(t)):
            raise ValueError(f"{len(d)} distances, {len(p)} predictions and {len(t)} labels")
        cell = np.where(t, np.where(p, 0, 1), np.where(p, 2, 3))  # TP, FN, FP, TN
        flat = bucket_index(d) * 4 + cell
        self.counts += np.bincount(flat, minlength=self.counts.size).reshape(self.counts.shape)
        finite = d >= 0
        self.positives_at = _add_counts(self.positives_at, d[finite & t])
        self.misses_at = _add_counts(self.misses_at, d[finite & t & ~p])
        self.examples += 1
        return self

    def merge(self, other: DistanceScores) -> DistanceScores:
        """Add the counts of ``other``; returns self."""
        self.counts += other.counts
        self.positives_at = _add_counts(self.positives_at, None, other.positives_at)
        self.misses_at = _add_counts(self.misses_at, None, other.misses_at)
        self.examples += other.examples
        return self

    def pooled(self) -> dict[str, Any]:
        """Precision, recall and F1 of all nodes pooled, with the counts."""
        tp, fn, fp, tn = (int(v) for v in self.counts.sum(axis=0))
        return {
            "true_positives": tp,
            "false_negatives": fn,
            "false_positives": fp,
            "true_negatives": tn,
            **precision_recall_f1(tp, fn, fp),
        }

    def rows(self) -> list[dict[str, Any]]:
        """One row per bucket: its name, counts, precision, recall, F1, and its share of all positives and of all
        false negatives (misses)."""
        positives = int(self.counts[:, :2].sum())
        misses = int(self.counts[:, 1].sum())
        out = []
        for name, (tp, fn, fp, tn) in zip(BUCKETS, self.counts.tolist()):
            out.append(
                {
                    "bucket": name,
                    "nodes": tp + fn + fp + tn,
                    "true_positives": tp,
                    "false_negatives": fn,
                    "false_positives": fp,
                    **precision_recall_f1(tp, fn, fp),
                    "positive_share": ratio(tp + fn, positives),
                    "miss_share": ratio(fn, misses),
                }
            )
        return out

    def beyond(self, distance: int) -> dict[str, int]:
        """Positives and misses farther than ``distance`` (unreachable included): with ``hops`` and ``distance = T``,
        the positives a T-step GGNN cannot tell from the root at all."""
        unreachable = self.counts[-1]
        return {
            "positives": int(self.positives_at[distance + 1 :].sum() + unreachable[0] + unreachable[1]),
            "misses": int(self.misses_at[distance + 1 :].sum() + unreachable[1]),
        }

    def to_dict(self) -> dict[str, Any]:
        """``{"examples", "pooled", "buckets": rows()}``."""
        return {"examples": self.examples, "pooled": self.pooled(), "buckets": self.rows()}

    def table(self) -> str:
        """The rows as an aligned text table, with a pooled line."""
        header = (
            f"{'distance':>11} {'nodes':>9} {'TP':>8} {'FN':>8} {'FP':>8} {'P':>6} {'R':>6} {'F1':>6} "
            f"{'pos%':>6} {'miss%':>6}"
        )
        lines = [header]
        for r in self.rows():
            lines.append(
                f"{r['bucket']:>11} {r['nodes']:>9,} {r['true_positives']:>8,} {r['false_negatives']:>8,} "
                f"{r['false_positives']:>8,} {r['precision']:>6.3f} {r['recall']:>6.3f} {r['f1']:>6.3f} "
                f"{100 * r['positive_share']:>6.1f} {100 * r['miss_share']:>6.1f}"
            )
        p = self.pooled()
        nodes = int(self.counts.sum())
        lines.append(
            f"{'all':>11} {nodes:>9,} {p['true_positives']:>8,} {p['false_negatives']:>8,} {p['false_positives']:>8,} "
            f"{p['precision']:>6.3f} {p['recall']:>6.3f} {p['f1']:>6.3f} {100.0:>6.1f} {100.0:>6.1f}"
        )
        return "\n".join(lines)


def _add_counts(counts: np.ndarray, distances: np.ndarray | None, other: np.ndarray | None = None) -> np.ndarray:
    """``counts`` plus a histogram of ``distances`` (or plus the histogram ``other``), grown as needed."""
    extra = np.bincount(distances) if distances is not None else other
    if extra is None or not len(extra):
        return counts
    out = np.zeros(max(len(counts), len(extra)), dtype=np.int64)
    out[: len(counts)] += counts
    out[: len(extra)] += extra
    return out
