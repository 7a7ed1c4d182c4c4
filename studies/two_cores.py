"""Two cores for one data-flow training run: one process with two torch threads, or two DDP processes with one
thread each? (issue 11 item 2; the training engine of SPEC §6.1's protocol).

Each configuration runs the real command, ``programl train dataflow``, for one epoch of ``--train-examples``
examples (plus a small validation) from the same seed, in a fresh run directory, one after the other:

* ``1 thread``: one process, ``--threads 1`` (the baseline);
* ``2 threads``: one process, ``--threads 2``;
* ``DDP 2x1``: ``torchrun --standalone --nproc_per_node 2`` (``python -m torch.distributed.run``), ``--threads 1``
  per process; each rank trains on its half of every batch plan and gradients are all-reduced (gloo).

Speed = (training + validation nodes) / the epoch's wall seconds, both read from the run's ``log.jsonl``
(``train_count`` + ``val_count``, ``seconds``). ``--repeats N`` runs the three in turn N times (the machine's other
load moves from one repeat to the next; each row reports every repeat and their mean).

Usage::

    python studies/two_cores.py --dataset /path/to/ddf22 --analysis reachability --repeats 2
    python studies/two_cores.py --dataset /path/to/ddf22 -o bench-results/two_cores.json

Run it on an otherwise idle machine: the point is how the two cores are best used, so nothing else may use them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFIGURATIONS = {
    "1 thread": {"threads": 1, "ddp": False},
    "2 threads": {"threads": 2, "ddp": False},
    "DDP 2x1": {"threads": 1, "ddp": True},
}


def command(name: str, args: argparse.Namespace, run_dir: Path) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of one configuration."""
    config = CONFIGURATIONS[name]
    task = [
        "train",
        "--analysis", args.analysis,
        "--dataset", str(args.dataset),
        "--train-examples", str(args.train_examples),
        "--val-examples", str(args.val_examples),
        "--test-examples", str(args.val_examples),
        "--test-steps", "30",
        "--epochs", "1",
        "--threads", str(config["threads"]),
        "--run-dir", str(run_dir),
        "-q",
    ]  # fmt: skip
    if config["ddp"]:
        head = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
        argv = head + ["-m", "programl.tasks.dataflow"] + task
    else:
        argv = [sys.executable, "-m", "programl", "train", "dataflow"] + task[1:]
    env = dict(os.environ, OMP_NUM_THREADS=str(config["threads"]))
    return argv, env


def measure(name: str, args: argparse.Namespace, scratch: Path, repeat: int) -> dict:
    """Run one configuration once and read its speed from the run's log."""
    run_dir = scratch / f"{name.replace(' ', '-')}-{repeat}"
    argv, env = command(name, args, run_dir)
    began = time.perf_counter()
    finished = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if finished.returncode != 0:
        tail = (finished.stderr or finished.stdout).strip().splitlines()[-5:]
        raise SystemExit(f"two_cores: {name} failed (exit {finished.returncode}):\n" + "\n".join(tail))
    record = json.loads((run_dir / "log.jsonl").read_text().splitlines()[0])
    nodes = int(record["train_count"]) + int(record["val_count"])
    return {
        "seconds": float(record["seconds"]),
        "nodes": nodes,
        "examples": int(record["train_examples"]),
        "nodes_per_s": nodes / float(record["seconds"]),
        "command_seconds": round(wall, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, required=True, help="a DeepDataFlow data set (programl dataset build)")
    parser.add_argument("--analysis", default="reachability")
    parser.add_argument("--train-examples", type=int, default=3000)
    parser.add_argument("--val-examples", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("-o", "--output", type=Path, help="also write the measurements as JSON")
    args = parser.parse_args()
    if not (args.dataset / "dataset.json").is_file():
        parser.error(f"{args.dataset}: not a data set (no dataset.json; build one with `programl dataset build`)")
    results: dict[str, list[dict]] = {name: [] for name in CONFIGURATIONS}
    with tempfile.TemporaryDirectory(prefix="programl-two-cores-") as scratch:
        for repeat in range(args.repeats):
            for name in CONFIGURATIONS:
                results[name].append(measure(name, args, Path(scratch), repeat))
                print(f"{name} (repeat {repeat + 1}): {results[name][-1]['nodes_per_s']:,.0f} nodes/s", file=sys.stderr)
    base = sum(r["nodes_per_s"] for r in results["1 thread"]) / args.repeats
    print(f"\n{args.analysis}, {args.train_examples:,} training examples per run, {os.cpu_count()} CPUs\n")
    print("| configuration | nodes/s (each repeat) | mean nodes/s | vs 1 thread |")
    print("|---|---|---|---|")
    for name, runs in results.items():
        mean = sum(r["nodes_per_s"] for r in runs) / len(runs)
        each = ", ".join(f"{r['nodes_per_s']:,.0f}" for r in runs)
        print(f"| {name} | {each} | {mean:,.0f} | {mean / base:.2f}x |")
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({"analysis": args.analysis, "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
