"""Interoperating with CompilerGym's ProGraML observations (an optional adapter; docs/spec/python-api.md#transforms,
docs/spec/policy.md#lossless-conversions).

CompilerGym's LLVM environments expose two ProGraML observations, both built by ProGraML's C++ node-link writer
(the one behind 0.3.2's ``graph2json``) from the environment's current LLVM 10 module:

* ``ProgramlJson``: the node-link dict (every link has ``key: 0``; links are in protobuf edge order, so nothing is
  lost);
* ``Programl``: ``networkx.readwrite.json_graph.node_link_graph(<that dict>, multigraph=True, directed=True)``, a
  ``MultiDiGraph`` in which the shared key 0 has already collapsed parallel edges (the first difference of
  docs/spec/python-api.md#transforms), and whose edge order is networkx's (grouped by source node).

This module converts both to and from ``ProgramGraph`` without importing ``compiler_gym`` (which does not install on
Python >= 3.11 and downloads LLVM at first use). What :func:`to_programl_json_observation` and
:func:`to_programl_observation` give has CompilerGym's layout, attribute names and values exactly (nodes
``{type, text, function, block[, features]}``, edges ``{flow, position[, features]}``, graph ``{function, module[,
features]}``; node-link links under ``links``), so code written against CompilerGym's observations reads them
unchanged. Two differences keep them lossless: parallel edges get keys 0, 1, ... instead of all 0 (CompilerGym's
networkx graph loses them), and the networkx graph has one more graph attribute, ``edge_order`` (the protobuf edge
order, which networkx cannot hold; see :mod:`programl.io.networkx_convert`). ``docs/compat.md`` lists
every attribute. :func:`graph_from_env` asks a live environment for ``ProgramlJson`` (the lossless one) and needs
``compiler_gym``.

Graphs from CompilerGym come from LLVM 10 (typed pointers such as ``i32*``); graphs built by this package come from
LLVM 22 (``ptr``; docs/spec/policy.md#llvm-22-texts). Do not mix them in one data set.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

from programl.exceptions import ProgramlError
from programl.io.json_convert import ORDER, graph_from_json, graph_to_node_link
from programl.proto import ProgramGraph

__all__ = [
    "OBSERVATION_SPACES",
    "compiler_gym_available",
    "from_programl_json_observation",
    "from_programl_observation",
    "graph_from_env",
    "to_programl_json_observation",
    "to_programl_observation",
]

#: The CompilerGym observation spaces that hold a ProGraML graph.
OBSERVATION_SPACES = ("ProgramlJson", "Programl")


def compiler_gym_available() -> bool:
    """Whether the ``compiler_gym`` package can be imported."""
    return importlib.util.find_spec("compiler_gym") is not None


def from_programl_observation(observation: Any) -> ProgramGraph:
    """The ``ProgramGraph`` for CompilerGym's ``Programl`` observation (a ``networkx.MultiDiGraph``).

    Parallel edges that CompilerGym collapsed stay collapsed, and edges come in networkx's order unless the graph
    has an ``edge_order`` attribute (ours do). Use ``ProgramlJson`` for an exact graph.

    Raises:
        GraphTransformError: The observation is not a directed networkx graph of a program.
    """
    from programl.io.networkx_convert import graph_from_networkx

    return graph_from_networkx(observation)


def from_programl_json_observation(observation: Mapping[str, Any] | str | bytes) -> ProgramGraph:
    """The ``ProgramGraph`` for CompilerGym's ``ProgramlJson`` observation (a node-link dict, or its JSON text).

    Every link is kept, in order, so the graph equals the one CompilerGym built.

    Raises:
        GraphTransformError: The observation does not describe a program graph.
    """
    return graph_from_json(observation)


def to_programl_observation(graph: ProgramGraph) -> Any:
    """A ``networkx.MultiDiGraph`` shaped like CompilerGym's ``Programl`` observation (see
    :func:`programl.to_networkx`: edges are exactly ``{flow, position}``; parallel edges are kept with keys 0, 1,
    ...; the graph attribute ``edge_order`` keeps the edge order)."""
    from programl.io.networkx_convert import graph_to_networkx

    return graph_to_networkx(graph)


def to_programl_json_observation(graph: ProgramGraph) -> dict[str, Any]:
    """A node-link dict laid out as CompilerGym's ``ProgramlJson`` observation: :func:`programl.to_json` without its
    per-link ``order`` (the links are in edge order already), so ``node_link_graph`` of it has CompilerGym's edge
    attributes. Parallel edges have keys 0, 1, ... where CompilerGym writes 0."""
    data = graph_to_node_link(graph)
    for link in data["links"]:
        del link[ORDER]
    return data


def graph_from_env(env: Any, observation_space: str = "ProgramlJson") -> ProgramGraph:
    """The ProGraML graph of a live CompilerGym LLVM environment's current program.

    Args:
        env: A CompilerGym LLVM environment (e.g. ``compiler_gym.make("llvm-v0")`` after ``reset()``).
        observation_space: ``"ProgramlJson"`` (default; exact) or ``"Programl"`` (parallel edges collapsed by
            CompilerGym).

    Returns:
        The graph.

    Raises:
        ImportError: ``compiler_gym`` is not installed.
        ProgramlError: ``observation_space`` is not a ProGraML observation.
        GraphTransformError: The observation does not describe a program graph.
    """
    if not compiler_gym_available():
        raise ImportError(
            "graph_from_env needs the `compiler_gym` package (pip install compiler_gym; it supports Python <= 3.10)"
        )
    if observation_space not in OBSERVATION_SPACES:
        raise ProgramlError(
            f"unknown ProGraML observation space {observation_space!r}; expected one of {OBSERVATION_SPACES}"
        )
    observation = env.observation[observation_space]
    if observation_space == "ProgramlJson":
        return from_programl_json_observation(observation)
    return from_programl_observation(observation)
