"""Does loading keep ahead of training? Examples per second through the training path's ``DataLoader`` against what
the data-flow GGNN consumes (target: loading >= 3x training; training reads through
:mod:`programl.datasets` and ``torch_geometric``'s ``DataLoader``).

Three measurements on the same batches of a DeepDataFlow data set (:class:`programl.datasets.DeepDataFlow`,
DDF-30, 40,000-node limit, 10,000-node batches in the seeded order of the first pass, as ``programl train dataflow``
plans them):

1. **loading**: the batches through :func:`programl.loader.make_loader` with ``--workers`` 0, 1, 2 ...
   (read from the memory-mapped store, collated; the page cache warmed by one untimed pass), examples/s and
   nodes/s;
2. **training**: the typed GGNN (T=30) trained on those batches already collated (forward, loss, backward, AdamW) on
   ``--threads`` threads: what a run consumes;
3. **together** (``--together``): the training loop fed by the loader, as a run is, with each worker count: what
   the overlap gives on this machine.

The ratio printed is loading / training examples per second (the target: >= 3).

Usage::

    python benchmarks/loader.py --dataset data/ddf22-wide --analysis reachability --threads 2 --together
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

from programl.datasets import DeepDataFlow  # noqa: E402
from programl.loader import NodeBudgetBatchSampler, make_loader  # noqa: E402
from programl.models import DataflowGGNN  # noqa: E402


def load_rate(dataset, plan: list[list[int]], workers: int) -> dict:
    """Examples/s and nodes/s of one pass of ``plan`` through a loader with ``workers`` (its start-up included)."""
    sizes = dataset.sizes
    start = time.perf_counter()
    loader = make_loader(dataset, plan, workers)
    examples = nodes = 0
    for batch in loader:
        examples += batch.num_graphs
        nodes += batch.num_nodes
    seconds = time.perf_counter() - start
    assert nodes == int(sum(sizes[i] for b in plan for i in b))
    del loader
    return {
        "workers": workers,
        "seconds": seconds,
        "examples_per_s": examples / seconds,
        "nodes_per_s": nodes / seconds,
    }


def train_steps(model, optimizer, batches) -> tuple[int, int, float]:
    """Train on ``batches`` (an iterable of collated batches); returns examples, nodes and seconds."""
    model.train()
    examples = nodes = 0
    start = time.perf_counter()
    for batch in batches:
        optimizer.zero_grad(set_to_none=True)
        loss = model.loss(model(batch), batch.y)
        loss.backward()
        optimizer.step()
        examples += batch.num_graphs
        nodes += batch.num_nodes
    return examples, nodes, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="a DeepDataFlow data set directory")
    parser.add_argument("--analysis", default="reachability")
    parser.add_argument("--split", default="train")
    parser.add_argument("--batch-nodes", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=30, help="batches loaded per measurement (default: 30)")
    parser.add_argument("--train-batches", type=int, default=8, help="batches trained (default: 8)")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=2, help="torch threads for training (default: 2)")
    parser.add_argument("--together", action="store_true", help="also train fed by the loader, per worker count")
    parser.add_argument("--seed", type=int, default=204)
    parser.add_argument("-o", "--output", help="write the results as JSON")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    dataset = DeepDataFlow.from_directory(args.dataset, args.analysis, args.split, max_steps=30, max_nodes=40_000)
    sampler = NodeBudgetBatchSampler(dataset.sizes, args.batch_nodes, shuffle=True, seed=args.seed)
    plan = sampler.plan()[: args.batches]
    print(f"{dataset!r}: {len(plan)} batches of up to {args.batch_nodes:,} nodes", file=sys.stderr)
    load_rate(dataset, plan, 0)  # warm the page cache: every measurement reads from memory

    loading = [load_rate(dataset, plan, w) for w in args.workers]
    for r in loading:
        print(
            f"loading, {r['workers']} worker(s): {r['examples_per_s']:,.0f} examples/s, "
            f"{r['nodes_per_s']:,.0f} nodes/s",
            file=sys.stderr,
        )

    torch.manual_seed(args.seed)
    vocabulary = len(dataset.vocabulary_path.read_text(encoding="utf-8").splitlines()) - 1
    model = DataflowGGNN(vocabulary)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2.5e-4)
    collated = list(make_loader(dataset, plan[: args.train_batches + 1], 0))
    train_steps(model, optimizer, collated[:1])  # warm-up
    examples, nodes, seconds = train_steps(model, optimizer, collated[1:])
    training = {"examples_per_s": examples / seconds, "nodes_per_s": nodes / seconds, "threads": args.threads}
    print(
        f"training ({args.threads} threads): {training['examples_per_s']:,.0f} examples/s, "
        f"{training['nodes_per_s']:,.0f} nodes/s",
        file=sys.stderr,
    )

    together = []
    if args.together:
        for workers in args.workers:
            loader = make_loader(dataset, plan[: args.train_batches], workers)
            examples, nodes, seconds = train_steps(model, optimizer, loader)
            together.append({"workers": workers, "examples_per_s": examples / seconds, "nodes_per_s": nodes / seconds})
            print(f"training fed by {workers} worker(s): {nodes / seconds:,.0f} nodes/s", file=sys.stderr)

    best = max(loading, key=lambda r: r["examples_per_s"])
    ratio = best["examples_per_s"] / training["examples_per_s"]
    report = {
        "benchmark": "loader",
        "dataset": str(Path(args.dataset).resolve()),
        "analysis": args.analysis,
        "split": args.split,
        "batches": len(plan),
        "examples_per_batch": float(np.mean([len(b) for b in plan])),
        "loading": loading,
        "training": training,
        "together": together,
        "ratio_best_loading_to_training": ratio,
    }
    print(f"loading / training examples per second: {ratio:.1f}x ({best['workers']} worker(s); target >= 3x)")
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
