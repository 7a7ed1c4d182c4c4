"""programl.io.compiler_gym: CompilerGym's Programl / ProgramlJson observations <-> ProgramGraph.

The fixture ``tests/data/io_parallel.graph2json.json`` is what ProGraML's C++ node-link writer (the one CompilerGym's
LLVM service calls for both observations) produced for ``io_parallel.ll``; ``io_parallel.ProgramGraph.pb`` is the
graph it was written from (both from the original 0.3.2 tools). CompilerGym builds its ``Programl`` observation as
``node_link_graph(json, multigraph=True, directed=True)`` (compiler_gym/service/proto/py_converters.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from networkx.readwrite import json_graph

from programl.exceptions import ProgramlError
from programl.io import compiler_gym
from programl.proto import ProgramGraph
from tests.io.io_helpers import example_graph

TESTS_DATA = Path(__file__).resolve().parents[1] / "data"


def original_graph() -> ProgramGraph:
    return ProgramGraph.FromString((TESTS_DATA / "io_parallel.ProgramGraph.pb").read_bytes())


def programl_json_observation() -> dict:
    return json.loads((TESTS_DATA / "io_parallel.graph2json.json").read_text())


def programl_observation() -> nx.MultiDiGraph:
    return json_graph.node_link_graph(programl_json_observation(), edges="links", multigraph=True, directed=True)


def test_programl_json_observation_gives_the_exact_graph() -> None:
    observation = programl_json_observation()
    assert {link["key"] for link in observation["links"]} == {0}
    assert compiler_gym.from_programl_json_observation(observation) == original_graph()
    assert compiler_gym.from_programl_json_observation(json.dumps(observation)) == original_graph()


def test_programl_observation_keeps_what_compiler_gym_kept() -> None:
    graph = original_graph()
    observation = programl_observation()
    result = compiler_gym.from_programl_observation(observation)
    assert list(result.node) == list(graph.node)
    assert list(result.function) == list(graph.function)
    assert list(result.module) == list(graph.module)
    # CompilerGym's shared key 0 collapsed the two pairs of parallel edges; the rest are all there.
    assert len(result.edge) == len(graph.edge) - 2 == observation.number_of_edges()
    original = [(e.flow, e.position, e.source, e.target) for e in graph.edge]
    assert {(e.flow, e.position, e.source, e.target) for e in result.edge} <= set(original)


def test_to_observations_have_compiler_gyms_layout() -> None:
    """Issue 9 item 6: the same JSON layout and networkx attributes as CompilerGym's, but for parallel-edge keys."""
    graph = original_graph()
    ours = compiler_gym.to_programl_json_observation(graph)
    theirs = programl_json_observation()
    assert list(ours) == list(theirs) == ["directed", "graph", "links", "multigraph", "nodes"]
    assert ours["nodes"] == theirs["nodes"] and ours["graph"] == theirs["graph"]
    parallel = 0
    for mine, original in zip(ours["links"], theirs["links"], strict=True):
        assert list(mine) == list(original)  # same keys in the same (sorted) order
        parallel += mine["key"] != original["key"]
        assert {**mine, "key": 0} == original
    assert parallel == 2  # the two parallel edges: keys 1 where graph2json writes 0
    g = compiler_gym.to_programl_observation(graph)
    reference = programl_observation()
    assert dict(g.nodes(data=True)) == dict(reference.nodes(data=True))
    assert {k: v for k, v in g.graph.items() if k != "edge_order"} == reference.graph
    assert g.number_of_edges() == len(graph.edge) == reference.number_of_edges() + parallel
    for u, v, key, attributes in reference.edges(keys=True, data=True):
        assert set(g.edges[u, v, key]) == set(attributes) == {"flow", "position"}
    # node_link_graph of our JSON, as CompilerGym does it, gives the same edge attributes.
    rebuilt = json_graph.node_link_graph(ours, edges="links", multigraph=True, directed=True)
    assert list(rebuilt.edges(keys=True, data=True)) == list(g.edges(keys=True, data=True))


def test_round_trips(graph) -> None:
    for g in (graph, original_graph(), example_graph()):
        assert compiler_gym.from_programl_observation(compiler_gym.to_programl_observation(g)) == g
        assert compiler_gym.from_programl_json_observation(compiler_gym.to_programl_json_observation(g)) == g


def test_graph_from_env_without_compiler_gym() -> None:
    if compiler_gym.compiler_gym_available():
        pytest.skip("compiler_gym is installed")
    with pytest.raises(ImportError, match="compiler_gym"):
        compiler_gym.graph_from_env(object())


def test_graph_from_env_with_a_live_environment() -> None:
    cg = pytest.importorskip("compiler_gym", reason="compiler_gym not installed (it needs Python <= 3.10)")
    with cg.make("llvm-v0", benchmark="cbench-v1/crc32") as env:
        env.reset()
        exact = compiler_gym.graph_from_env(env)
        assert exact == compiler_gym.from_programl_json_observation(env.observation["ProgramlJson"])
        collapsed = compiler_gym.graph_from_env(env, observation_space="Programl")
        assert list(collapsed.node) == list(exact.node)
        assert len(collapsed.edge) <= len(exact.edge)
        with pytest.raises(ProgramlError, match="observation space"):
            compiler_gym.graph_from_env(env, observation_space="Autophase")
