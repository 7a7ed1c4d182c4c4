#!/usr/bin/env python3
"""Validation F1 against training examples for several ``programl train dataflow`` runs, in one PNG.

Reads each run directory's ``log.jsonl`` (one record per epoch, SPEC §6.1) and, when present, its ``result.json``
(the test F1 at T=30 of the best checkpoint, drawn as a star at the best epoch).

Usage::

    python scripts/plot_dataflow_runs.py runs/reachability runs/dominance ... -o docs/img/dataflow-learning.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def read_log(run_dir: Path) -> list[dict]:
    """The epoch records of a run (``log.jsonl``), in order."""
    path = run_dir / "log.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories of `programl train dataflow`")
    parser.add_argument("-o", "--output", type=Path, required=True, help="PNG file to write")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    for run_dir in args.runs:
        try:
            records = read_log(run_dir)
        except OSError as error:
            print(f"{run_dir}: {error.strerror or error}", file=sys.stderr)
            return 1
        config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        label = config.get("model", {}).get("analysis", run_dir.name)
        examples = [r["train_examples"] for r in records]
        (line,) = axes.plot(examples, [r["val_f1"] for r in records], marker="o", label=f"{label} (val)")
        result_path = run_dir / "result.json"
        if result_path.is_file():
            result = json.loads(result_path.read_text(encoding="utf-8"))
            test = result["tests"].get("T30")
            best = [r["train_examples"] for r in records if r["epoch"] == result.get("best_epoch")]
            if test and best:
                axes.plot(best, [test["f1"]], marker="*", markersize=14, color=line.get_color(), linestyle="none")
    axes.set_xscale("log")
    axes.set_xlabel("training examples seen")
    axes.set_ylabel("F1 (per-batch mean, SPEC §6.1)")
    axes.set_title("DeepDataFlow-22, typed GGNN, DDF-30, T=30 (lines: validation; stars: test)")
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
