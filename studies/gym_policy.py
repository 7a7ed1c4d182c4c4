"""The learned policy of programl.gym: can a GGNN that reads a program's ProGraML graph pick a pass pipeline, in one
shot, that beats LLVM's own -Oz on programs it has not seen? (record: ``studies/gym_policy.md``)

Imitation of search results, in stages (each cached under ``--work``, so that a stage reruns alone):

1. ``programs``: training programs (the ``train`` split of each data set, :func:`programl.gym.benchmarks.sample_uris`)
   and validation programs (the ``val`` split) of POJ-104, DevMap, llvm-stress and Csmith; no DevMap kernel of the
   test split (at any data size). The held-out ``test`` programs are never read here: ``benchmarks/gym_baselines.py
   --policy`` scores the policy on them.
2. ``pool``: candidate pipelines: LLVM's levels and pairs of them (``default<Oz>`` first), and what searches found on
   a few training programs: a greedy search from -Oz's module (every action at each step, the best appended: a
   pipeline ``default<Oz>,<passes>``), the same after ``default<Oz>,default<Oz>``, and CompilerGym's random search
   from the program as loaded (a pipeline of actions). The actions that helped after -Oz in those searches become the
   policy's ``refine_actions``.
3. ``label``: every candidate run on every training and validation program (one ``opt-22`` run each): its instruction
   count; the program's graph (``ProgramlGraph``) and ``Autophase`` features kept beside.
4. ``select``: the policy's pipelines: ``default<Oz>``, then greedily the candidate that most raises the training
   programs' geometric mean of -Oz's count over the best count reachable with the pipelines chosen so far, up to
   ``--pipelines``.
5. ``train``: for each seed, a :class:`~programl.models.GGNNGraphClassifier` (the graph, with Autophase as its
   auxiliary input) trained to put its probability on the set of pipelines that reach a program's smallest count
   (loss ``-log sum_{j in best} p_j`` plus the expected log-regret ``sum_j p_j min(log(count_j / best count), 3)``:
   a program where every pipeline ties teaches nothing and is left out); the
   epoch kept is the one whose choices score best on the validation programs. Each seed's policy is written as
   ``<work>/policy-seed<N>/`` (:func:`programl.gym.policy.save_policy`, a model card), and ``--ship DIR`` copies the
   best seed's there.

Usage::

    nice -n 15 .venv/bin/python studies/gym_policy.py --work bench-results/gym_policy \
        --ship programl/gym/weights/llvm-ic-policy
    .venv/bin/python benchmarks/gym_baselines.py --agents --policy bench-results/gym_policy/policy-seed{0,1,2}

``--threads`` torch threads (1 by default: the machine is shared). The log of the run (programs, seconds, CPU
seconds of this process and of the tools it ran) is ``<work>/log.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import resource
import shutil
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.exceptions import ProgramlError  # noqa: E402
from programl.gym.actions import ACTIONS  # noqa: E402
from programl.gym.agents import random_search, run_pipeline, score_state  # noqa: E402
from programl.gym.benchmarks import sample_uris, split_uris  # noqa: E402
from programl.gym.env import LlvmEnv  # noqa: E402
from programl.gym.errors import PassError  # noqa: E402
from programl.gym.state import State, apply_pipeline  # noqa: E402

DATASETS = ("poj104-v1", "devmap-v0", "llvm-stress-v0", "csmith-v0")
LEVELS = [
    "default<Oz>",
    "default<Oz>,default<Oz>",
    "default<Oz>,default<Oz>,default<Oz>",
    "default<Os>",
    "default<O2>",
    "default<O3>",
    "default<O1>,default<Oz>",
    "default<O2>,default<Oz>",
    "default<O3>,default<Oz>",
    "default<Os>,default<Oz>",
]


def cpu_seconds() -> dict[str, float]:
    """CPU seconds of this process and of the tools it ran (opt-22, clang-22, csmith ...)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"self": me.ru_utime + me.ru_stime, "tools": children.ru_utime + children.ru_stime}


class Log:
    """``<work>/log.json``: each stage's programs, wall and CPU seconds."""

    def __init__(self, work: Path) -> None:
        self.path = work / "log.json"
        self.data = json.loads(self.path.read_text()) if self.path.exists() else {"stages": {}}

    def stage(self, name: str, **facts) -> None:
        self.data["stages"][name] = {**self.data["stages"].get(name, {}), **facts}
        self.path.write_text(json.dumps(self.data, indent=2) + "\n")


def step_search(env: LlvmEnv, bitcode: bytes, cost: float, seconds: float, max_steps: int = 8):
    """Steepest descent from ``bitcode``: every action appended, the best kept, until none helps or time is up.
    Returns the actions appended and the actions that helped at the first step."""
    start, chosen, helped = time.perf_counter(), [], []
    for step in range(max_steps):
        best = None
        for index, action in enumerate(ACTIONS):
            if time.perf_counter() - start > seconds:
                break
            try:
                out = apply_pipeline(bitcode, action.pipeline, env.toolchain)
            except PassError:
                continue
            c = score_state(env, State(out))[1]
            if c < cost:
                if step == 0:
                    helped.append(index)
                if best is None or c < best[0]:
                    best = (c, index, out)
        if best is None:
            break
        cost, bitcode = best[0], best[2]
        chosen.append(best[1])
    return chosen, helped


def _kernel(uri: str) -> str:
    """A DevMap benchmark's kernel: its URI without the data size (``...-exact_rhs3-S`` -> ``...-exact_rhs3``)."""
    return uri.rsplit("-", 1)[0]


def stage_programs(args, log: Log) -> dict[str, list[str]]:
    path = args.work / "programs.json"
    if path.exists():
        return json.loads(path.read_text())
    sizes = dict(zip(DATASETS, args.train, strict=True))
    val_sizes = dict(zip(DATASETS, args.val, strict=True))
    programs = {"train": [], "val": []}
    for dataset in DATASETS:
        if dataset == "devmap-v0":
            # DevMap's rows are kernels run on several data sizes (<kernel>-<size>): the same code can be in every
            # split, so a kernel of the test split is in neither the training nor the validation programs
            test = {_kernel(u) for u in split_uris(dataset, "test")}
            for split, count in (("train", sizes[dataset]), ("val", val_sizes[dataset])):
                uris = [u for u in split_uris(dataset, split) if _kernel(u) not in test]
                programs[split] += [uris[(i * len(uris)) // count] for i in range(min(count, len(uris)))]
            continue
        programs["train"] += sample_uris(dataset, "train", sizes[dataset])
        programs["val"] += sample_uris(dataset, "val", val_sizes[dataset])
    path.write_text(json.dumps(programs, indent=1) + "\n")
    log.stage("programs", train=len(programs["train"]), val=len(programs["val"]), sizes=sizes, val_sizes=val_sizes)
    return programs


def stage_pool(args, log: Log, env: LlvmEnv, programs: dict[str, list[str]]) -> dict:
    path = args.work / "pool.json"
    if path.exists():
        return json.loads(path.read_text())
    start, cpu = time.perf_counter(), cpu_seconds()
    by_dataset = {d: [u for u in programs["train"] if u.split("/")[2] == d] for d in DATASETS}
    searched = [u for d in DATASETS for u in by_dataset[d][: args.search_programs]]
    pipelines, helped, found = list(LEVELS), {}, []
    for uri in searched:
        try:
            env.reset(benchmark=uri)
            for prefix in (["default<Oz>"], ["default<Oz>", "default<Oz>"]):
                state, _, cost = run_pipeline(env, ",".join(prefix))
                chosen, first = step_search(env, state.bitcode, cost, args.search_seconds)
                for index in first:
                    helped[index] = helped.get(index, 0) + 1
                if chosen:
                    pipelines.append(",".join(prefix + [ACTIONS[a].pipeline for a in chosen]))
            result = random_search(env, episodes=10**6, episode_length=40, patience=10, seed=0,
                                   max_seconds=args.search_seconds)  # fmt: skip
            if result.actions:
                pipelines.append(result.pipeline)
            found.append({"benchmark": uri, "pipelines": pipelines[len(LEVELS) :]})
        except ProgramlError as error:
            print(f"{uri}: skipped: {error}", file=sys.stderr)
        print(f"pool: {uri}: {len(pipelines)} candidates", file=sys.stderr, flush=True)
    pipelines = list(dict.fromkeys(pipelines))
    refine = [i for i, _ in sorted(helped.items(), key=lambda kv: (-kv[1], kv[0]))][: args.refine_actions]
    pool = {"pipelines": pipelines, "refine_actions": refine, "searched": searched}
    path.write_text(json.dumps(pool, indent=1) + "\n")
    used = cpu_seconds()
    log.stage("pool", programs=len(searched), candidates=len(pipelines), search_seconds=args.search_seconds,
              seconds=time.perf_counter() - start,
              cpu_self=used["self"] - cpu["self"], cpu_tools=used["tools"] - cpu["tools"])  # fmt: skip
    return pool


def _key(uri: str) -> str:
    return hashlib.sha1(uri.encode()).hexdigest()[:16]


def stage_label(args, log: Log, env: LlvmEnv, programs: dict[str, list[str]], pool: dict) -> dict[str, dict]:
    """Per program: O0, Oz, the count of each candidate (None where opt-22 failed), Autophase; its graph beside."""
    labels_path, graphs = args.work / "labels.jsonl", args.work / "graphs"
    graphs.mkdir(exist_ok=True)
    labels = {}
    if labels_path.exists():
        for line in labels_path.read_text().splitlines():
            record = json.loads(line)
            labels[record["benchmark"]] = record
    start, cpu = time.perf_counter(), cpu_seconds()
    todo = [u for u in programs["train"] + programs["val"] if u not in labels]
    with labels_path.open("a") as out:
        for n, uri in enumerate(todo):
            try:
                env.reset(benchmark=uri)
                costs = []
                for pipeline in pool["pipelines"]:
                    try:
                        costs.append(run_pipeline(env, pipeline)[2])
                    except PassError:
                        costs.append(None)
                graph = env.observation["ProgramlGraph"]
                record = {
                    "benchmark": uri, "o0": env.observation["IrInstructionCountO0"],
                    "oz": env.observation["IrInstructionCountOz"], "costs": costs,
                    "autophase": [int(v) for v in env.observation["Autophase"]],
                }  # fmt: skip
                (graphs / f"{_key(uri)}.pb").write_bytes(graph.SerializeToString())
            except ProgramlError as error:
                record = {"benchmark": uri, "error": str(error)}
            labels[uri] = record
            out.write(json.dumps(record) + "\n")
            out.flush()
            if n % 20 == 0:
                print(f"label: {n}/{len(todo)} {uri}", file=sys.stderr, flush=True)
    used = cpu_seconds()
    previous = log.data["stages"].get("label", {})
    log.stage("label", programs=len(labels), failed=sum("error" in r for r in labels.values()),
              seconds=previous.get("seconds", 0) + time.perf_counter() - start,
              cpu_self=previous.get("cpu_self", 0) + used["self"] - cpu["self"],
              cpu_tools=previous.get("cpu_tools", 0) + used["tools"] - cpu["tools"])  # fmt: skip
    return labels


def cost_matrix(records: list[dict], count: int) -> tuple[np.ndarray, np.ndarray]:
    """(programs, candidates) counts (inf where opt-22 failed) and each program's -Oz count."""
    costs = np.array([[math.inf if c is None else c for c in r["costs"][:count]] for r in records], dtype=float)
    return costs, np.array([r["oz"] for r in records], dtype=float)


def score(costs: np.ndarray, oz: np.ndarray, choice: np.ndarray) -> float:
    """Geometric mean of -Oz's count over the count of the chosen pipeline."""
    chosen = costs[np.arange(len(choice)), choice]
    return float(np.exp(np.mean(np.log(np.maximum(oz, 1) / np.maximum(chosen, 1)))))


def stage_select(args, log: Log, pool: dict, train: list[dict]) -> list[int]:
    costs, oz = cost_matrix(train, len(pool["pipelines"]))
    chosen = [0]  # default<Oz>

    def oracle(indices):
        return score(costs[:, indices], oz, np.argmin(costs[:, indices], axis=1))

    while len(chosen) < args.pipelines:
        gains = [(oracle(chosen + [j]), j) for j in range(costs.shape[1]) if j not in chosen]
        best, j = max(gains)
        if best <= oracle(chosen) + 1e-6:
            break
        chosen.append(j)
    log.stage("select", chosen=[pool["pipelines"][j] for j in chosen], oracle_train=oracle(chosen))
    return chosen


def examples(records: list[dict], chosen: list[int], vocabulary, work: Path):
    """The training examples: Data with graph_x (Autophase), the best set and the counts of the chosen pipelines."""
    import torch

    from programl.io.pyg import to_pyg
    from programl.proto import ProgramGraph

    costs, oz = cost_matrix(records, 10**9)
    costs = costs[:, chosen]
    out = []
    for record, row, base in zip(records, costs, oz, strict=True):
        graph = ProgramGraph.FromString((work / "graphs" / f"{_key(record['benchmark'])}.pb").read_bytes())
        data = to_pyg(graph, vocabulary)
        data.graph_x = torch.tensor(record["autophase"], dtype=torch.float32).view(1, -1)
        data.best = torch.tensor(row <= row.min(), dtype=torch.bool).view(1, -1)
        data.costs = torch.tensor(row, dtype=torch.float64).view(1, -1)
        regret = np.minimum(np.log(np.maximum(row, 1) / max(row.min(), 1)), 3.0)  # inf (a failure) counts as 3
        data.regret = torch.tensor(regret, dtype=torch.float32).view(1, -1)
        data.oz = torch.tensor([base], dtype=torch.float64)
        out.append(data)
    return out


def set_loss(logits, best, regret):
    """``-log`` of the probability put on the best pipelines, plus the expected log-regret of a draw from the
    scores (how much larger than the smallest count the chosen pipeline's count is): a choice that ties costs
    nothing, one that makes the program much larger costs much."""
    import torch

    logp = torch.log_softmax(logits, dim=1)
    best_set = -(torch.logsumexp(logp.masked_fill(~best, -math.inf), dim=1)).mean()
    return best_set + (logp.exp() * regret).sum(dim=1).mean()


def evaluate(model, data_list) -> tuple[float, list[int]]:
    import torch
    from torch_geometric.loader import DataLoader

    model.eval()
    choices, costs, oz = [], [], []
    with torch.no_grad():
        for batch in DataLoader(data_list, batch_size=16):
            choices += model(batch).logits.argmax(dim=1).tolist()
            costs.append(batch.costs.numpy())
            oz.append(batch.oz.numpy())
    costs, oz = np.concatenate(costs), np.concatenate(oz)
    return score(costs, oz, np.array(choices)), choices


def stage_train(args, log: Log, pool: dict, chosen: list[int], train: list[dict], val: list[dict]) -> list[dict]:
    import torch
    from torch_geometric.loader import DataLoader

    from programl.data.vocabulary import build_vocabulary
    from programl.models import GGNNGraphClassifier
    from programl.proto import ProgramGraph

    torch.set_num_threads(args.threads)
    start, cpu = time.perf_counter(), cpu_seconds()
    graphs = (ProgramGraph.FromString((args.work / "graphs" / f"{_key(r['benchmark'])}.pb").read_bytes())
              for r in train)  # fmt: skip
    vocabulary = build_vocabulary(graphs, max_items=args.vocabulary, min_count=2)
    train_data = [d for d in examples(train, chosen, vocabulary, args.work) if not bool(d.best.all())]
    val_data = examples(val, chosen, vocabulary, args.work)
    pipelines = [pool["pipelines"][j] for j in chosen]
    kwargs = {
        "hidden_channels": args.hidden, "layer_timesteps": [2, 2], "use_positions": True, "dropout": 0.1,
        "aux_channels": 56, "aux_hidden": 32, "aux_dropout": 0.1, "log1p_aux": True,
    }  # fmt: skip
    val_costs, val_oz = cost_matrix(val, 10**9)
    val_costs = val_costs[:, chosen]
    references = {
        "oracle": score(val_costs, val_oz, np.argmin(val_costs, axis=1)),
        "always_oz": score(val_costs, val_oz, np.zeros(len(val), dtype=int)),
        "best_fixed": max(score(val_costs, val_oz, np.full(len(val), j)) for j in range(len(chosen))),
    }
    results = []
    for seed in args.seeds:
        torch.manual_seed(seed)
        model = GGNNGraphClassifier(len(vocabulary), len(chosen), **kwargs)
        optimiser = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-5)
        generator = torch.Generator().manual_seed(seed)
        best = (-1.0, -1, None)
        history = []
        for epoch in range(args.epochs):
            model.train()
            total = 0.0
            for batch in DataLoader(train_data, batch_size=16, shuffle=True, generator=generator):
                output = model(batch)
                loss = set_loss(output.logits, batch.best, batch.regret)
                loss = loss + 0.2 * set_loss(output.graph_logits, batch.best, batch.regret)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                total += float(loss.detach()) * batch.num_graphs
            val_score, _ = evaluate(model, val_data)
            history.append({"epoch": epoch, "loss": total / len(train_data), "val": val_score})
            print(f"seed {seed} epoch {epoch}: loss {total / len(train_data):.4f} val {val_score:.4f}",
                  file=sys.stderr, flush=True)  # fmt: skip
            if val_score > best[0]:
                best = (val_score, epoch, {k: v.clone() for k, v in model.state_dict().items()})
        model.load_state_dict(best[2])
        _, choices = evaluate(model, val_data)
        record = {
            "seed": seed, "val_score": best[0], "epoch": best[1], "history": history,
            "val_choices": {pipelines[j]: choices.count(j) for j in sorted(set(choices))},
        }  # fmt: skip
        results.append(record)
        directory = args.work / f"policy-seed{seed}"
        spec = {"class": "GGNNGraphClassifier", "args": [len(vocabulary), len(chosen)], "kwargs": kwargs}
        from programl.gym.policy import save_policy

        validation = {"geomean_oz_over_cost": best[0], "programs": len(val)}
        validation.update({f"{k}_geomean_oz_over_cost": v for k, v in references.items()})
        training = training_record(args, log, seed, best[1], len(train_data), len(train))
        save_policy(directory, name="llvm-ic-policy", model=model, model_spec=spec, vocabulary=vocabulary,
                    pipelines=pipelines, refine_actions=pool["refine_actions"],
                    records={"scores": {"validation": validation}, "training": training})  # fmt: skip
        write_card(directory, log)
    used = cpu_seconds()
    log.stage("train", seconds=time.perf_counter() - start, cpu_self=used["self"] - cpu["self"],
              examples=len(train_data), programs=len(train), val_programs=len(val), vocabulary=len(vocabulary),
              references=references, seeds=results)  # fmt: skip
    return results


def training_record(args, log: Log, seed: int, epoch: int, examples_used: int, programs: int) -> dict:
    stages = log.data["stages"]
    return {
        "study": "studies/gym_policy.py",
        "command": " ".join(["studies/gym_policy.py", *sys.argv[1:]]),
        "seed": seed,
        "epoch": epoch,
        "epochs": args.epochs,
        "training_programs": programs,
        "training_examples": examples_used,
        "validation_programs": stages.get("programs", {}).get("val"),
        "label_cpu_seconds": round(
            stages.get("label", {}).get("cpu_self", 0) + stages.get("label", {}).get("cpu_tools", 0), 1
        ),  # fmt: skip
        "pool_cpu_seconds": round(
            stages.get("pool", {}).get("cpu_self", 0) + stages.get("pool", {}).get("cpu_tools", 0), 1
        ),  # fmt: skip
    }


def _by_dataset(sizes: dict[str, int]) -> str:
    return ", ".join(f"{dataset} {count}" for dataset, count in sizes.items())


def write_card(directory: Path, log: Log, test: dict | None = None) -> None:
    """``MODEL_CARD.md`` of a policy folder from its ``policy.json``, the study's log and, when given, the held-out
    table of ``benchmarks/gym_baselines.py --policy`` (whose scores are also recorded in ``policy.json``)."""
    from programl.gym.policy import load_policy

    metadata = json.loads((directory / "policy.json").read_text())
    if test is not None:
        metadata.setdefault("scores", {})["test"] = {
            "command": test["command"],
            "programs_per_data_set": test["programs"],
            "guided_seconds": test["guided_seconds"],
            "table": [{k: v for k, v in row.items() if k != "per_seed"} for row in test["table"]],
        }
        (directory / "policy.json").write_text(json.dumps(metadata, indent=2) + "\n")
    load_policy(directory)  # the folder as written loads
    stages, training = log.data["stages"], metadata["training"]
    validation = metadata["scores"]["validation"]
    kwargs = metadata["model"]["kwargs"]
    lines = [
        f"# {metadata['name']}: a ProGraML policy that picks an LLVM 22 pass pipeline in one shot",
        "",
        "Reads a program's ProGraML graph and picks the pass pipeline (of the list below) that it expects to leave "
        "the fewest LLVM IR instructions: CompilerGym's `llvm-ic-v0` task, on LLVM 22 (`programl.gym`, "
        "docs/gym.md#the-learned-policy).",
        "",
        "|  |  |",
        "|---|---|",
        "| task | code size: IR instruction count after the pipeline (`IrInstructionCountOz` reward) |",
        f"| network | `GGNNGraphClassifier`, hidden size {kwargs['hidden_channels']}, layer timesteps "
        f"{kwargs['layer_timesteps']}, the 56 Autophase features as its auxiliary input (log1p) |",
        "| inputs | `ProgramlGraph` and `Autophase` of the program as loaded (clang-22 `-O0` without `optnone`) |",
        f"| outputs | a score for each of {len(metadata['pipelines'])} pipelines |",
        f"| vocabulary | {metadata['vocabulary']['entries']} node texts (`vocab.csv`) |",
        f"| weights | `weights.pt`, {metadata['weights']['bytes']:,} bytes, sha256 `{metadata['weights']['sha256']}` "
        "(tensors only) |",
        "",
        "## Pipelines",
        "",
        *[f"{i}. `{p}`" for i, p in enumerate(metadata["pipelines"])],
        "",
        "`guided_search` also tries appending these passes first: "
        + ", ".join(f"`{a}`" for a in metadata.get("refine_actions", []))
        + ".",
        "",
        "## Data",
        "",
        f"Training: {training['training_programs']} programs of the `train` split "
        f"({_by_dataset(stages['programs']['sizes'])}; `sample_uris`), of which {training['training_examples']} "
        "teach something (on the others every pipeline reaches the same count). Validation (choosing the epoch): "
        f"{training['validation_programs']} programs of the `val` split "
        f"({_by_dataset(stages['programs']['val_sizes'])}). The `test` split is never read in training.",
        "",
        "## Protocol",
        "",
        f"Imitation of search results (`{training['study']}`, record `studies/gym_policy.md`): a pool of "
        f"{stages['pool']['candidates']} candidate pipelines (LLVM's levels and pairs of them; greedy searches "
        f"after `default<Oz>` and after `default<Oz>,default<Oz>`, and CompilerGym's random search, each of "
        f"{stages['pool'].get('search_seconds', '?')} s on {stages['pool']['programs']} training programs); every "
        "candidate run on every program; the pipelines kept chosen greedily for the best-of-list geometric mean "
        "on the training programs; the network trained to put its probability on the set of pipelines that reach "
        f"a program's smallest count (loss `-log sum_(j in best) p_j` plus the expected log-regret `sum_j p_j "
        f"min(log(count_j / smallest count), 3)`, Adam, {training['epochs']} epochs, batch 16), "
        f"the epoch kept being the one whose choices score best on validation (seed {training['seed']}, epoch "
        f"{training['epoch']}). Command: `{training['command']}`.",
        "",
        "## Scores",
        "",
        f"Validation ({validation['programs']} programs), geometric mean of -Oz's instruction count over the "
        "count of the pipeline chosen: "
        f"policy {validation['geomean_oz_over_cost']:.4f}; always `default<Oz>` "
        f"{validation['always_oz_geomean_oz_over_cost']:.4f}; the best single pipeline of the list "
        f"{validation['best_fixed_geomean_oz_over_cost']:.4f}; the best pipeline of the list for each program "
        f"(the ceiling) {validation['oracle_geomean_oz_over_cost']:.4f}.",
        "",
    ]
    if test is not None:
        lines += [
            f"Held out (the `test` split, {test['programs']} programs per data set, `{test['command']}`): geometric "
            "mean of the `IrInstructionCountOz` episode reward (CompilerGym's leaderboard statistic, -Oz = 1.000), "
            "its range over the seeds' policies, the geometric mean of -Oz's count over the count reached, and the "
            "seconds per program.",
            "",
            f"`policy` is the one-shot choice of the policies of --policy ({', '.join(test['policies'])}: "
            "the training seeds, this one first), `guided` the search it guides (the first "
            f"{test.get('guided_policies') or len(test['policies'])} of them, up to {test['guided_seconds']:g} s per "
            "program). The reward's mean leaves out the programs that -Oz makes no smaller (where CompilerGym's "
            "normalisation divides by 1), counted in the table of docs/gym.md.",
            "",
            "| data set | agent | seeds | reward geomean | range | Oz / count | s / program |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in test["table"]:
            lines.append(
                f"| {row['dataset']} | {row['agent']} | {row['seeds']} | {row['geomean_reward']:.3f} | "
                f"{row['geomean_reward_min']:.3f}..{row['geomean_reward_max']:.3f} | "
                f"{row['geomean_oz_over_cost']:.3f} | {row['seconds_mean']:.2f} |"
            )
        lines.append("")
    cpu = {name: stages[name] for name in ("pool", "label", "train", "train_stopped") if name in stages}
    total = sum(c.get("cpu_self", 0) + c.get("cpu_tools", 0) for c in cpu.values())
    lines += [
        "## Compute",
        "",
        "CPU seconds (this process and the LLVM tools it ran): "
        + ", ".join(f"{name} {c.get('cpu_self', 0) + c.get('cpu_tools', 0):,.0f}" for name, c in cpu.items())
        + f"; {total / 60:.1f} CPU-minutes in all, on a shared 2-core machine, `nice -n 15`, one torch thread"
        + (f" ({stages['train_stopped']['note']})" if "train_stopped" in stages else "")
        + ".",
        "",
        "## Limitations",
        "",
        "* It chooses among a few pipelines; it never does better than the best of them (the search it guides "
        "can). Where they all tie (most llvm-stress programs, which every pipeline shrinks to a few instructions), "
        "its choice does not matter.",
        "* Trained on a few hundred programs of four data sets (small C++ solutions, OpenCL kernels, generated "
        "IR, Csmith programs); large real-world modules are unlike them.",
        *[
            f"* Held out, its one shot is below -Oz on {row['dataset']} ({row['geomean_reward']:.3f}): on some "
            "programs it picks a pipeline that leaves more instructions than -Oz (the guided search, which also runs "
            "-Oz, never does)."
            for row in (test or {}).get("table", [])
            if row["agent"] == "policy" and row["geomean_reward"] < 1.0
        ],
        "* It minimises the IR instruction count only: not the object size (which can grow), not the run time.",
        "* Its pipelines are LLVM 22's; another LLVM may name or order passes differently.",
        "",
        "## Use",
        "",
        "```python",
        "from programl.gym.policy import load_policy, guided_search",
        "policy = load_policy()          # this folder",
        "result = policy.optimize(env)   # env: a programl.gym LlvmEnv with a benchmark",
        "```",
        "",
        "or `programl optimize prog.c`.",
        "",
    ]
    (directory / "MODEL_CARD.md").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="folder of the stages' files")
    parser.add_argument("--train", type=int, nargs=4, default=[240, 120, 40, 60],
                        help="training programs of POJ-104, DevMap, llvm-stress, Csmith")  # fmt: skip
    parser.add_argument("--val", type=int, nargs=4, default=[40, 30, 10, 15], help="validation programs, likewise")
    parser.add_argument("--search-programs", type=int, default=3, help="programs per data set searched for the pool")
    parser.add_argument("--search-seconds", type=float, default=8.0, help="budget of each of those searches")
    parser.add_argument("--refine-actions", type=int, default=24, help="actions kept for the guided search")
    parser.add_argument("--pipelines", type=int, default=8, help="pipelines the policy chooses among")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--vocabulary", type=int, default=512, help="most node texts embedded")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ship", type=Path, default=None, help="copy the best seed's policy here")
    parser.add_argument("--stop-after", choices=["programs", "pool", "label", "select", "train"], default="train")
    parser.add_argument("--card", type=Path, nargs="+", metavar="FOLDER",
                        help="only (re)write the model card of these policy folders")  # fmt: skip
    parser.add_argument("--test", type=Path, default=None, help="with --card: gym_baselines.py's JSON of the policy")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    log = Log(args.work)
    if args.card:
        test = json.loads(args.test.read_text()) if args.test else None
        for folder in args.card:
            write_card(folder, log, test)
        return
    log.stage("command", argv=sys.argv[1:])
    env = LlvmEnv(observation_space=None, reward_space="IrInstructionCountOz")
    programs = stage_programs(args, log)
    if args.stop_after == "programs":
        return
    pool = stage_pool(args, log, env, programs)
    if args.stop_after == "pool":
        return
    labels = stage_label(args, log, env, programs, pool)
    if args.stop_after == "label":
        return
    train = [labels[u] for u in programs["train"] if "error" not in labels[u]]
    val = [labels[u] for u in programs["val"] if "error" not in labels[u]]
    chosen = stage_select(args, log, pool, train)
    print("pipelines:", *[pool["pipelines"][j] for j in chosen], sep="\n  ", file=sys.stderr)
    if args.stop_after == "select":
        return
    results = stage_train(args, log, pool, chosen, train, val)
    best = max(results, key=lambda r: r["val_score"])
    print(json.dumps({k: v for k, v in best.items() if k != "history"}, indent=1))
    if args.ship:
        if args.ship.exists():
            shutil.rmtree(args.ship)
        shutil.copytree(args.work / f"policy-seed{best['seed']}", args.ship)


if __name__ == "__main__":
    main()
