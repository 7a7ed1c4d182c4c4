"""POJ-104 algorithm classification: a graph-level GGNN over 104 classes (SPEC §6.6, §7.4).

Data (:mod:`programl.data.poj104`): the deduplicated programs, compiled by clang-22 at one or more of the 8
optimisation settings, split 3:1:1 per class by program (seeded); ``--per-class N`` trains on a subset (N programs
per class in 3:1:1 proportion, its test programs a subset of the full test split). The 1,000 labelled legacy IR
files are an extra test set.

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
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from google.protobuf.message import DecodeError

from programl.data import poj104
from programl.data.batching import NodeBudgetBatchSampler
from programl.data.graph_pack import graph_pack_meta, load_graph_pack, save_graph_pack
from programl.data.poj104 import NUM_CLASSES
from programl.data.vocabulary import Vocabulary
from programl.datasets.transforms import TextTable
from programl.exceptions import ProgramlError
from programl.io.pyg import to_pyg
from programl.models import AccuracyAccumulator, RGCNGraphClassifier
from programl.models.build import build_model
from programl.proto import ProgramGraph
from programl.tasks.classifyapp.spec import (
    ClassifyappOptions,
    ClassifyappSpec,
    add_evaluate_arguments,
    add_train_arguments,
)
from programl.tasks.entry import run_task_module
from programl.tasks.options import SCHEDULE_DEFAULTS
from programl.tasks.run_options import check_options
from programl.training import (
    Budget,
    RunLock,
    Schedule,
    Trainer,
    TrainingTask,
    UsageError,
    check_same_run,
    compute_threads,
    configure_logging,
    configure_threads,
    init_distributed,
    load_checkpoint,
    plot_confusion_matrix,
    progress,
    read_run_config,
    shared_data,
    unwrap,
    write_json,
)
from programl.training.engine import evaluate
from programl.training.loader import make_loader

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

#: Test error % on POJ-104 (ICML table, SPEC §7.4).
PUBLISHED_ERROR = {"TBCNN": 6.00, "NCC (inst2vec)": 5.17, "XFG": 4.29, "ProGraML": 3.38}


#: What ``evaluate`` reads of a run's options (those of runs written before the schedule options, too).
_CONFIG_KEYS = tuple(k for k in ClassifyappOptions.keys() if k not in SCHEDULE_DEFAULTS)


# ---------------------------------------------------------------------------------------------------------------
# Models


def rgcn_graph_classifier(vocabulary_size: int, num_classes: int, **options):
    """:class:`~programl.models.RGCNGraphClassifier` (``--model rgcn``), under its former name."""

    return RGCNGraphClassifier(vocabulary_size, num_classes, **options)


def _make_model(config: dict[str, Any], vocabulary_size: int):
    """The network of ``config``: the one description of it (:meth:`ClassifyappSpec.model_spec
    <programl.tasks.classifyapp.spec.ClassifyappSpec.model_spec>`, what export writes), built by
    :func:`~programl.models.build.build_model`."""

    return build_model(ClassifyappSpec().model_spec(config, vocabulary_size))


# ---------------------------------------------------------------------------------------------------------------
# Data


def _sources(args: argparse.Namespace) -> tuple[Path, Path | None]:
    source = Path(args.source) if args.source else shared_data("poj104")
    if source is None:
        raise UsageError("no POJ-104 source: give --source PATH (poj104.tar.xz or a codexglue/ directory)")
    if args.no_legacy:
        return source, None
    legacy = Path(args.legacy_source) if args.legacy_source else shared_data("legacy-ir")
    return source, legacy


def _text_table(*entries) -> TextTable:
    """A :class:`~programl.datasets.transforms.TextTable`: every new text gets the next id, so :func:`to_pyg` never
    sees an unknown text (imported here: torch_geometric is not needed for ``--help``)."""

    return TextTable(*entries)


class _Split(list):
    """Graphs of one split as PyG ``Data`` (``x`` = ids into the global text table until mapped), and their node
    counts (:attr:`sizes`, for batching)."""

    @property
    def data(self) -> list:
        return self

    @classmethod
    def of(cls, data: list) -> _Split:
        """The split of these graphs (their node counts taken for batching)."""
        split = cls(data)
        split.sizes = np.array([d.num_nodes for d in data], dtype=np.int64)
        return split


def _read_graphs(paths: list[Path], table: TextTable, description: str, enabled: bool) -> _Split:

    data = []
    for path in progress(paths, len(paths), description, enabled, unit="graph"):
        try:
            d = to_pyg(ProgramGraph.FromString(path.read_bytes()), table)
        except (DecodeError, ValueError, IndexError) as error:  # a damaged graph file: one line that names it
            raise ProgramlError(f"{path}: not a readable ProgramGraph ({error}); delete it to build it again") from None
        for key in list(d.keys()):
            if key not in ("x", "edge_index", "edge_flow", "edge_pos", "node_type", "graph_y"):
                del d[key]
        data.append(d)
    return _Split.of(data)


def _apply_vocabulary(splits: list[_Split], table: TextTable, vocabulary) -> None:

    oov = len(vocabulary)
    texts = sorted(table, key=table.__getitem__)
    mapping = torch.tensor([vocabulary.get(t, oov) for t in texts], dtype=torch.long)
    for split in splits:
        for d in split.data:
            d.x = mapping[d.x]


def _vocabulary_from(train: _Split, table: TextTable):

    counts = np.zeros(len(table), dtype=np.int64)
    for d in train.data:
        counts += np.bincount(d.x.numpy(), minlength=len(table))
    texts = sorted(table, key=table.__getitem__)
    return Vocabulary.from_counts({t: int(c) for t, c in zip(texts, counts) if c > 0})


def _sampler(sizes: np.ndarray, config: dict[str, Any], shuffle: bool) -> NodeBudgetBatchSampler:
    """Batches of at most ``batch_graphs`` graphs and ``batch_nodes`` nodes (an oversized graph alone), in an order
    seeded by (seed, epoch) when shuffled."""
    return NodeBudgetBatchSampler(
        sizes, config["batch_nodes"], shuffle=shuffle, seed=config["seed"], max_graphs=config["batch_graphs"]
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


class _ClassifyappTask(TrainingTask):
    """POJ-104 for the engine (SPEC §6.6): graph batches in an order seeded by (seed, epoch), dropout re-seeded per
    epoch and process, AdamW, top-1 accuracy; the epoch of the best validation accuracy."""

    name = "classifyapp"
    curve_metrics = ("loss", "accuracy", "error")
    curve_title = "POJ-104"

    def __init__(self, config: dict[str, Any], vocabulary_size: int, train=None, val=None):
        self.config, self.vocabulary_size = config, vocabulary_size
        self.train_data, self.val_data = train, val
        self.init_seed = config["seed"]
        self.checkpoint_extra = {"config": config}

    def build(self, device):

        model = _make_model(self.config, self.vocabulary_size).to(device)
        return model, torch.optim.AdamW(
            model.parameters(), lr=self.config["lr"], weight_decay=self.config["weight_decay"]
        )

    def epoch_seed(self, epoch: int, rank: int) -> int:
        return self.config["seed"] * 100_003 + epoch * 101 + rank

    def plan(self, pass_index: int) -> list[list[int]]:
        sampler = _sampler(self.train_data.sizes, self.config, shuffle=True)
        sampler.set_epoch(pass_index)
        return sampler.plan()

    def val_plan(self) -> list[list[int]]:
        return _sampler(self.val_data.sizes, self.config, shuffle=False).plan()

    def new_metrics(self):
        return AccuracyAccumulator()

    def step(self, model, batch, metrics):
        output = model(batch)
        loss = unwrap(model).loss(output, batch.graph_y)
        metrics.update(output.logits, batch.graph_y, loss.detach())
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


def _check(args: argparse.Namespace) -> None:
    check_options(args)
    ClassifyappOptions.from_args(args)  # the options' own ranges
    if args.hidden < 2 or args.hidden % 2:
        raise UsageError("--hidden must be an even number >= 2")


def _prepare_data(args, config, data_dir: Path, dist, show: bool) -> tuple[dict[str, list[Path]], dict[str, Any]]:
    """Build what is missing (rank 0), and return the graph files of each split and the scope of the run."""

    source, legacy = _sources(args)
    programs = poj104.read_programs(source, verify=not args.no_verify)
    split = poj104.subset_split(poj104.load_split(data_dir, programs, config["split_seed"]), config["per_class"])
    if dist.is_main and not args.no_build:
        wanted = set(split["train"]) | set(split["val"]) | set(split["test"])
        selected = [p for p in programs if p.id in wanted]
        report = poj104.build_poj104(
            source,
            data_dir,
            config["settings"],
            programs=selected,
            jobs=args.jobs or None,
            progress=_build_progress if show else None,
        )
        if show:
            logger.info(
                f"POJ-104 graphs: {report.built} built, {report.skipped} up to date, {len(report.failed)} "
                "failed (do not compile)"
            )
        if legacy is not None:
            poj104.build_legacy(legacy, data_dir, jobs=args.jobs or None)
    dist.barrier()
    files: dict[str, list[Path]] = {}
    scope: dict[str, Any] = {"programs": {}, "graphs": {}, "missing": {}}
    for name in ("train", "val", "test"):
        found, missing = poj104.poj104_examples(data_dir, split[name], config["settings"])
        files[name] = found
        scope["programs"][name] = len(split[name])
        scope["graphs"][name] = len(found)
        scope["missing"][name] = len(missing)
    files["legacy"] = poj104.legacy_examples(data_dir) if legacy is not None else []
    scope["graphs"]["legacy"] = len(files["legacy"])
    if not files["train"] or not files["val"]:
        raise ProgramlError(f"{data_dir}: no training or validation graphs (build them first, without --no-build)")
    return files, scope


#: The options that decide which graphs a run reads (a graph pack records them).
_DATA_KEYS = ("settings", "per_class", "split_seed")


def _read_splits(
    args, config, data_dir: Path, pack: Path | None, dist, show: bool
) -> tuple[dict[str, _Split], TextTable, dict]:
    """The graphs of every split (train, val, test, legacy), their text table and the scope of the run: from
    the pack when that file exists, else from the graph files (then written to the pack, when one is given)."""

    if pack is not None and pack.is_file():
        graphs, texts, meta = load_graph_pack(pack)
        if meta.get("task") != "classifyapp" or set(graphs) != {"train", "val", "test", "legacy"}:
            raise UsageError(f"--pack {pack}: not a graph pack of programl train classifyapp")
        changed = [key for key in _DATA_KEYS if meta.get(key) != config[key]]
        if changed:
            raise UsageError(f"--pack {pack} holds other graphs ({', '.join(changed)} differ): use another --pack")
        if args.no_legacy:
            graphs["legacy"] = []
        if show:
            logger.info(f"graphs from the pack {pack}: " + ", ".join(f"{len(g)} {n}" for n, g in graphs.items()))
        table = _text_table((text, i) for i, text in enumerate(texts))
        splits = {name: _Split.of(g) for name, g in graphs.items()}
        return splits, table, meta["scope"]
    files, scope = _prepare_data(args, config, data_dir, dist, show)
    table = _text_table()
    splits = {name: _read_graphs(paths, table, f"reading {name}", show) for name, paths in files.items()}
    if pack is not None and dist.is_main:
        meta = {"task": "classifyapp", "data_dir": str(data_dir), "scope": scope, **{k: config[k] for k in _DATA_KEYS}}
        texts = sorted(table, key=table.__getitem__)
        save_graph_pack(pack, {name: split.data for name, split in splits.items()}, texts, meta)
        if show:
            logger.info(f"wrote the graph pack {pack} ({pack.stat().st_size / 1e6:.0f} MB)")
    return splits, table, scope


def _build_progress(items, total, description):
    return progress(items, total, description, unit="program")


def train_main(args: argparse.Namespace) -> int:
    """``programl train classifyapp`` (module docstring)."""
    _check(args)
    configure_threads(args.threads)
    dist = init_distributed(args.device)
    configure_logging(args.quiet, dist.is_main)
    try:
        with RunLock(args.run_dir, enabled=dist.is_main):
            return _train(args, dist)
    finally:
        dist.shutdown()


def _train(args: argparse.Namespace, dist) -> int:
    """The training run of :func:`train_main`, in a locked run directory."""
    show = dist.is_main and not args.quiet
    options = ClassifyappOptions.from_args(args)
    config = options.config()
    run_dir = Path(args.run_dir)
    data_dir = Path(os.path.expanduser(args.data_dir))
    pack = Path(os.path.expanduser(args.pack)) if args.pack else None
    if pack is not None and pack.is_file():
        # the graphs' own directory, wherever the pack is read: a run moved to a GPU node and back stays one run
        data_dir = Path(graph_pack_meta(pack).get("data_dir", data_dir))
    resuming = (run_dir / "last.pt").is_file() and not args.restart
    if resuming:
        check_same_run(
            run_dir, "classifyapp", config, paths={"data_dir": data_dir}, ignore=("epochs",), defaults=SCHEDULE_DEFAULTS
        )
    splits, table, scope = _read_splits(args, config, data_dir, pack, dist, show)
    if resuming:
        vocabulary = _load_vocabulary(run_dir / "vocab.csv")
    else:
        vocabulary = _vocabulary_from(splits["train"], table)
        if dist.is_main:
            run_dir.mkdir(parents=True, exist_ok=True)
            vocabulary.save(run_dir / "vocab.csv")
    _apply_vocabulary(list(splits.values()), table, vocabulary)
    task = _ClassifyappTask(config, len(vocabulary), splits["train"], splits["val"])
    budget = Budget(epochs=args.epochs, time_limit=args.time_limit, time_rule="before")
    trainer = Trainer(
        task,
        run_dir,
        budget,
        dist=dist,
        resume=not args.restart,
        show=show,
        checkpoint_minutes=args.checkpoint_minutes,
        schedule=Schedule.of(options),
        init_from=options.init_from,
        init_vocabulary=vocabulary,
        workers=args.workers,
    ).start()
    if dist.is_main:  # once the run is known to resume (or start) well
        write_json(
            run_dir / "config.json",
            {
                "task": "classifyapp",
                "model": config,
                "data_dir": str(data_dir),
                "scope": scope,
                "world_size": dist.world_size,
            },
        )
    fit = trainer.run()
    result = _evaluate(
        run_dir,
        "best",
        splits,
        config,
        len(vocabulary),
        dist,
        show,
        ("test", "legacy") if len(splits["legacy"]) else ("test",),
        args.workers,
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
    splits: dict[str, _Split],
    config,
    vocabulary_size: int,
    dist,
    show: bool,
    names: tuple[str, ...],
    workers: int = 0,
    out_dir: Path | None = None,
) -> dict[str, Any]:
    """Top-1 error of ``<which>.pt`` on the named splits; the test confusion matrix as a PNG in ``out_dir`` (default:
    ``run_dir``; rank 0)."""
    task = _ClassifyappTask(config, vocabulary_size)
    model = _make_model(config, vocabulary_size).to(dist.device)
    state = load_checkpoint(run_dir / f"{which}.pt", model=model, map_location=dist.device, restore_rng=False)
    out: dict[str, Any] = {"checkpoint": which, "checkpoint_epoch": state["epoch"]}
    for name in names:
        split = splits[name]
        if not len(split):
            continue
        loader = make_loader(split, _sampler(split.sizes, config, shuffle=False).plan(), workers, dist.device)
        # every process evaluates everything: confusion matrices need all predictions in one place
        scored = evaluate(task, model, loader, device=dist.device, metrics=_Collecting(), description=name, show=show)
        result = scored.compute()
        out[name] = {
            "error": result["error"],
            "accuracy": result["accuracy"],
            "loss": result["loss"],
            "count": result["count"],
        }
        if name == "test" and dist.is_main:
            cm = np.zeros((NUM_CLASSES, NUM_CLASSES), dtype=np.int64)
            np.add.at(cm, (result["targets"], result["predictions"]), 1)
            plot_confusion_matrix(
                cm,
                (out_dir or run_dir) / "confusion.png",
                labels=[str(i + 1) for i in range(NUM_CLASSES)],
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
    return "classifyapp: " + "; ".join(parts) + f"  [published: {paper}]"


# ---------------------------------------------------------------------------------------------------------------
# Evaluation


def evaluate_main(args: argparse.Namespace) -> int:
    """``programl evaluate classifyapp``: top-1 error of a checkpoint on the test / validation / legacy graphs."""

    check_options(args)
    configure_threads(args.threads)
    dist = init_distributed(args.device)
    configure_logging(args.quiet, dist.is_main)
    try:
        show = dist.is_main and not args.quiet
        run_dir = Path(args.run_dir)
        saved = read_run_config(run_dir, "classifyapp", required=_CONFIG_KEYS)
        config = saved["model"]
        if not (args.data_dir or saved.get("data_dir")):
            raise UsageError(f"{run_dir / 'config.json'} names no data directory: give --data-dir DIR")
        data_dir = Path(os.path.expanduser(args.data_dir or saved["data_dir"]))
        split_dir = data_dir / "splits" / f"seed{config['split_seed']}"
        if not split_dir.is_dir():
            raise ProgramlError(f"{split_dir}: missing (the run's split)")
        split = poj104.subset_split(
            {n: (split_dir / f"{n}.txt").read_text().split() for n in ("train", "val", "test")}, config["per_class"]
        )
        names = ("test", "val", "legacy") if args.split == "all" else (args.split,)
        files = {n: poj104.poj104_examples(data_dir, split[n], config["settings"])[0] for n in names if n != "legacy"}
        if "legacy" in names:
            files["legacy"] = poj104.legacy_examples(data_dir)
        vocabulary = _load_vocabulary(run_dir / "vocab.csv")
        table = _text_table()
        splits = {n: _read_graphs(paths, table, f"reading {n}", show) for n, paths in files.items()}
        _apply_vocabulary(list(splits.values()), table, vocabulary)
        out_dir = Path(args.out) if args.out else run_dir
        with RunLock(out_dir, enabled=dist.is_main):
            result = _evaluate(
                run_dir, args.checkpoint, splits, config, len(vocabulary), dist, show, names, args.workers, out_dir
            )
            if dist.is_main:
                write_json(out_dir / f"evaluation_{args.checkpoint}.json", result)
                print(_result_line(result))
        return 0
    finally:
        dist.shutdown()


def main(argv: list[str] | None = None) -> int:
    """``python -m programl.tasks.classifyapp {train,evaluate} ...`` (what ``torchrun -m`` runs: ``__main__.py``)."""
    return run_task_module(ClassifyappSpec(), sys.modules[__name__], argv)
