"""studies/learned_floods.py: the four control-flow floods predicted by a reachability model, both ways."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.models import DataflowGGNN  # noqa: E402
from studies.learned_floods import LearnedControlFloods  # noqa: E402
from tests.models.test_dataflow import examples_batch  # noqa: E402


def test_learned_floods_are_a_reachability_models_predictions_both_ways(reachability_examples):
    """:class:`LearnedControlFloods`: ``after`` is the reachability model's prediction, ``before`` its prediction
    with the control edges reversed; a model given it as ``flood_source`` reads them instead of the exact floods."""
    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    reachability = DataflowGGNN(len(vocab), num_steps=6).eval()
    floods = LearnedControlFloods(reachability)(batch)
    flipped = batch.clone()
    control = batch.edge_flow == 0
    flipped.edge_index[:, control] = batch.edge_index[:, control].flip(0)
    with torch.no_grad():
        assert torch.equal(floods[:, 0], reachability(batch).argmax(-1).float())
        assert torch.equal(floods[:, 1], reachability(flipped).argmax(-1).float())
        stable = LearnedControlFloods(reachability, until_stable={"min_steps": 6, "max_steps": 6, "patience": 3})(batch)
        assert torch.equal(stable, floods)
        variant = DataflowGGNN(len(vocab), control_floods=True).eval()
        variant.flood_embedding.normal_()
        batch.control_floods = floods
        given = variant(batch)
        del batch.control_floods
        variant.flood_source = LearnedControlFloods(reachability)
        torch.testing.assert_close(variant(batch), given, rtol=0, atol=0)
        assert "flood_source" not in "".join(variant.state_dict())
