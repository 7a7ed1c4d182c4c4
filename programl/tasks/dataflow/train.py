"""Learning data-flow analyses: the DeepDataFlow protocol for the typed GGNN (docs/spec/tasks.md#data-flow-protocol,
docs/spec/tasks.md#deepdataflow-table).

Data: a DeepDataFlow data set (``programl dataset build``, or ProGraML's released one) read through
:meth:`programl.datasets.DeepDataFlow.from_directory` and ``torch_geometric``'s ``DataLoader`` (``--workers`` processes
collate the batches the :class:`~programl.loader.NodeBudgetBatchSampler` plans): one example per label record
of the chosen analysis; examples
with more than ``--max-steps`` data-flow steps (30: DDF-30) and graphs with more than ``--max-nodes`` nodes (40,000)
are left out of training and validation.

Model: :class:`~programl.models.DataflowGGNN` (87,070 parameters with a 2,230-entry vocabulary; T = 30 steps), or the
R-GCN alternative (``--model rgcn``); the vocabulary is the data set's ``vocab/programl.csv``.

Protocol (the flag file of the paper's runs): AdamW (lr 2.5e-4, PyTorch's other defaults), batches of up to 10,000
nodes of disjoint graphs, training in "epochs" that end at cumulative numbers of training examples
(``--train-examples``; the paper's 10k, 20k, 30k, 40k, 50k, 100k, 200k, ..., 1M), each followed by validation on a
fixed sample (``--val-examples`` 10,000 records: graphs sorted by name, shuffled with ``random.Random(205)``); the
epoch with the best validation F1 is kept (``best.pt``) and tested at T = 30 on DDF-30, and with the same weights at
T = 60 on DDF-60 and T = 200 on every test example (``--test-steps``). Metrics (docs/spec/tasks.md#metrics):
per batch accuracy and positive-class precision, recall and F1, averaged over batches weighted by node count (the
paper's numbers), beside the precision, recall and F1 of the pooled confusion matrix (``pooled_*``). Validation and test
batches hold 10,000 nodes whatever the training ``--batch-nodes`` (``--eval-batch-nodes``), as the paper scored: the
per-batch F1 depends on the batching, the pooled F1 does not. ``--eval-batch-policy drop`` scores as the original code
did (the example that overflowed a batch was left out, and so were examples over 10,000 nodes).

Not in the paper: ``--step-policy cover`` trains a variant that needs no T. Each training batch
runs as many steps as its longest example needs (its data-flow step count, at least T) plus a margin of
0..``--step-margin`` drawn from the batch (:func:`cover_steps`), so the model learns to reach the analysis's fixed
point and to stay there; validation, and the ``stable`` test added to ``--test-steps``, run each graph until no
node's prediction changed for ``--stable-patience`` steps (after at least T, at most ``--stable-max-steps``:
:meth:`~programl.models.DataflowGGNN.forward_until_stable`). ``--vocabulary`` encodes the data set with another
vocabulary (an exported model's, to ``--init-from`` it on another data set).

Training examples are visited in a seeded order that changes on every pass over the training set (the same seed gives
the same run); a run resumes from ``last.pt`` (written after each epoch and every ``--checkpoint-minutes``) exactly
where it stopped. CPU or GPU automatically (``--device``); several processes with ``torchrun`` (DDP: gloo on CPUs,
nccl on GPUs; each process takes every W-th batch of the common order, rank 0 logs and writes)::

    torchrun --nproc_per_node 2 -m programl.tasks.dataflow train --analysis reachability --dataset ddf22 ...

Run directory::

    config.json, vocab.csv             options and the vocabulary
    log.jsonl, log.csv, curves.png     per epoch: cumulative training examples, train and validation metrics
    last.pt, best.pt                   resumption checkpoint, best-validation-F1 model
    result.json                        test metrics at each T, with counts, times and the machine
    confusion.png                      test confusion matrix at T = 30
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import platform
import sys
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as tdist

from programl.dataflow.names import ANALYSES
from programl.datasets import AddDeadBranches, DeepDataFlow, Vocabulary
from programl.exceptions import ProgramlError
from programl.loader import NodeBudgetBatchSampler, make_loader
from programl.models import MetricsAccumulator
from programl.models.build import build_model
from programl.tasks.dataflow.spec import (
    EVAL_BATCH_NODES,
    TRAIN_SCHEDULE,
    DataflowEvaluateOptions,
    DataflowOptions,
    DataflowRunOptions,
    DataflowSpec,
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
    evaluate,
    init_distributed,
    load_checkpoint,
    plot_confusion_matrix,
    progress,
    read_run_config,
    shard,
    unwrap,
    write_json,
)

__all__ = [
    "add_evaluate_arguments",
    "add_train_arguments",
    "at_least_nodes",
    "ANALYSES",
    "EVAL_BATCH_NODES",
    "DataflowOptions",
    "DataflowScoring",
    "PAPER_DDF30",
    "PAPER_TABLE",
    "cover_steps",
    "TRAIN_SCHEDULE",
    "evaluate_main",
    "main",
    "train_main",
]

#: ProGraML's precision, recall and F1 per analysis and cell (the ICML table, docs/spec/tasks.md#deepdataflow-table):
#: DDF-30 at T=30, DDF-60 at T=60, DDF (every example) at T=200.
PAPER_TABLE = {
    "reachability": {"DDF-30": (0.998, 0.998, 0.998), "DDF-60": (0.997, 0.998, 0.997), "DDF": (0.996, 0.917, 0.943)},
    "dominance": {"DDF-30": (1.000, 1.000, 1.000), "DDF-60": (0.983, 1.000, 0.991), "DDF": (0.066, 0.950, 0.123)},
    "datadep": {"DDF-30": (0.998, 0.997, 0.997), "DDF-60": (0.992, 0.996, 0.993), "DDF": (0.987, 0.949, 0.965)},
    "liveness": {"DDF-30": (0.962, 0.916, 0.937), "DDF-60": (0.931, 0.955, 0.939), "DDF": (0.476, 0.925, 0.625)},
    "subexpressions": {
        "DDF-30": (0.997, 0.996, 0.996),
        "DDF-60": (0.954, 0.999, 0.967),
        "DDF": (0.938, 0.992, 0.959),
    },
}
#: ProGraML on DDF-30: precision, recall, F1.
PAPER_DDF30 = {analysis: cells["DDF-30"] for analysis, cells in PAPER_TABLE.items()}
#: What a run written before the evaluation options existed is resumed with.
_EVAL_DEFAULTS = DataflowOptions.defaults(
    "eval_batch_nodes",
    "eval_batch_policy",
    "root_context",
    "control_floods",
    "meet",
    "dead_branches",
    "step_policy",
    "step_margin",
    "stable_patience",
    "stable_max_steps",
    "min_nodes",
)


# ---------------------------------------------------------------------------------------------------------------
# Pieces


#: A run of ``programl train dataflow`` or ``programl evaluate dataflow``: its options, as the entry point makes
#: them of the command line (the trained run's model options, for an evaluation).
TrainRun = TaskRun[DataflowOptions, DataflowRunOptions]
EvaluateRun = TaskRun[DataflowOptions, DataflowEvaluateOptions]


def _make_model(config: Mapping[str, Any], vocabulary_size: int):
    """The network of ``config`` (a run's options as ``config.json`` keeps them): the one description of it
    (:meth:`DataflowSpec.model_spec <programl.tasks.dataflow.spec.DataflowSpec.model_spec>`, what export writes),
    built by :func:`~programl.models.build.build_model`."""
    return build_model(DataflowSpec().model_spec(config, vocabulary_size))


def _dataset(
    opts: TrainRun | EvaluateRun,
    split: str,
    max_steps: int | None,
    show: bool,
    vocabulary: str | Path | None = None,
):
    """A split of the run's data set (``--dataset``, converted into ``--processed-dir``) for its analysis
    (``vocabulary``: the texts' ids, default the data set's own)."""

    def bar(items, total, description):
        return progress(items, total, f"converting {description}", enabled=show, unit="graph")

    return DeepDataFlow.from_directory(
        opts.run.dataset,
        opts.model.analysis,
        split,
        max_steps=max_steps,
        max_nodes=opts.model.max_nodes,
        vocabulary_path=vocabulary,
        processed_dir=opts.run.processed_dir,
        jobs=max(1, opts.run.jobs),
        progress=bar,
    )


def at_least_nodes(data, min_nodes: int):
    """The examples of ``data`` whose graphs have at least ``min_nodes`` nodes (``--min-nodes``; 0: all)."""
    if not min_nodes:
        return data
    return data.index_select(np.flatnonzero(np.asarray(data.sizes) >= min_nodes).tolist())


def _eval_plan(sizes: np.ndarray, options: DataflowOptions) -> list[list[int]]:
    """Validation and test batches, in stored order: ``--eval-batch-nodes`` (10,000) nodes each, whatever the
    training batches (docs/spec/tasks.md#data-flow-protocol), with the ``--eval-batch-policy``."""
    return NodeBudgetBatchSampler(sizes, options.eval_batch_nodes, policy=options.eval_batch_policy).plan()


def _step_free(options: DataflowOptions) -> bool:
    """Whether ``options`` are a ``--step-policy cover`` model's (runs written before the option read as fixed)."""
    return options.step_policy == "cover"


def cover_steps(step_count: torch.Tensor, num_nodes: int, options: DataflowOptions) -> int:
    """The T of a ``--step-policy cover`` training batch: the most data-flow steps an example of the batch
    needs (at least ``--steps``) plus a margin of 0..``--step-margin``, drawn from the batch itself (its step counts
    and size, and the seed), so a resumed run draws the same margins without any state of its own."""
    counts = step_count.detach().cpu().numpy().astype(np.int64)
    need = max(int(options.steps), int(counts.max()) if counts.size else 0)
    key = np.concatenate([[options.seed, num_nodes], counts]).astype(np.int64).tobytes()
    return need + zlib.crc32(key) % (int(options.step_margin) + 1)


def _metrics(computed: dict[str, Any]) -> dict[str, Any]:
    """The epoch metrics of a :class:`~programl.models.MetricsAccumulator` (``compute()``): the per-batch means as
    ``precision``, ``recall``, ``f1`` ... and the pooled values as ``pooled_*``."""
    return {k.removeprefix("mean_"): v for k, v in computed.items()}


def _parameter_digest(model) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(unwrap(model).state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _machine(device) -> str:

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {torch.get_num_threads()} torch thread(s)"
    except OSError:
        pass
    return f"{platform.machine()}, {torch.get_num_threads()} torch thread(s)"


def _check(opts: TrainRun) -> None:
    """Refuse options that are missing or do not go together (each option's own range is checked by its field)."""
    options, run = opts.model, opts.run
    for name, value in (("analysis", options.analysis), ("dataset", run.dataset)):
        if value is None:
            raise UsageError(f"--{name} is required (or --config with a run's config.json)")
    if options.root_context and options.model != "ggnn":
        raise UsageError("--root-context is an option of the GGNN (--model ggnn)")
    if options.control_floods and options.model != "ggnn":
        raise UsageError("--control-floods is an option of the GGNN (--model ggnn)")
    if options.meet and options.model != "ggnn":
        raise UsageError("--meet is an option of the GGNN (--model ggnn)")
    if options.step_policy == "cover" and options.model not in ("ggnn", "fixpoint"):
        raise UsageError("--step-policy cover is an option of the GGNN and the fixed-point model")
    schedule = options.train_examples
    if any(b <= a for a, b in zip(schedule, schedule[1:])):
        raise UsageError("--train-examples must be positive and increasing")
    _test_sizes(run)


def _run_dir(opts: TrainRun) -> Path:
    """``--run-dir``; its default is ``runs/dataflow/<analysis>``."""
    default = os.path.join("runs", "dataflow")
    run_dir = opts.run.run_dir
    return Path(run_dir if run_dir != default else os.path.join(default, opts.model.analysis))


# ---------------------------------------------------------------------------------------------------------------
# Training


class DataflowScoring(TrainingTask):
    """A data-flow model's step for :func:`~programl.training.evaluate` (and the training step of the tasks): node
    logits at the model's T, at another T, or until stable (``steps="stable"``:
    :meth:`~programl.models.DataflowGGNN.forward_until_stable` with at least ``min_steps`` and at most ``max_steps``
    steps, ``patience`` and ``latch``), the loss and the metrics; :attr:`steps_run` counts the steps and graphs of the
    until-stable batches (their mean steps: :meth:`mean_steps`)."""

    def __init__(self, *, min_steps: int = 30, max_steps: int = 1000, patience: int = 5, latch: bool = False) -> None:
        self.min_steps, self.max_steps, self.patience, self.latch = min_steps, max_steps, patience, latch
        self.steps_run = [0, 0]

    def new_metrics(self):
        return MetricsAccumulator()

    def mean_steps(self) -> float:
        """The mean steps an until-stable graph took since the counts were last reset (``steps_run = [0, 0]``)."""
        return self.steps_run[0] / max(1, self.steps_run[1])

    def step(self, model, batch, metrics, steps: int | str | None = None):
        net = unwrap(model)
        if steps == "stable":
            logits, taken = net.forward_until_stable(
                batch, min_steps=self.min_steps, max_steps=self.max_steps, patience=self.patience, latch=self.latch
            )
            self.steps_run[0] += int(taken.sum())
            self.steps_run[1] += int(taken.numel())
        else:
            logits = model(batch) if steps is None else model(batch, num_steps=steps)
        loss = net.loss(logits, batch.y)
        metrics.update(logits.detach(), batch.y, loss=loss.detach())
        return loss


class _DataflowTask(DataflowScoring):
    """The data-flow protocol for the engine (docs/spec/tasks.md#data-flow-protocol): batches of up to ``batch_nodes``
    nodes in an order seeded by (seed, pass), AdamW, node-level metrics, the epoch of the best validation F1."""

    name = "dataflow"
    curve_metrics = ("loss", "f1", "precision", "recall", "accuracy")

    def __init__(self, options: DataflowOptions, vocabulary_size: int, train=None, val=None, schedule=()) -> None:
        self.options, self.vocabulary_size = options, vocabulary_size
        self.train_data, self.val_data = train, val
        self.init_seed = options.seed
        self.checkpoint_extra = {"config": options.config()}
        super().__init__(min_steps=options.steps, max_steps=options.stable_max_steps, patience=options.stable_patience)
        self.sampler = None
        if train is not None:
            self.sampler = NodeBudgetBatchSampler(
                train.sizes, options.batch_nodes, shuffle=True, seed=options.seed, policy=options.batch_policy
            )
        if schedule:
            self.curve_title = (
                f"{options.analysis}: DDF-{options.max_steps}, T={options.steps} "
                f"(epoch k ends at {schedule[0]:,}..{schedule[-1]:,} examples)"
            )

    def build(self, device):
        model = _make_model(self.options.config(), self.vocabulary_size).to(device)
        return model, torch.optim.AdamW(model.parameters(), lr=self.options.lr, weight_decay=self.options.weight_decay)

    def plan(self, pass_index: int) -> list[list[int]]:
        """A pass's batches of at most ``batch_nodes`` nodes, in an order seeded by (seed, pass)."""
        self.sampler.set_epoch(pass_index)
        return self.sampler.plan()

    def val_plan(self) -> list[list[int]]:
        return _eval_plan(self.val_data.sizes, self.options)

    def step(self, model, batch, metrics, steps: int | str | None = None):
        """Node logits, the loss, the metrics. ``steps``: another T, or ``stable``, in evaluation; by default the
        model's T, or for ``--step-policy cover`` the batch's own T in training (:func:`cover_steps`) and until
        stable in validation."""
        if steps is None and _step_free(self.options):
            steps = (
                "stable" if not unwrap(model).training else cover_steps(batch.step_count, batch.num_nodes, self.options)
            )
        return super().step(model, batch, metrics, steps)

    def epoch_metrics(self, computed: dict[str, Any]) -> dict[str, Any]:
        return _metrics(computed)

    def selection(self, val: dict[str, Any]) -> tuple[float, ...]:
        return (val["f1"],)

    def record(self, train: dict[str, Any], val: dict[str, Any]) -> dict[str, Any]:
        cm = "confusion_matrix"
        return {
            **{f"train_{k}": v for k, v in train.items() if k != cm},
            **{f"val_{k}": v for k, v in val.items() if k != cm},
            "val_confusion_matrix": val[cm],
        }

    def epoch_line(self, r: dict[str, Any]) -> str:
        return (
            f"epoch {r['epoch']}: {r['train_examples']:,} examples, train loss {r['train_loss']:.4f} "
            f"F1 {r['train_f1']:.4f} | val F1 {r['val_f1']:.4f} (pooled {r['val_pooled_f1']:.4f}) "
            f"P {r['val_precision']:.4f} R {r['val_recall']:.4f} ({r['seconds']:.0f} s)"
        )


def train_main(args: argparse.Namespace) -> int:
    """``programl train dataflow`` (module docstring)."""
    opts = TaskRun.from_args(args, DataflowOptions, DataflowRunOptions)
    _check(opts)
    configure_threads(opts.run.threads)
    dist = init_distributed(opts.run.device)
    configure_logging(opts.run.quiet, dist.is_main)
    run_dir = _run_dir(opts)
    try:
        with RunLock(run_dir, enabled=dist.is_main):
            return _train(opts, dist, run_dir)
    finally:
        dist.shutdown()


def _train(opts: TrainRun, dist, run_dir: Path) -> int:
    """The training run of :func:`train_main`, in a locked run directory."""
    options, run = opts.model, opts.run
    show = dist.is_main and not run.quiet
    config = options.config()
    schedule = options.train_examples[: run.epochs] if run.epochs else options.train_examples
    if (run_dir / "last.pt").is_file() and not run.restart:
        check_same_run(
            run_dir,
            "dataflow",
            config,
            paths={"dataset": run.dataset},
            ignore=("train_examples",),
            defaults={**_EVAL_DEFAULTS, **SCHEDULE_DEFAULTS},
        )
    # rank 0 converts the data set once; the others wait and then read it
    datasets: dict[str, Any] = {}
    for turn in (0, 1):
        if (turn == 0) == dist.is_main:
            for split in ("train", "val"):
                datasets[split] = _dataset(opts, split, options.max_steps, show, run.vocabulary)
        dist.barrier()
    train, val_all = (at_least_nodes(datasets[split], options.min_nodes) for split in ("train", "val"))
    val = val_all.fixed_sample(options.val_examples, options.val_seed)
    if not len(train) or not len(val):
        raise ProgramlError(f"{run.dataset}: no {options.analysis} examples to train or validate on ({train!r})")
    vocabulary = Vocabulary.load(train.vocabulary_path)
    if options.dead_branches:  # the old IR's dead blocks, in training only (validation scores the data as it is)
        if "br" not in vocabulary:
            raise ProgramlError(f"{train.vocabulary_path}: --dead-branches needs the text 'br' in the vocabulary")
        train.transform = AddDeadBranches(
            vocabulary["br"], probability=options.dead_branches, seed=options.seed, keyed=True
        )
    task = _DataflowTask(options, len(vocabulary), train, val, schedule)
    budget = Budget(examples=schedule, total_examples=options.train_examples[-1], time_limit=run.time_limit)
    trainer = start_trainer(task, run_dir, budget, opts, dist=dist, show=show, vocabulary=vocabulary)
    if dist.is_main:
        vocabulary.save(run_dir / "vocab.csv")
        scope = {
            "train_examples_available": len(train),
            "train_records": train.num_records,
            "val_examples": len(val),
            "val_examples_available": len(val_all),
            "vocabulary": len(vocabulary),
        }
        write_json(
            run_dir / "config.json",
            {
                "task": "dataflow",
                "model": config,
                "scope": scope,
                "dataset": str(Path(run.dataset).resolve()),
                **({"vocabulary": str(Path(run.vocabulary).resolve())} if run.vocabulary else {}),
                "processed_dir": run.processed_dir,
                "world_size": dist.world_size,
            },
        )
    fit = trainer.run()
    digests = _gather_digests(trainer.model, dist)
    result = _test(run_dir, "best", opts, len(vocabulary), dist, show)
    if dist.is_main:
        result.update(
            analysis=options.analysis,
            best_epoch=fit.best_epoch,
            best_val_f1=fit.best[0] if fit.best else None,
            train_examples_seen=fit.examples,
            train_examples_available=len(train),
            val_examples=len(val),
            train_seconds=round(fit.seconds, 1),
            world_size=dist.world_size,
            threads=compute_threads(dist.device),
            device=str(dist.device),
            machine=_machine(dist.device),
            ddp={"parameter_digests": digests, "agree": len(set(digests)) == 1},
            paper_ddf30=dict(zip(("precision", "recall", "f1"), PAPER_DDF30[options.analysis])),
        )
        write_json(run_dir / "result.json", result)
        print(_result_line(result))
    return 0


def _gather_digests(model, dist) -> list[str]:
    """Every process's parameter digest (all equal after DDP training)."""
    digest = _parameter_digest(model)
    if not dist.enabled:
        return [digest]

    out: list[Any] = [None] * dist.world_size
    tdist.all_gather_object(out, digest)
    return [str(d) for d in out]


def _tests(opts: TrainRun | EvaluateRun) -> list[tuple[int | str, int | None, int | None]]:
    """(T, step filter, sample size) per ``--test-steps``: DDF-30 at 30, DDF-60 at 60, every example otherwise
    (``stable`` too); a ``--step-policy cover`` model is also tested until stable when ``--test-steps`` lacks it
    (with the last sample size)."""
    steps = list(opts.run.test_steps)
    sizes = _test_sizes(opts.run)
    if _step_free(opts.model) and "stable" not in steps:
        steps.append("stable")
        sizes.append(sizes[-1])
    return [(t, t if t in (30, 60) else None, n) for t, n in zip(steps, sizes)]


def _test_sizes(run: DataflowRunOptions | DataflowEvaluateOptions) -> list[int | None]:
    """The sample size of each test of ``--test-steps`` and ``--test-examples`` (None: every example)."""
    sizes = run.test_examples or [0]
    if len(sizes) == 1:
        sizes = sizes * len(run.test_steps)
    if len(sizes) != len(run.test_steps) or any(n < 0 for n in sizes):
        raise UsageError("--test-examples takes one value, or one per --test-steps, each >= 0")
    if any(t != "stable" and t < 1 for t in run.test_steps):
        raise UsageError("--test-steps must be positive")
    return [n or None for n in sizes]


def _test(
    run_dir: Path,
    which: str,
    opts: TrainRun | EvaluateRun,
    vocabulary_size: int,
    dist,
    show: bool,
    split: str = "test",
    out_dir: Path | None = None,
) -> dict[str, Any]:
    """Metrics of ``<which>.pt`` on ``split`` of ``--dataset`` at each T of ``--test-steps``; a confusion-matrix PNG
    for the first, in ``out_dir`` (default: ``run_dir``)."""
    options = opts.model
    task = _DataflowTask(options, vocabulary_size)
    model = _make_model(options.config(), vocabulary_size).to(dist.device)
    saved = load_checkpoint(run_dir / f"{which}.pt", model=model, map_location=dist.device, restore_rng=False)
    out: dict[str, Any] = {"checkpoint": which, "checkpoint_epoch": saved["epoch"], "split": split, "tests": {}}
    for i, (steps, limit, size) in enumerate(_tests(opts)):
        data = None
        for turn in (0, 1):  # rank 0 converts first
            if (turn == 0) == dist.is_main:
                data = _dataset(opts, split, limit, show, run_dir / "vocab.csv")
            dist.barrier()
        available = len(data)
        if size:
            data = data.fixed_sample(size, options.val_seed)
        planned = _eval_plan(data.sizes, options)
        batches = shard(planned, dist.rank, dist.world_size)
        started = time.perf_counter()
        loader = make_loader(data, batches, opts.run.workers, dist.device)
        task.steps_run = [0, 0]
        scored = evaluate(
            task, model, loader, device=dist.device, dist=dist, description=f"{split} T={steps}", show=show, steps=steps
        )
        metrics = _metrics(scored.compute())
        seconds = time.perf_counter() - started
        name = "stable" if steps == "stable" else f"T{steps}"
        out["tests"][name] = {
            "steps": steps,
            **({"mean_steps": round(task.mean_steps(), 1)} if steps == "stable" else {}),
            "max_data_flow_steps": limit,
            "examples": len(data),
            "examples_available": available,
            "examples_scored": sum(len(b) for b in planned),
            "nodes": int(data.sizes[[j for b in planned for j in b]].sum()),
            "seconds": round(seconds, 1),
            **{k: metrics[k] for k in ("precision", "recall", "f1", "accuracy", "loss", "batches")},
            **{k: metrics[k] for k in ("pooled_precision", "pooled_recall", "pooled_f1")},
            "batch_nodes": options.eval_batch_nodes,
            "batch_policy": options.eval_batch_policy,
            "confusion_matrix": metrics["confusion_matrix"],
        }
        if i == 0 and dist.is_main:
            filt = f"DDF-{limit}" if limit else "all examples"
            plot_confusion_matrix(
                metrics["confusion_matrix"],
                (out_dir or run_dir) / "confusion.png",
                labels=["false", "true"],
                title=f"{options.analysis} {split}, T={steps}, {filt}: F1 {metrics['f1']:.3f}",
            )
    return out


def _result_line(result: dict[str, Any]) -> str:
    parts = [
        f"T={t['steps']} ({t['examples']:,} examples): P {t['precision']:.3f} R {t['recall']:.3f} F1 {t['f1']:.3f}"
        + (f" (pooled F1 {t['pooled_f1']:.3f})" if "pooled_f1" in t else "")
        for t in result["tests"].values()
    ]
    line = f"dataflow {result.get('analysis', '')} {result['split']}: " + "; ".join(parts)
    paper = result.get("paper_ddf30")
    if paper:
        line += f"  [paper DDF-30: P {paper['precision']:.3f} R {paper['recall']:.3f} F1 {paper['f1']:.3f}]"
    return line


# ---------------------------------------------------------------------------------------------------------------
# Evaluation


def evaluate_main(args: argparse.Namespace) -> int:
    """``programl evaluate dataflow``: metrics of a run's checkpoint at each T of ``--test-steps``."""
    run = DataflowEvaluateOptions.from_args(args)
    _test_sizes(run)
    if run.eval_batch_nodes is not None and run.eval_batch_nodes < 1:
        raise UsageError("--eval-batch-nodes must be positive")
    configure_threads(run.threads)
    dist = init_distributed(run.device)
    configure_logging(run.quiet, dist.is_main)
    run_dir = Path(run.run_dir)
    try:
        saved = read_run_config(run_dir, "dataflow", required=_MODEL_KEYS)
        opts = _evaluation_options(run_dir, saved, run)
        out_dir = Path(run.out) if run.out else run_dir  # --out: the run directory is only read
        with RunLock(out_dir, enabled=dist.is_main):
            return _evaluate_run(opts, dist, run_dir, out_dir)
    finally:
        dist.shutdown()


#: What ``evaluate`` reads of a run's options.
_MODEL_KEYS = ("analysis", "model", "steps", "max_nodes", "batch_nodes", "batch_policy", "val_seed")


def _evaluation_options(run_dir: Path, saved: dict[str, Any], run: DataflowEvaluateOptions) -> EvaluateRun:
    """The options of an evaluation of the run in ``run_dir`` (``saved``: its ``config.json``): the run's options with
    those the command line replaces (``--eval-batch-nodes`` ...), and its data set and processed directory unless
    given."""
    path = run_dir / "config.json"
    options = DataflowOptions.from_config(saved["model"], path)
    if options.analysis not in ANALYSES:
        raise ProgramlError(f"{path}: unknown analysis {options.analysis!r}")
    options = dataclasses.replace(options, **run.overrides())
    dataset = run.dataset or saved.get("dataset")
    if not dataset:
        raise UsageError(f"{path} names no data set: give --dataset DIR")
    processed_dir = saved.get("processed_dir") if run.processed_dir is None else run.processed_dir
    return TaskRun(options, dataclasses.replace(run, dataset=dataset, processed_dir=processed_dir))


def _evaluate_run(opts: EvaluateRun, dist, run_dir: Path, out_dir: Path) -> int:
    """The evaluation of :func:`evaluate_main`, its output directory locked."""
    options, run = opts.model, opts.run
    show = dist.is_main and not run.quiet
    try:
        vocabulary_size = len(Vocabulary.load(run_dir / "vocab.csv"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ProgramlError(f"{run_dir / 'vocab.csv'}: not a vocabulary ({error})") from None
    result = _test(run_dir, run.checkpoint, opts, vocabulary_size, dist, show, run.split, out_dir)
    if dist.is_main:
        if any(t == "stable" for t, _, _ in _tests(opts)):  # the bounds of its until-stable scores (for the export)
            result["until_stable"] = {"patience": options.stable_patience, "max_steps": options.stable_max_steps}
        result.update(
            analysis=options.analysis,
            machine=_machine(dist.device),
            paper_ddf30=dict(zip(("precision", "recall", "f1"), PAPER_DDF30[options.analysis])),
        )
        write_json(out_dir / f"evaluation_{run.checkpoint}_{run.split}.json", result)
        print(_result_line(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m programl.tasks.dataflow {train,evaluate} ...`` (what ``torchrun -m`` runs: ``__main__.py``)."""
    return run_task_module(DataflowSpec(), sys.modules[__name__], argv)
