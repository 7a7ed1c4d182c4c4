"""One cross-validation fold of a devmap run (docs/spec/tasks.md#device-mapping): where its examples come from
(:class:`DevmapSource`), its splits, its training by the engine (:func:`train_fold`) and its test
(:func:`test_fold`, :func:`fold_predictions`), and the ``result.json`` a finished fold leaves (:func:`fold_result`).

What the folds read of a run's options is the run's :class:`~programl.tasks.devmap.spec.DevmapOptions` (and, to
train, its :class:`~programl.tasks.devmap.spec.DevmapRunOptions`): a run's ``config.json`` read back by ``programl
evaluate devmap`` gives the same object as the command line that trained it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from programl.datasets import DevMap, EncodeVocabulary, Vocabulary
from programl.exceptions import ProgramlError
from programl.loader import NodeBudgetBatchSampler, make_loader
from programl.models.build import build_model
from programl.tasks.devmap.report import devmap_metrics
from programl.tasks.devmap.spec import DevmapOptions, DevmapRunOptions, DevmapSpec
from programl.tasks.options import TaskRun
from programl.training import (
    Budget,
    Distributed,
    Schedule,
    Trainer,
    TrainingTask,
    UsageError,
    load_checkpoint,
    shared_data,
    write_json,
)
from programl.training.engine import epoch_path, evaluate

__all__ = [
    "DevmapSource",
    "better",
    "find_source_dir",
    "fold_predictions",
    "fold_result",
    "fold_result_of",
    "network",
    "plan",
    "predict",
    "splits",
    "static_mapping",
    "test_fold",
    "train_fold",
]

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class DevmapSource:
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

    @classmethod
    def of(
        cls, options: DevmapOptions, root: str | os.PathLike, source_dir: str | os.PathLike, *, jobs=None, log=False
    ) -> DevmapSource:
        """The examples a run of ``options`` reads from the DevMap root ``root`` (``~`` expanded) and the raw files
        of ``source_dir``."""
        return cls(
            Path(os.path.expanduser(root)),
            Path(source_dir),
            options.variant,
            options.folds,
            options.fold_seed,
            subset=options.subset,
            jobs=jobs,
            log=log,
            numbers_and_types=options.numbers_and_types,
        )

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


def find_source_dir(run: DevmapRunOptions) -> Path:
    """Where the raw files come from: ``--source-dir`` (which must hold them), ``DATA_DIR/raw`` with ``--download``
    (DevMap downloads them there), else the shared research data, else ``DATA_DIR/raw`` when it holds them."""
    raw = Path(os.path.expanduser(run.data_dir)) / "raw"
    shared = shared_data("devmap")
    if run.source_dir:
        directory = Path(run.source_dir)
        # a named directory without the files is an error, not a download
        DevMap.check_raw_files(directory, verify=False)
    elif run.download:
        directory = raw
    elif shared is not None and (shared / "cgo17-amd.csv").is_file():
        directory = shared
    elif (raw / "cgo17-amd.csv").is_file():
        directory = raw
    else:
        raise UsageError("no devmap source directory: give --source-dir DIR, or --download")
    return directory.resolve()


def plan(dataset: DevMap, options: DevmapOptions, shuffle: bool = False, seed: int = 0, epoch: int = 0):
    """Batches of ``dataset`` (at most ``--batch-nodes`` nodes and ``--batch-graphs`` graphs), in an order seeded by
    (seed, epoch) when shuffled; training batches never hold a single graph (the auxiliary head's BatchNorm needs
    two)."""
    sampler = NodeBudgetBatchSampler(
        dataset.sizes,
        options.batch_nodes,
        shuffle=shuffle,
        seed=seed,
        max_graphs=options.batch_graphs,
        min_graphs=2 if shuffle else 1,
    )
    sampler.set_epoch(epoch)
    return [[int(j) for j in batch] for batch in sampler.plan()]


def predict(dataset: DevMap, model, options: DevmapOptions, device) -> dict[str, Any]:
    """Evaluate on every example of ``dataset`` (a split, its vocabulary transform set): :meth:`Predictions.compute`,
    and ``rows``: the examples' indices in the platform's data set (``dataset.indices()``), in batch order."""
    batches = plan(dataset, options)
    predicted = evaluate(Scorer(), model, make_loader(dataset, batches), device=device).compute()
    indices = np.asarray(dataset.indices(), dtype=np.int64)
    predicted["rows"] = indices[np.asarray([j for batch in batches for j in batch], dtype=np.int64)]
    return predicted


def static_mapping(labels: np.ndarray) -> int:
    """The static mapping: the device that is fastest for most of ``labels`` (the training rows)."""
    return int(np.bincount(labels, minlength=2).argmax())


def splits(labels: np.ndarray, folds: int, seed: int) -> list:
    """The cross-validation splits of a platform's examples (``labels``: their ``y``), those of :class:`DevMap`'s
    ``split``/``fold``; too many folds for the kernels is a usage error, not a traceback."""
    smallest = int(np.bincount(labels, minlength=2).min()) if len(labels) else 0
    if folds > smallest:
        raise UsageError(f"--folds {folds}: the smaller class has {smallest} kernels, and every fold needs one")
    return DevMap.cross_validation_splits(labels, folds, seed)


# ---------------------------------------------------------------------------------------------------------------
# Model


def network(config: Mapping[str, Any], vocabulary_size: int):
    """The network of ``config`` (a run's options as ``config.json`` keeps them: the paper's model, or
    :class:`~programl.models.PooledReadoutClassifier` for other readouts): the one description of it
    (:meth:`DevmapSpec.model_spec <programl.tasks.devmap.spec.DevmapSpec.model_spec>`, what export writes), built by
    :func:`~programl.models.build.build_model`."""
    return build_model(DevmapSpec().model_spec(config, vocabulary_size))


#: What :class:`Predictions` keeps of every example, in batch order.
_PREDICTED = ("labels", "runtimes", "predictions", "probabilities")


class Predictions:
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

    def load_state_dict(self, state: dict[str, Any]) -> Predictions:
        """Replace what is accumulated by :meth:`state_dict`'s; returns self."""
        self.total_loss, self.count = float(state["total_loss"]), int(state["count"])
        for key in _PREDICTED:
            setattr(self, key, [t.cpu().numpy() for t in state[key]])
        return self

    def all_reduce(self, reduce_sum) -> Predictions:  # noqa: ARG002 - devmap trains in one process
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


def better(candidate: tuple[float, float], best: tuple[float, float] | None) -> bool:
    """Higher validation accuracy wins; equal accuracy: lower validation loss; equal both: the earlier epoch."""
    return best is None or candidate[0] > best[0] or (candidate[0] == best[0] and candidate[1] < best[1])


# ---------------------------------------------------------------------------------------------------------------
# Training


class Scorer(TrainingTask):
    """The step that trains and evaluates a devmap model: cross-entropy of the collated batch's ``y``, the batch's
    labels, runtimes and predictions kept by :class:`Predictions`."""

    def new_metrics(self) -> Predictions:
        return Predictions()

    def step(self, model, batch, metrics: Predictions):
        output = model(batch)
        loss = model.loss(output, batch.y)
        metrics.update(output, batch, loss)
        return loss


class _FoldTask(Scorer):
    """One cross-validation fold for the engine (docs/spec/tasks.md#device-mapping): the fold's training and validation
    examples (encoded by its vocabulary), Adam, dropout re-seeded per epoch, batches in an order seeded by (fold seed,
    epoch), the epoch chosen by :func:`better`."""

    curve_metrics = ("loss", "accuracy", "f1")

    def __init__(
        self, train: DevMap, val: DevMap, options: DevmapOptions, fold_dir: Path, vocabulary_size: int
    ) -> None:
        self.train_data, self.val_data = train, val
        self.options, self.vocabulary_size = options, vocabulary_size
        self.static_device = static_mapping(train.y.numpy())
        self.init_seed = options.seed * 1000 + train.fold
        self.name = f"{fold_dir.parent.name} fold {train.fold}"
        self.curve_title = f"devmap {fold_dir.parent.name}, fold {train.fold}"
        self.checkpoint_extra = {"config": options.config(), "fold": train.fold}

    def build(self, device):
        model = network(self.options.config(), self.vocabulary_size)
        train = [self.train_data[i] for i in range(len(self.train_data))]
        if self.options.aux_bins:  # thresholds from the training rows only (a resumed run reloads them)
            model.fit_aux(torch.cat([d.graph_x.view(1, -1) for d in train]))
        if self.options.text_counts:  # scales from the training rows only, as the thresholds
            batch = torch.cat([torch.full((d.num_nodes,), g, dtype=torch.long) for g, d in enumerate(train)])
            model.fit_text_counts(torch.cat([d.x for d in train]), batch, len(train))
        model = model.to(device)
        return model, torch.optim.Adam(model.parameters(), lr=self.options.lr, weight_decay=self.options.weight_decay)

    def epoch_seed(self, epoch: int, rank: int) -> int:  # noqa: ARG002 - one process
        return self.init_seed * 1009 + epoch

    def plan(self, pass_index: int) -> list[list[int]]:
        return plan(self.train_data, self.options, True, self.init_seed, pass_index)

    def val_plan(self) -> list[list[int]]:
        return plan(self.val_data, self.options)

    def epoch_metrics(self, computed: dict[str, Any]) -> dict[str, float]:
        metrics = devmap_metrics(computed["labels"], computed["predictions"], computed["runtimes"], self.static_device)
        return {"loss": computed["loss"], "accuracy": metrics["accuracy"], "f1": metrics["f1"]}

    def selection(self, val: dict[str, Any]) -> tuple[float, float]:
        return (val["accuracy"], val["loss"])

    def better(self, candidate: tuple[float, ...], best: tuple[float, ...]) -> bool:
        return better(candidate, best)


def train_fold(
    source: DevmapSource,
    platform: str,
    fold: int,
    opts: TaskRun[DevmapOptions, DevmapRunOptions],
    fold_dir: Path,
    device,
) -> dict[str, Any]:
    """Train one fold (resuming from ``last.pt`` unless ``--restart``), test the chosen epoch's model, write
    ``result.json``; returns it."""
    options = opts.model
    fold_dir.mkdir(parents=True, exist_ok=True)
    train = source.dataset(platform, "train", fold)
    vocabulary = train.vocabulary()  # count-ordered, ties broken by text (docs/spec/tasks.md#device-mapping)
    vocabulary.save(fold_dir / "vocab.csv")
    train.transform = EncodeVocabulary(vocabulary, train.texts)
    val = source.fold_dataset(platform, "val", fold, vocabulary)
    task = _FoldTask(train, val, options, fold_dir, len(vocabulary))
    fit = Trainer(
        task,
        fold_dir,
        Budget(epochs=options.epochs),
        dist=Distributed(device=device),
        resume=not opts.run.restart,
        schedule=Schedule.of(options),
        show=not opts.run.quiet,
        bar="epochs",
        plot_each_epoch=False,
        keep_epochs_from=averaged_epochs(options)[0] if options.average_last else None,
        workers=opts.run.workers,
    ).run()
    result = test_fold(source, platform, fold, options, fold_dir, device, task.static_device)
    result.update(best_epoch=fit.best_epoch, val_accuracy=fit.best[0] if fit.best else None, epochs=options.epochs)
    if options.average_last:
        result["averaged_epochs"] = list(averaged_epochs(options))
    write_json(fold_dir / "result.json", result)
    return result


def averaged_epochs(options: DevmapOptions) -> range:
    """The epochs whose models ``--average-last N`` averages: the last N of the run's ``epochs``."""
    return range(options.epochs - options.average_last + 1, options.epochs + 1)


# ---------------------------------------------------------------------------------------------------------------
# Test


def fold_predictions(source: DevmapSource, platform: str, fold: int, options: DevmapOptions, fold_dir: Path, device):
    """The test fold predicted by the fold's ``best.pt``, or with ``--average-last N`` by the mean class probabilities
    of its last N epochs' models (``epoch_<NNN>.pt``): :func:`predict`'s (rows in batch order). The node texts are
    encoded by the fold's ``vocab.csv``, the vocabulary it was trained with."""
    vocabulary = Vocabulary.load(fold_dir / "vocab.csv")
    test = source.fold_dataset(platform, "test", fold, vocabulary)
    model = network(options.config(), len(vocabulary)).to(device)
    if not options.average_last:
        load_checkpoint(fold_dir / "best.pt", model=model, map_location=device, restore_rng=False)
        return predict(test, model, options, device)
    snapshots = [epoch_path(fold_dir, epoch) for epoch in averaged_epochs(options)]
    missing = [path.name for path in snapshots if not path.is_file()]
    if missing:
        raise ProgramlError(f"{fold_dir}: --average-last needs {', '.join(missing)} (train the fold to its last epoch)")
    predicted = []
    for path in snapshots:
        load_checkpoint(path, model=model, map_location=device, restore_rng=False)
        predicted.append(predict(test, model, options, device))
    probabilities = np.mean([p["probabilities"] for p in predicted], axis=0)
    return {
        **predicted[0],
        "loss": float(np.mean([p["loss"] for p in predicted])),
        "predictions": probabilities.argmax(-1),
        "probabilities": probabilities,
    }


def fold_result_of(fold: int, predicted: dict[str, Any], static_device: int) -> dict:
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


def test_fold(
    source: DevmapSource, platform: str, fold: int, options: DevmapOptions, fold_dir: Path, device, static: int
) -> dict:
    """Predict the test fold with ``best.pt`` (or the averaged epochs); returns its metrics and predictions."""
    return fold_result_of(fold, fold_predictions(source, platform, fold, options, fold_dir, device), static)


def fold_result(fold_dir: Path) -> dict | None:
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
