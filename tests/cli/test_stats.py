"""``programl stats``: the counts table of saved graphs (in the order given, with a total), a bad graph on one line
and exit 1, and the per-graph timeout of a batch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from programl.cli import main
from programl.cli.stats import graph_stats
from programl.io.files import read_graph

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def graphs(tmp_path: Path, capsys) -> list[Path]:
    sources = [DATA / "example_a.ll", DATA / "example_b.ll"]
    assert main(["build", *map(str, sources), "-o", str(tmp_path / "graphs"), "-q"]) == 0
    capsys.readouterr()
    return [tmp_path / "graphs" / "example_b.ProgramGraph.pb", tmp_path / "graphs" / "example_a.ProgramGraph.pb"]


def run_cli(args, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def cells(line: str) -> list[int]:
    return [int(cell.replace(",", "")) for cell in line.split()[1:]]


def test_graph_stats_counts_nodes_edges_and_functions(graphs) -> None:
    graph = read_graph(graphs[1])
    stats = graph_stats(graph)
    assert stats["instructions"] + stats["variables"] + stats["constants"] == len(graph.node) == 19
    assert stats["control"] + stats["data"] + stats["call"] == len(graph.edge)
    assert stats["functions"] == len(graph.function)
    assert stats["instructions"] == sum(node.type == 0 for node in graph.node)
    assert stats["call"] == sum(edge.flow == 2 for edge in graph.edge)


def test_the_table_lists_graphs_in_order_with_their_total(graphs, capsys) -> None:
    code, out, err = run_cli(["stats", *graphs, "-j", "2", "-q"], capsys)
    assert code == 0 and err == ""
    header, first, second, total = out.strip().splitlines()
    assert header.split()[:3] == ["graph", "nodes:", "inst"]
    assert first.startswith(str(graphs[0])) and second.startswith(str(graphs[1]))
    expected = [list(graph_stats(read_graph(path)).values()) for path in graphs]
    assert [cells(first), cells(second)] == expected
    assert total.startswith("total") and cells(total) == [a + b for a, b in zip(*expected)]


def test_a_bad_graph_is_one_line_and_the_others_are_listed(graphs, tmp_path, capsys) -> None:
    bad = tmp_path / "bad.ProgramGraph.pb"
    bad.write_bytes(b"\xff\xff not a graph")
    code, out, err = run_cli(["stats", graphs[1], bad, tmp_path / "missing.pb", "-q"], capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(": error: " in line for line in lines) and "Traceback" not in err
    assert str(bad) in lines[0] and "missing.pb" in lines[1]
    rows = out.strip().splitlines()
    assert len(rows) == 2 and rows[1].startswith(str(graphs[1]))  # one graph: no total row


def test_a_fifo_nobody_writes_to_times_out(graphs, tmp_path, capsys) -> None:
    fifo = tmp_path / "stuck.ProgramGraph.pb"
    os.mkfifo(fifo)
    code, out, err = run_cli(["stats", fifo, graphs[1], "--timeout", "2", "-q"], capsys)
    assert code == 1 and f"{fifo}: error: timed out after 2 s" in err
    assert out.strip().splitlines()[1].startswith(str(graphs[1]))


def test_bad_jobs_is_a_usage_error(graphs, capsys) -> None:
    assert run_cli(["stats", graphs[0], "-j", "-1"], capsys)[0] == 2
