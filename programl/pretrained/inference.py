"""Predictions of the pretrained models on one program graph (issue 11 item 6): the data-flow node labels for
chosen roots (SPEC §6.1, roots as in §4.1), the device of an OpenCL kernel (SPEC §6.5) and the POJ-104 class of a
program (SPEC §6.6).

The graph is encoded as in training (:func:`programl.io.pyg.to_pyg` with the model's vocabulary: an unknown node text
gets the out-of-vocabulary id), and the network runs in eval mode without gradients. A graph built by the original
ProGraML 0.3.2 (LLVM 10 texts such as ``i32*``) is read with its pointer texts in their LLVM 22 form (``ptr``), the
form the models' vocabularies hold; ``typed_pointers="keep"`` turns that off (:mod:`programl.io.typed_pointers`).
Each function returns a small result object whose ``to_dict()`` is what ``programl predict --json`` prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from programl.exceptions import AnalysisError, ProgramlError
from programl.pretrained.metadata import MAX_STEPS
from programl.pretrained.metadata import shown as _shown
from programl.util.checks import is_integer

__all__ = [
    "ClassifyappPrediction",
    "check_graph",
    "DataflowPrediction",
    "DevmapPrediction",
    "predict_classifyapp",
    "predict_dataflow",
    "predict_devmap",
    "until_stable_bounds",
]


def _check_integer(name: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    """``value`` as an int when it is an integer (not a bool) of at least ``minimum`` (and at most ``maximum``);
    one-line error otherwise."""
    if not is_integer(value) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ProgramlError(f"{name} must be {kind}, not {_shown(value)}")
    if maximum is not None and value > maximum:
        raise ProgramlError(f"{name} must be at most {maximum:,}, not {value!r}")
    return int(value)


def until_stable_bounds(metadata: Mapping[str, Any], *, where: str = "model.json") -> dict[str, Any] | None:
    """The keyword arguments of :meth:`~programl.models.DataflowGGNN.forward_until_stable` that a step-free model's
    ``model.json`` names (``"inference": {"mode": "until_stable", "min_steps", "max_steps", "patience", "latch"}``),
    or None for a model run at its T (no ``inference``, or mode ``control_floods``). ``model.json`` is a
    file a user may receive: its values are checked, each step count at most
    :data:`~programl.pretrained.metadata.MAX_STEPS`, with a one-line error when wrong.

    Args:
        metadata: The model's ``model.json``.
        where: How the errors name the file (``model.json``; ``DIR/model.json:`` for a received one).

    Raises:
        ProgramlError: An ``inference`` that is not an object or has an unknown mode (it is never run as a
            fixed-step model), a bound that is not an integer in range, ``max_steps < min_steps``, or a ``latch``
            that is not true or false.
    """
    from programl.tasks.dataflow.spec import STEP_FREE_MODES

    inference = metadata.get("inference")
    if inference is None:
        return None
    if not isinstance(inference, Mapping):
        raise ProgramlError(f"{where} inference must be an object, not {type(inference).__name__}")
    mode = inference.get("mode")
    if not isinstance(mode, str) or mode not in STEP_FREE_MODES:
        raise ProgramlError(f"{where} inference mode must be one of {', '.join(STEP_FREE_MODES)}, not {_shown(mode)}")
    if mode != "until_stable":
        return None
    bounds: dict[str, Any] = {
        key: _check_integer(f"{where} inference {key}", inference.get(key, default), minimum, MAX_STEPS)
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
        raise ProgramlError(f"{where} inference latch must be true or false, not {_shown(latch)}")
    bounds["latch"] = latch
    return bounds


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


def _check_has_instructions(graph) -> None:
    """Graph-level models read a program: refuse a graph with no instruction but the external node (e.g.
    ``ProgramGraph()``, or an empty module), on which they would still print a confident answer."""
    from programl.proto import Node, ProgramGraph

    if not isinstance(graph, ProgramGraph):
        raise TypeError(f"expected a ProgramGraph, got {type(graph).__name__}")
    if not any(node.type == Node.INSTRUCTION for node in graph.node[1:]):
        raise ProgramlError(f"the graph holds no instructions ({len(graph.node)} nodes): nothing to predict from")


def _encode(graph, vocabulary, device, typed_pointers: str = "auto"):
    """The ``Data`` of ``graph`` the models read (``x`` from ``vocabulary``, edges, node types, graph features);
    ``typed_pointers`` as in :func:`programl.io.pyg.to_pyg`."""
    from programl.io.pyg import to_pyg

    try:
        return to_pyg(graph, vocabulary, typed_pointers=typed_pointers).to(device)
    except ValueError as error:  # an unknown typed_pointers mode
        raise ProgramlError(str(error)) from None


# ---------------------------------------------------------------------------------------------------------------
# Data-flow analyses


def _roots_and_labels(
    graph, analysis: str, roots: Sequence[int] | None, num_roots: int | None, seed: int, compare: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """The roots to predict for, and the analysis's labels of them when ``compare`` (else None).

    ``roots`` are checked by the analysis itself, and without ``roots`` or ``num_roots`` the analysis samples them
    (:func:`programl.dataflow.analyze.analyze_arrays` with ``seed``: ``min(ceil(eligible / 10), 10)`` roots, those
    ``programl analyze --seed`` labels); ``num_roots`` takes the first K of the same seeded permutation of the
    eligible roots.

    Raises:
        AnalysisError: No eligible root, or a given root that is not eligible (one line).
    """
    from programl.dataflow.analyze import analyze_arrays, eligible_roots

    if roots is not None or num_roots is None:
        result = analyze_arrays(graph, analysis, seed=seed, roots=roots)
        return result.roots, result.labels.astype(bool) if compare else None
    num_roots = _check_integer("the number of roots", num_roots, 1)
    seed = _check_integer("seed", seed, 0)
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
        steps: Message-passing steps it ran, or ``"until stable"`` (a step-free model's own inference).
        roots: (R,) root node ids.
        probabilities: (R, N) probability that each node is labelled true.
        predicted: (R, N) bool, the model's labels (the larger logit).
        exact: (R, N) bool labels of the analysis itself (:func:`programl.dataflow.analyze`), when compared.
        node_types, node_texts: Of the graph's N nodes.
    """

    analysis: str
    steps: int
    roots: np.ndarray
    probabilities: np.ndarray
    predicted: np.ndarray
    exact: np.ndarray | None
    node_types: np.ndarray
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
        out: dict[str, Any] = {"analysis": self.analysis, "steps": self.steps, "roots": []}
        for row, root in enumerate(self.roots.tolist()):
            shown = self.predicted[row] | (self.exact[row] if self.exact is not None else False)
            entry: dict[str, Any] = {
                "root": self.node(root, row),
                "predicted_true": int(self.predicted[row].sum()),
                "nodes": [self.node(i, row) for i in np.flatnonzero(shown).tolist()],
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


def predict_dataflow(
    pretrained,
    graph,
    *,
    roots: Sequence[int] | None = None,
    num_roots: int | None = None,
    seed: int = 0,
    steps: int | None = None,
    compare: bool = False,
    typed_pointers: str = "auto",
) -> DataflowPrediction:
    """Run a data-flow model on ``graph`` for each root.

    Args:
        pretrained: A :class:`~programl.pretrained.hub.PretrainedModel` of task ``dataflow``.
        graph: A ``ProgramGraph``.
        roots, num_roots, seed: Which roots: these (each must be eligible), else the first ``num_roots`` of a
            seeded shuffle of the eligible roots, else the analysis's own sample (``programl analyze --seed``).
        steps: Message-passing steps (default: the model's: 30 for the paper's runs; a step-free model, whose
            ``model.json`` has ``"inference": {"mode": "until_stable", ...}``, runs each root until its predictions
            stop changing, :meth:`~programl.models.DataflowGGNN.forward_until_stable`; issue 36).
        compare: Also run the analysis itself on the same roots (``exact``).
        typed_pointers: How the typed-pointer texts of a graph built by the original ProGraML (``i32*``) meet the
            model's vocabulary: ``auto`` (default: a text it lacks is read as LLVM 22 prints it, ``ptr``), ``map``
            (every text so) or ``keep`` (as it is; see :func:`programl.io.pyg.to_pyg`).

    Raises:
        AnalysisError: No eligible root, or a given root that is not eligible.
        ProgramlError: A graph without nodes, or with an edge to a node that does not exist (:func:`check_graph`).
    """
    import torch
    from torch_geometric.data import Batch

    check_graph(graph)
    analysis = pretrained.analysis
    chosen, exact = _roots_and_labels(graph, analysis, roots, num_roots, seed, compare)
    bounds = until_stable_bounds(pretrained.metadata)
    stable = steps is None and bounds is not None
    if not stable:
        steps = _check_integer("steps", steps if steps is not None else pretrained.metadata.get("steps", 30), 0)
    base = _encode(graph, pretrained.vocabulary, "cpu", typed_pointers)
    n = int(base.num_nodes)
    examples = []
    for root in chosen.tolist():
        data = base.clone()
        data.root = torch.zeros(n, dtype=torch.long)
        data.root[root] = 1
        examples.append(data)
    batch = Batch.from_data_list(examples).to(pretrained.device)
    taken = None
    with torch.no_grad():
        if stable:
            logits, ran = pretrained.model.forward_until_stable(batch, **bounds)
            logits, taken, steps = logits.reshape(len(chosen), n, -1).cpu(), ran.tolist(), "until stable"
        else:
            logits = pretrained.model(batch, num_steps=steps).reshape(len(chosen), n, -1).cpu()
    probabilities = torch.softmax(logits, dim=-1)[..., 1].numpy()
    predicted = (logits.argmax(-1) == 1).numpy()
    return DataflowPrediction(
        analysis=analysis,
        steps=steps,
        roots=chosen,
        probabilities=probabilities,
        predicted=predicted,
        exact=exact,
        node_types=base.node_type.cpu().numpy(),
        node_texts=[node.text for node in graph.node],
        steps_taken=taken,
    )


# ---------------------------------------------------------------------------------------------------------------
# Graph classification


def _graph_feature(graph, key: str) -> int | None:
    """The first value of the graph's int64 feature ``key`` (None when it has none)."""
    if key not in graph.features.feature:
        return None
    feature = graph.features.feature[key]
    if feature.WhichOneof("kind") == "int64_list" and len(feature.int64_list.value):
        return int(feature.int64_list.value[0])
    return None


@dataclass
class DevmapPrediction:
    """The faster device for an OpenCL kernel on one platform.

    Attributes:
        platform: ``amd`` or ``nvidia``.
        device: ``"CPU"`` or ``"GPU"`` (the model's ``outputs``).
        probability: Probability of ``device``.
        probabilities: Probability per device, in the model's class order.
        transfer, wgsize: The auxiliary inputs used, and where they came from (``source``: ``given``, ``graph``
            for a graph with DevMap's ``transfer_bytes`` and ``wgsize`` features, or ``default``:
            :data:`programl.data.devmap.AUX_MEDIANS`).
    """

    platform: str
    device: str
    probability: float
    probabilities: dict[str, float]
    transfer: int
    wgsize: int
    source: str

    def to_dict(self) -> dict[str, Any]:
        """The prediction as a JSON-ready dict (probabilities rounded to 6 places), as ``--json`` lists it."""
        return {
            "platform": self.platform,
            "device": self.device,
            "probability": round(self.probability, 6),
            "probabilities": {k: round(v, 6) for k, v in self.probabilities.items()},
            "transfer": self.transfer,
            "wgsize": self.wgsize,
            "aux_inputs": self.source,
        }


def _classes_of(pretrained, logits) -> list[str]:
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


def _add_optional_inputs(model, graph, data) -> None:
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


def predict_devmap(
    pretrained,
    graph,
    *,
    transfer: int | None = None,
    wgsize: int | None = None,
    typed_pointers: str = "auto",
) -> DevmapPrediction:
    """Predict the faster device for the kernel of ``graph`` with a devmap model.

    Args:
        pretrained: A :class:`~programl.pretrained.hub.PretrainedModel` of task ``devmap``.
        graph: The kernel's ``ProgramGraph`` (clang-22, as the DevMap graphs: see ``programl predict devmap``).
        transfer: Bytes transferred to the device; default: the graph's ``transfer_bytes`` feature, else the
            platform's median in the DevMap data (:data:`programl.data.devmap.AUX_MEDIANS`).
        wgsize: Work-group size; default likewise (``wgsize`` feature, else the default).
        typed_pointers: ``auto``, ``map`` or ``keep``, as in :func:`predict_dataflow`.

    Raises:
        ProgramlError: An auxiliary input that is not a finite number >= 0, a graph with no instructions, or one
            with an edge to a node that does not exist.
        TypeError: ``graph`` is not a ``ProgramGraph``.
    """
    import torch

    from programl.data.devmap import AUX_MEDIANS

    _check_has_instructions(graph)
    check_graph(graph)
    platform = pretrained.platform
    defaults = AUX_MEDIANS.get(platform, AUX_MEDIANS["amd"])
    given = transfer is not None or wgsize is not None
    from_graph = {"transfer": _graph_feature(graph, "transfer_bytes"), "wgsize": _graph_feature(graph, "wgsize")}
    source = "given" if given else "graph" if None not in from_graph.values() else "default"
    values = {}
    for key, value in (("transfer", transfer), ("wgsize", wgsize)):
        value = value if value is not None else from_graph[key] if from_graph[key] is not None else defaults[key]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ProgramlError(f"--{key} must be a number, not {value!r}")
        if not value >= 0 or value == float("inf"):  # NaN fails the first test
            raise ProgramlError(f"--{key} must be a finite number >= 0, not {value}")
        values[key] = int(value)
    data = _encode(graph, pretrained.vocabulary, "cpu", typed_pointers)
    _add_optional_inputs(pretrained.model, graph, data)
    data.graph_x = torch.tensor([[float(values["transfer"]), float(values["wgsize"])]], dtype=torch.float32)
    with torch.no_grad():
        logits = pretrained.model(data.to(pretrained.device)).logits.cpu()
    probabilities = torch.softmax(logits, dim=-1)[0].tolist()
    classes = _classes_of(pretrained, logits)
    best = int(logits[0].argmax())
    return DevmapPrediction(
        platform=platform,
        device=classes[best],
        probability=float(probabilities[best]),
        probabilities=dict(zip(classes, map(float, probabilities))),
        transfer=values["transfer"],
        wgsize=values["wgsize"],
        source=source,
    )


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


def predict_classifyapp(pretrained, graph, *, top: int = 5, typed_pointers: str = "auto") -> ClassifyappPrediction:
    """The ``top`` most likely classes of the program of ``graph`` (ties: the lower class first); ``typed_pointers``
    as in :func:`predict_dataflow`.

    Raises:
        ProgramlError: ``top`` is not a positive integer, the graph has no instructions, or it has an edge to a
            node that does not exist.
        TypeError: ``graph`` is not a ``ProgramGraph``.
    """
    import torch

    top = _check_integer("top", top, 1)
    _check_has_instructions(graph)
    check_graph(graph)
    data = _encode(graph, pretrained.vocabulary, "cpu", typed_pointers)
    _add_optional_inputs(pretrained.model, graph, data)
    with torch.no_grad():
        logits = pretrained.model(data.to(pretrained.device)).logits.cpu()
    probabilities = torch.softmax(logits, dim=-1)[0].numpy()
    order = np.argsort(-probabilities, kind="stable")[:top]
    classes = _classes_of(pretrained, logits)
    return ClassifyappPrediction([classes[i] for i in order], [float(probabilities[i]) for i in order])
