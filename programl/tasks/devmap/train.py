"""OpenCL device mapping: a GGNN with auxiliary inputs, cross-validated per platform (SPEC §6.5, §7.3).

For each platform (AMD Tahiti 7970, NVIDIA GTX 970) the 680 kernels-with-inputs of :mod:`programl.data.devmap` are
split into 10 stratified folds (seeded); fold k is tested by a model trained on 8 folds, whose epoch is chosen on
the remaining validation fold (highest validation accuracy, ties to the lower validation loss, then the earlier
epoch). The test folds are only touched once per fold, by the chosen model. ``--average-last N`` (not in the paper)
tests by the mean class probabilities of the fold's last N epochs' models instead: no epoch is chosen, which on 68
validation kernels is the noisiest step of the protocol (``docs/results.md`` §6).

Model (:class:`~programl.models.GGNNGraphClassifier` with the auxiliary readout): a trainable embedding of the node
text (vocabulary built from the fold's training graphs), typed GGNN steps over control/data/call edges and their
reversals (the paper's schedule: 6 steps, even and odd steps sharing parameters), the gated node readout summed per
graph, then ``[graph logits; log1p(transfer), log1p(wgsize)]`` -> BatchNorm -> Linear(32) -> ReLU -> dropout ->
Linear(2); loss CE(final) + 0.2 CE(graph logits); Adam; batches of at most ``--batch-nodes`` nodes.

Reported per platform, as in the papers: accuracy and precision / recall / F1 (weighted over the two classes, as the
published tables; also F1 of the GPU class), and the speedup over the static mapping (the device that is fastest for
most training kernels: CPU on AMD, GPU on NVIDIA), computed from the measured runtimes as the geometric and the
arithmetic mean over the test kernels of ``runtime(static device) / runtime(predicted device)``; the oracle's speedup
is the upper bound. Means and standard deviations are over the 10 folds; the confusion matrix pools the folds.

Run directory (``--run-dir``)::

    config.json                         the options of the run (``programl evaluate devmap`` reads them)
    summary.json, summary.md            per platform: fold means and spreads, beside the published numbers
    <platform>/fold_<k>/log.jsonl|csv   per-epoch train / validation loss and metrics
    <platform>/fold_<k>/curves.png      learning curves (dashed line: the chosen epoch)
    <platform>/fold_<k>/vocab.csv       the fold's vocabulary
    <platform>/fold_<k>/last.pt         resumption checkpoint; best.pt: the chosen epoch's model
    <platform>/fold_<k>/epoch_<NNN>.pt  with --average-last N: the models of the last N epochs
    <platform>/fold_<k>/result.json     the fold's test metrics (a finished fold is skipped on resumption)
    <platform>/predictions.csv          every test prediction with its runtimes
    <platform>/report.json, confusion.png
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.metrics import f1_score, precision_recall_fscore_support

from programl.data.batching import NodeBudgetBatchSampler
from programl.data.devmap import (
    PLATFORM_NAMES,
    build_devmap,
    cross_validation_splits,
    fetch_sources,
    load_devmap,
    read_platform_csv,
)
from programl.data.vocabulary import Vocabulary
from programl.exceptions import ProgramlError
from programl.io.pyg import to_pyg
from programl.models.build import build_model
from programl.tasks.devmap.spec import (
    NETWORK_OPTIONS,
    DevmapOptions,
    DevmapSpec,
    add_evaluate_arguments,
    add_train_arguments,
)
from programl.tasks.entry import run_task_module
from programl.tasks.options import SCHEDULE_DEFAULTS
from programl.tasks.run_options import check_options
from programl.training import (
    Budget,
    Distributed,
    RunLock,
    Schedule,
    Trainer,
    TrainingTask,
    UsageError,
    check_same_run,
    configure_logging,
    configure_threads,
    load_checkpoint,
    plot_confusion_matrix,
    progress,
    read_run_config,
    resolve_device,
    shared_data,
    write_json,
)
from programl.training.engine import epoch_path, evaluate
from programl.training.loader import make_loader
from programl.util.fs import atomic_write_text

__all__ = [
    "add_evaluate_arguments",
    "add_train_arguments",
    "PUBLISHED",
    "DevmapOptions",
    "devmap_metrics",
    "evaluate_main",
    "train_main",
]

logger = logging.getLogger(__name__)

#: arXiv table (SPEC §7.3): accuracy %, precision, recall, F1 per platform.
PUBLISHED = {
    "Static mapping": {"amd": (58.8, 0.35, 0.59, 0.44), "nvidia": (56.9, 0.32, 0.57, 0.41)},
    "DeepTune": {"amd": (71.9, 0.72, 0.72, 0.72), "nvidia": (61.0, 0.69, 0.61, 0.65)},
    "NCC (inst2vec)": {"amd": (80.3, 0.81, 0.80, 0.80), "nvidia": (78.5, 0.79, 0.79, 0.79)},
    "ProGraML": {"amd": (86.6, 0.89, 0.87, 0.88), "nvidia": (80.0, 0.81, 0.80, 0.80)},
}


# ---------------------------------------------------------------------------------------------------------------
# Metrics


def devmap_metrics(
    labels: np.ndarray, predictions: np.ndarray, runtimes: np.ndarray, static_device: int
) -> dict[str, float]:
    """Accuracy, weighted and GPU-class precision / recall / F1, and speedups over the static mapping.

    Args:
        labels: (N,) 0 = CPU faster, 1 = GPU faster.
        predictions: (N,) predicted devices.
        runtimes: (N, 2) runtimes on CPU and GPU.
        static_device: The device of the static mapping.

    Returns:
        ``accuracy``, ``precision``, ``recall``, ``f1`` (weighted by class support, sklearn's
        ``average="weighted"``, as the published tables), ``f1_gpu`` (binary, GPU positive), ``speedup_geomean``,
        ``speedup_mean`` (over the static mapping) and ``oracle_speedup_geomean``, ``oracle_speedup_mean``.
    """

    labels = np.asarray(labels, dtype=np.int64)
    predictions = np.asarray(predictions, dtype=np.int64)
    runtimes = np.asarray(runtimes, dtype=np.float64)
    precision, recall, f1, _ = precision_recall_fscore_support(
        labels, predictions, average="weighted", labels=[0, 1], zero_division=0
    )
    rows = np.arange(len(labels))
    static = runtimes[:, static_device]
    speedup = static / runtimes[rows, predictions]
    oracle = static / runtimes.min(axis=1)
    return {
        "accuracy": float(np.mean(labels == predictions)),
        "precision": float(precision),
        "recall": float(recall),
        "f1": float(f1),
        "f1_gpu": float(f1_score(labels, predictions, pos_label=1, zero_division=0)),
        "speedup_geomean": float(np.exp(np.mean(np.log(speedup)))),
        "speedup_mean": float(np.mean(speedup)),
        "oracle_speedup_geomean": float(np.exp(np.mean(np.log(oracle)))),
        "oracle_speedup_mean": float(np.mean(oracle)),
    }


# ---------------------------------------------------------------------------------------------------------------
# Data


def _source_dir(args: argparse.Namespace) -> Path:

    data_dir = Path(os.path.expanduser(args.data_dir))
    if args.source_dir:
        directory = Path(args.source_dir)
    elif getattr(args, "download", False):
        directory = data_dir / "download"
        fetch_sources(directory)
    else:
        directory = shared_data("devmap")
        if directory is None or not (directory / "cgo17-amd.csv").is_file():
            raise UsageError("no devmap source directory: give --source-dir DIR, or --download")
    return directory.resolve()


@dataclass
class _Examples:
    """A platform's rows as PyG ``Data`` whose ``x`` are ids into a global text table (mapped per fold)."""

    data: list
    texts: list[str]
    labels: np.ndarray
    runtimes: np.ndarray
    names: list[str]
    csv_rows: np.ndarray
    sizes: np.ndarray


def _subset_rows(source_dir: Path, size: int | None, seed: int) -> list[int] | None:
    """A stratified (by the AMD labels) seeded sample of ``size`` row indices, sorted; None for all rows."""

    if size is None:
        return None
    labels = np.array([r.label for r in read_platform_csv(source_dir / "cgo17-amd.csv")])
    if not 2 <= size <= len(labels):
        raise UsageError(f"--subset must be in 2..{len(labels)}")
    rng = np.random.default_rng(seed)
    chosen = []
    for label in (0, 1):
        members = np.flatnonzero(labels == label)
        take = round(size * len(members) / len(labels))
        chosen.extend(rng.permutation(members)[:take].tolist())
    return sorted(chosen)


def _examples(
    source_dir: Path, data_dir: Path, platform: str, variant: str, rows: list[int] | None = None
) -> _Examples:

    devmap = load_devmap(source_dir, data_dir, platform, variant, rows=rows)
    texts = sorted({node.text for graph in devmap.graphs for node in graph.node})
    table = {t: i for i, t in enumerate(texts)}
    data = [to_pyg(graph, table) for graph in devmap.graphs]
    for d in data:  # keep what the model reads
        for key in list(d.keys()):
            if key not in ("x", "edge_index", "edge_flow", "edge_pos", "node_type", "graph_x", "graph_y"):
                del d[key]
    return _Examples(
        data=data,
        texts=texts,
        labels=devmap.labels,
        runtimes=devmap.runtimes,
        names=[r.name for r in devmap.rows],
        csv_rows=np.array([r.row for r in devmap.rows], dtype=np.int64),
        sizes=np.array([d.num_nodes for d in data], dtype=np.int64),
    )


def _fold_vocabulary(examples: _Examples, train: np.ndarray):
    """The count-ordered vocabulary of the training graphs, and the map global text id -> fold id (OOV last)."""

    counts = np.zeros(len(examples.texts), dtype=np.int64)
    for i in train:
        counts += np.bincount(examples.data[i].x.numpy(), minlength=len(examples.texts))
    vocabulary = Vocabulary.from_counts({t: int(c) for t, c in zip(examples.texts, counts) if c > 0})
    return vocabulary, _text_map(examples.texts, vocabulary)


def _text_map(texts: list[str], vocabulary) -> Any:

    oov = len(vocabulary)
    return torch.tensor([vocabulary.get(t, oov) for t in texts], dtype=torch.long)


def _plan(
    examples: _Examples, indices: np.ndarray, config: dict[str, Any], shuffle: bool, seed: int, epoch: int
) -> list[list[int]]:
    """Batches of ``indices`` (at most ``batch_nodes`` nodes and ``batch_graphs`` graphs), in an order seeded by
    (seed, epoch) when shuffled; training batches never hold a single graph (the auxiliary head's BatchNorm needs
    two)."""
    indices = np.asarray(indices)
    sampler = NodeBudgetBatchSampler(
        examples.sizes[indices],
        config["batch_nodes"],
        shuffle=shuffle,
        seed=seed,
        max_graphs=config.get("batch_graphs"),
        min_graphs=2 if shuffle else 1,
    )
    sampler.set_epoch(epoch)
    return [[int(indices[j]) for j in batch] for batch in sampler.plan()]


def _fold_data(examples: _Examples, text_map) -> list:
    """The examples with the fold's vocabulary ids and their row (``rows``: which rows a batch holds)."""
    out = []
    for i, d in enumerate(examples.data):
        d = d.clone()
        d.x = text_map[d.x]
        d.rows = torch.tensor([i], dtype=torch.long)
        out.append(d)
    return out


def _predict(task, model, indices: np.ndarray, device) -> dict[str, Any]:
    """Evaluate on the examples ``indices``, in order: loss, rows and predictions (:meth:`_Predictions.compute`)."""
    batches = _plan(task.examples, indices, task.config, False, 0, 0)
    return evaluate(task, model, make_loader(task.train_data, batches), device=device).compute()


# ---------------------------------------------------------------------------------------------------------------
# Model


#: The options of the model (``evaluate`` needs them).
_MODEL_KEYS = (*NETWORK_OPTIONS, "readout_channels", "pooling", "intermediate_loss_weight")
#: What runs written before an option existed are taken to have used.
_MODEL_DEFAULTS = DevmapOptions.defaults("aux_bins", "text_counts", "average_last")


def _model(config: dict[str, Any], vocabulary_size: int):
    """The network of ``config`` (the paper's model, or :class:`~programl.models.PooledReadoutClassifier` for other
    readouts): the one description of it (:meth:`DevmapSpec.model_spec
    <programl.tasks.devmap.spec.DevmapSpec.model_spec>`, what export writes), built by
    :func:`~programl.models.build.build_model`."""

    return build_model(DevmapSpec().model_spec(config, vocabulary_size))


class _Predictions:
    """The mean loss, rows and predicted devices of an epoch (the engine's accumulator API; one process)."""

    def __init__(self) -> None:
        self.total_loss, self.count, self.rows, self.predictions, self.probabilities = 0.0, 0, [], [], []

    def update(self, output, batch, loss) -> None:
        n = int(batch.graph_y.numel())
        self.total_loss += float(loss.detach()) * n
        self.count += n
        self.rows.append(batch.rows.cpu().numpy())
        self.predictions.append(output.logits.argmax(-1).cpu().numpy())
        self.probabilities.append(output.logits.detach().softmax(-1).cpu().numpy())

    def state_dict(self) -> dict[str, Any]:
        """What is accumulated, as tensors and plain values (the engine's mid-epoch checkpoint keeps it)."""

        arrays = {k: [torch.from_numpy(a) for a in getattr(self, k)] for k in ("rows", "predictions", "probabilities")}
        return {"total_loss": self.total_loss, "count": self.count, **arrays}

    def load_state_dict(self, state: dict[str, Any]) -> _Predictions:
        """Replace what is accumulated by :meth:`state_dict`'s; returns self."""
        self.total_loss, self.count = float(state["total_loss"]), int(state["count"])
        for key in ("rows", "predictions", "probabilities"):
            setattr(self, key, [t.cpu().numpy() for t in state[key]])
        return self

    def all_reduce(self, reduce_sum) -> _Predictions:  # noqa: ARG002 - devmap trains in one process
        return self

    def compute(self) -> dict[str, Any]:
        """``loss``, and the ``rows``, ``predictions`` and class ``probabilities`` in batch order."""
        rows = np.concatenate(self.rows) if self.rows else np.zeros(0, dtype=np.int64)
        predictions = np.concatenate(self.predictions) if self.predictions else np.zeros(0, dtype=np.int64)
        probabilities = np.concatenate(self.probabilities) if self.probabilities else np.zeros((0, 2))
        return {
            "loss": self.total_loss / max(self.count, 1),
            "rows": rows,
            "predictions": predictions,
            "probabilities": probabilities,
        }


def _epoch_metrics(examples: _Examples, predicted: dict[str, Any], static_device: int) -> dict[str, float]:
    rows = predicted["rows"]
    metrics = devmap_metrics(examples.labels[rows], predicted["predictions"], examples.runtimes[rows], static_device)
    return {"loss": predicted["loss"], "accuracy": metrics["accuracy"], "f1": metrics["f1"]}


def _better(candidate: tuple[float, float], best: tuple[float, float] | None) -> bool:
    """Higher validation accuracy wins; equal accuracy: lower validation loss; equal both: the earlier epoch."""
    return best is None or candidate[0] > best[0] or (candidate[0] == best[0] and candidate[1] < best[1])


# ---------------------------------------------------------------------------------------------------------------
# Training


class _FoldTask(TrainingTask):
    """One cross-validation fold for the engine (SPEC §6.5): the fold's vocabulary, Adam, dropout re-seeded per
    epoch, batches in an order seeded by (fold seed, epoch), the epoch chosen by :func:`_better`."""

    curve_metrics = ("loss", "accuracy", "f1")

    def __init__(
        self, examples: _Examples, split, config: dict[str, Any], fold_dir: Path, vocabulary, text_map, device
    ) -> None:
        self.examples, self.split, self.config, self.device = examples, split, config, device
        self.vocabulary_size, self.text_map = len(vocabulary), text_map
        self.static_device = int(np.bincount(examples.labels[split.train], minlength=2).argmax())
        self.init_seed = config["seed"] * 1000 + split.fold
        self.name = f"{fold_dir.parent.name} fold {split.fold}"
        self.curve_title = f"devmap {fold_dir.parent.name}, fold {split.fold}"
        self.checkpoint_extra = {"config": config, "fold": split.fold}
        self.train_data = self.val_data = _fold_data(examples, text_map)

    def build(self, device):

        model = _model(self.config, self.vocabulary_size)
        if self.config.get("aux_bins", 0):  # thresholds from the training rows only (a resumed run reloads them)
            model.fit_aux(torch.cat([self.examples.data[i].graph_x.view(1, -1) for i in self.split.train]))
        if self.config.get("text_counts", False):  # scales from the training rows only, as the thresholds
            train = [self.text_map[self.examples.data[i].x] for i in self.split.train]
            batch = torch.cat([torch.full((len(x),), g, dtype=torch.long) for g, x in enumerate(train)])
            model.fit_text_counts(torch.cat(train), batch, len(train))
        model = model.to(device)
        return model, torch.optim.Adam(
            model.parameters(), lr=self.config["lr"], weight_decay=self.config["weight_decay"]
        )

    def epoch_seed(self, epoch: int, rank: int) -> int:  # noqa: ARG002 - one process
        return self.init_seed * 1009 + epoch

    def plan(self, pass_index: int) -> list[list[int]]:
        return _plan(self.examples, self.split.train, self.config, True, self.init_seed, pass_index)

    def val_plan(self) -> list[list[int]]:
        return _plan(self.examples, self.split.val, self.config, False, 0, 0)

    def new_metrics(self) -> _Predictions:
        return _Predictions()

    def step(self, model, batch, metrics: _Predictions):
        output = model(batch)
        loss = model.loss(output, batch.graph_y)
        metrics.update(output, batch, loss)
        return loss

    def epoch_metrics(self, computed: dict[str, Any]) -> dict[str, float]:
        return _epoch_metrics(self.examples, computed, self.static_device)

    def selection(self, val: dict[str, Any]) -> tuple[float, float]:
        return (val["accuracy"], val["loss"])

    def better(self, candidate: tuple[float, ...], best: tuple[float, ...]) -> bool:
        return _better(candidate, best)


def _train_fold(examples: _Examples, split, options: DevmapOptions, fold_dir: Path, device, args) -> dict:
    """Train one fold (resuming from ``last.pt``), test the chosen epoch's model, write ``result.json``."""
    config = options.config()
    fold_dir.mkdir(parents=True, exist_ok=True)
    vocabulary, text_map = _fold_vocabulary(examples, split.train)
    vocabulary.save(fold_dir / "vocab.csv")
    task = _FoldTask(examples, split, config, fold_dir, vocabulary, text_map, device)
    fit = Trainer(
        task,
        fold_dir,
        Budget(epochs=config["epochs"]),
        dist=Distributed(device=device),
        resume=not args.restart,
        schedule=Schedule.of(options),
        show=not args.quiet,
        bar="epochs",
        plot_each_epoch=False,
        keep_epochs_from=_averaged_epochs(config)[0] if config.get("average_last", 0) else None,
    ).run()
    result = _test_fold(examples, split, config, fold_dir, device, task.static_device)
    result.update(best_epoch=fit.best_epoch, val_accuracy=fit.best[0] if fit.best else None, epochs=config["epochs"])
    if config.get("average_last", 0):
        result["averaged_epochs"] = list(_averaged_epochs(config))
    write_json(fold_dir / "result.json", result)
    return result


def _averaged_epochs(config: dict[str, Any]) -> range:
    """The epochs whose models ``--average-last N`` averages: the last N of the run's ``epochs``."""
    return range(config["epochs"] - config["average_last"] + 1, config["epochs"] + 1)


def _fold_predictions(examples: _Examples, split, config: dict[str, Any], fold_dir: Path, device) -> dict[str, Any]:
    """The test fold predicted by the fold's ``best.pt``, or with ``--average-last N`` by the mean class probabilities
    of its last N epochs' models (``epoch_<NNN>.pt``): :meth:`_Predictions.compute` (rows in batch order)."""

    vocabulary = Vocabulary.load(fold_dir / "vocab.csv")
    task = _FoldTask(examples, split, config, fold_dir, vocabulary, _text_map(examples.texts, vocabulary), device)
    model = _model(config, len(vocabulary)).to(device)
    if not config.get("average_last", 0):
        load_checkpoint(fold_dir / "best.pt", model=model, map_location=device, restore_rng=False)
        return _predict(task, model, split.test, device)
    snapshots = [epoch_path(fold_dir, epoch) for epoch in _averaged_epochs(config)]
    missing = [path.name for path in snapshots if not path.is_file()]
    if missing:
        raise ProgramlError(f"{fold_dir}: --average-last needs {', '.join(missing)} (train the fold to its last epoch)")
    predicted = []
    for path in snapshots:
        load_checkpoint(path, model=model, map_location=device, restore_rng=False)
        predicted.append(_predict(task, model, split.test, device))
    probabilities = np.mean([p["probabilities"] for p in predicted], axis=0)
    return {
        "loss": float(np.mean([p["loss"] for p in predicted])),
        "rows": predicted[0]["rows"],
        "predictions": probabilities.argmax(-1),
        "probabilities": probabilities,
    }


def _fold_result_of(examples: _Examples, split, rows: np.ndarray, pred: np.ndarray, static_device: int) -> dict:
    metrics = devmap_metrics(examples.labels[rows], pred, examples.runtimes[rows], static_device)
    return {
        "fold": split.fold,
        "static_device": static_device,
        "test": metrics,
        "rows": rows.tolist(),
        "predictions": pred.tolist(),
    }


def _test_fold(examples: _Examples, split, config: dict[str, Any], fold_dir: Path, device, static_device: int) -> dict:
    """Predict the test fold with ``best.pt``; returns its metrics and predictions."""
    predicted = _fold_predictions(examples, split, config, fold_dir, device)
    return _fold_result_of(examples, split, predicted["rows"], predicted["predictions"], static_device)


def _check_config(args: argparse.Namespace) -> None:
    check_options(args)
    DevmapOptions.from_args(args)  # the options' own ranges
    if args.only_folds and any(not 0 <= k < args.folds for k in args.only_folds):
        raise UsageError(f"--only-folds must be in 0..{args.folds - 1}")
    if args.layers > args.steps:
        raise UsageError("need --steps >= 1 and 1 <= --layers <= --steps")
    if args.hidden < 2 or args.hidden % 2:
        raise UsageError("--hidden must be an even number >= 2")
    if not 0 <= args.average_last <= args.epochs:
        raise UsageError(f"--average-last must be in 0..{args.epochs} (the epochs)")


def _splits(examples: _Examples, folds: int, seed: int) -> list:
    """The cross-validation splits; too many folds for the kernels is a usage error, not a traceback."""

    smallest = int(np.bincount(examples.labels, minlength=2).min()) if len(examples.labels) else 0
    if folds > smallest:
        raise UsageError(f"--folds {folds}: the smaller class has {smallest} kernels, and every fold needs one")
    return cross_validation_splits(examples.labels, folds, seed)


def _fold_result(fold_dir: Path) -> dict | None:
    """A fold's ``result.json``; None when there is none, or when it is damaged (the fold is then tested again from
    its checkpoints, which rewrites it)."""
    path = fold_dir / "result.json"
    if not path.is_file():
        return None
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        logger.warning(f"{path}: damaged ({error}); the fold is tested again")
        return None
    keys = ("fold", "static_device", "test", "rows", "predictions")
    if not isinstance(result, dict) or any(key not in result for key in keys):
        logger.warning(f"{path}: not a fold result; the fold is tested again")
        return None
    return result


def _platforms(choice: str) -> tuple[str, ...]:
    return ("amd", "nvidia") if choice == "all" else (choice,)


def train_main(args: argparse.Namespace) -> int:
    """``programl train devmap``: build the graphs if needed, cross-validate per platform, write the reports."""
    _check_config(args)
    configure_threads(args.threads)
    configure_logging(args.quiet)
    device = resolve_device(args.device)
    source_dir = _source_dir(args)
    run_dir = Path(args.run_dir)
    with RunLock(run_dir):
        return _train(args, device, source_dir, run_dir)


def _train(args: argparse.Namespace, device, source_dir: Path, run_dir: Path) -> int:
    """The cross-validation of :func:`train_main`, in a locked run directory."""

    data_dir = Path(os.path.expanduser(args.data_dir))
    options = DevmapOptions.from_args(args)
    config = options.config()
    if (run_dir / "config.json").exists() and not args.restart:
        check_same_run(
            run_dir,
            "devmap",
            config,
            paths={"source_dir": source_dir, "data_dir": data_dir},
            ignore=("epochs",),
            defaults={**SCHEDULE_DEFAULTS, **_MODEL_DEFAULTS},
        )
    write_json(
        run_dir / "config.json",
        {"task": "devmap", "model": config, "source_dir": str(source_dir), "data_dir": str(data_dir)},
    )
    rows = _subset_rows(source_dir, args.subset, args.fold_seed)
    report = build_devmap(
        source_dir,
        data_dir,
        [args.variant],
        jobs=args.jobs or None,
        rows=rows,
        progress=None if args.quiet else _build_progress,
    )
    if not report.ok:
        for name, error in report.failed[args.variant]:
            logger.warning(f"{name}: error: {error}")
        logger.warning(f"devmap: {len(report.failed[args.variant])} kernels failed to build; they are left out")
    summary = {}
    for platform in _platforms(args.platform):
        examples = _examples(source_dir, data_dir, platform, args.variant, rows)
        splits = _splits(examples, args.folds, args.fold_seed)
        results = []
        for split in splits:
            fold_dir = run_dir / platform / f"fold_{split.fold}"
            previous = _fold_result(fold_dir)
            if args.only_folds and split.fold not in args.only_folds:
                if previous is not None:  # reported with the others, not retrained
                    results.append(previous)
                continue
            if previous is not None and not args.restart and previous.get("epochs", 0) >= args.epochs:
                results.append(previous)  # finished (asked for more epochs: resumed from last.pt)
                continue
            started = time.perf_counter()
            result = _train_fold(examples, split, options, fold_dir, device, args)
            logger.info(
                f"devmap {platform} fold {split.fold}: test accuracy {result['test']['accuracy']:.3f} "
                f"(epoch {result['best_epoch']}, {time.perf_counter() - started:.0f} s)"
            )
            results.append(result)
        summary[platform] = _platform_report(examples, results, run_dir / platform, platform)
    _write_summary(run_dir, summary, config)
    print(_summary_table(summary))
    return 0


def _build_progress(items, total, description):
    return progress(items, total, description, unit="kernel")


# ---------------------------------------------------------------------------------------------------------------
# Reports


def _platform_report(examples: _Examples, results: list[dict], directory: Path, platform: str) -> dict:
    """Fold means and spreads, pooled confusion matrix, predictions.csv and confusion.png of one platform."""

    keys = list(results[0]["test"]) if results else []
    folds = {k: [r["test"][k] for r in results] for k in keys}
    rows = np.array([i for r in results for i in r["rows"]], dtype=np.int64)
    pred = np.array([p for r in results for p in r["predictions"]], dtype=np.int64)
    static = np.array([r["static_device"] for r in results for _ in r["rows"]], dtype=np.int64)
    cm = np.zeros((2, 2), dtype=np.int64)
    np.add.at(cm, (examples.labels[rows], pred), 1)
    static_acc = [float(np.mean(examples.labels[r["rows"]] == r["static_device"])) for r in results]
    report = {
        "platform": platform,
        "folds": len(results),
        "examples": int(rows.size),
        "mean": {k: float(np.mean(v)) for k, v in folds.items()},
        "std": {k: float(np.std(v)) for k, v in folds.items()},
        "per_fold": folds,
        "best_epochs": [r.get("best_epoch") for r in results],
        "static_mapping_accuracy": float(np.mean(static_acc)) if static_acc else math.nan,
        "pooled_accuracy": float(np.mean(examples.labels[rows] == pred)) if rows.size else math.nan,
        "confusion_matrix": cm.tolist(),
    }
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / "report.json", report)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["row", "name", "fold", "label", "prediction", "static", "runtime_cpu", "runtime_gpu"])
    fold_of = [r["fold"] for r in results for _ in r["rows"]]
    for row, p, s, f in zip(rows, pred, static, fold_of):
        writer.writerow(
            [
                int(examples.csv_rows[row]),
                examples.names[row],
                f,
                int(examples.labels[row]),
                int(p),
                int(s),
                examples.runtimes[row, 0],
                examples.runtimes[row, 1],
            ]
        )

    atomic_write_text(directory / "predictions.csv", out.getvalue())
    if rows.size:
        plot_confusion_matrix(
            cm,
            directory / "confusion.png",
            labels=["CPU", "GPU"],
            title=f"devmap {PLATFORM_NAMES[platform]}: {rows.size} test predictions",
        )
    return report


def _write_summary(run_dir: Path, summary: dict, config: dict) -> None:
    write_json(run_dir / "summary.json", {"config": config, "platforms": summary})

    atomic_write_text(run_dir / "summary.md", _summary_table(summary) + "\n")


def _summary_table(summary: dict) -> str:

    lines = [
        "| platform | folds | accuracy % | precision | recall | F1 | F1 (GPU) | speedup (geo / mean) "
        "| oracle speedup (geo / mean) | ProGraML (paper) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for platform, report in summary.items():
        if not report["folds"]:
            continue
        m, s = report["mean"], report["std"]
        paper = PUBLISHED["ProGraML"][platform]
        lines.append(
            f"| {PLATFORM_NAMES[platform]} | {report['folds']} | {100 * m['accuracy']:.1f} ± {100 * s['accuracy']:.1f} "
            f"| {m['precision']:.2f} | {m['recall']:.2f} | {m['f1']:.2f} ± {s['f1']:.2f} | {m['f1_gpu']:.2f} "
            f"| {m['speedup_geomean']:.2f} / {m['speedup_mean']:.2f} "
            f"| {m['oracle_speedup_geomean']:.2f} / {m['oracle_speedup_mean']:.2f} "
            f"| {paper[0]:.1f} %, F1 {paper[3]:.2f} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# Evaluation


def evaluate_main(args: argparse.Namespace) -> int:
    """``programl evaluate devmap``: re-test every finished fold's chosen model and rewrite the reports."""

    check_options(args)
    if args.ensemble and args.out is None:
        raise UsageError("--ensemble needs --out DIR for its reports")
    if args.out is not None and not args.ensemble:
        raise UsageError("--out is for the reports of an --ensemble; one run's reports go to its --run-dir")
    configure_threads(args.threads)
    configure_logging(args.quiet)
    device = resolve_device(args.device)
    run_dir = Path(args.run_dir)
    saved = _read_devmap_run(run_dir)
    if args.ensemble:
        members = [(run_dir, saved)] + [(Path(d), _read_devmap_run(Path(d))) for d in args.ensemble]
        _check_same_folds(members)
        args.out.mkdir(parents=True, exist_ok=True)
        with RunLock(args.out):
            return _evaluate_ensemble(args, device, members)
    with RunLock(run_dir):
        return _evaluate(args, device, run_dir, saved)


def _read_devmap_run(run_dir: Path) -> dict[str, Any]:

    saved = read_run_config(run_dir, "devmap", required=_MODEL_KEYS + ("variant", "folds", "fold_seed", "batch_nodes"))
    if "source_dir" not in saved or "data_dir" not in saved:
        raise ProgramlError(f"{run_dir / 'config.json'}: no source_dir or data_dir (not a `programl train devmap` run)")
    return saved


#: What the members of an ensemble must share: the same kernels in the same folds.
_FOLD_KEYS = ("variant", "folds", "fold_seed", "subset")


def _check_same_folds(members: list[tuple[Path, dict[str, Any]]]) -> None:
    first_dir, first = members[0]
    for run_dir, saved in members[1:]:
        for key in _FOLD_KEYS:
            if saved["model"].get(key) != first["model"].get(key):
                raise UsageError(
                    f"--ensemble {run_dir}: {key} {saved['model'].get(key)!r}, but {first_dir} has "
                    f"{first['model'].get(key)!r} (the runs must test the same folds)"
                )


def _evaluation_examples(args: argparse.Namespace, saved: dict[str, Any], run_dirs: list[Path]):
    """``(platform, examples)`` for each platform to evaluate: ``--platform``, or with ``all`` the platforms that
    every one of ``run_dirs`` has trained folds of (a one-platform run: its platform, not an error about the other);
    the data directories are the run's unless given."""
    config = saved["model"]
    source_dir = Path(args.source_dir or saved["source_dir"])
    data_dir = Path(os.path.expanduser(args.data_dir or saved["data_dir"]))
    rows = _subset_rows(source_dir, config.get("subset"), config["fold_seed"])
    platforms = _platforms(args.platform)
    if args.platform == "all":
        trained = [p for p in platforms if all(any((d / p).glob("fold_*/best.pt")) for d in run_dirs)]
        platforms = tuple(trained) or platforms
    for platform in platforms:
        yield platform, _examples(source_dir, data_dir, platform, config["variant"], rows)


def _evaluate(args: argparse.Namespace, device, run_dir: Path, saved: dict[str, Any]) -> int:
    """The evaluation of :func:`evaluate_main`, in a locked run directory."""

    config = saved["model"]
    summary = {}
    for platform, examples in _evaluation_examples(args, saved, [run_dir]):
        results = []
        for split in _splits(examples, config["folds"], config["fold_seed"]):
            fold_dir = run_dir / platform / f"fold_{split.fold}"
            if not (fold_dir / "best.pt").is_file():
                continue
            static_device = int(np.bincount(examples.labels[split.train], minlength=2).argmax())
            result = _test_fold(examples, split, config, fold_dir, device, static_device)
            previous = _fold_result(fold_dir)
            if previous is not None:
                result["best_epoch"] = previous.get("best_epoch")
                if previous["predictions"] != result["predictions"]:
                    logger.warning(f"{fold_dir}: predictions differ from those recorded at training time")
            results.append(result)
        if not results:
            raise ProgramlError(f"{run_dir / platform}: no trained fold (best.pt) to evaluate")
        summary[platform] = _platform_report(examples, results, run_dir / platform, platform)
    _write_summary(run_dir, summary, config)
    print(_summary_table(summary))
    return 0


def _evaluate_ensemble(args: argparse.Namespace, device, members: list[tuple[Path, dict[str, Any]]]) -> int:
    """``--ensemble``: per fold, the mean of the members' test probabilities (each member's chosen model, so no
    member sees its test fold in training or in the choice of epoch); a fold is scored when every member has it."""

    saved = members[0][1]
    config = saved["model"]
    summary = {}
    for platform, examples in _evaluation_examples(args, saved, [d for d, _ in members]):
        results = []
        for split in _splits(examples, config["folds"], config["fold_seed"]):
            fold_dirs = [d / platform / f"fold_{split.fold}" for d, _ in members]
            if not all((f / "best.pt").is_file() for f in fold_dirs):
                continue
            test_rows, probabilities = np.sort(split.test), 0.0
            for fold_dir, (_, member) in zip(fold_dirs, members):
                predicted = _fold_predictions(examples, split, member["model"], fold_dir, device)
                order = np.argsort(predicted["rows"], kind="stable")  # members may batch in other orders
                assert np.array_equal(predicted["rows"][order], test_rows), fold_dir
                probabilities = probabilities + predicted["probabilities"][order]
            static_device = int(np.bincount(examples.labels[split.train], minlength=2).argmax())
            pred = np.asarray(probabilities).argmax(-1)
            result = _fold_result_of(examples, split, test_rows, pred, static_device)
            result["best_epoch"] = [(_fold_result(f) or {}).get("best_epoch") for f in fold_dirs]
            results.append(result)
        if not results:
            raise ProgramlError(f"{platform}: no fold that every run of the ensemble has trained (best.pt)")
        summary[platform] = _platform_report(examples, results, args.out / platform, platform)
    _write_summary(args.out, summary, {**config, "ensemble": [str(d) for d, _ in members]})
    print(_summary_table(summary))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m programl.tasks.devmap {train,evaluate} ...`` (``__main__.py``)."""
    return run_task_module(DevmapSpec(), sys.modules[__name__], argv)
