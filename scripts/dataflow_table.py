"""The paper's data-flow table for a model (issue 36 item 1; SPEC §7.1): DDF-30 at T=30, DDF-60 at T=60 and DDF (every
example) at T=200, precision, recall and F1 of the true class per 10,000-node batch (the paper's numbers) and pooled
over all nodes, on the DeepDataFlow-22 test split.

Usage::

    python scripts/dataflow_table.py DDF22_BUILD --models reachability datadep ... --json table.json
    python scripts/dataflow_table.py DDF22_BUILD --models DIR --stable        # a step-free variant, until stable

``--stable`` scores each cell until the predictions stop changing (the step-free variant's own inference:
:meth:`~programl.models.DataflowGGNN.forward_until_stable`, at least the model's T, ``--patience``,
``--max-steps``) instead of at the cell's T: the ``step_free_table`` of ``docs/results.json``. A model is a shipped
name or an exported model directory (``programl export-pretrained RUN NAME --directory DIR``); each reads the data
set with its own vocabulary.

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
from programl.data.batching import NodeBudgetBatchSampler  # noqa: E402
from programl.data.deepdataflow.layout import read_manifest  # noqa: E402
from programl.data.deepdataflow.recipe import load_recipe  # noqa: E402
from programl.datasets import DeepDataFlowDataset  # noqa: E402
from programl.models import MetricsAccumulator, pretrained  # noqa: E402
from programl.tasks.dataflow.train import PAPER_TABLE, DataflowScoring  # noqa: E402
from programl.training.engine import evaluate  # noqa: E402
from programl.training.loader import make_loader  # noqa: E402

#: (cell, step filter, T): SPEC §7.1.
CELLS = (("DDF-30", 30, 30), ("DDF-60", 60, 60), ("DDF", None, 200))


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


def test_examples(root: Path, analysis: str, vocabulary: Path, limit: int | None, keep: set[str] | None):
    """The test split of ``analysis`` with the step filter ``limit``, restricted to the graphs in ``keep``."""
    data = DeepDataFlowDataset(root, analysis, "test", max_steps=limit, max_nodes=40_000, vocabulary_path=vocabulary)
    if keep is None:
        return data
    return data.index_select([i for i in range(len(data)) if data.graph_name(i) in keep])


def score(model, data, steps, args) -> dict:
    """One cell: ``model`` at ``steps`` (or until stable) on ``data`` in 10,000-node batches."""
    task = DataflowScoring(min_steps=model.num_steps, max_steps=args.max_steps, patience=args.patience)
    if args.examples and len(data) > args.examples:
        data = data.fixed_sample(args.examples, args.seed)
    metrics = MetricsAccumulator()
    started = time.perf_counter()
    plan = NodeBudgetBatchSampler(data.sizes, 10_000).plan()
    evaluate(task, model, make_loader(data, plan), metrics=metrics, steps=steps)
    computed = metrics.compute()
    cell = {k: computed[f"mean_{k}"] for k in ("precision", "recall", "f1")}
    cell.update({f"pooled_{k}": computed[f"pooled_{k}"] for k in ("precision", "recall", "f1")})
    cell.update(
        examples=len(data),
        steps=steps,
        mean_steps=round(task.mean_steps(), 1) if steps == "stable" else steps,
        seconds=round(time.perf_counter() - started, 1),
    )
    return cell


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
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--max-steps", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=204)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
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
        "models": {},
    }
    if args.json and args.json.is_file():
        result["models"] = json.loads(args.json.read_text()).get("models", {})
    for name in args.models:
        model = pretrained(name)
        analysis = model.metadata["analysis"]
        vocabulary = model.directory / model.metadata["vocabulary"]["file"]
        cells = {}
        for cell, limit, steps in CELLS:
            if cell not in args.cells:
                continue
            data = test_examples(args.data, analysis, vocabulary, limit, keep)
            cells[cell] = score(model.model, data, "stable" if args.stable else steps, args)
            print(f"{name} {cell}: F1 {cells[cell]['f1']:.3f} ({cells[cell]['seconds']:.0f} s)", file=sys.stderr)
        key = model.name + (" (until stable)" if args.stable else "")
        result["models"][key] = {"analysis": analysis, "table": cells, "paper": paper_cells(analysis)}
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
