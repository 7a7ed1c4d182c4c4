"""The reference agents: -Oz and -O3 as CompilerGym normalises them, seeded random search, greedy search."""

from __future__ import annotations

import pytest

from programl.gym.agents import baseline, geometric_mean, greedy_search, random_search, replay
from programl.gym.env import LlvmEnv
from programl.gym.errors import GymError

PASSES = ["mem2reg", "instcombine", "simplifycfg", "gvn", "sroa", "licm", "inline", "dse", "adce", "early-cse"]


@pytest.fixture
def env(loops_c):
    return LlvmEnv(str(loops_c), observation_space=None, reward_space="IrInstructionCountOz")


def test_oz_scores_one_against_itself(env) -> None:
    oz = baseline(env, "Oz")
    assert oz.reward == pytest.approx(1.0) and oz.pipeline == "default<Oz>" and oz.actions == []
    assert oz.cost == env.observation["IrInstructionCountOz"]
    o3 = baseline(env, "O3")
    o0 = env.observation["IrInstructionCountO0"]
    assert o3.reward == pytest.approx((o0 - o3.cost) / max(o0 - oz.cost, 1))
    with pytest.raises(ValueError):
        baseline(env, "O2")


def test_random_search_is_seeded(env) -> None:
    first = random_search(env, episodes=3, episode_length=12, patience=6, seed=3)
    second = random_search(env, episodes=3, episode_length=12, patience=6, seed=3)
    assert (first.actions, first.reward, first.cost) == (second.actions, second.reward, second.cost)
    assert first.reward > 0 and first.steps >= len(first.actions)
    assert replay(env, first.actions) == (pytest.approx(first.reward), first.cost)


def test_greedy_search_climbs(env) -> None:
    candidates = [env.action_space.names.index(name) for name in PASSES]
    result = greedy_search(env, max_steps=4, actions=candidates)
    assert 0 < len(result.actions) <= 4 and result.reward > 0
    env.reset()
    first_rewards = [env.fork().step(action)[1] for action in candidates]
    assert result.actions[0] == candidates[first_rewards.index(max(first_rewards))]
    assert result.pipeline == env.action_space.to_string(result.actions)
    assert result.steps >= len(candidates)


def test_agents_need_a_reward(loops_c) -> None:
    with pytest.raises(GymError, match="reward space"):
        random_search(LlvmEnv(str(loops_c), reward_space=None), episodes=1)


def test_greedy_search_stops_at_its_budget(env) -> None:
    result = greedy_search(env, max_steps=4, max_seconds=0.0)  # out of time before the first pass
    assert result.actions == [] and result.steps == 0 and result.reward == 0.0
    assert result.cost == env.observation["IrInstructionCountO0"]


def test_geometric_mean_is_compiler_gyms() -> None:
    assert geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert geometric_mean([1.07, 1.07, 1.07]) == pytest.approx(1.07)
    assert geometric_mean([2.0, 0.0]) == 0.0  # any program not improved sinks it, as in CompilerGym
    assert geometric_mean([2.0, -0.5]) == 0.0
    assert geometric_mean([]) == 0.0
