"""``programl evaluate devmap`` (docs/spec/tasks.md#device-mapping): re-test every finished fold's chosen model of a
run and rewrite its reports, or with ``--ensemble`` score the mean of several runs' probabilities.

The run's options are its ``config.json`` read back as :class:`~programl.tasks.devmap.spec.DevmapOptions`
(:meth:`~programl.util.options.Options.from_config`: a damaged value is one line naming the file), beside the
command's own :class:`~programl.tasks.devmap.spec.DevmapEvaluateOptions`.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from programl.datasets import DevMap
from programl.exceptions import ProgramlError
from programl.tasks.devmap.folds import (
    DevmapSource,
    fold_predictions,
    fold_result,
    fold_result_of,
    splits,
    static_mapping,
    test_fold,
)
from programl.tasks.devmap.report import platform_report, summary_table, write_summary
from programl.tasks.devmap.spec import NETWORK_OPTIONS, DevmapEvaluateOptions, DevmapOptions
from programl.tasks.options import TaskRun
from programl.training import (
    RunLock,
    UsageError,
    configure_logging,
    configure_threads,
    read_run_config,
    resolve_device,
)

__all__ = ["evaluate_main", "platforms", "read_devmap_run", "run_source"]

logger = logging.getLogger(__name__)

#: The options a run's ``config.json`` must hold for its models to be rebuilt and its folds found again.
_REQUIRED = (*NETWORK_OPTIONS, "readout_channels", "pooling", "intermediate_loss_weight", "variant", "folds")
_REQUIRED += ("fold_seed", "batch_nodes")

#: What the members of an ensemble must share: the same kernels in the same folds.
_FOLD_KEYS = ("variant", "folds", "fold_seed", "subset")

#: A run of ``programl evaluate devmap``: the trained run's options and the command's.
EvaluateRun = TaskRun[DevmapOptions, DevmapEvaluateOptions]


def evaluate_main(args: argparse.Namespace) -> int:
    """``programl evaluate devmap``: re-test every finished fold's chosen model and rewrite the reports."""
    run = DevmapEvaluateOptions.from_args(args)
    if run.ensemble and run.out is None:
        raise UsageError("--ensemble needs --out DIR for its reports")
    if run.out is not None and not run.ensemble:
        raise UsageError("--out is for the reports of an --ensemble; one run's reports go to its --run-dir")
    configure_threads(run.threads)
    configure_logging(run.quiet)
    device = resolve_device(run.device)
    run_dir = Path(run.run_dir)
    saved = read_devmap_run(run_dir)
    opts = TaskRun(_saved_options(run_dir, saved), run)
    source = run_source(saved, opts.model, run.source_dir, run.data_dir, log=not run.quiet)
    if run.ensemble:
        members = [(run_dir, opts.model)]
        for directory in map(Path, run.ensemble):
            members.append((directory, _saved_options(directory, read_devmap_run(directory))))
        _check_same_folds(members)
        run.out.mkdir(parents=True, exist_ok=True)
        with RunLock(run.out):
            return _evaluate_ensemble(opts, source, device, members)
    with RunLock(run_dir):
        return _evaluate(opts, source, device, run_dir)


def read_devmap_run(run_dir: Path) -> dict[str, Any]:
    """The ``config.json`` of a ``programl train devmap`` run, checked (:func:`~programl.training.read_run_config`).

    Raises:
        ProgramlError: One line: no such run, another task's, or one without the options or directories a devmap
            run records.
    """
    saved = read_run_config(run_dir, "devmap", required=_REQUIRED)
    if "source_dir" not in saved or "data_dir" not in saved:
        raise ProgramlError(f"{run_dir / 'config.json'}: no source_dir or data_dir (not a `programl train devmap` run)")
    return saved


def _saved_options(run_dir: Path, saved: dict[str, Any]) -> DevmapOptions:
    """The options of the run in ``run_dir`` (``saved``: its :func:`read_devmap_run`)."""
    return DevmapOptions.from_config(saved["model"], run_dir / "config.json")


def _check_same_folds(members: list[tuple[Path, DevmapOptions]]) -> None:
    first_dir, first = members[0]
    for run_dir, options in members[1:]:
        for key in _FOLD_KEYS:
            if getattr(options, key) != getattr(first, key):
                raise UsageError(
                    f"--ensemble {run_dir}: {key} {getattr(options, key)!r}, but {first_dir} has "
                    f"{getattr(first, key)!r} (the runs must test the same folds)"
                )


def run_source(
    saved: dict[str, Any], options: DevmapOptions, source_dir=None, data_dir=None, jobs: int | None = None, log=False
) -> DevmapSource:
    """The :class:`~programl.tasks.devmap.folds.DevmapSource` of a run (``saved``: its ``config.json``, ``options``:
    its options): its data directory and raw files unless given. The data directory is the DevMap root; one of a run
    made before the runs read DevMap (graphs under ``<variant>/graphs_<platform>``) is processed anew beside them,
    into ``raw/`` and ``processed/``."""
    root, raw = data_dir or saved["data_dir"], source_dir or saved["source_dir"]
    return DevmapSource.of(options, root, raw, jobs=jobs, log=log)


def platforms(choice: str) -> tuple[str, ...]:
    """The platforms of ``--platform``."""
    return ("amd", "nvidia") if choice == "all" else (choice,)


def _evaluation_data(opts: EvaluateRun, source: DevmapSource, run_dirs: list[Path]) -> Iterator[tuple[str, DevMap]]:
    """``(platform, dataset)`` for each platform to evaluate: ``--platform``, or with ``all`` the platforms that every
    one of ``run_dirs`` has trained folds of (a one-platform run: its platform, not an error about the other)."""
    if opts.run.source_dir:
        DevMap.check_raw_files(opts.run.source_dir, verify=False)
    elif not any((d / "cgo17-amd.csv").is_file() for d in (source.source_dir, source.root / "raw")):
        raise ProgramlError(
            f"{source.source_dir}: the run's DevMap files are gone (and {source.root / 'raw'} has none): give "
            "--source-dir DIR (the CSVs, zips and manifest)"
        )
    chosen = platforms(opts.run.platform)
    if opts.run.platform == "all":
        trained = [p for p in chosen if all(any((d / p).glob("fold_*/best.pt")) for d in run_dirs)]
        chosen = tuple(trained) or chosen
    for platform in chosen:
        yield platform, source.dataset(platform)


def _evaluate(opts: EvaluateRun, source: DevmapSource, device, run_dir: Path) -> int:
    """The evaluation of :func:`evaluate_main`, in a locked run directory."""
    options = opts.model
    summary = {}
    for platform, dataset in _evaluation_data(opts, source, [run_dir]):
        labels = dataset.y.numpy()
        results = []
        for split in splits(labels, options.folds, options.fold_seed):
            fold_dir = run_dir / platform / f"fold_{split.fold}"
            if not (fold_dir / "best.pt").is_file():
                continue
            static_device = static_mapping(labels[split.train])
            result = test_fold(source, platform, split.fold, options, fold_dir, device, static_device)
            previous = fold_result(fold_dir)
            if previous is not None:
                result["best_epoch"] = previous.get("best_epoch")
                if previous["predictions"] != result["predictions"]:
                    logger.warning(f"{fold_dir}: predictions differ from those recorded at training time")
            results.append(result)
        if not results:
            raise ProgramlError(f"{run_dir / platform}: no trained fold (best.pt) to evaluate")
        summary[platform] = platform_report(dataset, results, run_dir / platform, platform)
    write_summary(run_dir, summary, options.config())
    print(summary_table(summary))
    return 0


def _evaluate_ensemble(
    opts: EvaluateRun, source: DevmapSource, device, members: list[tuple[Path, DevmapOptions]]
) -> int:
    """``--ensemble``: per fold, the mean of the members' test probabilities (each member's chosen model, so no
    member sees its test fold in training or in the choice of epoch); a fold is scored when every member has it."""
    options, out = opts.model, opts.run.out
    summary = {}
    for platform, dataset in _evaluation_data(opts, source, [d for d, _ in members]):
        labels = dataset.y.numpy()
        results = []
        for split in splits(labels, options.folds, options.fold_seed):
            fold_dirs = [d / platform / f"fold_{split.fold}" for d, _ in members]
            if not all((f / "best.pt").is_file() for f in fold_dirs):
                continue
            test_rows, probabilities = np.sort(split.test), 0.0
            for fold_dir, (_, member) in zip(fold_dirs, members):
                predicted = fold_predictions(source, platform, split.fold, member, fold_dir, device)
                order = np.argsort(predicted["rows"], kind="stable")  # members may batch in other orders
                assert np.array_equal(predicted["rows"][order], test_rows), fold_dir
                probabilities = probabilities + predicted["probabilities"][order]
            mean = {
                **{k: predicted[k][order] for k in ("rows", "labels", "runtimes")},
                "predictions": np.asarray(probabilities).argmax(-1),
            }
            result = fold_result_of(split.fold, mean, static_mapping(labels[split.train]))
            result["best_epoch"] = [(fold_result(f) or {}).get("best_epoch") for f in fold_dirs]
            results.append(result)
        if not results:
            raise ProgramlError(f"{platform}: no fold that every run of the ensemble has trained (best.pt)")
        summary[platform] = platform_report(dataset, results, out / platform, platform)
    write_summary(out, summary, {**options.config(), "ensemble": [str(d) for d, _ in members]})
    print(summary_table(summary))
    return 0
