#!/usr/bin/env python3
"""A data-flow model's precision, recall and F1 by each node's distance from the root (issue 11 item 4).

Runs a pretrained data-flow model (a shipped name such as ``liveness``, or a model directory) on a split of a
DeepDataFlow data set at one or more step counts T and buckets every node of every example by its distance from the
example's root (0-5, 6-10, 11-20, 21-30, 31-60, 61-200, >200, unreachable): true positives, false negatives, false
positives, precision, recall, F1, and the bucket's share of all positives and of all misses. Two distances
(:mod:`studies.distance` defines them exactly): ``hops``, over every edge ignoring direction (a T-step GGNN
cannot tell the root of a node more than T hops away), and ``control``, the forward control-flow distance (for
liveness: to the nearest use of a value, plus one).

Usage::

    python studies/dataflow_f1_by_distance.py --model liveness --dataset ddf22 --max-examples 500 \\
        --steps 30 200 --max-steps all --json out/liveness.json --plot out/liveness.png
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: ``--max-steps`` values that mean "no filter".
_NO_FILTER = ("all", "none", "0")


def _max_steps(text: str) -> int | None:
    if text.lower() in _NO_FILTER:
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of steps or 'all', not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("Usage::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", required=True, metavar="NAME|DIR", help="a shipped model name or a model directory")
    parser.add_argument("--dataset", required=True, metavar="DIR", help="a DeepDataFlow data set directory")
    parser.add_argument("--split", default="test", help="train, val or test (default: test)")
    parser.add_argument(
        "--processed-dir", metavar="DIR", help="where the split's PyG form goes (default: DIR/processed)"
    )
    parser.add_argument(
        "--max-examples",
        type=int,
        default=0,
        metavar="N",
        help="score a seeded sample of N examples (0: all; default: all)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=205,
        help="seed of the sample (default: 205, the sample training's --test-examples scores)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        nargs="+",
        metavar="T",
        help="message-passing steps, each run on the same examples (default: the model's, 30)",
    )
    parser.add_argument(
        "--max-steps",
        type=_max_steps,
        default=30,
        metavar="N|all",
        help="keep examples of at most N data-flow steps, as training does (default: 30, DDF-30; 'all': no filter)",
    )
    parser.add_argument(
        "--max-nodes",
        type=int,
        default=40_000,
        metavar="N",
        help="leave out graphs of more than N nodes (default: 40,000, as training)",
    )
    parser.add_argument(
        "--distance",
        nargs="+",
        choices=("hops", "control"),
        default=["hops", "control"],
        help="distances to bucket by (default: both)",
    )
    parser.add_argument("--batch-nodes", type=int, default=10_000, metavar="N", help="nodes per batch (10,000)")
    parser.add_argument("--threads", type=int, metavar="N", help="torch threads (default: torch's)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the tables as JSON")
    parser.add_argument("--plot", type=Path, metavar="OUT.png", help="draw recall, precision and share of positives")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    for name in ("max_examples", "max_nodes", "batch_nodes", "threads"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "max_examples" else 1):
            parser.error(f"--{name.replace('_', '-')} must be {'>= 0' if name == 'max_examples' else 'positive'}")
    if args.steps and min(args.steps) < 0:
        parser.error("--steps must be >= 0")
    args.distance = list(dict.fromkeys(args.distance))
    return args


def load_examples(args, pretrained):
    """The split's examples, encoded with the model's vocabulary, filtered and sampled as asked; and how many there
    were before sampling."""
    from programl.data.deepdataflow.layout import Layout
    from programl.datasets import DeepDataFlow
    from programl.exceptions import ProgramlError
    from programl.util.progress import progress

    layout = Layout(args.dataset)
    if not layout.root.is_dir():
        raise ProgramlError(f"{args.dataset}: no such data set directory")
    if not layout.has_labels(pretrained.analysis) or not layout.split_dir(args.split).is_dir():
        raise ProgramlError(
            f"{args.dataset}: not a DeepDataFlow data set with {pretrained.analysis} labels and a {args.split} split"
        )

    def bar(items, total, description):
        return progress(items, total, f"converting {description}", enabled=not args.quiet, unit="graph")

    try:
        data = DeepDataFlow.from_directory(
            args.dataset,
            pretrained.analysis,
            args.split,
            max_steps=args.max_steps,
            max_nodes=args.max_nodes,
            vocabulary_path=pretrained.directory / pretrained.metadata["vocabulary"]["file"],
            processed_dir=args.processed_dir,
            progress=bar,
        )
    except (OSError, ValueError) as error:
        raise ProgramlError(f"{args.dataset}: {getattr(error, 'strerror', None) or error}") from None
    available = len(data)
    if args.max_examples:
        data = data.fixed_sample(args.max_examples, args.seed)
    return data, available


def plot(result: dict, path: Path) -> None:
    """Per distance, one panel: recall (bars) and precision (dashed lines) per bucket and T, and each bucket's share
    of all positives (black dashes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from studies.distance import BUCKETS

    runs = list(result["results"].values())
    names = list(runs[0]["distances"])
    figure, axes = plt.subplots(1, len(names), figsize=(6.5 * len(names), 5.0), squeeze=False, sharey=True)
    x = np.arange(len(BUCKETS))
    width = 0.8 / max(len(runs), 1)
    colors = plt.get_cmap("tab10").colors
    for ax, name in zip(axes[0], names):
        rows = runs[0]["distances"][name]["buckets"]
        share = np.array([r["positive_share"] for r in rows])
        shown = share > 0
        ax.scatter(
            x[shown],
            share[shown],
            marker="_",
            s=900,
            linewidths=3,
            color="black",
            zorder=4,
            label="share of all positives",
        )
        for k, run in enumerate(runs):
            rows = run["distances"][name]["buckets"]
            color = colors[k % len(colors)]
            offset = (k - (len(runs) - 1) / 2) * width
            has = np.array([r["true_positives"] + r["false_negatives"] > 0 for r in rows])
            recall = np.array([r["recall"] for r in rows])
            ax.bar(
                (x + offset)[has],
                recall[has],
                width=width * 0.9,
                color=color,
                alpha=0.8,
                label=f"recall, T={run['steps']} (F1 {run['pooled']['f1']:.3f})",
            )
            predicted = np.array([r["true_positives"] + r["false_positives"] > 0 for r in rows])
            precision = np.array([r["precision"] if p else np.nan for r, p in zip(rows, predicted)])
            ax.plot(
                x, precision, marker="o", color=color, linestyle="--", label=f"precision, T={run['steps']}", zorder=3
            )
        ax.set_xticks(x, BUCKETS, rotation=30)
        ax.set_xlabel(
            f"{name} distance from the root"
            + (" (all edges, both directions)" if name == "hops" else " (forward control flow, values via their uses)")
        )
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(f"by {name}")
    axes[0][0].set_ylabel("recall / precision / share")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(
        handles, labels, loc="lower center", ncol=min(len(labels), 5), fontsize=8, frameon=False, markerscale=0.6
    )
    filt = f"DDF-{result['max_steps']}" if result["max_steps"] is not None else "no step filter"
    model = result["model"] if result["model"] == result["analysis"] else f"{result['model']} ({result['analysis']})"
    figure.suptitle(
        f"{model} model on {Path(result['dataset']).name} {result['split']}, {filt}: {result['examples']:,} of "
        f"{result['examples_available']:,} examples, {result['nodes']:,} nodes"
    )
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def load_model_and_examples(args):
    """The pretrained data-flow model ``args.model``, its examples and how many there were before sampling
    (:func:`load_examples`), with ``args.threads`` torch threads set."""
    import torch

    from programl.exceptions import ProgramlError
    from programl.pretrained import pretrained as load_pretrained

    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_pretrained(args.model)
    if model.task != "dataflow":
        raise ProgramlError(f"{args.model}: a {model.task} model, not a data-flow model")
    data, available = load_examples(args, model)
    return model, data, available


def run(args: argparse.Namespace) -> int:
    study = runpy.run_path(str(Path(__file__).with_name("distance_scores.py")))
    score_by_distance, scores_to_dict = study["score_by_distance"], study["scores_to_dict"]
    from programl.util.progress import progress

    model, data, available = load_model_and_examples(args)
    steps = args.steps or [int(model.metadata.get("steps", 30))]
    started = time.perf_counter()

    def bar(items, total, description):
        return progress(items, total, description, enabled=not args.quiet, unit="batch")

    scores = score_by_distance(
        model, data, steps=steps, distances=args.distance, batch_nodes=args.batch_nodes, progress=bar
    )
    result = {
        "model": model.name,
        "analysis": model.analysis,
        "dataset": str(Path(args.dataset).resolve()),
        "split": args.split,
        "max_steps": args.max_steps,
        "max_nodes": args.max_nodes,
        "examples": len(data),
        "examples_available": available,
        "seed": args.seed if args.max_examples else None,
        "nodes": int(data.sizes.sum()) if len(data) else 0,
        "seconds": round(time.perf_counter() - started, 1),
        "results": scores_to_dict(scores),
    }
    filt = f"DDF-{args.max_steps}" if args.max_steps is not None else "all examples"
    print(
        f"{model.name} ({model.analysis}) on {args.dataset} {args.split}, {filt}: {len(data):,} of {available:,} "
        f"examples, {result['nodes']:,} nodes"
    )
    for t, by_name in scores.items():
        for name, s in by_name.items():
            p = s.pooled()
            print(f"\nT={t}, by {name} distance (pooled P {p['precision']:.3f} R {p['recall']:.3f} F1 {p['f1']:.3f})")
            print(s.table())
            if name == "hops":
                far = s.beyond(t)
                positives, misses = p["true_positives"] + p["false_negatives"], p["false_negatives"]
                print(
                    f"beyond {t} hops (the model cannot see the root): {far['positives']:,} of {positives:,} "
                    f"positives ({100 * far['positives'] / max(positives, 1):.1f}%), {far['misses']:,} of "
                    f"{misses:,} misses ({100 * far['misses'] / max(misses, 1):.1f}%)"
                )
                result["results"][f"T{t}"]["distances"][name]["beyond_steps"] = far
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.plot:
        plot(result, args.plot)
    return 0


def one_line_errors(run, args: argparse.Namespace) -> int:
    """``run(args)``, with a :class:`~programl.exceptions.ProgramlError` or an ``OSError`` (an unwritable ``--json``)
    printed as one line ``error: ...`` and exit status 1 (the data-flow scoring scripts share it)."""
    from programl.exceptions import ProgramlError

    try:
        return run(args)
    except (ProgramlError, OSError) as error:
        text = str(error).strip()
        print(f"error: {text.splitlines()[0] if text else type(error).__name__}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    return one_line_errors(run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
