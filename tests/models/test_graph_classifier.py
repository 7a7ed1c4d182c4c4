"""Tests of programl.models.graph_classifier (SPEC §6.5 devmap, §6.6 POJ-104)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch  # noqa: E402

from programl.data.vocabulary import build_vocabulary  # noqa: E402
from programl.io.pyg import to_pyg  # noqa: E402
from programl.models import GGNNGraphClassifier, TypedGGNNConv  # noqa: E402
from programl.proto import ProgramGraph  # noqa: E402
from tests.models.random_graphs import random_program_graph  # noqa: E402


def count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_weight_sharing_schedule():
    # POJ-104 branch config: 8 layers, parameter set i // 2 -> 4 distinct sets
    model = GGNNGraphClassifier(100, 104, hidden_channels=16, layer_timesteps=[2, 2, 2, 2])
    assert model.schedule == [0, 0, 1, 1, 2, 2, 3, 3] and len(model.convs) == 4
    one_conv = count(TypedGGNNConv(16, 3))
    assert count(model) == 101 * 16 + 4 * one_conv + count(model.readout)
    # paper devmap model: 6 steps, even and odd layers share
    model = GGNNGraphClassifier(100, 2, hidden_channels=16, layer_schedule=[0, 1, 0, 1, 0, 1])
    assert len(model.convs) == 2
    with pytest.raises(ValueError, match="unused"):
        GGNNGraphClassifier(100, 2, layer_schedule=[0, 2])
    with pytest.raises(ValueError, match="invalid"):
        GGNNGraphClassifier(100, 2, layer_schedule=[])


def test_node_type_grus():
    model = GGNNGraphClassifier(10, 3, hidden_channels=8, layer_timesteps=[1], node_type_gru=True)
    assert len(model.convs[0].grus) == 3


def structured_graph(length: int, label: int) -> ProgramGraph:
    """A straight chain of ``length`` identical instructions, each defining a variable used by the next one, plus
    (class 1) a back edge from the end to the start or (class 2) a forward edge skipping the middle.

    All classes have the same node texts and counts, so only the edges tell them apart."""
    g = ProgramGraph()
    g.node.add(type=0, text="[external]")
    first = len(g.node)
    for i in range(length):
        g.node.add(type=0, text="add" if i < length - 1 else "br")
    for i in range(first, first + length - 1):
        g.edge.add(flow=0, source=i, target=i + 1)
        var = len(g.node)
        g.node.add(type=1, text="i32")
        g.edge.add(flow=1, source=i, target=var)
        g.edge.add(flow=1, position=1, source=var, target=i + 1)
    last = first + length - 1
    if label == 1:
        g.edge.add(flow=0, position=1, source=last, target=first)
    elif label == 2:
        g.edge.add(flow=0, position=1, source=first, target=last)
    g.edge.add(flow=2, source=0, target=first)
    g.edge.add(flow=2, source=last, target=0)
    g.features.feature["poj104_label"].int64_list.value.append(label + 1)
    return g


def toy_dataset():
    """Three classes x four chain lengths (6, 8, 10, 12)."""
    graphs = [structured_graph(length, label) for label in range(3) for length in (6, 8, 10, 12)]
    vocab = build_vocabulary(graphs)
    return vocab, Batch.from_data_list([to_pyg(g, vocab) for g in graphs])


def devmap_like_dataset(seed=0):
    """One and the same graph twelve times; the label is decided by the auxiliary inputs alone."""
    g = random_program_graph(np.random.default_rng(seed), num_blocks=3, block_size=(2, 4))
    data = []
    vocab = build_vocabulary([g])
    for i in range(12):
        transfer, wgsize = (10**6 + i, 16) if i % 2 else (100 + i, 1024)
        g.features.feature["transfer_bytes"].int64_list.value[:] = [transfer]
        g.features.feature["wgsize"].int64_list.value[:] = [wgsize]
        g.features.feature["devmap_label"].int64_list.value[:] = [i % 2]
        data.append(to_pyg(g, vocab))
    return vocab, Batch.from_data_list(data)


def test_forward_shapes_and_pooling():
    vocab, batch = toy_dataset()
    torch.manual_seed(0)
    model = GGNNGraphClassifier(len(vocab), 3, hidden_channels=16, layer_timesteps=[2, 2])
    out = model(batch)
    assert out.logits.shape == (12, 3) and torch.equal(out.logits, out.graph_logits)
    # sum pooling: the graph logits are the sums of the gated node readouts of each graph
    h0, hT = model.node_states(batch)
    node_logits = model.readout(h0, hT)
    for i in range(batch.num_graphs):
        torch.testing.assert_close(out.graph_logits[i], node_logits[batch.batch == i].sum(0))
    # a single graph (no batch vector) gives the same logits as inside a batch
    single = model(batch.get_example(3))
    torch.testing.assert_close(single.logits[0], out.logits[3], atol=1e-5, rtol=1e-5)
    assert model.predict(batch).shape == (12,)


def train(model, batch, target, lr, max_steps):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for step in range(1, max_steps + 1):
        model.train()
        opt.zero_grad()
        loss = model.loss(model(batch), target)
        loss.backward()
        opt.step()
        model.eval()
        if (model.predict(batch) == target).all():
            return step
    pytest.fail(f"not fitted after {max_steps} steps (loss {loss.item():.4f})")


def test_graph_classifier_overfits_three_classes():
    vocab, batch = toy_dataset()
    assert batch.graph_y.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    torch.manual_seed(0)
    model = GGNNGraphClassifier(len(vocab), 3, hidden_channels=32, layer_timesteps=[2, 2], node_type_gru=True)
    train(model, batch, batch.graph_y, lr=3e-3, max_steps=300)


def test_aux_readout_and_intermediate_loss():
    vocab, batch = devmap_like_dataset()
    assert batch.graph_x.shape == (12, 2)
    torch.manual_seed(0)
    model = GGNNGraphClassifier(
        len(vocab), 2, hidden_channels=16, layer_schedule=[0, 1, 0, 1], use_positions=False, aux_channels=2
    )
    out = model(batch)
    assert out.logits.shape == out.graph_logits.shape == (12, 2)
    assert not torch.equal(out.logits, out.graph_logits)
    ce = torch.nn.functional.cross_entropy
    torch.testing.assert_close(
        model.loss(out, batch.graph_y), ce(out.logits, batch.graph_y) + 0.2 * ce(out.graph_logits, batch.graph_y)
    )
    # the auxiliary head: BatchNorm over [graph logits ; log1p(aux)], 32 hidden units, 2 outputs
    assert model.aux.norm.num_features == 4 and model.aux.hidden.out_features == 32
    # the graphs are identical and the label depends only on the auxiliary inputs: without them nothing can fit
    graph_only = model.aux
    model.aux = None
    out = model(batch)
    assert torch.allclose(out.logits, out.logits[:1].expand_as(out.logits), atol=1e-5)
    model.aux = graph_only
    train(model, batch, batch.graph_y, lr=1e-2, max_steps=300)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_gpu_forward_and_backward_match_the_cpu():
    """The POJ-104 classifier (positions, four parameter sets, per-type GRUs) gives the CPU's logits and gradients
    on a GPU (float32 tolerances)."""
    vocab, batch = toy_dataset()
    torch.manual_seed(0)
    options = dict(hidden_channels=32, layer_timesteps=[2, 2, 2, 2], node_type_gru=True)
    cpu_model = GGNNGraphClassifier(len(vocab), 3, **options)
    gpu_model = GGNNGraphClassifier(len(vocab), 3, **options).cuda()
    gpu_model.load_state_dict(cpu_model.state_dict())
    cpu_out = cpu_model(batch)
    gpu_batch = batch.clone().to("cuda")
    gpu_out = gpu_model(gpu_batch)
    torch.testing.assert_close(gpu_out.logits.cpu(), cpu_out.logits, rtol=1e-4, atol=1e-4)
    cpu_model.loss(cpu_out, batch.graph_y).backward()
    gpu_model.loss(gpu_out, gpu_batch.graph_y).backward()
    for (name, p_cpu), p_gpu in zip(cpu_model.named_parameters(), gpu_model.parameters()):
        if p_cpu.grad is None:  # a GRU of a node type the toy graphs lack: unused on both devices
            assert p_gpu.grad is None, name
            continue
        torch.testing.assert_close(p_gpu.grad.cpu(), p_cpu.grad, rtol=1e-3, atol=1e-4, msg=name)
