"""No step count to choose (issue 36 item 2): a data-flow model run until its predictions stop changing, against
fixed step counts, on examples of every length.

The faithful models were trained at T=30 and are scored at T=30 on DDF-30 (SPEC §7.1); real code needs more steps,
and no one T serves every example (issue 36: at T=200 reachability recovers on long examples while dominance
overshoots on short ones). :meth:`programl.models.DataflowGGNN.forward_until_stable` runs each graph of a batch at
least ``--min-steps`` (the trained T) and then on until no node's predicted class changed for ``--patience`` steps
(at most ``--max-steps``), as the analysis itself runs to its fixed point. This script scores that mode beside fixed
T (``--steps``, default 30, 60 and 200) with the shipped models (:func:`programl.pretrained.pretrained`) on a
DeepDataFlow build, by the examples' data-flow step count (the buckets <= 30, 31-60 and > 60 steps: DDF-30, the
rest of DDF-60, the rest of DDF), with a seeded sample of up to ``--per-bucket`` examples each, read through
:class:`programl.datasets.DeepDataFlow` with the model's vocabulary and scored by the engine's one
evaluation loop (:func:`programl.training.engine.evaluate`) in 10,000-node batches. "all" merges the buckets.

Sources the models were trained on are left out by default (``--exclude-sources poj104 opencl``: DeepDataFlow-22
is POJ-104 and the DevMap kernels), so every example scored is code the models never saw.

Usage::

    python studies/dataflow_until_stable.py data/ddf22-wide --json until_stable.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from programl.data.deepdataflow.recipe import source_of  # noqa: E402
from programl.dataflow.names import ANALYSES  # noqa: E402
from programl.datasets import DeepDataFlow  # noqa: E402
from programl.loader import NodeBudgetBatchSampler, make_loader  # noqa: E402
from programl.models import MetricsAccumulator  # noqa: E402
from programl.pretrained import pretrained  # noqa: E402
from programl.tasks.dataflow.train import DataflowScoring  # noqa: E402
from programl.training.engine import evaluate  # noqa: E402

BUCKETS = {"<=30": (0, 30), "31-60": (31, 60), ">60": (61, None)}


def bucket_samples(root: Path, analysis: str, vocabulary: Path, per_bucket: int, exclude: set[str], seed: int):
    """``{bucket: [dataset views]}``: a seeded sample of up to ``per_bucket`` examples per step bucket, over the three
    splits, without the ``exclude`` sources."""
    pool = []  # (dataset, index, step count)
    for split in ("train", "val", "test"):
        data = DeepDataFlow.from_directory(
            root, analysis, split, max_steps=None, max_nodes=40_000, vocabulary_path=vocabulary
        )
        counts = data.step_counts
        pool += [(data, i, int(counts[i])) for i in range(len(data)) if source_of(data.graph_name(i)) not in exclude]
    out = {}
    for bucket, (low, high) in BUCKETS.items():
        members = [p for p in pool if p[2] >= low and (high is None or p[2] <= high)]
        chosen = [members[j] for j in np.random.default_rng([seed, low]).permutation(len(members))[:per_bucket]]
        views = []
        for data in {id(p[0]): p[0] for p in chosen}.values():
            picked = sorted(p[1] for p in chosen if p[0] is data)
            views.append(data.index_select(picked))
        out[bucket] = views
    return out


def score(model, views, mode: str, args) -> dict:
    """One cell: the model at T=``mode`` or until stable on the examples of ``views`` (10,000-node batches)."""
    task = DataflowScoring(min_steps=args.min_steps, max_steps=args.max_steps, patience=args.patience)
    steps = mode if mode == "stable" else int(mode)
    metrics = MetricsAccumulator()
    started = time.perf_counter()
    for view in views:
        plan = NodeBudgetBatchSampler(view.sizes, 10_000).plan()
        evaluate(task, model, make_loader(view, plan), metrics=metrics, steps=steps)
    return metrics, cell(
        metrics,
        sum(len(v) for v in views),
        task.mean_steps() if mode == "stable" else steps,
        time.perf_counter() - started,
    )


def cell(metrics: MetricsAccumulator, examples: int, mean_steps: float, seconds: float) -> dict:
    computed = metrics.compute()
    return {
        "examples": examples,
        "f1": computed["mean_f1"],
        "pooled_f1": computed["pooled_f1"],
        "precision": computed["pooled_precision"],
        "recall": computed["pooled_recall"],
        "mean_steps": mean_steps,
        "seconds": round(seconds, 1),
    }


def table(result: dict) -> str:
    lines = []
    for analysis, modes in result["analyses"].items():
        buckets = [*BUCKETS, "all"]
        lines += [
            f"\n{analysis} (F1 per batch, pooled; mean steps)\n",
            "| mode | " + " | ".join(buckets) + " |",
            "|---|" + "---|" * len(buckets),
        ]
        for mode, cells in modes.items():
            row = [f"{c['f1']:.3f}, {c['pooled_f1']:.3f}; {c['mean_steps']:.0f}" for c in (cells[b] for b in buckets)]
            lines.append(f"| {mode} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a DeepDataFlow build")
    parser.add_argument("--analyses", nargs="+", default=list(ANALYSES), choices=ANALYSES)
    parser.add_argument("--per-bucket", type=int, default=200, help="examples per step bucket (default: 200)")
    parser.add_argument("--steps", type=int, nargs="+", default=[30, 60, 200], help="fixed T to compare")
    parser.add_argument("--min-steps", type=int, default=30)
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--exclude-sources", nargs="*", default=["poj104", "opencl"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=204)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    modes = [str(t) for t in args.steps] + ["stable"]
    result = {
        "data": str(args.data.resolve()),
        "per_bucket": args.per_bucket,
        "min_steps": args.min_steps,
        "max_steps": args.max_steps,
        "patience": args.patience,
        "excluded_sources": args.exclude_sources,
        "analyses": {},
    }
    for analysis in args.analyses:
        model = pretrained(analysis)
        vocabulary = model.directory / model.metadata["vocabulary"]["file"]
        samples = bucket_samples(args.data, analysis, vocabulary, args.per_bucket, set(args.exclude_sources), args.seed)
        cells: dict = {}
        for mode in modes:
            merged, row = MetricsAccumulator(), {}
            for bucket, views in samples.items():
                metrics, row[bucket] = score(model.model, views, mode, args)
                merged.merge(metrics)
            examples = sum(c["examples"] for c in row.values())
            mean_steps = sum(c["mean_steps"] * c["examples"] for c in row.values()) / max(1, examples)
            row["all"] = cell(merged, examples, mean_steps, sum(c["seconds"] for c in row.values()))
            cells["T=" + mode if mode != "stable" else "until stable"] = row
            print(f"{analysis} {mode}: {row['all']['seconds']:.0f} s", file=sys.stderr)
        result["analyses"][analysis] = cells
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
