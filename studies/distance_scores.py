"""A data-flow model's node predictions on a DeepDataFlow split, scored by each node's distance from the root
(issue 11 item 4: why a model misses nodes at T = 30; SPEC §6.1 for the model and the scores).

:func:`score_by_distance` runs a pretrained data-flow model (:func:`programl.pretrained.pretrained`) over the
examples of a :class:`~programl.datasets.DeepDataFlow` read with the model's vocabulary, at one or more step
counts T, in batches of disjoint graphs (the predictions do not depend on the batching), and adds every example's
nodes to a :class:`~studies.distance.DistanceScores` per (T, distance): ``hops`` (what a T-step GGNN can see) and
``control`` (the analysis's forward control-flow distance); :mod:`studies.distance` defines both.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Batch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from programl.dataflow.columnar import GraphView  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from studies.distance import DISTANCES, DistanceScores, root_distances  # noqa: E402

__all__ = ["example_view", "score_by_distance", "scores_to_dict"]


def example_view(data) -> GraphView:
    """The :class:`~programl.dataflow.GraphView` of one example's graph (node types and edges of a ``Data``)."""
    edge_index = data.edge_index.cpu().numpy()
    node_type = data.node_type.cpu().numpy()
    return GraphView(
        node_type=node_type,
        node_function=np.zeros(len(node_type), dtype=np.int32),
        edge_src=edge_index[0],
        edge_dst=edge_index[1],
        edge_flow=data.edge_flow.cpu().numpy(),
    )


def score_by_distance(
    pretrained,
    dataset,
    *,
    steps: Sequence[int],
    distances: Sequence[str] = DISTANCES,
    batch_nodes: int = 10_000,
    progress: Callable[[Iterable, int, str], Iterable] | None = None,
) -> dict[int, dict[str, DistanceScores]]:
    """Score a data-flow model's node predictions by distance from the root.

    Args:
        pretrained: A :class:`~programl.pretrained.hub.PretrainedModel` of task ``dataflow``.
        dataset: Its examples (a :class:`~programl.datasets.DeepDataFlow` or a view of one), encoded with
            the model's vocabulary; each has ``x``, ``root``, ``y``, ``node_type``, edges and ``graph_index``.
        steps: Message-passing steps T to run (each on every example).
        distances: Which distances to bucket by (``hops``, ``control``).
        batch_nodes: Nodes per batch (examples are never split; an oversized one is a batch alone).
        progress: Optional wrapper ``progress(items, total, description)`` around the batches.

    Returns:
        ``{T: {distance: DistanceScores}}``.

    Raises:
        ProgramlError: A model that is not a data-flow model, a negative T or an unknown distance.
    """
    from programl.loader import plan_batches

    if pretrained.task != "dataflow":
        raise ProgramlError(f"{pretrained.name}: a {pretrained.task} model, not a data-flow model")
    if any(t < 0 for t in steps):
        raise ProgramlError(f"steps must be >= 0, not {min(steps)}")
    unknown = [d for d in distances if d not in DISTANCES]
    if unknown:
        raise ProgramlError(f"unknown distance {unknown[0]!r}; expected one of {', '.join(DISTANCES)}")
    scores = {int(t): {d: DistanceScores() for d in distances} for t in steps}
    batches = list(plan_batches(np.asarray(dataset.sizes), batch_nodes, "carry"))
    if progress is not None:
        batches = progress(batches, len(batches), "scoring")
    view: tuple[int, GraphView] | None = None  # the last graph's (records of a graph come together)
    model = pretrained.model
    for indices in batches:
        examples = [dataset[i] for i in indices]
        batch = Batch.from_data_list(examples).to(pretrained.device)
        predicted = {}
        with torch.no_grad():
            for t in scores:
                predicted[t] = (model(batch, num_steps=t).argmax(-1) == 1).cpu().numpy()
        offsets = batch.ptr.cpu().numpy()
        for k, data in enumerate(examples):
            graph = int(data.graph_index)
            if view is None or view[0] != graph:
                view = (graph, example_view(data))
            root = int(data.root.argmax())
            target = data.y.numpy().astype(bool)
            for name in distances:
                d = root_distances(view[1], root, name)
                for t in scores:
                    scores[t][name].add(d, predicted[t][offsets[k] : offsets[k + 1]], target)
    return scores


def scores_to_dict(scores: dict[int, dict[str, DistanceScores]]) -> dict[str, Any]:
    """``{"T30": {"steps": 30, "pooled": ..., "distances": {name: DistanceScores.to_dict()}}}``."""
    out = {}
    for t, by_name in scores.items():
        first = next(iter(by_name.values()))
        out[f"T{t}"] = {
            "steps": t,
            "pooled": first.pooled(),
            "distances": {name: s.to_dict() for name, s in by_name.items()},
        }
    return out
