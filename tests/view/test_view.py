"""``programl view`` without a browser: the layout, the source lines from debug information, the page's data and
labels, the self-contained HTML, and the command line (issue 37 item 2). tests/view/test_view_browser.py opens pages
in Chromium."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

import programl
from programl.proto import Edge, Node, ProgramGraph
from tests.conftest import REPO_ROOT

LOOPS = """
int g;
int sum(int *a, int n) {
  int s = 0;
  for (int i = 0; i < n; i++) {
    if (a[i] > 0) s += a[i];
    else s -= 1;
  }
  return s + g;
}
int twice(int *a, int n) { return sum(a, n) + sum(a, n / 2) + g; }
"""


@pytest.fixture(scope="module")
def graph(clang22) -> ProgramGraph:
    return programl.from_cpp(LOOPS, language="c")


def _page_data(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="programl-data">(.*?)</script>', page, re.S)
    assert match
    return json.loads(match.group(1))


def test_layout_places_every_node_once_inside_its_group(graph) -> None:
    from programl.view.layout import layout_graph

    layout = layout_graph(graph)
    n = len(graph.node)
    assert len(layout.groups) == len(graph.function) + 1 and layout.groups[-1].kind == "module"
    assert sorted(i for g in layout.groups for i in g.nodes) == list(range(n))
    assert layout.group[0] == len(graph.function)  # the external node is in the module group
    for i, node in enumerate(graph.node):
        g = layout.groups[layout.group[i]]
        assert 0 < layout.x[i] < g.width and 0 < layout.y[i] < g.height, i
        if i and node.type != Node.CONSTANT:
            assert layout.group[i] == node.function
    # no two nodes of a group overlap
    for g, group in enumerate(layout.groups):
        boxes = sorted(
            (layout.y[i], layout.x[i] - layout.width[i] / 2, layout.x[i] + layout.width[i] / 2) for i in group.nodes
        )
        for (y1, _, b1), (y2, a2, _) in zip(boxes, boxes[1:]):
            assert y1 != y2 or b1 <= a2, (g, boxes)
    # each instruction's block box holds it; the entry block of `sum` is on top
    for i, k in enumerate(layout.block):
        if k >= 0:
            g, _, x, y, w, h = layout.blocks[k]
            assert g == layout.group[i] and x < layout.x[i] < x + w and y < layout.y[i] < y + h
    sum_index = [f.name for f in graph.function].index("sum")
    sum_blocks = [b for b in layout.blocks if b[0] == sum_index]
    entry = graph.node[next(i for i, x in enumerate(graph.node) if i and x.function == sum_index and x.type == 0)].block
    assert min(sum_blocks, key=lambda b: b[3])[1] == entry


def test_layout_of_a_hand_built_graph_without_functions() -> None:
    from programl.view.layout import layout_graph

    graph = ProgramGraph(node=[Node(text="[external]"), Node(type=Node.CONSTANT, text="i32")])
    graph.edge.add(flow=Edge.DATA, source=1, target=0)
    layout = layout_graph(graph)
    assert layout.group == [0, 0] and layout.groups[0].kind == "module"


def test_source_lines_from_debug_information(tmp_path, clang22) -> None:
    from programl.view import read_input

    source = tmp_path / "abs.c"
    source.write_text("int f(int x) {\n  if (x < 0)\n    return -x;\n  return x;\n}\n")
    graph, locations = read_input(str(source))
    plain = programl.from_clang([str(source)])
    assert [n.text for n in graph.node] == [n.text for n in plain.node] and len(graph.edge) == len(plain.edge)
    assert locations.files and locations.files[0].endswith("abs.c")
    lines = {line for _, line, _ in locations.nodes.values()}
    assert {2, 3, 4} <= lines
    assert locations.lines[0][3] == "    return -x;"
    icmp = next(i for i, n in enumerate(graph.node) if n.text == "icmp")
    assert locations.nodes[icmp][1] == 2
    _, no_debug = read_input(str(source), debug_info=False)
    assert no_debug.nodes == {}


def test_page_is_self_contained_and_holds_the_graph(graph) -> None:
    from programl.view import to_html

    page = to_html(graph, title="loops </script> & <b>")
    assert page.startswith("<!DOCTYPE html>") and page.count("</script>") == 3
    assert "&lt;/script&gt; &amp; &lt;b&gt;" in page
    assert not re.search(r"""<(script|link|img)[^>]+(src|href)=["']?(https?:)?//""", page)
    data = _page_data(page)
    assert data["counts"]["nodes"] == len(graph.node) and data["counts"]["edges"] == len(graph.edge)
    assert data["nodes"]["text"] == [n.text for n in graph.node]
    assert data["edges"]["source"] == [e.source for e in graph.edge]
    assert data["collapsed"] == [] and data["analysis"] is None
    assert data["title"] == "loops </script> & <b>"
    assert _page_data(to_html(graph, expand="none"))["collapsed"] == list(range(len(graph.function) + 1))


def test_labels_are_the_exact_analysis(graph) -> None:
    from programl.dataflow import analyze_arrays, eligible_roots
    from programl.view import analysis_data

    data = analysis_data(graph, "liveness")
    roots = eligible_roots(graph, "liveness")
    assert data["roots"] == roots.tolist() and data["eligible"] == len(roots) and data["model"] is None
    exact = analyze_arrays(graph, "liveness", roots=roots).labels.astype(bool)
    for row, bits in zip(exact, data["exact"]):
        unpacked = np.unpackbits(np.frombuffer(base64.b64decode(bits), np.uint8), bitorder="little")[: len(graph.node)]
        assert (unpacked.astype(bool) == row).all()
    sample = analysis_data(graph, "liveness", max_roots=3, seed=1)
    assert len(sample["roots"]) == 3 and set(sample["roots"]) <= set(roots.tolist())
    assert analysis_data(graph, "liveness", roots=[int(roots[0])])["roots"] == [int(roots[0])]
    with pytest.raises(programl.AnalysisError):
        analysis_data(graph, "liveness", roots=[0])
    with pytest.raises(programl.AnalysisError):
        analysis_data(graph, "nonsense")


def test_default_roots_shrink_on_large_graphs() -> None:
    from programl.view import DEFAULT_MAX_ROOTS, default_max_roots

    assert default_max_roots(106) == DEFAULT_MAX_ROOTS
    assert default_max_roots(5_000) == 20 and default_max_roots(1_000_000) == 10


def test_model_predictions_beside_the_labels(graph) -> None:
    pytest.importorskip("torch")
    from programl.pretrained import pretrained
    from programl.view import analysis_data

    model = pretrained("reachability")
    data = analysis_data(graph, "reachability", model=model, max_roots=4)
    prediction = model.predict(graph, roots=data["roots"], compare=True)
    assert data["model"] == {"name": "reachability", "steps": prediction.steps}
    for r in range(len(data["roots"])):
        for key, expected in (("exact", prediction.exact[r]), ("predicted", prediction.predicted[r])):
            raw = np.frombuffer(base64.b64decode(data[key][r]), np.uint8)
            assert (np.unpackbits(raw, bitorder="little")[: len(graph.node)].astype(bool) == expected).all()
        p = np.frombuffer(base64.b64decode(data["probability"][r]), np.uint8) / 255
        assert np.abs(p - prediction.probabilities[r]).max() <= 0.5 / 255 + 1e-6
    with pytest.raises(programl.exceptions.ProgramlError, match="not a dataflow \\(dominance\\)"):
        analysis_data(graph, "dominance", model=model)


def test_without_model_the_page_shows_what_predict_runs(tmp_path, capsys) -> None:
    """Without ``--model`` the page shows the model ``programl predict`` runs without ``--steps``: an analysis's
    fixed-point variant, not its faithful 30-step model, which misses reachability along paths longer than 30 steps
    (919 of 26,700 labels of examples/quicksort.cc's first 100 roots). ``--model`` still chooses any installed
    model."""
    pytest.importorskip("torch")
    import argparse

    from programl.cli import main
    from programl.cli.view import _load_model

    shown = {
        analysis: _load_model(argparse.Namespace(analysis=analysis, model=None, no_model=False, quiet=True)).name
        for analysis in ("reachability", "dominance", "datadep", "liveness", "subexpressions")
    }
    assert shown == {
        "reachability": "reachability-fixpoint",
        "dominance": "dominance-fixpoint",
        "datadep": "datadep-fixpoint",
        "liveness": "liveness-floods",
        "subexpressions": "subexpressions-fixpoint",
    }
    good = str(REPO_ROOT / "examples" / "dot_product.ll")
    for extra, name in (([], "reachability-fixpoint"), (["--model", "reachability"], "reachability")):
        args = ["view", good, "--analysis", "reachability", "--roots", "2", "-o", str(tmp_path), "-q", *extra]
        assert main(args) == 0
        assert _page_data((tmp_path / "dot_product.html").read_text())["analysis"]["model"]["name"] == name
    capsys.readouterr()


def test_cli_writes_one_page_per_input(tmp_path, clang22, capsys, monkeypatch) -> None:
    from programl.cli import main
    from programl.io import write_graph

    monkeypatch.chdir(REPO_ROOT)
    saved = tmp_path / "dot.ProgramGraph.pb"
    write_graph(str(saved), programl.from_llvm_ir((REPO_ROOT / "examples" / "dot_product.ll").read_text()))
    out = tmp_path / "pages"
    code = main(["view", "examples/fizzbuzz.c", str(saved), "-o", str(out), "--analysis", "dominance", "--no-model"])
    assert code == 0
    printed = capsys.readouterr()
    assert sorted(p.name for p in out.iterdir()) == ["dot.html", "fizzbuzz.html"]
    assert "programl view: 2 pages" in printed.err
    data = _page_data((out / "fizzbuzz.html").read_text())
    assert data["title"] == "examples/fizzbuzz.c" and data["analysis"]["name"] == "dominance"
    assert data["files"] and data["locations"]  # compiled with -g: source lines
    assert _page_data((out / "dot.html").read_text())["files"] == []  # a saved graph: none


def test_cli_errors(tmp_path, clang22, capsys) -> None:
    from programl.cli import main

    bad = tmp_path / "bad.c"
    bad.write_text("int f( {\n")
    good = REPO_ROOT / "examples" / "dot_product.ll"
    assert main(["view", str(bad), str(good), "-o", str(tmp_path), "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:1:" in err and "error" in err and (tmp_path / "dot_product.html").is_file()
    assert main(["view", str(good), "--model", "reachability", "-o", str(tmp_path)]) == 2  # needs --analysis
    assert "need --analysis" in capsys.readouterr().err
    assert main(["view", str(good), "--analysis", "liveness", "--roots", "0", "-o", str(tmp_path)]) == 2
    capsys.readouterr()
    assert main(["view", str(good), "--analysis", "liveness", "--root", "0", "--no-model", "-o", str(tmp_path)]) == 1
    assert "not an eligible liveness root" in capsys.readouterr().err


def test_cli_without_torch_shows_the_exact_labels(tmp_path, clang22) -> None:
    """Installed without the ``ml`` extra, ``programl view --analysis`` still writes the page, with the exact labels
    and a one-line note; ``--model`` says which extra to install."""
    from tests.cli.test_without_torch import programl as without_torch

    good = str(REPO_ROOT / "examples" / "dot_product.ll")
    result = without_torch("view", good, "--analysis", "reachability", "-o", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "showing the exact labels only" in result.stderr and "pip install 'programl[ml]'" in result.stderr
    data = _page_data((tmp_path / "dot_product.html").read_text())
    assert data["analysis"]["model"] is None and data["analysis"]["exact"]
    result = without_torch("view", good, "--analysis", "reachability", "--model", "reachability", "-o", str(tmp_path))
    assert result.returncode == 1 and "pip install 'programl[ml]'" in result.stderr
