"""Fixtures for the data-flow tests: graphs of real programs, from both builders.

* ``reference_graphs``: the original ProGraML 0.3.2 ``llvm2graph-10`` (found by
  :func:`tests.graph_builder.reference.find_llvm2graph`; ``make reference``) on the C fixtures
  ``tests/data/dataflow_*.c`` (compiled with clang-14) and on a sample of the legacy IR corpus.
* ``own_graphs``: this project's builder (``programl.from_llvm_ir``) on the same C fixtures (clang-22) and the same
  legacy IR sample.

Each skips what it cannot build; the tests compare every label with the literal reference implementation, so
graphs from either builder serve.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile

import pytest

from programl.proto import ProgramGraph
from tests.conftest import SHARED_DATA, TESTS_DATA
from tests.graph_builder.reference import find_clang14, find_llvm2graph, llvm10_ir, reference_graph

C_FIXTURES = sorted(TESTS_DATA.glob("dataflow_*.c"))
LEGACY_SAMPLE = [f"{i:03d}.ll" for i in range(0, 1000, 50)]  # 20 of the 1,000 files


def _legacy_sample() -> dict[str, str]:
    tarball = SHARED_DATA / "legacy-ir" / "llvm_ir.tar.bz2"
    if not tarball.is_file():
        return {}
    with tarfile.open(tarball) as tar:
        return {f"legacy/{name}": tar.extractfile(name).read().decode() for name in LEGACY_SAMPLE}


@pytest.fixture(scope="session")
def reference_graphs() -> dict[str, ProgramGraph]:
    """Graphs built by the original ProGraML from the C fixtures and a legacy-IR sample."""
    binary = find_llvm2graph()
    if binary is None:
        pytest.skip("reference llvm2graph-10 not found (make reference, or set PROGRAML_LLVM2GRAPH)")
    sources = {}
    if find_clang14():
        sources = {source.name: llvm10_ir(source) for source in C_FIXTURES}
    sources.update(_legacy_sample())
    if not sources:
        pytest.skip("neither clang-14 nor the legacy IR corpus is available")
    return {name: reference_graph(ir, binary) for name, ir in sources.items()}


@pytest.fixture(scope="session")
def own_graphs(tmp_path_factory) -> dict[str, ProgramGraph]:
    """Graphs built by this project's builder from the C fixtures (clang-22) and the legacy-IR sample."""
    import programl

    try:
        from_llvm_ir = programl.from_llvm_ir
    except (ImportError, AttributeError):
        pytest.skip("programl.from_llvm_ir (the LLVM 22 graph builder) is not available")
    sources = _legacy_sample()
    clang22 = shutil.which("clang-22")
    tmp = tmp_path_factory.mktemp("own-ir")
    for source in C_FIXTURES if clang22 else []:
        ll = tmp / (source.stem + ".ll")
        subprocess.run([clang22, "-S", "-emit-llvm", "-O0", "-w", str(source), "-o", str(ll)], check=True)
        sources[source.name] = ll.read_text()
    if not sources:
        pytest.skip("neither clang-22 nor the legacy IR corpus is available")
    return {name: from_llvm_ir(ir) for name, ir in sources.items()}
