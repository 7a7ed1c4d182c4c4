"""The ProGraML observations in each form, built by this project's graph builder from the state's module."""

from __future__ import annotations

import pytest

from programl.gym.env import LlvmEnv
from programl.io.compiler_gym import from_programl_json_observation, from_programl_observation
from programl.proto import ProgramGraph


def test_programl_forms_agree(loops_c) -> None:
    env = LlvmEnv(str(loops_c), observation_space="ProgramlGraph")
    graph, _ = env.reset()
    env.step(env.action_space.names.index("mem2reg"))
    graph = env.observation["ProgramlGraph"]
    assert isinstance(graph, ProgramGraph) and len(graph.node) > 0
    assert graph.module[0].name == str(loops_c)  # the source_filename clang wrote
    assert from_programl_observation(env.observation["Programl"]) == graph
    assert from_programl_json_observation(env.observation["ProgramlJson"]) == graph
    texts = {node.text for node in graph.node}
    assert "alloca" not in texts and "phi" in texts  # mem2reg's work shows in the graph


def test_programl_pyg(loops_c) -> None:
    pytest.importorskip("torch_geometric", reason="the ml extra is not installed")
    env = LlvmEnv(str(loops_c), observation_space="ProgramlPyG")
    data, _ = env.reset()
    graph = env.observation["ProgramlGraph"]
    assert data.num_nodes == len(graph.node) and data.edge_index.shape == (2, len(graph.edge))
