"""The data-flow GGNN's training and inference speed, before and after a change, side by side in one process
(the layer's speed target).

Two :class:`~programl.models.DataflowGGNN` with the same weights run on the same batches: one with the
:class:`~programl.models.ggnn.TypedGGNNConv` of a git revision (``--before``, loaded from ``git show REV:path`` into a
module of its own), one with the working tree's. The batches are those of ``benchmarks/train.py`` (synthetic
ProGraML-shaped graphs by default, ``--dataset`` for a DeepDataFlow data set), 10,000-node budget, T = 30. Every
round runs, for each batch, one training iteration (forward, cross-entropy, backward, AdamW step) and one inference
(``torch.no_grad()``, eval mode) of each variant, the variants alternating ABBA from round to round, so that the
machine's other load falls on both alike. Speed = the median over all timed batches of nodes / seconds; the ratio
is after / before of the medians. Each variant trains its own copy of the weights (both start equal, and the
check below shows they stay equal).

Before timing it checks, on the first batch, that the two give the same logits, loss and parameter gradients
(``torch.equal``: bit for bit; with more than one thread the gradient of the position gates' linear map is not
reproducible from run to run even for one and the same code, so it is left out of the comparison then).

Usage::

    python benchmarks/ggnn_speed.py --threads 2                      # before = the layer before it was made fast
    python benchmarks/ggnn_speed.py --threads 1 --rounds 5 --before HEAD~3
    python benchmarks/ggnn_speed.py --threads 2 --dataset data/ddf22-600 --analysis reachability

Run it on a machine whose other load is steady, or pause that load: the ratio is robust to steady load, the
absolute nodes/s are not.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Batch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import train as bench_train  # noqa: E402

from programl.loader import NodeBudgetBatchSampler  # noqa: E402
from programl.models import DataflowGGNN  # noqa: E402
from programl.tasks.options import PRECISIONS  # noqa: E402
from programl.training.runtime import autocast  # noqa: E402

#: The last commit before the layer was made fast.
DEFAULT_BEFORE = "ce96414"
LAYER_PATH = "programl/models/ggnn.py"


def load_layer(revision: str):
    """The ``ggnn`` module of ``revision`` (``git show``), imported under a name of its own."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{LAYER_PATH}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    name = f"ggnn_at_{revision.replace('~', '_').replace('^', '_')}"
    path = Path(tempfile.mkdtemp(prefix="ggnn-before-")) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # torch_geometric's MessagePassing inspects the module's globals
    spec.loader.exec_module(module)
    return module


def with_layer(model: DataflowGGNN, module) -> DataflowGGNN:
    """A copy of ``model`` whose message-passing layer is ``module.TypedGGNNConv`` with the same weights."""
    other = copy.deepcopy(model)
    conv = model.conv
    layer = module.TypedGGNNConv(
        conv.channels,
        conv.num_flows,
        backward_edges=conv.backward_edges,
        use_positions=conv.use_positions,
        position_pad=conv.position_pad,
        max_position=conv.max_position,
        dropout=conv.dropout,
    )
    layer.load_state_dict(conv.state_dict())
    other.conv = layer
    return other


def same_numbers(models: dict[str, DataflowGGNN], batch, threads: int) -> dict:
    """Logits, loss and gradients of the variants on one batch, compared bit for bit with the first."""
    out = {}
    for name, model in models.items():
        model.train()
        model.zero_grad(set_to_none=True)
        logits = model(batch)
        loss = model.loss(logits, batch.y)
        loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        model.zero_grad(set_to_none=True)
        out[name] = (logits.detach(), loss.detach(), grads)
    names = list(out)
    reference = out[names[0]]
    unreproducible = {"conv.position_linear.weight", "conv.position_linear.bias"} if threads > 1 else set()
    report = {}
    for name in names[1:]:
        logits, loss, grads = out[name]
        compared = [n for n in reference[2] if n not in unreproducible]
        report[name] = {
            "logits_equal": bool(torch.equal(logits, reference[0])),
            "loss_equal": bool(torch.equal(loss, reference[1])),
            "gradients_equal": all(torch.equal(grads[n], reference[2][n]) for n in compared),
            "gradients_max_abs_difference": max(float((grads[n] - reference[2][n]).abs().max()) for n in reference[2]),
            "gradients_not_compared": sorted(unreproducible),
        }
    return report


def time_once(model, optimizer, batch, *, train: bool, steps: int, precision: str) -> float:
    """Seconds of one training iteration or one inference."""
    start = time.perf_counter()
    if train:
        model.train()
        optimizer.zero_grad(set_to_none=True)
        with autocast(batch.x.device, precision):
            loss = model.loss(model(batch, num_steps=steps), batch.y)
        loss.backward()
        optimizer.step()
    else:
        model.eval()
        with torch.no_grad(), autocast(batch.x.device, precision):
            model(batch, num_steps=steps)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--before", default=DEFAULT_BEFORE, help=f"git revision of the 'before' layer ({DEFAULT_BEFORE})"
    )
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2)")
    parser.add_argument("--steps", type=int, default=30, help="message-passing steps T (default 30)")
    parser.add_argument("--max-nodes", type=int, default=10_000, help="node budget per batch (default 10,000)")
    parser.add_argument("--batches", type=int, default=4, help="batches per round (default 4)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the batches (default 3)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed iterations of each variant first (default 1)")
    parser.add_argument("--dataset", type=Path, help="a DeepDataFlow data set instead of synthetic graphs")
    parser.add_argument("--analysis", default="reachability")
    parser.add_argument("--split", default="train")
    parser.add_argument("--vocabulary-size", type=int, default=2230)
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32", help="both variants at this precision")
    parser.add_argument("--no-fused", action="store_true", help="leave out the opt-in fused steps (fused=True)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", type=Path, default=Path("ggnn-speed.json"), help="JSON output file")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    if args.dataset:
        examples, vocabulary_size = bench_train.dataset_examples(
            args.dataset, args.analysis, args.split, int(args.batches * args.max_nodes * 1.3), args.seed
        )
        source = f"{args.dataset} ({args.analysis}, {args.split}, DDF-30)"
    else:
        vocabulary_size = args.vocabulary_size
        examples = bench_train.synthetic_examples(rng, int(args.batches * args.max_nodes * 1.05), vocabulary_size)
        source = "synthetic"
    sizes = [int(e.num_nodes) for e in examples]
    plan = NodeBudgetBatchSampler(sizes, args.max_nodes, shuffle=True, seed=args.seed).plan()
    plan = sorted(plan, key=lambda b: -sum(sizes[i] for i in b))[: args.batches]
    batches = [Batch.from_data_list([examples[i] for i in b]) for b in plan]

    after = DataflowGGNN(vocabulary_size, fused=False)
    models = {"before": with_layer(after, load_layer(args.before)), "after": after}
    if not args.no_fused:
        fused = copy.deepcopy(after)
        fused.conv.fused = True
        models["after, fused"] = fused
    check = same_numbers(models, batches[0], args.threads)
    optimizers = {name: torch.optim.AdamW(m.parameters(), lr=2.5e-4) for name, m in models.items()}
    phase = {"steps": args.steps, "precision": args.precision}
    for name, model in models.items():
        for _ in range(args.warmup):
            time_once(model, optimizers[name], batches[0], train=True, **phase)
            time_once(model, None, batches[0], train=False, **phase)

    rates: dict[str, dict[str, list[float]]] = {n: {"train": [], "inference": []} for n in models}
    names = list(models)
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]
        for batch in batches:
            for train in (True, False):
                for name in order:
                    seconds = time_once(models[name], optimizers[name], batch, train=train, **phase)
                    rates[name]["train" if train else "inference"].append(batch.num_nodes / seconds)
            order = order[::-1]

    medians = {n: {p: float(np.median(v)) for p, v in ph.items()} for n, ph in rates.items()}
    ratios = {name: {p: medians[name][p] / medians["before"][p] for p in ("train", "inference")} for name in names[1:]}
    report = {
        "benchmark": "ggnn_speed",
        "command": " ".join(["python", "benchmarks/ggnn_speed.py", *(argv if argv is not None else sys.argv[1:])]),
        "before": args.before,
        "source": source,
        "threads": args.threads,
        "precision": args.precision,
        "torch": torch.__version__,
        "cpu": bench_train.cpu_name(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "batch_nodes": [b.num_nodes for b in batches],
        "rounds": args.rounds,
        "same_numbers": check,
        "nodes_per_s": rates,
        "median_nodes_per_s": medians,
        "ratio_after_over_before": ratios,
    }
    print(
        f"DataflowGGNN, T={args.steps}, {source}: batches of {[b.num_nodes for b in batches]} nodes, "
        f"{args.rounds} rounds; {args.threads} threads, {args.precision}; {report['cpu']} "
        f"({report['cpu_capability']}), torch {torch.__version__}"
    )
    for name, result in check.items():
        print(f"{name} against before: {result}")
    print(f"{'variant':<14} {'train nodes/s':>14} {'ratio':>7} {'inference nodes/s':>18} {'ratio':>7}   (median batch)")
    for name in names:
        t, i = medians[name]["train"], medians[name]["inference"]
        rt, ri = (ratios[name]["train"], ratios[name]["inference"]) if name in ratios else (1.0, 1.0)
        print(f"{name:<14} {t:>14,.0f} {rt:>6.2f}x {i:>18,.0f} {ri:>6.2f}x")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
