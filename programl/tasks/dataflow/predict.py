"""What a data-flow model predicts (docs/spec/tasks.md#data-flow-protocol): the node labels of an analysis for
chosen roots (docs/spec/analyses.md), as :class:`DataflowPredictor` computes them for ``programl predict dataflow``
and a pretrained model's ``predict`` (``PretrainedModel.predict``).

One copy of the graph per root, batched; the network runs at the model's T, or, for a step-free model (``model.json``
``"inference": {"mode": "until_stable", ...}``), each root until its predictions stop changing
(:meth:`~programl.models.DataflowGGNN.forward_until_stable` with the bounds of :func:`until_stable_bounds`).
Importing this module imports neither torch nor numpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from programl.exceptions import AnalysisError, ProgramlError
from programl.tasks.base import MAX_STEPS, shown
from programl.tasks.predict import Predictor, check_graph, check_integer, encode

__all__ = [
    "INFERENCE_KEYS",
    "STEP_FREE_MODES",
    "DataflowPrediction",
    "DataflowPredictor",
    "check_inference",
    "predict_dataflow",
    "until_stable_bounds",
]

#: ``model.json`` ``inference`` modes of the variants that need no step count (not in the paper): until the
#: predictions stop changing, or T steps over the control floods (``--control-floods``).
STEP_FREE_MODES = ("until_stable", "control_floods", "fixpoint")
#: The keys of ``model.json`` ``inference`` in each mode (any other is refused).
INFERENCE_KEYS = {
    "until_stable": ("mode", "min_steps", "max_steps", "patience", "latch"),
    "control_floods": ("mode", "steps", "floods"),
    "fixpoint": ("mode",),
}


def until_stable_bounds(metadata: Mapping[str, Any], *, where: str = "model.json") -> dict[str, Any] | None:
    """The keyword arguments of :meth:`~programl.models.DataflowGGNN.forward_until_stable` that a step-free model's
    ``model.json`` names (``"inference": {"mode": "until_stable", "min_steps", "max_steps", "patience", "latch"}``),
    ``{}`` for a fixed-point model (``{"mode": "fixpoint"}``, :class:`~programl.models.DataflowFixpoint`, which
    stops at its fixed point), or None for a model run at its T (no ``inference``, or mode ``control_floods``).
    ``model.json`` is a file a user may receive: its values are checked, each step count at most
    :data:`~programl.tasks.base.MAX_STEPS`, with a one-line error when wrong.

    Args:
        metadata: The model's ``model.json``.
        where: How the errors name the file (``model.json``; ``DIR/model.json:`` for a received one).

    Raises:
        ProgramlError: An ``inference`` that is not an object or has an unknown mode (it is never run as a
            fixed-step model), a bound that is not an integer in range, ``max_steps < min_steps``, or a ``latch``
            that is not true or false.
    """
    inference = metadata.get("inference")
    if inference is None:
        return None
    if not isinstance(inference, Mapping):
        raise ProgramlError(f"{where} inference must be an object, not {type(inference).__name__}")
    mode = inference.get("mode")
    if not isinstance(mode, str) or mode not in STEP_FREE_MODES:
        raise ProgramlError(f"{where} inference mode must be one of {', '.join(STEP_FREE_MODES)}, not {shown(mode)}")
    if mode == "fixpoint":  # it stops at its fixed point: nothing to bound
        return {}
    if mode != "until_stable":
        return None
    bounds: dict[str, Any] = {
        key: check_integer(f"{where} inference {key}", inference.get(key, default), minimum, MAX_STEPS)
        for key, default, minimum in (
            ("min_steps", metadata.get("steps", 30), 0),
            ("max_steps", 1000, 1),
            ("patience", 5, 1),
        )
    }
    if bounds["max_steps"] < bounds["min_steps"]:
        raise ProgramlError(f"{where} inference: max_steps {bounds['max_steps']} < min_steps")
    latch = inference.get("latch", False)
    if not isinstance(latch, bool):
        raise ProgramlError(f"{where} inference latch must be true or false, not {shown(latch)}")
    bounds["latch"] = latch
    return bounds


def check_inference(check, metadata: Mapping[str, Any]) -> None:
    """A received step-free model's ``inference``: a known mode with its own keys only (an unknown mode is refused,
    not run at a fixed T); ``check`` as for :meth:`~programl.tasks.base.TaskSpec.check_metadata`."""
    inference = check.mapping("inference", metadata["inference"])
    mode = check.choice("inference.mode", inference.get("mode"), STEP_FREE_MODES)
    check.mapping("inference", inference, INFERENCE_KEYS[mode])
    if mode == "until_stable":
        until_stable_bounds(metadata, where=f"{check.path}:")
    elif mode == "control_floods":
        if inference.get("steps") is not None:
            check.integer("inference.steps", inference["steps"], 0, MAX_STEPS)
        if inference.get("floods") is not None:
            check.choice("inference.floods", inference["floods"], ("exact",))


def _roots_and_labels(
    graph, analysis: str, roots: Sequence[int] | None, num_roots: int | None, seed: int, compare: bool
):
    """The roots to predict for (an array), and the analysis's labels of them when ``compare`` (else None).

    ``roots`` are checked by the analysis itself, and without ``roots`` or ``num_roots`` the analysis samples them
    (:func:`programl.dataflow.analyze.analyze_arrays` with ``seed``: ``min(ceil(eligible / 10), 10)`` roots, those
    ``programl analyze --seed`` labels); ``num_roots`` takes the first K of the same seeded permutation of the
    eligible roots. The analysis runs only to compare: a graph on which it gives up (docs/spec/analyses.md) is still
    predicted.

    Raises:
        AnalysisError: No eligible root, or a given root that is not eligible (one line).
    """
    import numpy as np

    from programl.dataflow.analyze import analyze_arrays, choose_roots, eligible_roots

    if num_roots is None:  # the roots checked, or the analysis's own sample, without running it
        chosen = choose_roots(graph, analysis, seed=seed, roots=roots)
    else:
        num_roots = check_integer("the number of roots", num_roots, 1)
        seed = check_integer("seed", seed, 0)
        eligible = eligible_roots(graph, analysis)
        if not len(eligible):
            raise AnalysisError(f"No eligible root nodes in graph with {len(graph.node)} nodes")
        chosen = np.random.default_rng(seed).permutation(np.asarray(eligible, dtype=np.int64))[:num_roots]
    return chosen, analyze_arrays(graph, analysis, roots=chosen).labels.astype(bool) if compare else None


@dataclass
class DataflowPrediction:
    """Node labels predicted by a data-flow model, one row per root.

    Attributes:
        analysis: The analysis the model learned.
        steps: Message-passing steps it ran, or ``"until stable"`` (a step-free model's own inference), or
            ``"fixed point"`` (a fixed-point model's: until no bit changes).
        roots: (R,) root node ids.
        probabilities: (R, N) probability that each node is labelled true.
        predicted: (R, N) bool, the model's labels (the larger logit).
        exact: (R, N) bool labels of the analysis itself (:func:`programl.dataflow.analyze`), when compared.
        node_types, node_texts: Of the graph's N nodes.
    """

    analysis: str
    steps: int
    roots: Any
    probabilities: Any
    predicted: Any
    exact: Any
    node_types: Any
    node_texts: list[str]
    #: Until stable: the steps each root's graph ran (None at a fixed T).
    steps_taken: list[int] | None = None

    def node(self, i: int, row: int) -> dict[str, Any]:
        """Node ``i`` as ``to_dict`` lists it, for root row ``row``."""
        from programl.io.pyg import NODE_TYPE_NAMES

        kind = int(self.node_types[i])
        out = {
            "id": int(i),
            "type": NODE_TYPE_NAMES[kind] if 0 <= kind < len(NODE_TYPE_NAMES) else str(kind),
            "text": self.node_texts[i],
            "probability": round(float(self.probabilities[row, i]), 6),
            "predicted": bool(self.predicted[row, i]),
        }
        if self.exact is not None:
            out["exact"] = bool(self.exact[row, i])
        return out

    def to_dict(self) -> dict[str, Any]:
        """Per root: the nodes predicted true (and, when compared, those the analysis labels true), in node order;
        with the exact labels, the true/false positives and negatives of the root."""
        import numpy as np

        out: dict[str, Any] = {"analysis": self.analysis, "steps": self.steps, "roots": []}
        for row, root in enumerate(self.roots.tolist()):
            shown_nodes = self.predicted[row] | (self.exact[row] if self.exact is not None else False)
            entry: dict[str, Any] = {
                "root": self.node(root, row),
                "predicted_true": int(self.predicted[row].sum()),
                "nodes": [self.node(i, row) for i in np.flatnonzero(shown_nodes).tolist()],
            }
            if self.steps_taken is not None:
                entry["steps_taken"] = self.steps_taken[row]
            if self.exact is not None:
                p, e = self.predicted[row], self.exact[row]
                entry["exact_true"] = int(e.sum())
                entry["confusion"] = {
                    "true_positives": int((p & e).sum()),
                    "false_positives": int((p & ~e).sum()),
                    "false_negatives": int((~p & e).sum()),
                    "true_negatives": int((~p & ~e).sum()),
                }
            out["roots"].append(entry)
        return out


class DataflowPredictor(Predictor):
    """A data-flow model's labels of a graph's nodes for each of a few roots (:class:`DataflowPrediction`)."""

    def preprocess(
        self,
        graph,
        *,
        roots: Sequence[int] | None = None,
        num_roots: int | None = None,
        seed: int = 0,
        steps: int | None = None,
        compare: bool = False,
        typed_pointers: str = "auto",
    ) -> dict[str, Any]:
        """Check the graph, choose the roots (and label them when ``compare``), and batch one copy of the graph per
        root.

        Args:
            graph: A ``ProgramGraph``.
            roots, num_roots, seed: Which roots: these (each must be eligible), else the first ``num_roots`` of a
                seeded shuffle of the eligible roots, else the analysis's own sample (``programl analyze --seed``).
            steps: Message-passing steps (default: the model's: 30 for the paper's runs; a step-free model, whose
                ``model.json`` has ``"inference": {"mode": "until_stable", ...}``, runs each root until its
                predictions stop changing, :meth:`~programl.models.DataflowGGNN.forward_until_stable`).
            compare: Also run the analysis itself on the same roots (``exact``).
            typed_pointers: How the typed-pointer texts of a graph built by the original ProGraML (``i32*``) meet the
                model's vocabulary: ``auto`` (default: a text it lacks is read as LLVM 22 prints it, ``ptr``),
                ``map`` (every text so) or ``keep`` (as it is; see :func:`programl.io.pyg.to_pyg`).

        Raises:
            AnalysisError: No eligible root, or a given root that is not eligible.
            ProgramlError: A graph without nodes, or with an edge to a node that does not exist
                (:func:`~programl.tasks.predict.check_graph`); a ``steps`` that is not an integer >= 0.
        """
        import torch
        from torch_geometric.data import Batch

        pretrained = self.pretrained
        check_graph(graph)
        chosen, exact = _roots_and_labels(graph, pretrained.analysis, roots, num_roots, seed, compare)
        bounds = until_stable_bounds(pretrained.metadata)
        stable = steps is None and bounds is not None
        if not stable:
            steps = check_integer("steps", steps if steps is not None else pretrained.metadata.get("steps", 30), 0)
        base = encode(graph, pretrained.vocabulary, "cpu", typed_pointers)
        n = int(base.num_nodes)
        examples = []
        for root in chosen.tolist():
            data = base.clone()
            data.root = torch.zeros(n, dtype=torch.long)
            data.root[root] = 1
            examples.append(data)
        return {
            "batch": Batch.from_data_list(examples),
            "roots": chosen,
            "exact": exact,
            "nodes": n,
            "steps": steps,
            "bounds": bounds if stable else None,
            "node_types": base.node_type.cpu().numpy(),
            "node_texts": [node.text for node in graph.node],
        }

    def forward(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The logits of each root's copy, (R, N, 2) on the CPU, at T steps or until stable (then ``steps_taken``)."""
        model, batch = self.pretrained.model, inputs["batch"].to(self.pretrained.device)
        shape = (len(inputs["roots"]), inputs["nodes"], -1)
        if inputs["bounds"] is not None:
            logits, ran = model.forward_until_stable(batch, **inputs["bounds"])
            return {**inputs, "logits": logits.reshape(shape).cpu(), "steps_taken": ran.tolist()}
        return {**inputs, "logits": model(batch, num_steps=inputs["steps"]).reshape(shape).cpu()}

    def postprocess(self, outputs: dict[str, Any]) -> DataflowPrediction:
        """Each node's probability of the true class and the predicted labels."""
        import torch

        logits = outputs["logits"]
        taken = outputs.get("steps_taken")
        fixpoint = (self.pretrained.metadata.get("inference") or {}).get("mode") == "fixpoint"
        return DataflowPrediction(
            analysis=self.pretrained.analysis,
            steps=("fixed point" if fixpoint else "until stable") if taken is not None else outputs["steps"],
            roots=outputs["roots"],
            probabilities=torch.softmax(logits, dim=-1)[..., 1].numpy(),
            predicted=(logits.argmax(-1) == 1).numpy(),
            exact=outputs["exact"],
            node_types=outputs["node_types"],
            node_texts=outputs["node_texts"],
            steps_taken=taken,
        )


def predict_dataflow(pretrained, graph, **options) -> DataflowPrediction:
    """Run a data-flow model on ``graph`` for each root: :class:`DataflowPredictor` with ``options``
    (:meth:`DataflowPredictor.preprocess`'s keyword arguments).

    Args:
        pretrained: A loaded pretrained model (``PretrainedModel``) of task ``dataflow``.
        graph: A ``ProgramGraph``.
    """
    return DataflowPredictor(pretrained)(graph, **options)
