#!/usr/bin/env python3
"""What the freshness check costs: a rerun of ``programl build`` / ``analyze`` whose outputs are all up to date
(each input read and hashed, the record read; :mod:`programl.util.freshness`) against building them again.

Generates N distinct IR inputs (the bundled tests/data/example_*.ll, each with its own trailing comment) in a
temporary directory, builds and labels them once, then times (wall, best of --repeat) an up-to-date rerun and a
``--force`` run of each command, and prints the cost of the check per input and as a share of the work it saves.
Target: hashing inputs stays a small fraction of rebuilding them.

Usage: .venv/bin/python benchmarks/freshness.py [-n 300] [--repeat 3] [-j 1]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.cli import main  # noqa: E402


def timed(args: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()) as err:
            code = main(args)
        best = min(best, time.perf_counter() - start)
        if code != 0:
            raise SystemExit(f"{' '.join(args)} exited {code}: {err.getvalue()}")
    return best


def main_(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=300, help="inputs (default: 300)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("-j", "--jobs", default="1")
    args = parser.parse_args(argv)
    examples = sorted((REPO / "tests" / "data").glob("example_*.ll"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "ir").mkdir()
        for i in range(args.n):
            text = examples[i % len(examples)].read_text()
            (tmp / "ir" / f"p{i:05d}.ll").write_text(f"{text}\n; input {i}\n")
        inputs = sorted(str(p) for p in (tmp / "ir").iterdir())
        build = ["build", *inputs, "-o", str(tmp / "graphs"), "-j", args.jobs]
        analyze = ["analyze", "all", str(tmp / "graphs"), "-o", str(tmp / "labels"), "-j", args.jobs]
        rows = []
        for name, command in (("build", build), ("analyze", analyze)):
            timed(command, 1)  # the first run writes the outputs and the record
            fresh = timed(command, args.repeat)
            force = timed([*command, "--force"], args.repeat)
            rows.append((name, fresh, force))
    print(f"{args.n} inputs, -j {args.jobs}, best of {args.repeat} (wall)")
    print(f"{'command':<10}{'up to date (s)':>16}{'per input (us)':>16}{'--force (s)':>14}{'check/force':>13}")
    for name, fresh, force in rows:
        print(f"{name:<10}{fresh:>16.3f}{fresh / args.n * 1e6:>16.0f}{force:>14.3f}{fresh / force:>13.1%}")


if __name__ == "__main__":
    main_()
