#!/usr/bin/env python3
"""The error curves of one POJ-104 training carried on by several ``programl train classifyapp`` runs, in one PNG.

A long run is sometimes continued as a new run from an earlier one's weights (``--init-from``, e.g. with another
learning-rate schedule). Give the runs in order; ``DIR:N`` takes only the first N epochs of a run (where the next run
started from its epoch N). Each run's epochs continue the count of the one before, its segment is labelled by its
optimisation settings, and a run's ``result.json`` (the test error of its best checkpoint, SPEC §6.6) is drawn as a
star at that checkpoint's epoch. The dashed line is the paper's test error (3.38 %, SPEC §7.4 / paper Table 5).
``--reference CSV`` draws another training's curve in grey beside them, from a file with the columns ``epoch``,
``train_error`` and ``val_error`` in percent (e.g. ``studies/data/poj104-float32-run.csv``, a run whose directory is
gone).

Usage::

    python studies/plot_classifyapp_runs.py runs/poj104:7 runs/poj104-cos -o studies/img/poj104-full.png
    python studies/plot_classifyapp_runs.py runs/poj104:7 runs/poj104-cos -o studies/img/poj104-bf16.png \
        --reference studies/data/poj104-float32-run.csv --reference-label "the float32 run (lost in epoch 22)"
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plot_dataflow_runs import read_log, save_figure, settings_label  # noqa: E402

from programl.exceptions import ProgramlError  # noqa: E402
from programl.util.fs import read_json  # noqa: E402

PAPER_ERROR = 3.38


def parse_run(text: str) -> tuple[Path, int | None]:
    """``DIR`` or ``DIR:N`` -> (directory, the number of epochs to take or None for all)."""
    directory, sep, epochs = text.rpartition(":")
    if sep and epochs.isdigit() and directory:
        return Path(directory), int(epochs)
    return Path(text), None


def chain(runs: list[tuple[Path, int | None]]) -> list[dict]:
    """Per run: its label, its records with the epochs renumbered to continue the previous runs', its test star."""
    segments, offset = [], 0
    for run_dir, take in runs:
        records = [r for r in read_log(run_dir) if take is None or r["epoch"] <= take]
        config = read_json(run_dir / "config.json")
        star = None
        result_path = run_dir / "result.json"
        if result_path.is_file():
            result = read_json(result_path)
            epoch = result.get("checkpoint_epoch", result.get("best_epoch"))
            if epoch is not None and (take is None or epoch <= take) and "test" in result:
                star = (offset + epoch, 100.0 * result["test"]["error"])
        segments.append(
            {
                "label": settings_label(config),
                "epochs": [offset + r["epoch"] for r in records],
                "train": [100.0 * r["train_error"] for r in records],
                "val": [100.0 * r["val_error"] for r in records],
                "test": star,
            }
        )
        offset += records[-1]["epoch"] if records else 0
    return segments


def read_reference(path: Path) -> dict[str, list[float]]:
    """The ``epoch``, ``train_error`` and ``val_error`` columns (percent) of a reference CSV, as lists."""
    with open(path, newline="") as stream:
        rows = list(csv.DictReader(stream))
    try:
        return {key: [float(row[key]) for row in rows] for key in ("epoch", "train_error", "val_error")}
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path}: needs the columns epoch, train_error and val_error, in numbers ({error})") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories of `programl train classifyapp`, in order (DIR[:N])")
    parser.add_argument("-o", "--output", type=Path, required=True, help="PNG file to write")
    parser.add_argument("--title", default="POJ-104, the paper's classifier, all programs (-O0)")
    parser.add_argument("--reference", type=Path, help="CSV of another training's errors to draw in grey")
    parser.add_argument("--reference-label", default="reference", help="its name in the legend")
    args = parser.parse_args(argv)
    try:
        segments = chain([parse_run(text) for text in args.runs])
        reference = read_reference(args.reference) if args.reference else None
    except (OSError, ValueError, KeyError, ProgramlError) as error:
        print(f"plot_classifyapp_runs.py: {error}", file=sys.stderr)
        return 1

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    figure, axes = plt.subplots(figsize=(8, 5))
    if reference:
        name = args.reference_label
        axes.plot(reference["epoch"], reference["val_error"], marker="o", color="grey", label=f"{name}, validation")
        training = f"{name}, training"
        axes.plot(reference["epoch"], reference["train_error"], linestyle=":", color="grey", label=training)
    for number, segment in enumerate(segments):
        color = f"C{number}"
        name = f"run {number + 1}: {segment['label']}"
        axes.plot(segment["epochs"], segment["val"], marker="o", color=color, label=f"{name}, validation")
        training = f"{name}, training"
        axes.plot(segment["epochs"], segment["train"], linestyle=":", marker=".", color=color, label=training)
        if segment["test"]:
            star = f"{name}, test (its best checkpoint)"
            axes.plot(*segment["test"], marker="*", markersize=14, color=color, linestyle="none", label=star)
        if number and segment["epochs"]:
            axes.axvline(segment["epochs"][0] - 0.5, color="grey", linewidth=0.8)
    paper = f"the paper's test error ({PAPER_ERROR} %)"
    axes.axhline(PAPER_ERROR, color="black", linestyle="--", linewidth=1, label=paper)
    axes.set_yscale("log")
    axes.set_yticks([2, 3, 5, 10, 20, 40, 80], labels=["2", "3", "5", "10", "20", "40", "80"])
    axes.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes.set_xlabel("epoch (one pass over the training graphs)")
    axes.set_ylabel("error % (log scale)")
    axes.set_title(args.title)
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=8)
    save_figure(figure, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
