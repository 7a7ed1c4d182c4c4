"""Graph-count batches for graph-level tasks (devmap, classifyapp): :func:`plan_graph_batches`. Node-budget batches
of the data-flow task are :func:`programl.data.batching.plan_batches`.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["plan_graph_batches"]


def plan_graph_batches(
    sizes: Sequence[int],
    order: Sequence[int],
    max_nodes: int,
    max_graphs: int | None = None,
    min_graphs: int = 1,
) -> list[list[int]]:
    """Group the examples ``order`` (indices into ``sizes``) into batches, keeping their order.

    A batch closes when the next example would take it over ``max_nodes`` nodes or past ``max_graphs`` graphs; an
    example larger than ``max_nodes`` is a batch of its own. With ``min_graphs=2`` (training with BatchNorm, whose
    batch statistics need two samples) a batch of one example is merged into the batch before it (or after it, for
    the first).
    """
    batches: list[list[int]] = []
    current: list[int] = []
    nodes = 0
    for i in order:
        size = int(sizes[i])
        if current and (nodes + size > max_nodes or (max_graphs is not None and len(current) >= max_graphs)):
            batches.append(current)
            current, nodes = [], 0
        current.append(int(i))
        nodes += size
    if current:
        batches.append(current)
    if min_graphs > 1 and len(batches) > 1:
        merged: list[list[int]] = []
        for batch in batches:
            if merged and (len(batch) < min_graphs or len(merged[-1]) < min_graphs):
                merged[-1].extend(batch)
            else:
                merged.append(batch)
        batches = merged
    return batches
