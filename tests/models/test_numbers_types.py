"""Numbers and types from the graph to the model (issue 40 item 2): to_pyg, the embedding, the devmap options."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from programl.graph_builder.llvm import BuildOptions, graph_from_ir
from programl.graph_builder.numbers_types import annotate
from programl.io.pyg import to_pyg
from programl.models.graph_classifier import GGNNGraphClassifier
from programl.models.numbers_types import NumberTypeEmbedding, StringBytesEmbedding

IR = """\
define void @k(ptr %p, <4 x float> %v) {
  %a = alloca [16 x i32], align 4
  %x = fadd <4 x float> %v, splat (float 0.25)
  store <4 x float> %x, ptr %p
  store i32 1024, ptr %a
  ret void
}
"""


def test_to_pyg_exposes_them_only_when_present():
    plain = graph_from_ir(IR)
    rich = graph_from_ir(IR, options=BuildOptions(numbers_and_types=True))
    assert "x_num" not in to_pyg(plain) and "x_type" not in to_pyg(plain)
    data = to_pyg(rich)
    n = len(rich.node)
    assert data.x_num.shape == (n, 10) and data.x_type.shape == (n, 6)
    assert data.x_num.dtype == torch.long
    texts = [
        node.features.feature["full_text"].bytes_list.value[0].decode() if i else "" for i, node in enumerate(rich.node)
    ]
    assert data.x_num[texts.index("i32 1024")].tolist() == [1, 0, 3, 1, 0, 2, 4, 0, 0, 0]
    assert data.x_type[texts.index("%a = alloca [16 x i32], align 4")].tolist() == [2, 16, 16, 512, 32, 0]
    assert int((data.x_num[:, 0] > 0).sum()) == 3 and int((data.x_type[:, 0] > 0).sum()) == 4
    # (1024, the splat 0.25, alloca's implicit i32 1; the alloca, the two vector variables, the splat)
    # forced on: zeros for a graph without them (a data set batches); forced off: never
    forced = to_pyg(plain, numbers_and_types=True)
    assert forced.x_num.abs().sum() == 0 and forced.x_type.shape == (len(plain.node), 6)
    assert "x_num" not in to_pyg(rich, numbers_and_types=False)
    with pytest.raises(ValueError):
        to_pyg(rich, numbers_and_types="yes")
    # the annotated graph and the builder's agree (no struct here)
    assert torch.equal(to_pyg(annotate(graph_from_ir(IR))).x_type, data.x_type)
    batch = Batch.from_data_list([data, forced])
    assert batch.x_num.shape == (n + len(plain.node), 10)


def test_embedding_is_zero_without_numbers_and_types_and_differs_by_value():
    torch.manual_seed(0)
    embedding = NumberTypeEmbedding(8)
    x_num = torch.tensor([[0] * 10, [1, 0, 3, 1, 0, 2, 4, 0, 0, 0], [1, 0, 3, 2, 0, 4, 8, 0, 0, 0]])
    x_type = torch.tensor([[0] * 6, [0] * 6, [2, 16, 16, 512, 32, 0]])
    out = embedding(x_num, x_type)
    assert out.shape == (3, 8)
    assert torch.equal(out[0], torch.zeros(8))
    assert not torch.allclose(out[1], out[2])
    out.sum().backward()
    assert embedding.digits.weight.grad.abs().sum() > 0


def test_classifier_option_off_keeps_the_paper_model_and_on_reads_them():
    data = to_pyg(graph_from_ir(IR, options=BuildOptions(numbers_and_types=True)), {})
    data.graph_y = torch.tensor([1])
    torch.manual_seed(0)
    plain = GGNNGraphClassifier(5, 2, hidden_channels=8, layer_timesteps=[1])
    assert not any(k.startswith("numbers_and_types") for k in plain.state_dict())
    torch.manual_seed(0)
    rich = GGNNGraphClassifier(5, 2, hidden_channels=8, layer_timesteps=[1], numbers_and_types=True)
    assert any(k.startswith("numbers_and_types.") for k in rich.state_dict())
    # the shared parameters are drawn first, so the two differ only by the node-input embedding
    assert not torch.allclose(plain(data).logits, rich(data).logits)
    zeroed = data.clone()
    zeroed.x_num = torch.zeros_like(data.x_num)
    zeroed.x_type = torch.zeros_like(data.x_type)
    assert torch.allclose(plain(data).logits, rich(zeroed).logits)
    rich.loss(rich(data), data.graph_y).backward()
    assert rich.numbers_and_types.exponent.weight.grad.abs().sum() > 0


STRINGS = """\
@.str = private unnamed_addr constant [4 x i8] c"%d\\0A\\00", align 1
declare i32 @printf(ptr, ...)
define i32 @main() {
  %a = call i32 (ptr, ...) @printf(ptr @.str, i32 1024)
  ret i32 0
}
"""


def test_string_embedding_is_zero_without_a_string_and_differs_by_byte_and_place():
    torch.manual_seed(0)
    embedding = StringBytesEmbedding(8)
    x_str = torch.zeros((4, 17), dtype=torch.long)
    x_str[1, :4] = torch.tensor([3, 38, 101, 1])  # "%d\0"
    x_str[2, :4] = torch.tensor([3, 101, 38, 1])  # "d%\0": the same bytes, other places
    x_str[3, :4] = torch.tensor([3, 33, 101, 1])  # " d\0"
    out = embedding(x_str)
    assert out.shape == (4, 8) and torch.equal(out[0], torch.zeros(8))
    assert not torch.allclose(out[1], out[2]) and not torch.allclose(out[1], out[3])
    out.sum().backward()
    assert embedding.bytes.weight.grad.abs().sum() > 0


def test_classifier_string_bytes_start_at_zero_from_weights_without_them():
    """Weights of a model without the string embedding (the paper's, or a numbers-and-types model's) start one with
    it at zero (``init_from_missing``): the same logits; then it learns (a gradient reaches the byte tables)."""
    graph = graph_from_ir(STRINGS, options=BuildOptions(numbers_and_types=True, string_bytes=True))
    data = to_pyg(graph, {})
    assert int((data.x_str[:, 0] > 0).sum()) == 1
    data.graph_y = torch.tensor([1])
    torch.manual_seed(0)
    numbers = GGNNGraphClassifier(5, 2, hidden_channels=8, layer_timesteps=[1], numbers_and_types=True)
    both = GGNNGraphClassifier(5, 2, hidden_channels=8, layer_timesteps=[1], numbers_and_types=True, string_bytes=True)
    assert both.init_from_missing_ok == ("numbers_and_types.", "string_bytes.")
    missing = both.load_state_dict(numbers.state_dict(), strict=False).missing_keys
    assert missing and all(k.startswith("string_bytes.") for k in missing)
    both.init_from_missing(missing)
    assert torch.equal(numbers(data).logits, both(data).logits)
    assert float(both.numbers_and_types.digits.weight.abs().sum()) > 0  # loaded, not zeroed
    both.loss(both(data), data.graph_y).backward()
    assert both.string_bytes.bytes.weight.grad.abs().sum() > 0


def test_devmap_task_option_reaches_the_model_spec():
    from programl.tasks.devmap.spec import DevmapOptions, DevmapSpec

    config = {
        "hidden": 8,
        "layers": 1,
        "steps": 1,
        "positions": False,
        "node_type_gru": False,
        "state_dropout": 0.0,
        "message_dropout": 0.0,
        "aux_hidden": 4,
        "aux_dropout": 0.0,
    }
    spec = DevmapSpec().model_spec(config, 10)
    assert "numbers_and_types" not in spec["kwargs"]  # shipped models' specs are unchanged
    spec = DevmapSpec().model_spec({**config, "numbers_and_types": True}, 10)
    assert spec["kwargs"]["numbers_and_types"] is True
    assert DevmapOptions.defaults("numbers_and_types") == {"numbers_and_types": False}


def test_data_sets_store_the_columns_as_int32_and_the_model_reads_them_alike():
    """``compact_features`` (the data sets' stored form): int32, every value kept but counts above 2**31 - 1,
    which are clamped to it and land in the same log2 bucket; the classifier's logits are those of the int64 form."""
    from programl.datasets.transforms import compact_features, graph_example

    graph = graph_from_ir(STRINGS, options=BuildOptions(numbers_and_types=True, string_bytes=True))
    wide = to_pyg(graph, {})
    example = graph_example(
        graph, {}, ("x", "edge_index", "edge_flow", "edge_pos"), numbers_and_types=True, string_bytes=True
    )
    for key in ("x_num", "x_type", "x_str"):
        assert example[key].dtype == torch.int32 and torch.equal(example[key].long(), wide[key]), key
    huge = torch.tensor([[2, 12_800_000_000, 400_000_000, 12_800_000_000, 32, 0]])
    assert compact_features(huge).tolist() == [[2, 2**31 - 1, 400_000_000, 2**31 - 1, 32, 0]]
    from programl.models.numbers_types import _log2_bucket

    assert torch.equal(_log2_bucket(huge), _log2_bucket(compact_features(huge)))
    torch.manual_seed(0)
    model = GGNNGraphClassifier(8, 2, hidden_channels=8, layer_timesteps=[1], numbers_and_types=True, string_bytes=True)
    narrow = wide.clone()
    for key in ("x_num", "x_type", "x_str"):
        narrow[key] = compact_features(wide[key])
    assert torch.equal(model(wide).logits, model(narrow).logits)
