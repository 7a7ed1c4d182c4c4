"""programl.io.dot: Graphviz text as graph2dot writes it (SPEC §3.2 to_dot), and rendering with `dot`."""

from __future__ import annotations

import concurrent.futures
import re
import shutil

import pytest

import programl
from programl.exceptions import GraphTransformError
from programl.io.dot import render_dot, to_dot
from programl.proto import Edge, Node, ProgramGraph
from tests.io.io_helpers import example_graph

INSTRUCTION = 'shape=box, style=filled, fillcolor="#3c78d8", fontcolor="#ffffff"'
VARIABLE = 'shape=ellipse, style=filled, fillcolor="#f4cccc", color="#990000", fontcolor="#990000"'
CONSTANT = 'shape=diamond, style=filled, fillcolor="#e99c9c", color="#990000", fontcolor="#990000"'


def small_graph() -> ProgramGraph:
    """Two functions; a constant shared by both; calls; a data edge with a position; a cross-function data edge."""
    g = ProgramGraph()
    g.node.add(type=Node.INSTRUCTION, text="[external]")
    g.node.add(type=Node.INSTRUCTION, text="call", function=0)  # 1
    g.node.add(type=Node.VARIABLE, text="i32", function=0)  # 2
    g.node.add(type=Node.INSTRUCTION, text="ret", function=1)  # 3
    g.node.add(type=Node.CONSTANT, text="i32", function=0)  # 4
    g.node.add(type=Node.INSTRUCTION, text="ret", function=0)  # 5
    g.edge.add(flow=Edge.CONTROL, source=1, target=5, position=0)
    g.edge.add(flow=Edge.CALL, source=1, target=3, position=0)
    g.edge.add(flow=Edge.DATA, source=4, target=3, position=0)
    g.edge.add(flow=Edge.DATA, source=2, target=5, position=1)
    g.edge.add(flow=Edge.DATA, source=1, target=2, position=0)
    g.edge.add(flow=Edge.CALL, source=3, target=1, position=0)
    g.edge.add(flow=Edge.CALL, source=0, target=1, position=0)
    g.edge.add(flow=Edge.CONTROL, source=5, target=1, position=2)
    g.function.add(name="main")
    g.function.add(name="f")
    return g


def test_public_names() -> None:
    assert programl.to_dot is to_dot
    assert programl.render_dot is render_dot


def test_whole_text_of_a_small_graph() -> None:
    assert to_dot(small_graph()) == (
        "digraph main {\n"
        "graph [\nmargin=0, nodesep=0.4, ranksep=0.4, fontname=Inconsolata, fontsize=20];\n"
        "node [\nfontname=Inconsolata, fontsize=20, penwidth=2, width=1, margin=0];\n"
        "edge [\nfontname=Inconsolata, fontsize=20, penwidth=3, arrowsize=.8];\n"
        "subgraph external {\n"
        f'0[label="[external]", {INSTRUCTION}];\n'
        f"4[label=i32, {CONSTANT}];\n"
        "}\n"
        "subgraph clustermain {\n"
        "graph [\nlabel=main, margin=10, style=dotted];\n"
        f"1[label=call, {INSTRUCTION}];\n"
        f"2[label=i32, {VARIABLE}];\n"
        f"5[label=ret, {INSTRUCTION}];\n"
        '1 -> 5[color="#345393", weight=10];\n'  # edges inside a cluster, ordered by source
        '1 -> 2[color="#990000", weight=0];\n'
        '2 -> 5[color="#990000", weight=0, headlabel=1, labelfontcolor="#990000"];\n'
        '5 -> 1[color="#345393", weight=10, taillabel=2, labelfontcolor="#345393"];\n'
        "}\n"
        "subgraph clusterf {\n"
        "graph [\nlabel=f, margin=10, style=dotted];\n"
        f"3[label=ret, {INSTRUCTION}];\n"
        "}\n"
        '0 -> 1[color="#65ae4d", weight=1];\n'  # edges between subgraphs at the top level, ordered by source
        '1 -> 3[color="#65ae4d", weight=1];\n'
        '3 -> 1[color="#65ae4d", weight=1];\n'
        '4 -> 3[color="#990000", weight=0];\n'
        "}\n"
    )


def test_labels_are_truncated_at_32_characters() -> None:
    g = ProgramGraph()
    g.node.add(text="x" * 40)
    for length in (31, 32, 33):
        g.node.add(type=Node.VARIABLE, text="a" * length, function=0)
    g.function.add(name="f" * 33)
    text = to_dot(g)
    assert '0[label="' + "x" * 29 + '...",' in text
    assert f"1[label={'a' * 31}," in text
    assert f"2[label={'a' * 32}," in text
    assert "3[label=" + '"' + "a" * 29 + '...",' in text
    assert 'subgraph "cluster' + "f" * 29 + '..." {\ngraph [\nlabel="' + "f" * 29 + '...", margin=10' in text


def test_quoting() -> None:
    g = ProgramGraph()
    g.node.add(text='say "hi"')
    g.node.add(text="node", function=0)  # a DOT keyword
    g.node.add(text="1.5", function=0)  # a numeral stays bare
    g.node.add(text="a\\", function=0)  # a trailing backslash must not escape the closing quote
    g.node.add(text="i32 (i32, i8*)*", function=0)
    g.node.add(text="", function=0)
    g.function.add(name="my fn")
    text = to_dot(g)
    assert '0[label="say \\"hi\\"",' in text
    assert '1[label="node",' in text
    assert "2[label=1.5," in text
    assert '3[label="a\\\\",' in text
    assert '4[label="i32 (i32, i8*)*",' in text
    assert '5[label="",' in text
    assert 'subgraph "clustermy fn" {' in text


def test_positions_label_the_right_end() -> None:
    g = ProgramGraph()
    g.node.add(text="a")
    g.node.add(text="b", function=0)
    for flow in (Edge.CONTROL, Edge.DATA, Edge.CALL):
        g.edge.add(flow=flow, source=0, target=1, position=-4)
    g.edge.add(flow=Edge.TYPE, source=0, target=1, position=3)
    g.edge.add(flow=Edge.TYPE, source=1, target=0, position=0)
    g.function.add(name="f")
    edges = [line for line in to_dot(g).splitlines() if "->" in line]
    assert edges == [
        '0 -> 1[color="#345393", weight=10, taillabel=-4, labelfontcolor="#345393"];',
        '0 -> 1[color="#990000", weight=0, headlabel=-4, labelfontcolor="#990000"];',
        '0 -> 1[color="#65ae4d", weight=1, taillabel=-4, labelfontcolor="#65ae4d"];',
        "0 -> 1[taillabel=3];",
        "1 -> 0;",
    ]


def test_every_node_kind_and_the_external_subgraph(graph) -> None:
    text = to_dot(graph)
    external = re.search(r"subgraph external \{\n(.*?)\n\}", text, re.S).group(1)
    assert {line.split("[")[0] for line in external.splitlines() if "->" not in line} == {"0", "4"}
    assert f"1[label=alloca, {INSTRUCTION}];" in text
    assert f"3[label=i32, {VARIABLE}];" in text
    assert f"4[label=i32, {CONSTANT}];" in text
    assert '6[label="i32 (i32)"];' in text  # TYPE nodes (development branch) have no style, as in 0.3.2
    assert "subgraph clusterpick {" in text and 'subgraph "clusterllvm.dbg.value" {' in text
    assert "full_text" not in text  # no features are exported (issue #207)
    assert text.count(" -> ") == len(graph.edge)  # parallel edges drawn twice


def test_bad_graphs_raise() -> None:
    g = ProgramGraph()
    g.node.add(text="[external]")
    g.node.add(text="x", function=2)
    g.function.add(name="only")
    with pytest.raises(GraphTransformError, match="function 2"):
        to_dot(g)
    g.node[1].function = 0
    g.edge.add(source=0, target=7)
    with pytest.raises(GraphTransformError, match="does not exist"):
        to_dot(g)


def test_a_graph_without_functions_is_drawn_without_clusters() -> None:
    """from_pyg's graphs (and hand-built ones) have no Function messages; to_dot refused them, to_json did not."""
    g = small_graph()
    del g.function[:]
    text = to_dot(g)
    assert "cluster" not in text and text.startswith("digraph main {")
    assert all(f"{index}[label=" in text for index in range(len(g.node)))
    assert text.count(" -> ") == len(g.edge)


def test_many_inputs_give_a_lazy_iterator_in_order() -> None:
    graphs = [small_graph() for _ in range(4)]
    for i, g in enumerate(graphs):
        g.function[1].name = f"fn{i}"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        texts = to_dot(graphs, executor=pool, chunksize=2)
        assert not isinstance(texts, (str, list))
        assert [f"clusterfn{i} " in text for i, text in enumerate(texts)] == [True] * 4


def test_output_is_deterministic() -> None:
    assert to_dot(example_graph()) == to_dot(example_graph())


needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` not installed")


@needs_dot
def test_render_svg(graph, tmp_path) -> None:
    path = tmp_path / "out" / "graph.svg"
    svg = render_dot(graph, path=path)
    assert svg.startswith(b"<?xml") and b"<svg" in svg
    assert path.read_bytes() == svg
    assert b"alloca" in svg and b"[external]" in svg
    assert render_dot(to_dot(graph)) == svg


@needs_dot
def test_render_png(tmp_path) -> None:
    png = render_dot(small_graph(), format="png", path=tmp_path / "g.png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "g.png").read_bytes() == png


@needs_dot
def test_render_errors(tmp_path) -> None:
    with pytest.raises(GraphTransformError, match="dot failed"):
        render_dot("digraph {", path=tmp_path / "x.svg")
    assert not (tmp_path / "x.svg").exists()
    with pytest.raises(GraphTransformError, match="unsupported format"):
        render_dot(small_graph(), format="gif")
    with pytest.raises(GraphTransformError, match="expected a ProgramGraph or DOT text"):
        render_dot(b"digraph {}")


def test_render_without_graphviz_says_how_to_install_it(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("PROGRAML_DOT", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no `dot` anywhere
    with pytest.raises(GraphTransformError, match="apt-get install graphviz"):
        render_dot(small_graph())
