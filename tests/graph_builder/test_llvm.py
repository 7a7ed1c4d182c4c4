"""The LLVM builder: SPEC §1.6 special constructs one by one, §1.3/§1.4 positions, §1.7 texts, §1.9 options,
input formats (text, bitcode, old typed-pointer IR) and errors."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from programl.exceptions import GraphCreationError
from programl.graph_builder.llvm import BuildOptions, graph_from_bitcode, graph_from_ir, parse_ir
from tests.graph_builder.listing import edge_lines, full_text


def build(ir: str, **options) -> object:
    return graph_from_ir(textwrap.dedent(ir), options=BuildOptions(**options))


def node_with(graph, text: str) -> int:
    """Index of the unique node whose full_text is ``text``."""
    found = [i for i, n in enumerate(graph.node) if full_text(n) == text]
    assert len(found) == 1, (text, found)
    return found[0]


def edges_of(graph, node: int) -> list[str]:
    return [
        e
        for e in edge_lines(graph)
        if e.split()[1].split("->")[0] == str(node) or e.split()[1].split("->")[1] == str(node)
    ]


def call_edges_of(graph, node: int) -> list[str]:
    """CALL edges of a node other than those with the external node (an entry instruction has one)."""
    return [e for e in edges_of(graph, node) if e.startswith("CALL") and " 0->" not in e and not e.endswith("->0 p0")]


# -- §1.6 special constructs ------------------------------------------------------------------------------------


def test_global_variable_is_one_shared_constant_only_when_used() -> None:
    graph = build("""
        @g = global i32 5, align 4
        @unused = global i32 6, align 4
        @init = global ptr @g, align 8
        define i32 @a() {
          %x = load i32, ptr @g, align 4
          ret i32 %x
        }
        define void @b(i32 %v) {
          store i32 %v, ptr @g, align 4
          ret void
        }
    """)
    g = node_with(graph, "@g = global i32 5, align 4")
    assert graph.node[g].type == 2 and graph.node[g].text == "ptr" and graph.node[g].function == 0
    load = node_with(graph, "%x = load i32, ptr @g, align 4")
    store = node_with(graph, "store i32 %v, ptr @g, align 4")
    assert [e for e in edge_lines(graph) if e.startswith(f"DATA {g}->")] == [
        f"DATA {g}->{load} p0",
        f"DATA {g}->{store} p1",
    ]
    texts = [full_text(n) for n in graph.node]
    assert "@unused = global i32 6, align 4" not in texts  # never an operand
    assert "@init = global ptr @g, align 8" not in texts  # initialisers produce nothing


def test_arguments_one_node_per_used_argument_in_parameter_order() -> None:
    graph = build("""
        define i32 @f(i32 %unused, i32 %b, i32 %a) {
          %x = add i32 %a, %b
          %y = add i32 %x, %a
          ret i32 %y
        }
    """)
    arguments = [
        (i, full_text(n))
        for i, n in enumerate(graph.node)
        if n.type == 1 and full_text(n).startswith("i32 %") and full_text(n)[5] in "ab"
    ]
    assert [t for _, t in arguments] == ["i32 %b", "i32 %a"]  # parameter order (Policy 2); %unused has no node
    (b, _), (a, _) = arguments
    assert graph.node[a].block == graph.node[b].block == 1  # one past the function's last block
    first_add = node_with(graph, "%x = add i32 %a, %b")
    second_add = node_with(graph, "%y = add i32 %x, %a")
    assert [e for e in edge_lines(graph) if e.startswith(f"DATA {a}->")] == [
        f"DATA {a}->{first_add} p0",
        f"DATA {a}->{second_add} p1",
    ]


def test_unnamed_arguments_print_with_their_slot_numbers() -> None:
    graph = build("""
        define i32 @f(i32, i32 %named, i32) {
          %3 = add i32 %0, %1
          ret i32 %3
        }
    """)
    texts = [full_text(n) for n in graph.node if n.type == 1]
    assert "i32 %0" in texts and "i32 %1" in texts  # the third parameter is the second unnamed one: %1


def test_phi_positions_are_incoming_indices_with_per_use_variables() -> None:
    graph = build("""
        define i32 @f(i1 %c) {
        entry:
          %a = add i32 1, 2
          br i1 %c, label %t, label %e
        t:
          %b = add i32 3, 4
          br label %j
        e:
          br label %j
        j:
          %p = phi i32 [ %b, %t ], [ %a, %e ]
          ret i32 %p
        }
    """)
    phi = node_with(graph, "%p = phi i32 [ %b, %t ], [ %a, %e ]")
    incoming = [e for e in edge_lines(graph) if e.startswith("DATA") and e.split()[1].endswith(f"->{phi}")]
    assert [e.split()[2] for e in incoming] == ["p0", "p1"]
    for e in incoming:
        variable = int(e.split()[1].split("->")[0])
        assert graph.node[variable].type == 1 and graph.node[variable].block == graph.node[phi].block


def test_switch_case_values_at_even_positions_and_duplicate_targets() -> None:
    graph = build("""
        define i32 @f(i32 %x) {
        entry:
          switch i32 %x, label %d [
            i32 10, label %a
            i32 20, label %a
            i32 30, label %b
          ]
        a:
          ret i32 1
        b:
          ret i32 2
        d:
          ret i32 0
        }
    """)
    switch = [i for i, n in enumerate(graph.node) if n.text == "switch"][0]
    cases = sorted(
        (e.split()[2], full_text(graph.node[int(e.split()[1].split("->")[0])]))
        for e in edge_lines(graph)
        if e.startswith("DATA") and e.split()[1].endswith(f"->{switch}")
    )
    assert cases == [("p0", "i32 %x"), ("p2", "i32 10"), ("p4", "i32 20"), ("p6", "i32 30")]
    ret = {full_text(n): i for i, n in enumerate(graph.node)}
    successors = [e for e in edge_lines(graph) if e.startswith(f"CTRL {switch}->")]
    # default first, then one edge per case in case order (two parallel edges to %a, positions 1 and 2)
    assert successors == [
        f"CTRL {switch}->{ret['ret i32 0']} p0",
        f"CTRL {switch}->{ret['ret i32 1']} p1",
        f"CTRL {switch}->{ret['ret i32 1']} p2",
        f"CTRL {switch}->{ret['ret i32 2']} p3",
    ]


def test_invoke_has_no_call_edges_and_two_successors() -> None:
    graph = build("""
        declare i32 @g(i32)
        declare i32 @__gxx_personality_v0(...)
        define i32 @f(i32 %x) personality ptr @__gxx_personality_v0 {
        entry:
          %r = invoke i32 @g(i32 %x) to label %ok unwind label %bad
        ok:
          ret i32 %r
        bad:
          %lp = landingpad { ptr, i32 } cleanup
          resume { ptr, i32 } %lp
        }
    """)
    invoke = [i for i, n in enumerate(graph.node) if n.text == "invoke"][0]
    assert not call_edges_of(graph, invoke)
    ok = node_with(graph, "ret i32 %r")
    landingpad = [i for i, n in enumerate(graph.node) if n.text == "landingpad"][0]
    assert f"CTRL {invoke}->{ok} p0" in edge_lines(graph)
    assert f"CTRL {invoke}->{landingpad} p1" in edge_lines(graph)
    assert full_text(graph.node[invoke]) == "%r = invoke i32 @g(i32 %x)\n          to label %ok unwind label %bad"
    # landingpad/resume: ordinary instructions; a literal struct value has text `struct`
    assert full_text(graph.node[landingpad]) == "%lp = landingpad { ptr, i32 }\n          cleanup"
    resume = [i for i, n in enumerate(graph.node) if n.text == "resume"][0]
    operand = int(
        [e for e in edge_lines(graph) if e.startswith("DATA") and e.split()[1].endswith(f"->{resume}")][0]
        .split()[1]
        .split("->")[0]
    )
    assert graph.node[operand].text == "struct" and full_text(graph.node[operand]) == "struct %lp"
    # the personality function is not an operand: it only has its external CALL edges
    personality = [i for i, n in enumerate(graph.node) if n.function == 1 and n.text == "; undefined function"][0]
    assert sorted(edges_of(graph, personality)) == sorted([f"CALL 0->{personality} p0", f"CALL {personality}->0 p0"])


def test_direct_calls_recursion_and_multiple_returns() -> None:
    graph = build("""
        define i32 @f(i32 %n) {
        entry:
          %c = icmp eq i32 %n, 0
          br i1 %c, label %base, label %rec
        base:
          ret i32 1
        rec:
          %m = sub i32 %n, 1
          %r = call i32 @f(i32 %m)
          ret i32 %r
        }
        define i32 @main() {
          %x = call i32 @f(i32 3)
          ret i32 %x
        }
    """)
    entry = node_with(graph, "%c = icmp eq i32 %n, 0")
    exits = [node_with(graph, "ret i32 1"), node_with(graph, "ret i32 %r")]
    recursive = node_with(graph, "%r = call i32 @f(i32 %m)")
    site = node_with(graph, "%x = call i32 @f(i32 3)")
    edges = edge_lines(graph)
    for call in (recursive, site):
        assert f"CALL {call}->{entry} p0" in edges
        assert all(f"CALL {e}->{call} p0" in edges for e in exits)
    assert all(f"CALL {e}->0 p0" in edges for e in exits)  # every reached ret is an exit


def test_declared_function_placeholder_is_entry_and_exit() -> None:
    graph = build("""
        declare i32 @puts(ptr)
        @s = constant [3 x i8] c"hi\\00"
        define void @f() {
          %r = call i32 @puts(ptr @s)
          ret void
        }
    """)
    placeholder = 1
    assert graph.node[placeholder].text == "; undefined function" and full_text(graph.node[placeholder]) == ""
    call = node_with(graph, "%r = call i32 @puts(ptr @s)")
    assert {
        f"CALL {call}->{placeholder} p0",
        f"CALL {placeholder}->{call} p0",
        f"CALL 0->{placeholder} p0",
        f"CALL {placeholder}->0 p0",
    } <= set(edge_lines(graph))


def test_indirect_call_callee_is_a_variable_at_the_last_position() -> None:
    graph = build("""
        define i32 @f(ptr %fp, i32 %x) {
          %g = getelementptr i8, ptr %fp, i64 0
          %r = call i32 %g(i32 %x, i32 2)
          ret i32 %r
        }
    """)
    call = node_with(graph, "%r = call i32 %g(i32 %x, i32 2)")
    assert not [e for e in edges_of(graph, call) if e.startswith("CALL")]
    callee = [e for e in edge_lines(graph) if e.startswith("DATA") and e.endswith(f"->{call} p2")]
    assert len(callee) == 1 and full_text(graph.node[int(callee[0].split()[1].split("->")[0])]) == "ptr %g"


def test_function_as_a_value_has_no_node_but_takes_a_position() -> None:
    graph = build("""
        define void @g() {
          ret void
        }
        define void @f(ptr %slot) {
          store ptr @g, ptr %slot
          ret void
        }
    """)
    store = node_with(graph, "store ptr @g, ptr %slot, align 8")
    incoming = [e for e in edge_lines(graph) if e.startswith("DATA") and e.split()[1].endswith(f"->{store}")]
    assert [e.split()[2] for e in incoming] == ["p1"]  # @g at position 0 has no node


def test_call_with_a_mismatched_signature_has_no_call_edge() -> None:
    # LLVM 22's form of ProGraML's "call through a constant cast": getCalledFunction() is null.
    graph = build("""
        define void @g() {
          ret void
        }
        define void @f() {
          call void @g(i32 1)
          ret void
        }
    """)
    call = node_with(graph, "call void @g(i32 1)")
    assert not call_edges_of(graph, call)


def test_vararg_calls_have_call_edges_when_the_types_match() -> None:
    graph = build("""
        declare i32 @printf(ptr, ...)
        declare i32 @knr(...)
        define void @f(ptr %s) {
          %a = call i32 (ptr, ...) @printf(ptr %s, i32 1)
          %b = call i32 (i32, ...) @knr(i32 1)
          ret void
        }
    """)
    printf = node_with(graph, "%a = call i32 (ptr, ...) @printf(ptr %s, i32 1)")
    knr = node_with(graph, "%b = call i32 (i32, ...) @knr(i32 1)")
    assert f"CALL {printf}->1 p0" in edge_lines(graph)
    assert not call_edges_of(graph, knr)


def test_inline_asm_call_is_an_instruction_only() -> None:
    graph = build("""
        define i32 @f(i32 %x) {
          %r = call i32 asm "mov $1, $0", "=r,r"(i32 %x)
          ret i32 %r
        }
    """)
    call = node_with(graph, '%r = call i32 asm "mov $1, $0", "=r,r"(i32 %x)')
    assert not call_edges_of(graph, call)
    assert [e.split()[2] for e in edge_lines(graph) if e.startswith("DATA") and e.endswith(f"->{call} p0")] == ["p0"]
    assert len(graph.function) == 1


def test_debug_intrinsics_become_records_with_no_nodes() -> None:
    # LLVM 19+ turns llvm.dbg.* calls into debug records, which are not instructions (a documented upgrade effect).
    graph = build("""
        define void @f(i32 %x) !dbg !6 {
          call void @llvm.dbg.value(metadata i32 %x, metadata !9, metadata !DIExpression()), !dbg !10
          ret void, !dbg !10
        }
        declare void @llvm.dbg.value(metadata, metadata, metadata)
        !llvm.dbg.cu = !{!0}
        !llvm.module.flags = !{!3, !4}
        !0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, producer: "t", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
        !1 = !DIFile(filename: "t.c", directory: "/")
        !3 = !{i32 2, !"Debug Info Version", i32 3}
        !4 = !{i32 7, !"Dwarf Version", i32 5}
        !6 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, type: !7, unit: !0)
        !7 = !DISubroutineType(types: !8)
        !8 = !{null}
        !9 = !DILocalVariable(name: "x", scope: !6, file: !1, line: 1, type: !11)
        !10 = !DILocation(line: 1, scope: !6)
        !11 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
    """)
    assert [n.text for n in graph.node] == ["[external]", "ret"]
    assert full_text(graph.node[1]).startswith("ret void, !dbg !")  # attachments are part of full_text
    assert [f.name for f in graph.function] == ["f"]


def test_unreachable_terminator_is_an_exit_and_unreachable_blocks_are_not() -> None:
    graph = build("""
        define void @f(i1 %c) {
        entry:
          br i1 %c, label %a, label %b
        a:
          unreachable
        b:
          ret void
        dead:
          ret void
        }
    """)
    unreachable = [i for i, n in enumerate(graph.node) if n.text == "unreachable"][0]
    rets = [i for i, n in enumerate(graph.node) if n.text == "ret"]
    edges = edge_lines(graph)
    assert f"CALL {unreachable}->0 p0" in edges and f"CALL {rets[0]}->0 p0" in edges
    assert edges_of(graph, rets[1]) == []  # the dead block: no control, no call edges


def test_constants_are_uniqued_per_module() -> None:
    graph = build("""
        define i32 @a(i32 %x) {
          %r = add i32 %x, 1
          ret i32 %r
        }
        define i64 @b(i64 %x) {
          %r = add i64 %x, 1
          %s = mul i64 %r, %r
          %t = mul i32 1, 1
          ret i64 %s
        }
    """)
    constants = [full_text(n) for n in graph.node if n.type == 2]
    assert sorted(constants) == ["i32 1", "i64 1"]  # i32 1 shared by two functions; i64 1 is another node
    one = node_with(graph, "i32 1")
    mul = node_with(graph, "%t = mul i32 1, 1")
    assert f"DATA {one}->{mul} p0" in edge_lines(graph) and f"DATA {one}->{mul} p1" in edge_lines(graph)
    # the same SSA value used twice by one instruction: two variable nodes
    square = node_with(graph, "%s = mul i64 %r, %r")
    assert len([e for e in edge_lines(graph) if e.startswith("DATA") and e.split()[1].endswith(f"->{square}")]) == 2


def test_alloca_size_and_gep_indices_positions() -> None:
    graph = build("""
        %struct.S = type { i32, [4 x i8] }
        define i8 @f(i64 %i) {
          %s = alloca %struct.S, align 4
          %p = getelementptr inbounds %struct.S, ptr %s, i64 0, i32 1, i64 %i
          %v = load i8, ptr %p
          %w = load %struct.S, ptr %s
          %arr = alloca [2 x %struct.S]
          ret i8 %v
        }
    """)
    alloca = node_with(graph, "%s = alloca %struct.S, align 4")
    assert f"DATA {node_with(graph, 'i32 1')}->{alloca} p0" in edge_lines(graph)  # implicit array size
    gep = node_with(graph, "%p = getelementptr inbounds %struct.S, ptr %s, i64 0, i32 1, i64 %i")
    positions = sorted(
        e.split()[2] for e in edge_lines(graph) if e.startswith("DATA") and e.split()[1].endswith(f"->{gep}")
    )
    assert positions == ["p0", "p1", "p2", "p3"]
    # §1.7: a struct value is `struct` (full_text `struct %w`); arrays of structs are not collapsed
    texts = {full_text(n): n.text for n in graph.node}
    assert texts.get("struct %w") is None  # %w is unused: no variable node
    assert graph.node[alloca].text == "alloca"


def test_struct_typed_variable_text() -> None:
    graph = build("""
        %struct.S = type { i32, i32 }
        define i32 @f(ptr %p, [2 x %struct.S] %arr) {
          %w = load %struct.S, ptr %p
          %x = extractvalue %struct.S %w, 0
          %y = extractvalue [2 x %struct.S] %arr, 1, 0
          %z = add i32 %x, %y
          ret i32 %z
        }
    """)
    texts = {full_text(n): n.text for n in graph.node if n.type == 1}
    assert texts["struct %w"] == "struct"
    assert texts["[2 x %struct.S] %arr"] == "[2 x %struct.S]"  # arguments print their own type


def test_quoted_names() -> None:
    graph = build("""
        @"my global" = global i32 1
        define i32 @"odd name"(i32 %"arg 1") {
          %"a b" = load i32, ptr @"my global"
          %c = add i32 %"a b", %"arg 1"
          ret i32 %c
        }
    """)
    texts = [full_text(n) for n in graph.node]
    assert '@"my global" = global i32 1' in texts and 'i32 %"a b"' in texts and 'i32 %"arg 1"' in texts
    assert graph.function[0].name == "odd name"


def test_empty_module() -> None:
    graph = build("")
    assert [n.text for n in graph.node] == ["[external]"] and not graph.edge
    with pytest.raises(GraphCreationError, match="Module `<stdin>` is empty"):
        build("", strict=True)


# -- §1.9 options ---------------------------------------------------------------------------------------------

CALLS = """
    define i32 @g(i32 %x) {
      %c = icmp sgt i32 %x, 0
      br i1 %c, label %a, label %b
    a:
      ret i32 1
    b:
      ret i32 %x
    }
    define i32 @f() {
      %r = call i32 @g(i32 5)
      ret i32 %r
    }
"""


def test_instructions_only() -> None:
    full = build(CALLS)
    graph = build(CALLS, instructions_only=True)
    assert all(n.type == 0 for n in graph.node)
    assert not [e for e in edge_lines(graph) if e.startswith("DATA")]
    assert [n.text for n in graph.node] == [n.text for n in full.node if n.type == 0]


def test_ignore_call_returns() -> None:
    graph = build(CALLS, ignore_call_returns=True)
    calls = [e for e in edge_lines(graph) if e.startswith("CALL")]
    entry_g = node_with(graph, "%c = icmp sgt i32 %x, 0")
    site = node_with(graph, "%r = call i32 @g(i32 5)")
    entry_f = site
    assert calls == [f"CALL 0->{entry_g} p0", f"CALL 0->{entry_f} p0", f"CALL {site}->{entry_g} p0"]


def test_strict_accepts_connected_graphs() -> None:
    assert len(build(CALLS, strict=True).node) == len(build(CALLS).node)


# -- profile features (SPEC §1.2, §1.8) -----------------------------------------------------------------------


def test_profile_features() -> None:
    graph = build("""
        define i32 @f(i1 %c) !prof !0 {
          br i1 %c, label %a, label %b, !prof !1
        a:
          ret i32 1
        b:
          ret i32 2
        }
        !llvm.module.flags = !{!2}
        !0 = !{!"function_entry_count", i64 100}
        !1 = !{!"branch_weights", i32 30, i32 70}
        !2 = !{i32 1, !"ProfileSummary", !3}
        !3 = !{!4, !5, !6, !7, !8, !9, !10, !11}
        !4 = !{!"ProfileFormat", !"InstrProf"}
        !5 = !{!"TotalCount", i64 1000}
        !6 = !{!"MaxCount", i64 70}
        !7 = !{!"MaxInternalCount", i64 30}
        !8 = !{!"MaxFunctionCount", i64 100}
        !9 = !{!"NumCounts", i64 3}
        !10 = !{!"NumFunctions", i64 1}
        !11 = !{!"DetailedSummary", !12}
        !12 = !{}
    """)
    branch = [n for n in graph.node if n.text == "br"][0].features.feature
    assert branch["llvm_profile_total_weight"].int64_list.value == [100]
    assert branch["llvm_profile_true_weight"].int64_list.value == [30]
    assert branch["llvm_profile_false_weight"].int64_list.value == [70]
    assert graph.function[0].features.feature["llvm_profile_entry_count"].int64_list.value == [100]
    module = graph.module[0].features.feature
    assert module["llvm_profile_total_count"].int64_list.value == [1000]
    assert module["llvm_profile_max_function_count"].int64_list.value == [100]
    assert module["llvm_profile_num_functions"].int64_list.value == [1]


# -- module and inputs ----------------------------------------------------------------------------------------


def test_module_features_and_names() -> None:
    graph = build("""
        source_filename = "x.c"
        target datalayout = "e-m:e-i64:64"
        target triple = "x86_64-pc-linux-gnu"
    """)
    features = graph.module[0].features.feature
    assert graph.module[0].name == "x.c"
    assert features["llvm_target_triple"].bytes_list.value == [b"x86_64-pc-linux-gnu"]
    assert features["llvm_data_layout"].bytes_list.value == [b"e-m:e-i64:64"]
    assert features["llvm_version"].bytes_list.value == [b"22.1.0"]  # Policy 6
    assert graph_from_ir("", path="some/file.ll").module[0].name == "some/file.ll"


def test_typed_pointer_ir_is_upgraded() -> None:
    graph = build("""
        %struct.S = type { i32 }
        define i32 @f(%struct.S* byval align 8 %s, i32* %p) {
          %a = getelementptr inbounds %struct.S, %struct.S* %s, i32 0, i32 0
          %v = load i32, i32* %a
          store i32 %v, i32* %p
          ret i32 %v
        }
    """)
    texts = [n.text for n in graph.node if n.type == 1]
    assert "ptr" in texts and not [t for t in texts if t.endswith("*")]


def test_bitcode_input(tmp_path) -> None:
    llvm_as = subprocess.run(["which", "llvm-as-22"], capture_output=True, text=True).stdout.strip()
    import llvmlite.binding as llvm

    text = tmp_path / "x.ll"
    text.write_text(CALLS)
    bitcode = parse_ir(textwrap.dedent(CALLS)).as_bitcode()
    from_text = build(CALLS)
    from_bitcode = graph_from_bitcode(bitcode)
    assert from_bitcode.node == from_text.node and from_bitcode.edge == from_text.edge
    del llvm, llvm_as


def test_deterministic_bytes(shared_data) -> None:
    import tarfile

    with tarfile.open(shared_data / "legacy-ir" / "llvm_ir.tar.bz2") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".ll"))
        text = tar.extractfile(member).read().decode()
    first = graph_from_ir(text).SerializeToString(deterministic=True)
    assert first == graph_from_ir(text).SerializeToString(deterministic=True)


# -- errors ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message", "line", "column"),
    [
        ("define i32 @f() {\n  ret i32 %x\n}\n", "use of undefined value '%x'", 2, 11),
        ("garbage here", "expected top-level entity", 1, 1),
        ("define i32 @f() {\n  %1 = add i32 1, 2\n", "found end of file", 3, 1),
        (b"define void @f() {\n  ret void\n}\n; caf\xe9\n", "not UTF-8", 4, 6),
        ("\x00\x01binary", "binary data", 1, 1),
    ],
)
def test_parse_errors_have_line_and_column(data, message, line, column) -> None:
    with pytest.raises(GraphCreationError, match=message) as info:
        graph_from_ir(data, path="bad.ll")
    assert (info.value.path, info.value.line, info.value.column) == ("bad.ll", line, column)
    assert str(info.value).startswith(f"bad.ll:{line}:{column}: ")


def test_bad_bitcode() -> None:
    with pytest.raises(GraphCreationError, match="invalid bitcode"):
        graph_from_bitcode(b"BC\xc0\xde\x00\x00junk", path="x.bc")


def test_old_sret_and_byval_spellings_are_upgraded() -> None:
    # LLVM 10 printed `noalias sret` without a type; LLVM 13+ needs `sret(T)`.
    graph = build("""
        %struct.S = type { i32, i32 }
        define void @f(%struct.S* noalias sret align 4 %out, %struct.S* byval align 8 %in) {
          %a = getelementptr inbounds %struct.S, %struct.S* %in, i32 0, i32 0
          %v = load i32, i32* %a
          %b = getelementptr inbounds %struct.S, %struct.S* %out, i32 0, i32 1
          store i32 %v, i32* %b
          ret void
        }
    """)
    assert [n.text for n in graph.node if n.type == 0][1:] == ["getelementptr", "load", "getelementptr", "store", "ret"]


INVALID_DEBUG_INFO = """\
define i32 @f(i32 %x) !dbg !4 {
  %y = add i32 %x, 1, !dbg !7
  ret i32 %y
}

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_C99, file: !2, emissionKind: FullDebug)
!2 = !DIFile(filename: "a.c", directory: "/tmp")
!4 = distinct !DISubprogram(name: "f", scope: !2, file: !2, line: 1, type: !5, unit: !1)
!5 = !DISubroutineType(types: !6)
!6 = !{null}
!7 = !DILocation(line: 2, column: 3, scope: !2)
"""


def test_invalid_debug_info_is_one_warning_with_the_path(capfd, caplog) -> None:
    # issue 12, item 8: LLVM printed ten lines to stderr, attributed to `<string>`; the graph is still built
    graph = graph_from_ir(INVALID_DEBUG_INFO, path="dir/a.ll")
    assert [n.text for n in graph.node[:4]] == ["[external]", "add", "ret", "i32"]
    assert "!dbg" not in full_text(graph.node[1])  # LLVM dropped the invalid debug info, as LLVM 10 does
    assert capfd.readouterr().err == ""
    [record] = caplog.records
    assert record.getMessage() == (
        "dir/a.ll: warning: ignoring invalid debug info: DILocation's scope must be a DILocalScope"
    )
    bitcode = parse_ir(INVALID_DEBUG_INFO.replace(", !dbg !7", "")).as_bitcode()  # (valid: nothing to say)
    caplog.clear()
    graph_from_bitcode(bitcode, path="b.bc")
    assert capfd.readouterr().err == "" and not caplog.records
