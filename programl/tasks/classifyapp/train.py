"""POJ-104 algorithm classification: a graph-level GGNN over 104 classes (docs/spec/tasks.md#algorithm-classification,
docs/spec/tasks.md#poj-104-table).

Data: the data set :class:`programl.datasets.POJ104` is the only way in (``--data-dir`` is its root; it builds its
graphs itself): the deduplicated programs, compiled by clang-22 at one or more of the 8 optimisation
settings (``--eval-settings``: the validation and test splits at others, e.g. variants for training and -O0 for
choosing and scoring), split 3:1:1 per class by program (seeded); ``--per-class N`` trains on a subset (N programs
per class in 3:1:1 proportion, its test programs a subset of the full test split). The 1,000 labelled legacy IR
files are an extra test set (``POJ104(root, "legacy")``). Node texts reach the model through the transform
:class:`~programl.datasets.EncodeVocabulary` of the training split's vocabulary. The data set root's
``processed/poj104-*.pt`` and ``.json`` files are all a run needs of its data: copied to another machine's root they
train there with no source, clang or graph file (a GPU machine), and a run resumed from such a copy is the same run
(``config.json`` records the files' sha256 beside ``data_dir``). A ``--data-dir`` written before this layout
(``graphs/``, ``manifest.jsonl`` at its top) keeps its graphs where they are: ``raw/`` and ``processed/`` are added
beside them, nothing is built again.

Model: :class:`~programl.models.GGNNGraphClassifier` as the graph-level branch configures it (``--model ggnn``:
trainable embedding, 8 steps with 4 parameter sets, position gating, optional per-node-type GRUs, graph-state
dropout, gated readout summed per graph -> 104 logits), or :func:`rgcn_graph_classifier` (``--model rgcn``: the
typed R-GCN layer of torch-geometric with a GRU); cross-entropy; AdamW. The vocabulary is made from the training
graphs. The epoch with the best validation accuracy is tested; the report is the top-1 error.

Training runs on the GPU when there is one (``--device``), and on several processes with ``torchrun``::

    torchrun --nproc_per_node 2 -m programl.tasks.classifyapp train --run-dir runs/poj104 ...

(DDP: gloo on CPUs, nccl on GPUs; every process takes its share of each epoch's batches; rank 0 logs, plots and
writes checkpoints). A run resumes from ``last.pt`` when started again with the same ``--run-dir``.

Run directory::

    config.json, vocab.csv              options and vocabulary
    log.jsonl, log.csv, curves.png      per-epoch train / validation loss, accuracy and error
    last.pt, best.pt                    resumption checkpoint, best-validation model
    result.json                         test (and legacy) top-1 error of best.pt, with the scope of the run
    confusion.png                       104 x 104 confusion matrix of the test split
    evaluation_<checkpoint>.json        ``programl evaluate``: each split's error and most confused class pairs
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from programl.datasets import POJ104, EncodeVocabulary, Vocabulary
from programl.exceptions import ProgramlError
from programl.loader import NodeBudgetBatchSampler, make_loader
from programl.models import AccuracyAccumulator, RGCNGraphClassifier
from programl.models.build import build_model
from programl.tasks.classifyapp.spec import (
    ClassifyappEvaluateOptions,
    ClassifyappOptions,
    ClassifyappRunOptions,
    ClassifyappSpec,
    add_evaluate_arguments,
    add_train_arguments,
)
from programl.tasks.entry import run_task_module, start_trainer
from programl.tasks.options import SCHEDULE_DEFAULTS, TaskRun
from programl.training import (
    Budget,
    RunLock,
    TrainingTask,
    UsageError,
    check_same_run,
    compute_threads,
    configure_logging,
    configure_threads,
    init_distributed,
    load_checkpoint,
    plot_confusion_matrix,
    read_run_config,
    shared_data,
    unwrap,
    write_json,
)
from programl.training.engine import evaluate
from programl.util.fs import sha256_file

__all__ = [
    "add_evaluate_arguments",
    "add_train_arguments",
    "PUBLISHED_ERROR",
    "ClassifyappOptions",
    "evaluate_main",
    "main",
    "rgcn_graph_classifier",
    "train_main",
]

logger = logging.getLogger(__name__)

#: Test error % on POJ-104 (ICML table, docs/spec/tasks.md#poj-104-table).
PUBLISHED_ERROR = {"TBCNN": 6.00, "NCC (inst2vec)": 5.17, "XFG": 4.29, "ProGraML": 3.38}


#: How many class pairs ``evaluate`` lists per split (:func:`confused_pairs`).
CONFUSED_PAIRS = 10

#: The options that runs written before them are taken to have had off (``--numbers-and-types``, ``--string-bytes``).
_MODEL_DEFAULTS = ClassifyappOptions.defaults("numbers_and_types", "string_bytes")

#: What ``evaluate`` reads of a run's options (those of runs written before the schedule options, too).
_CONFIG_KEYS = tuple(k for k in ClassifyappOptions.keys() if k not in {**SCHEDULE_DEFAULTS, **_MODEL_DEFAULTS})

#: A run of ``programl train classifyapp``: its options, as the entry point makes them of the command line.
TrainRun = TaskRun[ClassifyappOptions, ClassifyappRunOptions]


# ---------------------------------------------------------------------------------------------------------------
# Models


def rgcn_graph_classifier(vocabulary_size: int, num_classes: int, **options):
    """:class:`~programl.models.RGCNGraphClassifier` (``--model rgcn``), under its former name."""

    return RGCNGraphClassifier(vocabulary_size, num_classes, **options)


def _make_model(config: Mapping[str, Any], vocabulary_size: int):
    """The network of ``config`` (a run's options as ``config.json`` keeps them): the one description of it
    (:meth:`ClassifyappSpec.model_spec <programl.tasks.classifyapp.spec.ClassifyappSpec.model_spec>`, what export
    writes), built by :func:`~programl.models.build.build_model`."""
    return build_model(ClassifyappSpec().model_spec(config, vocabulary_size))


# ---------------------------------------------------------------------------------------------------------------
# Data


#: The run's data sets by name (``train``, ``val``, ``test``, ``legacy``).
Splits = dict[str, POJ104]


def _mirror(path: str | None, shared: str, archive: str, other: str = "") -> Path | None:
    """Where the data set takes ``archive`` from (one of its ``mirrors``): the directory of ``--source`` /
    ``--legacy-source`` (or that directory of programs itself), else the shared research data (None: not found)."""
    if not path:
        return shared_data(shared)
    source = Path(os.path.expanduser(path))
    expected = f"{archive}, its directory{other}"
    if not source.exists():
        raise ProgramlError(f"{source}: missing (expected {expected})")
    if source.is_file():
        if source.name != archive:
            raise UsageError(f"{source}: expected {expected}")
        return source.parent
    return source


def _build_dir(root: Path) -> Path | None:
    """The build directory of a ``--data-dir`` written before the data set layout (its ``graphs/`` and
    ``manifest.jsonl`` at the top: used where they are), else None (``processed/build``)."""
    return root if (root / "manifest.jsonl").is_file() or (root / "graphs").is_dir() else None


def _open_splits(
    root: Path,
    options: ClassifyappOptions,
    names: tuple[str, ...],
    *,
    source: Path | None,
    legacy_source: Path | None,
    build: bool,
    verify: bool,
    jobs: int | None,
    show: bool,
) -> Splits:
    """The data sets ``names`` of the run's options under ``root`` (processed first when needed: the graphs built
    unless ``build`` is False). ``legacy`` is left out when neither its processed files, its graphs nor its archive
    are at hand (as before: the legacy test set is used when it is there).

    Raises:
        UsageError: The main splits need processing and no POJ-104 source is at hand (one line: give --source).
    """
    scope = {
        "size": options.per_class,
        "settings": options.settings,
        "eval_settings": options.eval_settings,
        "seed": options.split_seed,
    }
    common = {"build_dir": _build_dir(root), "build": build, "verify": verify, "jobs": jobs, "log": show}
    numbers = {"numbers_and_types": options.numbers_and_types, "string_bytes": options.string_bytes}
    out: Splits = {}
    main = [name for name in names if name != "legacy"]
    if main:
        processed = POJ104.is_processed(root, **scope, **numbers)
        if source is None and not processed and not POJ104.has_raw_files(root):
            raise UsageError(
                f"{root}: the POJ-104 data set must be processed and no source was found: give --source PATH "
                f"({POJ104.ARCHIVE}, its directory or a codexglue/ directory)"
            )
        mirrors = [source] if source is not None else []
        out.update({name: POJ104(root, name, mirrors=mirrors, **scope, **common, **numbers) for name in main})
    if "legacy" in names:
        built = POJ104.has_legacy_graphs(root, _build_dir(root))
        at_hand = legacy_source is not None or POJ104.has_raw_files(root, "legacy")
        if POJ104.is_processed(root, "legacy", **numbers) or built or (build and at_hand):
            mirrors = [legacy_source] if legacy_source is not None else []
            out["legacy"] = POJ104(root, "legacy", mirrors=mirrors, **{**common, "build": build and at_hand}, **numbers)
    return out


def _scope(splits: Splits) -> dict[str, Any]:
    """The programs, graphs and programs that did not compile of each split (``config.json``, ``result.json``)."""
    scope: dict[str, Any] = {"programs": {}, "graphs": {}, "missing": {}}
    for name in ("train", "val", "test"):
        scope["programs"][name] = len(splits[name].programs)
        scope["graphs"][name] = len(splits[name])
        scope["missing"][name] = len(splits[name].missing)
    scope["graphs"]["legacy"] = len(splits["legacy"]) if "legacy" in splits else 0
    return scope


def _encode(splits: Splits, vocabulary: Vocabulary) -> None:
    """Map every data set's node texts to the run's vocabulary: the transform
    :class:`~programl.datasets.EncodeVocabulary` through the data set's own text table (the legacy files have
    another than the three splits)."""
    for dataset in splits.values():
        dataset.transform = EncodeVocabulary(vocabulary, dataset.texts)


def _data_sha256(train: POJ104) -> str:
    """sha256 of the processed files of the run's splits (by name): the identity of its data, wherever its root."""
    digest = hashlib.sha256()
    for path in train.processed_paths:
        digest.update(f"{Path(path).name} {sha256_file(path)}\n".encode())
    return digest.hexdigest()


def _sampler(sizes: np.ndarray, options: ClassifyappOptions, shuffle: bool) -> NodeBudgetBatchSampler:
    """Batches of at most ``--batch-graphs`` graphs and ``--batch-nodes`` nodes (an oversized graph alone), in an order
    seeded by (seed, epoch) when shuffled."""
    return NodeBudgetBatchSampler(
        sizes, options.batch_nodes, shuffle=shuffle, seed=options.seed, max_graphs=options.batch_graphs
    )


class _Collecting(AccuracyAccumulator):
    """:class:`~programl.models.AccuracyAccumulator` that also keeps every prediction and target (the test's
    confusion matrix)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.predictions: list = []
        self.targets: list = []

    def update(self, logits, target, loss):
        pred = super().update(logits, target, loss)
        self.predictions.append(pred.cpu())
        self.targets.append(target.cpu())
        return pred

    def compute(self) -> dict[str, Any]:
        out = super().compute()
        out["predictions"] = torch.cat(self.predictions).numpy() if self.predictions else np.zeros(0, dtype=np.int64)
        out["targets"] = torch.cat(self.targets).numpy() if self.targets else np.zeros(0, dtype=np.int64)
        return out


def confused_pairs(targets: np.ndarray, predictions: np.ndarray, top: int = CONFUSED_PAIRS) -> list[dict[str, Any]]:
    """The class pairs a model confuses most: each unordered pair's errors in both directions, most first (ties by
    class). Classes are POJ-104's folder names (the label plus one, as ``confusion.png`` names them); ``share`` is the
    pair's part of all errors. POJ-104 holds programs of the same problem under two labels (``docs/results.md`` §7,
    "Where the errors are"): such pairs head this list.

    >>> confused_pairs(np.array([0, 0, 1, 2, 2]), np.array([1, 0, 0, 2, 0]))
    [{'classes': [1, 2], 'count': 2, 'share': 0.6667}, {'classes': [1, 3], 'count': 1, 'share': 0.3333}]
    """
    wrong = targets != predictions
    pairs = Counter((min(t, p), max(t, p)) for t, p in zip(targets[wrong].tolist(), predictions[wrong].tolist()))
    ranked = sorted(pairs.items(), key=lambda item: (-item[1], item[0]))[:top]
    total = sum(pairs.values())
    return [{"classes": [a + 1, b + 1], "count": n, "share": round(n / total, 4)} for (a, b), n in ranked]


def _parameter_groups(model, new_inputs_lr: float | None) -> list[dict[str, Any]]:
    """AdamW's parameter groups: one, or with ``new_inputs_lr`` a second of the optional input embeddings
    (``--numbers-and-types``, ``--string-bytes``: the model's ``init_from_missing_ok`` prefixes) at that rate. The
    warm-up and decay scale both groups alike (the engine keeps each group's base rate)."""
    prefixes = tuple(getattr(model, "init_from_missing_ok", ()))
    named = list(model.named_parameters())
    new = [p for name, p in named if prefixes and name.startswith(prefixes)]
    if new_inputs_lr is None or not new:
        return [{"params": [p for _, p in named]}]
    return [
        {"params": [p for name, p in named if not name.startswith(prefixes)]},
        {"params": new, "lr": new_inputs_lr},
    ]


class _ClassifyappTask(TrainingTask):
    """POJ-104 for the engine (docs/spec/tasks.md#algorithm-classification): graph batches in an order seeded by (seed,
    epoch), dropout re-seeded per epoch and process, AdamW, top-1 accuracy; the epoch of the best validation
    accuracy."""

    name = "classifyapp"
    curve_metrics = ("loss", "accuracy", "error")
    curve_title = "POJ-104"

    def __init__(self, options: ClassifyappOptions, vocabulary_size: int, train=None, val=None):
        self.options, self.vocabulary_size = options, vocabulary_size
        self.train_data, self.val_data = train, val
        self.init_seed = options.seed
        self.checkpoint_extra = {"config": options.config()}

    def build(self, device):
        model = _make_model(self.options.config(), self.vocabulary_size).to(device)
        return model, torch.optim.AdamW(
            _parameter_groups(model, self.options.new_inputs_lr),
            lr=self.options.lr,
            weight_decay=self.options.weight_decay,
        )

    def epoch_seed(self, epoch: int, rank: int) -> int:
        return self.options.seed * 100_003 + epoch * 101 + rank

    def plan(self, pass_index: int) -> list[list[int]]:
        sampler = _sampler(self.train_data.sizes, self.options, shuffle=True)
        sampler.set_epoch(pass_index)
        return sampler.plan()

    def val_plan(self) -> list[list[int]]:
        return _sampler(self.val_data.sizes, self.options, shuffle=False).plan()

    def new_metrics(self):
        return AccuracyAccumulator()

    def step(self, model, batch, metrics):
        output = model(batch)
        loss = unwrap(model).loss(output, batch.y)
        metrics.update(output.logits, batch.y, loss.detach())
        return loss

    def selection(self, val: dict[str, Any]) -> tuple[float, ...]:
        return (val["accuracy"],)

    def record(self, train: dict[str, Any], val: dict[str, Any]) -> dict[str, Any]:
        return {
            **{f"train_{k}": v for k, v in train.items() if k != "count"},
            **{f"val_{k}": v for k, v in val.items() if k != "count"},
        }

    def epoch_line(self, r: dict[str, Any]) -> str:
        return (
            f"epoch {r['epoch']}: train loss {r['train_loss']:.3f} acc {r['train_accuracy']:.3f} | val loss "
            f"{r['val_loss']:.3f} error {100 * r['val_error']:.2f} % ({r['seconds']:.0f} s)"
        )


# ---------------------------------------------------------------------------------------------------------------
# Training


def _check(opts: TrainRun) -> None:
    """Refuse options that do not go together (each option's own range is checked by its field)."""
    if opts.model.hidden < 2 or opts.model.hidden % 2:
        raise UsageError("--hidden must be an even number >= 2")


def train_main(args: argparse.Namespace) -> int:
    """``programl train classifyapp`` (module docstring)."""
    opts = TaskRun.from_args(args, ClassifyappOptions, ClassifyappRunOptions)
    _check(opts)
    configure_threads(opts.run.threads)
    dist = init_distributed(opts.run.device)
    configure_logging(opts.run.quiet, dist.is_main)
    try:
        with RunLock(opts.run.run_dir, enabled=dist.is_main):
            return _train(opts, dist)
    finally:
        dist.shutdown()


def _load_splits(dist, *args, **kwargs) -> Splits:
    """:func:`_open_splits` on the main process first (which processes what is missing), then on the others."""
    splits = _open_splits(*args, **kwargs) if dist.is_main else None
    dist.barrier()
    return splits if splits is not None else _open_splits(*args, **{**kwargs, "show": False})


def _train(opts: TrainRun, dist) -> int:
    """The training run of :func:`train_main`, in a locked run directory."""
    options, run = opts.model, opts.run
    show = dist.is_main and not run.quiet
    config = options.config()
    run_dir = Path(run.run_dir)
    data_dir = Path(os.path.expanduser(run.data_dir))
    resuming = (run_dir / "last.pt").is_file() and not run.restart
    same_run = {"ignore": ("epochs",), "defaults": {**SCHEDULE_DEFAULTS, **_MODEL_DEFAULTS}}
    saved: dict[str, Any] = {}
    if resuming:
        saved = check_same_run(run_dir, "classifyapp", config, **same_run)
        if not saved.get("data_sha256"):  # a run from before data digests: its data is its directory
            check_same_run(run_dir, "classifyapp", config, paths={"data_dir": data_dir}, **same_run)
    splits = _load_splits(
        dist,
        data_dir,
        options,
        ("train", "val", "test") if run.no_legacy else ("train", "val", "test", "legacy"),
        source=_mirror(run.source, "poj104", POJ104.ARCHIVE, " or a codexglue/ directory"),
        legacy_source=None if run.no_legacy else _mirror(run.legacy_source, "legacy-ir", POJ104.LEGACY_ARCHIVE),
        build=not run.no_build,
        verify=not run.no_verify,
        jobs=run.jobs or None,
        show=show,
    )
    if not len(splits["train"]) or not len(splits["val"]):
        raise ProgramlError(f"{data_dir}: no training or validation graphs")
    digest = _data_sha256(splits["train"])
    if saved.get("data_sha256") not in (None, digest):  # other data, unless it is the run's own directory
        check_same_run(run_dir, "classifyapp", config, paths={"data_dir": data_dir}, **same_run)
    scope = _scope(splits)
    if resuming:
        vocabulary = _load_vocabulary(run_dir / "vocab.csv")
    else:
        vocabulary = splits["train"].vocabulary()
        if dist.is_main:
            run_dir.mkdir(parents=True, exist_ok=True)
            vocabulary.save(run_dir / "vocab.csv")
    _encode(splits, vocabulary)
    task = _ClassifyappTask(options, len(vocabulary), splits["train"], splits["val"])
    budget = Budget(epochs=run.epochs, time_limit=run.time_limit, time_rule="before")
    trainer = start_trainer(task, run_dir, budget, opts, dist=dist, show=show, vocabulary=vocabulary)
    if dist.is_main:  # once the run is known to resume (or start) well
        write_json(
            run_dir / "config.json",
            {
                "task": "classifyapp",
                "model": config,
                "data_dir": str(data_dir),
                "data_sha256": digest,
                "scope": scope,
                "world_size": dist.world_size,
            },
        )
    fit = trainer.run()
    result = _evaluate(
        run_dir,
        "best",
        splits,
        options,
        len(vocabulary),
        dist,
        show,
        ("test", "legacy") if "legacy" in splits else ("test",),
        run.workers,
    )
    if dist.is_main:
        result.update(
            best_epoch=fit.best_epoch,
            best_val_accuracy=fit.best[0] if fit.best else None,
            scope=scope,
            train_seconds=round(fit.seconds, 1),
            world_size=dist.world_size,
            threads=compute_threads(dist.device),
            device=str(dist.device),
        )
        write_json(run_dir / "result.json", result)
        print(_result_line(result))
    return 0


def _evaluate(
    run_dir: Path,
    which: str,
    splits: Splits,
    options: ClassifyappOptions,
    vocabulary_size: int,
    dist,
    show: bool,
    names: tuple[str, ...],
    workers: int = 0,
    out_dir: Path | None = None,
) -> dict[str, Any]:
    """Top-1 error of ``<which>.pt`` on the named splits; the test confusion matrix as a PNG in ``out_dir`` (default:
    ``run_dir``; rank 0)."""
    task = _ClassifyappTask(options, vocabulary_size)
    model = _make_model(options.config(), vocabulary_size).to(dist.device)
    state = load_checkpoint(run_dir / f"{which}.pt", model=model, map_location=dist.device, restore_rng=False)
    out: dict[str, Any] = {"checkpoint": which, "checkpoint_epoch": state["epoch"]}
    for name in names:
        split = splits.get(name)
        if split is None or not len(split):
            continue
        loader = make_loader(split, _sampler(split.sizes, options, shuffle=False).plan(), workers, dist.device)
        # every process evaluates everything: confusion matrices need all predictions in one place
        scored = evaluate(task, model, loader, device=dist.device, metrics=_Collecting(), description=name, show=show)
        result = scored.compute()
        out[name] = {
            "error": result["error"],
            "accuracy": result["accuracy"],
            "loss": result["loss"],
            "count": result["count"],
            "confused_pairs": confused_pairs(result["targets"], result["predictions"]),
        }
        if name == "test" and dist.is_main:
            cm = np.zeros((POJ104.NUM_CLASSES, POJ104.NUM_CLASSES), dtype=np.int64)
            np.add.at(cm, (result["targets"], result["predictions"]), 1)
            plot_confusion_matrix(
                cm,
                (out_dir or run_dir) / "confusion.png",
                labels=[str(i + 1) for i in range(POJ104.NUM_CLASSES)],
                title=f"POJ-104 test: {result['count']} graphs, top-1 error {100 * result['error']:.2f} %",
            )
            out[name]["per_class_accuracy"] = (np.diag(cm) / np.maximum(cm.sum(1), 1)).round(4).tolist()
    return out


def _load_vocabulary(path: Path):
    """A run's ``vocab.csv``; a damaged one is a one-line error."""

    try:
        return Vocabulary.load(path)
    except (UnicodeDecodeError, ValueError) as error:
        raise ProgramlError(f"{path}: not a vocabulary ({error})") from None


def _result_line(result: dict[str, Any]) -> str:
    parts = [
        f"{name} top-1 error {100 * result[name]['error']:.2f} % ({result[name]['count']} graphs)"
        for name in ("test", "val", "legacy")
        if name in result
    ]
    paper = ", ".join(f"{k} {v:.2f} %" for k, v in PUBLISHED_ERROR.items())
    lines = ["classifyapp: " + "; ".join(parts) + f"  [published: {paper}]"]
    for name in ("test", "val", "legacy"):
        pairs = result.get(name, {}).get("confused_pairs", [])[:3]
        if pairs:
            most = ", ".join(f"{a}/{b} {p['count']}" for p in pairs for a, b in [p["classes"]])
            lines.append(f"  {name}: most confused class pairs (errors both ways): {most}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# Evaluation


def evaluate_main(args: argparse.Namespace) -> int:
    """``programl evaluate classifyapp``: top-1 error of a checkpoint on the test / validation / legacy graphs."""
    run = ClassifyappEvaluateOptions.from_args(args)
    configure_threads(run.threads)
    dist = init_distributed(run.device)
    configure_logging(run.quiet, dist.is_main)
    try:
        run_dir = Path(run.run_dir)
        saved = read_run_config(run_dir, "classifyapp", required=_CONFIG_KEYS)
        opts = TaskRun(ClassifyappOptions.from_config(saved["model"], run_dir / "config.json"), run)
        if not (run.data_dir or saved.get("data_dir")):
            raise UsageError(f"{run_dir / 'config.json'} names no data directory: give --data-dir DIR")
        return _evaluate_run(opts, dist, run_dir, Path(os.path.expanduser(run.data_dir or saved["data_dir"])))
    finally:
        dist.shutdown()


def _evaluate_run(opts: TaskRun[ClassifyappOptions, ClassifyappEvaluateOptions], dist, run_dir: Path, data_dir: Path):
    """The evaluation of :func:`evaluate_main` (``data_dir``: the run's, unless given)."""
    run = opts.run
    show = dist.is_main and not run.quiet
    names = ("test", "val", "legacy") if run.split == "all" else (run.split,)
    vocabulary = _load_vocabulary(run_dir / "vocab.csv")
    splits = _load_splits(
        dist,
        data_dir,
        opts.model,
        names,
        source=_mirror(run.source, "poj104", POJ104.ARCHIVE, " or a codexglue/ directory"),
        legacy_source=None,
        build=False,
        verify=not run.no_verify,
        jobs=None,
        show=show,
    )
    _encode(splits, vocabulary)
    out_dir = Path(run.out) if run.out else run_dir
    with RunLock(out_dir, enabled=dist.is_main):
        result = _evaluate(
            run_dir, run.checkpoint, splits, opts.model, len(vocabulary), dist, show, names, run.workers, out_dir
        )
        if dist.is_main:
            write_json(out_dir / f"evaluation_{run.checkpoint}.json", result)
            print(_result_line(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m programl.tasks.classifyapp {train,evaluate} ...`` (what ``torchrun -m`` runs: ``__main__.py``)."""
    return run_task_module(ClassifyappSpec(), sys.modules[__name__], argv)
