"""A data-flow model scored by distance from the root (studies/distance_scores.py) on a tiny DeepDataFlow
data set (tests/data/_ddf.py, no compiler needed) with the shipped liveness model: the bucketed counts pool to the
confusion matrix of all nodes, as the training metrics pool it."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from programl.datasets import DeepDataFlow  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from programl.models import MetricsAccumulator  # noqa: E402
from programl.pretrained import pretrained  # noqa: E402
from programl.proto import ProgramGraph  # noqa: E402
from studies.distance import BUCKETS, hop_distances  # noqa: E402
from tests.data._ddf import tiny_dataset  # noqa: E402

_STUDY = runpy.run_path(str(Path(__file__).resolve().parents[1] / "distance_scores.py"))
example_view, score_by_distance, scores_to_dict = (
    _STUDY[n] for n in ("example_view", "score_by_distance", "scores_to_dict")
)


@pytest.fixture(scope="module")
def liveness():
    return pretrained("liveness")


@pytest.fixture(scope="module")
def examples(tmp_path_factory, liveness):
    root = tiny_dataset(tmp_path_factory.mktemp("tiny"))
    vocabulary = liveness.directory / liveness.metadata["vocabulary"]["file"]
    return DeepDataFlow.from_directory(root, "liveness", "train", max_steps=None, vocabulary_path=vocabulary)


def test_pooled_counts_are_those_of_all_nodes(liveness, examples) -> None:
    assert len(examples) >= 5
    scores = score_by_distance(liveness, examples, steps=[30, 2], batch_nodes=200)
    for t in (30, 2):
        accumulator = MetricsAccumulator()
        with torch.no_grad():
            for i in range(len(examples)):
                data = examples[i]
                accumulator.update(liveness.model(data, num_steps=t), data.y)
        cm = accumulator.compute()["confusion_matrix"]
        for name in ("hops", "control"):
            s = scores[t][name]
            assert s.examples == len(examples)
            pooled = s.pooled()
            assert [
                [pooled["true_negatives"], pooled["false_positives"]],
                [pooled["false_negatives"], pooled["true_positives"]],
            ] == cm
            computed = accumulator.compute()
            for key in ("precision", "recall", "f1"):
                assert pooled[key] == pytest.approx(computed[f"pooled_{key}"])
    as_dict = scores_to_dict(scores)
    assert list(as_dict) == ["T30", "T2"] and as_dict["T2"]["steps"] == 2
    assert [r["bucket"] for r in as_dict["T30"]["distances"]["hops"]["buckets"]] == list(BUCKETS)


def test_example_view_is_the_graph_of_the_example(examples) -> None:
    data = examples[0]
    graph = ProgramGraph.FromString(examples.layout.graph(examples.graph_name(0)).read_bytes())
    root = int(data.root.argmax())
    np.testing.assert_array_equal(hop_distances(example_view(data), root), hop_distances(graph, root))


def test_options_are_checked(liveness, examples) -> None:
    with pytest.raises(ProgramlError, match="unknown distance 'far'"):
        score_by_distance(liveness, examples, steps=[30], distances=["far"])
    with pytest.raises(ProgramlError, match="steps must be >= 0"):
        score_by_distance(liveness, examples, steps=[-1])
    devmap = SimpleNamespace(task="devmap", name="devmap-amd")
    with pytest.raises(ProgramlError, match="devmap-amd: a devmap model, not a data-flow model"):
        score_by_distance(devmap, examples, steps=[30])
