"""studies/heuristics.py's ``mlp-bits+texts`` baseline (the devmap GGNN's head without the graph, SPEC §6.5):
it learns a step in an auxiliary input and a text count, and it is deterministic for a seed."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from programl.data.devmap import cross_validation_splits  # noqa: E402

HEURISTICS = runpy.run_path(str(Path(__file__).resolve().parents[1] / "heuristics.py"))


def _problem(n: int = 300):
    """GPU faster (1) when the transfer is above a threshold or the kernel has a 'fdiv' text; 3 texts."""
    rng = np.random.default_rng(0)
    transfer = rng.uniform(0, 20, n)  # log1p(bytes)
    wgsize = rng.uniform(0, 6, n)
    counts = rng.integers(0, 4, (n, 3)).astype(float)
    counts[:, 2] = (rng.random(n) < 0.2) * rng.integers(1, 5, n)  # 'fdiv', present in a fifth of the kernels
    labels = ((transfer > 12) | (counts[:, 2] > 0)).astype(int)
    return np.stack([transfer, wgsize], axis=1), counts, labels


def test_mlp_learns_steps_and_counts():
    aux, counts, labels = _problem()
    split = cross_validation_splits(labels, 5, 204)[0]
    p = HEURISTICS["mlp_probabilities"](aux, counts, labels, split, seed=204)
    assert p.shape == (len(split.test),)
    assert ((p >= 0) & (p <= 1)).all()
    accuracy = ((p > 0.5) == labels[split.test]).mean()
    assert accuracy >= 0.9, accuracy


def test_mlp_is_deterministic_and_seeded():
    aux, counts, labels = _problem()
    split = cross_validation_splits(labels, 5, 204)[1]
    fn = HEURISTICS["mlp_probabilities"]
    first, again = fn(aux, counts, labels, split, seed=204), fn(aux, counts, labels, split, seed=204)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, fn(aux, counts, labels, split, seed=205))


def test_missing_graphs_are_one_line(tmp_path, capsys):
    """Without built graphs the script says so in one line and exits 1 (no traceback)."""
    source = Path(__file__).resolve().parents[3] / "shared" / "data" / "devmap"
    if not source.is_dir():
        pytest.skip(f"no devmap data at {source}")
    status = HEURISTICS["main"](["--source-dir", str(source), "--data-dir", str(tmp_path), "--mlp-seeds"])
    assert status == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("heuristics.py: ") and "build the devmap graphs first" in error
    assert "\n" not in error


def test_forest_seeds_average_each_metric():
    """--forest-seeds: a fold's metrics are the seeds' means, and each seed's accuracy is kept."""
    by_seed = [{"accuracy": 0.9, "f1": 0.8}, {"accuracy": 0.8, "f1": 0.6}]
    mean = HEURISTICS["mean_metrics"](by_seed)
    assert mean["accuracy"] == pytest.approx(0.85) and mean["f1"] == pytest.approx(0.7)
    assert mean["accuracy_by_seed"] == [0.9, 0.8]
    assert HEURISTICS["mean_metrics"](by_seed[:1])["accuracy"] == 0.9  # one seed: its own numbers
