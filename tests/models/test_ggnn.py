"""Tests of programl.models.ggnn: the typed GGNN layer against a naive per-edge loop (SPEC §6.1)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.models.ggnn import TypedGGNNConv, add_backward_edges, sinusoidal_position_table  # noqa: E402


def test_sinusoidal_table_against_formula():
    table = sinusoidal_position_table(1024, 32, pad=2)
    assert table.shape == (1024, 34) and table.dtype == torch.float32
    for p in (0, 1, 7, 355, 1023):
        for k in range(16):
            f = 1.0 / 10000 ** (2 * k / 32)
            assert table[p, k].item() == pytest.approx(math.sin(p * f), abs=1e-6)
            assert table[p, 16 + k].item() == pytest.approx(math.cos(p * f), abs=1e-6)
        assert table[p, 32:].tolist() == [0.0, 0.0]
    assert table[0, :16].abs().max().item() == 0.0 and table[0, 16:32].tolist() == [1.0] * 16
    # POJ-104 configuration: 200 sinusoidal columns, no padding
    table = sinusoidal_position_table(4, 200)
    assert table.shape == (4, 200)
    assert table[3, 99].item() == pytest.approx(math.sin(3 / 10000 ** (198 / 200)), abs=1e-6)
    with pytest.raises(ValueError):
        sinusoidal_position_table(4, 7)


def naive_ggnn_step(conv: TypedGGNNConv, h, edges, node_type=None):
    """One step written edge by edge with explicit GRU equations (an oracle independent of the vectorised code).

    ``edges`` is a list of (source, target, flow, position) forward edges.
    """
    n, d = h.shape
    num_types = conv.num_types
    weight = conv.message_linear.weight  # (num_types * d, d)
    bias = conv.message_linear.bias
    typed = []
    for s, t, f, p in edges:
        typed.append((s, t, f, p))
        if conv.backward_edges:
            typed.append((t, s, f + conv.num_flows, p))
    agg = [torch.zeros(d, dtype=h.dtype) for _ in range(n)]
    deg = [0] * n
    for s, t, ty, p in typed:
        assert 0 <= ty < num_types
        w = weight[ty * d : (ty + 1) * d]
        msg = w @ h[s] + (bias[ty * d : (ty + 1) * d] if bias is not None else 0)
        if conv.use_positions:
            p = min(max(p, 0), conv.max_position - 1)
            dims = d - conv.position_pad
            half = dims // 2
            row = [math.sin(p / 10000 ** (2 * k / dims)) for k in range(half)]
            row += [math.cos(p / 10000 ** (2 * k / dims)) for k in range(half)]
            row += [0.0] * (d - dims)
            s_p = torch.tensor(row, dtype=h.dtype)
            gate = 2 * torch.sigmoid(conv.position_linear.weight @ s_p + conv.position_linear.bias)
            msg = msg * gate
        agg[t] = agg[t] + msg
        deg[t] += 1
    meet = [torch.zeros(d, dtype=h.dtype) for _ in range(n)]
    if conv.meet_linear is not None:  # per-channel minimum over the meet flow's forward predecessors
        for v in range(n):
            sources = [s for s, t, f, _ in edges if t == v and f == conv.meet_flow]
            if sources:
                mapped = [conv.meet_linear.weight @ h[s] + conv.meet_linear.bias for s in sources]
                meet[v] = torch.stack(mapped).min(0).values
    out = []
    for v in range(n):
        a = agg[v] / max(deg[v], 1) + meet[v]
        gru = conv.grus[0] if node_type is None else conv.grus[int(node_type[v])]
        w_ir, w_iz, w_in = gru.weight_ih.chunk(3)
        w_hr, w_hz, w_hn = gru.weight_hh.chunk(3)
        b_ir, b_iz, b_in = gru.bias_ih.chunk(3)
        b_hr, b_hz, b_hn = gru.bias_hh.chunk(3)
        r = torch.sigmoid(w_ir @ a + b_ir + w_hr @ h[v] + b_hr)
        z = torch.sigmoid(w_iz @ a + b_iz + w_hz @ h[v] + b_hz)
        cand = torch.tanh(w_in @ a + b_in + r * (w_hn @ h[v] + b_hn))
        out.append((1 - z) * cand + z * h[v])
    return torch.stack(out)


# A tiny graph with every flow, a parallel edge pair, a self-loop, a node without in-edges and a position beyond the
# table (clamped to 1023).
EDGES = [
    (0, 1, 2, 0),
    (1, 2, 0, 0),
    (2, 3, 0, 1),
    (2, 4, 1, 0),
    (4, 3, 1, 1),
    (5, 3, 1, 0),
    (5, 3, 1, 2),
    (3, 0, 2, 0),
    (3, 3, 0, 4000),
]


def _tensors(edges):
    edge_index = torch.tensor([[e[0] for e in edges], [e[1] for e in edges]])
    return edge_index, torch.tensor([e[2] for e in edges]), torch.tensor([e[3] for e in edges])


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(position_pad=2),
        dict(position_pad=0),
        dict(use_positions=False),
        dict(backward_edges=False, position_pad=2),
        dict(num_node_types=3, position_pad=2),
        dict(edge_bias=False, position_pad=2),
        dict(meet_flow=0, position_pad=2),
        dict(meet_flow=1, position_pad=0, use_positions=False),
    ],
)
def test_layer_matches_naive_loop(kwargs):
    torch.manual_seed(0)
    d = 8 if kwargs.get("position_pad", 0) == 0 else 10
    conv = TypedGGNNConv(d, 3, **kwargs).double()
    # non-zero biases so that their handling is checked too (and a meet map that is not its zero start)
    with torch.no_grad():
        for p in conv.parameters():
            if p.dim() == 1:
                p.uniform_(-0.5, 0.5)
        if conv.meet_linear is not None:
            conv.meet_linear.weight.normal_()
    h = torch.randn(7, d, dtype=torch.float64)  # node 6 has no edges at all
    node_type = torch.tensor([0, 0, 0, 0, 1, 2, 1]) if kwargs.get("num_node_types", 1) > 1 else None
    edge_index, flow, pos = _tensors(EDGES)
    out = conv(h, edge_index, flow, pos, node_type=node_type)
    expected = naive_ggnn_step(conv, h, EDGES, node_type)
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=0)
    # several steps = repeated single steps
    out3 = conv(h, edge_index, flow, pos, node_type=node_type, num_steps=3)
    ref = h
    for _ in range(3):
        ref = naive_ggnn_step(conv, ref, EDGES, node_type)
    torch.testing.assert_close(out3, ref, atol=1e-6, rtol=0)


def test_layer_float32_matches_naive_loop():
    torch.manual_seed(1)
    conv = TypedGGNNConv(34, 3, position_pad=2)
    h = torch.randn(7, 34)
    edge_index, flow, pos = _tensors(EDGES)
    out = conv(h, edge_index, flow, pos)
    expected = naive_ggnn_step(conv.double(), h.double(), EDGES)
    torch.testing.assert_close(out.double(), expected, atol=1e-5, rtol=0)


def test_initialisation():
    torch.manual_seed(0)
    conv = TypedGGNNConv(34, 3, position_pad=2)
    assert conv.message_linear.weight.shape == (204, 34)
    assert conv.message_linear.bias.abs().sum().item() == 0.0
    assert conv.position_linear.bias.abs().sum().item() == 0.0
    bound = math.sqrt(6 / (34 + 204))  # Xavier-uniform bound for fan_in 34, fan_out 204
    assert conv.message_linear.weight.abs().max().item() <= bound
    assert conv.message_linear.weight.abs().max().item() > 0.9 * bound
    # the position table is a constant buffer, not a parameter, and not saved in the state dict
    names = {n for n, _ in conv.named_parameters()}
    assert not any("table" in n for n in names)
    assert "position_table" not in conv.state_dict()
    # gates lie in (0, 2); at init with zero bias the gate of position p depends only on the table row
    gates = conv.position_gates()
    assert gates.shape == (1024, 34) and 0 < gates.min().item() and gates.max().item() < 2


def test_backward_edges_reuse_positions_and_reverse():
    edge_index, flow, pos = _tensors(EDGES)
    idx, types, p = add_backward_edges(edge_index, flow, pos, 3)
    e = len(EDGES)
    assert torch.equal(idx[:, e:], edge_index.flip(0))
    assert torch.equal(types[e:], flow + 3) and torch.equal(p[e:], pos)


def test_in_degree_counts_all_types():
    conv = TypedGGNNConv(6, 3, use_positions=False)
    edge_index, flow, pos = _tensors(EDGES)
    edges = conv.typed_edges(edge_index, flow, None, 7)
    # node 3: in 2->3, 4->3, 5->3 x2, 3->3 ; backward of 3->0 and of the self-loop -> 7
    assert round(1 / edges.inv_degree[3].item()) == 7
    assert edges.inv_degree[6].item() == 1.0  # isolated node: divide by 1


def test_rejects_unknown_flows_and_missing_positions():
    conv = TypedGGNNConv(6, 3, position_pad=0)
    edge_index = torch.tensor([[0], [1]])
    with pytest.raises(ValueError, match="flows"):
        conv(torch.zeros(2, 6), edge_index, torch.tensor([3]), torch.tensor([0]))
    with pytest.raises(ValueError, match="edge_pos"):
        conv(torch.zeros(2, 6), edge_index, torch.tensor([0]), None)


def test_graph_without_edges():
    conv = TypedGGNNConv(6, 3, position_pad=0)
    h = torch.randn(3, 6)
    out = conv(
        h, torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long)
    )
    torch.testing.assert_close(out, conv.grus[0](torch.zeros(3, 6), h))


def test_dropout_only_in_training():
    torch.manual_seed(0)
    conv = TypedGGNNConv(6, 3, position_pad=0, dropout=0.5)
    edge_index, flow, pos = _tensors(EDGES)
    h = torch.randn(7, 6)
    conv.eval()
    a = conv(h, edge_index, flow, pos)
    b = conv(h, edge_index, flow, pos)
    assert torch.equal(a, b)
    conv.train()
    c = conv(h, edge_index, flow, pos)
    assert (c == 0).float().mean().item() > 0.2


def test_meet_is_a_minimum_over_the_flows_predecessors():
    """The meet (issue 36 item 2): per channel, the minimum over a node's control predecessors of the mapped states;
    0 where a node has none; it starts at zero, so a layer with it computes the states of one without it; the
    gradient reaches the map (ties share it); the fused steps leave it to the plain path."""
    torch.manual_seed(2)
    edge_index, flow, pos = _tensors(EDGES)
    plain = TypedGGNNConv(10, 3, position_pad=2)
    met = TypedGGNNConv(10, 3, position_pad=2, meet_flow=0, fused=True)
    missing = met.load_state_dict(plain.state_dict(), strict=False).missing_keys
    assert sorted(missing) == ["meet_linear.bias", "meet_linear.weight"]
    h = torch.randn(7, 10)
    assert torch.equal(met(h, edge_index, flow, pos, num_steps=3), plain(h, edge_index, flow, pos, num_steps=3))
    assert not met._can_fuse(h)
    with torch.no_grad():
        met.meet_linear.weight.copy_(torch.eye(10))
    edges = met.typed_edges(edge_index, flow, pos, 7)
    out = met.meet(h, edges)
    # control predecessors (flow 0): 1 -> 2; 2 -> 3 and the self-loop 3 -> 3; no other node has one
    torch.testing.assert_close(out[2], h[1])
    torch.testing.assert_close(out[3], torch.minimum(h[2], h[3]))
    assert out[[0, 1, 4, 5, 6]].abs().sum().item() == 0.0
    met.zero_grad()
    met(h, edge_index, flow, pos, num_steps=2).sum().backward()
    assert met.meet_linear.weight.grad.abs().sum().item() > 0
    with pytest.raises(ValueError, match="meet_flow"):
        TypedGGNNConv(10, 3, meet_flow=3)
