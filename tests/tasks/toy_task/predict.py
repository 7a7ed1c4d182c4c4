"""What a toy model predicts: the shared graph classifier's three steps, with the program's instruction count."""

from __future__ import annotations

import dataclasses
from typing import Any

from programl.tasks.predict import GraphClassification, GraphClassifierPredictor


@dataclasses.dataclass
class ToyPrediction(GraphClassification):
    """Small or large, and the instructions the program has."""

    instructions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "instructions": self.instructions}


class ToyPredictor(GraphClassifierPredictor):
    """The graph classifier's prediction, with the instructions counted in :meth:`preprocess`."""

    def preprocess(self, graph, *, typed_pointers: str = "auto") -> dict[str, Any]:
        inputs = super().preprocess(graph, typed_pointers=typed_pointers)
        return {**inputs, "instructions": instructions(graph)}

    def postprocess(self, outputs: dict[str, Any]) -> ToyPrediction:
        prediction = super().postprocess(outputs)
        return ToyPrediction(**dataclasses.asdict(prediction), instructions=outputs["instructions"])


def instructions(graph) -> int:
    """The instructions of a program graph."""
    from programl.proto import Node

    return sum(node.type == Node.INSTRUCTION for node in graph.node)
