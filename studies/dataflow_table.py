"""The paper's data-flow table for a model (issue 36 item 1; SPEC §7.1): DDF-30 at T=30, DDF-60 at T=60 and DDF (every
example) at T=200, precision, recall and F1 of the true class per 10,000-node batch (the paper's numbers) and pooled
over all nodes, on the DeepDataFlow-22 test split.

Usage::

    python studies/dataflow_table.py DDF22_BUILD --models reachability datadep ... --json table.json
    python studies/dataflow_table.py DDF22_BUILD --models DIR --stable        # a step-free variant, until stable
    python studies/dataflow_table.py DDF22_BUILD --models liveness --cells DDF-30 --by-size --plot size.png
    python studies/dataflow_table.py DDF22_BUILD --models liveness --steps 30    # every cell at T=30

``--by-size`` also scores each cell's examples by the size of their graph (nodes: up to 100, 101-200, 201-500,
501-1,000, more; issue 36 item 3: "liveness F1 >= 0.97 on graphs of more than 500 nodes, by graph size, as a table
and a plot"), the same inference, every example of the bucket (``--examples`` samples within each bucket);
``--plot`` draws F1 against graph size, one line per model and cell.

``--floods-from NAME`` (a model trained with ``--control-floods``, issue 36 item 3): the floods it reads come from
the reachability model ``NAME`` (:class:`~studies.learned_floods.LearnedControlFloods`, until stable where
its ``model.json`` says so) instead of being computed exactly; the two models must share a vocabulary.

``--stable`` scores each cell until the predictions stop changing (the step-free variant's own inference:
:meth:`~programl.models.DataflowGGNN.forward_until_stable`, at least the model's T, ``--patience`` (by default
the model's own, as ``programl predict`` runs it; several to choose one on ``--split val``), ``--max-steps`` and
``--latch`` (the model's own by default too)) instead of at the cell's T: the
``step_free_table`` of ``docs/results.json``. A model is a shipped name or an exported model directory
(``programl export-pretrained RUN NAME --directory DIR``); each reads the data set with its own vocabulary.

**Which test examples.** The shipped models were trained on the full DeepDataFlow-22 build (104,534 inputs), whose
split cuts the seeded order of its groups (source programs) at 3:1:1 (:mod:`programl.data.deepdataflow.split`). A
smaller build (``--size N``) cuts the order of its own groups, so its test split holds mostly, but not only, groups
of the full build's test split. With ``--recipe`` and ``--data`` the script enumerates the full build's candidate
groups (every POJ-104 program and DevMap kernel file, without compiling) and keeps the test examples whose group
ranks in the last ``1 - --safe-rank`` of that order: the full build's test split starts at rank 0.8 (up to the
compile failures, which fall evenly over the seeded order, so 0.81 leaves a margin of 1 % of the groups).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from programl.data import devmap, poj104  # noqa: E402
from programl.data.deepdataflow.layout import read_manifest  # noqa: E402
from programl.data.deepdataflow.recipe import load_recipe  # noqa: E402
from programl.datasets import DeepDataFlow  # noqa: E402
from programl.loader import NodeBudgetBatchSampler, make_loader  # noqa: E402
from programl.models import MetricsAccumulator  # noqa: E402
from programl.pretrained import pretrained  # noqa: E402
from programl.tasks.dataflow.predict import until_stable_bounds  # noqa: E402
from programl.tasks.dataflow.train import PAPER_TABLE, DataflowScoring, at_least_nodes  # noqa: E402
from programl.training.engine import evaluate  # noqa: E402

#: (cell, step filter, T): SPEC §7.1.
CELLS = (("DDF-30", 30, 30), ("DDF-60", 60, 60), ("DDF", None, 200))

#: ``--by-size``: (label, fewest nodes, most nodes) of each bucket of graph size.
SIZE_BUCKETS = (
    ("<=100", 0, 100),
    ("101-200", 101, 200),
    ("201-500", 201, 500),
    ("501-1000", 501, 1000),
    (">1000", 1001, None),
)


def full_build_ranks(recipe_path: Path, data_dir: Path) -> dict[str, float]:
    """``{group: rank in [0, 1)}`` of every candidate group of the recipe's full build, in the split's seeded order
    (:func:`programl.data.deepdataflow.split.split_groups`): POJ-104 programs and DevMap kernel files."""
    recipe = load_recipe(recipe_path)
    seed = int(recipe.get("seed", 204))
    groups: set[str] = set()
    for source in recipe["sources"]:
        if source.get("kind") == "poj104":
            groups |= {f"poj104_{p.id}" for p in poj104.read_programs(data_dir / source["path"], verify=False)}
        elif source.get("kind") == "devmap":
            files = devmap.check_sources(data_dir / source["path"], verify=False)
            groups |= {f"opencl_{row.kernels_cl_file}" for row in devmap.read_manifest(files[devmap.MANIFEST_FILE])}
        else:
            raise SystemExit(f"{recipe_path}: a {source.get('kind')!r} source cannot be enumerated without building")
    ordered = sorted(groups, key=lambda g: (hashlib.sha256(f"{seed}:{g}".encode()).digest(), g))
    return {g: i / len(ordered) for i, g in enumerate(ordered)}


def test_examples(
    root: Path, analysis: str, vocabulary: Path, limit: int | None, keep: set[str] | None, split: str = "test"
):
    """The ``split`` (default: test) of ``analysis`` with the step filter ``limit``, restricted to the graphs in
    ``keep``."""
    data = DeepDataFlow.from_directory(
        root, analysis, split, max_steps=limit, max_nodes=40_000, vocabulary_path=vocabulary
    )
    if keep is None:
        return data
    return data.index_select([i for i in range(len(data)) if data.graph_name(i) in keep])


class PatienceScoring(DataflowScoring):
    """Until stable at several patiences in one pass (:meth:`~programl.models.DataflowGGNN.forward_until_stable_each`):
    an accumulator and the step counts per patience (:attr:`by_patience`); the engine's own accumulator gets the
    largest patience's logits."""

    def __init__(self, *, min_steps: int, max_steps: int, patiences, latch: bool = False) -> None:
        self.patiences = sorted(set(patiences))
        super().__init__(min_steps=min_steps, max_steps=max_steps, patience=self.patiences[-1], latch=latch)
        self.by_patience = {p: (MetricsAccumulator(), [0, 0]) for p in self.patiences}

    def step(self, model, batch, metrics, steps=None):
        out = model.forward_until_stable_each(
            batch, min_steps=self.min_steps, max_steps=self.max_steps, patiences=self.patiences, latch=self.latch
        )
        for patience, (logits, taken) in out.items():
            accumulator, counts = self.by_patience[patience]
            accumulator.update(logits, batch.y)
            counts[0] += int(taken.sum())
            counts[1] += int(taken.numel())
        metrics.update(out[self.patiences[-1]][0], batch.y)


def cell_of(metrics: MetricsAccumulator, examples: int, steps, mean_steps, seconds: float) -> dict:
    """A table cell: precision, recall and F1 per batch and pooled, with the inference that made them."""
    computed = metrics.compute()
    cell = {k: computed[f"mean_{k}"] for k in ("precision", "recall", "f1")}
    cell.update({f"pooled_{k}": computed[f"pooled_{k}"] for k in ("precision", "recall", "f1")})
    cell.update(examples=examples, steps=steps, mean_steps=mean_steps, seconds=round(seconds, 1))
    return cell


def sampled(data, args):
    return data.fixed_sample(args.examples, args.seed) if args.examples and len(data) > args.examples else data


def score(model, data, steps, args) -> dict:
    """One cell: ``model`` at ``steps`` (or until stable) on ``data`` in 10,000-node batches."""
    if steps == "stable":
        return score_patiences(model, data, [args.patience], args)[args.patience]
    task = DataflowScoring(min_steps=model.num_steps)
    data = sampled(data, args)
    metrics = MetricsAccumulator()
    started = time.perf_counter()
    plan = NodeBudgetBatchSampler(data.sizes, 10_000).plan()
    evaluate(task, model, make_loader(data, plan), metrics=metrics, steps=steps)
    return cell_of(metrics, len(data), steps, steps, time.perf_counter() - started)


def score_patiences(model, data, patiences, args) -> dict[int, dict]:
    """``{patience: cell}``: ``model`` until stable on ``data`` at each patience, in one pass (10,000-node
    batches); every cell's seconds are the pass's."""
    task = PatienceScoring(
        min_steps=model.num_steps, max_steps=args.max_steps, patiences=patiences, latch=bool(args.latch)
    )
    data = sampled(data, args)
    started = time.perf_counter()
    plan = NodeBudgetBatchSampler(data.sizes, 10_000).plan()
    evaluate(task, model, make_loader(data, plan), metrics=MetricsAccumulator())
    seconds = time.perf_counter() - started
    return {
        p: cell_of(metrics, len(data), "stable", round(counts[0] / max(1, counts[1]), 1), seconds)
        for p, (metrics, counts) in task.by_patience.items()
    }


def by_size(model, data, steps, args) -> dict:
    """``{bucket: cell}``: :func:`score` on the examples of each :data:`SIZE_BUCKETS` bucket (buckets without an
    example are left out)."""
    out = {}
    for label, low, high in SIZE_BUCKETS:
        members = [i for i, n in enumerate(data.sizes) if n >= low and (high is None or n <= high)]
        if members:
            out[label] = score(model, data.index_select(members), steps, args)
    return out


def size_table(result: dict) -> str:
    """F1 (pooled F1) and examples per bucket of graph size, a row per model and cell."""
    labels = [label for label, _, _ in SIZE_BUCKETS]
    lines = [
        "| model | cell | inference | " + " | ".join(f"{b} nodes" for b in labels) + " |",
        "|---|---|---|" + "---|" * len(labels),
    ]
    for name, entry in result["models"].items():
        for cell, buckets in entry.get("by_size", {}).items():
            steps = entry["table"][cell]["steps"]
            row = [
                f"{b['f1']:.3f} ({b['pooled_f1']:.3f}), {b['examples']:,}" if b else ""
                for b in (buckets.get(label) for label in labels)
            ]
            lines.append(
                f"| {name} | {cell} | {'until stable' if steps == 'stable' else f'T={steps}'} | "
                + " | ".join(row)
                + " |"
            )
    return "\n".join(lines)


def plot_by_size(result: dict, path: Path) -> None:
    """F1 per 10,000-node batch against graph size, a line per model and cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for label, _, _ in SIZE_BUCKETS]
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, entry in result["models"].items():
        for cell, buckets in entry.get("by_size", {}).items():
            xs = [i for i, label in enumerate(labels) if label in buckets]
            ax.plot(xs, [buckets[labels[i]]["f1"] for i in xs], marker="o", label=f"{name}, {cell}")
    ax.set_xticks(range(len(labels)), [f"{b}" for b in labels])
    ax.set_xlabel("graph size (nodes)")
    ax.set_ylabel("F1 (per 10,000-node batch)")
    ax.set_title("Data-flow F1 by graph size (DeepDataFlow-22 test split)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def table(result: dict) -> str:
    lines = [
        "| model | analysis | cell | inference | examples | precision | recall | F1 | pooled F1 | paper F1 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in result["models"].items():
        for cell, c in entry["table"].items():
            inference = "until stable" if c["steps"] == "stable" else f"T={c['steps']}"
            if c["steps"] == "stable":
                inference += f" ({c['mean_steps']:.0f} steps)"
            paper = entry["paper"].get(cell)
            lines.append(
                f"| {name} | {entry['analysis']} | {cell} | {inference} | {c['examples']:,} | {c['precision']:.3f} | "
                f"{c['recall']:.3f} | {c['f1']:.3f} | {c['pooled_f1']:.3f} | {paper if paper is not None else ''} |"
            )
    return "\n".join(lines)


def use_learned_floods(model, name: str) -> None:
    """Give ``model`` (a ``--control-floods`` model) the floods that the reachability model ``name`` predicts."""
    from studies.learned_floods import LearnedControlFloods

    if getattr(model.model, "flood_embedding", None) is None:
        raise SystemExit(f"--floods-from: {model.name} does not read control floods")
    source = pretrained(name)
    if source.metadata["analysis"] != "reachability":
        raise SystemExit(f"--floods-from: {name} is a {source.metadata['analysis']} model, not reachability")
    if source.metadata["vocabulary"]["sha256"] != model.metadata["vocabulary"]["sha256"]:
        raise SystemExit(f"--floods-from: {name} and {model.name} read different vocabularies")
    model.model.flood_source = LearnedControlFloods(source.model, until_stable_bounds(source.metadata))


def paper_cells(analysis: str) -> dict:
    """The paper's F1 of each cell."""
    return {cell: prf[2] for cell, prf in PAPER_TABLE[analysis].items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a DeepDataFlow-22 build (any --size)")
    parser.add_argument("--models", nargs="+", required=True, help="shipped model names or model directories")
    parser.add_argument("--stable", action="store_true", help="score every cell until stable (step-free variants)")
    parser.add_argument("--recipe", type=Path, help="the build's recipe (with --data: keep the full build's tests)")
    parser.add_argument("--data-dir", type=Path, help="the recipe's --data")
    parser.add_argument("--safe-rank", type=float, default=0.81, help="keep groups ranked at or past this")
    parser.add_argument("--examples", type=int, default=0, help="a seeded sample of N per cell (0: all)")
    parser.add_argument("--cells", nargs="+", default=[c for c, _, _ in CELLS], choices=[c for c, _, _ in CELLS])
    parser.add_argument(
        "--split",
        default="test",
        choices=("val", "test"),
        help="score this split (default: test; val to choose an inference setting such as --patience first)",
    )
    parser.add_argument(
        "--patience",
        type=int,
        nargs="+",
        help="with --stable: halt a graph after this many steps without a change (default: the model's own, "
        "model.json's inference, else 5); several (on --split val, to choose one): a row per patience, one pass",
    )
    parser.add_argument(
        "--max-steps", type=int, help="with --stable: the most steps a graph runs (default: the model's own, else 1000)"
    )
    parser.add_argument(
        "--latch",
        action=argparse.BooleanOptionalAction,
        help="with --stable: a node once predicted true stays true (default: the model's own, model.json's inference)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=204)
    parser.add_argument(
        "--steps", type=int, help="score every cell at this T instead of the cell's own (e.g. liveness at 30)"
    )
    parser.add_argument("--by-size", action="store_true", help="also score each cell by graph size (nodes)")
    parser.add_argument(
        "--min-nodes", type=int, default=0, help="score only the examples of graphs of at least N nodes (e.g. 501)"
    )
    parser.add_argument("--plot", type=Path, help="with --by-size: draw F1 against graph size into this PNG")
    parser.add_argument(
        "--floods-from",
        metavar="NAME",
        help="a --control-floods model reads floods predicted by this reachability model",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.plot and not args.by_size:
        parser.error("--plot needs --by-size")
    if args.steps is not None and args.stable:
        parser.error("--steps and --stable are two inferences: choose one")
    torch.set_num_threads(args.threads)
    keep = None
    if args.recipe:
        if not args.data_dir:
            parser.error("--recipe needs --data-dir")
        ranks = full_build_ranks(args.recipe, args.data_dir)
        keep = {
            name
            for name, entry in read_manifest(args.data / "manifest.jsonl").items()
            if not entry.get("error") and ranks.get(entry.get("group"), -1.0) >= args.safe_rank
        }
    result: dict = {
        "data": str(args.data.resolve()),
        "full_build_test_filter": {"recipe": str(args.recipe), "safe_rank": args.safe_rank} if args.recipe else None,
        "inference": "stable" if args.stable else "fixed T",
        "split": args.split,
        "models": {},
    }
    if args.json and args.json.is_file():
        result["models"] = json.loads(args.json.read_text()).get("models", {})
    for name in args.models:
        model = pretrained(name)
        analysis = model.metadata["analysis"]
        vocabulary = model.directory / model.metadata["vocabulary"]["file"]
        if args.floods_from:
            use_learned_floods(model, args.floods_from)
        own = until_stable_bounds(model.metadata) or {}
        patiences = args.patience or [own.get("patience", 5)]
        inference = {
            "max_steps": args.max_steps or own.get("max_steps", 1000),
            "latch": own.get("latch", False) if args.latch is None else args.latch,
        }
        model_args = argparse.Namespace(**{**vars(args), **inference})
        if len(patiences) > 1 and not args.stable:
            parser.error("several --patience values need --stable")
        rows: dict[str, dict] = {}
        for cell, limit, steps in CELLS:
            if cell not in args.cells:
                continue
            data = test_examples(args.data, analysis, vocabulary, limit, keep, args.split)
            data = at_least_nodes(data, args.min_nodes)
            steps = "stable" if args.stable else args.steps or steps
            if args.stable:
                scored = score_patiences(model.model, data, patiences, model_args)
            else:
                scored = {None: score(model.model, data, steps, model_args)}
            for patience, c in scored.items():
                key = model.name + (" (until stable)" if args.stable else f" (T={args.steps})" if args.steps else "")
                if args.stable and inference["latch"]:
                    key = key[:-1] + ", latched)"
                if len(patiences) > 1:
                    key = key[:-1] + f", patience {patience})"
                if args.min_nodes:
                    key += f" (graphs of at least {args.min_nodes} nodes)"
                if args.floods_from:
                    key += f" (floods from {args.floods_from})"
                row = rows.setdefault(key, {"analysis": analysis, "table": {}, "paper": paper_cells(analysis)})
                row["table"][cell] = c
                if args.stable:
                    row.update(patience=patience, **inference)
                print(f"{key} {cell}: F1 {c['f1']:.4f} ({c['seconds']:.0f} s)", file=sys.stderr)
            if args.by_size:
                for key in rows:
                    one = argparse.Namespace(**{**vars(model_args), "patience": rows[key].get("patience")})
                    rows[key].setdefault("by_size", {})[cell] = by_size(model.model, data, steps, one)
        result["models"].update(rows)
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    if args.by_size:
        print()
        print(size_table(result))
    if args.plot:
        plot_by_size(result, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
