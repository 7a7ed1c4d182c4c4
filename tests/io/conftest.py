"""Fixtures for the io tests: the example graph, and real graphs and outputs of the original ProGraML 0.3.2 tools.

The original tools (``llvm2graph-10``, ``graph2json``, ``graph2dot``) are found by
:func:`tests.graph_builder.reference.find_reference_tool` (``make reference`` installs them); C sources are
compiled to LLVM 10-readable IR with ``clang-14``. Tests that need them skip when absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from programl.proto import ProgramGraph
from tests.graph_builder.reference import find_clang14, find_reference_tool, llvm10_ir
from tests.io.io_helpers import example_graph, run_tool

TESTS_DATA = Path(__file__).resolve().parents[1] / "data"
#: C fixtures compiled at each optimisation level, and hand-written LLVM 10 IR.
C_SOURCES = ("io_loops.c", "io_calls.c")
OPT_LEVELS = ("-O0", "-O2")
LL_SOURCES = ("io_parallel.ll",)


@pytest.fixture
def graph() -> ProgramGraph:
    return example_graph()


def _reference_tool(name: str) -> str:
    path = find_reference_tool(name)
    if path is None:
        pytest.skip(f"reference ProGraML 0.3.2 tool {name} not found (make reference)")
    return path


@pytest.fixture(scope="session")
def llvm2graph() -> str:
    return _reference_tool("llvm2graph-10")


@pytest.fixture(scope="session")
def graph2json() -> str:
    return _reference_tool("graph2json")


@pytest.fixture(scope="session")
def graph2dot() -> str:
    return _reference_tool("graph2dot")


@pytest.fixture(scope="session")
def reference_graphs(llvm2graph) -> dict[str, ProgramGraph]:
    """name -> graph built by the original ``llvm2graph-10`` from the IR fixture and (with clang-14) the C fixtures."""
    irs = {name: (TESTS_DATA / name).read_text() for name in LL_SOURCES}
    if find_clang14():
        for name in C_SOURCES:
            for opt in OPT_LEVELS:
                irs[f"{name}{opt}"] = llvm10_ir(TESTS_DATA / name, [opt])
    graphs = {}
    for name, ir in irs.items():
        graph = ProgramGraph()
        graph.ParseFromString(run_tool(llvm2graph, ir.encode(), "--stdout_fmt=pb"))
        graphs[name] = graph
    return graphs
