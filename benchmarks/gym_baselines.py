#!/usr/bin/env python3
"""programl.gym's baselines table: LLVM's -Oz and -O3, random search and greedy search on held-out programs of each
data set, scored as CompilerGym's llvm-ic-v0 leaderboard scores them (docs/gym.md#baselines).

For each data set (POJ-104, DevMap's OpenCL kernels, llvm-stress and Csmith programs; with --datasets wide-v0, the
files of the wide C corpus's archives; a data set whose data or tool is missing is skipped with the reason),
--programs programs of its test split (``sample_uris``: POJ-104, DevMap and wide-v0 spread evenly over the split, the
generators' first test seeds) are optimised by each agent:

* ``Oz`` / ``O3``: ``opt-22 -passes='default<Oz>'`` / ``'default<O3>'`` as a whole;
* ``random``: CompilerGym's random search (episodes of up to 40 random passes, each cut after 10 without a new best)
  for --seconds per program, once per seed of --seeds;
* ``greedy``: greedy search (every pass tried at each step, the best kept) for at most --seconds per program
  (deterministic: one run);
* ``policy`` / ``guided``, with --policy DIR (or ``shipped``): the learned one-shot policy and the search it guides
  (:mod:`programl.gym.policy`), once per policy directory of --policy (three training seeds give the spread; --guided
  N runs the guided search, whose budget is --guided-seconds, with the first N only).

Scores, per data set and agent: the geometric mean over programs of the episode's ``IrInstructionCountOz`` reward
(the fall in instruction count over -Oz's fall; -Oz scores 1.000; CompilerGym's statistic, which is 0 when any
program's reward is 0 or less), over the programs that -Oz makes smaller (where it does not, the reward is divided by
1 and counts raw instructions: one such program would outweigh the others, so it is left out and counted), the
geometric mean of ``-Oz``'s instruction count over the agent's (over every program, each count at least 1, so that a
module of data alone counts 1.000; 1.000 for -Oz, never 0), the
seconds each program took (the search, its opt-22 runs, counting instructions), and the spread of the first score over
seeds (min..max). Prints the table and writes every program's result as JSON (--out); ``--summarise FILE`` prints the
table of such a file again.

Usage: .venv/bin/python benchmarks/gym_baselines.py [--programs 20] [--seconds 4] [--seeds 0 1 2]
       [--datasets poj104-v1 devmap-v0 llvm-stress-v0 csmith-v0 wide-v0] [--policy DIR ...] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.exceptions import ProgramlError, UnsupportedCompiler  # noqa: E402
from programl.gym.agents import SearchResult, baseline, geometric_mean, greedy_search, random_search  # noqa: E402
from programl.gym.benchmarks import sample_uris  # noqa: E402
from programl.gym.env import LlvmEnv  # noqa: E402

DATASETS = ("poj104-v1", "devmap-v0", "llvm-stress-v0", "csmith-v0", "wide-v0")
#: The data sets measured when --datasets is not given (wide-v0's archives are downloaded: it is asked for by name).
DEFAULT_DATASETS = DATASETS[:4]


def run_agents(env: LlvmEnv, args, policies) -> list[tuple[str, int | None, SearchResult]]:
    """The agents of --agents on the environment's benchmark: (agent, seed, result)."""
    out = [("Oz", None, baseline(env, "Oz"))]  # first: its seconds are then those of the opt-22 run
    if "O3" in args.agents:
        out.append(("O3", None, baseline(env, "O3")))
    if "random" in args.agents:
        for seed in args.seeds:
            result = random_search(env, episodes=10**6, episode_length=40, patience=10, seed=seed,
                                   max_seconds=args.seconds)  # fmt: skip
            out.append(("random", seed, result))
    if "greedy" in args.agents:
        out.append(("greedy", None, greedy_search(env, max_steps=100, max_seconds=args.seconds)))
    for seed, policy in enumerate(policies):
        from programl.gym.policy import guided_search

        out.append(("policy", seed, policy.optimize(env)))
        if args.guided is None or seed < args.guided:
            out.append(("guided", seed, guided_search(env, policy, max_seconds=args.guided_seconds)))
    return out


def summarise(rows: list[dict]) -> list[dict]:
    """Per data set and agent: the scores of each seed, and their spread."""
    table = []
    keys = sorted({(r["dataset"], r["agent"]) for r in rows}, key=lambda k: (DATASETS.index(k[0]), k[1]))
    order = ["Oz", "O3", "random", "greedy", "policy", "guided"]
    keys.sort(key=lambda k: (DATASETS.index(k[0]), order.index(k[1])))
    for dataset, agent in keys:
        mine = [r for r in rows if r["dataset"] == dataset and r["agent"] == agent]
        seeds = sorted({r["seed"] for r in mine}, key=lambda s: -1 if s is None else s)
        per_seed = []
        for seed in seeds:
            runs = [r for r in mine if r["seed"] == seed]
            per_seed.append({
                "seed": seed,
                "geomean_reward": geometric_mean([r["reward"] for r in runs if r["o0"] > r["oz"]]),
                "geomean_oz_over_cost": geometric_mean([max(r["oz"], 1) / max(r["cost"], 1) for r in runs]),
                "non_positive": sum(r["reward"] <= 0 for r in runs if r["o0"] > r["oz"]),
                "seconds_mean": statistics.fmean(r["seconds"] for r in runs),
                "passes_mean": statistics.fmean(r["steps"] for r in runs),
            })  # fmt: skip
        scores = [s["geomean_reward"] for s in per_seed]
        table.append({
            "dataset": dataset,
            "agent": agent,
            "programs": len({r["benchmark"] for r in mine}),
            "oz_not_smaller": len({r["benchmark"] for r in mine if r["o0"] <= r["oz"]}),
            "seeds": len(seeds),
            "geomean_reward": statistics.fmean(scores),
            "geomean_reward_min": min(scores),
            "geomean_reward_max": max(scores),
            "geomean_oz_over_cost": statistics.fmean(s["geomean_oz_over_cost"] for s in per_seed),
            "non_positive": max(s["non_positive"] for s in per_seed),
            "seconds_mean": statistics.fmean(s["seconds_mean"] for s in per_seed),
            "passes_mean": statistics.fmean(s["passes_mean"] for s in per_seed),
            "per_seed": per_seed,
        })  # fmt: skip
    return table


def print_table(table: list[dict]) -> None:
    print(f"{'data set':<16}{'agent':<8}{'n':>4}{'seeds':>6}{'geomean reward':>16}{'spread':>16}"
          f"{'Oz/cost':>9}{'s/program':>11}{'passes':>8}")  # fmt: skip
    for row in table:
        spread = f"{row['geomean_reward_min']:.3f}..{row['geomean_reward_max']:.3f}" if row["seeds"] > 1 else "-"
        flag = f" ({row['non_positive']} <= 0)" if row["non_positive"] else ""
        if row["oz_not_smaller"]:
            flag += f" ({row['oz_not_smaller']} left out of the reward: -Oz removes nothing)"
        print(f"{row['dataset']:<16}{row['agent']:<8}{row['programs']:>4}{row['seeds']:>6}"
              f"{row['geomean_reward']:>16.3f}{spread:>16}{row['geomean_oz_over_cost']:>9.3f}"
              f"{row['seconds_mean']:>11.2f}{row['passes_mean']:>8.0f}{flag}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DEFAULT_DATASETS), choices=DATASETS)
    parser.add_argument("--programs", type=int, default=20, help="held-out programs per data set")
    parser.add_argument("--seconds", type=float, default=4.0, help="search budget per program (random, greedy)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of the random search")
    parser.add_argument("--policy", nargs="*", default=[], help="policy directories (or 'shipped'), one per seed")
    parser.add_argument("--guided-seconds", type=float, default=60.0, help="budget of the guided search")
    parser.add_argument("--guided", type=int, default=None, metavar="N",
                        help="run the guided search with the first N policies only (default: all)")  # fmt: skip
    parser.add_argument("--agents", nargs="*", default=["O3", "random", "greedy"], choices=["O3", "random", "greedy"],
                        help="reference agents besides Oz (none: Oz and the policy only)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the policy's network")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--summarise", type=Path, default=None, help="print the table of a JSON this script wrote")
    args = parser.parse_args()
    if args.summarise:
        print_table(summarise(json.loads(args.summarise.read_text())["rows"]))
        return

    policies = []
    if args.policy:
        import torch

        from programl.gym.policy import load_policy

        torch.set_num_threads(args.threads)

        policies = [load_policy(None if p == "shipped" else p) for p in args.policy]
    rows, skipped = [], []
    env = LlvmEnv(observation_space=None, reward_space="IrInstructionCountOz")
    started = time.perf_counter()
    for dataset in args.datasets:
        try:
            uris = sample_uris(dataset, "test", args.programs)
        except ProgramlError as error:
            skipped.append({"dataset": dataset, "benchmark": None, "reason": str(error)})
            print(f"{dataset}: skipped: {error}", file=sys.stderr)
            continue
        for uri in uris:
            try:
                env.reset(benchmark=uri)
                results = run_agents(env, args, policies)  # -Oz first: its time is that of its opt-22 run
                o0, oz = env.observation["IrInstructionCountO0"], env.observation["IrInstructionCountOz"]
            except (ProgramlError, UnsupportedCompiler) as error:
                skipped.append({"dataset": dataset, "benchmark": uri, "reason": str(error)})
                print(f"{uri}: skipped: {error}", file=sys.stderr)
                if isinstance(error, UnsupportedCompiler):
                    break
                continue
            for agent, seed, result in results:
                rows.append({
                    "dataset": dataset, "benchmark": uri, "agent": agent, "seed": seed, "o0": o0, "oz": oz,
                    "reward": result.reward, "cost": result.cost, "seconds": result.seconds, "steps": result.steps,
                    "pipeline": result.pipeline,
                })  # fmt: skip
            costs = ", ".join(f"{a}{'' if s is None else s} {r.cost:g}" for a, s, r in results)
            print(f"{uri}: O0 {o0}, Oz {oz}: {costs}", file=sys.stderr, flush=True)
    table = summarise(rows)
    print_table(table)
    print(f"{len(rows)} runs, {len(skipped)} programs skipped, {time.perf_counter() - started:.0f} s")
    if args.out:
        result = {
            "command": " ".join(sys.argv),
            "programs": args.programs,
            "seconds": args.seconds,
            "seeds": args.seeds,
            "agents": ["Oz", *args.agents],
            "guided_seconds": args.guided_seconds if policies else None,
            "guided_policies": args.guided,
            "policies": args.policy,
            "table": table,
            "rows": rows,
            "skipped": skipped,
            "machine": platform.platform(),
            "python": platform.python_version(),
        }
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
