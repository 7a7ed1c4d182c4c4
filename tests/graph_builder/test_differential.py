"""Differential tests against the original builder, ProGraML 0.3.2's ``llvm2graph-10`` (issue: graph library).

Both builders read the same text (clang-14 IR made readable by LLVM 10, see tests/graph_builder/reference.py).
Graphs are compared as multisets of canonical nodes and edges after the Policy normalisation (pointer texts,
intrinsic names) and the named LLVM 10 -> 22 upgrade effects (programl.graph_builder.compare.UPGRADE_EFFECTS).
The target is 100 % agreement. Skips when the reference binary or clang-14 is absent (``make reference``).
"""

from __future__ import annotations

import tarfile
from collections import Counter
from pathlib import Path

import pytest

from programl.graph_builder.compare import (
    UPGRADE_EFFECTS,
    _zero_index_gep,
    apply_llvm22_upgrade,
    compare_graphs,
    normalize_type_text,
)
from programl.graph_builder.llvm import graph_from_ir
from tests.graph_builder.reference import find_clang14, find_llvm2graph, llvm10_ir, reference_graph

PROGRAMS = sorted((Path(__file__).resolve().parents[1] / "data" / "programs").glob("*.c*"))
REFERENCE = find_llvm2graph()

pytestmark = pytest.mark.reference
needs_reference = pytest.mark.skipif(REFERENCE is None, reason="llvm2graph-10 not installed (make reference)")


def differences(ir: str) -> tuple[object, Counter]:
    reference, effects = apply_llvm22_upgrade(reference_graph(ir, REFERENCE))
    return compare_graphs(reference, graph_from_ir(ir)), effects


def test_there_are_at_least_30_programs() -> None:
    assert len(PROGRAMS) >= 30


@needs_reference
@pytest.mark.skipif(find_clang14() is None, reason="clang-14 not installed (apt-get install clang-14)")
@pytest.mark.parametrize("opt", ["-O0", "-O2", "-g"])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_program_matches_reference(program: Path, opt: str) -> None:
    difference, effects = differences(llvm10_ir(program, [opt]))
    assert not difference, difference.summary()
    assert set(effects) <= set(UPGRADE_EFFECTS)


@needs_reference
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


# -- the rules for effects seen on C++ and Cython-generated C at -O2 (issue 9 item 8), each on a small example ------


def test_quoted_class_names_with_colons_read_ptr() -> None:
    """C++ class names are quoted (``%"class.a::b::C"``); ``::`` and template arguments must not cut the type."""
    assert normalize_type_text('[4 x %"class.geo::shapes::Shape"*]') == "[4 x ptr]"
    assert normalize_type_text('<2 x %"class.a::b::C"*>') == "<2 x ptr>"
    assert normalize_type_text('{ %"class.a::b::C"*, i32 }') == "{ ptr, i32 }"
    assert normalize_type_text('[2 x %"class.geo::Stack<int, 4>"**]') == "[2 x ptr]"
    assert normalize_type_text('%"class.a::b::C"*') == "ptr"
    assert normalize_type_text("<4 x float>") == "<4 x float>"


def test_zero_index_gep_instruction() -> None:
    assert _zero_index_gep("%2 = getelementptr inbounds [16 x i8], [16 x i8]* %1, i64 0, i64 0")
    assert _zero_index_gep("%2 = getelementptr inbounds [16 x i8], [16 x i8]* %1, i64 0, i64 0, !dbg !12")
    assert not _zero_index_gep("%2 = getelementptr inbounds [16 x i8], [16 x i8]* %1, i64 0, i64 4")
    assert not _zero_index_gep("%2 = getelementptr inbounds %struct.S, %struct.S* %1, i32 0, i32 1")


LIFETIME_THROUGH_GEP = """
define void @f() {
  %1 = alloca [16 x i8], align 16
  %2 = getelementptr inbounds [16 x i8], [16 x i8]* %1, i64 0, i64 0
  call void @llvm.lifetime.start.p0i8(i64 16, i8* %2)
  call void @use(i8* %2)
  call void @llvm.lifetime.end.p0i8(i64 16, i8* %2)
  ret void
}
declare void @llvm.lifetime.start.p0i8(i64 immarg, i8* nocapture)
declare void @llvm.lifetime.end.p0i8(i64 immarg, i8* nocapture)
declare void @use(i8*)
"""

BITCAST_OF_FIELD_GEP = """
%struct.S = type { i32, i8*, i8* }
@g = global %struct.S zeroinitializer
define i8** @f() {
  ret i8** getelementptr inbounds (%struct.S, %struct.S* @g, i64 0, i32 1)
}
define i32** @h() {
  ret i32** bitcast (i8** getelementptr inbounds (%struct.S, %struct.S* @g, i64 0, i32 1) to i32**)
}
"""


@needs_reference
def test_lifetime_markers_are_stripped_through_zero_index_geps() -> None:
    """LLVM 22's upgrade hands ``llvm.lifetime.start`` the ``alloca`` behind an all-zero GEP (stripPointerCasts)."""
    reference = reference_graph(LIFETIME_THROUGH_GEP, REFERENCE)
    ours = graph_from_ir(LIFETIME_THROUGH_GEP)

    # LLVM 22: the markers' variables come from the alloca; the call to @use still takes the GEP's result.
    def consumer(node) -> str:
        text = node.features.feature["full_text"].bytes_list.value[0].decode()
        return "lifetime" if "@llvm.lifetime" in text else "use" if "@use" in text else node.text

    producers = sorted(
        (ours.node[def_edge.source].text, consumer(ours.node[use_edge.target]))
        for def_edge in ours.edge
        if ours.node[def_edge.target].type == 1
        for use_edge in ours.edge
        if use_edge.source == def_edge.target
    )
    assert producers == [
        ("alloca", "getelementptr"),
        ("alloca", "lifetime"),
        ("alloca", "lifetime"),
        ("getelementptr", "use"),
    ]
    assert compare_graphs(reference, ours)
    upgraded, effects = apply_llvm22_upgrade(reference)
    assert effects["lifetime-gep-stripping"] == 2 and effects["lifetime-size-operand"] == 2
    assert not compare_graphs(upgraded, ours), compare_graphs(upgraded, ours).summary()


@needs_reference
def test_pointer_bitcast_of_a_field_gep_is_the_gep() -> None:
    """``bitcast (getelementptr (%struct.S, @g, 0, 1) to i32**)`` is that GEP in LLVM 22: one CONSTANT node."""
    reference = reference_graph(BITCAST_OF_FIELD_GEP, REFERENCE)
    ours = graph_from_ir(BITCAST_OF_FIELD_GEP)
    assert sum(n.type == 2 for n in reference.node) == 2
    assert sum(n.type == 2 for n in ours.node) == 1
    upgraded, effects = apply_llvm22_upgrade(reference)
    assert effects["pointer-bitcast-folding"] == 1
    assert not compare_graphs(upgraded, ours), compare_graphs(upgraded, ours).summary()


# -- C++ exceptions (invoke, landingpad with typed and catch-all clauses, rethrow, resume): no effect of their own ----

CXX_EXCEPTIONS = """
@_ZTVN10__cxxabiv117__class_type_infoE = external global i8*
@_ZTS1E = linkonce_odr constant [3 x i8] c"1E\\00"
@_ZTI1E = linkonce_odr constant { i8*, i8* } { i8* bitcast (i8** getelementptr inbounds (i8*, i8** \
@_ZTVN10__cxxabiv117__class_type_infoE, i64 2) to i8*), i8* getelementptr inbounds ([3 x i8], [3 x i8]* @_ZTS1E, \
i32 0, i32 0) }
define i32 @_Z1fi(i32 %0) personality i8* bitcast (i32 (...)* @__gxx_personality_v0 to i8*) {
  invoke void @_Z9may_throwi(i32 %0)
          to label %15 unwind label %2
2:
  %3 = landingpad { i8*, i32 }
          catch i8* bitcast ({ i8*, i8* }* @_ZTI1E to i8*)
          catch i8* null
  %4 = extractvalue { i8*, i32 } %3, 0
  %5 = extractvalue { i8*, i32 } %3, 1
  %6 = tail call i32 @llvm.eh.typeid.for(i8* bitcast ({ i8*, i8* }* @_ZTI1E to i8*))
  %7 = icmp eq i32 %5, %6
  %8 = tail call i8* @__cxa_begin_catch(i8* %4)
  br i1 %7, label %9, label %12
9:
  %10 = bitcast i8* %8 to i32*
  %11 = load i32, i32* %10, align 4
  tail call void @__cxa_end_catch()
  br label %15
12:
  invoke void @__cxa_rethrow()
          to label %17 unwind label %13
13:
  %14 = landingpad { i8*, i32 }
          cleanup
  tail call void @__cxa_end_catch()
  resume { i8*, i32 } %14
15:
  %16 = phi i32 [ %11, %9 ], [ 0, %1 ]
  ret i32 %16
17:
  unreachable
}
declare void @_Z9may_throwi(i32)
declare i32 @__gxx_personality_v0(...)
declare i32 @llvm.eh.typeid.for(i8*)
declare i8* @__cxa_begin_catch(i8*)
declare void @__cxa_rethrow()
declare void @__cxa_end_catch()
"""


@needs_reference
def test_cxx_exceptions_need_no_effect_of_their_own() -> None:
    """What clang-14 makes of ``try { ... } catch (const E &) {...} catch (...) { throw; }`` at -O2 (the shape of
    pyclipper's and marisa-trie's C++ in the differential corpus): both builders make the landingpad's clauses its
    CONSTANT operands (typed catch at position 0, catch-all ``null`` at 1) and leave the personality function out;
    the only LLVM 22 effects are the typeinfo's pointer bitcast and ``llvm.eh.typeid.for.p0``."""
    reference = reference_graph(CXX_EXCEPTIONS, REFERENCE)
    ours = graph_from_ir(CXX_EXCEPTIONS)

    def clauses(graph) -> list[tuple[int, str, str]]:
        def clause(node) -> str:  # the typeinfo `@_ZTI1E` (LLVM 10: a bitcast of it), or the catch-all `null`
            text = node.features.feature["full_text"].bytes_list.value[0].decode()
            return "typeinfo" if "@_ZTI1E" in text else text

        return sorted(
            (edge.position, normalize_type_text(graph.node[edge.source].text), clause(graph.node[edge.source]))
            for edge in graph.edge
            if edge.flow == 1 and graph.node[edge.target].text == "landingpad"
        )

    assert clauses(ours) == [(0, "ptr", "typeinfo"), (1, "ptr", "ptr null")]
    assert clauses(reference) == [(0, "ptr", "typeinfo"), (1, "ptr", "i8* null")]
    for graph in (reference, ours):
        texts = Counter(node.text for node in graph.node if node.type == 0)
        assert texts["invoke"] == 2 and texts["landingpad"] == 2 and texts["resume"] == 1
        assert not any("personality" in node.text for node in graph.node)
    upgraded, effects = apply_llvm22_upgrade(reference)
    assert set(effects) == {"pointer-bitcast-folding", "intrinsic-rename"}, effects
    assert not compare_graphs(upgraded, ours), compare_graphs(upgraded, ours).summary()


# -- constant casts to pointer types: `(int *)1` and `(char *)1` are one constant in LLVM 22 ------------------------

POINTER_CASTS_OF_ONE = """
define void @f(i32** %p, i8** %q, i8** %r) {
  store i32* inttoptr (i64 1 to i32*), i32** %p, align 8
  store i8* inttoptr (i64 1 to i8*), i8** %q, align 8
  store i8* inttoptr (i64 2 to i8*), i8** %r, align 8
  ret void
}
"""


@needs_reference
def test_pointer_casts_of_one_value_are_one_constant() -> None:
    """``(int *)1`` and ``(char *)1`` are two CONSTANT nodes under typed pointers and one ``ptr inttoptr (i64 1 to
    ptr)`` in LLVM 22 (pointer-constant-merging); ``(char *)2`` stays a constant of its own."""
    reference = reference_graph(POINTER_CASTS_OF_ONE, REFERENCE)
    ours = graph_from_ir(POINTER_CASTS_OF_ONE)
    assert sum(n.type == 2 for n in reference.node) == 3
    assert sum(n.type == 2 for n in ours.node) == 2
    assert compare_graphs(reference, ours)
    upgraded, effects = apply_llvm22_upgrade(reference)
    assert effects["pointer-constant-merging"] == 1
    assert not compare_graphs(upgraded, ours), compare_graphs(upgraded, ours).summary()
