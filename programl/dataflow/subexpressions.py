"""Common subexpressions: instructions that compute the same opcode over the same operand nodes
(docs/spec/analyses.md#subexpressions).

This is the real subexpressions analysis, as the policy says (docs/spec/policy.md#labels): the reference ``analyze``
CLI runs datadep under this name.

* Key of an INSTRUCTION node (index >= 1) with at least one incoming DATA edge: ``(text, operand sources)``, the
  sources ordered by node index for the commutative opcodes ``add fadd mul fmul or and xor`` and by operand
  position otherwise (ties in position, which the builder never produces, by node index).
* Instructions with equal keys form a group; groups of one are dropped. Eligible roots: members of any group.
* Labels: the root's whole group (root included); ``data_flow_step_count`` = 2; ``data_flow_active_node_count`` =
  group size.

Because every use of an instruction result is its own VARIABLE node, an operand node with a single outgoing DATA
edge can belong to one instruction only: instructions with such an operand are never grouped, and only the rest
(operands that are constants, globals or arguments) are keyed.
"""

from __future__ import annotations

import numpy as np

from programl.dataflow.base import RootedAnalysis
from programl.dataflow.columnar import DATA, INSTRUCTION, GraphView

__all__ = ["COMMUTATIVE_OPCODES", "Subexpressions"]

COMMUTATIVE_OPCODES = frozenset({"add", "fadd", "mul", "fmul", "or", "and", "xor"})


class Subexpressions(RootedAnalysis):
    """Groups of instructions with identical (opcode, operands) keys."""

    name = "subexpressions"

    def __init__(self, view: GraphView) -> None:
        super().__init__(view)
        self.groups = _groups(view)
        self._group_of = {int(m): g for g in self.groups for m in g.tolist()}

    def eligible_roots(self) -> np.ndarray:
        if not self.groups:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.concatenate(self.groups))

    def run_one(self, root: int) -> tuple[np.ndarray, int, int]:
        group = self._group_of[root]
        return group, 2, len(group)


def _groups(view: GraphView) -> list[np.ndarray]:
    """Groups (ascending node arrays, ordered by smallest member) of size > 1."""
    rev = view.csr(DATA, reverse=True)
    fwd_degree = view.csr(DATA).degree()
    indptr, sources = rev.indptr, rev.indices
    degree = np.diff(indptr)
    instructions = view.nodes_of_type(INSTRUCTION)
    instructions = instructions[degree[instructions] > 0]
    if not len(instructions):
        return []
    # Only instructions whose every operand node feeds at least two uses can share a key with another one.
    owner = np.repeat(np.arange(view.num_nodes), degree)
    single_use = np.zeros(view.num_nodes, dtype=bool)
    np.logical_or.at(single_use, owner, fwd_degree[sources] < 2)
    candidates = instructions[~single_use[instructions]]
    if len(candidates) < 2:
        return []
    positions = view.edge_pos[rev.edge_ids]
    ptr = indptr.tolist()
    src = sources.tolist()
    pos = positions.tolist()
    table: dict[tuple, list[int]] = {}
    for node in candidates.tolist():
        lo, hi = ptr[node], ptr[node + 1]
        text = view.text(node)
        if text in COMMUTATIVE_OPCODES:
            operands = tuple(sorted(src[lo:hi]))
        else:
            operands = tuple(s for _, s in sorted(zip(pos[lo:hi], src[lo:hi], strict=True)))
        table.setdefault((text, operands), []).append(node)
    groups = [np.asarray(members, dtype=np.int64) for members in table.values() if len(members) > 1]
    groups.sort(key=lambda g: int(g[0]))
    return groups
