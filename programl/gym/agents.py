"""Reference agents: LLVM's own ``-Oz`` and ``-O3``, random search and greedy search (docs/gym.md#reference-agents).

Each takes an environment that has been made with the reward to maximise (``IrInstructionCountOz`` is
CompilerGym's leaderboard reward) and returns a :class:`SearchResult`: the best pass list found, the episode reward it
earns, the cost it reaches, and what the search spent. The searches are seeded: the same seed on the same benchmark
gives the same result.

* :func:`baseline`: ``opt-22 -passes='default<Oz>'`` (or ``O3``) as a whole; no actions.
* :func:`random_search`: CompilerGym's random search: episodes of uniformly random actions, each cut after
  ``patience`` steps without a new best; the best episode prefix wins.
* :func:`greedy_search`: at each step, every action is tried on a fork of the environment and the best one is kept;
  stops when no action earns a positive reward.

:func:`geometric_mean` is CompilerGym's leaderboard statistic over benchmarks (its ``compiler_gym.util.statistics``):
the geometric mean of the episode rewards, 0 when any of them is not positive.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from programl.gym.env import LlvmEnv
from programl.gym.errors import GymError
from programl.gym.rewards import REWARD_SPACES, Reward
from programl.gym.state import State, apply_pipeline

__all__ = [
    "SearchResult",
    "baseline",
    "geometric_mean",
    "greedy_search",
    "random_search",
    "replay",
    "run_pipeline",
    "score_state",
]


@dataclass
class SearchResult:
    """What an agent found on one benchmark.

    Attributes:
        benchmark: The benchmark's URI.
        agent: Which agent (``Oz``, ``O3``, ``random``, ``greedy``).
        actions: The action indices of the best pass list (empty for the baselines).
        pipeline: Its ``opt-22 -passes=`` pipeline (``default<Oz>`` for that baseline).
        reward: The episode reward it earns in the environment's reward space.
        cost: The cost it reaches (the reward's cost observation, e.g. ``IrInstructionCount``).
        steps: How many passes (or pipelines) the search ran with ``opt-22``.
        seconds: Wall-clock time of the search.
        bitcode: The module it reaches, where the agent keeps it (the learned policy and the search it guides).
    """

    benchmark: str
    agent: str
    actions: list[int] = field(default_factory=list)
    pipeline: str = ""
    reward: float = 0.0
    cost: float = 0.0
    steps: int = 0
    seconds: float = 0.0
    bitcode: bytes | None = field(default=None, repr=False)


def geometric_mean(values: Sequence[float]) -> float:
    """CompilerGym's geometric mean of per-benchmark rewards: 0 for no values or when any value is 0 or less (a
    benchmark made worse than its unoptimised program, or not improved at all, sinks the statistic to 0)."""
    array = np.asarray(list(values), dtype=np.float64)
    if not array.size or not np.all(array > 0):
        return 0.0
    return float(np.exp(np.log(array).mean()))


def _reward_name(env: LlvmEnv) -> str:
    name = env.reward_space
    if name is None:
        raise GymError("an agent needs an environment with a reward space (e.g. reward_space='IrInstructionCountOz')")
    return name


def baseline(env: LlvmEnv, level: str = "Oz") -> SearchResult:
    """LLVM's own pipeline ``default<Oz>`` or ``default<O3>`` on the environment's benchmark (reset first).

    Raises:
        ValueError: ``level`` is not ``Oz`` or ``O3``.
        ObservationError: The cost cannot be computed.
    """
    if level not in ("Oz", "O3"):
        raise ValueError(f"level must be 'Oz' or 'O3', not {level!r}")
    start = time.perf_counter()
    env.reset()
    spec = REWARD_SPACES[_reward_name(env)]
    observer, benchmark = env._observer, env.benchmark
    state = observer.baseline_state(benchmark, level)
    reward = Reward(spec, observer).update(state, benchmark)
    cost = observer.observe(spec.cost, state, benchmark)
    return SearchResult(benchmark.uri, level, [], f"default<{level}>", reward, cost, 1, time.perf_counter() - start)


def score_state(env: LlvmEnv, state: State) -> tuple[float, float]:
    """The episode reward (in the environment's reward space) of a state of its benchmark, and its cost: what an
    episode that ends in ``state`` earns, however the state was reached.

    Raises:
        ObservationError: The cost cannot be computed.
    """
    spec = REWARD_SPACES[_reward_name(env)]
    observer, benchmark = env._observer, env.benchmark
    return Reward(spec, observer).update(state, benchmark), observer.observe(spec.cost, state, benchmark)


def run_pipeline(env: LlvmEnv, pipeline: str, bitcode: bytes | None = None) -> tuple[State, float, float]:
    """Run one ``opt-22 -passes=<pipeline>`` on the environment's benchmark (or on ``bitcode``, a module reached
    from it) and score the result (:func:`score_state`): ``(state, episode reward, cost)``.

    Raises:
        PassError: ``opt-22`` failed, crashed or ran past its limits.
        ObservationError: The cost cannot be computed.
    """
    _reward_name(env)
    benchmark = env.benchmark
    if benchmark is None:
        raise GymError("call reset() before running a pipeline")
    start = benchmark.bitcode if bitcode is None else bitcode
    state = State(apply_pipeline(start, pipeline, env.toolchain, benchmark.uri))
    return (state, *score_state(env, state))


def replay(env: LlvmEnv, actions: Sequence[int]) -> tuple[float, float]:
    """Reset the environment, apply ``actions``, and return ``(episode reward, cost)``."""
    env.reset()
    for action in actions:
        if env.step(int(action))[2]:
            break
    spec = REWARD_SPACES[_reward_name(env)]
    return env.episode_reward, env.observation[spec.cost]


def random_search(
    env: LlvmEnv,
    episodes: int = 20,
    episode_length: int = 40,
    patience: int = 10,
    seed: int = 0,
    max_seconds: float | None = None,
) -> SearchResult:
    """Random search (module docstring).

    Args:
        env: The environment, with its benchmark and reward space.
        episodes: How many random episodes.
        episode_length: Most actions per episode.
        patience: An episode stops after this many actions without a new best return.
        seed: Seeds the action choice.
        max_seconds: Stop starting episodes after this many seconds.

    Returns:
        The best episode prefix found (an empty one, reward 0, when nothing helped).
    """
    _reward_name(env)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    best_reward, best_actions, steps = 0.0, [], 0
    for _ in range(episodes):
        if max_seconds is not None and time.perf_counter() - start > max_seconds:
            break
        env.reset()
        since_best = 0
        for _ in range(episode_length):
            _, _, terminated, _, _ = env.step(int(rng.integers(env.action_space.n)))
            steps += 1
            if terminated:
                break
            if env.episode_reward > best_reward + 1e-12:
                best_reward, best_actions, since_best = env.episode_reward, env.actions, 0
            else:
                since_best += 1
                if since_best >= patience:
                    break
    return _result(env, "random", best_actions, steps, start)


def greedy_search(
    env: LlvmEnv, max_steps: int = 30, actions: Sequence[int] | None = None, max_seconds: float | None = None
) -> SearchResult:
    """Greedy search (module docstring).

    Args:
        env: The environment, with its benchmark and reward space.
        max_steps: Most actions kept.
        actions: The actions tried at each step (default: all).
        max_seconds: Stop after this many seconds: a step whose sweep over ``actions`` is cut short keeps the best
            action found so far in it.

    Returns:
        The greedy pass list.
    """
    _reward_name(env)
    start = time.perf_counter()
    candidates = list(range(env.action_space.n)) if actions is None else [int(a) for a in actions]
    env.reset()
    steps = 0
    out_of_time = False
    for _ in range(max_steps):
        best_action, best_reward = None, 0.0
        for action in candidates:
            if max_seconds is not None and time.perf_counter() - start > max_seconds:
                out_of_time = True
                break
            fork = env.fork()
            _, reward, terminated, _, _ = fork.step(action)
            steps += 1
            if not terminated and reward > best_reward + 1e-12:
                best_action, best_reward = action, reward
        if best_action is None:
            break
        env.step(best_action)
        steps += 1
        if out_of_time:
            break
    return _result(env, "greedy", env.actions, steps, start)


def _result(env: LlvmEnv, agent: str, actions: list[int], steps: int, start: float) -> SearchResult:
    reward, cost = replay(env, actions)
    pipeline = env.action_space.to_string(actions)
    return SearchResult(env.benchmark.uri, agent, list(actions), pipeline, reward, cost, steps,
                        time.perf_counter() - start)  # fmt: skip
