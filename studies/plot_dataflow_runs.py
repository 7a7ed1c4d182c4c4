#!/usr/bin/env python3
"""Validation F1 against training examples for several ``programl train dataflow`` runs, in one PNG.

Reads each run directory's ``log.jsonl`` (one record per epoch, SPEC §6.1) and, when present, its ``result.json``
(the test F1 at T=30 of the best checkpoint, drawn as a star at the best epoch).

``--label settings`` names each line by its optimisation settings (learning rate, warm-up, clipping, decay) instead
of its analysis, to compare runs of one analysis; ``--grad-norms`` adds a panel of the largest gradient norm of each
epoch (``train_grad_norm_max``, logged by runs with ``--clip-grad-norm``: the norm before clipping).

Usage::

    python studies/plot_dataflow_runs.py runs/reachability runs/dominance ... -o studies/img/dataflow-learning.png
    python studies/plot_dataflow_runs.py runs/datadep-* --label settings --grad-norms -o docs/img/datadep-lr.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from programl.exceptions import ProgramlError
from programl.util.fs import read_json


def read_log(run_dir: Path) -> list[dict]:
    """The epoch records of a run (``log.jsonl``), in order."""
    path = run_dir / "log.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def save_figure(figure, output: Path) -> None:
    """Lay out ``figure`` and write it to ``output`` (a PNG; parent directories made), saying so."""
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=120)
    print(f"wrote {output}")


def settings_label(config: dict) -> str:
    """A run's optimisation settings in a few words, e.g. ``lr 1e-3, warm-up 2k, clip 1, bf16``."""
    model = config.get("model", {})
    lr = model.get("lr")
    parts = [f"lr {lr:g}" if isinstance(lr, (int, float)) else "lr ?"]
    if model.get("warmup_examples"):
        parts.append(f"warm-up {model['warmup_examples'] / 1000:g}k")
    clip = model.get("clip_grad_norm")
    if clip and clip < 1e6:  # a huge limit only records the norms
        parts.append(f"clip {clip:g}")
    if model.get("lr_decay", "off") != "off":
        parts.append(f"{model['lr_decay']} decay")
    if model.get("precision", "fp32") != "fp32":
        parts.append(model["precision"])
    return ", ".join(parts)


def line_label(run_dir: Path, config: dict, how: str) -> str:
    """A run's name in the legend: its analysis, its optimisation settings, or its directory as given (``how``)."""
    if how == "settings":
        return settings_label(config)
    if how == "dir":
        return str(run_dir)
    return config.get("model", {}).get("analysis", run_dir.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories of `programl train dataflow`")
    parser.add_argument("-o", "--output", type=Path, required=True, help="PNG file to write")
    parser.add_argument(
        "--label",
        choices=("analysis", "settings", "dir"),
        default="analysis",
        help="line names: the run's analysis, its optimisation settings, or its directory as given "
        "(to tell apart runs of one analysis under several run roots)",
    )
    parser.add_argument("--grad-norms", action="store_true", help="add a panel of the largest gradient norm per epoch")
    parser.add_argument("--title", help="figure title (default: the DeepDataFlow-22 one)")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if args.grad_norms:
        figure, (axes, norms) = plt.subplots(1, 2, figsize=(13, 5))
    else:
        figure, axes = plt.subplots(figsize=(8, 5))
    for run_dir in args.runs:
        try:
            records = read_log(run_dir)
            config = read_json(run_dir / "config.json")
            result = read_json(run_dir / "result.json") if (run_dir / "result.json").is_file() else None
        except OSError as error:
            print(f"{run_dir}: {error.strerror or error}", file=sys.stderr)
            return 1
        except (ValueError, ProgramlError) as error:  # a damaged log.jsonl, config.json or result.json
            print(f"{run_dir}: not a dataflow run's log and config ({error})", file=sys.stderr)
            return 1
        label = line_label(run_dir, config, args.label)
        examples = [r["train_examples"] for r in records]
        (line,) = axes.plot(examples, [r["val_f1"] for r in records], marker="o", label=f"{label} (val)")
        if result is not None:
            test = result["tests"].get("T30")
            best = [r["train_examples"] for r in records if r["epoch"] == result.get("best_epoch")]
            if test and best:
                axes.plot(best, [test["f1"]], marker="*", markersize=14, color=line.get_color(), linestyle="none")
        if args.grad_norms:
            logged = [(r["train_examples"], r["train_grad_norm_max"]) for r in records if r.get("train_grad_norm_max")]
            if logged:
                norms.plot(*zip(*logged), marker="o", color=line.get_color(), label=label)
    axes.set_xscale("log")
    axes.set_xlabel("training examples seen")
    axes.set_ylabel("F1 (per-batch mean, SPEC §6.1)")
    axes.set_title(args.title or "DeepDataFlow-22, typed GGNN, DDF-30, T=30 (lines: validation; stars: test)")
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    if args.grad_norms:
        norms.set_xscale("log")
        norms.set_yscale("log")
        norms.set_xlabel("training examples seen")
        norms.set_ylabel("largest gradient norm of the epoch (before clipping)")
        norms.set_title("gradient norms")
        norms.grid(alpha=0.3)
    save_figure(figure, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
