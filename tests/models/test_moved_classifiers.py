"""RGCNGraphClassifier and PooledReadoutClassifier: the models the classifyapp and devmap tasks used to define inside
functions, now in programl.models (issue 10 item 2)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.models import GGNNGraphClassifier, PooledReadoutClassifier, RGCNGraphClassifier  # noqa: E402
from tests.models.test_graph_classifier import devmap_like_dataset, toy_dataset, train  # noqa: E402


def test_rgcn_classifier_sums_node_readouts_per_graph_and_learns() -> None:
    vocab, batch = toy_dataset()
    torch.manual_seed(0)
    model = RGCNGraphClassifier(len(vocab), 3, hidden_channels=16, layer_timesteps=[2, 1])
    assert model.schedule == [0, 0, 1] and len(model.convs) == len(model.grus) == 2
    out = model(batch)
    assert out.logits.shape == (12, 3) and torch.equal(out.logits, out.graph_logits)
    single = model(batch.get_example(5))
    torch.testing.assert_close(single.logits[0], out.logits[5], atol=1e-5, rtol=1e-5)
    assert torch.equal(model.predict(batch), out.logits.argmax(-1))
    assert train(model, batch, batch.graph_y, lr=1e-2, max_steps=300) <= 300  # fits the three classes


@pytest.mark.parametrize("pooling", ["sum", "mean"])
def test_pooled_readout_pools_k_channels_and_adds_the_intermediate_loss(pooling) -> None:
    vocab, batch = devmap_like_dataset()
    torch.manual_seed(0)
    graph_model = GGNNGraphClassifier(len(vocab), 4, hidden_channels=16, layer_schedule=[0, 1], aux_channels=0)
    model = PooledReadoutClassifier(graph_model, pooling=pooling, aux_hidden=8)
    out = model(batch)
    assert out.logits.shape == out.graph_logits.shape == (12, 2)
    h0, hT = graph_model.node_states(batch)
    node_logits = graph_model.readout(h0, hT)
    reduce = torch.sum if pooling == "sum" else torch.mean
    for i in range(batch.num_graphs):
        torch.testing.assert_close(out.graph_logits[i], reduce(node_logits[batch.batch == i], 0)[:2])
    ce = torch.nn.functional.cross_entropy
    expected = ce(out.logits, batch.graph_y) + graph_model.intermediate_loss_weight * ce(
        out.graph_logits, batch.graph_y
    )
    torch.testing.assert_close(model.loss(out, batch.graph_y), expected)
