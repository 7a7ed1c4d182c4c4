"""The observation spaces, by CompilerGym's names, each computed on first request and cached per state
(docs/gym.md#observations).

=========================  =============================================================================================
``Ir``                     the module's textual IR (``str``)
``IrSha1``                 SHA-1 of the IR with its value names stripped (:func:`_ir_sha1`)
``Bitcode``                the module's bitcode (``bytes``)
``InstCount``              70 int64 counts (:data:`programl.gym.features.INST_COUNT_FEATURE_NAMES`)
``InstCountDict``          the same as ``{"<name>Count": int}``
``InstCountNorm``          the 69 opcode/block/function counts divided by ``TotalInsts`` (float32)
``InstCountNormDict``      the same as ``{"<name>Density": float}``
``Autophase``              56 int64 features (:data:`programl.gym.features.AUTOPHASE_FEATURE_NAMES`)
``AutophaseDict``          the same as ``{"<name>": int}``
``Programl``               the ProGraML graph as CompilerGym's ``networkx.MultiDiGraph``
                           (:func:`programl.io.compiler_gym.to_programl_observation`)
``ProgramlJson``           the graph as CompilerGym's node-link ``dict``
``ProgramlGraph``          the graph as this project's ``ProgramGraph`` protobuf
``ProgramlPyG``            the graph as a torch-geometric ``Data`` (:func:`programl.io.pyg.to_pyg`; needs the ``ml``
                           extra)
``IrInstructionCount``     the number of instructions (``Module::getInstructionCount``)
``IrInstructionCountO0``   ... of the benchmark as loaded (before any action)
``IrInstructionCountO3``   ... of the benchmark after ``opt-22 -passes='default<O3>'``
``IrInstructionCountOz``   ... of the benchmark after ``opt-22 -passes='default<Oz>'``
``ObjectTextSizeBytes``    bytes of executable code in the object ``llc-22 -O0 -filetype=obj`` makes (the sections
                           flagged ``SHF_EXECINSTR``: ``.text`` and ``.text.*``; :mod:`programl.gym.elf`)
``ObjectTextSizeO0``       ... of the benchmark as loaded; ``ObjectTextSizeO3``, ``ObjectTextSizeOz`` likewise
=========================  =============================================================================================

CompilerGym lowered the module with ``clang -c`` at its default, ``-O0``; ``llc-22 -O0`` is the same code generator
at the same level. The ``O3`` / ``Oz`` baselines run once per benchmark (:attr:`Benchmark.baselines`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from programl.exceptions import ProgramlError
from programl.gym.benchmarks import Benchmark
from programl.gym.elf import ElfError, text_size
from programl.gym.errors import ObservationError, PassError
from programl.gym.features import (
    AUTOPHASE_FEATURE_NAMES,
    INST_COUNT_FEATURE_NAMES,
    instruction_count,
    module_features,
)
from programl.gym.spaces import ObjectSpace, Scalar
from programl.gym.state import BASELINE_PIPELINES, State, Toolchain, apply_pipeline, ir_sha1
from programl.gym.tools import ToolFailure

__all__ = ["OBSERVATION_SPACES", "ObservationSpec", "Observer"]

_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class ObservationSpec:
    """An observation space: its name, gymnasium space, how it is computed, and CompilerGym's two flags.

    Attributes:
        name: CompilerGym's name (``Autophase``).
        make_space: Builds the gymnasium space.
        compute: ``compute(observer, state, benchmark)`` -> the value.
        deterministic: The same state always gives the same value.
        platform_dependent: The value depends on the machine (the object size: the default target).
    """

    name: str
    make_space: Callable[[], spaces.Space]
    compute: Callable[[Observer, State, Benchmark], Any]
    deterministic: bool = True
    platform_dependent: bool = False

    @property
    def space(self) -> spaces.Space:
        """A new gymnasium space of this observation."""
        return self.make_space()


class Observer:
    """Computes observations of states with one toolchain (and caches them in the states).

    Args:
        toolchain: The tools and limits.
    """

    def __init__(self, toolchain: Toolchain) -> None:
        self.toolchain = toolchain

    def observe(self, name: str, state: State, benchmark: Benchmark) -> Any:
        """The observation ``name`` of ``state``.

        Raises:
            KeyError: No observation space has that name.
            ObservationError: It cannot be computed for this state.
        """
        spec = OBSERVATION_SPACES.get(name)
        if spec is None:
            raise KeyError(f"unknown observation space {name!r} (known: {', '.join(OBSERVATION_SPACES)})")
        return state.get(name, lambda s: spec.compute(self, s, benchmark))

    def initial_state(self, benchmark: Benchmark) -> State:
        """The benchmark's state before any action (one per benchmark, so its observations are computed once)."""
        state = benchmark.baselines.get("state:O0")
        if state is None:
            state = benchmark.baselines.setdefault("state:O0", State(benchmark.bitcode))
        return state

    def baseline_state(self, benchmark: Benchmark, level: str) -> State:
        """The benchmark after ``-O3`` or ``-Oz`` (computed once per benchmark).

        Raises:
            ObservationError: ``opt-22`` failed on the baseline pipeline.
        """
        if level == "O0":
            return self.initial_state(benchmark)
        key = f"state:{level}"
        state = benchmark.baselines.get(key)
        if state is None:
            try:
                bitcode = apply_pipeline(benchmark.bitcode, BASELINE_PIPELINES[level], self.toolchain, benchmark.uri)
            except PassError as error:
                raise ObservationError(str(error)) from None
            state = benchmark.baselines.setdefault(key, State(bitcode))
        return state


def _parse(state: State, benchmark: Benchmark):
    """The state's module parsed in this process (bitcode that opt-22 wrote) in a context of its own."""
    from llvmlite import binding as llvm

    from programl.graph_builder.llvm import parse_bitcode

    context = llvm.create_context()
    try:
        return parse_bitcode(state.bitcode, benchmark.uri, context), context
    except ProgramlError as error:
        context.close()
        raise ObservationError(f"{benchmark.uri}: {error}") from None


def _features(observer: Observer, state: State, benchmark: Benchmark) -> tuple[np.ndarray, np.ndarray]:
    module, context = _parse(state, benchmark)
    try:
        inst_count, autophase = module_features(module)
    finally:
        module.close()
        context.close()
    for array in (inst_count, autophase):
        array.setflags(write=False)  # cached: shared by every reader of this state
    return inst_count, autophase


def _ir(observer: Observer, state: State, benchmark: Benchmark) -> str:
    module, context = _parse(state, benchmark)
    try:
        module.name = benchmark.uri
        return str(module)
    finally:
        module.close()
        context.close()


_STRIP_LOCK = threading.Lock()
_PASS_BUILDER: list = []


def _strip_names(module) -> None:
    """Remove the names of local values and internal globals in place (LLVM's ``strip-nondebug``)."""
    from llvmlite import binding as llvm

    with _STRIP_LOCK:
        if not _PASS_BUILDER:
            llvm.initialize_native_target()
            machine = llvm.Target.from_default_triple().create_target_machine()
            _PASS_BUILDER.append(llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options()))
        manager = llvm.create_new_module_pass_manager()
        manager.add_strip_non_debug_symbols_pass()
        manager.run(module, _PASS_BUILDER[0])


def _ir_sha1(observer: Observer, state: State, benchmark: Benchmark) -> str:
    """The SHA-1 of the IR without the names LLVM chose for local values and internal globals (``strip-nondebug``)
    and without its ``; ModuleID`` line: one ``opt-22`` process running passes ``a,b`` can name a value ``%x2``
    where a process per pass names it ``%x1`` (each process counts name clashes afresh), and the two modules are
    otherwise the same. So :meth:`~programl.gym.env.LlvmEnv.commandline` reproduces the hash of the state."""
    module, context = _parse(state, benchmark)
    try:
        _strip_names(module)
        return ir_sha1(str(module))
    finally:
        module.close()
        context.close()


def _instruction_count(observer: Observer, state: State, benchmark: Benchmark) -> int:
    features = state.cache.get("features")
    if isinstance(features, tuple):
        return int(features[0][0])
    module, context = _parse(state, benchmark)
    try:
        return instruction_count(module)
    finally:
        module.close()
        context.close()


def _inst_count(observer, state, benchmark):
    return state.get("features", lambda s: _features(observer, s, benchmark))[0]


def _autophase(observer, state, benchmark):
    return state.get("features", lambda s: _features(observer, s, benchmark))[1]


def _graph(observer, state, benchmark):
    from programl.graph_builder.llvm import graph_from_bitcode

    try:
        return graph_from_bitcode(state.bitcode, module_name=benchmark.uri)
    except ProgramlError as error:
        raise ObservationError(f"{benchmark.uri}: Programl: {error}") from None


def _pyg(observer, state, benchmark):
    try:
        from programl.io.pyg import to_pyg
    except ModuleNotFoundError as error:
        raise ObservationError(f"ProgramlPyG needs torch-geometric ({error}): pip install 'programl[ml]'") from None
    return to_pyg(observer.observe("ProgramlGraph", state, benchmark))


def _object_text_size(observer: Observer, state: State, benchmark: Benchmark) -> int:
    toolchain = observer.toolchain
    try:
        obj = toolchain.run([toolchain.llc_path, "-O0", "-filetype=obj", "-o", "-"], state.bitcode, benchmark.uri)
        return text_size(obj)
    except (ToolFailure, ElfError) as error:
        raise ObservationError(f"{benchmark.uri}: ObjectTextSizeBytes: {error}") from None


def _baseline(cost: str, level: str):
    def compute(observer: Observer, state: State, benchmark: Benchmark) -> int:
        return observer.observe(cost, observer.baseline_state(benchmark, level), benchmark)

    return compute


def _is_graph(x: Any) -> bool:
    import networkx as nx

    return isinstance(x, nx.MultiDiGraph)


def _is_program_graph(x: Any) -> bool:
    from programl.proto import ProgramGraph

    return isinstance(x, ProgramGraph)


def _counts_box(n: int) -> spaces.Box:
    return spaces.Box(low=0, high=_INT64_MAX, shape=(n,), dtype=np.int64)


def _dict_space(names, suffix: str, scalar: Scalar) -> spaces.Dict:
    return spaces.Dict({f"{name}{suffix}": scalar for name in names})


_SPECS = [
    ObservationSpec("Ir", lambda: ObjectSpace("str", lambda x: isinstance(x, str)), _ir),
    ObservationSpec(
        "IrSha1",
        lambda: ObjectSpace("sha1", lambda x: isinstance(x, str) and len(x) == 40),
        _ir_sha1,
    ),
    ObservationSpec("Bitcode", lambda: ObjectSpace("bytes", lambda x: isinstance(x, bytes)), lambda o, s, b: s.bitcode),
    ObservationSpec("InstCount", lambda: _counts_box(len(INST_COUNT_FEATURE_NAMES)), _inst_count),
    ObservationSpec(
        "InstCountDict",
        lambda: _dict_space(INST_COUNT_FEATURE_NAMES, "Count", Scalar(0, _INT64_MAX, int)),
        lambda o, s, b: {f"{n}Count": int(v) for n, v in zip(INST_COUNT_FEATURE_NAMES, o.observe("InstCount", s, b))},
    ),
    ObservationSpec(
        "InstCountNorm",
        lambda: spaces.Box(low=0, high=1, shape=(len(INST_COUNT_FEATURE_NAMES) - 1,), dtype=np.float32),
        lambda o, s, b: _normalised(o.observe("InstCount", s, b)),
    ),
    ObservationSpec(
        "InstCountNormDict",
        lambda: _dict_space(INST_COUNT_FEATURE_NAMES[1:], "Density", Scalar(0, np.inf, float)),
        lambda o, s, b: {
            f"{n}Density": float(v) for n, v in zip(INST_COUNT_FEATURE_NAMES[1:], o.observe("InstCountNorm", s, b))
        },
    ),
    ObservationSpec("Autophase", lambda: _counts_box(len(AUTOPHASE_FEATURE_NAMES)), _autophase),
    ObservationSpec(
        "AutophaseDict",
        lambda: _dict_space(AUTOPHASE_FEATURE_NAMES, "", Scalar(0, _INT64_MAX, int)),
        lambda o, s, b: {n: int(v) for n, v in zip(AUTOPHASE_FEATURE_NAMES, o.observe("Autophase", s, b))},
    ),
    ObservationSpec(
        "Programl",
        lambda: ObjectSpace("networkx.MultiDiGraph", _is_graph),
        lambda o, s, b: _to_networkx(o.observe("ProgramlGraph", s, b)),
    ),
    ObservationSpec(
        "ProgramlJson",
        lambda: ObjectSpace("node-link dict", lambda x: isinstance(x, dict) and "links" in x),
        lambda o, s, b: _to_json(o.observe("ProgramlGraph", s, b)),
    ),
    ObservationSpec("ProgramlGraph", lambda: ObjectSpace("ProgramGraph", _is_program_graph), _graph),
    ObservationSpec("ProgramlPyG", lambda: ObjectSpace("torch_geometric.data.Data"), _pyg),
    ObservationSpec("IrInstructionCount", lambda: Scalar(0, _INT64_MAX, int), _instruction_count),
    *(
        ObservationSpec(
            f"IrInstructionCount{level}", lambda: Scalar(0, _INT64_MAX, int), _baseline("IrInstructionCount", level)
        )
        for level in ("O0", "O3", "Oz")
    ),
    ObservationSpec(
        "ObjectTextSizeBytes", lambda: Scalar(0, _INT64_MAX, int), _object_text_size, platform_dependent=True
    ),
    *(
        ObservationSpec(
            f"ObjectTextSize{level}",
            lambda: Scalar(0, _INT64_MAX, int),
            _baseline("ObjectTextSizeBytes", level),
            platform_dependent=True,
        )
        for level in ("O0", "O3", "Oz")
    ),
]

#: The observation spaces by name (module docstring).
OBSERVATION_SPACES: dict[str, ObservationSpec] = {spec.name: spec for spec in _SPECS}


def _normalised(counts: np.ndarray) -> np.ndarray:
    values = (counts[1:] / max(int(counts[0]), 1)).astype(np.float32)
    values.setflags(write=False)
    return values


def _to_networkx(graph):
    from programl.io.compiler_gym import to_programl_observation

    return to_programl_observation(graph)


def _to_json(graph):
    from programl.io.compiler_gym import to_programl_json_observation

    return to_programl_json_observation(graph)
