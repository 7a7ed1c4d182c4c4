#!/usr/bin/env python3
"""The data-flow table of ``studies/history/results-history.md`` §5 from finished ``programl train dataflow`` run
directories.

Reads each run's ``result.json`` (test of the best checkpoint, scored in the run's validation/test batches) and, when
present, ``drop-T30.json`` (the same checkpoint at T=30 under the original code's batch policy, written by
``programl evaluate dataflow --eval-batch-policy drop --test-steps 30`` and copied from
``evaluation_best_test.json``), and prints one markdown row per run, so that the published numbers are the measured
ones.

With ``--json docs/results.json`` it also writes each run's headline numbers into the ``"dataflow"`` entry of that
file (other entries are kept): ``{"f1", "pooled_f1", "examples", "cpu_hours"}`` per analysis, ``examples`` being the
training examples seen and ``cpu_hours`` the training and test time times processes (``tests/test_results_doc.py``
checks them against ``studies/history/results-history.md``).

Usage::

    python studies/dataflow_results_table.py runs/reachability runs/dominance ... [--json docs/results.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from programl.exceptions import ProgramlError
from programl.util.fs import atomic_write_text, read_json

HEADER = (
    "| analysis | train examples seen (available, DDF-30) | CPU time | best epoch (val F1) | test examples T=30 "
    "| P | R | F1 | pooled F1 | F1, drop policy (examples scored) | paper DDF-30 P / R / F1 | T=60 F1 | T=200 F1 |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min"


def row(run_dir: Path) -> str:
    """One markdown row for ``run_dir``."""
    result = read_json(run_dir / "result.json")
    tests = result["tests"]
    t30 = tests["T30"]
    assert t30["batch_nodes"] == 10000 and t30["batch_policy"] == "carry", (run_dir, t30["batch_nodes"])
    drop = "–"
    drop_path = run_dir / "drop-T30.json"
    if drop_path.is_file():
        dropped = read_json(drop_path)["tests"]["T30"]
        assert dropped["batch_policy"] == "drop", drop_path
        drop = f"{dropped['f1']:.3f} ({dropped['examples_scored']:,})"
    paper = result["paper_ddf30"]
    test_seconds = sum(t.get("seconds", 0.0) for t in tests.values())

    def f1(key: str) -> str:
        return f"{tests[key]['f1']:.3f}" if key in tests else "–"

    return (
        f"| {result['analysis']} | {result['train_examples_seen']:,} ({result['train_examples_available']:,}) "
        f"| {_minutes(result['train_seconds'])} + {_minutes(test_seconds)} test "
        f"| {result['best_epoch']} ({result['best_val_f1']:.3f}) | {t30['examples_scored']:,} "
        f"| {t30['precision']:.3f} | {t30['recall']:.3f} | **{t30['f1']:.3f}** | {t30['pooled_f1']:.3f} | {drop} "
        f"| {paper['precision']:.3f} / {paper['recall']:.3f} / {paper['f1']:.3f} | {f1('T60')} | {f1('T200')} |"
    )


def headline(run_dir: Path) -> tuple[str, dict]:
    """The analysis of ``run_dir`` and its ``docs/results.json`` entry."""
    result = read_json(run_dir / "result.json")
    t30 = result["tests"]["T30"]
    seconds = result["train_seconds"] + sum(t.get("seconds", 0.0) for t in result["tests"].values())
    return result["analysis"], {
        "f1": round(t30["f1"], 3),
        "pooled_f1": round(t30["pooled_f1"], 3),
        "examples": result["train_examples_seen"],
        "cpu_hours": round(seconds * result.get("world_size", 1) / 3600, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories of `programl train dataflow`")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the headline numbers into FILE")
    args = parser.parse_args(argv)
    print(HEADER)
    headlines = {}
    for run_dir in args.runs:
        try:
            print(row(run_dir))
            name, numbers = headline(run_dir)
        except (OSError, KeyError, ValueError, ProgramlError) as error:
            print(f"{run_dir}: not a finished dataflow run ({error})", file=sys.stderr)
            return 1
        headlines[name] = numbers
    if args.json:
        try:
            doc = read_json(args.json) if args.json.is_file() else {}
        except ProgramlError as error:
            print(error, file=sys.stderr)
            return 1
        doc["dataflow"] = headlines
        atomic_write_text(args.json, json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
