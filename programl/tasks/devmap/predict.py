"""What a devmap model predicts (docs/spec/tasks.md#device-mapping): the faster device for an OpenCL kernel on the
model's platform, given the bytes transferred and the work-group size, as :class:`DevmapPredictor` computes it for
``programl predict devmap`` and a pretrained model's ``predict`` (``PretrainedModel.predict``). Importing this module
imports neither torch nor numpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from programl.exceptions import ProgramlError
from programl.tasks.predict import GraphClassifierPredictor, classes_of

__all__ = ["DevmapPrediction", "DevmapPredictor", "predict_devmap"]


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
            ``DevMap.AUX_MEDIANS``, :mod:`programl.datasets.devmap_info`).
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


class DevmapPredictor(GraphClassifierPredictor):
    """The faster device for the kernel of a graph (:class:`DevmapPrediction`): a graph classifier that also reads
    the two auxiliary inputs."""

    def preprocess(
        self, graph, *, transfer: int | None = None, wgsize: int | None = None, typed_pointers: str = "auto"
    ) -> dict[str, Any]:
        """Check the graph and the auxiliary inputs, and encode both.

        Args:
            graph: The kernel's ``ProgramGraph`` (clang-22, as the DevMap graphs: see ``programl predict devmap``).
            transfer: Bytes transferred to the device; default: the graph's ``transfer_bytes`` feature, else the
                platform's median in the DevMap data (``DevMap.AUX_MEDIANS``, :mod:`programl.datasets.devmap_info`).
            wgsize: Work-group size; default likewise (``wgsize`` feature, else the default).
            typed_pointers: ``auto``, ``map`` or ``keep``, as for
                :meth:`~programl.tasks.dataflow.predict.DataflowPredictor.preprocess`.

        Raises:
            ProgramlError: An auxiliary input that is not a finite number >= 0, a graph with no instructions, or
                one with an edge to a node that does not exist.
            TypeError: ``graph`` is not a ``ProgramGraph``.
        """
        import numpy as np
        import torch

        from programl.datasets.devmap_info import AUX_MEDIANS

        self.check(graph)
        platform = self.pretrained.platform
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
        data = self.encode(graph, typed_pointers)
        data.graph_x = torch.tensor([[float(values["transfer"]), float(values["wgsize"])]], dtype=torch.float32)
        return {"data": data, "source": source, **values}

    def postprocess(self, outputs: dict[str, Any]) -> DevmapPrediction:
        """The more likely device and each device's probability."""
        import torch

        logits = outputs["logits"]
        probabilities = torch.softmax(logits, dim=-1)[0].tolist()
        classes = classes_of(self.pretrained, logits)
        best = int(logits[0].argmax())
        return DevmapPrediction(
            platform=self.pretrained.platform,
            device=classes[best],
            probability=float(probabilities[best]),
            probabilities=dict(zip(classes, map(float, probabilities))),
            transfer=outputs["transfer"],
            wgsize=outputs["wgsize"],
            source=outputs["source"],
        )


def predict_devmap(pretrained, graph, **options) -> DevmapPrediction:
    """Predict the faster device for the kernel of ``graph``: :class:`DevmapPredictor` with ``options``
    (:meth:`DevmapPredictor.preprocess`'s keyword arguments).

    Args:
        pretrained: A loaded pretrained model (``PretrainedModel``) of task ``devmap``.
        graph: The kernel's ``ProgramGraph``.
    """
    return DevmapPredictor(pretrained)(graph, **options)
