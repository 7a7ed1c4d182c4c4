#!/usr/bin/env python3
"""programl.gym speed: the latency of one step and the episodes per second, against the same pass run by a plain
opt-22 process (docs/gym.md#how-an-action-runs).

On one mid-size module (default: the Csmith program generator://csmith-v0/1, else generator://llvm-stress-v0/1 when
csmith is absent), for each of a few passes:

* ``opt``: ``opt-22 -passes=<element> in.bc -o out.bc`` as a subprocess, the floor a step cannot go under;
* ``step``: ``env.step(<pass>)`` from the same state (a fork each time), with no observation and the
  ``IrInstructionCount`` reward (the opt run plus reading the new module back to count its instructions);
* ``step+autophase``: the same with the ``Autophase`` observation.

Then ``episodes/s``: episodes of --episode-length random passes with the Autophase observation and the
IrInstructionCountOz reward (the benchmark and its -Oz baseline loaded once before timing). Times are wall-clock
medians over --repeat runs (this machine's other work counts; run it on a quiet machine). Prints a table, writes JSON
(--out).

Usage: .venv/bin/python benchmarks/gym_step.py [--benchmark URI] [--repeat 15] [--episodes 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.exceptions import UnsupportedCompiler  # noqa: E402
from programl.gym.env import LlvmEnv  # noqa: E402
from programl.gym.tools import find_csmith  # noqa: E402

PASSES = ("mem2reg", "instcombine", "simplifycfg", "gvn", "licm", "inline")


def default_benchmark() -> str:
    try:
        find_csmith()
        return "generator://csmith-v0/1"
    except UnsupportedCompiler:
        return "generator://llvm-stress-v0/1"


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", default=None, help="benchmark URI (default: a Csmith program)")
    parser.add_argument("--repeat", type=int, default=15, help="runs per measurement (median)")
    parser.add_argument("--episodes", type=int, default=5, help="episodes for episodes/s")
    parser.add_argument("--episode-length", type=int, default=20, help="random passes per episode")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args()
    uri = args.benchmark or default_benchmark()

    env = LlvmEnv(uri, observation_space=None, reward_space="IrInstructionCount")
    env.reset()
    start_state = env.fork()
    opt = env.toolchain.opt_path
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        bitcode = Path(tmp) / "in.bc"
        env.write_bitcode(bitcode, initial=True)
        instructions = env.observation["IrInstructionCount"]
        for name in PASSES:
            index = env.action_space.names.index(name)
            element = env.action_space.pipelines[index]
            command = [opt, f"-passes={element}", str(bitcode), "-o", str(Path(tmp) / "out.bc")]
            plain = median_seconds(lambda: subprocess.run(command, check=True), args.repeat)  # noqa: B023

            def step(observation: str | None) -> None:
                fork = start_state.fork()
                fork.reset(observation_space=observation)  # the same benchmark: its initial state is cached
                fork.step(index)  # noqa: B023

            bare = median_seconds(lambda: step(None), args.repeat)
            autophase = median_seconds(lambda: step("Autophase"), args.repeat)
            rows.append({"pass": name, "opt_s": plain, "step_s": bare, "step_autophase_s": autophase})

    episode_env = LlvmEnv(uri, observation_space="Autophase", reward_space="IrInstructionCountOz")
    episode_env.reset()
    episode_env.observation["IrInstructionCountOz"]  # the baseline, once, before timing
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(args.episodes):
        episode_env.reset()
        for action in rng.integers(episode_env.action_space.n, size=args.episode_length):
            if episode_env.step(int(action))[2]:
                break
    episodes_per_second = args.episodes / (time.perf_counter() - start)

    print(f"benchmark {uri}: {instructions} instructions, {len(env.benchmark.bitcode)} bytes of bitcode")
    print(f"{'pass':<14}{'opt-22 (ms)':>14}{'step (ms)':>12}{'+Autophase (ms)':>18}{'overhead':>10}")
    for row in rows:
        overhead = row["step_s"] / row["opt_s"]
        print(f"{row['pass']:<14}{row['opt_s'] * 1e3:>14.1f}{row['step_s'] * 1e3:>12.1f}"
              f"{row['step_autophase_s'] * 1e3:>18.1f}{overhead:>9.2f}x")  # fmt: skip
    print(f"episodes of {args.episode_length} random passes (Autophase, IrInstructionCountOz): "
          f"{episodes_per_second:.2f} episodes/s")  # fmt: skip
    if args.out:
        result = {
            "benchmark": uri,
            "instructions": instructions,
            "repeat": args.repeat,
            "passes": rows,
            "episode_length": args.episode_length,
            "episodes_per_second": episodes_per_second,
            "machine": platform.platform(),
            "python": platform.python_version(),
        }
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
