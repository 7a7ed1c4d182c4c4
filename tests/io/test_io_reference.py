"""Differential tests against the original ProGraML 0.3.2 tools (graph2json, graph2dot) on graphs its llvm2graph-10
built from the C / IR fixtures in tests/data. Skipped when the tools are absent."""

from __future__ import annotations

import json
import re
import tarfile

import pytest
from tests.io.io_helpers import has_parallel_edges, run_tool, through_every_format

from programl.io.dot import to_dot
from programl.io.json_convert import from_json, to_json
from programl.io.networkx_convert import to_networkx
from programl.proto import ProgramGraph

pytestmark = pytest.mark.reference


def test_reference_graphs_are_there(reference_graphs) -> None:
    assert "io_parallel.ll" in reference_graphs
    for name, graph in reference_graphs.items():
        assert graph.node[0].text == "[external]" and not graph.node[0].HasField("features"), name
        assert len(graph.edge) > len(graph.node) / 2, name


def test_from_json_reads_graph2json_output(reference_graphs, graph2json) -> None:
    """graph2json writes key 0 on every link (so networkx would collapse parallel edges); from_json keeps them."""
    for name, graph in reference_graphs.items():
        data = json.loads(run_tool(graph2json, graph.SerializeToString(), "--stdin_fmt=pb"))
        assert {link["key"] for link in data["links"]} == {0}, name
        assert from_json(data) == graph, name


def test_to_json_equals_graph2json_but_for_key_and_order(reference_graphs, graph2json) -> None:
    for name, graph in reference_graphs.items():
        reference = json.loads(run_tool(graph2json, graph.SerializeToString(), "--stdin_fmt=pb"))
        ours = to_json(graph)
        assert [link.pop("order") for link in ours["links"]] == list(range(len(graph.edge)))
        keys = [link.pop("key") for link in ours["links"]]
        for link in reference["links"]:
            del link["key"]
        assert ours == reference, name
        # Same key order as graph2json's (sorted), apart from the two link fields.
        assert json.dumps(ours, separators=(",", ":")) == json.dumps(reference, separators=(",", ":")), name
        pairs = [(e.source, e.target) for e in graph.edge]
        assert keys == [pairs[:i].count(pair) for i, pair in enumerate(pairs)]


def test_to_networkx_keeps_what_the_original_collapses(reference_graphs) -> None:
    graph = reference_graphs["io_parallel.ll"]
    g = to_networkx(graph)
    assert g.number_of_edges() == len(graph.edge)
    assert sorted(attributes["position"] for attributes in g[8][1].values()) == [1, 2]


def _split_attributes(body: str) -> list[str]:
    items, current, quoted, escaped = [], "", False, False
    for char in body:
        if quoted:
            current += char
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
            current += char
        elif char == ",":
            items.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        items.append(current.strip())
    return items


def normalize_dot(text: str) -> str:
    """Attribute lists sorted (graph2dot's order comes from a hash map) and without labelfontcolor (graph2dot
    writes labelfontcolor="" where it means the edge colour)."""

    def sort(match: re.Match) -> str:
        items = [item for item in _split_attributes(match.group(1)) if not item.startswith("labelfontcolor=")]
        return "[" + ", ".join(sorted(items)) + "]"

    return re.sub(r'\[((?:[^\]"]|"(?:[^"\\]|\\.)*")*)\]', sort, text)


def test_to_dot_equals_graph2dot(reference_graphs, graph2dot) -> None:
    for name, graph in reference_graphs.items():
        reference = run_tool(graph2dot, graph.SerializeToString(), "--stdin_fmt=pb").decode()
        ours = to_dot(graph)
        assert normalize_dot(ours) == normalize_dot(reference), name
        assert ours.count("\n") == reference.count("\n"), name


def test_position_labels_have_the_edge_colour(reference_graphs, graph2dot) -> None:
    graph = reference_graphs["io_parallel.ll"]
    reference = run_tool(graph2dot, graph.SerializeToString(), "--stdin_fmt=pb").decode()
    assert 'labelfontcolor=""' in reference  # the original's bug
    ours = to_dot(graph)
    assert 'labelfontcolor=""' not in ours
    assert '8 -> 1[color="#990000", weight=0, headlabel=2, labelfontcolor="#990000"];' in ours


def test_legacy_corpus_against_the_original_tools(shared_data, llvm2graph, graph2json, graph2dot) -> None:
    """Real programs: every 25th of the 1,000 POJ-104 IR files in legacy-ir (clang 3.7) through llvm2graph-10."""
    archive = shared_data / "legacy-ir" / "llvm_ir.tar.bz2"
    if not archive.is_file():
        pytest.skip(f"{archive} not found")
    with tarfile.open(archive) as tar:
        members = sorted((m for m in tar.getmembers() if m.name.endswith(".ll")), key=lambda m: m.name)[::25]
        irs = {m.name: tar.extractfile(m).read() for m in members}
    assert len(irs) == 40
    parallel = 0
    for name, ir in irs.items():
        graph = ProgramGraph.FromString(run_tool(llvm2graph, ir, "--stdout_fmt=pb"))
        parallel += has_parallel_edges(graph)
        assert from_json(run_tool(graph2json, graph.SerializeToString(), "--stdin_fmt=pb")) == graph, name
        reference_dot = run_tool(graph2dot, graph.SerializeToString(), "--stdin_fmt=pb").decode()
        assert normalize_dot(to_dot(graph)) == normalize_dot(reference_dot), name
        assert through_every_format(graph) == graph, name
    assert parallel > 0  # the corpus has parallel edges, which the original's networkx conversion would lose
