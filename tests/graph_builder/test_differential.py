"""Differential tests against the original builder, ProGraML 0.3.2's ``llvm2graph-10`` (issue: graph library).

Both builders read the same text (clang-14 IR made readable by LLVM 10, see programl.graph_builder.reference).
Graphs are compared as multisets of canonical nodes and edges after the Policy normalisation (pointer texts,
intrinsic names) and the named LLVM 10 -> 22 upgrade effects (programl.graph_builder.compare.UPGRADE_EFFECTS).
The target is 100 % agreement. Skips when the reference binary or clang-14 is absent (``make reference``).
"""

from __future__ import annotations

import tarfile
from collections import Counter
from pathlib import Path

import pytest

from programl.graph_builder.compare import UPGRADE_EFFECTS, apply_llvm22_upgrade, compare_graphs
from programl.graph_builder.llvm import graph_from_ir
from programl.graph_builder.reference import find_clang14, find_llvm2graph, llvm10_ir, reference_graph

PROGRAMS = sorted((Path(__file__).resolve().parents[1] / "data" / "programs").glob("*.c*"))
REFERENCE = find_llvm2graph()

pytestmark = [
    pytest.mark.reference,
    pytest.mark.skipif(REFERENCE is None, reason="llvm2graph-10 not installed (make reference)"),
]


def differences(ir: str) -> tuple[object, Counter]:
    reference, effects = apply_llvm22_upgrade(reference_graph(ir, REFERENCE))
    return compare_graphs(reference, graph_from_ir(ir)), effects


def test_there_are_at_least_30_programs() -> None:
    assert len(PROGRAMS) >= 30


@pytest.mark.skipif(find_clang14() is None, reason="clang-14 not installed (apt-get install clang-14)")
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_program_matches_reference(program: Path, opt: str) -> None:
    difference, effects = differences(llvm10_ir(program, [opt]))
    assert not difference, difference.summary()
    assert set(effects) <= set(UPGRADE_EFFECTS)


def test_legacy_ir_matches_reference(shared_data) -> None:
    """Every one of the 1,000 LLVM 3.7 IR files of ../shared/data/legacy-ir."""
    failures = []
    count = 0
    with tarfile.open(shared_data / "legacy-ir" / "llvm_ir.tar.bz2") as tar:
        for member in tar.getmembers():
            if not member.name.endswith(".ll"):
                continue
            count += 1
            difference, _ = differences(tar.extractfile(member).read().decode("utf-8"))
            if difference:
                failures.append(f"{member.name}: {difference.summary(2)}")
    assert count == 1000
    assert not failures, f"{len(failures)} of {count} differ:\n" + "\n".join(failures[:10])
