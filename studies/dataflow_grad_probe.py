#!/usr/bin/env python3
"""Where a data-flow run's gradient spikes come from (issue 11 item 4, studies/history/results-history.md §5 "The long
runs").

Loads a checkpoint of ``programl train dataflow`` and, without changing its weights, computes the loss and the
gradient norm of the training batches the run would see between two example counts (the same batches in the same
order: passes seeded by (seed, pass), ``batch_nodes`` per batch), every ``--every``-th of them. For each it records
the number of graphs and nodes, the largest graph, the loss, the total gradient norm and the three parameters with
the largest gradient norms; it prints the distribution, how the gradient norm correlates (over log values) with the
largest graph and with the loss, and the batches with the largest norms.

Usage::

    python studies/dataflow_grad_probe.py runs/campaign/reachability/best.pt --dataset data/ddf22-full \\
        --from 20000 --to 50000 --every 10 --json out/probe.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoint", type=Path, help="a checkpoint of programl train dataflow (best.pt, last.pt)")
    parser.add_argument("--dataset", required=True, help="the DeepDataFlow data set the run trained on")
    parser.add_argument("--processed-dir", default=None, help="its PyG form (default: DATASET/processed)")
    parser.add_argument("--from", dest="start", type=int, default=0, help="first training example (default: 0)")
    parser.add_argument("--to", dest="end", type=int, required=True, help="stop at this many training examples")
    parser.add_argument("--every", type=int, default=1, help="probe every N-th batch (default: every batch)")
    parser.add_argument("--top", type=int, default=10, help="batches with the largest norms to print (default: 10)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for torch (default: 1)")
    parser.add_argument("--json", type=Path, default=None, help="write the probed batches here")
    args = parser.parse_args(argv)
    if args.every < 1 or args.end <= args.start or args.start < 0:
        parser.error("need 0 <= --from < --to and --every >= 1")
    return args


def probe(args: argparse.Namespace) -> list[dict]:
    """The probed batches (module docstring), in training order."""
    import numpy as np
    import torch
    from torch_geometric.data import Batch

    from programl.data.vocabulary import Vocabulary
    from programl.datasets import DeepDataFlow
    from programl.exceptions import ProgramlError
    from programl.loader import NodeBudgetBatchSampler
    from programl.tasks.dataflow.train import _make_model
    from programl.training import load_checkpoint

    torch.set_num_threads(args.threads)
    saved = load_checkpoint(args.checkpoint, restore_rng=False, missing_hint="give a best.pt or last.pt")
    config = saved["extra"].get("config")
    if not isinstance(config, dict) or "analysis" not in config:
        raise ProgramlError(f"{args.checkpoint}: not a checkpoint of programl train dataflow")
    train = DeepDataFlow.from_directory(
        args.dataset,
        config["analysis"],
        "train",
        max_steps=config["max_steps"],
        max_nodes=config["max_nodes"],
        processed_dir=args.processed_dir,
    )
    model = _make_model(config, len(Vocabulary.load(train.vocabulary_path)))
    model.load_state_dict(saved["model"])
    model.train()
    rows: list[dict] = []
    # the run's own batches: the sampler of programl train dataflow, a pass per epoch of the sampler
    sampler = NodeBudgetBatchSampler(
        train.sizes, config["batch_nodes"], shuffle=True, seed=config["seed"], policy=config["batch_policy"]
    )
    seen, pass_index, started = 0, 0, time.time()
    while seen < args.end:
        sampler.set_epoch(pass_index)
        for number, indices in enumerate(sampler.plan()):
            if seen >= args.end:
                break
            if seen >= args.start and number % args.every == 0:
                batch = Batch.from_data_list([train[i] for i in indices])
                model.zero_grad()
                loss = model.loss(model(batch), batch.y)
                loss.backward()
                norms = {name: p.grad.norm().item() for name, p in model.named_parameters() if p.grad is not None}
                sizes = [int(train.sizes[i]) for i in indices]
                rows.append(
                    {
                        "pass": pass_index,
                        "batch": number,
                        "examples_before": seen,
                        "graphs": len(indices),
                        "nodes": sum(sizes),
                        "largest_graph": max(sizes),
                        "loss": loss.item(),
                        "grad_norm": float(np.sqrt(sum(v * v for v in norms.values()))),
                        "largest_parameter_norms": sorted(norms.items(), key=lambda kv: -kv[1])[:3],
                    }
                )
                if len(rows) % 50 == 0:
                    print(f"{len(rows)} batches probed, {time.time() - started:.0f} s", file=sys.stderr)
            seen += len(indices)
        pass_index += 1
    return rows


def summary(rows: list[dict], top: int) -> str:
    """The distribution of the gradient norms, their correlations and the ``top`` largest (module docstring)."""
    import numpy as np

    grad = np.array([r["grad_norm"] for r in rows])
    lines = [
        f"{len(rows)} batches: gradient norm median {np.median(grad):.4g}, 90th percentile "
        f"{np.percentile(grad, 90):.4g}, 99th {np.percentile(grad, 99):.4g}, largest {grad.max():.4g}"
    ]
    if len(rows) > 2:
        log_grad = np.log(grad + 1e-12)
        for key in ("largest_graph", "loss"):
            values = np.log(np.array([r[key] for r in rows], dtype=float) + 1e-12)
            r = np.corrcoef(log_grad, values)[0, 1] if values.std() and log_grad.std() else float("nan")
            lines.append(f"correlation of log gradient norm with log {key.replace('_', ' ')}: {r:.2f}")
    lines.append(
        "batch | examples before | graphs | nodes | largest graph | loss | gradient norm | largest by parameter"
    )
    for r in sorted(rows, key=lambda r: -r["grad_norm"])[:top]:
        parameters = ", ".join(f"{name} {norm:.3g}" for name, norm in r["largest_parameter_norms"])
        lines.append(
            f"{r['pass']}:{r['batch']} | {r['examples_before']:,} | {r['graphs']} | {r['nodes']:,} | "
            f"{r['largest_graph']:,} | {r['loss']:.4f} | {r['grad_norm']:.4g} | {parameters}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from programl.exceptions import ProgramlError

    args = parse_args(argv)
    try:
        rows = probe(args)
    except (ProgramlError, OSError) as error:  # a bad checkpoint or data set: one line, no traceback
        print(f"dataflow_grad_probe: {error}", file=sys.stderr)
        return 1
    if not rows:
        print("dataflow_grad_probe: no batches in that range", file=sys.stderr)
        return 1
    print(summary(rows, args.top))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "checkpoint": str(args.checkpoint),
                    "from": args.start,
                    "to": args.end,
                    "every": args.every,
                    "batches": rows,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
