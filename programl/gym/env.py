"""The LLVM optimisation environment: a gymnasium ``Env`` shaped like CompilerGym's ``llvm-v0``
(docs/gym.md).

An episode starts from a benchmark (:mod:`programl.gym.benchmarks`); each action runs one LLVM 22 pass
(:mod:`programl.gym.actions`) with ``opt-22`` in its own process, under a timeout and a memory limit; observations
(:mod:`programl.gym.observations`) and rewards (:mod:`programl.gym.rewards`) are computed when asked for and cached
per state. A pass that crashes, hangs or fails ends the episode (``terminated``) with the reason in
``info["error_details"]``; the Python process goes on.

::

    import gymnasium, programl.gym
    env = gymnasium.make("programl/llvm-v0", benchmark="file:///path/to/prog.c",
                         observation_space="Autophase", reward_space="IrInstructionCountOz")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(env.action_space.names.index("mem2reg"))
    env.unwrapped.observation["Programl"]   # any other observation, computed now, cached for this state
    env.unwrapped.commandline()             # "opt-22 '-passes=function(mem2reg)' input.bc -o output.bc"
"""

from __future__ import annotations

import copy
import os
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from programl.gym.actions import ACTIONS
from programl.gym.benchmarks import DEFAULT_BENCHMARK, DEFAULT_MAX_INPUT_BYTES, Benchmark, load_benchmark
from programl.gym.errors import EpisodeError, GymError, ObservationError, PassError
from programl.gym.observations import OBSERVATION_SPACES, Observer
from programl.gym.rewards import REWARD_SPACES, Reward
from programl.gym.spaces import Commandline, NoneSpace
from programl.gym.state import State, Toolchain, apply_pipeline
from programl.gym.tools import DEFAULT_MAX_MEMORY, DEFAULT_TIMEOUT
from programl.util.fs import atomic_write_bytes, atomic_write_text

__all__ = ["ActionError", "LlvmEnv", "ObservationView", "fresh"]

_KEEP = object()


class ActionError(GymError, ValueError):
    """An action is not an integer in ``[0, action_space.n)``."""


def fresh(value: Any) -> Any:
    """A copy of a cached observation that its receiver may change (arrays, dicts, graphs); immutable values as
    they are."""
    if value is None or isinstance(value, (str, bytes, int, float, np.generic)):
        return value
    if isinstance(value, np.ndarray):
        return value.copy()
    if hasattr(value, "CopyFrom"):  # a protobuf message
        copied = type(value)()
        copied.CopyFrom(value)
        return copied
    if hasattr(value, "clone"):  # a torch-geometric Data
        return value.clone()
    return copy.deepcopy(value)


class ObservationView:
    """``env.observation[name]``: any observation of the current state, computed on first request and cached
    (CompilerGym's ``ObservationView``). Each call returns a new copy of a mutable value (:func:`fresh`), so the
    cache, which forks share, cannot be changed through it."""

    def __init__(self, env: LlvmEnv) -> None:
        self._env = env

    @property
    def spaces(self) -> dict[str, gymnasium.spaces.Space]:
        """Every observation space by name."""
        return {name: spec.space for name, spec in OBSERVATION_SPACES.items()}

    def __getitem__(self, name: str) -> Any:
        env = self._env
        return fresh(env._observer.observe(name, env._current_state(), env.benchmark))

    def __contains__(self, name: object) -> bool:
        return name in OBSERVATION_SPACES

    def __iter__(self):
        return iter(OBSERVATION_SPACES)

    def keys(self) -> list[str]:
        """The names of the observation spaces."""
        return list(OBSERVATION_SPACES)


class LlvmEnv(gymnasium.Env):
    """A compiler optimisation environment on LLVM 22 (module docstring; docs/gym.md).

    Args:
        benchmark: The program to optimise: a URI (``file:///path/prog.c``, ``generator://llvm-stress-v0/7``,
            ``benchmark://poj104-v1/1/1000`` ...), a path, or a :class:`~programl.gym.benchmarks.Benchmark`.
            Default: ``generator://llvm-stress-v0/0``.
        observation_space: The observation ``reset`` and ``step`` return, by name (``Autophase``, ``Programl``,
            ``Ir`` ...), or None for none.
        reward_space: The reward ``step`` returns, by name (``IrInstructionCountOz`` ...), or None (reward 0.0).
        data_dir: Where the project's data sets are (``poj104/``, ``devmap/``).
        cache_dir: Where DevMap's sources are extracted.
        timeout: Seconds one ``opt-22`` / ``llc-22`` run may take.
        max_memory: Address-space limit of one tool run in bytes (None: none).
        max_input_bytes: The largest user file a benchmark is read from.
        opt: The ``opt`` to run (default ``$PROGRAML_OPT``, else ``opt-22``); it must be LLVM 22's.
        llc: The ``llc`` to run (default ``$PROGRAML_LLC``, else ``llc-22``).
        render_mode: ``"ansi"`` (``render()`` returns the IR) or ``"human"`` (prints it).

    Raises:
        KeyError: Unknown observation or reward space.
    """

    metadata = {"render_modes": ["ansi", "human"]}

    def __init__(
        self,
        benchmark: str | os.PathLike | Benchmark | None = None,
        observation_space: str | None = "Autophase",
        reward_space: str | None = "IrInstructionCountOz",
        *,
        data_dir: str | os.PathLike | None = None,
        cache_dir: str | os.PathLike | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        max_memory: int | None = DEFAULT_MAX_MEMORY,
        max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES,
        opt: str | None = None,
        llc: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, not {render_mode!r}")
        self.render_mode = render_mode
        self.toolchain = Toolchain(opt=opt, llc=llc, timeout=timeout, max_memory=max_memory)
        self._observer = Observer(self.toolchain)
        self._loader = {"data_dir": data_dir, "cache_dir": cache_dir, "max_input_bytes": max_input_bytes}
        self._benchmark_request = benchmark if benchmark is not None else DEFAULT_BENCHMARK
        self._benchmarks: dict[str, Benchmark] = {}
        self.benchmark: Benchmark | None = None
        self.action_space = Commandline(ACTIONS)
        self.observation = ObservationView(self)
        self._set_observation_space(observation_space)
        self._set_reward_space(reward_space)
        self._state: State | None = None
        self._ended = False
        self.episode_reward = 0.0

    # -- spaces ------------------------------------------------------------------------------------------------

    def _set_observation_space(self, name: str | None) -> None:
        if name is not None and name not in OBSERVATION_SPACES:
            raise KeyError(f"unknown observation space {name!r} (known: {', '.join(OBSERVATION_SPACES)})")
        self.observation_space_name = name
        self.observation_space = OBSERVATION_SPACES[name].space if name is not None else NoneSpace()

    def _set_reward_space(self, name: str | None) -> None:
        if name is not None and name not in REWARD_SPACES:
            raise KeyError(f"unknown reward space {name!r} (known: {', '.join(REWARD_SPACES)})")
        self.reward_space_name = name
        self._reward = Reward(REWARD_SPACES[name], self._observer) if name is not None else None
        self.reward_range = (-np.inf, np.inf)

    @property
    def reward_space(self) -> str | None:
        """The name of the reward space (None: none)."""
        return self.reward_space_name

    @property
    def actions(self) -> list[int]:
        """The actions applied in this episode, in order."""
        return list(self._current_state().actions)

    @property
    def state(self) -> State:
        """The current compiler state (immutable; a step makes a new one)."""
        return self._current_state()

    def _current_state(self) -> State:
        if self._state is None:
            raise EpisodeError("call reset() before using the environment")
        return self._state

    # -- episode -----------------------------------------------------------------------------------------------

    def _load(self, benchmark: str | os.PathLike | Benchmark) -> Benchmark:
        if isinstance(benchmark, Benchmark):
            self._benchmarks[benchmark.uri] = benchmark
            return benchmark
        key = os.fspath(benchmark)
        if key not in self._benchmarks:
            if len(self._benchmarks) >= 64:  # keep the recent ones (their baselines are worth keeping)
                self._benchmarks.pop(next(iter(self._benchmarks)))
            self._benchmarks[key] = load_benchmark(key, self.toolchain, **self._loader)
        return self._benchmarks[key]

    def reset(
        self,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        benchmark: str | os.PathLike | Benchmark | None = None,
        observation_space: Any = _KEEP,
        reward_space: Any = _KEEP,
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode at a benchmark's initial state.

        Args:
            seed: Seeds ``self.np_random`` (gymnasium's rule; seed ``action_space`` itself for its ``sample()``).
            options: ``{"benchmark": ..., "observation_space": ..., "reward_space": ...}``, the same as the
                keywords (what ``gymnasium.make`` wrappers pass through).
            benchmark: A new benchmark (default: the current one, else the constructor's).
            observation_space: A new observation space by name, or None.
            reward_space: A new reward space by name, or None.

        Returns:
            The observation and ``info`` (``{"benchmark": uri}``).

        Raises:
            BenchmarkError: The benchmark cannot be loaded (one line naming it).
            UnsupportedCompiler: A tool the benchmark needs is missing.
            KeyError: Unknown observation or reward space.
        """
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"benchmark", "observation_space", "reward_space"}
        if unknown:
            raise KeyError(f"unknown reset option(s): {', '.join(sorted(unknown))}")
        benchmark = options.get("benchmark", benchmark)
        if "observation_space" in options:
            observation_space = options["observation_space"]
        if "reward_space" in options:
            reward_space = options["reward_space"]
        if observation_space is not _KEEP:
            self._set_observation_space(observation_space)
        if reward_space is not _KEEP:
            self._set_reward_space(reward_space)
        if benchmark is not None:
            self._benchmark_request = benchmark
        self.benchmark = self._load(self._benchmark_request)
        self._state = self._observer.initial_state(self.benchmark)
        self._ended = False
        self.episode_reward = 0.0
        if self._reward is not None:
            self._reward.reset()
        return self._observe(), {"benchmark": self.benchmark.uri}

    def _observe(self) -> Any:
        if self.observation_space_name is None:
            return None
        return self.observation[self.observation_space_name]

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Apply one pass.

        Args:
            action: Its index in ``action_space`` (``action_space.names`` gives the passes' names).

        Returns:
            ``(observation, reward, terminated, truncated, info)``. ``info`` has ``action_had_no_effect`` (the
            module's bitcode did not change); when the pass failed, ``terminated`` is True, the state stays the
            last good one, the reward is ``-episode_reward``, and ``info`` has ``error_type`` and
            ``error_details`` (one line: which pass, on what, and how it failed).

        Raises:
            EpisodeError: ``reset()`` was not called, or the episode ended with an error.
            ActionError: ``action`` is not an integer in ``[0, action_space.n)``.
            ObservationError: The observation or reward cannot be computed for the new state (e.g. no object file
                for the module's target).
        """
        state = self._current_state()
        if self._ended:
            raise EpisodeError("the episode ended with an error: call reset() to start another")
        index = self._check_action(action)
        try:
            bitcode = apply_pipeline(state.bitcode, ACTIONS[index].pipeline, self.toolchain, self.benchmark.uri)
        except PassError as error:
            return self._end(error)
        if bitcode == state.bitcode:
            new_state = State(state.bitcode, (*state.actions, index), state.cache)  # same module: same observations
        else:
            new_state = State(bitcode, (*state.actions, index))
        self._state = new_state
        observation = self._observe()  # first: a reward on the instruction count then reads the features it made
        reward = self._reward.update(new_state, self.benchmark) if self._reward is not None else 0.0
        self.episode_reward += reward
        info = {"action_had_no_effect": bitcode == state.bitcode}
        return observation, reward, False, False, info

    def multistep(self, actions: Iterable[int]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Apply several passes; the reward is their sum (CompilerGym's ``multistep``). Stops at a failure."""
        total, result = 0.0, None
        no_effect = True
        for action in actions:
            result = self.step(action)
            total += result[1]
            no_effect = no_effect and result[4].get("action_had_no_effect", False)
            if result[2]:
                return result[0], total, True, result[3], result[4]
        if result is None:
            return self._observe(), 0.0, False, False, {"action_had_no_effect": True}
        return result[0], total, result[2], result[3], {**result[4], "action_had_no_effect": no_effect}

    def _check_action(self, action: Any) -> int:
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise ActionError(f"an action is an integer in [0, {self.action_space.n}), not {action!r}")
        index = int(action)
        if not 0 <= index < self.action_space.n:
            raise ActionError(f"action {index} is out of range [0, {self.action_space.n})")
        return index

    def _end(self, error: PassError) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._ended = True
        reward = Reward.on_error(self.episode_reward) if self._reward is not None else 0.0
        self.episode_reward += reward
        try:
            observation = self._observe()
        except ObservationError:
            observation = None
        info = {"action_had_no_effect": True, "error_type": type(error).__name__, "error_details": str(error)}
        return observation, reward, True, False, info

    # -- what CompilerGym users call ---------------------------------------------------------------------------

    def commandline(self, input: str = "input.bc", output: str = "output.bc") -> str:
        """The ``opt-22`` command that turns the benchmark's bitcode (:meth:`write_bitcode` with ``initial=True``)
        into the current state's."""
        opt = os.path.basename(self.toolchain.opt_path)
        pipeline = self.action_space.to_string(self._current_state().actions)
        return shlex.join([opt, f"-passes={pipeline}", input, "-o", output])

    def write_bitcode(self, path: str | os.PathLike, initial: bool = False) -> Path:
        """Write the current state's bitcode (or, with ``initial``, the benchmark's) to ``path``."""
        self._current_state()
        return atomic_write_bytes(path, self.benchmark.bitcode if initial else self._state.bitcode)

    def write_ir(self, path: str | os.PathLike) -> Path:
        """Write the current state's textual IR to ``path``."""
        return atomic_write_text(path, self.observation["Ir"])

    def fork(self) -> LlvmEnv:
        """A copy of this environment in its current state: the same benchmark, actions, spaces and running reward.
        Stepping one does not change the other; they share the immutable states and their caches."""
        other = LlvmEnv.__new__(LlvmEnv)
        other.__dict__.update(self.__dict__)
        other.observation = ObservationView(other)
        other._benchmarks = dict(self._benchmarks)
        other.action_space = Commandline(ACTIONS)
        other._reward = self._reward.copy() if self._reward is not None else None
        other._np_random = None
        return other

    def render(self) -> str | None:
        """The current IR (``render_mode="ansi"``), or print it (``"human"``)."""
        if self.render_mode is None:
            return None
        text = self.observation["Ir"]
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Forget the loaded benchmarks and the state (nothing runs between steps, so nothing else to stop)."""
        self._benchmarks.clear()
        self._state = None
