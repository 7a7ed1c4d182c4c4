#!/usr/bin/env python3
"""What a data-flow model's false positives are: their texts and their roots', and how many share an operand with
the root or have its text (:mod:`programl.models.false_positives`; issue 11 item 4).

Runs a pretrained data-flow model (a shipped name such as ``subexpressions``, or a model directory) on a split of a
DeepDataFlow data set, with the examples chosen as ``studies/dataflow_f1_by_distance.py`` chooses them. This is how
the faithful subexpressions model's false positives were found to be instructions of another opcode than the root
that share an operand with it (``studies/history/results-history.md`` §5).

Usage::

    python studies/dataflow_false_positives.py --model subexpressions --dataset data/ddf22-full --split val \\
        --max-examples 5000 --json out/subexpressions-fp.json
"""

from __future__ import annotations

import argparse
import runpy
import sys
import time
from pathlib import Path

_F1_BY_DISTANCE = runpy.run_path(str(Path(__file__).with_name("dataflow_f1_by_distance.py")), run_name="helpers")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("Usage::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", required=True, metavar="NAME|DIR", help="a shipped model name or a model directory")
    parser.add_argument("--dataset", required=True, metavar="DIR", help="a DeepDataFlow data set directory")
    parser.add_argument("--split", default="val", help="train, val or test (default: val)")
    parser.add_argument("--processed-dir", metavar="DIR", help="where the PyG form goes (default: DIR/processed)")
    parser.add_argument("--max-examples", type=int, default=0, metavar="N", help="a seeded sample of N (0: all)")
    parser.add_argument("--seed", type=int, default=205, help="seed of the sample (default: 205)")
    parser.add_argument("--steps", type=int, metavar="T", help="message-passing steps (default: the model's, 30)")
    parser.add_argument(
        "--max-steps",
        type=_F1_BY_DISTANCE["_max_steps"],
        default=30,
        metavar="N|all",
        help="keep examples of at most N data-flow steps, as training does (default: 30; 'all': no filter)",
    )
    parser.add_argument("--max-nodes", type=int, default=40_000, metavar="N", help="largest graph (default: 40,000)")
    parser.add_argument("--batch-nodes", type=int, default=10_000, metavar="N", help="nodes per batch (10,000)")
    parser.add_argument("--top", type=int, default=25, metavar="K", help="(root, false positive) pairs shown (25)")
    parser.add_argument("--threads", type=int, metavar="N", help="torch threads (default: torch's)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the counts as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    for name in ("max_nodes", "batch_nodes", "threads", "top"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.max_examples < 0 or (args.steps is not None and args.steps < 0):
        parser.error("--max-examples and --steps must be >= 0")
    return args


def report(result: dict) -> str:
    fp = result["false_positives"]
    share = (lambda n: f"{n:,} ({100 * n / fp:.1f} %)") if fp else (lambda n: f"{n:,}")
    lines = [
        f"{result['model']} on {result['split']} ({result['examples']:,} examples, T={result['steps']}): "
        f"{result['true_positives']:,} true positives, {fp:,} false positives, "
        f"{result['false_negatives']:,} misses",
        f"  false positives sharing an operand with the root: {share(result['shares_operand_with_root'])}",
        f"  false positives with the root's text: {share(result['same_text_as_root'])}",
        f"  examples with false positives: {result['examples_with_false_positives']:,}; most in one: "
        f"{', '.join(map(str, result['most_in_one_example'])) or '-'}",
        "",
        "| root | false positive | count |",
        "|---|---|---|",
        *(f"| {p['root']} | {p['false_positive']} | {p['count']:,} |" for p in result["pairs"]),
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    false_positive_kinds = runpy.run_path(str(Path(__file__).with_name("false_positive_kinds.py")))[
        "false_positive_kinds"
    ]
    from programl.training.checkpoint import write_json
    from programl.util.progress import progress

    model, data, available = _F1_BY_DISTANCE["load_model_and_examples"](args)
    started = time.perf_counter()

    def bar(items, total, description):
        return progress(items, total, description, enabled=not args.quiet, unit="batch")

    kinds = false_positive_kinds(model, data, steps=args.steps, batch_nodes=args.batch_nodes, progress=bar)
    result = {
        "model": model.name,
        "analysis": model.analysis,
        "dataset": str(Path(args.dataset).resolve()),
        "split": args.split,
        "steps": args.steps if args.steps is not None else int(model.metadata.get("steps", 30)),
        "max_steps": args.max_steps,
        "examples_available": available,
        "seed": args.seed if args.max_examples else None,
        "seconds": round(time.perf_counter() - started, 1),
        **kinds.to_dict(top=args.top),
    }
    print(report(result))
    if args.json:
        write_json(args.json, result)
    return 0


def main(argv: list[str] | None = None) -> int:
    return _F1_BY_DISTANCE["one_line_errors"](run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
