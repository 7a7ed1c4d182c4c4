"""The four control-flow floods of a root predicted by a learned reachability model instead of computed exactly: the
liveness-over-floods study's ``--floods-from`` (``studies/dataflow_table.py``), where every label comes from a
network. Not part of the package: the shipped ``liveness-floods`` model reads exact floods
(:func:`programl.models.control_floods.control_floods`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from programl.models.control_floods import CONTROL_FLOW, _control_edges, back_edges

__all__ = ["LearnedControlFloods"]


class LearnedControlFloods:
    """The four floods of :func:`control_floods`, predicted by a reachability model (a
    :class:`~programl.models.DataflowGGNN` trained on the reachability analysis): ``after`` is its prediction from
    the batch's roots, ``before`` its prediction on the same batch with every CONTROL edge reversed (reachability on
    the reversed control flow), and the acyclic two the same without the back edges (:func:`back_edges`, found
    exactly: a depth-first search, not an analysis). ``until_stable``: the keyword arguments of
    :meth:`~programl.models.DataflowGGNN.forward_until_stable` (a step-free variant's ``model.json`` inference:
    :func:`programl.tasks.dataflow.predict.until_stable_bounds`), or None to run the model's own T.

    Not part of any weights: a runtime choice (``model.flood_source = LearnedControlFloods(reachability)``).
    """

    def __init__(self, reachability, until_stable: Mapping[str, Any] | None = None) -> None:
        self.reachability = reachability.eval()
        self.until_stable = until_stable

    def _predict(self, data) -> Tensor:
        if self.until_stable is None:
            logits = self.reachability(data)
        else:
            logits, _ = self.reachability.forward_until_stable(data, **self.until_stable)
        return logits.argmax(-1).float()

    def _on(self, data, keep: Tensor, flip: bool) -> Tensor:
        """The prediction on ``data`` with only the edges ``keep`` and its CONTROL edges reversed if ``flip``."""
        view = data.clone()
        if hasattr(view, "control_floods"):
            del view.control_floods
        edge_index = data.edge_index.clone()
        if flip:
            control = data.edge_flow == CONTROL_FLOW
            edge_index[:, control] = data.edge_index[:, control].flip(0)
        view.edge_index, view.edge_flow, view.edge_pos = edge_index[:, keep], data.edge_flow[keep], data.edge_pos[keep]
        return self._predict(view)

    @torch.no_grad()
    def __call__(self, data) -> Tensor:
        control, sources, targets = _control_edges(data.edge_index, data.edge_flow)
        everything = torch.ones_like(control)
        back = torch.zeros_like(control)
        back[control] = torch.from_numpy(back_edges(sources, targets, int(data.num_nodes))).to(control.device)
        return torch.stack(
            [
                self._on(data, everything, False),
                self._on(data, everything, True),
                self._on(data, ~back, False),
                self._on(data, ~back, True),
            ],
            dim=1,
        )
