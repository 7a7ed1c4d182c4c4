"""LLVM 10 -> LLVM 22: the intrinsics whose signature changed, each against the original ``llvm2graph-10``.

One differential test per changed intrinsic (or family) of LLVM's own upgrade list (``llvm/lib/IR/AutoUpgrade.cpp``,
LLVM 11 to 22): the graph of the original builder, rewritten by the named effects of
``programl.graph_builder.compare.UPGRADE_EFFECTS``, must equal ours. Intrinsics LLVM 22 cannot read have a test that
they do not reach a graph. The table in docs/llvm22.md names the test of each intrinsic. Differential tests skip
when the reference binary (``make reference``) or clang-14 is absent.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from programl.exceptions import GraphCreationError
from programl.graph_builder.compare import (
    UPGRADE_EFFECTS,
    apply_llvm22_upgrade,
    compare_graphs,
    normalize_function_name,
)
from programl.graph_builder.llvm import graph_from_ir
from tests.graph_builder.listing import full_text
from tests.graph_builder.reference import find_clang14, find_llvm2graph, llvm10_ir, reference_graph

REFERENCE = find_llvm2graph()

needs_reference = pytest.mark.skipif(REFERENCE is None, reason="llvm2graph-10 not installed (make reference)")
needs_clang14 = pytest.mark.skipif(find_clang14() is None, reason="clang-14 not installed (apt-get install clang-14)")


def upgraded_and_ours(ir: str) -> tuple[object, object, Counter]:
    """(the original's graph after the LLVM 22 effects, our graph, how often each effect applied)."""
    upgraded, effects = apply_llvm22_upgrade(reference_graph(ir, REFERENCE))
    assert set(effects) <= set(UPGRADE_EFFECTS)
    return upgraded, graph_from_ir(ir), effects


def assert_agrees(ir: str) -> Counter:
    upgraded, ours, effects = upgraded_and_ours(ir)
    difference = compare_graphs(upgraded, ours)
    assert not difference, difference.summary()
    return effects


def uses(graph, callee: str) -> list[tuple[int, str, str]]:
    """(position, source type text, source full text) of the DATA operands of the calls to ``callee``."""
    calls = {i for i, n in enumerate(graph.node) if n.text == "call" and f"@{callee}(" in (full_text(n) or "")}
    return sorted(
        (e.position, graph.node[e.source].text, full_text(graph.node[e.source]) or "")
        for e in graph.edge
        if e.flow == 1 and e.target in calls
    )


def constants(graph) -> list[str]:
    return sorted(full_text(n) for n in graph.node if n.type == 2)


# -- the three reported differences -----------------------------------------------------------------------------

VA_COPY = """
define void @f(i8* %a, i8* %b) {
  call void @llvm.va_copy(i8* %a, i8* %b)
  ret void
}
declare void @llvm.va_copy(i8*, i8*)
"""


def test_va_copy_is_overloaded_on_one_pointer_type() -> None:
    """LLVM 22 (clang-22 and llvmlite alike) names it ``llvm.va_copy.p0``: both operands share one pointer type."""
    assert normalize_function_name("llvm.va_copy") == "llvm.va_copy.p0"
    assert normalize_function_name("llvm.va_copy.p0") == "llvm.va_copy.p0"
    assert [f.name for f in graph_from_ir(VA_COPY).function] == ["f", "llvm.va_copy.p0"]


@needs_reference
def test_va_copy_agrees_with_the_original() -> None:
    assert assert_agrees(VA_COPY) == Counter({"intrinsic-rename": 1})


AGGREGATES_OF_POINTERS = """
define { i8*, i8 } @f(i8* %p) {
  %a = insertvalue { i8*, i8 } undef, i8* %p, 0
  ret { i8*, i8 } %a
}
define { i32*, i8 } @g(i32* %p) {
  %a = insertvalue { i32*, i8 } undef, i32* %p, 0
  ret { i32*, i8 } %a
}
"""

AGGREGATE_KIN = """
@g = global i32 0
@h = global i8 0
define void @f(<2 x i8*>* %v, <2 x i32*>* %w, [3 x i8*]* %a, [3 x double*]* %b, { i32*, i32 }* %s, { i8*, i32 }* %t) {
  store <2 x i8*> undef, <2 x i8*>* %v
  store <2 x i32*> undef, <2 x i32*>* %w
  store [3 x i8*] zeroinitializer, [3 x i8*]* %a
  store [3 x double*] zeroinitializer, [3 x double*]* %b
  store { i32*, i32 } { i32* @g, i32 1 }, { i32*, i32 }* %s
  store { i8*, i32 } { i8* bitcast (i32* @g to i8*), i32 1 }, { i8*, i32 }* %t
  store { i8*, i32 } { i8* @h, i32 1 }, { i8*, i32 }* %t
  ret void
}
"""


@needs_reference
def test_aggregates_differing_only_in_pointer_types_are_one_constant() -> None:
    """``{ i8*, i8 } undef`` and ``{ i32*, i8 } undef`` are two CONSTANT nodes under typed pointers and one
    ``{ ptr, i8 } undef`` in LLVM 22 (aggregate-constant-merging)."""
    upgraded, ours, effects = upgraded_and_ours(AGGREGATES_OF_POINTERS)
    assert constants(reference_graph(AGGREGATES_OF_POINTERS, REFERENCE)) == ["{ i32*, i8 } undef", "{ i8*, i8 } undef"]
    assert constants(ours) == ["{ ptr, i8 } undef"]
    assert effects == Counter({"aggregate-constant-merging": 1})
    assert not compare_graphs(upgraded, ours), compare_graphs(upgraded, ours).summary()


@needs_reference
def test_vectors_arrays_and_structs_of_pointers_merge_too() -> None:
    """``<2 x T*> undef``, ``[N x T*] zeroinitializer`` and struct literals whose pointers are one global (directly or
    through a pointer ``bitcast``) merge; a struct of another global stays a constant of its own."""
    upgraded, ours, effects = upgraded_and_ours(AGGREGATE_KIN)
    assert constants(ours) == [
        "<2 x ptr> undef",
        "[3 x ptr] zeroinitializer",
        "{ ptr, i32 } { ptr @g, i32 1 }",
        "{ ptr, i32 } { ptr @h, i32 1 }",
    ]
    assert effects["aggregate-constant-merging"] == 3
    assert not compare_graphs(upgraded, ours), compare_graphs(upgraded, ours).summary()


MASKED_STORE = """
define void @f(<4 x i32> %v, <4 x i32>* %p, <4 x i1> %m) {
  call void @llvm.masked.store.v4i32.p0v4i32(<4 x i32> %v, <4 x i32>* %p, i32 4, <4 x i1> %m)
  ret void
}
declare void @llvm.masked.store.v4i32.p0v4i32(<4 x i32>, <4 x i32>*, i32, <4 x i1>)
"""

MASKED_LOAD_GATHER_SCATTER = """
define <4 x i32> @f(<4 x i32>* %p, <4 x i32*> %ps, <4 x i1> %m, <4 x i32> %pass) {
  %a = call <4 x i32> @llvm.masked.load.v4i32.p0v4i32(<4 x i32>* %p, i32 4, <4 x i1> %m, <4 x i32> %pass)
  %b = call <4 x i32> @llvm.masked.gather.v4i32.v4p0i32(<4 x i32*> %ps, i32 8, <4 x i1> %m, <4 x i32> undef)
  call void @llvm.masked.scatter.v4i32.v4p0i32(<4 x i32> %a, <4 x i32*> %ps, i32 16, <4 x i1> %m)
  %c = add <4 x i32> %a, %b
  ret <4 x i32> %c
}
declare <4 x i32> @llvm.masked.load.v4i32.p0v4i32(<4 x i32>*, i32, <4 x i1>, <4 x i32>)
declare <4 x i32> @llvm.masked.gather.v4i32.v4p0i32(<4 x i32*>, i32, <4 x i1>, <4 x i32>)
declare void @llvm.masked.scatter.v4i32.v4p0i32(<4 x i32>, <4 x i32*>, i32, <4 x i1>)
"""

EXPAND_COMPRESS = """
define <4 x i32> @f(i32* %p, <4 x i1> %m, <4 x i32> %v) {
  %a = call <4 x i32> @llvm.masked.expandload.v4i32(i32* %p, <4 x i1> %m, <4 x i32> %v)
  call void @llvm.masked.compressstore.v4i32(<4 x i32> %a, i32* %p, <4 x i1> %m)
  ret <4 x i32> %a
}
declare <4 x i32> @llvm.masked.expandload.v4i32(i32*, <4 x i1>, <4 x i32>)
declare void @llvm.masked.compressstore.v4i32(<4 x i32>, i32*, <4 x i1>)
"""


def test_masked_store_has_no_alignment_operand_in_llvm22() -> None:
    """The mask moves from DATA position 3 to 2; the ``i32 4`` alignment is an ``align`` attribute, not a node."""
    ours = graph_from_ir(MASKED_STORE)
    assert uses(ours, "llvm.masked.store.v4i32.p0") == [
        (0, "<4 x i32>", "<4 x i32> %v"),
        (1, "ptr", "ptr %p"),
        (2, "<4 x i1>", "<4 x i1> %m"),
    ]
    assert constants(ours) == []


@needs_reference
def test_masked_store_agrees_with_the_original() -> None:
    reference = reference_graph(MASKED_STORE, REFERENCE)
    assert [p for p, _, _ in uses(reference, "llvm.masked.store.v4i32.p0v4i32")] == [0, 1, 2, 3]
    assert constants(reference) == ["i32 4"]
    assert assert_agrees(MASKED_STORE) == Counter({"masked-alignment-operand": 1, "intrinsic-rename": 1})


def test_vector_of_pointer_manglings_read_p0() -> None:
    assert normalize_function_name("llvm.masked.gather.v4i32.v4p0i32") == "llvm.masked.gather.v4i32.v4p0"
    assert normalize_function_name("llvm.masked.scatter.v2f64.v2p0f64") == "llvm.masked.scatter.v2f64.v2p0"
    assert normalize_function_name("llvm.masked.gather.nxv2f64.nxv2p0f64") == "llvm.masked.gather.nxv2f64.nxv2p0"
    assert normalize_function_name("llvm.masked.load.v4p0i32.p0v4p0i32") == "llvm.masked.load.v4p0.p0"
    assert normalize_function_name("llvm.masked.gather.v4i32.v4p0") == "llvm.masked.gather.v4i32.v4p0"
    assert normalize_function_name("llvm.masked.gather.v4p0.v4p0") == "llvm.masked.gather.v4p0.v4p0"
    assert normalize_function_name("llvm.foo.p0s_struct.Ss.i64") == "llvm.foo.p0.i64"


@needs_reference
def test_masked_load_gather_and_scatter_lose_their_alignment_operand() -> None:
    """Load and gather: alignment at position 1 (mask 2 -> 1, pass-through 3 -> 2); scatter like store. The gather
    and scatter are overloaded on a vector of pointers (``.v4p0i32`` -> ``.v4p0``)."""
    ours = graph_from_ir(MASKED_LOAD_GATHER_SCATTER)
    assert [f.name for f in ours.function][1:] == [
        "llvm.masked.load.v4i32.p0",
        "llvm.masked.gather.v4i32.v4p0",
        "llvm.masked.scatter.v4i32.v4p0",
    ]
    assert [p for p, _, _ in uses(ours, "llvm.masked.gather.v4i32.v4p0")] == [0, 1, 2]
    effects = assert_agrees(MASKED_LOAD_GATHER_SCATTER)
    assert effects == Counter({"masked-alignment-operand": 3, "intrinsic-rename": 3})


@needs_reference
def test_expandload_and_compressstore_never_had_an_alignment_operand() -> None:
    assert assert_agrees(EXPAND_COMPRESS) == Counter()


AVX512_MASKED = """
#include <immintrin.h>
__m512i load(__m512i v, int *p, __mmask16 m) { return _mm512_mask_loadu_epi32(v, m, p); }
void store(int *p, __mmask16 m, __m512i v) { _mm512_mask_storeu_epi32(p, m, v); }
__m256i avx2(__m256i v, int const *p) { return _mm256_maskload_epi32(p, v); }
__m512i gather(__m512i idx, int const *p) { return _mm512_i32gather_epi32(idx, p, 4); }
"""


@needs_reference
@needs_clang14
def test_masked_memory_intrinsics_of_avx512_c_code(tmp_path: Path) -> None:
    """Where clang writes the generic masked intrinsics: AVX-512 masked loads and stores of C code (clang-14 -O0)."""
    source = tmp_path / "avx512.c"
    source.write_text(AVX512_MASKED)
    effects = assert_agrees(llvm10_ir(source, ["-mavx512f", "-mavx2"]))
    assert effects["masked-alignment-operand"] == 2


# -- the other intrinsics whose signature changed between LLVM 10 and LLVM 22 (AutoUpgrade.cpp) -------------------

#: (LLVM 10 IR, the effects it needs), one per changed intrinsic or family.
CHANGED = {
    "va_start_va_end": (
        """
        define void @f(i8* %a) {
          call void @llvm.va_start(i8* %a)
          call void @llvm.va_end(i8* %a)
          ret void
        }
        declare void @llvm.va_start(i8*)
        declare void @llvm.va_end(i8*)
        """,
        {"intrinsic-rename": 2},
    ),
    "stacksave_stackrestore": (
        """
        define void @f() {
          %s = call i8* @llvm.stacksave()
          call void @llvm.stackrestore(i8* %s)
          ret void
        }
        declare i8* @llvm.stacksave()
        declare void @llvm.stackrestore(i8*)
        """,
        {"intrinsic-rename": 2},
    ),
    "prefetch": (
        """
        define void @f(i8* %a) {
          call void @llvm.prefetch(i8* %a, i32 0, i32 3, i32 1)
          ret void
        }
        declare void @llvm.prefetch(i8*, i32, i32, i32)
        """,
        {"intrinsic-rename": 1},
    ),
    "thread_pointer": (
        """
        define i8* @f() {
          %r = call i8* @llvm.thread.pointer()
          ret i8* %r
        }
        declare i8* @llvm.thread.pointer()
        """,
        {"intrinsic-rename": 1},
    ),
    "ptrmask": (
        """
        define i8* @f(i8* %p) {
          %r = call i8* @llvm.ptrmask.p0i8.p0i8.i64(i8* %p, i64 -16)
          ret i8* %r
        }
        declare i8* @llvm.ptrmask.p0i8.p0i8.i64(i8*, i64)
        """,
        {"intrinsic-rename": 1},
    ),
    "flt_rounds": (
        """
        define i32 @f() {
          %r = call i32 @llvm.flt.rounds()
          ret i32 %r
        }
        declare i32 @llvm.flt.rounds()
        """,
        {"intrinsic-rename": 1},
    ),
    "experimental_vector_reduce": (
        """
        define i32 @f(<4 x i32> %v, <4 x float> %w) {
          %a = call i32 @llvm.experimental.vector.reduce.add.v4i32(<4 x i32> %v)
          %b = call float @llvm.experimental.vector.reduce.v2.fadd.f32.v4f32(float 0.0, <4 x float> %w)
          %c = call fast float @llvm.experimental.vector.reduce.fmax.v4f32(<4 x float> %w)
          %d = fptosi float %b to i32
          %e = add i32 %a, %d
          ret i32 %e
        }
        declare i32 @llvm.experimental.vector.reduce.add.v4i32(<4 x i32>)
        declare float @llvm.experimental.vector.reduce.v2.fadd.f32.v4f32(float, <4 x float>)
        declare float @llvm.experimental.vector.reduce.fmax.v4f32(<4 x float>)
        """,
        {"intrinsic-rename": 3},
    ),
    "annotation": (
        """
        @.str = private unnamed_addr constant [4 x i8] c"ann\\00", section "llvm.metadata"
        @.file = private unnamed_addr constant [4 x i8] c"a.c\\00", section "llvm.metadata"
        define i32 @f(i32 %a) {
          %r = call i32 @llvm.annotation.i32(i32 %a, i8* getelementptr inbounds ([4 x i8], [4 x i8]* @.str, i32 0, \
i32 0), i8* getelementptr inbounds ([4 x i8], [4 x i8]* @.file, i32 0, i32 0), i32 3)
          ret i32 %r
        }
        declare i32 @llvm.annotation.i32(i32, i8*, i8*, i32)
        """,
        {"intrinsic-rename": 1, "constant-gep-folding": 2},
    ),
    "var_annotation": (
        """
        @.str = private unnamed_addr constant [4 x i8] c"ann\\00", section "llvm.metadata"
        @.file = private unnamed_addr constant [4 x i8] c"a.c\\00", section "llvm.metadata"
        define void @f() {
          %x = alloca i32, align 4
          %p = bitcast i32* %x to i8*
          call void @llvm.var.annotation(i8* %p, i8* getelementptr inbounds ([4 x i8], [4 x i8]* @.str, i32 0, \
i32 0), i8* getelementptr inbounds ([4 x i8], [4 x i8]* @.file, i32 0, i32 0), i32 3)
          ret void
        }
        declare void @llvm.var.annotation(i8*, i8*, i8*, i32)
        """,
        {"intrinsic-rename": 1, "constant-gep-folding": 2, "annotation-null-operand": 1},
    ),
    "ptr_annotation": (
        """
        %struct.S = type { i32 }
        @.str = private unnamed_addr constant [4 x i8] c"ann\\00", section "llvm.metadata"
        @.file = private unnamed_addr constant [4 x i8] c"a.c\\00", section "llvm.metadata"
        define i32 @f(%struct.S* %s, i8** %q) {
          store i8* null, i8** %q
          %a = getelementptr inbounds %struct.S, %struct.S* %s, i32 0, i32 0
          %b = bitcast i32* %a to i8*
          %c = call i8* @llvm.ptr.annotation.p0i8(i8* %b, i8* getelementptr inbounds ([4 x i8], [4 x i8]* @.str, \
i32 0, i32 0), i8* getelementptr inbounds ([4 x i8], [4 x i8]* @.file, i32 0, i32 0), i32 5)
          %d = bitcast i8* %c to i32*
          %v = load i32, i32* %d, align 4
          ret i32 %v
        }
        declare i8* @llvm.ptr.annotation.p0i8(i8*, i8*, i8*, i32)
        """,
        {"intrinsic-rename": 1, "constant-gep-folding": 2, "annotation-null-operand": 1},
    ),
    "frameaddress_sponentry_returnaddress": (
        """
        define i8* @f() {
          %r = call i8* @llvm.frameaddress.p0i8(i32 0)
          %s = call i8* @llvm.sponentry.p0i8()
          %t = call i8* @llvm.addressofreturnaddress.p0i8()
          %u = call i8* @llvm.returnaddress(i32 0)
          ret i8* %r
        }
        declare i8* @llvm.frameaddress.p0i8(i32)
        declare i8* @llvm.sponentry.p0i8()
        declare i8* @llvm.addressofreturnaddress.p0i8()
        declare i8* @llvm.returnaddress(i32)
        """,
        {"intrinsic-rename": 3},
    ),
    "objectsize_is_constant_launder": (
        """
        define i64 @f(i8* %p) {
          %a = call i64 @llvm.objectsize.i64.p0i8(i8* %p, i1 false, i1 true, i1 false)
          %b = call i1 @llvm.is.constant.p0i8(i8* %p)
          %c = call i8* @llvm.launder.invariant.group.p0i8(i8* %p)
          ret i64 %a
        }
        declare i64 @llvm.objectsize.i64.p0i8(i8*, i1, i1, i1)
        declare i1 @llvm.is.constant.p0i8(i8*)
        declare i8* @llvm.launder.invariant.group.p0i8(i8*)
        """,
        {"intrinsic-rename": 3},
    ),
    "lifetime_of_an_argument_a_global_and_a_cast": (
        """
        @g = global [8 x i8] zeroinitializer
        define void @f(i8* %p, i32* %q) {
          call void @llvm.lifetime.start.p0i8(i64 8, i8* %p)
          %c = bitcast i32* %q to i8*
          call void @llvm.lifetime.start.p0i8(i64 4, i8* %c)
          call void @llvm.lifetime.start.p0i8(i64 8, i8* getelementptr inbounds ([8 x i8], [8 x i8]* @g, i64 0, \
i64 0))
          call void @use(i8* %p)
          call void @llvm.lifetime.end.p0i8(i64 8, i8* %p)
          ret void
        }
        declare void @llvm.lifetime.start.p0i8(i64, i8*)
        declare void @llvm.lifetime.end.p0i8(i64, i8*)
        declare void @use(i8*)
        """,
        {"intrinsic-rename": 2, "lifetime-marker-removal": 4, "constant-gep-folding": 1},
    ),
    "lifetime_of_an_alloca_beside_one_of_an_argument": (
        """
        define void @f(i8* %p) {
          %a = alloca i32
          %b = bitcast i32* %a to i8*
          call void @llvm.lifetime.start.p0i8(i64 4, i8* %b)
          call void @llvm.lifetime.start.p0i8(i64 8, i8* %p)
          call void @use(i8* %b)
          call void @llvm.lifetime.end.p0i8(i64 4, i8* %b)
          ret void
        }
        declare void @llvm.lifetime.start.p0i8(i64, i8*)
        declare void @llvm.lifetime.end.p0i8(i64, i8*)
        declare void @use(i8*)
        """,
        {"intrinsic-rename": 2, "lifetime-marker-removal": 1, "lifetime-size-operand": 2},
    ),
    "dbg_label_and_dbg_addr": (
        """
        define void @f() !dbg !6 {
          %x = alloca i32, align 4
          call void @llvm.dbg.addr(metadata i32* %x, metadata !9, metadata !DIExpression()), !dbg !10
          call void @llvm.dbg.label(metadata !12), !dbg !10
          ret void, !dbg !10
        }
        declare void @llvm.dbg.addr(metadata, metadata, metadata)
        declare void @llvm.dbg.label(metadata)
        !llvm.dbg.cu = !{!0}
        !llvm.module.flags = !{!3, !4}
        !0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, producer: "clang", isOptimized: false, \
runtimeVersion: 0, emissionKind: FullDebug, enums: !2)
        !1 = !DIFile(filename: "a.c", directory: "/")
        !2 = !{}
        !3 = !{i32 2, !"Dwarf Version", i32 4}
        !4 = !{i32 2, !"Debug Info Version", i32 3}
        !6 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, type: !7, scopeLine: 1, \
spFlags: DISPFlagDefinition, unit: !0, retainedNodes: !2)
        !7 = !DISubroutineType(types: !8)
        !8 = !{null}
        !9 = !DILocalVariable(name: "x", scope: !6, file: !1, line: 2, type: !11)
        !10 = !DILocation(line: 2, column: 1, scope: !6)
        !11 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
        !12 = !DILabel(scope: !6, name: "L", file: !1, line: 2)
        """,
        {"debug-intrinsics-to-records": 4},
    ),
    "x86_avx512_cmp": (
        """
        define i8 @f(<8 x double> %a, <8 x double> %b, <4 x float> %c, <4 x float> %d) {
          %r = call <8 x i1> @llvm.x86.avx512.cmp.pd.512(<8 x double> %a, <8 x double> %b, i32 1, i32 4)
          %s = bitcast <8 x i1> %r to i8
          %t = call <4 x i1> @llvm.x86.avx512.cmp.ps.128(<4 x float> %c, <4 x float> %d, i32 2)
          %u = call <8 x i1> @llvm.x86.avx512.cmp.pd.512(<8 x double> %b, <8 x double> %a, i32 5, i32 8)
          ret i8 %s
        }
        declare <8 x i1> @llvm.x86.avx512.cmp.pd.512(<8 x double>, <8 x double>, i32, i32)
        declare <4 x i1> @llvm.x86.avx512.cmp.ps.128(<4 x float>, <4 x float>, i32)
        """,
        {"intrinsic-rename": 2, "x86-compare-mask-operand": 3},
    ),
    # removed from LLVM without an upgrade: LLVM 22 keeps the call to a function of that name
    "removed_coro_param_ssa_copy_matrix_columnwise_patchpoint_femms": (
        """
        define i64 @f(i8* %a, i8* %b, i32 %i, double* %m) {
          %r = call i1 @llvm.coro.param(i8* %a, i8* %b)
          %s = call i32 @llvm.ssa.copy.i32(i32 %i)
          %t = call <4 x double> @llvm.matrix.columnwise.load.v4f64.p0f64(double* %m, i32 2, i32 2, i32 2)
          %u = call i64 (i64, i32, i8*, i32, ...) @llvm.experimental.patchpoint.i64(i64 1, i32 15, i8* null, i32 0)
          call void @llvm.x86.mmx.femms()
          ret i64 %u
        }
        declare void @llvm.x86.mmx.femms()
        declare i1 @llvm.coro.param(i8*, i8*)
        declare i32 @llvm.ssa.copy.i32(i32)
        declare <4 x double> @llvm.matrix.columnwise.load.v4f64.p0f64(double*, i32, i32, i32)
        declare i64 @llvm.experimental.patchpoint.i64(i64, i32, i8*, i32, ...)
        """,
        {"intrinsic-rename": 1},
    ),
    "removed_x86_avx512er": (
        """
        define <8 x double> @f(<8 x double> %a) {
          %r = call <8 x double> @llvm.x86.avx512.rcp28.pd(<8 x double> %a, <8 x double> zeroinitializer, i8 -1, \
i32 4)
          ret <8 x double> %r
        }
        declare <8 x double> @llvm.x86.avx512.rcp28.pd(<8 x double>, <8 x double>, i8, i32)
        """,
        {},
    ),
}


@needs_reference
@pytest.mark.parametrize("name", sorted(CHANGED))
def test_changed_intrinsic_agrees_with_the_original(name: str) -> None:
    ir, expected = CHANGED[name]
    effects = assert_agrees(textwrap.dedent(ir))
    assert +effects == Counter(expected)


def test_annotations_gain_a_null_fifth_operand_in_llvm22() -> None:
    ours = graph_from_ir(textwrap.dedent(CHANGED["var_annotation"][0]))
    assert [f.name for f in ours.function] == ["f", "llvm.var.annotation.p0.p0"]
    assert [(p, text) for p, _, text in uses(ours, "llvm.var.annotation.p0.p0")][3:] == [(3, "i32 3"), (4, "ptr null")]


def test_lifetime_markers_of_anything_but_an_alloca_are_gone_in_llvm22() -> None:
    """LLVM 22's upgrade hands a marker the ``alloca`` behind the pointer casts, or deletes the marker."""
    ours = graph_from_ir(textwrap.dedent(CHANGED["lifetime_of_an_argument_a_global_and_a_cast"][0]))
    assert [n.text for n in ours.node[1:] if n.type == 0 and n.function == 0] == ["bitcast", "call", "ret"]
    assert [f.name for f in ours.function] == ["f", "use", "llvm.lifetime.start.i64", "llvm.lifetime.end.i64"]


CXX20_COROUTINE = """
#include <coroutine>
struct task {
  struct promise_type {
    task get_return_object() { return {}; }
    std::suspend_never initial_suspend() { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() {}
  };
};
task count(int *n) { ++*n; co_return; }
"""


@needs_reference
@needs_clang14
def test_lifetime_markers_of_a_coroutine_frame(tmp_path: Path) -> None:
    """clang lowers coroutines even at -O0; the markers of the variables it moves into the frame point into the
    frame (a ``getelementptr`` of the heap-allocated frame), not to an ``alloca``: LLVM 22 deletes them."""
    source = tmp_path / "coroutine.cc"
    source.write_text(CXX20_COROUTINE)
    try:
        ir = llvm10_ir(source, ["-std=c++20"])
    except GraphCreationError as error:  # no C++20 <coroutine> header on this machine
        pytest.skip(str(error))
    effects = assert_agrees(ir)
    assert effects["lifetime-marker-removal"] > 0


INTRINSICS_OF_C = """
#include <float.h>
#include <stdarg.h>
struct S { int a __attribute__((annotate("field"))); };
int sum(int n, ...) {
  va_list ap, aq;
  va_start(ap, n);
  va_copy(aq, ap);
  int s = 0;
  for (int i = 0; i < n; i++) s += va_arg(aq, int);
  va_end(aq);
  va_end(ap);
  return s;
}
int get(struct S *s, int *p) {
  int x __attribute__((annotate("local"))) = 3;
  __builtin_prefetch(p, 0, 3);
  return s->a + x + __builtin_annotation(x, "ann") + FLT_ROUNDS;
}
"""


@needs_reference
@needs_clang14
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_changed_intrinsics_as_clang14_writes_them(tmp_path: Path, opt: str) -> None:
    """va_copy, annotations (clang 14 already writes their fifth operand), prefetch and FLT_ROUNDS in C."""
    source = tmp_path / "intrinsics.c"
    source.write_text(INTRINSICS_OF_C)
    effects = assert_agrees(llvm10_ir(source, [opt]))
    assert "annotation-null-operand" not in effects
    assert effects["intrinsic-rename"] >= 8


def test_avx512_compare_gains_an_all_ones_mask_in_llvm22() -> None:
    ours = graph_from_ir(textwrap.dedent(CHANGED["x86_avx512_cmp"][0]))
    assert [f.name for f in ours.function][1:] == ["llvm.x86.avx512.mask.cmp.pd.512", "llvm.x86.avx512.mask.cmp.ps.128"]
    assert [(p, text) for p, text, _ in uses(ours, "llvm.x86.avx512.mask.cmp.ps.128")] == [
        (0, "<4 x float>"),
        (1, "<4 x float>"),
        (2, "i32"),
        (3, "<4 x i1>"),
    ]
    assert [(p, text) for p, _, text in uses(ours, "llvm.x86.avx512.mask.cmp.pd.512")][6:] == [
        (3, "<8 x i1> splat (i1 true)"),
        (3, "<8 x i1> splat (i1 true)"),
        (4, "i32 4"),
        (4, "i32 8"),
    ]


# -- intrinsics LLVM 22 replaces by instructions: not rewritten (LLVM <= 11 IR for F16C and AVX-512 only) ----------

#: (LLVM 10 IR, the instructions of @f in LLVM 22)
EXPANDED = {
    "vcvtph2ps_128": (
        """
        define <4 x float> @f(<8 x i16> %a) {
          %r = call <4 x float> @llvm.x86.vcvtph2ps.128(<8 x i16> %a)
          ret <4 x float> %r
        }
        declare <4 x float> @llvm.x86.vcvtph2ps.128(<8 x i16>)
        """,
        ["shufflevector", "bitcast", "fpext", "ret"],
    ),
    "avx512_mask_vcvtph2ps_128": (
        """
        define <4 x float> @f(<8 x i16> %a, <4 x float> %p, i8 %m) {
          %r = call <4 x float> @llvm.x86.avx512.mask.vcvtph2ps.128(<8 x i16> %a, <4 x float> %p, i8 %m)
          ret <4 x float> %r
        }
        declare <4 x float> @llvm.x86.avx512.mask.vcvtph2ps.128(<8 x i16>, <4 x float>, i8)
        """,
        ["shufflevector", "bitcast", "fpext", "bitcast", "shufflevector", "select", "ret"],
    ),
    "avx512_mask_cmp_with_a_scalar_mask": (  # LLVM <= 6 IR: LLVM 10 upgrades it to a different shape
        """
        define i8 @f(<8 x double> %a, <8 x double> %b, i8 %m) {
          %r = call i8 @llvm.x86.avx512.mask.cmp.pd.512(<8 x double> %a, <8 x double> %b, i32 1, i8 %m, i32 4)
          ret i8 %r
        }
        declare i8 @llvm.x86.avx512.mask.cmp.pd.512(<8 x double>, <8 x double>, i32, i8, i32)
        """,
        ["bitcast", "call", "bitcast", "ret"],
    ),
    "avx512bf16_cvtne2ps2bf16_128": (
        """
        define <8 x i16> @f(<4 x float> %a, <4 x float> %b) {
          %r = call <8 x i16> @llvm.x86.avx512bf16.cvtne2ps2bf16.128(<4 x float> %a, <4 x float> %b)
          ret <8 x i16> %r
        }
        declare <8 x i16> @llvm.x86.avx512bf16.cvtne2ps2bf16.128(<4 x float>, <4 x float>)
        """,
        ["call", "bitcast", "ret"],
    ),
}


@pytest.mark.parametrize("name", sorted(EXPANDED))
def test_x86_intrinsics_llvm22_replaces_by_instructions(name: str) -> None:
    """The known difference that no effect rewrites (docs/llvm22.md): LLVM 22 turns the call into instructions."""
    ir, instructions = EXPANDED[name]
    ours = graph_from_ir(textwrap.dedent(ir))
    assert [n.text for n in ours.node[1:] if n.type == 0 and n.function == 0] == instructions


# -- intrinsics LLVM 22 cannot read: no graph -------------------------------------------------------------------

MMX = """
define <1 x i64> @f(<1 x i64> %a, <1 x i64> %b) {
  %x = bitcast <1 x i64> %a to x86_mmx
  %y = bitcast <1 x i64> %b to x86_mmx
  %r = call x86_mmx @llvm.x86.mmx.padd.b(x86_mmx %x, x86_mmx %y)
  %s = bitcast x86_mmx %r to <1 x i64>
  ret <1 x i64> %s
}
declare x86_mmx @llvm.x86.mmx.padd.b(x86_mmx, x86_mmx)
"""

THREE_D_NOW = """
define x86_mmx @f(x86_mmx %a, x86_mmx %b) {
  %r = call x86_mmx @llvm.x86.3dnow.pfadd(x86_mmx %a, x86_mmx %b)
  ret x86_mmx %r
}
declare x86_mmx @llvm.x86.3dnow.pfadd(x86_mmx, x86_mmx)
"""


@pytest.mark.parametrize("ir", [MMX, THREE_D_NOW], ids=["mmx", "3dnow"])
def test_x86_mmx_intrinsics_do_not_reach_a_graph(ir: str) -> None:
    """LLVM 22 has no ``x86_mmx`` type: every MMX and 3DNow! intrinsic takes or returns one, so such IR is refused
    with one line naming the file and the place."""
    with pytest.raises(GraphCreationError, match=r"^mmx\.ll:\d+:\d+: .*expected type") as raised:
        graph_from_ir(ir, path="mmx.ll")
    assert "\n" not in str(raised.value)


CORO_END = """
define void @f(i8* %h) {
  call i1 @llvm.coro.end(i8* %h, i1 false)
  ret void
}
declare i1 @llvm.coro.end(i8*, i1)
"""

_BUILD_FROM_STDIN = """
import sys
from programl.exceptions import GraphCreationError
from programl.graph_builder.llvm import graph_from_ir
try:
    graph_from_ir(sys.stdin.read(), path="coro.ll")
except GraphCreationError as error:
    print(type(error).__name__, error)
"""


def test_old_coro_end_is_refused_with_one_line(tmp_path: Path) -> None:
    """An LLVM 10 ``llvm.coro.end`` call (IR written before CoroSplit, ``-Xclang -disable-llvm-passes``) does not
    reach a graph; it must be a one-line error, not a crash. Run in a child process (no core file): a crash aborts
    it."""
    result = subprocess.run(
        [sys.executable, "-c", _BUILD_FROM_STDIN],
        input=CORO_END,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)),
    )
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.startswith("GraphCreationError coro.ll:3:11: LLVM 22 cannot upgrade"), result.stdout
    assert result.stdout.count("\n") == 1
