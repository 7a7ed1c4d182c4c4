"""The one home of the analysis names (programl/dataflow/names.py; SPEC §4.7): no module of the package spells the
list out again, the package imports it without the analyses or numpy, and the lazy package keeps its public API."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import programl.dataflow as df
from programl.dataflow.analyze import _CLASSES
from programl.dataflow.names import ANALYSES, check_analysis

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "programl"
HOME = PACKAGE / "dataflow" / "names.py"


def _name_lists(path: Path) -> list[int]:
    """Lines of the tuple, list or set literals in ``path`` that hold every analysis name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            strings = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if strings >= set(ANALYSES):
                lines.append(node.lineno)
    return lines


def _run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return result.stdout.strip()


def test_the_names_in_the_reference_order() -> None:
    assert ANALYSES == ("reachability", "dominance", "datadep", "liveness", "subexpressions")
    assert df.ANALYSES is ANALYSES


def test_no_second_list_of_the_names() -> None:
    sources = sorted(PACKAGE.rglob("*.py"))
    assert HOME in sources and _name_lists(HOME), "the home no longer holds the list: update this test"
    copies = {str(p.relative_to(ROOT)): _name_lists(p) for p in sources if p != HOME}
    assert {path: lines for path, lines in copies.items() if lines} == {}


def test_the_detector_sees_a_copy(tmp_path: Path) -> None:
    copy = tmp_path / "copy.py"
    copy.write_text("NAMES = [\n    'subexpressions', 'liveness', 'datadep', 'dominance', 'reachability', 'x'\n]\n")
    assert _name_lists(copy) == [1]
    copy.write_text("PAPER = {'reachability': 1, 'dominance': 2, 'datadep': 3, 'liveness': 4, 'subexpressions': 5}\n")
    assert _name_lists(copy) == []


def test_every_analysis_has_its_class() -> None:
    assert tuple(_CLASSES) == ANALYSES
    assert all(df.analysis_class(name).name == name for name in ANALYSES)


def test_check_analysis() -> None:
    assert check_analysis("liveness") == "liveness"
    with pytest.raises(ValueError, match="unknown analysis 'domtree'; expected one of reachability, dominance,"):
        check_analysis("domtree")
    with pytest.raises(df.AnalysisError, match=r"unknown analysis \['x'\]"):
        check_analysis(["x"], df.AnalysisError)


def test_the_names_cost_no_analysis() -> None:
    code = (
        "import sys, programl.dataflow, programl.dataflow.names, programl.cli.analyze, programl.cli.dataset; "
        "print(sorted(m for m in ('numpy', 'programl.dataflow.analyze', 'programl.dataflow.columnar') "
        "if m in sys.modules))"
    )
    assert _run(code) == "[]"


def test_lazy_package_keeps_its_api() -> None:
    assert set(df.__all__) == {"ANALYSES", "AnalysisError", *df._EXPORTS}
    assert set(df.__all__) <= set(dir(df))
    for name in df.__all__:
        assert getattr(df, name) is not None, name
    with pytest.raises(AttributeError, match="not_a_thing"):
        df.not_a_thing  # noqa: B018


@pytest.mark.parametrize(
    "first",
    ["from programl.dataflow.analyze import select_roots", "import programl.dataflow as df; df.GraphView", "pass"],
)
def test_analyze_stays_the_function(first: str) -> None:
    # importing the submodule `analyze` first (in a fresh process) must not turn the package's `analyze` into it
    code = (
        f"{first}\n"
        "import programl.dataflow as df\n"
        "from programl.dataflow import analyze\n"
        "import programl.dataflow.analyze as m\n"
        "print(callable(df.analyze), analyze is df.analyze, m is df.analyze, df.analysis_class('dominance').name)"
    )
    assert _run(code) == "True True True dominance"
