"""The environment's gymnasium spaces (docs/gym.md#spaces): the action space with the passes' names, and the spaces
of observations that are not arrays (text, bytes, graphs, scalars), shaped like CompilerGym's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from programl.gym.actions import Action

__all__ = ["Commandline", "NoneSpace", "ObjectSpace", "Scalar"]


class Commandline(spaces.Discrete):
    """A ``Discrete`` space over passes, as CompilerGym's ``Commandline`` space: action ``i`` runs pass
    ``names[i]`` (``opt-22 -passes=`` element ``pipelines[i]``; CompilerGym's flag ``flags[i]``).

    Args:
        actions: The actions, in order.
    """

    def __init__(self, actions: Sequence[Action], seed: int | None = None) -> None:
        super().__init__(len(actions), seed=seed)
        self.actions = tuple(actions)
        self.names = [a.name for a in self.actions]
        self.pipelines = [a.pipeline for a in self.actions]
        self.flags = [a.flag for a in self.actions]
        self.descriptions = [a.description for a in self.actions]

    def to_string(self, actions: Sequence[int]) -> str:
        """The ``opt-22 -passes=`` pipeline of a list of actions."""
        return ",".join(self.pipelines[int(a)] for a in actions)

    def __repr__(self) -> str:
        return f"Commandline({self.n} passes)"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Commandline) and other.names == self.names


class _ObservationSpace(spaces.Space):
    """A space of values computed from a compiler state: none can be sampled, and gymnasium's flatten does not apply."""

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        """Not defined: observations come from compiler states.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError("a compiler observation cannot be sampled")

    @property
    def is_np_flattenable(self) -> bool:
        """False: gymnasium's flatten does not apply."""
        return False


class Scalar(_ObservationSpace):
    """One number in ``[low, high]`` (an ``int`` or a ``float``, as CompilerGym's ``Scalar``)."""

    def __init__(self, low: float = 0, high: float = np.inf, dtype: type = int) -> None:
        super().__init__(shape=(), dtype=None)
        self.low, self.high, self.scalar_type = low, high, dtype

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a number of the space's type within its bounds."""
        kinds = (int, np.integer) if self.scalar_type is int else (int, float, np.integer, np.floating)
        return isinstance(x, kinds) and not isinstance(x, bool) and self.low <= x <= self.high

    def __repr__(self) -> str:
        return f"Scalar({self.low}, {self.high}, {self.scalar_type.__name__})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Scalar) and (other.low, other.high, other.scalar_type) == (
            self.low,
            self.high,
            self.scalar_type,
        )


class ObjectSpace(_ObservationSpace):
    """Values of one Python type: IR text (``str``), bitcode (``bytes``), a graph (``networkx.MultiDiGraph``,
    ``dict``, ``ProgramGraph``, a PyG ``Data``)."""

    def __init__(self, kind: str, check=None) -> None:
        super().__init__(shape=None, dtype=None)
        self.kind = kind
        self._check = check

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a value of the space's type."""
        return self._check(x) if self._check is not None else x is not None

    def __repr__(self) -> str:
        return f"ObjectSpace({self.kind})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ObjectSpace) and other.kind == self.kind


class NoneSpace(ObjectSpace):
    """The observation space of an environment made without one: every observation is ``None``."""

    def __init__(self) -> None:
        super().__init__("None", lambda x: x is None)
