"""Episodes in parallel: one agent over many benchmarks through the project's executors (docs/gym.md#in-parallel).

:func:`run_agent` runs an agent on each benchmark in an environment of its own, through any executor
:func:`programl.util.executor.execute_outcomes` takes: ``None`` (this process, one after another), a
:class:`~programl.util.executor.TimeoutProcessPool` (worker processes, each task under ``timeout``), a
``concurrent.futures`` pool, or dask's ``client.get_executor()`` (a cluster's workers: the same call, more
throughput). Results come back in the benchmarks' order, one :class:`~programl.util.executor.Outcome` each: its
``value`` the agent's :class:`~programl.gym.agents.SearchResult`, or its ``error`` (a benchmark that does not load,
a timeout) while the others go on::

    from programl.gym.parallel import run_agent
    from programl.util.executor import TimeoutProcessPool

    with TimeoutProcessPool(max_workers=8) as pool:
        for outcome in run_agent("random", uris, executor=pool, agent_kwargs={"max_seconds": 10}, timeout=120):
            print(outcome.input, outcome.value.reward if outcome.ok else outcome.error)

An agent is one of :data:`AGENTS` by name (its keyword arguments in ``agent_kwargs``), or any picklable callable
``agent(env) -> SearchResult`` (a function of a module, a ``functools.partial`` of one).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from programl.gym.agents import SearchResult, baseline, greedy_search, random_search
from programl.gym.env import LlvmEnv
from programl.util.executor import Outcome, execute_outcomes

__all__ = ["AGENTS", "AgentTask", "run_agent"]

#: The agents :func:`run_agent` knows by name: LLVM's levels, the searches of :mod:`programl.gym.agents`, and the
#: learned policy (``agent_kwargs``: ``policy``, a policy folder, default the shipped one) and the search it guides
#: (also ``top_k``, ``max_seconds``).
AGENTS = ("Oz", "O3", "random", "greedy", "policy", "guided")

# the policies loaded in this process (a worker loads each once, however many benchmarks it runs)
_POLICIES: dict[str | None, Any] = {}


def _policy(directory: str | os.PathLike | None):
    from programl.gym.policy import load_policy

    key = None if directory is None else os.fspath(directory)
    if key not in _POLICIES:
        _POLICIES[key] = load_policy(key)
    return _POLICIES[key]


def _run_named(agent: str, env: LlvmEnv, kwargs: Mapping[str, Any]) -> SearchResult:
    if agent in ("Oz", "O3"):
        return baseline(env, agent)
    if agent == "random":
        return random_search(env, **kwargs)
    if agent == "greedy":
        return greedy_search(env, **kwargs)
    options = dict(kwargs)
    policy = _policy(options.pop("policy", None))
    if agent == "policy":
        return policy.optimize(env)
    from programl.gym.policy import guided_search

    return guided_search(env, policy, **options)


@dataclass(frozen=True)
class AgentTask:
    """One benchmark's episode as a picklable callable: ``AgentTask(...)(uri)`` makes an environment, runs the agent
    on it, and returns its :class:`~programl.gym.agents.SearchResult`.

    Attributes:
        agent: A name of :data:`AGENTS`, or a callable ``agent(env) -> SearchResult``.
        agent_kwargs: Keyword arguments of a named agent.
        reward_space: The environment's reward (the agents maximise it).
        env_kwargs: Further arguments of :class:`~programl.gym.env.LlvmEnv` (``data_dir``, ``timeout`` ...).
    """

    agent: str | Callable[[LlvmEnv], SearchResult]
    agent_kwargs: Mapping[str, Any] = field(default_factory=dict)
    reward_space: str = "IrInstructionCountOz"
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, benchmark: str) -> SearchResult:
        env = LlvmEnv(benchmark, observation_space=None, reward_space=self.reward_space, **self.env_kwargs)
        try:
            env.reset()
            if callable(self.agent):
                return self.agent(env)
            return _run_named(self.agent, env, self.agent_kwargs)
        finally:
            env.close()


def run_agent(
    agent: str | Callable[[LlvmEnv], SearchResult],
    benchmarks: Iterable[str],
    *,
    executor: Any = None,
    agent_kwargs: Mapping[str, Any] | None = None,
    reward_space: str = "IrInstructionCountOz",
    timeout: float | None = None,
    chunksize: int | None = None,
    **env_kwargs: Any,
) -> Iterator[Outcome]:
    """Run an agent on each benchmark, through ``executor`` (module docstring).

    Args:
        agent: A name of :data:`AGENTS`, or a picklable callable ``agent(env) -> SearchResult``.
        benchmarks: Benchmark URIs (or paths); consumed lazily.
        executor: ``None`` (this process), a :class:`~programl.util.executor.TimeoutProcessPool`, a
            ``concurrent.futures`` pool or dask's ``client.get_executor()``.
        agent_kwargs: Keyword arguments of a named agent (``{"max_seconds": 10, "seed": 1}`` for ``random``).
        reward_space: The reward the agents maximise.
        timeout: Seconds each benchmark may take (a :class:`~programl.util.executor.TimeoutProcessPool` kills its
            worker; other executors stop waiting).
        chunksize: The most benchmarks submitted ahead of the one being yielded.
        **env_kwargs: Arguments of each :class:`~programl.gym.env.LlvmEnv` (``data_dir``, ``max_memory`` ...); its
            ``timeout`` of one tool run is ``tool_timeout`` here (``timeout`` is the whole benchmark's).

    Yields:
        One :class:`~programl.util.executor.Outcome` per benchmark, in order: ``input`` the benchmark, ``value`` the
        result, or ``error``.

    Raises:
        ValueError: An unknown agent name, or an invalid ``timeout``.
        PoolError: The pool's workers cannot be started.
    """
    if not callable(agent) and agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r} (known: {', '.join(AGENTS)}, or a callable)")
    if "tool_timeout" in env_kwargs:
        env_kwargs["timeout"] = env_kwargs.pop("tool_timeout")
    task = AgentTask(agent, dict(agent_kwargs or {}), reward_space, dict(env_kwargs))
    return execute_outcomes(task, benchmarks, executor=executor, chunksize=chunksize, timeout=timeout)
