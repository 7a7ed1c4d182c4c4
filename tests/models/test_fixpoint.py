"""Tests of programl.models.fixpoint: DataflowFixpoint (docs/spec/models.md#fixpoint-model).

With its gates set by hand, the model's hard iteration is the analysis: these tests pin that the form can express
reachability, dominance and datadep exactly (labels and the analysis's synchronous rounds, on real graphs), that
it stops within N + 1 steps whatever its weights, and that training gets a gradient to every gate.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch  # noqa: E402

import programl  # noqa: E402
from programl.dataflow import analyze  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from programl.io.pyg import to_pyg_examples  # noqa: E402
from programl.models import DataflowFixpoint  # noqa: E402
from programl.models.build import build_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from dataflow_sizes import synchronous_rounds  # noqa: E402

#: (meet, edge kind that carries the fact, whether only instructions are labelled) of each analysis.
BY_HAND = {
    "reachability": ("any", 0, False),  # control, forward
    "dominance": ("all", 0, False),  # control predecessors, all of them
    "datadep": ("any", 4, True),  # data, reversed
}


def hand_set(analysis: str, vocabulary_size: int = 8) -> DataflowFixpoint:
    """The model with gates that compute ``analysis`` exactly: only the root generates, every node passes, the
    analysis's edge kind alone is open, and the labelled node types are out."""
    meet, kind, instructions_only = BY_HAND[analysis]
    model = DataflowFixpoint(vocabulary_size, meet=meet)
    with torch.no_grad():
        for gate in (model.gen, model.passes, model.out):
            for p in gate.parameters():
                p.zero_()
        model.gen.net[2].bias.fill_(-10.0)
        model.passes.net[2].bias.fill_(10.0)
        model.out.net[2].bias.fill_(10.0)
        if instructions_only:  # out = node type 0: a hidden unit that reads the instruction one-hot
            width = model.embedding.embedding_dim
            model.out.net[0].weight[0, width] = 1.0
            model.out.net[2].weight[0, 0] = 20.0
            model.out.net[2].bias.fill_(-10.0)
        model.edge_gate.fill_(-10.0)
        model.edge_gate[kind] = 10.0
    return model.eval()


def examples(path: str, analysis: str):
    text = (ROOT / path).read_text()
    if path.endswith(".ll"):
        graph = programl.from_llvm_ir(text)
    else:
        graph = programl.from_cpp(text) if path.endswith(".cc") else programl.from_clang([str(ROOT / path), "-O0"])
    labels = analyze(graph, analysis, max_roots=None if analysis != "dominance" else 12, seed=0)
    return graph, list(to_pyg_examples(graph, labels))


@pytest.mark.parametrize("analysis", sorted(BY_HAND))
@pytest.mark.parametrize("path", ["examples/dot_product.ll", "examples/quicksort.cc"])
def test_hand_set_gates_compute_the_analysis_and_its_rounds(analysis: str, path: str, request) -> None:
    if path.endswith(".cc"):
        request.getfixturevalue("clang22")  # skips without clang-22
    graph, data = examples(path, analysis)
    model = hand_set(analysis)
    for d in data:
        d.x = torch.zeros_like(d.x)  # the text does not matter to these gates
    batch = Batch.from_data_list(data)
    logits, steps = model.forward_until_stable(batch)
    predicted = (logits.argmax(-1) == 1).numpy()
    assert np.array_equal(predicted, batch.y.numpy().astype(bool))
    labels, steps_again, rounds = model.fixpoint(batch)
    assert torch.equal(steps, steps_again) and bool((rounds == steps - 1).all())
    for row, d in enumerate(data):  # one step per synchronous round of the analysis, the confirming one included
        own, _ = synchronous_rounds(graph, analysis, int(d.root.argmax()))
        assert int(steps[row]) == own


def hand_set_subexpressions(vocabulary_size: int) -> DataflowFixpoint:
    """Subexpressions by hand: a variable or constant takes the fact from a user that holds it (any, over reversed
    data edges), an instruction of the root's text takes it when all its operands hold it (all, over data edges);
    only instructions are labelled."""
    model = DataflowFixpoint(vocabulary_size, meet="mixed", gate_by_type=True, root_text=True)
    width = model.embedding.embedding_dim
    instruction, same_text = width, width + 5  # the features' columns: embedding, 4 node types, root flag, same text
    with torch.no_grad():
        for gate in (model.gen, model.passes, model.out):
            for p in gate.parameters():
                p.zero_()
        model.gen.net[2].bias.fill_(-10.0)
        # pass: not an instruction, or an instruction of the root's text: 20 * (1 - instruction + same_text) - 10
        model.passes.net[0].weight[0, instruction] = -1.0
        model.passes.net[0].weight[0, same_text] = 1.0
        model.passes.net[0].bias[0] = 1.0
        model.passes.net[2].weight[0, 0] = 20.0
        model.passes.net[2].bias.fill_(-10.0)
        # out reads the instruction column
        model.out.net[0].weight[0, instruction] = 1.0
        model.out.net[2].weight[0, 0] = 20.0
        model.out.net[2].bias.fill_(-10.0)
        model.edge_gate.fill_(-10.0)
        model.edge_gate[1, 0] = 10.0  # data edges into instructions: their operands
        model.edge_gate[4, 1:] = 10.0  # reversed data edges into variables and constants: from their users
    return model.eval()


@pytest.mark.parametrize("path", ["examples/quicksort.cc", "examples/fizzbuzz.c"])
def test_hand_set_gates_find_the_roots_subexpressions_in_two_rounds(path: str, request) -> None:
    if path.endswith(".cc"):
        request.getfixturevalue("clang22")
    graph, data = examples(path, "subexpressions")
    vocabulary = {text: i for i, text in enumerate(sorted({node.text for node in graph.node}))}
    for d in data:
        d.x = torch.tensor([vocabulary[node.text] for node in graph.node])
    batch = Batch.from_data_list(data)
    model = hand_set_subexpressions(len(vocabulary))
    labels, steps, rounds = model.fixpoint(batch)
    truth = batch.y.bool()
    # every member of the root's group is found; an instruction of the root's opcode whose operands are some of the
    # root's (in another order, or repeated) would be found too: none is in these programs
    assert torch.equal(labels, truth)
    assert bool((rounds <= 2).all()) and bool((steps <= 3).all())


def test_it_stops_within_n_plus_one_steps_whatever_its_weights() -> None:
    graph, data = examples("examples/dot_product.ll", "reachability")
    batch = Batch.from_data_list(data)
    for seed in range(5):
        torch.manual_seed(seed)
        for meet, by_type in (("any", False), ("all", False), ("mixed", True)):
            model = DataflowFixpoint(8, meet=meet, gate_by_type=by_type, root_text=by_type)
            with torch.no_grad():
                model.edge_gate.normal_(0, 3)
                for p in model.parameters():
                    p.add_(torch.randn_like(p))
            labels, steps, rounds = model.fixpoint(batch)
            assert labels.shape == (batch.num_nodes,)
            assert bool((steps >= 1).all()) and int(steps.max()) <= len(graph.node) + 1
            assert bool((rounds < steps).all())


def test_training_reaches_every_gate() -> None:
    _, data = examples("examples/dot_product.ll", "reachability")
    batch = Batch.from_data_list(data)
    model = DataflowFixpoint(8, meet="all")
    loss = model.loss(model(batch, num_steps=6), batch.y)
    loss.backward()
    assert torch.isfinite(loss)
    assert model.edge_gate.grad is not None and bool((model.edge_gate.grad != 0).any())
    for gate in (model.gen, model.passes, model.out):
        assert any(p.grad is not None and bool((p.grad != 0).any()) for p in gate.parameters())


def test_the_loss_weighs_the_two_classes_alike() -> None:
    model = DataflowFixpoint(4)
    y = torch.tensor([1, 0, 0, 0])
    logits = torch.tensor([[0.0, -2.0], [0.0, -2.0], [0.0, -2.0], [0.0, -2.0]])
    each = torch.nn.functional.cross_entropy(logits, y, reduction="none")
    assert torch.isclose(model.loss(logits, y), each[0] + each[1:].mean())


def test_a_description_builds_it_and_refuses_an_unknown_meet() -> None:
    model = build_model({"class": "DataflowFixpoint", "args": [10], "kwargs": {"meet": "all"}})
    assert isinstance(model, DataflowFixpoint) and model.meet == "all"
    with pytest.raises(ProgramlError, match="meet must be one of any, all, mixed"):
        build_model({"class": "DataflowFixpoint", "args": [10], "kwargs": {"meet": "some"}})


def test_a_graph_the_analysis_gives_up_on_is_still_predicted(monkeypatch) -> None:
    """The roots are chosen as the analysis would choose them, without running it: the reference's limits (here
    lowered to one step) stop the analysis, not the model."""
    import programl.dataflow.dominance as dominance
    from programl.dataflow import analyze_arrays
    from programl.exceptions import AnalysisError
    from programl.pretrained import pretrained

    graph = programl.from_llvm_ir((ROOT / "examples" / "dot_product.ll").read_text())
    expected = analyze_arrays(graph, "dominance", seed=0)
    monkeypatch.setattr(dominance, "MAX_STEPS", 1)
    with pytest.raises(AnalysisError, match="not found in 1 steps"):
        analyze(graph, "dominance", seed=0)
    prediction = pretrained("dominance-fixpoint").predict(graph)
    assert prediction.roots.tolist() == expected.roots.tolist()
    assert np.array_equal(prediction.predicted, expected.labels.astype(bool))
    with pytest.raises(AnalysisError, match="not found in 1 steps"):
        pretrained("dominance-fixpoint").predict(graph, compare=True)
