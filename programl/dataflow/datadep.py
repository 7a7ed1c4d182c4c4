"""Data dependencies: the instructions a variable's value depends on (docs/spec/analyses.md#datadep).

* Eligible roots: every VARIABLE node with index >= 1 (argument variables included).
* Labels: the INSTRUCTION nodes dequeued by the reference's BFS from ``(root, 0)`` backward over DATA edges (the
  producer of the variable, the producers of its operands, transitively). Variables and constants are never
  labelled.
* ``data_flow_step_count``: distance of the last dequeued entry, duplicate entries included (hops count variable
  and instruction nodes alike; an argument root gives 0).
* ``data_flow_active_node_count``: number of labelled instructions.
"""

from __future__ import annotations

import numpy as np

from programl.dataflow.base import RootedAnalysis
from programl.dataflow.bfs import trace_bfs
from programl.dataflow.columnar import DATA, INSTRUCTION, VARIABLE, GraphView

__all__ = ["DataDep"]


class DataDep(RootedAnalysis):
    """Backward data-flow closure of a variable, restricted to instructions."""

    name = "datadep"

    def __init__(self, view: GraphView) -> None:
        super().__init__(view)
        self._indptr, self._indices = view.adjacency_lists((DATA,), reverse=True)
        self._single = view.only_neighbours((DATA,), reverse=True)

    def eligible_roots(self) -> np.ndarray:
        return self.view.nodes_of_type(VARIABLE)

    def run_one(self, root: int) -> tuple[np.ndarray, int, int]:
        trace = trace_bfs(self._indptr, self._indices, root, 0, self._single)
        seen = np.fromiter(trace.visited, dtype=np.int64, count=len(trace.visited))
        positives = seen[self.view.node_type[seen] == INSTRUCTION]
        return positives, trace.last_distance, len(positives)
