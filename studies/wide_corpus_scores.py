"""The shipped data-flow models' scores on each source of a DeepDataFlow build (issue 36 item 4: "report per source
... the models' F1 on it"; SPEC §6.1 for the model and the metrics, §7.1 for DDF-30 / DDF-60).

For every analysis, the shipped model (:func:`programl.pretrained.pretrained`) scores a seeded sample of up to
``--per-source`` examples of each source (the part of a graph's name before its first ``.``: ``zstd``, ``blas``,
``poj104``, ``opencl`` ...), from all three splits of the build (the shipped models were trained on DeepDataFlow-22,
so every archive source is code they never saw; POJ-104 and the DevMap kernels are their own corpus), read through
:class:`programl.datasets.DeepDataFlow` with the model's vocabulary and scored by the engine's one evaluation
loop (:func:`programl.training.engine.evaluate`) at each ``--tests T:LIMIT`` (default ``30:30 60:60``: T=30 on
DDF-30, T=60 on DDF-60; ``200:all`` adds every example at T=200), in 10,000-node batches. Per cell: the paper's
per-batch F1 and the pooled F1 (one confusion matrix over the sample), with the examples scored.

Usage::

    python studies/wide_corpus_scores.py data/ddf22-wide --json wide_scores.json
    python studies/wide_corpus_scores.py data/ddf22-wide --step-free --tests stable:all   # the step-free variants
    python studies/wide_corpus_scores.py data/ddf22-wide --model liveness-floods --tests 30:30 30:all
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
from programl.pretrained import pretrained, pretrained_names  # noqa: E402
from programl.tasks.dataflow.train import DataflowScoring  # noqa: E402
from programl.training.engine import evaluate  # noqa: E402

SPLITS = ("train", "val", "test")
SHORT = {"reachability": "reach", "dominance": "dom", "datadep": "datadep", "liveness": "live", "subexpressions": "cse"}


def samples(
    root: Path, analysis: str, vocabulary: Path, limit: int | None, per_source: int, seed: int, splits=SPLITS
) -> dict:
    """``{source: [(dataset view, split), ...]}``: up to ``per_source`` examples of each source within ``limit``
    steps, drawn in a seeded order over ``splits`` (default: all three)."""
    by_source: dict[str, list] = {}
    for split in splits:
        data = DeepDataFlow.from_directory(
            root, analysis, split, max_steps=limit, max_nodes=40_000, vocabulary_path=vocabulary
        )
        names = [source_of(data.graph_name(i)) for i in range(len(data))]
        for source in sorted(set(names)):
            members = [i for i, s in enumerate(names) if s == source]
            by_source.setdefault(source, []).append((data, split, members))
    out = {}
    for source, parts in by_source.items():
        pool = [(data, split, i) for data, split, members in parts for i in members]
        chosen = np.random.default_rng([seed, len(pool)]).permutation(len(pool))[:per_source]
        views = []
        for data, split, _ in parts:
            picked = sorted(pool[j][2] for j in chosen if pool[j][0] is data)
            if picked:
                views.append((data.index_select(picked), split))
        out[source] = views
    return out


def score(model, views, steps: int | str, bounds: dict | None = None) -> dict:
    """Per-batch and pooled scores of ``model`` at ``steps`` (or ``"stable"``: until stable within ``bounds``, a
    step-free model's ``model.json`` ``inference``) over the examples of ``views``."""
    metrics = MetricsAccumulator()
    task = DataflowScoring(**{k: v for k, v in (bounds or {}).items() if k in ("min_steps", "max_steps", "patience")})
    for view, _ in views:
        plan = NodeBudgetBatchSampler(view.sizes, 10_000).plan()
        evaluate(task, model, make_loader(view, plan), metrics=metrics, steps=steps)
    computed = metrics.compute()
    return {
        "examples": int(sum(len(v) for v, _ in views)),
        "splits": sorted({split for _, split in views}),
        "f1": computed["mean_f1"],
        "precision": computed["mean_precision"],
        "recall": computed["mean_recall"],
        "pooled_f1": computed["pooled_f1"],
    }


def table(result: dict) -> str:
    analyses = list(result["analyses"])
    tests = result["tests"]
    head = ["source"] + [
        f"{SHORT[a]} {'until stable' if t == 'stable' else f'T={t}'} {'DDF-' + str(lim) if lim else 'all'}"
        for a in analyses
        for t, lim in tests
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sources = sorted({s for a in analyses for s in result["analyses"][a]})
    for source in sources:
        cells = [source]
        for a in analyses:
            for t, _ in tests:
                cell = result["analyses"][a].get(source, {}).get(f"T{t}")
                cells.append(
                    ""
                    if not cell or not cell["examples"]
                    else f"{cell['f1']:.3f} ({cell['pooled_f1']:.3f}; {cell['examples']})"
                )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a DeepDataFlow build (e.g. of datasets/deepdataflow22-wide)")
    parser.add_argument("--analyses", nargs="+", default=list(ANALYSES), choices=ANALYSES)
    parser.add_argument("--per-source", type=int, default=200, help="examples per source and test (default: 200)")
    parser.add_argument(
        "--tests", nargs="+", default=["30:30", "60:60"], help="T:LIMIT pairs (LIMIT 'all': every example)"
    )
    parser.add_argument(
        "--step-free",
        action="store_true",
        help="score each analysis's step-free variant (NAME-step-free; analyses without one are left out); a T of "
        "'stable' runs it until stable as predict does",
    )
    parser.add_argument(
        "--model",
        metavar="NAME_OR_DIR",
        help="score this model (a shipped name or an exported directory) for its own analysis instead",
    )
    parser.add_argument(
        "--splits",
        nargs="+",
        default=list(SPLITS),
        choices=SPLITS,
        help="draw the examples from these splits (default: all three; 'val test' for a model trained on this build)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=204)
    parser.add_argument("--json", type=Path, help="write the scores as JSON")
    args = parser.parse_args(argv)
    if args.model and args.step_free:
        parser.error("--model names the model: leave out --step-free")
    torch.set_num_threads(args.threads)
    tests = [
        (t if t == "stable" else int(t), None if lim == "all" else int(lim))
        for t, lim in (x.split(":") for x in args.tests)
    ]
    result = {
        "data": str(args.data.resolve()),
        "per_source": args.per_source,
        "splits": args.splits,
        "tests": tests,
        "analyses": {},
    }
    if args.model:
        args.analyses = [pretrained(args.model).metadata["analysis"]]
    for analysis in args.analyses:
        name = args.model or (f"{analysis}-step-free" if args.step_free else analysis)
        if not args.model and name not in pretrained_names():
            print(f"{name}: not installed; left out", file=sys.stderr)
            continue
        model = pretrained(name)
        result.setdefault("models", {})[analysis] = model.name
        vocabulary = model.directory / model.metadata["vocabulary"]["file"]
        cells: dict = {}
        for steps, limit in tests:
            started = time.perf_counter()
            chosen = samples(args.data, analysis, vocabulary, limit, args.per_source, args.seed, args.splits)
            for source, views in chosen.items():
                cells.setdefault(source, {})[f"T{steps}"] = {
                    "limit": limit,
                    **score(model.model, views, steps, model.metadata.get("inference")),
                }
            print(f"{analysis} T={steps}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
        result["analyses"][analysis] = cells
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
