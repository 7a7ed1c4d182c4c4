"""The GGNN step's speed-ups (issue 38 item 3): the default path gives the numbers of the ``MessagePassing`` code it
replaced bit for bit; the opt-in fused steps (``fused=True``) give the same function, rounded differently."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch  # noqa: E402

from programl.models import DataflowGGNN  # noqa: E402
from programl.models.fused_ggnn import _cuts, fused_plan  # noqa: E402
from programl.models.ggnn import TypedGGNNConv, add_backward_edges  # noqa: E402
from tests.models.test_dataflow import examples_batch, overfit  # noqa: E402
from tests.models.test_ggnn import EDGES, _tensors, naive_ggnn_step  # noqa: E402


def message_passing_forward(conv: TypedGGNNConv, x, edge_index, edge_flow, edge_pos, num_steps):
    """The steps exactly as the layer computed them before (``MessagePassing.propagate``: ``index_select`` of the
    table rows, ``* gates[pos]`` with the gates gathered once, ``scatter_add_`` in edge order), as an oracle."""
    n, d = x.shape
    index, edge_type, pos = add_backward_edges(edge_index, edge_flow, edge_pos, conv.num_flows)
    row = index[0] * conv.num_types + edge_type
    degree = torch.bincount(index[1], minlength=n).clamp_(min=1)
    inv_degree = degree.reciprocal().to(x.dtype).unsqueeze(1)
    gates = conv.position_gates()[pos.clamp(0, conv.max_position - 1)]
    for _ in range(num_steps):
        table = conv.message_linear(x).view(n * conv.num_types, d)
        msg = table.index_select(0, row) * gates
        if conv.message_dropout:
            msg = torch.nn.functional.dropout(msg, p=conv.message_dropout, training=conv.training)
        agg = msg.new_zeros(n, d).scatter_add_(0, index[1].view(-1, 1).expand_as(msg), msg)
        x = conv.grus[0](agg * inv_degree, x)
    return x


def synthetic_batch(total_nodes: int, seed: int = 1):
    """ProGraML-shaped random graphs (``benchmarks/train.py``) as one batch."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import train as bench_train

    return Batch.from_data_list(bench_train.synthetic_examples(np.random.default_rng(seed), total_nodes, 100))


def gradients(model, batch):
    model.zero_grad(set_to_none=True)
    logits = model(batch)
    model.loss(logits, batch.y).backward()
    return logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("message_dropout", [0.0, 0.3])
def test_default_path_is_bit_identical_to_message_passing(message_dropout):
    """Thirty steps forward and backward: the same states and gradients, bit for bit (one thread; with message
    dropout the mask is drawn from the same generator state on the same edge order)."""
    torch.manual_seed(0)
    conv = TypedGGNNConv(34, 3, position_pad=2, message_dropout=message_dropout)
    batch = synthetic_batch(600)
    x = torch.randn(batch.num_nodes, 34)
    results = []
    for new in (True, False):
        conv.zero_grad(set_to_none=True)
        h = x.clone().requires_grad_()
        torch.manual_seed(5)
        if new:
            out = conv(h, batch.edge_index, batch.edge_flow, batch.edge_pos, num_steps=30)
        else:
            out = message_passing_forward(conv, h, batch.edge_index, batch.edge_flow, batch.edge_pos, 30)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        results.append((out.detach(), h.grad, {n: p.grad.clone() for n, p in conv.named_parameters()}))
    (out_new, gx_new, g_new), (out_old, gx_old, g_old) = results
    assert torch.equal(out_new, out_old)
    assert torch.equal(gx_new, gx_old)
    for name in g_old:
        assert torch.equal(g_new[name], g_old[name]), name


def test_fused_cuts_fall_on_graph_boundaries():
    batch = synthetic_batch(3000)
    conv = TypedGGNNConv(34, 3, position_pad=2)
    edges = conv.typed_edges(batch.edge_index, batch.edge_flow, batch.edge_pos, batch.num_nodes)
    row, target = edges.edge_index
    source = row // conv.num_types
    graph_starts = set(batch.ptr.tolist())
    for parts in (2, 3, 4):
        cuts = _cuts(source, target, batch.num_nodes, parts)
        assert cuts and set(cuts) <= graph_starts
        plan = fused_plan(source, target, row % conv.num_types, conv.num_types, batch.num_nodes, parts)
        assert len(plan.parts) == len(cuts) + 1
        assert sorted(plan.order.tolist()) == list(range(row.numel()))
        covered = 0
        for part in plan.parts:
            n = part.nodes.stop - part.nodes.start
            assert part.source.numel() == part.edges.stop - part.edges.start == part.bounds[-1]
            assert 0 <= int(part.source.min()) and int(part.source.max()) < n and int(part.target.max()) < n
            covered += n
        assert covered == batch.num_nodes
    # one graph: nowhere to cut
    one = synthetic_batch(300)
    one = Batch.from_data_list([one.get_example(0)])
    e = conv.typed_edges(one.edge_index, one.edge_flow, one.edge_pos, one.num_nodes)
    assert _cuts(e.edge_index[0] // 6, e.edge_index[1], one.num_nodes, 2) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(position_pad=2),
        dict(use_positions=False),
        dict(backward_edges=False, position_pad=2),
        dict(edge_bias=False, position_pad=2),
    ],
)
def test_fused_layer_matches_naive_loop(kwargs):
    torch.manual_seed(0)
    conv = TypedGGNNConv(10, 3, fused=True, **kwargs).double()
    with torch.no_grad():
        for p in conv.parameters():
            if p.dim() == 1:
                p.uniform_(-0.5, 0.5)
    h = torch.randn(7, 10, dtype=torch.float64)
    edge_index, flow, pos = _tensors(EDGES)
    out3 = conv(h, edge_index, flow, pos, num_steps=3)
    ref = h
    for _ in range(3):
        ref = naive_ggnn_step(conv, ref, EDGES)
    torch.testing.assert_close(out3, ref, atol=1e-6, rtol=0)  # the position table is float32, as in test_ggnn


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_fused_forward_and_gradients_match_the_faithful_path(threads):
    """In float64 the fused steps (one part per thread) give the faithful path's logits and gradients to 1e-10.

    The faithful path runs on one thread (the autouse fixture), the fused one on ``threads``: its parts run one
    intra-op thread each, so a busy machine cannot stall them at a barrier."""
    batch = synthetic_batch(800)
    torch.manual_seed(0)
    faithful = DataflowGGNN(100).double()
    fused = DataflowGGNN(100, fused=True).double()
    fused.load_state_dict(faithful.state_dict())
    logits, grads = gradients(faithful, batch)
    faithful.eval()
    with torch.no_grad():
        eval_logits = faithful(batch)
    torch.set_num_threads(threads)
    fused_logits, fused_grads = gradients(fused, batch)
    torch.testing.assert_close(fused_logits, logits, atol=1e-10, rtol=0)
    assert fused_grads.keys() == grads.keys()
    for name in grads:
        torch.testing.assert_close(fused_grads[name], grads[name], atol=1e-10, rtol=1e-10, msg=name)
    fused.eval()
    with torch.no_grad():
        torch.testing.assert_close(fused(batch), eval_logits, atol=1e-10, rtol=0)


def test_fused_float32_stays_close_over_training():
    """Ten AdamW steps in float32 from the same weights: losses within 1e-4 of the faithful path's, step by step."""
    batch = synthetic_batch(500)
    torch.manual_seed(0)
    faithful = DataflowGGNN(100)
    fused = DataflowGGNN(100, fused=True)
    fused.load_state_dict(faithful.state_dict())
    losses = []
    for model in (faithful, fused):
        torch.set_num_threads(2 if model is fused else 1)  # the fused steps in two parts
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        run = []
        for _ in range(10):
            opt.zero_grad()
            loss = model.loss(model(batch), batch.y)
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    assert max(abs(a - b) for a, b in zip(*losses)) < 1e-4


def test_fused_dataflow_ggnn_overfits_reachability(reachability_examples):
    """Accuracy holds: the fused model learns the batch the faithful one learns (test_dataflow's budget)."""
    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    model = DataflowGGNN(len(vocab), fused=True)
    _, loss = overfit(model, batch, lr=3e-3, max_steps=250)
    assert loss < 0.2


def test_fused_falls_back_where_it_does_not_apply():
    """Several GRUs, dropout in training and autocast run the faithful path: the same numbers as without fused."""
    torch.manual_seed(0)
    h = torch.randn(7, 10)
    edge_index, flow, pos = _tensors(EDGES)
    node_type = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    for kwargs in (dict(num_node_types=2), dict(dropout=0.5)):
        plain = TypedGGNNConv(10, 3, position_pad=2, **kwargs)
        fused = TypedGGNNConv(10, 3, position_pad=2, fused=True, **kwargs)
        fused.load_state_dict(plain.state_dict())
        outs = []
        for conv in (plain, fused):
            torch.manual_seed(3)
            outs.append(conv(h, edge_index, flow, pos, node_type=node_type, num_steps=2))
        assert torch.equal(*outs)
    plain = TypedGGNNConv(10, 3, position_pad=2)
    fused = TypedGGNNConv(10, 3, position_pad=2, fused=True)
    fused.load_state_dict(plain.state_dict())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.equal(plain(h, edge_index, flow, pos), fused(h, edge_index, flow, pos))


def test_fused_is_off_unless_asked_for(monkeypatch):
    monkeypatch.delenv("PROGRAML_GGNN_FUSED", raising=False)
    assert not TypedGGNNConv(10, 3).fused and not DataflowGGNN(5).conv.fused
    assert DataflowGGNN(5, fused=True).conv.fused
    monkeypatch.setenv("PROGRAML_GGNN_FUSED", "1")
    assert TypedGGNNConv(10, 3).fused and DataflowGGNN(5).conv.fused
    assert not DataflowGGNN(5, fused=False).conv.fused


def test_the_gru_keeps_float32_under_cpu_bf16_autocast(monkeypatch) -> None:
    """Issue 38 item 3: under the CPU's bfloat16 autocast the message products run in bfloat16, the GRU in float32
    (autocast's bfloat16 GRU cell is slower than float32 on the CPU, and less accurate); outside autocast the update
    is the plain ``GRUCell`` call, bit for bit."""
    import programl.models.ggnn as ggnn

    _gru_update = ggnn._gru_update
    torch.manual_seed(0)
    gru = torch.nn.GRUCell(10, 10)
    inputs, states = torch.randn(7, 10), torch.randn(7, 10)
    assert torch.equal(_gru_update(gru, inputs, states), gru(inputs, states))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        kept = _gru_update(gru, inputs.bfloat16(), states)
        autocast_cell = gru(inputs, states)
    assert kept.dtype == torch.float32 and not torch.equal(kept, autocast_cell)  # autocast's cell: bfloat16 gates
    assert torch.equal(kept, gru(inputs.bfloat16().float(), states))

    # A layer over 30 steps: the bfloat16 run stays near the float32 one, nearer than with autocast's GRU.
    h = torch.randn(7, 10)
    edge_index, flow, pos = _tensors(EDGES)
    conv = TypedGGNNConv(10, 3, position_pad=2)
    with torch.no_grad():
        exact = conv(h, edge_index, flow, pos, num_steps=30)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            mixed = conv(h, edge_index, flow, pos, num_steps=30)
        monkeypatch.setattr(ggnn, "_gru_update", lambda gru, a, b: gru(a, b))  # autocast's cell, as before
        with torch.autocast("cpu", dtype=torch.bfloat16):
            all_bf16 = conv(h, edge_index, flow, pos, num_steps=30)
    assert mixed.dtype == torch.float32
    error, error_before = float((mixed - exact).abs().max()), float((all_bf16.float() - exact).abs().max())
    assert error < 0.05
    assert error < error_before
