"""Training and inference throughput of the data-flow GGNN (SPEC §6.1) in nodes per second, and peak memory.

Batches hold up to 10,000 nodes (the flag file's ``batch_size``) of disjoint graphs and the model runs T = 30
message-passing steps, as in the paper's DDF-30 runs. One training iteration = forward, cross-entropy loss,
backward and an AdamW step; inference = forward under ``torch.no_grad()`` in eval mode. ``--precision bf16`` runs
both forward passes under bfloat16 autocast, as ``programl train ... --precision bf16`` runs its training steps.

Inputs:

* default: synthetic graphs with ProGraML's composition: ~581 nodes per graph on average (log-normal sizes), node
  types 50 % instructions / 46 % variables / 4 % constants, ~1.8 edges per node (29 % control, 64 % data, 7 % call;
  every variable has one definition and one use edge, as in ProGraML's per-use variable nodes), edge positions
  mostly 0/1;
* ``--graphs DIR``: real ``*.ProgramGraph.pb`` files (converted with :func:`programl.io.pyg.to_pyg`, vocabulary built
  from them), with random labels and root selectors (one root per example): throughput does not depend on their
  values;
* ``--dataset DIR``: the examples of a DeepDataFlow data set (e.g. DeepDataFlow-22 from ``programl dataset build``)
  through :class:`programl.datasets.DeepDataFlow`, with their real roots and labels (``--analysis``,
  ``--split``, DDF-30 filter and 40,000-node limit as in training).

Speeds: ``nodes/s`` = timed nodes / timed seconds; ``best`` = the fastest single batch (on a shared machine the
least disturbed measurement).

Peak memory: on CUDA ``torch.cuda.max_memory_allocated`` per phase; on CPU the process's peak resident set size
(``resource.getrusage``) after each phase, and its growth over the baseline measured before the first model call
(inference runs first, so the training figure includes the inference high-water mark only if it is larger).

Reference point: the paper reports ~26 ms per 581-node graph in training on a GTX 1080 (~22k nodes/s).

Usage::

    python benchmarks/train.py                         # synthetic graphs, CPU or the GPU if present
    python benchmarks/train.py --graphs /path/to/graphs --max-graphs 2000
    python benchmarks/train.py --dataset /path/to/ddf22 --analysis reachability --threads 1
    python benchmarks/train.py --model rgcn --device cpu --batches 3 -o train.json
    python benchmarks/train.py --model pyg-gated --device cuda     # PyG's GatedGraphConv on the same batches

``--model pyg-gated`` is the reference point of the layer's speed: PyG's own ``GatedGraphConv`` (Li et al.'s GGNN
as torch-geometric ships it) on the same batches, shaped like the data-flow GGNN where it can be (the same 32-wide
text embedding plus the two root-selector columns, 34 channels, T steps, mean aggregation, a linear readout of
``[h0; hT]``), and unlike it where PyG's layer is: one edge type (ProGraML's six typed, positioned message maps
become one) and a weight per step instead of one shared over all steps.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch_geometric.data import Batch, Data

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from programl.loader import NodeBudgetBatchSampler  # noqa: E402
from programl.models import DataflowGGNN, DataflowRGCN  # noqa: E402
from programl.tasks.options import PRECISIONS  # noqa: E402
from programl.training.runtime import autocast  # noqa: E402


class PygGatedGraphConv(nn.Module):
    """PyG's ``GatedGraphConv`` on the data-flow batches (module docstring, ``--model pyg-gated``): the baseline the
    typed GGNN's speed is compared with. The same call and loss as :class:`DataflowGGNN`; ``steps`` is fixed when
    built (PyG's layer holds one weight per step)."""

    def __init__(self, vocabulary_size: int, *, steps: int = 30, embedding_dim: int = 32, hidden: int = 34):
        super().__init__()
        from torch_geometric.nn import GatedGraphConv

        self.embedding = nn.Embedding(vocabulary_size + 1, embedding_dim)
        self.conv = GatedGraphConv(hidden, num_layers=steps, aggr="mean")
        self.readout = nn.Linear(2 * hidden, 2)
        self.hidden = hidden

    def forward(self, batch, num_steps: int | None = None) -> torch.Tensor:
        if num_steps is not None and num_steps != self.conv.num_layers:
            raise ValueError(f"built for {self.conv.num_layers} steps, asked for {num_steps}")
        selector = nn.functional.one_hot(batch.root.long(), 2).to(self.embedding.weight.dtype)
        h0 = torch.cat([self.embedding(batch.x), selector], dim=1)
        h0 = nn.functional.pad(h0, (0, self.hidden - h0.shape[1]))
        return self.readout(torch.cat([h0, self.conv(h0, batch.edge_index)], dim=1))

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(logits, y)


#: ``--model`` -> a builder ``(vocabulary_size, steps) -> model``: the typed models take the step count at each call,
#: PyG's layer when built (one weight per step)
MODELS = {
    "ggnn": lambda vocabulary_size, steps: DataflowGGNN(vocabulary_size),
    "rgcn": lambda vocabulary_size, steps: DataflowRGCN(vocabulary_size),
    "pyg-gated": lambda vocabulary_size, steps: PygGatedGraphConv(vocabulary_size, steps=steps),
}
PAPER_TRAIN_NODES_PER_S = 581 / 0.026  # 26 ms per 581-node graph on a GTX 1080
MEAN_GRAPH_NODES = 581


def synthetic_graph(rng: np.random.Generator, num_nodes: int, vocabulary_size: int) -> Data:
    """A random graph with the composition of ProGraML graphs (module docstring), as a labelled ``Data``."""
    n_inst = max(2, int(round(num_nodes * 0.50)))
    n_var = max(1, int(round(num_nodes * 0.46)))
    n_const = max(1, num_nodes - n_inst - n_var)
    n = n_inst + n_var + n_const
    inst = np.arange(n_inst)
    var = n_inst + np.arange(n_var)
    const = n_inst + n_var + np.arange(n_const)
    # control: a chain through the instructions plus ~15 % branch edges (successor index 1)
    chain = np.stack([inst[:-1], inst[1:]])
    n_branch = int(0.15 * n_inst)
    branch = np.stack([rng.integers(0, n_inst, n_branch), rng.integers(0, n_inst, n_branch)])
    control = np.concatenate([chain, branch], 1)
    control_pos = np.concatenate([np.zeros(chain.shape[1]), np.ones(n_branch)])
    # data: each variable defined by one instruction and used by a later, nearby one; constants used ~5 times
    producer = rng.integers(0, n_inst - 1, n_var)
    consumer = np.minimum(producer + 1 + rng.geometric(0.3, n_var), n_inst - 1)
    uses = int(round(num_nodes * 0.19))
    const_src = rng.choice(const, uses)
    const_dst = rng.integers(0, n_inst, uses)
    data = np.concatenate([np.stack([producer, var]), np.stack([var, consumer]), np.stack([const_src, const_dst])], 1)
    data_pos = np.concatenate([np.zeros(n_var), rng.choice(3, n_var, p=[0.6, 0.3, 0.1]), rng.choice(2, uses)])
    # call: ~0.127 edges per node between instructions
    n_call = int(round(num_nodes * 0.127))
    call = np.stack([rng.integers(0, n_inst, n_call), rng.integers(0, n_inst, n_call)])
    edge_index = np.concatenate([control, data, call], 1)
    flow = np.concatenate([np.zeros(control.shape[1]), np.ones(data.shape[1]), np.full(n_call, 2)])
    pos = np.concatenate([control_pos, data_pos, np.zeros(n_call)])
    node_type = np.concatenate([np.zeros(n_inst), np.ones(n_var), np.full(n_const, 2)])
    root = np.zeros(n, dtype=np.int64)
    root[rng.integers(1, n_inst)] = 1
    return Data(
        x=torch.from_numpy(rng.integers(0, vocabulary_size + 1, n)),
        node_type=torch.from_numpy(node_type.astype(np.int64)),
        edge_index=torch.from_numpy(edge_index.astype(np.int64)),
        edge_flow=torch.from_numpy(flow.astype(np.int64)),
        edge_pos=torch.from_numpy(pos.astype(np.int64)),
        root=torch.from_numpy(root),
        y=torch.from_numpy(rng.integers(0, 2, n)),
        num_nodes=n,
    )


def synthetic_examples(rng: np.random.Generator, total_nodes: int, vocabulary_size: int) -> list[Data]:
    """Graphs with log-normal sizes (mean ~581 nodes, clipped to 20..20,000) until ``total_nodes`` is reached."""
    examples, nodes = [], 0
    sigma = 1.0
    mu = np.log(MEAN_GRAPH_NODES) - sigma**2 / 2
    while nodes < total_nodes:
        size = int(np.clip(rng.lognormal(mu, sigma), 20, 20_000))
        examples.append(synthetic_graph(rng, size, vocabulary_size))
        nodes += examples[-1].num_nodes
    return examples


def real_examples(directory: Path, max_graphs: int, rng: np.random.Generator) -> tuple[list[Data], int]:
    """``*.ProgramGraph.pb`` files of ``directory`` as examples with random roots/labels; returns (examples, |V|)."""
    from programl.data.vocabulary import build_vocabulary
    from programl.io.pyg import to_pyg
    from programl.proto import ProgramGraph

    paths = sorted(directory.glob("*.ProgramGraph.pb"))[:max_graphs]
    if not paths:
        raise SystemExit(f"no *.ProgramGraph.pb files in {directory}")
    graphs = [ProgramGraph.FromString(p.read_bytes()) for p in paths]
    graphs = [g for g in graphs if len(g.node) > 1]
    vocabulary = build_vocabulary(graphs)
    examples = []
    for g in graphs:
        data = to_pyg(g, vocabulary)
        instructions = torch.nonzero(data.node_type == 0).flatten()
        root = torch.zeros(data.num_nodes, dtype=torch.long)
        root[instructions[rng.integers(0, len(instructions))]] = 1
        data.root = root
        data.y = torch.from_numpy(rng.integers(0, 2, data.num_nodes))
        examples.append(data)
    return examples, len(vocabulary)


def dataset_examples(directory: Path, analysis: str, split: str, needed_nodes: int, seed: int) -> tuple[list, int]:
    """Examples of a DeepDataFlow data set (DDF-30, graphs up to 40,000 nodes), a seeded sample of about
    ``needed_nodes`` nodes; returns (examples, |V|)."""
    from programl.data.vocabulary import Vocabulary
    from programl.datasets import DeepDataFlow

    dataset = DeepDataFlow.from_directory(directory, analysis, split, max_steps=30, max_nodes=40_000)
    order = np.random.default_rng(seed).permutation(len(dataset))
    sizes = dataset.sizes
    take = order[: int(np.searchsorted(np.cumsum(sizes[order]), needed_nodes)) + 1]
    return [dataset[int(i)] for i in take], len(Vocabulary.load(dataset.vocabulary_path))


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024 if sys.platform != "darwin" else rss / 2**20


def cpu_name() -> str:
    """The CPU model (from /proc/cpuinfo on Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_phase(model, batches, device, *, train: bool, steps: int, warmup: int, precision: str = "fp32") -> dict:
    """Time ``len(batches) - warmup`` iterations after ``warmup`` untimed ones (forward passes at ``precision``:
    bfloat16 autocast with ``"bf16"``); returns the measurements."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=2.5e-4) if train else None
    model.train(train)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    timed_nodes, timed_graphs, elapsed, rates = 0, 0, 0.0, []
    for i, batch in enumerate(batches):
        sync(device)
        start = time.perf_counter()
        if train:
            optimizer.zero_grad(set_to_none=True)
            with autocast(device, precision):
                loss = model.loss(model(batch, num_steps=steps), batch.y)
            loss.backward()
            optimizer.step()
        else:
            with torch.no_grad(), autocast(device, precision):
                model(batch, num_steps=steps)
        sync(device)
        if i >= warmup:
            seconds = time.perf_counter() - start
            elapsed += seconds
            timed_nodes += batch.num_nodes
            timed_graphs += batch.num_graphs
            rates.append(batch.num_nodes / seconds)
    result = {
        "phase": "train" if train else "inference",
        "steps": steps,
        "timed_batches": len(batches) - warmup,
        "timed_nodes": timed_nodes,
        "timed_graphs": timed_graphs,
        "seconds": elapsed,
        "nodes_per_s": timed_nodes / elapsed if elapsed else float("nan"),
        "nodes_per_s_median_batch": float(np.median(rates)) if rates else float("nan"),
        "nodes_per_s_best_batch": max(rates, default=float("nan")),
        "ms_per_batch": 1000 * elapsed / max(1, len(batches) - warmup),
    }
    result["ms_per_581_node_graph"] = 1000 * MEAN_GRAPH_NODES / result["nodes_per_s"]
    if device.type == "cuda":
        result["peak_memory_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
    else:
        result["peak_memory_mb"] = peak_rss_mb()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--model", choices=tuple(MODELS), default="ggnn", help="pyg-gated: PyG's GatedGraphConv (module docstring)"
    )
    parser.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, cuda:1 ...")
    parser.add_argument("--steps", type=int, default=30, help="message-passing steps T (default 30)")
    parser.add_argument("--max-nodes", type=int, default=10_000, help="node budget per batch (default 10,000)")
    parser.add_argument("--batches", type=int, default=4, help="timed batches per phase (default 4)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed batches before timing (default 1)")
    parser.add_argument("--graphs", type=Path, help="directory of *.ProgramGraph.pb files instead of synthetic graphs")
    parser.add_argument("--max-graphs", type=int, default=5000, help="read at most this many files (default 5000)")
    parser.add_argument("--dataset", type=Path, help="a DeepDataFlow data set directory instead of synthetic graphs")
    parser.add_argument("--analysis", default="reachability", help="analysis of --dataset (default reachability)")
    parser.add_argument("--split", default="train", help="split of --dataset (default train)")
    parser.add_argument("--vocabulary-size", type=int, default=2230, help="synthetic vocabulary size (default 2230)")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (CPU)")
    parser.add_argument(
        "--precision", choices=PRECISIONS, default="fp32", help="bf16: forward passes under bfloat16 autocast"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", type=Path, default=Path("train-benchmark.json"), help="JSON output file")
    args = parser.parse_args(argv)

    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    needed = args.batches + args.warmup
    start = time.perf_counter()
    if args.dataset:
        examples, vocabulary_size = dataset_examples(
            args.dataset, args.analysis, args.split, int(needed * args.max_nodes * 1.3), args.seed
        )
        source = f"{args.dataset} ({args.analysis}, {args.split}, DDF-30)"
    elif args.graphs:
        examples, vocabulary_size = real_examples(args.graphs, args.max_graphs, rng)
        source = str(args.graphs)
    else:
        vocabulary_size = args.vocabulary_size
        examples = synthetic_examples(rng, int(needed * args.max_nodes * 1.05), vocabulary_size)
        source = "synthetic"
    sizes = [int(example.num_nodes) for example in examples]
    plan = NodeBudgetBatchSampler(sizes, args.max_nodes, shuffle=True, seed=args.seed).plan()
    if len(plan) < needed:
        print(f"warning: only {len(plan)} batches available ({needed} requested)", file=sys.stderr)
    # full batches first (the last one may be a remainder)
    plan = sorted(plan, key=lambda b: -sum(int(examples[i].num_nodes) for i in b))[:needed]
    batches = [Batch.from_data_list([examples[i] for i in b]).to(device) for b in plan]
    prep_seconds = time.perf_counter() - start
    nodes = sum(int(e.num_nodes) for e in examples)
    edges = sum(int(e.edge_index.shape[1]) for e in examples)

    model = MODELS[args.model](vocabulary_size, args.steps).to(device)
    parameters = sum(p.numel() for p in model.parameters())
    baseline_mb = peak_rss_mb()
    phase = {"steps": args.steps, "warmup": args.warmup, "precision": args.precision}
    results = [run_phase(model, batches, device, train=False, **phase)]
    results.append(run_phase(model, batches, device, train=True, **phase))
    if device.type == "cpu":
        for r in results:
            r["peak_memory_growth_mb"] = r["peak_memory_mb"] - baseline_mb

    report = {
        "benchmark": "train",
        "model": type(model).__name__,
        "parameters": parameters,
        "vocabulary_size": vocabulary_size,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name(),
        "torch_threads": torch.get_num_threads(),
        "precision": args.precision,
        "torch": torch.__version__,
        "source": source,
        "graphs": len(examples),
        "mean_nodes_per_graph": nodes / len(examples),
        "edges_per_node": edges / nodes,
        "batch_nodes": [b.num_nodes for b in batches],
        "max_nodes": args.max_nodes,
        "preparation_seconds": prep_seconds,
        "paper_train_nodes_per_s": PAPER_TRAIN_NODES_PER_S,
        "results": results,
    }
    print(
        f"{report['model']} ({parameters:,} parameters), {source}: {len(examples)} graphs, "
        f"{report['mean_nodes_per_graph']:.0f} nodes/graph, {report['edges_per_node']:.2f} edges/node; "
        f"device {device} ({report['device_name'] or '?'}, {report['torch_threads']} threads), {args.precision}"
    )
    header = f"{'phase':<10} {'T':>4} {'batches':>7} {'nodes/batch':>11} {'nodes/s':>10} {'best':>8} {'ms/batch':>9} "
    header += f"{'ms/581-node graph':>17} {'peak MB':>8}"
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r['phase']:<10} {r['steps']:>4} {r['timed_batches']:>7} "
            f"{r['timed_nodes'] / max(1, r['timed_batches']):>11.0f} {r['nodes_per_s']:>10.0f} "
            f"{r['nodes_per_s_best_batch']:>8.0f} "
            f"{r['ms_per_batch']:>9.1f} {r['ms_per_581_node_graph']:>17.2f} {r['peak_memory_mb']:>8.0f}"
        )
    print(f"paper (GTX 1080, training): {PAPER_TRAIN_NODES_PER_S:,.0f} nodes/s = 26 ms per 581-node graph")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
