"""OpenCL device mapping: a GGNN with auxiliary inputs, cross-validated per platform (docs/spec/tasks.md#device-mapping,
docs/spec/tasks.md#device-mapping-table).

For each platform (AMD Tahiti 7970, NVIDIA GTX 970) the 680 kernels-with-inputs, read through the data set
:class:`programl.datasets.DevMap` (root ``--data-dir``, raw files from ``--source-dir``), are split into 10 stratified
folds (seeded; DevMap's ``split``/``fold``); fold k is tested by a model trained on 8 folds, whose epoch is chosen on
the remaining validation fold (highest validation accuracy, ties to the lower validation loss, then the earlier
epoch). The test folds are only touched once per fold, by the chosen model. ``--average-last N`` (not in the paper)
tests by the mean class probabilities of the fold's last N epochs' models instead: no epoch is chosen, which on 68
validation kernels is the noisiest step of the protocol (``docs/results.md`` §6).

Model (:class:`~programl.models.GGNNGraphClassifier` with the auxiliary readout): a trainable embedding of the node
text (vocabulary built from the fold's training graphs, :meth:`DevMap.vocabulary
<programl.datasets.DevMap.vocabulary>`, applied by the transform :class:`~programl.datasets.EncodeVocabulary`),
typed GGNN steps over control/data/call edges and their reversals (the paper's schedule: 6 steps, even and odd steps
sharing parameters), the gated node readout summed per graph, then ``[graph logits; log1p(transfer),
log1p(wgsize)]`` -> BatchNorm -> Linear(32) -> ReLU -> dropout -> Linear(2); loss CE(final) + 0.2 CE(graph
logits); Adam; batches of at most ``--batch-nodes`` nodes.

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
    <platform>/fold_<k>/result.json     the fold's test metrics, and ``rows``: the test kernels' indices in the
                                        platform's DevMap data set (a finished fold is skipped on resumption)
    <platform>/predictions.csv          every test prediction (by CSV row) with its runtimes
    <platform>/report.json, confusion.png

Data directory (``--data-dir``): DevMap's root, ``raw/`` (the public files, linked or copied from ``--source-dir``)
and ``processed/`` (the graphs and the collated examples). A data directory of a run made before the task read
DevMap (``src/``, ``<variant>/graphs_<platform>/``) is left as it is; the graphs are built again beside it.
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

from programl.data.devmap import PLATFORM_NAMES, check_sources, cross_validation_splits
from programl.data.vocabulary import Vocabulary
from programl.datasets import DevMap, EncodeVocabulary
from programl.exceptions import ProgramlError
from programl.loader import NodeBudgetBatchSampler, make_loader
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
    read_run_config,
    resolve_device,
    shared_data,
    write_json,
)
from programl.training.engine import epoch_path, evaluate
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

#: arXiv table (docs/spec/tasks.md#device-mapping-table): accuracy %, precision, recall, F1 per platform.
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


@dataclass(frozen=True)
class _Source:
    """Which DevMap examples a run reads: the arguments of :class:`~programl.datasets.DevMap` but the platform,
    split and transform (``--data-dir`` is its root, ``--source-dir`` the mirror of its raw files, ``--subset``,
    ``--folds`` and ``--fold-seed`` its ``subset``, ``folds`` and ``seed``, ``-j`` its build workers)."""

    root: Path
    source_dir: Path
    variant: str
    folds: int
    seed: int
    subset: int | None = None
    jobs: int | None = None
    log: bool = False
    numbers_and_types: bool = False

    def dataset(self, platform: str, split: str | None = None, fold: int = 0) -> DevMap:
        """The examples of ``platform`` (``split`` of cross-validation fold ``fold``; None: every loaded row),
        processed on first use (the graphs are built then)."""
        return DevMap(
            self.root,
            platform,
            self.variant,
            split,
            fold=fold,
            folds=self.folds,
            seed=self.seed,
            subset=self.subset,
            mirrors=[self.source_dir],
            jobs=self.jobs,
            log=self.log,
            numbers_and_types=self.numbers_and_types,
        )

    def fold_dataset(self, platform: str, split: str, fold: int, vocabulary) -> DevMap:
        """``split`` of fold ``fold``, its node texts encoded by ``vocabulary`` (the fold's, from its training rows)."""
        dataset = self.dataset(platform, split, fold)
        dataset.transform = EncodeVocabulary(vocabulary, dataset.texts)
        return dataset


def _source_dir(args: argparse.Namespace) -> Path:
    """Where the raw files come from: ``--source-dir`` (which must hold them), ``DATA_DIR/raw`` with ``--download``
    (DevMap downloads them there), else the shared research data, else ``DATA_DIR/raw`` when it holds them."""
    raw = Path(os.path.expanduser(args.data_dir)) / "raw"
    shared = shared_data("devmap")
    if args.source_dir:
        directory = Path(args.source_dir)
        check_sources(directory, verify=False)  # a named directory without the files is an error, not a download
    elif getattr(args, "download", False):
        directory = raw
    elif shared is not None and (shared / "cgo17-amd.csv").is_file():
        directory = shared
    elif (raw / "cgo17-amd.csv").is_file():
        directory = raw
    else:
        raise UsageError("no devmap source directory: give --source-dir DIR, or --download")
    return directory.resolve()


def _plan(dataset: DevMap, config: dict[str, Any], shuffle: bool = False, seed: int = 0, epoch: int = 0):
    """Batches of ``dataset`` (at most ``batch_nodes`` nodes and ``batch_graphs`` graphs), in an order seeded by
    (seed, epoch) when shuffled; training batches never hold a single graph (the auxiliary head's BatchNorm needs
    two)."""
    sampler = NodeBudgetBatchSampler(
        dataset.sizes,
        config["batch_nodes"],
        shuffle=shuffle,
        seed=seed,
        max_graphs=config.get("batch_graphs"),
        min_graphs=2 if shuffle else 1,
    )
    sampler.set_epoch(epoch)
    return [[int(j) for j in batch] for batch in sampler.plan()]


def _predict(dataset: DevMap, model, config: dict[str, Any], device) -> dict[str, Any]:
    """Evaluate on every example of ``dataset`` (a split, its vocabulary transform set): :meth:`_Predictions.compute`,
    and ``rows``: the examples' indices in the platform's data set (``dataset.indices()``), in batch order."""
    batches = _plan(dataset, config)
    predicted = evaluate(_Scorer(), model, make_loader(dataset, batches), device=device).compute()
    indices = np.asarray(dataset.indices(), dtype=np.int64)
    predicted["rows"] = indices[np.asarray([j for batch in batches for j in batch], dtype=np.int64)]
    return predicted


def _static_device(labels: np.ndarray) -> int:
    """The static mapping: the device that is fastest for most of ``labels`` (the training rows)."""
    return int(np.bincount(labels, minlength=2).argmax())


# ---------------------------------------------------------------------------------------------------------------
# Model


#: The options of the model (``evaluate`` needs them).
_MODEL_KEYS = (*NETWORK_OPTIONS, "readout_channels", "pooling", "intermediate_loss_weight")
#: What runs written before an option existed are taken to have used.
_MODEL_DEFAULTS = DevmapOptions.defaults("aux_bins", "text_counts", "average_last", "numbers_and_types")


def _model(config: dict[str, Any], vocabulary_size: int):
    """The network of ``config`` (the paper's model, or :class:`~programl.models.PooledReadoutClassifier` for other
    readouts): the one description of it (:meth:`DevmapSpec.model_spec
    <programl.tasks.devmap.spec.DevmapSpec.model_spec>`, what export writes), built by
    :func:`~programl.models.build.build_model`."""

    return build_model(DevmapSpec().model_spec(config, vocabulary_size))


#: What :class:`_Predictions` keeps of every example, in batch order.
_PREDICTED = ("labels", "runtimes", "predictions", "probabilities")


class _Predictions:
    """The mean loss, and the labels, runtimes (what the examples carry: ``y``, ``runtimes``) and predicted devices
    of an epoch or a test (the engine's accumulator API; one process)."""

    def __init__(self) -> None:
        self.total_loss, self.count = 0.0, 0
        self.labels, self.runtimes, self.predictions, self.probabilities = [], [], [], []

    def update(self, output, batch, loss) -> None:
        n = int(batch.y.numel())
        self.total_loss += float(loss.detach()) * n
        self.count += n
        self.labels.append(batch.y.cpu().numpy())
        self.runtimes.append(batch.runtimes.view(-1, 2).cpu().numpy())
        self.predictions.append(output.logits.argmax(-1).cpu().numpy())
        self.probabilities.append(output.logits.detach().softmax(-1).cpu().numpy())

    def state_dict(self) -> dict[str, Any]:
        """What is accumulated, as tensors and plain values (the engine's mid-epoch checkpoint keeps it)."""

        arrays = {k: [torch.from_numpy(a) for a in getattr(self, k)] for k in _PREDICTED}
        return {"total_loss": self.total_loss, "count": self.count, **arrays}

    def load_state_dict(self, state: dict[str, Any]) -> _Predictions:
        """Replace what is accumulated by :meth:`state_dict`'s; returns self."""
        self.total_loss, self.count = float(state["total_loss"]), int(state["count"])
        for key in _PREDICTED:
            setattr(self, key, [t.cpu().numpy() for t in state[key]])
        return self

    def all_reduce(self, reduce_sum) -> _Predictions:  # noqa: ARG002 - devmap trains in one process
        return self

    def compute(self) -> dict[str, Any]:
        """``loss``, and the ``labels``, ``runtimes`` (N, 2), ``predictions`` and class ``probabilities`` in batch
        order."""
        empty = {
            "labels": np.zeros(0, dtype=np.int64),
            "runtimes": np.zeros((0, 2)),
            "predictions": np.zeros(0, dtype=np.int64),
            "probabilities": np.zeros((0, 2)),
        }
        arrays = {k: np.concatenate(getattr(self, k)) if getattr(self, k) else empty[k] for k in _PREDICTED}
        return {"loss": self.total_loss / max(self.count, 1), **arrays}


def _epoch_metrics(predicted: dict[str, Any], static_device: int) -> dict[str, float]:
    metrics = devmap_metrics(predicted["labels"], predicted["predictions"], predicted["runtimes"], static_device)
    return {"loss": predicted["loss"], "accuracy": metrics["accuracy"], "f1": metrics["f1"]}


def _better(candidate: tuple[float, float], best: tuple[float, float] | None) -> bool:
    """Higher validation accuracy wins; equal accuracy: lower validation loss; equal both: the earlier epoch."""
    return best is None or candidate[0] > best[0] or (candidate[0] == best[0] and candidate[1] < best[1])


# ---------------------------------------------------------------------------------------------------------------
# Training


class _Scorer(TrainingTask):
    """The step that trains and evaluates a devmap model: cross-entropy of the collated batch's ``y``, the batch's
    labels, runtimes and predictions kept by :class:`_Predictions`."""

    def new_metrics(self) -> _Predictions:
        return _Predictions()

    def step(self, model, batch, metrics: _Predictions):
        output = model(batch)
        loss = model.loss(output, batch.y)
        metrics.update(output, batch, loss)
        return loss


class _FoldTask(_Scorer):
    """One cross-validation fold for the engine (docs/spec/tasks.md#device-mapping): the fold's training and validation
    examples (encoded by its vocabulary), Adam, dropout re-seeded per epoch, batches in an order seeded by (fold seed,
    epoch), the epoch chosen by :func:`_better`."""

    curve_metrics = ("loss", "accuracy", "f1")

    def __init__(
        self, train: DevMap, val: DevMap, config: dict[str, Any], fold_dir: Path, vocabulary_size: int
    ) -> None:
        self.train_data, self.val_data = train, val
        self.config, self.vocabulary_size = config, vocabulary_size
        self.static_device = _static_device(train.y.numpy())
        self.init_seed = config["seed"] * 1000 + train.fold
        self.name = f"{fold_dir.parent.name} fold {train.fold}"
        self.curve_title = f"devmap {fold_dir.parent.name}, fold {train.fold}"
        self.checkpoint_extra = {"config": config, "fold": train.fold}

    def build(self, device):

        model = _model(self.config, self.vocabulary_size)
        train = [self.train_data[i] for i in range(len(self.train_data))]
        if self.config.get("aux_bins", 0):  # thresholds from the training rows only (a resumed run reloads them)
            model.fit_aux(torch.cat([d.graph_x.view(1, -1) for d in train]))
        if self.config.get("text_counts", False):  # scales from the training rows only, as the thresholds
            batch = torch.cat([torch.full((d.num_nodes,), g, dtype=torch.long) for g, d in enumerate(train)])
            model.fit_text_counts(torch.cat([d.x for d in train]), batch, len(train))
        model = model.to(device)
        return model, torch.optim.Adam(
            model.parameters(), lr=self.config["lr"], weight_decay=self.config["weight_decay"]
        )

    def epoch_seed(self, epoch: int, rank: int) -> int:  # noqa: ARG002 - one process
        return self.init_seed * 1009 + epoch

    def plan(self, pass_index: int) -> list[list[int]]:
        return _plan(self.train_data, self.config, True, self.init_seed, pass_index)

    def val_plan(self) -> list[list[int]]:
        return _plan(self.val_data, self.config)

    def epoch_metrics(self, computed: dict[str, Any]) -> dict[str, float]:
        return _epoch_metrics(computed, self.static_device)

    def selection(self, val: dict[str, Any]) -> tuple[float, float]:
        return (val["accuracy"], val["loss"])

    def better(self, candidate: tuple[float, ...], best: tuple[float, ...]) -> bool:
        return _better(candidate, best)


def _train_fold(source: _Source, platform: str, fold: int, options: DevmapOptions, fold_dir: Path, device, args):
    """Train one fold (resuming from ``last.pt``), test the chosen epoch's model, write ``result.json``."""
    config = options.config()
    fold_dir.mkdir(parents=True, exist_ok=True)
    train = source.dataset(platform, "train", fold)
    vocabulary = train.vocabulary()  # count-ordered, ties broken by text (docs/spec/tasks.md#device-mapping)
    vocabulary.save(fold_dir / "vocab.csv")
    train.transform = EncodeVocabulary(vocabulary, train.texts)
    val = source.fold_dataset(platform, "val", fold, vocabulary)
    task = _FoldTask(train, val, config, fold_dir, len(vocabulary))
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
        workers=args.workers,
    ).run()
    result = _test_fold(source, platform, fold, config, fold_dir, device, task.static_device)
    result.update(best_epoch=fit.best_epoch, val_accuracy=fit.best[0] if fit.best else None, epochs=config["epochs"])
    if config.get("average_last", 0):
        result["averaged_epochs"] = list(_averaged_epochs(config))
    write_json(fold_dir / "result.json", result)
    return result


def _averaged_epochs(config: dict[str, Any]) -> range:
    """The epochs whose models ``--average-last N`` averages: the last N of the run's ``epochs``."""
    return range(config["epochs"] - config["average_last"] + 1, config["epochs"] + 1)


def _fold_predictions(source: _Source, platform: str, fold: int, config: dict[str, Any], fold_dir: Path, device):
    """The test fold predicted by the fold's ``best.pt``, or with ``--average-last N`` by the mean class probabilities
    of its last N epochs' models (``epoch_<NNN>.pt``): :func:`_predict`'s (rows in batch order). The node texts are
    encoded by the fold's ``vocab.csv``, the vocabulary it was trained with."""

    vocabulary = Vocabulary.load(fold_dir / "vocab.csv")
    test = source.fold_dataset(platform, "test", fold, vocabulary)
    model = _model(config, len(vocabulary)).to(device)
    if not config.get("average_last", 0):
        load_checkpoint(fold_dir / "best.pt", model=model, map_location=device, restore_rng=False)
        return _predict(test, model, config, device)
    snapshots = [epoch_path(fold_dir, epoch) for epoch in _averaged_epochs(config)]
    missing = [path.name for path in snapshots if not path.is_file()]
    if missing:
        raise ProgramlError(f"{fold_dir}: --average-last needs {', '.join(missing)} (train the fold to its last epoch)")
    predicted = []
    for path in snapshots:
        load_checkpoint(path, model=model, map_location=device, restore_rng=False)
        predicted.append(_predict(test, model, config, device))
    probabilities = np.mean([p["probabilities"] for p in predicted], axis=0)
    return {
        **predicted[0],
        "loss": float(np.mean([p["loss"] for p in predicted])),
        "predictions": probabilities.argmax(-1),
        "probabilities": probabilities,
    }


def _fold_result_of(fold: int, predicted: dict[str, Any], static_device: int) -> dict:
    """A fold's test result: the metrics of ``predicted`` (its ``labels``, ``predictions``, ``runtimes``), and its
    ``rows`` (indices into the platform's data set) and predictions."""
    metrics = devmap_metrics(predicted["labels"], predicted["predictions"], predicted["runtimes"], static_device)
    return {
        "fold": fold,
        "static_device": static_device,
        "test": metrics,
        "rows": np.asarray(predicted["rows"]).tolist(),
        "predictions": np.asarray(predicted["predictions"]).tolist(),
    }


def _test_fold(source: _Source, platform: str, fold: int, config: dict[str, Any], fold_dir: Path, device, static):
    """Predict the test fold with ``best.pt`` (or the averaged epochs); returns its metrics and predictions."""
    predicted = _fold_predictions(source, platform, fold, config, fold_dir, device)
    return _fold_result_of(fold, predicted, static)


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


def _splits(labels: np.ndarray, folds: int, seed: int) -> list:
    """The cross-validation splits of a platform's examples (``labels``: their ``y``), those of :class:`DevMap`'s
    ``split``/``fold``; too many folds for the kernels is a usage error, not a traceback."""

    smallest = int(np.bincount(labels, minlength=2).min()) if len(labels) else 0
    if folds > smallest:
        raise UsageError(f"--folds {folds}: the smaller class has {smallest} kernels, and every fold needs one")
    return cross_validation_splits(labels, folds, seed)


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
    source = _Source(
        data_dir,
        source_dir,
        args.variant,
        args.folds,
        args.fold_seed,
        subset=args.subset,
        jobs=args.jobs or None,
        log=not args.quiet,
        numbers_and_types=args.numbers_and_types,
    )
    summary = {}
    for platform in _platforms(args.platform):
        dataset = source.dataset(platform)
        results = []
        for split in _splits(dataset.y.numpy(), args.folds, args.fold_seed):
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
            result = _train_fold(source, platform, split.fold, options, fold_dir, device, args)
            logger.info(
                f"devmap {platform} fold {split.fold}: test accuracy {result['test']['accuracy']:.3f} "
                f"(epoch {result['best_epoch']}, {time.perf_counter() - started:.0f} s)"
            )
            results.append(result)
        summary[platform] = _platform_report(dataset, results, run_dir / platform, platform)
    _write_summary(run_dir, summary, config)
    print(_summary_table(summary))
    return 0


# ---------------------------------------------------------------------------------------------------------------
# Reports


def _platform_report(dataset: DevMap, results: list[dict], directory: Path, platform: str) -> dict:
    """Fold means and spreads, pooled confusion matrix, predictions.csv and confusion.png of one platform (the
    results' ``rows`` index ``dataset``, the platform's examples)."""

    labels, runtimes, csv_rows = dataset.y.numpy(), dataset.runtimes.numpy(), dataset.row.numpy()
    keys = list(results[0]["test"]) if results else []
    folds = {k: [r["test"][k] for r in results] for k in keys}
    rows = np.array([i for r in results for i in r["rows"]], dtype=np.int64)
    pred = np.array([p for r in results for p in r["predictions"]], dtype=np.int64)
    static = np.array([r["static_device"] for r in results for _ in r["rows"]], dtype=np.int64)
    cm = np.zeros((2, 2), dtype=np.int64)
    np.add.at(cm, (labels[rows], pred), 1)
    static_acc = [float(np.mean(labels[r["rows"]] == r["static_device"])) for r in results]
    report = {
        "platform": platform,
        "folds": len(results),
        "examples": int(rows.size),
        "mean": {k: float(np.mean(v)) for k, v in folds.items()},
        "std": {k: float(np.std(v)) for k, v in folds.items()},
        "per_fold": folds,
        "best_epochs": [r.get("best_epoch") for r in results],
        "static_mapping_accuracy": float(np.mean(static_acc)) if static_acc else math.nan,
        "pooled_accuracy": float(np.mean(labels[rows] == pred)) if rows.size else math.nan,
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
                int(csv_rows[row]),
                dataset.names[row],
                f,
                int(labels[row]),
                int(p),
                int(s),
                runtimes[row, 0],
                runtimes[row, 1],
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


def _run_source(saved: dict[str, Any], source_dir=None, data_dir=None, jobs: int | None = None, log: bool = False):
    """The :class:`_Source` of a run's ``config.json`` (``saved``): its data directory and raw files unless given.
    The data directory is the DevMap root; one of a run made before the runs read DevMap (graphs under
    ``<variant>/graphs_<platform>``) is processed anew beside them, into ``raw/`` and ``processed/``."""
    config = saved["model"]
    return _Source(
        Path(os.path.expanduser(data_dir or saved["data_dir"])),
        Path(source_dir or saved["source_dir"]),
        config["variant"],
        config["folds"],
        config["fold_seed"],
        subset=config.get("subset"),
        jobs=jobs,
        log=log,
        numbers_and_types=config.get("numbers_and_types", False),
    )


def _evaluation_data(args: argparse.Namespace, saved: dict[str, Any], run_dirs: list[Path]):
    """``(platform, source, dataset)`` for each platform to evaluate: ``--platform``, or with ``all`` the platforms
    that every one of ``run_dirs`` has trained folds of (a one-platform run: its platform, not an error about the
    other); the data directories are the run's unless given."""
    source = _run_source(saved, args.source_dir, args.data_dir, log=not args.quiet)
    if args.source_dir:
        check_sources(args.source_dir, verify=False)
    elif not any((d / "cgo17-amd.csv").is_file() for d in (source.source_dir, source.root / "raw")):
        raise ProgramlError(
            f"{source.source_dir}: the run's DevMap files are gone (and {source.root / 'raw'} has none): give "
            "--source-dir DIR (the CSVs, zips and manifest)"
        )
    platforms = _platforms(args.platform)
    if args.platform == "all":
        trained = [p for p in platforms if all(any((d / p).glob("fold_*/best.pt")) for d in run_dirs)]
        platforms = tuple(trained) or platforms
    for platform in platforms:
        yield platform, source, source.dataset(platform)


def _evaluate(args: argparse.Namespace, device, run_dir: Path, saved: dict[str, Any]) -> int:
    """The evaluation of :func:`evaluate_main`, in a locked run directory."""

    config = saved["model"]
    summary = {}
    for platform, source, dataset in _evaluation_data(args, saved, [run_dir]):
        labels = dataset.y.numpy()
        results = []
        for split in _splits(labels, config["folds"], config["fold_seed"]):
            fold_dir = run_dir / platform / f"fold_{split.fold}"
            if not (fold_dir / "best.pt").is_file():
                continue
            static_device = _static_device(labels[split.train])
            result = _test_fold(source, platform, split.fold, config, fold_dir, device, static_device)
            previous = _fold_result(fold_dir)
            if previous is not None:
                result["best_epoch"] = previous.get("best_epoch")
                if previous["predictions"] != result["predictions"]:
                    logger.warning(f"{fold_dir}: predictions differ from those recorded at training time")
            results.append(result)
        if not results:
            raise ProgramlError(f"{run_dir / platform}: no trained fold (best.pt) to evaluate")
        summary[platform] = _platform_report(dataset, results, run_dir / platform, platform)
    _write_summary(run_dir, summary, config)
    print(_summary_table(summary))
    return 0


def _evaluate_ensemble(args: argparse.Namespace, device, members: list[tuple[Path, dict[str, Any]]]) -> int:
    """``--ensemble``: per fold, the mean of the members' test probabilities (each member's chosen model, so no
    member sees its test fold in training or in the choice of epoch); a fold is scored when every member has it."""

    saved = members[0][1]
    config = saved["model"]
    summary = {}
    for platform, source, dataset in _evaluation_data(args, saved, [d for d, _ in members]):
        labels = dataset.y.numpy()
        results = []
        for split in _splits(labels, config["folds"], config["fold_seed"]):
            fold_dirs = [d / platform / f"fold_{split.fold}" for d, _ in members]
            if not all((f / "best.pt").is_file() for f in fold_dirs):
                continue
            test_rows, probabilities = np.sort(split.test), 0.0
            for fold_dir, (_, member) in zip(fold_dirs, members):
                predicted = _fold_predictions(source, platform, split.fold, member["model"], fold_dir, device)
                order = np.argsort(predicted["rows"], kind="stable")  # members may batch in other orders
                assert np.array_equal(predicted["rows"][order], test_rows), fold_dir
                probabilities = probabilities + predicted["probabilities"][order]
            mean = {
                **{k: predicted[k][order] for k in ("rows", "labels", "runtimes")},
                "predictions": np.asarray(probabilities).argmax(-1),
            }
            result = _fold_result_of(split.fold, mean, _static_device(labels[split.train]))
            result["best_epoch"] = [(_fold_result(f) or {}).get("best_epoch") for f in fold_dirs]
            results.append(result)
        if not results:
            raise ProgramlError(f"{platform}: no fold that every run of the ensemble has trained (best.pt)")
        summary[platform] = _platform_report(dataset, results, args.out / platform, platform)
    _write_summary(args.out, summary, {**config, "ensemble": [str(d) for d, _ in members]})
    print(_summary_table(summary))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m programl.tasks.devmap {train,evaluate} ...`` (``__main__.py``)."""
    return run_task_module(DevmapSpec(), sys.modules[__name__], argv)
