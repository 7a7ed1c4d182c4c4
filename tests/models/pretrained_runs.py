"""Run directories for the tests of pretrained models (programl.pretrained.hub, .export, the tasks' predictors;
programl predict).

* :func:`dataflow_run`: a real ``programl train dataflow`` run of a few seconds on a tiny DeepDataFlow data set
  (tests/data/_ddf.py): the files, options and numbers are the ones training writes.
* :func:`devmap_run`, :func:`classifyapp_run`: run directories laid out as ``programl train devmap|classifyapp``
  write them, with the options of the tasks' own parsers and untrained models built by the tasks' own constructors,
  saved through ``save_checkpoint``. Nothing is trained: their ``result.json`` numbers are fixtures (the tests check
  that the card copies them, not that they are good).

The tasks' modules are only used here, by the tests: the export reads run directories and nothing else.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def graph_of(path: Path):
    """The graph of an IR file (no compiler needed)."""
    from programl.graph_builder.llvm import graph_from_ir

    return graph_from_ir(path.read_text(), path=str(path))


def vocabulary_of(*graphs):
    from programl.data.vocabulary import Vocabulary

    return Vocabulary.from_counts(Counter(node.text for graph in graphs for node in graph.node))


def task_config(module, argv: list[str]) -> dict:
    """The ``model`` options a task writes to ``config.json`` for ``programl train <task> ARGV`` (through the task's
    options dataclass)."""
    from programl.tasks.options import TaskOptions

    parser = argparse.ArgumentParser()
    module.add_train_arguments(parser)
    (options,) = [
        v for v in vars(module).values() if isinstance(v, type) and issubclass(v, TaskOptions) and v is not TaskOptions
    ]
    return options.from_args(parser.parse_args(argv)).config()


def dataflow_run(tmp: Path, analysis: str = "reachability") -> Path:
    """A real run of ``programl train dataflow`` (one short epoch, tested at T=30) in ``tmp/run-<analysis>``, on the
    tiny data set ``tmp/ddf`` (built on first use)."""
    from programl.tasks.dataflow import train as dataflow
    from tests.data._ddf import tiny_dataset

    tiny_dataset(tmp)
    run = tmp / f"run-{analysis}"
    argv = [
        "train",
        "--analysis",
        analysis,
        "--dataset",
        str(tmp / "ddf"),
        "--run-dir",
        str(run),
        "--threads",
        "1",
        "--train-examples",
        "10",
        "--val-examples",
        "4",
        "--batch-nodes",
        "600",
        "--test-steps",
        "30",
        "-q",
    ]
    assert dataflow.main(argv) == 0
    return run


def _write(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


#: The validation accuracy of each fold of :func:`devmap_run`: fold 1 wins (a tie with fold 2 goes to the lower).
DEVMAP_VAL_ACCURACY = (0.5, 0.75, 0.75)
DEVMAP_TEST = {
    "accuracy": 0.625,
    "precision": 0.61,
    "recall": 0.625,
    "f1": 0.6,
    "f1_gpu": 0.5,
    "speedup_geomean": 1.25,
    "speedup_mean": 1.5,
    "oracle_speedup_geomean": 2.0,
    "oracle_speedup_mean": 2.5,
}


def devmap_run(tmp: Path, argv: tuple[str, ...] = ("--hidden", "8", "--steps", "2", "--layers", "1")) -> Path:
    """An AMD devmap run of 3 folds (untrained models, fixture scores; the vocabulary of examples/*.ll)."""
    import torch

    from programl.tasks.devmap import folds
    from programl.tasks.devmap import train as devmap
    from programl.training import save_checkpoint

    run = tmp / "devmap-run"
    config = task_config(devmap, [*argv, "--folds", "3"])
    _write(
        run / "config.json",
        {"task": "devmap", "model": config, "source_dir": "/fixture/devmap", "data_dir": "/fixture/data"},
    )
    vocabulary = vocabulary_of(graph_of(EXAMPLES / "dot_product.ll"))
    for fold, accuracy in enumerate(DEVMAP_VAL_ACCURACY):
        directory = run / "amd" / f"fold_{fold}"
        directory.mkdir(parents=True)
        vocabulary.save(directory / "vocab.csv")
        torch.manual_seed(fold)
        model = folds.network(config, len(vocabulary))
        save_checkpoint(
            directory / "best.pt",
            model=model,
            epoch=4,
            best_metric=accuracy,
            best_epoch=4,
            extra={"config": config, "fold": fold},
        )
        _write(
            directory / "result.json",
            {
                "fold": fold,
                "static_device": 0,
                "test": dict(DEVMAP_TEST),
                "rows": [0, 1],
                "predictions": [0, 1],
                "best_epoch": 4,
                "val_accuracy": accuracy,
                "epochs": 5,
            },
        )
        (directory / "log.jsonl").write_text(
            "".join(json.dumps({"epoch": e, "seconds": 1.5}) + "\n" for e in range(1, 6))
        )
    _write(
        run / "amd" / "report.json",
        {
            "platform": "amd",
            "folds": 3,
            "examples": 60,
            "mean": {"accuracy": 0.7, "f1": 0.65},
            "std": {"accuracy": 0.05, "f1": 0.04},
            "static_mapping_accuracy": 0.6,
        },
    )
    return run


CLASSIFYAPP_RESULT = {
    "checkpoint": "best",
    "checkpoint_epoch": 2,
    "best_epoch": 2,
    "best_val_accuracy": 0.8125,
    "test": {"error": 0.25, "accuracy": 0.75, "loss": 1.5, "count": 48, "per_class_accuracy": [0.75] * 104},
    "train_seconds": 36.0,
    "world_size": 2,
    "device": "cpu",
}


def classifyapp_run(tmp: Path, argv: tuple[str, ...] = ("--hidden", "8", "--layer-timesteps", "1", "1")) -> Path:
    """A classifyapp run (untrained model, fixture scores; the vocabulary of examples/dot_product.ll)."""
    import torch

    from programl.tasks.classifyapp import train as classifyapp
    from programl.training import save_checkpoint

    run = tmp / "classifyapp-run"
    config = task_config(classifyapp, list(argv))
    _write(
        run / "config.json",
        {
            "task": "classifyapp",
            "model": config,
            "data_dir": "/fixture/poj104",
            "scope": {"graphs": {"train": 30, "val": 9, "test": 48}},
        },
    )
    vocabulary = vocabulary_of(graph_of(EXAMPLES / "dot_product.ll"))
    vocabulary.save(run / "vocab.csv")
    torch.manual_seed(0)
    model = classifyapp._make_model(config, len(vocabulary))
    save_checkpoint(run / "best.pt", model=model, epoch=2, best_metric=0.8125, best_epoch=2, extra={"config": config})
    _write(run / "result.json", CLASSIFYAPP_RESULT)
    return run
