"""Tests of the thermometer code of devmap's auxiliary inputs (programl.models.readout.ThermometerEncoding, used by
``programl train devmap --aux-bins N``): thresholds at training quantiles, bits by hand, and the thresholds travel
with the weights (SPEC §6.5 head; the encoding itself is ours)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.models import GGNNGraphClassifier, PooledReadoutClassifier, ThermometerEncoding  # noqa: E402
from programl.models.readout import AuxiliaryReadout  # noqa: E402
from tests.models.test_graph_classifier import devmap_like_dataset  # noqa: E402


def test_bits_by_hand() -> None:
    encoding = ThermometerEncoding(2, 3).fit(torch.tensor([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [4.0, 5.0]]))
    # the inner quartiles of 1..4 are 1.75, 2.5, 3.25; a constant input has one distinct threshold, then +inf
    torch.testing.assert_close(encoding.thresholds[0], torch.tensor([1.75, 2.5, 3.25]))
    assert encoding.thresholds[1, 0] == 5.0 and torch.isinf(encoding.thresholds[1, 1:]).all()
    bits = encoding(torch.tensor([[0.0, 9.0], [2.5, 5.0], [9.0, 4.0]]))
    assert bits.shape == (3, 6) and encoding.out_channels == 6
    assert bits.tolist() == [[0, 0, 0, 1, 0, 0], [1, 0, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0]]  # strictly greater


def test_unfitted_encoding_is_all_zero_and_bad_input_is_refused() -> None:
    encoding = ThermometerEncoding(2, 4)
    assert encoding(torch.tensor([[1e9, 1e9]])).sum() == 0
    with pytest.raises(ValueError, match="non-empty"):
        encoding.fit(torch.zeros(0, 2))
    with pytest.raises(ValueError, match="non-empty"):
        encoding.fit(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="bins"):
        ThermometerEncoding(2, 0)


def test_head_fits_log1p_thresholds_and_they_are_saved() -> None:
    head = AuxiliaryReadout(2, 2, 8, 2, aux_bins=4)
    assert head.norm.num_features == 2 + 8
    raw = torch.tensor([[10.0, 1.0], [100.0, 2.0], [1000.0, 4.0], [10000.0, 8.0], [100000.0, 16.0]])
    head.fit_aux(raw)
    expected = torch.quantile(torch.log1p(raw[:, 0]), torch.tensor([0.2, 0.4, 0.6, 0.8]))
    torch.testing.assert_close(head.encoding.thresholds[0], expected)
    other = AuxiliaryReadout(2, 2, 8, 2, aux_bins=4)
    other.load_state_dict(head.state_dict())  # a buffer: saved and loaded with the weights
    assert torch.equal(other.encoding.thresholds, head.encoding.thresholds)
    assert AuxiliaryReadout(2, 2).encoding is None and AuxiliaryReadout(2, 2).norm.num_features == 4  # the paper's


def test_classifier_with_bins_learns_a_label_set_by_the_auxiliary_inputs() -> None:
    """Twelve copies of one graph whose label only the auxiliary inputs decide (as devmap's kernels with inputs)."""
    vocab, batch = devmap_like_dataset()
    torch.manual_seed(0)
    graph_model = GGNNGraphClassifier(len(vocab), 4, hidden_channels=8, layer_schedule=[0, 0], use_positions=False)
    model = PooledReadoutClassifier(graph_model, aux_hidden=16, aux_bins=8)
    model.fit_aux(batch.graph_x)
    assert torch.isfinite(model.aux.encoding.thresholds[0, 0])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(100):
        optimizer.zero_grad()
        model.loss(model(batch), batch.graph_y).backward()
        optimizer.step()
    model.eval()
    assert torch.equal(model.predict(batch), batch.graph_y)
