"""What a task's pretrained model predicts on one program graph, in the three steps of a HuggingFace pipeline:
:meth:`Predictor.preprocess` (check the graph and the options, encode the graph as the network reads it),
:meth:`Predictor.forward` (the network, in eval mode without gradients) and :meth:`Predictor.postprocess` (a result
whose ``to_dict()`` is an entry of ``programl predict --json``).

Each task's predictor is a subclass in ``programl/tasks/<task>/predict.py`` that its
:class:`~programl.tasks.base.TaskSpec` names (:attr:`~programl.tasks.base.TaskSpec.predictor`);
a pretrained model's ``predict`` (``PretrainedModel.predict``) runs it with the loaded model (a task never imports the
model zoo: the zoo asks the task).
:class:`GraphClassifierPredictor` is the predictor of a graph-level classifier (one class per graph), which a task
extends or uses as it is. The helpers below are what the predictors share.

The graph is encoded as in training (:func:`programl.io.pyg.to_pyg` with the model's vocabulary: an unknown node text
gets the out-of-vocabulary id). A graph built by the original ProGraML 0.3.2 (LLVM 10 texts such as ``i32*``) is read
with its pointer texts in their LLVM 22 form (``ptr``), the form the models' vocabularies hold;
``typed_pointers="keep"`` turns that off (:mod:`programl.io.typed_pointers`). Importing this module imports neither
torch nor numpy (a task's spec names its predictor, and ``--help`` imports the spec).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from programl.exceptions import ProgramlError
from programl.tasks.base import shown
from programl.util.checks import is_integer

__all__ = [
    "GraphClassification",
    "GraphClassifierPredictor",
    "Predictor",
    "add_optional_inputs",
    "check_graph",
    "check_has_instructions",
    "check_integer",
    "classes_of",
    "encode",
]


class Predictor:
    """A task's prediction on one ``ProgramGraph`` with a loaded pretrained model: ``predictor(graph, **options)``
    runs :meth:`preprocess`, :meth:`forward` (without gradients) and :meth:`postprocess`.

    Attributes:
        pretrained: The loaded pretrained model, a ``PretrainedModel`` (``model`` in eval mode,
            ``vocabulary``, ``metadata``, ``device``).
    """

    def __init__(self, pretrained) -> None:
        self.pretrained = pretrained

    def __call__(self, graph, **options):
        """The prediction of the model on ``graph``; ``options`` are :meth:`preprocess`'s keyword arguments."""
        import torch

        inputs = self.preprocess(graph, **options)
        with torch.no_grad():
            outputs = self.forward(inputs)
        return self.postprocess(outputs)

    def preprocess(self, graph, **options) -> dict[str, Any]:
        """Check ``graph`` and ``options`` and encode the graph: what :meth:`forward` reads.

        Raises:
            ProgramlError: A graph or an option the model cannot predict for (one line).
        """
        raise NotImplementedError

    def forward(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run the network on the encoded ``inputs`` (on the model's device); what :meth:`postprocess` reads (the
        logits on the CPU, and what of ``inputs`` it needs)."""
        raise NotImplementedError

    def postprocess(self, outputs: dict[str, Any]):
        """The result: an object whose ``to_dict()`` is an entry of ``programl predict --json``."""
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------------------------
# What the predictors share


def check_integer(name: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    """``value`` as an int when it is an integer (not a bool) of at least ``minimum`` (and at most ``maximum``).

    Raises:
        ProgramlError: One line naming ``name``.
    """
    if not is_integer(value) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ProgramlError(f"{name} must be {kind}, not {shown(value)}")
    if maximum is not None and value > maximum:
        raise ProgramlError(f"{name} must be at most {maximum:,}, not {value!r}")
    return int(value)


def check_graph(graph) -> None:
    """Refuse a graph no model can read: one without nodes, or a corrupt one with an edge whose endpoint is not a
    node of the graph (a dangling edge), before an analysis or the encoding trips on it (the analysis's error would
    make ``programl predict`` skip the model, as for a graph without an eligible root, instead of failing the file).

    Raises:
        ProgramlError: One line naming the first bad edge, or saying the graph has no nodes.
        TypeError: ``graph`` is not a ``ProgramGraph``.
    """
    from programl.proto import ProgramGraph

    if not isinstance(graph, ProgramGraph):
        raise TypeError(f"expected a ProgramGraph, got {type(graph).__name__}")
    n = len(graph.node)
    if not n:
        raise ProgramlError("the graph has no nodes: nothing to predict from")
    for i, edge in enumerate(graph.edge):
        for end in (edge.source, edge.target):
            if not 0 <= end < n:
                raise ProgramlError(
                    f"corrupt graph: edge {i} points at node {end}, which does not exist (the graph has {n:,} nodes)"
                )


def check_has_instructions(graph) -> None:
    """Graph-level models read a program: refuse a graph with no instruction but the external node (e.g.
    ``ProgramGraph()``, or an empty module), on which they would still print a confident answer.

    Raises:
        ProgramlError: One line.
        TypeError: ``graph`` is not a ``ProgramGraph``.
    """
    from programl.proto import Node, ProgramGraph

    if not isinstance(graph, ProgramGraph):
        raise TypeError(f"expected a ProgramGraph, got {type(graph).__name__}")
    if not any(node.type == Node.INSTRUCTION for node in graph.node[1:]):
        raise ProgramlError(f"the graph holds no instructions ({len(graph.node)} nodes): nothing to predict from")


def encode(graph, vocabulary, device, typed_pointers: str = "auto"):
    """The ``Data`` of ``graph`` the models read (``x`` from ``vocabulary``, edges, node types, graph features);
    ``typed_pointers`` as in :func:`programl.io.pyg.to_pyg`.

    Raises:
        ProgramlError: An unknown ``typed_pointers`` mode.
    """
    from programl.io.pyg import to_pyg

    try:
        return to_pyg(graph, vocabulary, typed_pointers=typed_pointers).to(device)
    except ValueError as error:  # an unknown typed_pointers mode
        raise ProgramlError(str(error)) from None


def add_optional_inputs(model, graph, data) -> None:
    """``x_num`` / ``x_type`` and ``x_str`` for a model that reads them (``--numbers-and-types``,
    ``--string-bytes``), from the graph's features or, for a graph built without them, annotated here on a copy
    (:mod:`programl.graph_builder.numbers_types`, :mod:`programl.graph_builder.string_bytes`)."""
    from programl.models.numbers_types import NumberTypeEmbedding, StringBytesEmbedding

    kinds = {type(m) for m in model.modules()}
    if NumberTypeEmbedding in kinds and getattr(data, "x_num", None) is None:
        from programl.graph_builder.numbers_types import annotate, is_annotated
        from programl.io.pyg import _numbers_and_types

        if not is_annotated(graph):
            graph = annotate(type(graph).FromString(graph.SerializeToString()))
        extra = _numbers_and_types(graph)
        data.x_num, data.x_type = extra["x_num"], extra["x_type"]
    if StringBytesEmbedding in kinds and getattr(data, "x_str", None) is None:
        from programl.graph_builder import string_bytes
        from programl.io.pyg import _string_bytes

        if not string_bytes.is_annotated(graph):
            graph = string_bytes.annotate(type(graph).FromString(graph.SerializeToString()))
        data.x_str = _string_bytes(graph)


def classes_of(pretrained, logits) -> list[str]:
    """The model's class labels (``model.json`` ``outputs.classes``), one per output of its network.

    Raises:
        ProgramlError: The network gives another number of outputs than ``model.json`` names classes.
    """
    classes = pretrained.classes
    if logits.shape[-1] != len(classes):
        raise ProgramlError(
            f"{pretrained.directory / 'model.json'}: outputs.classes lists {len(classes)} classes, and the network "
            f"gives {logits.shape[-1]} outputs"
        )
    return classes


# ---------------------------------------------------------------------------------------------------------------
# Graph-level classifiers


@dataclass
class GraphClassification:
    """The class a graph-level model gives a program.

    Attributes:
        label: The most likely class (``model.json`` ``outputs.classes``; ties: the first).
        probability: Its probability.
        probabilities: The probability of each class, in the model's class order.
    """

    label: str
    probability: float
    probabilities: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """The prediction as a JSON-ready dict (probabilities rounded to 6 places), as ``--json`` lists it."""
        return {
            "class": self.label,
            "probability": round(self.probability, 6),
            "probabilities": {k: round(v, 6) for k, v in self.probabilities.items()},
        }


class GraphClassifierPredictor(Predictor):
    """The predictor of a graph-level classifier (a network whose output has ``logits``, one row per graph): the
    graph is checked (:meth:`check`), encoded with the inputs the network reads (:meth:`encode`), and the result is
    the most likely class (:class:`GraphClassification`). A task's predictor extends the steps it does otherwise
    (devmap adds the auxiliary inputs, classifyapp keeps the most likely classes)."""

    def check(self, graph) -> None:
        """Refuse a graph without instructions or with an edge to a node that does not exist."""
        check_has_instructions(graph)
        check_graph(graph)

    def encode(self, graph, typed_pointers: str = "auto"):
        """The graph's ``Data`` on the CPU, with the optional inputs the network reads (:func:`add_optional_inputs`)."""
        data = encode(graph, self.pretrained.vocabulary, "cpu", typed_pointers)
        add_optional_inputs(self.pretrained.model, graph, data)
        return data

    def preprocess(self, graph, *, typed_pointers: str = "auto") -> dict[str, Any]:
        """``{"data": ...}`` (:meth:`check`, then :meth:`encode`).

        Raises:
            ProgramlError: The graph has no instructions, or has an edge to a node that does not exist.
            TypeError: ``graph`` is not a ``ProgramGraph``.
        """
        self.check(graph)
        return {"data": self.encode(graph, typed_pointers)}

    def forward(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """``inputs`` with the graph's ``logits`` (on the CPU)."""
        logits = self.pretrained.model(inputs["data"].to(self.pretrained.device)).logits.cpu()
        return {**inputs, "logits": logits}

    def postprocess(self, outputs: dict[str, Any]) -> GraphClassification:
        """The most likely class and each class's probability."""
        import torch

        logits = outputs["logits"]
        probabilities = torch.softmax(logits, dim=-1)[0].tolist()
        classes = classes_of(self.pretrained, logits)
        best = int(logits[0].argmax())
        return GraphClassification(
            classes[best], float(probabilities[best]), dict(zip(classes, map(float, probabilities)))
        )
