"""What every rooted data-flow analysis shares: its result arrays and the run-one-root protocol
(docs/spec/analyses.md#common-rules, docs/spec/wire-format.md#label-records).

An analysis is constructed once per graph (the reference's ``Init``: adjacency and any whole-graph sets), lists
its eligible roots, and labels one root at a time. :class:`AnalysisResult` holds the labels of several roots as
numpy arrays: exactly the content of one ``ProgramGraphFeaturesList`` of docs/spec/wire-format.md#label-records (see
``records`` for the protobuf form).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from programl.dataflow.columnar import GraphView

__all__ = ["AnalysisResult", "RootedAnalysis"]


@dataclass(frozen=True)
class AnalysisResult:
    """Labels of one analysis on one graph, one row per root (record order = root order).

    Attributes:
        analysis: Name of the analysis (``None`` when decoded from a file that does not say).
        roots: ``(R,)`` int64 root node of every example (``data_flow_root_node``).
        labels: ``(R, N)`` uint8 0/1 label of every node (``data_flow_value``).
        step_counts: ``(R,)`` int64 ``data_flow_step_count``.
        active_node_counts: ``(R,)`` int64 ``data_flow_active_node_count``.
    """

    analysis: str | None
    roots: np.ndarray
    labels: np.ndarray
    step_counts: np.ndarray
    active_node_counts: np.ndarray

    @property
    def num_nodes(self) -> int:
        """Number of nodes of the labelled graph."""
        return int(self.labels.shape[1])

    def __len__(self) -> int:
        return int(len(self.roots))

    def root_mask(self) -> np.ndarray:
        """``(R, N)`` uint8 one-hot root selector (``data_flow_root_node``)."""
        mask = np.zeros(self.labels.shape, dtype=np.uint8)
        mask[np.arange(len(self.roots)), self.roots] = 1
        return mask

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AnalysisResult):
            return NotImplemented
        return (
            self.analysis == other.analysis
            and np.array_equal(self.roots, other.roots)
            and np.array_equal(self.labels, other.labels)
            and np.array_equal(self.step_counts, other.step_counts)
            and np.array_equal(self.active_node_counts, other.active_node_counts)
        )

    __hash__ = None  # type: ignore[assignment]


class RootedAnalysis:
    """Base class: ``__init__`` is the reference's ``Init``; subclasses implement the two methods below.

    Args:
        view: The graph (built once, shared by all analyses).
    """

    name: ClassVar[str] = ""

    def __init__(self, view: GraphView) -> None:
        self.view = view

    def eligible_roots(self) -> np.ndarray:
        """All nodes that may be a root, ascending (int64)."""
        raise NotImplementedError

    def run_one(self, root: int) -> tuple[Iterable[int], int, int]:
        """Label one (eligible) root.

        Returns:
            ``(positive_nodes, data_flow_step_count, data_flow_active_node_count)``.
        """
        raise NotImplementedError

    def run(self, roots: Iterable[int]) -> AnalysisResult:
        """Label every root in order; see :class:`AnalysisResult`."""
        roots = np.asarray(list(roots), dtype=np.int64)
        labels = np.zeros((len(roots), self.view.num_nodes), dtype=np.uint8)
        steps = np.zeros(len(roots), dtype=np.int64)
        active = np.zeros(len(roots), dtype=np.int64)
        for k, root in enumerate(roots.tolist()):
            positives, steps[k], active[k] = self.run_one(root)
            idx = np.fromiter(positives, dtype=np.int64) if not isinstance(positives, np.ndarray) else positives
            labels[k, idx] = 1
        return AnalysisResult(self.name, roots, labels, steps, active)
