"""The environment through gymnasium's API: registration, spaces, a reproducible golden episode, the command line
that reproduces a state, forks, lazy cached observations, CompilerGym's rewards."""

from __future__ import annotations

import shlex
import subprocess

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import programl.gym  # noqa: F401  (registers programl/llvm-v0)
from programl.gym.env import ActionError, LlvmEnv
from programl.gym.errors import EpisodeError
from programl.gym.features import AUTOPHASE_FEATURE_NAMES, INST_COUNT_FEATURE_NAMES
from programl.gym.observations import OBSERVATION_SPACES, Observer
from programl.gym.rewards import REWARD_SPACES
from programl.gym.state import State


@pytest.fixture
def env(loops_c):
    env = gymnasium.make("programl/llvm-v0", benchmark=str(loops_c), reward_space="IrInstructionCount")
    yield env
    env.close()


def test_registered_and_shaped_like_llvm_v0(env) -> None:
    inner = env.unwrapped
    assert isinstance(inner, LlvmEnv)
    assert env.action_space.n == len(programl.gym.ACTIONS) == 116
    assert env.action_space.names[env.action_space.names.index("mem2reg")] == "mem2reg"
    assert env.observation_space.shape == (56,) and env.observation_space.dtype == np.int64
    observation, info = env.reset(seed=0)
    assert observation.shape == (56,) and observation in env.observation_space
    assert info == {"benchmark": inner.benchmark.uri} and inner.benchmark.uri.startswith("file://")
    assert OBSERVATION_SPACES["InstCount"].space.shape == (70,)
    assert OBSERVATION_SPACES["InstCountNorm"].space.shape == (69,)
    assert list(inner.observation["AutophaseDict"]) == list(AUTOPHASE_FEATURE_NAMES)
    assert list(inner.observation["InstCountDict"]) == [f"{n}Count" for n in INST_COUNT_FEATURE_NAMES]
    for name, spec in OBSERVATION_SPACES.items():
        if name == "ProgramlPyG":
            continue  # needs the ml extra; tests/gym/test_observations.py
        assert inner.observation[name] in spec.space, name


def test_gymnasium_env_checker_passes(loops_c) -> None:
    env = LlvmEnv(str(loops_c))
    check_env(env, skip_render_check=True)


def _episode(loops_c, seed: int, steps: int = 8) -> tuple[list[str], list[float], list[int], bytes]:
    env = gymnasium.make("programl/llvm-v0", benchmark=str(loops_c), observation_space="IrSha1",
                         reward_space="IrInstructionCountOz")  # fmt: skip
    hash0, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    hashes, rewards = [hash0], []
    for _ in range(steps):
        observation, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert not terminated and not truncated
        hashes.append(observation)
        rewards.append(reward)
    actions, bitcode = env.unwrapped.actions, env.unwrapped.observation["Bitcode"]
    env.close()
    return hashes, rewards, actions, bitcode


def test_golden_episode_is_reproducible(loops_c) -> None:
    first = _episode(loops_c, seed=7)
    second = _episode(loops_c, seed=7)
    assert first == second  # same seed, same actions: the same IR hash after every step, rewards, final bitcode
    assert len(set(first[0])) > 1  # the passes changed the module
    assert _episode(loops_c, seed=8)[2] != first[2]


def test_commandline_reproduces_the_state(env, opt22, tmp_path) -> None:
    env.reset()
    inner = env.unwrapped
    for name in ("mem2reg", "simplifycfg", "licm", "inline", "instcombine", "early-cse<memssa>", "loop-rotate"):
        env.step(env.action_space.names.index(name))
    command = inner.commandline()
    assert command.startswith("opt-22 ") and "function(loop-mssa(licm))" in command
    inner.write_bitcode(tmp_path / "input.bc", initial=True)
    subprocess.run([opt22, *shlex.split(command)[1:]], cwd=tmp_path, check=True, timeout=300)
    replayed = State((tmp_path / "output.bc").read_bytes())
    observer = Observer(inner.toolchain)
    assert observer.observe("IrSha1", replayed, inner.benchmark) == inner.observation["IrSha1"]
    assert observer.observe("InstCount", replayed, inner.benchmark).tolist() == inner.observation["InstCount"].tolist()


def test_fork_is_independent(env) -> None:
    env.reset()
    inner = env.unwrapped
    env.step(env.action_space.names.index("mem2reg"))
    fork = inner.fork()
    assert fork.actions == inner.actions and fork.episode_reward == inner.episode_reward
    fork.step(fork.action_space.names.index("instcombine"))
    assert len(fork.actions) == 2 and len(inner.actions) == 1
    assert fork.observation["IrSha1"] != inner.observation["IrSha1"]
    _, reward, *_ = inner.step(inner.action_space.names.index("instcombine"))
    assert inner.observation["IrSha1"] == fork.observation["IrSha1"]  # the same pass list gives the same module
    assert inner.episode_reward == pytest.approx(fork.episode_reward)


def test_observations_are_lazy_and_cached_per_state(env) -> None:
    env.reset()
    inner = env.unwrapped
    assert "Ir" not in inner.state.cache and "ProgramlGraph" not in inner.state.cache
    text = inner.observation["Ir"]
    assert inner.observation["Ir"] is text and "Ir" in inner.state.cache
    graph = inner.observation["Programl"]
    assert graph.number_of_nodes() > 0 and "ProgramlGraph" in inner.state.cache
    graph.remove_node(0)  # a copy: the cached graph is not changed through it
    assert inner.observation["Programl"].number_of_nodes() == graph.number_of_nodes() + 1
    env.step(env.action_space.names.index("mem2reg"))
    assert "Ir" not in inner.state.cache  # a new state: computed again when asked
    assert inner.observation["Ir"] != text


def test_instruction_count_rewards_sum_to_the_fall_of_the_count(loops_c) -> None:
    env = LlvmEnv(str(loops_c), observation_space=None, reward_space="IrInstructionCount")
    observation, _ = env.reset()
    assert observation is None
    for name in ("mem2reg", "instcombine", "simplifycfg", "gvn"):
        env.step(env.action_space.names.index(name))
    fall = env.observation["IrInstructionCountO0"] - env.observation["IrInstructionCount"]
    assert env.episode_reward == pytest.approx(fall) and fall > 0


@pytest.mark.parametrize("name", ["IrInstructionCountOz", "IrInstructionCountO3", "IrInstructionCountNorm"])
def test_normalised_rewards(loops_c, name) -> None:
    env = LlvmEnv(str(loops_c), observation_space=None, reward_space=name)
    env.reset()
    for action in ("mem2reg", "instcombine", "simplifycfg"):
        env.step(env.action_space.names.index(action))
    o0, now = env.observation["IrInstructionCountO0"], env.observation["IrInstructionCount"]
    if REWARD_SPACES[name].baseline == "O0":
        norm = o0
    else:
        norm = max(o0 - env.observation[f"IrInstructionCount{REWARD_SPACES[name].baseline}"], 1)
    assert env.episode_reward == pytest.approx((o0 - now) / norm)


def test_object_size_reward(loops_c, llc22) -> None:
    env = LlvmEnv(str(loops_c), observation_space="ObjectTextSizeBytes", reward_space="ObjectTextSizeBytes")
    size0, _ = env.reset()
    assert size0 == env.observation["ObjectTextSizeO0"] > 0
    rewards = []
    for name in ("mem2reg", "instcombine", "simplifycfg"):
        size, reward, *_ = env.step(env.action_space.names.index(name))
        rewards.append(reward)
    assert sum(rewards) == size0 - size and size < size0
    assert env.observation["ObjectTextSizeOz"] > 0 and env.observation["ObjectTextSizeO3"] > 0


def test_misuse_is_one_line(loops_c) -> None:
    env = LlvmEnv(str(loops_c))
    with pytest.raises(EpisodeError, match="reset"):
        env.step(0)
    env.reset()
    for action in (-1, 116, 1.5, "mem2reg", True):
        with pytest.raises(ActionError):
            env.step(action)
    with pytest.raises(KeyError, match="unknown observation space 'Nope'"):
        env.reset(observation_space="Nope")
    with pytest.raises(KeyError, match="unknown reward space"):
        LlvmEnv(str(loops_c), reward_space="Speed")


def test_reset_options_switch_spaces_and_benchmark(loops_c) -> None:
    env = gymnasium.make("programl/llvm-v0", benchmark=str(loops_c))
    observation, _ = env.reset(options={"observation_space": "IrInstructionCount", "reward_space": None})
    assert isinstance(observation, int)
    _, reward, *_ = env.step(0)
    assert reward == 0.0
    observation, info = env.reset(options={"benchmark": "generator://llvm-stress-v0/5", "observation_space": "Ir"})
    assert info["benchmark"] == "generator://llvm-stress-v0/5" and "define" in observation
