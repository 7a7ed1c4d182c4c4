"""studies/original_graphs.py ``--predict-defaults`` scores the models ``programl predict dataflow`` runs when
given no ``--model`` and no ``--steps`` (issue 36 item 5's "done when"): the same choice as the command's."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.dataflow.names import ANALYSES  # noqa: E402
from programl.pretrained.hub import find_pretrained_metadata  # noqa: E402
from programl.tasks.dataflow.spec import STEP_FREE_MODES  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import original_graphs  # noqa: E402


@pytest.mark.parametrize("analysis", ANALYSES)
def test_the_default_model_is_the_step_free_variant_predict_runs(analysis: str) -> None:
    from programl.tasks import TASKS

    metadata = find_pretrained_metadata("dataflow", analysis=analysis)
    name = original_graphs.predict_default_model(analysis)
    assert name in metadata
    assert (metadata[name].get("inference") or {}).get("mode") in STEP_FREE_MODES
    # programl predict --steps T picks the faithful model instead: the helper asks as a call without --steps
    assert TASKS["dataflow"].predict_default(list(metadata), metadata, argparse.Namespace(steps=30)) == analysis
