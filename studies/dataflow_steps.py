"""Per-step errors of a data-flow model, and halting rules replayed on them (issue 36 item 2).

``record`` runs each example of a seeded sample alone for a fixed number of steps and writes, per example and per
step, the true positives, false positives and false negatives of its predictions and how many nodes changed class,
plain and latched (a node once predicted true after the model's T stays true:
:meth:`~programl.models.DataflowGGNN.forward_until_stable` with ``latch``). ``replay`` then scores any until-stable
halting (patience, latch, cap) on that record without the model, exactly as ``forward_until_stable`` halts, and names
each wrong example's kind: it halted before its flood finished (right later), it drifted (right earlier), or it is
never right. This is how ``studies/history/results-history.md`` §5 "Dominance trained to hold its fixed point" tells
the halting's failures from the model's::

    python studies/dataflow_steps.py record data/ddf22-3000 --model dominance-step-free --split val \\
        --examples 440 --steps 1500 --out dom.jsonl
    python studies/dataflow_steps.py replay dom.jsonl --patience 60 120 240 --latch both

``curve`` reads one or more records and prints, per step, the pooled recall and precision over their examples, and
for each record the step at which each example first lost a true node it had found (once it had found them all):
when a recurrence trained at a fixed T stops holding, a fixed-T model's "clock"
(``studies/history/results-history.md`` §5)::

    python studies/dataflow_steps.py curve datadep.jsonl datadep-step-free.jsonl --plot recall-by-step.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FORMAT = 1


def record(args: argparse.Namespace) -> int:
    import numpy as np
    import torch
    from torch_geometric.data import Batch
    from tqdm import tqdm

    from programl.datasets import DeepDataFlow
    from programl.pretrained import pretrained

    torch.set_num_threads(args.threads)
    model = pretrained(args.model)
    net = model.model.eval()
    analysis = model.metadata["analysis"]
    vocabulary = model.directory / model.metadata["vocabulary"]["file"]
    data = DeepDataFlow.from_directory(
        args.data, analysis, args.split, max_steps=None, max_nodes=args.max_nodes, vocabulary_path=vocabulary
    )
    counts = data.step_counts
    chosen = np.random.default_rng(args.seed).permutation(len(data))[: args.examples or len(data)]
    min_steps = net.num_steps
    out = Path(args.out)
    partial = out.with_name(out.name + ".part")
    with partial.open("w") as f:
        header = {
            "format": FORMAT,
            "model": args.model,
            "analysis": analysis,
            "split": args.split,
            "data": str(args.data),
            "seed": args.seed,
            "steps": args.steps,
            "min_steps": min_steps,
        }
        f.write(json.dumps(header) + "\n")
        for i in tqdm(sorted(int(i) for i in chosen), desc="examples", unit="ex", disable=args.quiet):
            example = data[i]
            y = example.y.bool()
            row = {
                "index": i,
                "name": data.graph_name(i),
                "need": int(counts[i]),
                "nodes": int(example.num_nodes),
                "true": int(y.sum()),
                "tp": [],
                "fp": [],
                "fn": [],
                "flips": [],
                "latched": {"tp": [], "fp": [], "fn": [], "flips": []},
            }
            previous = best = previous_latched = None
            for step, logits in enumerate(net.logits_each_step(Batch.from_data_list([example]), args.steps), 1):
                predicted = logits.argmax(-1).bool()
                _count(row, predicted, y, previous)
                previous = predicted
                if step >= min_steps:  # the latch starts from the model's T, as forward_until_stable's does
                    margin = logits[:, 1] - logits[:, 0]
                    best = margin if best is None else torch.maximum(best, margin)
                    _count(row["latched"], best > 0, y, previous_latched)
                    previous_latched = best > 0
            f.write(json.dumps(row) + "\n")
    partial.replace(out)
    print(f"{out}: {len(chosen)} examples of {args.split}, {args.steps} steps each")
    return 0


def _count(into: dict, predicted, y, previous) -> None:
    into["tp"].append(int((predicted & y).sum()))
    into["fp"].append(int((predicted & ~y).sum()))
    into["fn"].append(int((~predicted & y).sum()))
    into["flips"].append(0 if previous is None else int((predicted != previous).sum()))


def halting_step(flips: list[int], patience: int, min_steps: int, max_steps: int, first_step: int) -> int:
    """The step at which ``forward_until_stable`` halts a graph whose per-step class changes are ``flips``
    (``flips[k]``: changes at step ``first_step + k`` against the step before): after ``min_steps``, once none changed
    for ``patience`` consecutive steps, else at ``max_steps``."""
    quiet = 0
    for step in range(min_steps + 1, max_steps + 1):
        quiet = 0 if flips[step - first_step] else quiet + 1
        if quiet >= patience:
            return step
    return max_steps


def f1(tp: int, fp: int, fn: int) -> float:
    """F1 of the true class (:func:`programl.util.scores.precision_recall_f1`), but 1.0 for an example with nothing
    to find and nothing predicted (right, where the pooled convention would count it 0)."""
    from programl.util.scores import precision_recall_f1

    return 1.0 if tp + fp + fn == 0 else precision_recall_f1(tp, fn, fp)["f1"]


def replay_rows(rows: list[dict], header: dict, patience: int, latch: bool, max_steps: int) -> dict:
    """Score one halting rule on the recorded rows: per-example mean F1, pooled P/R/F1, mean steps, and the wrong
    examples with their kind."""
    min_steps = header["min_steps"]
    first = min_steps if latch else 1  # the latched record starts at the model's T
    from programl.util.scores import precision_recall_f1

    tp = fp = fn = 0
    per, steps, wrong = [], [], []
    for row in rows:
        series = row["latched"] if latch else row
        step = halting_step(series["flips"], patience, min_steps, max_steps, first)
        k = step - first
        a, b, c = series["tp"][k], series["fp"][k], series["fn"][k]
        tp, fp, fn = tp + a, fp + b, fn + c
        per.append(f1(a, b, c))
        steps.append(step)
        if b or c:
            right = [s + first for s, (x, z) in enumerate(zip(series["fp"], series["fn"])) if x == 0 and z == 0]
            kind = "never right" if not right else "halted early" if any(s > step for s in right) else "drifted"
            wrong.append(
                {
                    "index": row["index"],
                    "need": row["need"],
                    "nodes": row["nodes"],
                    "halted": step,
                    "fp": b,
                    "fn": c,
                    "kind": kind,
                }
            )
    pooled = precision_recall_f1(tp, fn, fp)
    return {
        "patience": patience,
        "latch": latch,
        "examples": len(rows),
        "f1": sum(per) / max(1, len(per)),
        "pooled_precision": pooled["precision"],
        "pooled_recall": pooled["recall"],
        "pooled_f1": pooled["f1"],
        "mean_steps": sum(steps) / max(1, len(steps)),
        "wrong": wrong,
    }


def read_record(path: str | Path) -> tuple[dict, list[dict]]:
    """The header and the rows of a record written by ``record``; ValueError for anything else."""
    lines = Path(path).read_text().splitlines()
    try:
        header, rows = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    except (IndexError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a record of this script ({error or 'empty'})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        found = header.get("format") if isinstance(header, dict) else None
        raise ValueError(f"{path}: not a record of this script (format {found!r})")
    return header, rows


def first_drop(tp: list[int], true: int) -> int | None:
    """The step (1-based) at which an example first has fewer true positives than true nodes after it had them all;
    None where it never had them all or never lost one."""
    full = next((i for i, n in enumerate(tp) if n == true), None)
    if not true or full is None:
        return None
    return next((i + 1 for i in range(full, len(tp)) if tp[i] < true), None)


def curve_rows(rows: list[dict]) -> dict:
    """Per step, the pooled recall and precision of ``rows`` (plain, not latched), and each example's first drop."""
    steps = min(len(r["tp"]) for r in rows)
    true = sum(r["true"] for r in rows)
    tp = [sum(r["tp"][s] for r in rows) for s in range(steps)]
    fp = [sum(r["fp"][s] for r in rows) for s in range(steps)]
    drops = [first_drop(r["tp"], r["true"]) for r in rows]
    return {
        "recall": [t / true if true else 1.0 for t in tp],
        "precision": [t / (t + f) if t + f else 1.0 for t, f in zip(tp, fp)],
        "drops": drops,
        "examples": len(rows),
        "with_true": sum(r["true"] > 0 for r in rows),
    }


def curve(args: argparse.Namespace) -> int:
    import numpy as np

    curves = {}
    for path in args.records:
        header, rows = read_record(path)
        curves[f"{header['model']} ({header['split']}, {len(rows)})"] = curve_rows(rows)
    for name, c in curves.items():
        drops = np.array([d for d in c["drops"] if d is not None])
        held = c["with_true"] - len(drops)
        print(f"{name}: {len(drops)} of {c['with_true']} examples with true nodes lost one after finding all", end="")
        if len(drops):
            q10, q50, q90 = np.percentile(drops, [10, 50, 90])
            print(f", at step {q50:.0f} (median; 10-90 %: {q10:.0f}-{q90:.0f}); {held} held or never found all")
        else:
            print(f"; {held} held or never found all")
    marks = [s for s in args.steps if all(s <= len(c["recall"]) for c in curves.values())]
    print("| model | " + " | ".join(f"T={s}" for s in marks) + " |")
    print("|---|" + "---|" * len(marks))
    for name, c in curves.items():
        cells = [f"R {c['recall'][s - 1]:.3f}, P {c['precision'][s - 1]:.3f}" for s in marks]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 3.6))
        for name, c in curves.items():
            x = np.arange(1, len(c["recall"]) + 1)
            line = ax.plot(x, c["recall"], label=f"{name}: recall")[0]
            ax.plot(x, c["precision"], linestyle="--", color=line.get_color(), label=f"{name}: precision")
        ax.axvline(30, color="grey", linewidth=0.8)
        ax.set_xlabel("message-passing steps")
        ax.set_ylabel("pooled over the examples")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7, loc="lower left")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")
    return 0


def replay(args: argparse.Namespace) -> int:
    header, rows = read_record(args.record)
    max_steps = min(args.max_steps or header["steps"], header["steps"])
    print(f"{header['model']} on {len(rows)} {header['split']} examples, at most {max_steps} steps")
    print("| patience | latched | mean F1 | pooled P | pooled R | pooled F1 | mean steps | wrong (early/drift/never) |")
    print("|---|---|---|---|---|---|---|---|")
    results = []
    for latch in {"off": [False], "on": [True], "both": [False, True]}[args.latch]:
        for patience in args.patience:
            r = replay_rows(rows, header, patience, latch, max_steps)
            results.append(r)
            kinds = [sum(w["kind"] == k for w in r["wrong"]) for k in ("halted early", "drifted", "never right")]
            print(
                f"| {patience} | {'yes' if latch else 'no'} | {r['f1']:.4f} | {r['pooled_precision']:.4f} | "
                f"{r['pooled_recall']:.4f} | {r['pooled_f1']:.4f} | {r['mean_steps']:.0f} | "
                f"{len(r['wrong'])} ({kinds[0]} / {kinds[1]} / {kinds[2]}) |"
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"record": str(args.record), "results": results}, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run a sample of examples step by step and record their errors")
    rec.add_argument("data", help="a DeepDataFlow-22 build")
    rec.add_argument("--model", required=True, help="a shipped data-flow model's name or a model directory")
    rec.add_argument("--split", choices=("train", "val", "test"), default="val")
    rec.add_argument("--examples", type=int, default=400, help="a seeded sample of N examples (0: all)")
    rec.add_argument("--seed", type=int, default=2)
    rec.add_argument("--steps", type=int, default=1000, help="steps each example runs")
    rec.add_argument("--max-nodes", type=int, default=40_000)
    rec.add_argument("--threads", type=int, default=1)
    rec.add_argument("--out", required=True, help="the record (JSON lines), written atomically")
    rec.add_argument("-q", "--quiet", action="store_true")
    rep = sub.add_parser("replay", help="score halting rules on a record")
    rep.add_argument("record")
    rep.add_argument("--patience", type=int, nargs="+", default=[5, 40, 120])
    rep.add_argument("--latch", choices=("off", "on", "both"), default="off", help="replay the latched record, or both")
    rep.add_argument("--max-steps", type=int, help="the cap (default: the record's steps)")
    rep.add_argument("--json")
    cur = sub.add_parser("curve", help="recall and precision per step of records, and when examples first drop")
    cur.add_argument("records", nargs="+")
    cur.add_argument("--steps", type=int, nargs="+", default=[30, 40, 45, 50, 60, 100, 200], help="steps to print")
    cur.add_argument("--plot", help="draw recall and precision against the step into this PNG")
    args = parser.parse_args(argv)
    from programl.exceptions import ProgramlError

    try:
        return {"record": record, "replay": replay, "curve": curve}[args.command](args)
    except (ProgramlError, OSError, ValueError, KeyError) as error:  # a missing or damaged input: one line, exit 1
        detail = f"missing {error}" if isinstance(error, KeyError) else str(error)
        print(f"dataflow_steps {args.command}: {detail}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
