"""Tests of programl.models.dataflow: DataflowGGNN (SPEC §6.1) and its RGCN alternative."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch  # noqa: E402

from programl.data.vocabulary import build_vocabulary  # noqa: E402
from programl.io.pyg import to_pyg_examples  # noqa: E402
from programl.models import DataflowGGNN, DataflowRGCN, MetricsAccumulator  # noqa: E402


def count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_parameter_count_of_the_paper():
    model = DataflowGGNN(vocabulary_size=2230)
    assert count(model) == 87_070
    # SPEC §6.1 breakdown
    assert count(model.embedding) == 2231 * 32 == 71_392
    assert count(model.conv.message_linear) == 34 * 204 + 204 == 7_140
    assert count(model.conv.position_linear) == 34 * 34 + 34 == 1_190
    assert count(model.conv.grus) == 7_140
    assert count(model.readout.gate) == 138 and count(model.readout.transform) == 70
    assert len(model.conv.grus) == 1 and model.conv.num_types == 6 and model.channels == 34


def test_cdfg_variant_has_no_position_parameters():
    assert count(DataflowGGNN(vocabulary_size=2230, use_positions=False)) == 87_070 - 1_190


def test_selector_is_fixed_and_embedding_is_standard_normal():
    torch.manual_seed(0)
    model = DataflowGGNN(vocabulary_size=20_000)
    assert model.selector_table.tolist() == [[50.0, 0.0], [0.0, 50.0]]
    assert not any("selector" in n for n, _ in model.named_parameters())
    w = model.embedding.weight
    assert w.shape == (20_001, 32)
    assert abs(w.mean().item()) < 0.01 and abs(w.std().item() - 1) < 0.01
    h0 = model.embed(torch.tensor([0, 20_000]), torch.tensor([0, 1]))
    assert h0.shape == (2, 34)
    assert h0[0, 32:].tolist() == [50.0, 0.0] and h0[1, 32:].tolist() == [0.0, 50.0]
    torch.testing.assert_close(h0[1, :32], w[20_000])  # the OOV row


def examples_batch(reachability_examples):
    graphs, records = reachability_examples
    vocab = build_vocabulary(graphs)
    data = [d for g, r in zip(graphs, records, strict=True) for d in to_pyg_examples(g, r, vocab)]
    return vocab, Batch.from_data_list(data)


def test_forward_shapes_and_steps(reachability_examples):
    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    model = DataflowGGNN(len(vocab))
    logits = model(batch)
    assert logits.shape == (batch.num_nodes, 2)
    # T is changeable at inference with the same weights (DDF-60, DDF at T=200)
    model.eval()
    with torch.no_grad():
        out60 = model(batch, num_steps=60)
        out200 = model(batch, num_steps=200)
        out0 = model(batch, num_steps=0)
    assert out60.shape == out200.shape == logits.shape
    assert not torch.allclose(out60, logits)
    h0 = model.embed(batch.x, batch.root)
    torch.testing.assert_close(out0, model.readout(h0, h0))


def test_deterministic_given_seed(reachability_examples):
    vocab, batch = examples_batch(reachability_examples)

    def run():
        torch.manual_seed(7)
        model = DataflowGGNN(len(vocab))
        opt = torch.optim.AdamW(model.parameters(), lr=2.5e-4)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = model.loss(model(batch), batch.y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, model(batch)

    (a, out_a), (b, out_b) = run(), run()
    assert a == b
    assert torch.equal(out_a, out_b)


def overfit(model, batch, lr, max_steps):
    torch.manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for step in range(1, max_steps + 1):
        opt.zero_grad()
        logits = model(batch)
        loss = model.loss(logits, batch.y)
        loss.backward()
        opt.step()
        if (logits.argmax(-1) == batch.y).all():
            return step, loss.item()
    metrics = MetricsAccumulator()
    metrics.update(logits, batch.y)
    pytest.fail(f"no 100% accuracy after {max_steps} steps: {metrics.compute()}")


def test_dataflow_ggnn_overfits_reachability(reachability_examples):
    """One batch of 12 reachability examples (BFS labels, SPEC §4.2) is learned perfectly in a bounded budget."""
    vocab, batch = examples_batch(reachability_examples)
    assert 0.2 < batch.y.float().mean().item() < 0.8  # both classes are well represented
    torch.manual_seed(0)
    model = DataflowGGNN(len(vocab))
    _, loss = overfit(model, batch, lr=3e-3, max_steps=250)
    assert loss < 0.2
    model.eval()
    with torch.no_grad():
        assert (model(batch).argmax(-1) == batch.y).all()


def test_rgcn_is_a_drop_in_and_overfits(reachability_examples):
    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    model = DataflowRGCN(len(vocab))
    assert model(batch).shape == (batch.num_nodes, 2)
    assert count(model.embedding) == count(DataflowGGNN(len(vocab)).embedding)
    overfit(model, batch, lr=1e-2, max_steps=250)


def test_class_weight():
    model = DataflowGGNN(5, class_weight=(0.25, 0.75))
    logits = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]])
    y = torch.tensor([1, 1, 0])
    expected = torch.nn.functional.cross_entropy(logits, y, weight=torch.tensor([0.25, 0.75]))
    torch.testing.assert_close(model.loss(logits, y), expected)
    torch.testing.assert_close(DataflowGGNN(5).loss(logits, y), torch.nn.functional.cross_entropy(logits, y))


def test_rejects_type_edges(reachability_examples):
    vocab, batch = examples_batch(reachability_examples)
    batch.edge_flow[0] = 3  # a TYPE edge of the development branch
    with pytest.raises(ValueError, match="flows"):
        DataflowGGNN(len(vocab))(batch)
    with pytest.raises(ValueError, match="flows"):
        DataflowRGCN(len(vocab))(batch)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_gpu_forward_and_backward_match_the_cpu(reachability_examples):
    """The typed GGNN gives the CPU's logits and gradients on a GPU (float32 tolerances)."""
    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    cpu_model = DataflowGGNN(len(vocab))
    gpu_model = DataflowGGNN(len(vocab)).cuda()
    gpu_model.load_state_dict(cpu_model.state_dict())
    cpu_logits = cpu_model(batch)
    gpu_batch = batch.clone().to("cuda")  # Data.to moves in place
    gpu_logits = gpu_model(gpu_batch)
    torch.testing.assert_close(gpu_logits.cpu(), cpu_logits, rtol=1e-4, atol=1e-4)
    cpu_model.loss(cpu_logits, batch.y).backward()
    gpu_model.loss(gpu_logits, gpu_batch.y).backward()
    for (name, p_cpu), p_gpu in zip(cpu_model.named_parameters(), gpu_model.parameters()):
        torch.testing.assert_close(p_gpu.grad.cpu(), p_cpu.grad, rtol=1e-3, atol=1e-4, msg=name)


# --- the root-context variant (not in the paper) -------------------------------------------------------------------


def test_root_context_starts_as_the_faithful_model(reachability_examples, tmp_path):
    """Its extra readout term is zero at initialisation: a faithful checkpoint loaded into the variant (the
    ``init_from_missing_ok`` parameters left as they are) gives the same logits; the other way round is refused."""
    from programl.exceptions import ProgramlError
    from programl.training import load_checkpoint, save_checkpoint

    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    faithful = DataflowGGNN(len(vocab))
    save_checkpoint(tmp_path / "faithful.pt", model=faithful, epoch=1)
    torch.manual_seed(1)
    variant = DataflowGGNN(len(vocab), root_context=True)
    assert count(variant) - count(faithful) == count(variant.root_context) == 5 * 34 * 64 + 64 + 64 * 2 + 2
    load_checkpoint(tmp_path / "faithful.pt", model=variant, missing_ok=variant.init_from_missing_ok)
    variant.eval(), faithful.eval()
    with torch.no_grad():
        torch.testing.assert_close(variant(batch), faithful(batch), rtol=0, atol=0)
    save_checkpoint(tmp_path / "variant.pt", model=variant, epoch=1)
    with pytest.raises(ProgramlError, match="a checkpoint of another model"):
        load_checkpoint(tmp_path / "variant.pt", model=DataflowGGNN(len(vocab)), missing_ok=("root_context.",))
    with pytest.raises(ProgramlError, match="a checkpoint of another model"):  # other prefixes stay strict
        load_checkpoint(tmp_path / "faithful.pt", model=DataflowGGNN(len(vocab) + 1), missing_ok=("root_context.",))


def test_root_context_reads_each_graphs_own_root(reachability_examples):
    """In a batch, a node's extra term depends on its own graph's root and on no other graph's."""
    from programl.models import RootContextReadout

    torch.manual_seed(0)
    head = RootContextReadout(4, 2)
    torch.nn.init.normal_(head.out.weight)
    h0, hT = torch.randn(7, 4), torch.randn(7, 4)
    batch = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    root = torch.tensor([0, 1, 0, 0, 0, 1, 0])
    out = head(h0, hT, root, batch)
    moved = head(h0, hT, torch.tensor([1, 0, 0, 0, 0, 1, 0]), batch)  # graph 0's root moves
    assert not torch.allclose(out[:3], moved[:3]) and torch.equal(out[3:], moved[3:])
    alone = head(h0[3:], hT[3:], root[3:], None)  # one graph without a batch vector: the same as in the batch
    torch.testing.assert_close(alone, out[3:])
    r0 = h0[1].expand(3, 4)  # by the formula, for graph 0
    expected = head.out(torch.relu(head.hidden(torch.cat([h0[:3], r0, h0[:3] * r0, hT[:3], hT[1].expand(3, 4)], -1))))
    torch.testing.assert_close(out[:3], expected)


def test_root_context_overfits_reachability(reachability_examples):
    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    model = DataflowGGNN(len(vocab), root_context=True)
    _, loss = overfit(model, batch, lr=3e-3, max_steps=250)
    assert loss < 0.2


# --- the control-flood variant (not in the paper; issue 36 item 3) --------------------------------------------------


def test_control_floods_are_the_reachability_labels_forward_backward_and_without_back_edges(reachability_examples):
    """``after`` is what the reachability analysis labels from the root (SPEC §4.2), in a batch each graph flooded
    from its own root; ``before`` is reachability on the reversed control flow; the acyclic two are the same on the
    control flow without its back edges, which leaves no cycle (checked against networkx)."""
    import networkx as nx

    from programl.models.control_floods import back_edges, control_floods

    graphs, records = reachability_examples
    vocab = build_vocabulary(graphs)
    data = [d for g, r in zip(graphs, records, strict=True) for d in to_pyg_examples(g, r, vocab)]
    batch = Batch.from_data_list(data)
    floods = control_floods(batch.edge_index, batch.edge_flow, batch.root)
    assert floods.shape == (batch.num_nodes, 4)
    assert torch.equal(floods[:, 0].long(), batch.y)  # the reachability labels, every graph of the batch at once
    cycles = 0
    for example in data:
        control = (example.edge_flow == 0).numpy()
        sources, targets = example.edge_index.numpy()[:, control]
        back = back_edges(sources, targets, example.num_nodes)
        cycles += int(back.sum())
        full = nx.DiGraph(list(zip(sources.tolist(), targets.tolist())))
        dag = nx.DiGraph(list(zip(sources[~back].tolist(), targets[~back].tolist())))
        full.add_nodes_from(range(example.num_nodes)), dag.add_nodes_from(range(example.num_nodes))
        assert nx.is_directed_acyclic_graph(dag)
        root = int(example.root.argmax())
        expected = [
            nx.descendants(full, root),
            nx.ancestors(full, root),
            nx.descendants(dag, root),
            nx.ancestors(dag, root),
        ]
        got = control_floods(example.edge_index, example.edge_flow, example.root)
        for column, nodes in enumerate(expected):
            assert set(got[:, column].nonzero().flatten().tolist()) == nodes | {root}, column
    assert cycles > 0  # the random graphs have loops


def test_control_floods_variant_starts_as_the_faithful_model(reachability_examples, tmp_path):
    """Its flood vectors are zero at first: a faithful checkpoint gives the same logits; floods a caller hands in
    (``data.control_floods``) are read instead of the exact ones."""
    from programl.training import load_checkpoint, save_checkpoint

    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    faithful = DataflowGGNN(len(vocab)).eval()
    save_checkpoint(tmp_path / "faithful.pt", model=faithful, epoch=1)
    variant = DataflowGGNN(len(vocab), control_floods=True).eval()
    assert count(variant) - count(faithful) == 4 * 32
    load_checkpoint(tmp_path / "faithful.pt", model=variant, missing_ok=variant.init_from_missing_ok)
    with torch.no_grad():
        torch.testing.assert_close(variant(batch), faithful(batch), rtol=0, atol=0)
        variant.flood_embedding.normal_()
        exact = variant(batch)
        assert not torch.allclose(exact, faithful(batch))
        batch.control_floods = torch.zeros(batch.num_nodes, 4)
        torch.testing.assert_close(variant(batch), faithful(batch), rtol=0, atol=0)  # the caller's floods
        del batch.control_floods
        logits, _ = variant.forward_until_stable(batch, min_steps=30, max_steps=30)
        torch.testing.assert_close(logits, exact)


def test_control_floods_variant_learns_liveness():
    """With the floods the GGNN fits a liveness batch (the variant's gradient reaches the flood vectors)."""
    import numpy as np

    from programl.dataflow import analyze
    from tests.models.random_graphs import random_program_graph

    rng = np.random.default_rng(7)
    graphs = [random_program_graph(rng, num_blocks=int(rng.integers(3, 6))) for _ in range(6)]
    vocab = build_vocabulary(graphs)
    data = [d for g in graphs for d in to_pyg_examples(g, analyze(g, "liveness", max_roots=2, seed=0), vocab)]
    batch = Batch.from_data_list(data)
    assert 0 < int(batch.y.sum()) < batch.num_nodes
    torch.manual_seed(0)
    model = DataflowGGNN(len(vocab), control_floods=True, num_steps=8)
    _, loss = overfit(model, batch, lr=3e-3, max_steps=250)
    assert loss < 0.2
    assert model.flood_embedding.abs().sum() > 0


def test_until_stable_is_forward_when_the_step_range_is_one_value(reachability_examples):
    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    model = DataflowGGNN(len(vocab)).eval()
    with torch.no_grad():
        expected = model(batch, num_steps=12)
    logits, steps = model.forward_until_stable(batch, min_steps=12, max_steps=12)
    assert torch.equal(logits, expected) and steps.tolist() == [12] * batch.num_graphs


def test_until_stable_halts_each_graph_on_its_own(reachability_examples):
    """Every graph takes between min and max steps, halts as it would alone (the batch does not change its count
    or its logits), and stops only after its predictions held for ``patience`` steps."""
    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    model = DataflowGGNN(len(vocab)).eval()
    logits, steps = model.forward_until_stable(batch, min_steps=2, max_steps=40, patience=2)
    assert steps.shape == (batch.num_graphs,) and bool(((steps >= 2) & (steps <= 40)).all())
    for g, example in enumerate(batch.to_data_list()):
        alone = Batch.from_data_list([example])
        own_logits, own_steps = model.forward_until_stable(alone, min_steps=2, max_steps=40, patience=2)
        assert int(own_steps) == int(steps[g])
        torch.testing.assert_close(own_logits, logits[batch.batch == g])
        if int(own_steps) < 40:  # halted: the same predictions at its step count and `patience` steps before
            with torch.no_grad():
                before = model(alone, num_steps=int(own_steps) - 2).argmax(-1)
            assert torch.equal(before, own_logits.argmax(-1))
    with pytest.raises(ValueError, match="min_steps"):
        model.forward_until_stable(batch, min_steps=5, max_steps=4)


def test_until_stable_at_several_patiences_is_each_patience_alone(reachability_examples):
    """One pass at patiences 1, 2 and 4 gives each patience's own logits and steps (graphs halted at a small
    patience keep the logits they halted with while the others run on)."""
    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(0)
    model = DataflowGGNN(len(vocab)).eval()
    each = model.forward_until_stable_each(batch, min_steps=2, max_steps=40, patiences=(4, 1, 2))
    assert sorted(each) == [1, 2, 4]
    for patience, (logits, steps) in each.items():
        alone_logits, alone_steps = model.forward_until_stable_each(
            batch, min_steps=2, max_steps=40, patiences=(patience,)
        )[patience]
        assert torch.equal(steps, alone_steps)
        torch.testing.assert_close(logits, alone_logits)
    assert bool((each[1][1] <= each[2][1]).all() and (each[2][1] <= each[4][1]).all())
    assert not torch.equal(each[1][1], each[4][1])  # the patiences halt the graphs at different steps


def test_a_latched_node_once_true_stays_true(reachability_examples):
    """``latch=True``: each node's prediction after ``min_steps`` is true when it was true at any step since (the
    most confident true step's logits are kept), where the plain run takes a prediction back; with a patience no
    graph reaches, every graph runs to ``max_steps``."""
    vocab, batch = examples_batch(reachability_examples)
    torch.manual_seed(5)  # an untrained model whose predictions come and go over these steps
    model = DataflowGGNN(len(vocab)).eval()
    latched, steps = model.forward_until_stable(batch, min_steps=3, max_steps=14, patience=100, latch=True)
    plain, _ = model.forward_until_stable(batch, min_steps=3, max_steps=14, patience=100)
    assert steps.tolist() == [14] * batch.num_graphs
    with torch.no_grad():
        each = torch.stack([model(batch, num_steps=t).argmax(-1) == 1 for t in range(3, 15)])
        torch.testing.assert_close(plain, model(batch, num_steps=14))
    assert torch.equal(latched.argmax(-1) == 1, each.any(0))
    assert bool((each.any(0) & ~each[-1]).any())  # this untrained model does take predictions back
    margins = latched[:, 1] - latched[:, 0]
    with torch.no_grad():
        best = torch.stack([(lambda o: o[:, 1] - o[:, 0])(model(batch, num_steps=t)) for t in range(3, 15)]).max(0)
    torch.testing.assert_close(margins, best.values)
