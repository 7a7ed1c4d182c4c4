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

The entry points make one :class:`~programl.tasks.options.TaskRun` of the command line (the task's
:class:`~programl.tasks.devmap.spec.DevmapOptions` and its :class:`~programl.tasks.devmap.spec.DevmapRunOptions`);
one fold is :mod:`programl.tasks.devmap.folds`, the reports :mod:`programl.tasks.devmap.report`, and ``programl
evaluate devmap`` :mod:`programl.tasks.devmap.evaluate`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from programl.tasks.devmap.evaluate import evaluate_main, platforms
from programl.tasks.devmap.folds import (
    DevmapSource,
    find_source_dir,
    fold_result,
    splits,
    train_fold,
)
from programl.tasks.devmap.report import PUBLISHED, devmap_metrics, platform_report, summary_table, write_summary
from programl.tasks.devmap.spec import (
    DevmapOptions,
    DevmapRunOptions,
    DevmapSpec,
    add_evaluate_arguments,
    add_train_arguments,
)
from programl.tasks.entry import run_task_module
from programl.tasks.options import SCHEDULE_DEFAULTS, TaskRun
from programl.training import (
    RunLock,
    UsageError,
    check_same_run,
    configure_logging,
    configure_threads,
    resolve_device,
    write_json,
)

__all__ = [
    "add_evaluate_arguments",
    "add_train_arguments",
    "PUBLISHED",
    "DevmapOptions",
    "devmap_metrics",
    "evaluate_main",
    "main",
    "train_main",
]

logger = logging.getLogger(__name__)

#: What runs written before an option existed are taken to have used.
_MODEL_DEFAULTS = DevmapOptions.defaults("aux_bins", "text_counts", "average_last", "numbers_and_types")

#: A run of ``programl train devmap``: its options, as the entry point makes them of the command line.
TrainRun = TaskRun[DevmapOptions, DevmapRunOptions]


def train_main(args: argparse.Namespace) -> int:
    """``programl train devmap``: build the graphs if needed, cross-validate per platform, write the reports."""
    opts = TaskRun.from_args(args, DevmapOptions, DevmapRunOptions)
    _check(opts)
    configure_threads(opts.run.threads)
    configure_logging(opts.run.quiet)
    device = resolve_device(opts.run.device)
    source_dir = find_source_dir(opts.run)
    run_dir = Path(opts.run.run_dir)
    with RunLock(run_dir):
        return _train(opts, device, source_dir, run_dir)


def _check(opts: TrainRun) -> None:
    """Refuse options that do not go together (each option's own range is checked by its field)."""
    options, run = opts.model, opts.run
    if run.only_folds and any(not 0 <= k < options.folds for k in run.only_folds):
        raise UsageError(f"--only-folds must be in 0..{options.folds - 1}")
    if options.layers > options.steps:
        raise UsageError("need --steps >= 1 and 1 <= --layers <= --steps")
    if options.hidden < 2 or options.hidden % 2:
        raise UsageError("--hidden must be an even number >= 2")
    if not 0 <= options.average_last <= options.epochs:
        raise UsageError(f"--average-last must be in 0..{options.epochs} (the epochs)")


def _train(opts: TrainRun, device, source_dir: Path, run_dir: Path) -> int:
    """The cross-validation of :func:`train_main`, in a locked run directory."""
    options, run = opts.model, opts.run
    data_dir = Path(os.path.expanduser(run.data_dir))
    config = options.config()
    if (run_dir / "config.json").exists() and not run.restart:
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
    source = DevmapSource.of(options, data_dir, source_dir, jobs=run.jobs or None, log=not run.quiet)
    summary = {}
    for platform in platforms(run.platform):
        dataset = source.dataset(platform)
        results = []
        for split in splits(dataset.y.numpy(), options.folds, options.fold_seed):
            fold_dir = run_dir / platform / f"fold_{split.fold}"
            previous = fold_result(fold_dir)
            if run.only_folds and split.fold not in run.only_folds:
                if previous is not None:  # reported with the others, not retrained
                    results.append(previous)
                continue
            if previous is not None and not run.restart and previous.get("epochs", 0) >= options.epochs:
                results.append(previous)  # finished (asked for more epochs: resumed from last.pt)
                continue
            started = time.perf_counter()
            result = train_fold(source, platform, split.fold, opts, fold_dir, device)
            logger.info(
                f"devmap {platform} fold {split.fold}: test accuracy {result['test']['accuracy']:.3f} "
                f"(epoch {result['best_epoch']}, {time.perf_counter() - started:.0f} s)"
            )
            results.append(result)
        summary[platform] = platform_report(dataset, results, run_dir / platform, platform)
    write_summary(run_dir, summary, config)
    print(summary_table(summary))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m programl.tasks.devmap {train,evaluate} ...`` (``__main__.py``)."""
    return run_task_module(DevmapSpec(), sys.modules[__name__], argv)
