"""Episodes in parallel through the project's executors: the same results as one after another, in order, and a
benchmark that fails is an outcome of its own."""

from __future__ import annotations

import functools

import pytest

from programl.gym.agents import random_search
from programl.gym.errors import BenchmarkError
from programl.gym.parallel import run_agent
from programl.util.executor import TimeoutProcessPool


def test_a_process_pool_of_two_gives_the_serial_results(loops_c, tmp_path) -> None:
    bad = tmp_path / "bad.ll"
    bad.write_text("this is not IR\n")
    uris = [str(loops_c), "generator://llvm-stress-v0/3", str(bad), "generator://llvm-stress-v0/5"]
    agent = functools.partial(random_search, episodes=2, episode_length=8, patience=4, seed=7)
    serial = list(run_agent(agent, uris))
    with TimeoutProcessPool(max_workers=2) as pool:
        parallel = list(run_agent(agent, uris, executor=pool, timeout=300))
        oz = list(run_agent("Oz", uris, executor=pool, timeout=300))
    assert [o.input for o in parallel] == uris and [o.index for o in parallel] == [0, 1, 2, 3]
    assert [o.ok for o in parallel] == [True, True, False, True] == [o.ok for o in serial]
    assert isinstance(parallel[2].error, BenchmarkError) and "bad.ll" in str(parallel[2].error)
    for mine, theirs in zip(serial, parallel, strict=True):
        if mine.ok:
            assert (theirs.value.actions, theirs.value.cost) == (mine.value.actions, mine.value.cost)
            assert theirs.value.benchmark.endswith(mine.input.split("/")[-1])
    assert [o.value.reward for o in oz if o.ok] == [pytest.approx(1.0)] * 3


def test_unknown_agents_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown agent"):
        run_agent("ppo", ["generator://llvm-stress-v0/1"])
