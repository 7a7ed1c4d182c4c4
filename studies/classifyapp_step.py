"""Where one training step of the POJ-104 classifier spends its time (SPEC §6.6), on the CPU or a GPU.

`programl train classifyapp` trains the paper's classifier (200-wide, four parameter sets of two steps, position
gates) in batches of 128 graphs. This times the phases of its step one by one, each ended by a device
synchronisation: assembling the batch on the CPU (the examples read with their vocabulary transform,
``Batch.from_data_list``, as the training loader does), moving it to the device, the forward pass and loss (under
bfloat16 autocast with ``--precision bf16``, as ``programl train ... --precision bf16`` runs it), the backward pass,
and the AdamW step; ``--profile`` adds torch.profiler's table of the operators that take the most device (or CPU)
time. The model is the task's own (:mod:`programl.tasks.classifyapp`).

Inputs: ``--data-dir ROOT``, the root of a processed :class:`programl.datasets.POJ104` data set (what ``programl
train classifyapp --data-dir ROOT`` trains on; only its processed files are read, with the same ``--per-class``,
``--settings`` and ``--split-seed``): the real training graphs, their node texts encoded by the training split's
vocabulary as the run encodes them; else synthetic graphs of POJ-104's shape at -O0 (about 262 nodes and 1.73 edges
per node).

Usage::

    python studies/classifyapp_step.py --data-dir ~/.cache/programl/poj104 --threads 2
    python studies/classifyapp_step.py --data-dir ~/.cache/programl/poj104 --threads 2 --precision bf16
    python studies/classifyapp_step.py --device cuda --profile -o step.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Batch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from programl.tasks.classifyapp import train as classifyapp  # noqa: E402
from programl.tasks.options import PRECISIONS  # noqa: E402
from programl.training.runtime import autocast  # noqa: E402

PHASES = ("collate", "to_device", "forward", "backward", "optimizer")


def synthetic_graphs(count: int, vocabulary_size: int, seed: int) -> list:
    """Random graphs of POJ-104's shape at -O0 (node and edge counts, flows, positions)."""
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(count):
        nodes = int(np.clip(rng.lognormal(np.log(230), 0.5), 20, 3000))
        edges = int(nodes * 1.73)
        graphs.append(
            Data(
                x=torch.from_numpy(rng.integers(0, vocabulary_size, nodes)),
                node_type=torch.from_numpy(rng.choice(3, nodes, p=[0.5, 0.45, 0.05])),
                edge_index=torch.from_numpy(rng.integers(0, nodes, (2, edges))),
                edge_flow=torch.from_numpy(rng.choice(3, edges, p=[0.35, 0.6, 0.05])),
                edge_pos=torch.from_numpy(rng.choice(3, edges, p=[0.6, 0.35, 0.05])),
                y=torch.tensor([int(rng.integers(0, 104))]),  # 0-based, as POJ104 gives it
            )
        )
    return graphs


def default_config() -> dict:
    parser = argparse.ArgumentParser()
    classifyapp.add_train_arguments(parser)
    return classifyapp.ClassifyappOptions.from_args(parser.parse_args(["--run-dir", "unused"])).config()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="a processed POJ-104 data set root (default: synthetic graphs)")
    parser.add_argument("--per-class", type=int, help="as for training (default: all)")
    parser.add_argument("--settings", type=int, nargs="+", default=[0], help="as for training (default: 0)")
    parser.add_argument("--split-seed", type=int, default=204, help="as for training (default: 204)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (CPU)")
    parser.add_argument("--batch-graphs", type=int, default=128, help="graphs per batch (default: 128, the paper's)")
    parser.add_argument("--batches", type=int, default=10, help="timed batches (default: 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed batches first (default: 2)")
    parser.add_argument("--profile", action="store_true", help="also print torch.profiler's top operators")
    parser.add_argument(
        "--precision", choices=PRECISIONS, default="fp32", help="bf16: the forward pass under bfloat16 autocast"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", type=Path, help="JSON output file")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.manual_seed(args.seed)

    if args.data_dir:
        from programl.datasets import POJ104, EncodeVocabulary

        if not POJ104.is_processed(args.data_dir, size=args.per_class, settings=args.settings, seed=args.split_seed):
            parser.error(f"{args.data_dir}: no processed POJ-104 data set of these options")
        graphs = POJ104(args.data_dir, "train", size=args.per_class, settings=args.settings, seed=args.split_seed)
        vocabulary = graphs.vocabulary()
        graphs.transform = EncodeVocabulary(vocabulary, graphs.texts)
        vocabulary_size = len(vocabulary)
    else:
        vocabulary_size = 60
        graphs = synthetic_graphs(args.batch_graphs * (args.batches + args.warmup + 1), vocabulary_size, args.seed)
    config = default_config()
    model = classifyapp._make_model(config, vocabulary_size).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"], weight_decay=config["weight_decay"])
    rng = np.random.default_rng(args.seed)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def one_step(times: dict[str, list[float]] | None) -> int:
        marks = [time.perf_counter()]
        chosen = rng.choice(len(graphs), args.batch_graphs, replace=False).tolist()
        batch = Batch.from_data_list([graphs[i] for i in chosen])
        marks.append(time.perf_counter())
        batch = batch.to(device)
        sync()
        marks.append(time.perf_counter())
        optimizer.zero_grad(set_to_none=True)
        with autocast(device, args.precision):
            output = model(batch)
            loss = model.loss(output, batch.y)
        sync()
        marks.append(time.perf_counter())
        loss.backward()
        sync()
        marks.append(time.perf_counter())
        optimizer.step()
        sync()
        marks.append(time.perf_counter())
        if times is not None:
            for phase, start, end in zip(PHASES, marks, marks[1:]):
                times[phase].append(end - start)
        return batch.num_nodes

    for _ in range(args.warmup):
        one_step(None)
    times: dict[str, list[float]] = {phase: [] for phase in PHASES}
    nodes = [one_step(times) for _ in range(args.batches)]
    medians = {phase: statistics.median(values) for phase, values in times.items()}
    total = sum(medians.values())
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    print(
        f"classifyapp step: {args.batch_graphs} graphs ({statistics.median(nodes):.0f} nodes median), {name}, "
        f"{args.precision}"
    )
    print(f"{'phase':<12}{'median ms':>12}{'share':>8}")
    for phase in PHASES:
        print(f"{phase:<12}{1000 * medians[phase]:>12.1f}{medians[phase] / total:>8.1%}")
    print(f"{'step':<12}{1000 * total:>12.1f}   -> {235 * total:.0f} s per POJ-104 epoch of 235 batches (training)")

    table = None
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with profile(activities=activities) as prof:
            one_step(None)
        key = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
        table = prof.key_averages().table(sort_by=key, row_limit=15)
        print(table)
    if args.output:
        record = {
            "benchmark": "classifyapp_step",
            "device": name,
            "torch": torch.__version__,
            "source": str(args.data_dir) if args.data_dir else "synthetic",
            "batch_graphs": args.batch_graphs,
            "precision": args.precision,
            "median_nodes": statistics.median(nodes),
            "median_seconds": medians,
            "step_seconds": total,
            "profile": table,
        }
        args.output.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
