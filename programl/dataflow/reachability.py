"""Reachability: which instructions a root reaches over control edges (docs/spec/analyses.md#reachability).

* Eligible roots: every INSTRUCTION node with index >= 1.
* Labels: every node the reference's BFS dequeues, starting at ``(root, 1)`` over CONTROL edges only.
* ``data_flow_step_count``: distance of the last dequeued entry (a lone root gives 1, a chain of four gives 4).
* ``data_flow_active_node_count``: number of dequeues, duplicate queue entries included
  (docs/spec/analyses.md#common-rules), computed exactly without playing a queue that grows exponentially
  (``bfs.count_dequeues``).
"""

from __future__ import annotations

import numpy as np

from programl.dataflow.base import RootedAnalysis
from programl.dataflow.bfs import count_dequeues, trace_bfs
from programl.dataflow.columnar import CONTROL, INSTRUCTION, GraphView

__all__ = ["Reachability"]


class Reachability(RootedAnalysis):
    """Forward control-flow reachability from an instruction."""

    name = "reachability"

    def __init__(self, view: GraphView) -> None:
        super().__init__(view)
        self._indptr, self._indices = view.adjacency_lists((CONTROL,))
        self._single = view.only_neighbours((CONTROL,))

    def eligible_roots(self) -> np.ndarray:
        return self.view.nodes_of_type(INSTRUCTION)

    def run_one(self, root: int) -> tuple[set[int], int, int]:
        trace = trace_bfs(self._indptr, self._indices, root, 1, self._single)
        return trace.visited, trace.last_distance, count_dequeues(self._indptr, self._indices, trace)
