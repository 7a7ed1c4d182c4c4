"""Tests of the node-text counts fed to devmap's head (programl.models.readout.TextCountEncoding, used by
``programl train devmap --text-counts``): counts by hand, scales from the training graphs that travel with the
weights, and a head that learns from them alone (the head is SPEC §6.5's; the counts are ours)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch  # noqa: E402

from programl.models import GGNNGraphClassifier, PooledReadoutClassifier, TextCountEncoding  # noqa: E402
from programl.models.pooled_readout import is_paper_head  # noqa: E402
from tests.models.test_graph_classifier import devmap_like_dataset  # noqa: E402


def test_counts_by_hand() -> None:
    x, batch = torch.tensor([0, 0, 2, 1, 0]), torch.tensor([0, 0, 0, 1, 1])
    encoding = TextCountEncoding(4)
    # unfitted: the scales are 1, so the output is log(1 + count)
    expected = torch.log1p(torch.tensor([[2.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]]))
    torch.testing.assert_close(encoding(x, batch, 2), expected)
    encoding.fit(x, batch, 2)
    # scale: the largest log(1 + count) per text over the training graphs; 1 for the text no graph has (id 3)
    torch.testing.assert_close(encoding.scale, torch.tensor([math.log(3), math.log(2), math.log(2), 1.0]))
    out = encoding(torch.tensor([0, 3, 3]), torch.tensor([0, 0, 0]), 1)
    torch.testing.assert_close(out, torch.tensor([[math.log(2) / math.log(3), 0.0, 0.0, math.log(3)]]))
    assert encoding(x, batch, 3)[2].sum() == 0  # a graph without nodes counts nothing


def test_scales_are_a_buffer_and_bad_input_is_refused() -> None:
    encoding = TextCountEncoding(3).fit(torch.tensor([1, 1, 1]), torch.tensor([0, 0, 0]), 1)
    other = TextCountEncoding(3)
    other.load_state_dict(encoding.state_dict())
    assert torch.equal(other.scale, encoding.scale) and other.out_channels == 3
    with pytest.raises(ValueError, match="num_texts"):
        TextCountEncoding(0)
    with pytest.raises(ValueError, match="training graph"):
        encoding.fit(torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long), 0)


def test_paper_head_predicate() -> None:
    assert is_paper_head() and is_paper_head(2, "sum", 0, False)
    assert not is_paper_head(4) and not is_paper_head(pooling="mean")
    assert not is_paper_head(aux_bins=8) and not is_paper_head(text_counts=True)


def test_head_learns_a_label_that_only_the_text_counts_decide() -> None:
    """Two kernels that differ in one node's text and share their auxiliary inputs; the graph readout is silenced
    (zero weights, frozen), so only the counts can tell them apart."""
    vocab, batch = devmap_like_dataset()
    graphs = batch.to_data_list()
    for i, data in enumerate(graphs):
        data.graph_x = graphs[0].graph_x.clone()  # the same auxiliary inputs everywhere
        data.graph_y = torch.tensor([i % 2])
        if i % 2:
            data.x = data.x.clone()
            data.x[0] = (data.x[0] + 1) % len(vocab)
    batch = Batch.from_data_list(graphs)
    torch.manual_seed(0)
    graph_model = GGNNGraphClassifier(len(vocab), 2, hidden_channels=8, layer_schedule=[0], use_positions=False)
    with torch.no_grad():
        for p in graph_model.parameters():
            p.zero_()
            p.requires_grad_(False)
    model = PooledReadoutClassifier(graph_model, aux_hidden=16, text_counts=len(vocab) + 1)
    assert model.aux.norm.num_features == 2 + 2 + len(vocab) + 1
    model.fit_text_counts(batch.x, batch.batch, batch.num_graphs)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(100):
        optimizer.zero_grad()
        F = torch.nn.functional
        F.cross_entropy(model(batch).logits, batch.graph_y).backward()
        optimizer.step()
    model.eval()
    assert torch.equal(model.predict(batch), batch.graph_y)
    # without the counts the same head cannot separate them: every input it sees is equal
    blind = PooledReadoutClassifier(graph_model, aux_hidden=16)
    blind.eval()
    assert len(set(blind.predict(batch).tolist())) == 1


def test_a_single_graph_counts_as_inside_a_batch() -> None:
    """``programl predict devmap`` passes one graph without a ``batch`` vector: the same logits as in a batch."""
    vocab, batch = devmap_like_dataset()
    torch.manual_seed(0)
    graph_model = GGNNGraphClassifier(len(vocab), 4, hidden_channels=8, layer_schedule=[0, 0], use_positions=False)
    model = PooledReadoutClassifier(graph_model, aux_hidden=16, aux_bins=4, text_counts=len(vocab) + 1)
    model.fit_aux(batch.graph_x)
    model.fit_text_counts(batch.x, batch.batch, batch.num_graphs)
    model.eval()
    single = batch.to_data_list()[3]
    del single.batch
    torch.testing.assert_close(model(single).logits[0], model(batch).logits[3])
