"""The LLVM optimisation environment (docs/gym.md): a gymnasium ``Env`` shaped like CompilerGym's ``llvm-v0``, on
LLVM 22, with ProGraML as its native observation.

Importing this package registers the environment id ``programl/llvm-v0`` with gymnasium (the ``gym`` extra:
``pip install 'programl[gym]'``)::

    import gymnasium
    import programl.gym

    env = gymnasium.make("programl/llvm-v0", benchmark="file:///path/to/prog.c",
                         observation_space="Programl", reward_space="IrInstructionCountOz")

* :mod:`~programl.gym.env` - :class:`LlvmEnv` (reset, step, ``observation[...]``, ``commandline()``, ``fork()``).
* :mod:`~programl.gym.actions` - the passes, and where CompilerGym's 124 flags went (:data:`FLAGS`).
* :mod:`~programl.gym.observations`, :mod:`~programl.gym.features`, :mod:`~programl.gym.rewards` - observation and
  reward spaces by CompilerGym's names.
* :mod:`~programl.gym.benchmarks` - benchmarks by URI, data sets, splits; :mod:`~programl.gym.wide` - the wide C
  corpus's archives as a data set (``benchmark://wide-v0/...``).
* :mod:`~programl.gym.agents` - reference agents: ``-Oz``, ``-O3``, random search, greedy search.
* :mod:`~programl.gym.policy` - the learned policy (a GGNN that picks a pipeline in one shot) and the search it
  guides (the ``ml`` extra).
* :mod:`~programl.gym.parallel` - an agent over many benchmarks through the project's executors.
* :mod:`~programl.gym.state`, :mod:`~programl.gym.tools` - states, and the LLVM tools run in their own processes.

Names are imported lazily: ``import programl.gym`` costs only the registration.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ACTIONS",
    "AUTOPHASE_FEATURE_NAMES",
    "ENV_ID",
    "FLAGS",
    "INST_COUNT_FEATURE_NAMES",
    "OBSERVATION_SPACES",
    "REWARD_SPACES",
    "Benchmark",
    "BenchmarkError",
    "LlvmEnv",
    "ObservationError",
    "PassError",
    "load_benchmark",
    "split_of",
]

#: The gymnasium id of the environment.
ENV_ID = "programl/llvm-v0"

_MODULES = {
    "ACTIONS": "actions",
    "FLAGS": "actions",
    "AUTOPHASE_FEATURE_NAMES": "features",
    "INST_COUNT_FEATURE_NAMES": "features",
    "OBSERVATION_SPACES": "observations",
    "REWARD_SPACES": "rewards",
    "Benchmark": "benchmarks",
    "load_benchmark": "benchmarks",
    "split_of": "benchmarks",
    "BenchmarkError": "errors",
    "ObservationError": "errors",
    "PassError": "errors",
    "LlvmEnv": "env",
}


def _register() -> None:
    try:
        import gymnasium
    except ModuleNotFoundError:  # the gym extra is not installed: LlvmEnv says which extra to install
        return
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="programl.gym.env:LlvmEnv")


_register()


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'programl.gym' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(f"programl.gym.{module}"), name)
    except ModuleNotFoundError as error:
        if error.name != "gymnasium":
            raise
        raise ModuleNotFoundError(
            f"programl.gym.{name} needs gymnasium: pip install 'programl[gym]'", name="gymnasium"
        ) from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(globals()))
