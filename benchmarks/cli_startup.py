#!/usr/bin/env python3
"""How long ``programl ... --help`` takes, as a user's shell runs it (a new interpreter each time), and what it
imports (target: ``programl --help`` under 0.5 s; the command line imports only the module of the command it runs,
and a task's options come from its light ``spec.py``, not from its training module).

For each command line: the median and best wall time over ``--repeat`` runs of ``.venv/bin/programl ARGS``, and
whether the run imported torch or numpy (``-X importtime`` of one more run). Prints a table and a TARGET line.

Usage: .venv/bin/python benchmarks/cli_startup.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The command lines timed; the first is the target's.
COMMANDS = (
    ["--help"],
    ["build", "--help"],
    ["train", "--help"],
    ["train", "dataflow", "--help"],
    ["evaluate", "devmap", "--help"],
    ["predict", "--help"],
)
TARGET_SECONDS = 0.5


def programl() -> list[str]:
    """The installed ``programl`` beside this interpreter, else ``python -m programl``."""
    script = Path(sys.executable).with_name("programl")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "programl"]


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def imported(args: list[str]) -> set[str]:
    """The top-level packages one run imports (from ``-X importtime``)."""
    code = "import sys; from programl.cli import main; sys.exit(main(sys.argv[1:]))"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *args], capture_output=True, text=True, cwd=REPO
    )
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs per command line (default: 15)")
    args = parser.parse_args()
    base = programl()
    print(f"{'command':32} {'median s':>9} {'best s':>8}  imports torch / numpy")
    medians = {}
    for command in COMMANDS:
        wall(base + command)  # warm the file cache
        times = [wall(base + command) for _ in range(args.repeat)]
        medians[" ".join(command)] = statistics.median(times)
        heavy = imported(command)
        print(
            f"{'programl ' + ' '.join(command):32} {statistics.median(times):9.3f} {min(times):8.3f}  "
            f"{'yes' if 'torch' in heavy else 'no'} / {'yes' if 'numpy' in heavy else 'no'}"
        )
    first = medians["--help"]
    verdict = "met" if first < TARGET_SECONDS else "missed"
    print(f"TARGET programl --help median {first:.3f} s (target < {TARGET_SECONDS} s: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
