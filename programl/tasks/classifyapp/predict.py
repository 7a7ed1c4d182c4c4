"""What a classifyapp model predicts (docs/spec/tasks.md#algorithm-classification): the most likely POJ-104 classes
of a program, as :class:`ClassifyappPredictor` computes them for ``programl predict classifyapp`` and
a pretrained model's ``predict`` (``PretrainedModel.predict``). Importing this module imports neither torch nor
numpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from programl.tasks.predict import GraphClassifierPredictor, check_integer, classes_of

__all__ = ["ClassifyappPrediction", "ClassifyappPredictor", "predict_classifyapp"]


@dataclass
class ClassifyappPrediction:
    """The most likely POJ-104 classes of a program, best first.

    Attributes:
        classes: Class labels (POJ-104's problem numbers, ``"1"`` .. ``"104"``).
        probabilities: Their probabilities.
    """

    classes: list[str]
    probabilities: list[float]

    def to_dict(self) -> dict[str, Any]:
        """The prediction as a JSON-ready dict (probabilities rounded to 6 places), as ``--json`` lists it."""
        return {"top": [{"class": c, "probability": round(p, 6)} for c, p in zip(self.classes, self.probabilities)]}


class ClassifyappPredictor(GraphClassifierPredictor):
    """The ``top`` most likely classes of a program (:class:`ClassifyappPrediction`; ties: the lower class first)."""

    def preprocess(self, graph, *, top: int = 5, typed_pointers: str = "auto") -> dict[str, Any]:
        """Check ``top`` and the graph, and encode the graph (``typed_pointers`` as for
        :meth:`~programl.tasks.dataflow.predict.DataflowPredictor.preprocess`).

        Raises:
            ProgramlError: ``top`` is not a positive integer, the graph has no instructions, or it has an edge to a
                node that does not exist.
            TypeError: ``graph`` is not a ``ProgramGraph``.
        """
        top = check_integer("top", top, 1)
        return {**super().preprocess(graph, typed_pointers=typed_pointers), "top": top}

    def postprocess(self, outputs: dict[str, Any]) -> ClassifyappPrediction:
        """The ``top`` classes by probability."""
        import numpy as np
        import torch

        logits = outputs["logits"]
        probabilities = torch.softmax(logits, dim=-1)[0].numpy()
        order = np.argsort(-probabilities, kind="stable")[: outputs["top"]]
        classes = classes_of(self.pretrained, logits)
        return ClassifyappPrediction([classes[i] for i in order], [float(probabilities[i]) for i in order])


def predict_classifyapp(pretrained, graph, **options) -> ClassifyappPrediction:
    """The most likely classes of the program of ``graph``: :class:`ClassifyappPredictor` with ``options``
    (:meth:`ClassifyappPredictor.preprocess`'s keyword arguments: ``top``, ``typed_pointers``).

    Args:
        pretrained: A loaded pretrained model (``PretrainedModel``) of task ``classifyapp``.
        graph: A ``ProgramGraph``.
    """
    return ClassifyappPredictor(pretrained)(graph, **options)
