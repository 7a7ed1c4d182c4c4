"""``programl train toy``: a few epochs of a tiny graph classifier on the ``--inputs`` programs, labelled small or
large by their instruction count; the run directory holds what ``programl export-pretrained`` reads."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from programl.exceptions import UsageError
from tests.tasks.toy_task.predict import instructions
from tests.tasks.toy_task.spec import ToyOptions, ToyRunOptions, ToySpec


def train_main(args) -> int:
    import torch

    from programl.data.vocabulary import Vocabulary
    from programl.graph_builder.llvm import graph_from_ir
    from programl.io.pyg import to_pyg
    from programl.models.build import build_model
    from programl.training import save_checkpoint

    options, run = ToyOptions.from_args(args), ToyRunOptions.from_args(args)
    torch.manual_seed(run.seed)
    graphs = [graph_from_ir(Path(path).read_text(), path=path) for path in run.inputs]
    vocabulary = Vocabulary.from_counts(Counter(node.text for graph in graphs for node in graph.node))
    labels = torch.tensor([int(instructions(graph) > options.threshold) for graph in graphs])
    model = build_model(ToySpec().model_spec(options.config(), len(vocabulary)))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    data = [to_pyg(graph, vocabulary) for graph in graphs]
    start = time.monotonic()
    for _ in range(run.epochs):
        for example, label in zip(data, labels):
            optimizer.zero_grad()
            model.loss(model(example), label.view(1)).backward()
            optimizer.step()
    seconds = time.monotonic() - start
    model.eval()
    with torch.no_grad():
        accuracy = sum(int(model(x).logits.argmax()) == int(y) for x, y in zip(data, labels)) / len(data)
    directory = Path(run.run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    config = {"task": ToySpec.name, "model": options.config(), "scope": {"programs": len(graphs)}}
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    vocabulary.save(directory / "vocab.csv")
    save_checkpoint(directory / "best.pt", model=model, epoch=run.epochs, best_metric=accuracy, best_epoch=run.epochs)
    result = {
        "best_val_accuracy": accuracy,
        "test": {"accuracy": accuracy, "count": len(graphs)},
        "train_seconds": seconds,
        "world_size": 1,
        "device": "cpu",
    }
    (directory / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


def evaluate_main(args) -> int:
    raise UsageError("the toy task has no evaluation: its training scores its programs")
