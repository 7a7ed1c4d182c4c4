"""The reward spaces, as CompilerGym defines them (``compiler_gym/envs/llvm/llvm_rewards.py``;
docs/gym.md#rewards).

Each reward is the fall of a cost since the previous step: ``reward = previous_cost - cost``, where the cost before
the first action is the benchmark's own (``...O0``). Summed over an episode, it is ``O0 cost - final cost``.

==========================  ====================  ==========================================================
name                        cost                  divided by
==========================  ====================  ==========================================================
``IrInstructionCount``      IrInstructionCount    1
``IrInstructionCountNorm``  IrInstructionCount    ``IrInstructionCountO0``
``IrInstructionCountO3``    IrInstructionCount    ``max(IrInstructionCountO0 - IrInstructionCountO3, 1)``
``IrInstructionCountOz``    IrInstructionCount    ``max(IrInstructionCountO0 - IrInstructionCountOz, 1)``
``ObjectTextSizeBytes``     ObjectTextSizeBytes   1
``ObjectTextSizeNorm``      ObjectTextSizeBytes   ``ObjectTextSizeO0``
``ObjectTextSizeO3``        ObjectTextSizeBytes   ``max(ObjectTextSizeO0 - ObjectTextSizeO3, 1)``
``ObjectTextSizeOz``        ObjectTextSizeBytes   ``max(ObjectTextSizeO0 - ObjectTextSizeOz, 1)``
==========================  ====================  ==========================================================

So an episode's ``IrInstructionCountOz`` return is 1.0 when it removes as many instructions as ``-Oz`` does, more
when it beats it. When an action fails, the reward is ``-episode_reward`` (CompilerGym's ``reward_on_error`` for
these rewards: the return of a failed episode is 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from programl.gym.benchmarks import Benchmark
from programl.gym.observations import Observer
from programl.gym.state import State

__all__ = ["REWARD_SPACES", "Reward", "RewardSpec"]


@dataclass(frozen=True)
class RewardSpec:
    """A reward space (module docstring).

    Attributes:
        name: CompilerGym's name.
        cost: The observation whose fall is rewarded.
        baseline: ``O3`` or ``Oz`` for a reward normalised to that baseline's improvement; ``O0`` for one normalised
            to the initial cost; None for the raw fall.
        platform_dependent: The cost depends on the machine (object sizes).
    """

    name: str
    cost: str
    baseline: str | None = None
    platform_dependent: bool = False

    @property
    def init_cost(self) -> str:
        """The observation of the cost before any action (``IrInstructionCountO0``)."""
        return _O0[self.cost]


_O0 = {"IrInstructionCount": "IrInstructionCountO0", "ObjectTextSizeBytes": "ObjectTextSizeO0"}
_PREFIX = {"IrInstructionCount": "IrInstructionCount", "ObjectTextSizeBytes": "ObjectTextSize"}

#: The reward spaces by name (module docstring).
REWARD_SPACES: dict[str, RewardSpec] = {}
for _cost, _platform in (("IrInstructionCount", False), ("ObjectTextSizeBytes", True)):
    _prefix = _PREFIX[_cost]
    for _name, _baseline in ((_cost, None), (f"{_prefix}Norm", "O0"), (f"{_prefix}O3", "O3"), (f"{_prefix}Oz", "Oz")):
        REWARD_SPACES[_name] = RewardSpec(_name, _cost, _baseline, _platform)


class Reward:
    """The running state of one reward space in one episode.

    Args:
        spec: The reward space.
        observer: Computes the costs.
    """

    def __init__(self, spec: RewardSpec, observer: Observer) -> None:
        self.spec = spec
        self.observer = observer
        self.previous_cost: float | None = None
        self.norm: float | None = None

    def copy(self) -> Reward:
        """An independent copy of the running state (for a fork of the environment)."""
        other = Reward(self.spec, self.observer)
        other.previous_cost, other.norm = self.previous_cost, self.norm
        return other

    def reset(self) -> None:
        """Start an episode (the norm is computed again: the benchmark may have changed)."""
        self.previous_cost = None
        self.norm = None

    def _norm(self, benchmark: Benchmark) -> float:
        baseline = self.spec.baseline
        if baseline is None:
            return 1.0
        init = self.observer.observe(self.spec.init_cost, self.observer.initial_state(benchmark), benchmark)
        if baseline == "O0":
            return float(init) if init else 1.0
        name = f"{_PREFIX[self.spec.cost]}{baseline}"
        return float(max(init - self.observer.observe(name, self.observer.initial_state(benchmark), benchmark), 1))

    def update(self, state: State, benchmark: Benchmark) -> float:
        """The reward for reaching ``state``.

        Raises:
            ObservationError: A cost cannot be computed.
        """
        cost = self.observer.observe(self.spec.cost, state, benchmark)
        if self.previous_cost is None:
            self.previous_cost = self.observer.observe(
                self.spec.init_cost, self.observer.initial_state(benchmark), benchmark
            )
        if self.norm is None:
            self.norm = self._norm(benchmark)
        reward = float(self.previous_cost - cost) / self.norm
        self.previous_cost = cost
        return reward

    @staticmethod
    def on_error(episode_reward: float) -> float:
        """The reward of a failed action: ``-episode_reward`` (module docstring)."""
        return -episode_reward
