"""Fixtures for the io tests: the example graph, and real graphs and outputs of the original ProGraML 0.3.2 tools.

The original tools (``llvm2graph-10``, ``graph2json``, ``graph2dot``) are looked up in
``$PROGRAML_REFERENCE_BIN`` (default: the ``programl`` 0.3.2 wheel unpacked in ``/tmp/refvenv``); C sources are
compiled to LLVM 10-readable IR with ``clang-14`` (``$PROGRAML_CLANG14``). Tests that need them skip when absent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from io_helpers import example_graph, run_tool

from programl.proto import ProgramGraph

TESTS_DATA = Path(__file__).resolve().parents[1] / "data"
REFERENCE_BIN = Path(os.environ.get("PROGRAML_REFERENCE_BIN", "/tmp/refvenv/lib/python3.11/site-packages/programl/bin"))
#: C fixtures compiled at each optimisation level, and hand-written LLVM 10 IR.
C_SOURCES = ("io_loops.c", "io_calls.c")
OPT_LEVELS = ("-O0", "-O2")
LL_SOURCES = ("io_parallel.ll",)


@pytest.fixture
def graph() -> ProgramGraph:
    return example_graph()


def _reference_tool(name: str) -> str:
    path = REFERENCE_BIN / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"reference ProGraML 0.3.2 tool {name} not found in {REFERENCE_BIN}")
    return str(path)


@pytest.fixture(scope="session")
def llvm2graph() -> str:
    return _reference_tool("llvm2graph-10")


@pytest.fixture(scope="session")
def graph2json() -> str:
    return _reference_tool("graph2json")


@pytest.fixture(scope="session")
def graph2dot() -> str:
    return _reference_tool("graph2dot")


def _llvm10_ir(source: Path, opt: str, clang: str) -> str:
    process = subprocess.run(
        [clang, "-S", "-emit-llvm", opt, "-Xclang", "-disable-noundef-analysis", str(source), "-o", "-"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert process.returncode == 0, process.stderr.decode(errors="replace")
    # LLVM 10 does not know these attributes (SPEC, "The original ProGraML as an oracle").
    return re.sub(r"\b(noundef|mustprogress|willreturn) ?", "", process.stdout.decode())


@pytest.fixture(scope="session")
def reference_graphs(llvm2graph) -> dict[str, ProgramGraph]:
    """name -> graph built by the original ``llvm2graph-10`` from the IR fixture and (with clang-14) the C fixtures."""
    irs = {name: (TESTS_DATA / name).read_text() for name in LL_SOURCES}
    clang = os.environ.get("PROGRAML_CLANG14") or shutil.which("clang-14")
    if clang:
        for name in C_SOURCES:
            for opt in OPT_LEVELS:
                irs[f"{name}{opt}"] = _llvm10_ir(TESTS_DATA / name, opt, clang)
    graphs = {}
    for name, ir in irs.items():
        graph = ProgramGraph()
        graph.ParseFromString(run_tool(llvm2graph, ir.encode(), "--stdout_fmt=pb"))
        graphs[name] = graph
    return graphs
