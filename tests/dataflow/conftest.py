"""Fixtures for the data-flow tests: helpers to build ProgramGraphs by hand, and graphs of real programs.

Real graphs come from whichever builder is present: ``programl.from_llvm_ir`` (this project's LLVM 22 builder) on
the C fixtures compiled with clang-22, and the original ProGraML 0.3.2 ``llvm2graph-10`` on the same C fixtures
compiled with clang-14 plus a sample of the legacy IR corpus in ``shared/data/legacy-ir``. Each source skips when
its tools are absent; the tests compare labels with the literal reference, so any builder's graphs serve.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from programl.proto import ProgramGraph

TESTS_DATA = Path(__file__).resolve().parents[1] / "data"
C_FIXTURES = sorted(TESTS_DATA.glob("dataflow_*.c"))
LEGACY_SAMPLE = [f"{i:03d}.ll" for i in range(0, 1000, 50)]  # 20 files


def _find_llvm2graph() -> str | None:
    candidates = [os.environ.get("PROGRAML_REFERENCE_LLVM2GRAPH", "")]
    root = Path(__file__).resolve().parents[2]
    for venv in (root / ".venv-ref", root.parent / "main" / ".venv-ref", Path("/tmp/refvenv")):
        candidates += [str(p) for p in venv.glob("lib/python3*/site-packages/programl/bin/llvm2graph-10")]
    candidates.append(shutil.which("llvm2graph-10") or "")
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


@pytest.fixture(scope="session")
def llvm2graph10() -> str:
    """The original ProGraML 0.3.2 ``llvm2graph-10`` binary; skips when absent (``make reference``)."""
    path = _find_llvm2graph()
    if path is None:
        pytest.skip("reference llvm2graph-10 not found (make reference, or set PROGRAML_REFERENCE_LLVM2GRAPH)")
    return path


def _reference_graph(binary: str, ir: str) -> ProgramGraph:
    proc = subprocess.run([binary, "--stdout_fmt=pb"], input=ir.encode(), capture_output=True, timeout=120)
    if proc.returncode:
        raise RuntimeError(proc.stderr.decode(errors="replace")[:500])
    return ProgramGraph.FromString(proc.stdout)


@pytest.fixture(scope="session")
def reference_graphs(llvm2graph10, tmp_path_factory) -> dict[str, ProgramGraph]:
    """Graphs built by the original ProGraML from the C fixtures (clang-14) and a legacy-IR sample."""
    out: dict[str, ProgramGraph] = {}
    clang14 = shutil.which("clang-14")
    tmp = tmp_path_factory.mktemp("reference-ir")
    for source in C_FIXTURES if clang14 else []:
        ll = tmp / (source.stem + ".ll")
        subprocess.run(
            [clang14, "-S", "-emit-llvm", "-O0", "-Xclang", "-disable-noundef-analysis", str(source), "-o", str(ll)],
            check=True,
            capture_output=True,
        )
        ir = re.sub(r"\b(noundef|mustprogress|willreturn) ?", "", ll.read_text())
        out[source.name] = _reference_graph(llvm2graph10, ir)
    shared = Path(os.environ.get("PROGRAML_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
    tarball = shared / "legacy-ir" / "llvm_ir.tar.bz2"
    if tarball.is_file():
        with tarfile.open(tarball) as tar:
            for name in LEGACY_SAMPLE:
                ir = tar.extractfile(name).read().decode()
                out[f"legacy/{name}"] = _reference_graph(llvm2graph10, ir)
    if not out:
        pytest.skip("neither clang-14 nor the legacy IR corpus is available")
    return out


@pytest.fixture(scope="session")
def own_graphs(tmp_path_factory) -> dict[str, ProgramGraph]:
    """Graphs built by this project's builder (``programl.from_llvm_ir``) from the C fixtures via clang-22."""
    import programl

    try:
        from_llvm_ir = programl.from_llvm_ir
    except (ImportError, AttributeError):
        pytest.skip("programl.from_llvm_ir (the LLVM 22 graph builder) is not available yet")
    clang22 = shutil.which("clang-22")
    if not clang22:
        pytest.skip("clang-22 not installed")
    tmp = tmp_path_factory.mktemp("own-ir")
    out = {}
    for source in C_FIXTURES:
        ll = tmp / (source.stem + ".ll")
        subprocess.run([clang22, "-S", "-emit-llvm", "-O0", str(source), "-o", str(ll)], check=True)
        out[source.name] = from_llvm_ir(ll.read_text())
    return out
