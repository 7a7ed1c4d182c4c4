"""Golden tests: SPEC §1.10 Examples A, B and C (rewritten in LLVM 22 IR) with exact node and edge listings.

Each listing was checked by hand against the rules of SPEC §1.2-§1.6 and the worked examples of §1.10 (see the
comments), and Examples A and C also against the original builder (llvm2graph-10) on their LLVM 10 twins: equal up
to the Policy differences (pointer texts, argument/constant/CALL order) and the intrinsic rename of LLVM 22.
"""

from __future__ import annotations

from pathlib import Path

from programl.graph_builder.llvm import graph_from_ir
from tests.graph_builder.listing import edge_lines, node_lines

DATA = Path(__file__).resolve().parents[1] / "data"


EXAMPLE_A_NODES = [
    'N0 INST [external] blk0 fn0',
    'N1 INST alloca blk0 fn0 | %3 = alloca i32, align 4',
    'N2 INST alloca blk0 fn0 | %4 = alloca i32, align 4',
    'N3 INST store blk0 fn0 | store i32 %0, ptr %3, align 4',
    'N4 VAR ptr blk0 fn0 | ptr %3',
    'N5 INST store blk0 fn0 | store i32 %1, ptr %4, align 4',
    'N6 VAR ptr blk0 fn0 | ptr %4',
    'N7 INST load blk0 fn0 | %5 = load i32, ptr %3, align 4',
    'N8 VAR ptr blk0 fn0 | ptr %3',
    'N9 INST load blk0 fn0 | %6 = load i32, ptr %4, align 4',
    'N10 VAR ptr blk0 fn0 | ptr %4',
    'N11 INST add blk0 fn0 | %7 = add nsw i32 %5, %6',
    'N12 VAR i32 blk0 fn0 | i32 %5',
    'N13 VAR i32 blk0 fn0 | i32 %6',
    'N14 INST ret blk0 fn0 | ret i32 %7',
    'N15 VAR i32 blk0 fn0 | i32 %7',
    'N16 VAR i32 blk1 fn0 | i32 %0',
    'N17 VAR i32 blk1 fn0 | i32 %1',
    'N18 CONST i32 blk1 fn0 | i32 1',
]
EXAMPLE_A_EDGES = [
    'CTRL 1->2 p0', 'CTRL 2->3 p0', 'DATA 4->3 p1', 'CTRL 3->5 p0', 'DATA 6->5 p1', 'CTRL 5->7 p0',
    'DATA 8->7 p0', 'CTRL 7->9 p0', 'DATA 10->9 p0', 'CTRL 9->11 p0', 'DATA 12->11 p0', 'DATA 13->11 p1',
    'CTRL 11->14 p0', 'DATA 15->14 p0', 'DATA 16->3 p0', 'DATA 17->5 p0', 'DATA 1->4 p0', 'DATA 2->6 p0',
    'DATA 1->8 p0', 'DATA 2->10 p0', 'DATA 7->12 p0', 'DATA 9->13 p0', 'DATA 11->15 p0', 'CALL 0->1 p0',
    'CALL 14->0 p0', 'DATA 18->1 p0', 'DATA 18->2 p0',
]

EXAMPLE_B_NODES = [
    'N0 INST [external] blk0 fn0',
    'N1 INST alloca blk0 fn0 | %2 = alloca i32, align 4',
    'N2 INST store blk0 fn0 | store i32 %0, ptr %2, align 4',
    'N3 VAR ptr blk0 fn0 | ptr %2',
    'N4 INST load blk0 fn0 | %3 = load i32, ptr %2, align 4',
    'N5 VAR ptr blk0 fn0 | ptr %2',
    'N6 INST icmp blk0 fn0 | %4 = icmp sgt i32 %3, 0',
    'N7 VAR i32 blk0 fn0 | i32 %3',
    'N8 INST br blk0 fn0 | br i1 %4, label %5, label %7',
    'N9 VAR i1 blk0 fn0 | i1 %4',
    'N10 INST load blk1 fn0 | %6 = load i32, ptr %2, align 4',
    'N11 VAR ptr blk1 fn0 | ptr %2',
    'N12 INST br blk1 fn0 | br label %10',
    'N13 INST load blk2 fn0 | %8 = load i32, ptr %2, align 4',
    'N14 VAR ptr blk2 fn0 | ptr %2',
    'N15 INST sub blk2 fn0 | %9 = sub nsw i32 0, %8',
    'N16 VAR i32 blk2 fn0 | i32 %8',
    'N17 INST br blk2 fn0 | br label %10',
    'N18 INST phi blk3 fn0 | %11 = phi i32 [ %6, %5 ], [ %9, %7 ]',
    'N19 VAR i32 blk3 fn0 | i32 %6',
    'N20 VAR i32 blk3 fn0 | i32 %9',
    'N21 INST ret blk3 fn0 | ret i32 %11',
    'N22 VAR i32 blk3 fn0 | i32 %11',
    'N23 VAR i32 blk4 fn0 | i32 %0',
    'N24 CONST i32 blk4 fn0 | i32 1',
    'N25 CONST i32 blk4 fn0 | i32 0',
]
EXAMPLE_B_EDGES = [
    'CTRL 1->2 p0', 'DATA 3->2 p1', 'CTRL 2->4 p0', 'DATA 5->4 p0', 'CTRL 4->6 p0', 'DATA 7->6 p0',
    'CTRL 6->8 p0', 'DATA 9->8 p0', 'DATA 11->10 p0', 'CTRL 10->12 p0', 'DATA 14->13 p0', 'CTRL 13->15 p0',
    'DATA 16->15 p1', 'CTRL 15->17 p0', 'DATA 19->18 p0', 'DATA 20->18 p1', 'CTRL 18->21 p0', 'DATA 22->21 p0',
    'DATA 23->2 p0', 'DATA 1->3 p0', 'DATA 1->5 p0', 'DATA 4->7 p0', 'DATA 6->9 p0', 'DATA 1->11 p0',
    'DATA 1->14 p0', 'DATA 13->16 p0', 'DATA 10->19 p0', 'DATA 15->20 p0', 'DATA 18->22 p0', 'CTRL 8->10 p0',
    'CTRL 8->13 p1', 'CTRL 12->18 p0', 'CTRL 17->18 p0', 'CALL 0->1 p0', 'CALL 21->0 p0', 'DATA 24->1 p0',
    'DATA 25->6 p1', 'DATA 25->15 p0',
]

EXAMPLE_C_NODES = [
    'N0 INST [external] blk0 fn0',
    'N1 INST ; undefined function blk0 fn0 | ',
    'N2 INST ; undefined function blk0 fn1 | ',
    'N3 INST icmp blk0 fn2 | %c = icmp sgt i32 %x, 0',
    'N4 INST br blk0 fn2 | br i1 %c, label %pos, label %neg',
    'N5 VAR i1 blk0 fn2 | i1 %c',
    'N6 INST ret blk1 fn2 | ret i32 1',
    'N7 INST ret blk2 fn2 | ret i32 2',
    'N8 VAR i32 blk3 fn2 | i32 %x',
    'N9 INST alloca blk3 fn3 | %buf = alloca i8, align 1',
    'N10 INST call blk3 fn3 | call void @llvm.memset.p0.i64(ptr %buf, i8 0, i64 1, i1 false)',
    'N11 VAR ptr blk3 fn3 | ptr %buf',
    'N12 INST call blk3 fn3 | %r = call i32 @callee(i32 %argc)',
    'N13 INST call blk3 fn3 | %p = call i32 (ptr, ...) @printf(ptr getelementptr inbounds ([7 x i8], ptr @.str, i64 0, i64 1), i32 %r)',
    'N14 VAR i32 blk3 fn3 | i32 %r',
    'N15 INST load blk3 fn3 | %f = load ptr, ptr @fp, align 8',
    'N16 INST call blk3 fn3 | %i = call i32 %f(i32 %r)',
    'N17 VAR i32 blk3 fn3 | i32 %r',
    'N18 VAR ptr blk3 fn3 | ptr %f',
    'N19 INST load blk3 fn3 | %v = load i32, ptr @g, align 4',
    'N20 INST switch blk3 fn3 | switch i32 %v, label %def [\n    i32 1, label %one\n    i32 2, label %two\n  ]',
    'N21 VAR i32 blk3 fn3 | i32 %v',
    'N22 INST add blk4 fn3 | %a = add i32 %i, 1',
    'N23 VAR i32 blk4 fn3 | i32 %i',
    'N24 INST br blk4 fn3 | br label %join',
    'N25 INST br blk5 fn3 | br label %join',
    'N26 INST br blk6 fn3 | br label %join',
    'N27 INST phi blk7 fn3 | %m = phi i32 [ %a, %one ], [ 1, %two ], [ 0, %def ]',
    'N28 VAR i32 blk7 fn3 | i32 %a',
    'N29 INST ret blk7 fn3 | ret i32 %m',
    'N30 VAR i32 blk7 fn3 | i32 %m',
    'N31 INST ret blk8 fn3 | ret i32 7',
    'N32 VAR i32 blk9 fn3 | i32 %argc',
    'N33 CONST i32 blk9 fn0 | i32 0',
    'N34 CONST i32 blk9 fn0 | i32 1',
    'N35 CONST i32 blk9 fn0 | i32 2',
    'N36 CONST i8 blk9 fn0 | i8 0',
    'N37 CONST i64 blk9 fn0 | i64 1',
    'N38 CONST i1 blk9 fn0 | i1 false',
    'N39 CONST ptr blk9 fn0 | ptr getelementptr inbounds ([7 x i8], ptr @.str, i64 0, i64 1)',
    'N40 CONST ptr blk9 fn0 | @fp = global ptr @callee, align 8',
    'N41 CONST ptr blk9 fn0 | @g = global i32 5, align 4',
    'N42 CONST i32 blk9 fn0 | i32 7',
]
EXAMPLE_C_EDGES = [
    'CTRL 3->4 p0', 'DATA 5->4 p0', 'DATA 8->3 p0', 'DATA 3->5 p0', 'CTRL 4->6 p0', 'CTRL 4->7 p1',
    'CTRL 9->10 p0', 'DATA 11->10 p0', 'CTRL 10->12 p0', 'CTRL 12->13 p0', 'DATA 14->13 p1', 'CTRL 13->15 p0',
    'CTRL 15->16 p0', 'DATA 17->16 p0', 'DATA 18->16 p1', 'CTRL 16->19 p0', 'CTRL 19->20 p0', 'DATA 21->20 p0',
    'DATA 23->22 p0', 'CTRL 22->24 p0', 'DATA 28->27 p0', 'CTRL 27->29 p0', 'DATA 30->29 p0', 'DATA 32->12 p0',
    'DATA 9->11 p0', 'DATA 12->14 p0', 'DATA 12->17 p0', 'DATA 15->18 p0', 'DATA 19->21 p0', 'DATA 16->23 p0',
    'DATA 22->28 p0', 'DATA 27->30 p0', 'CTRL 20->26 p0', 'CTRL 20->22 p1', 'CTRL 20->25 p2', 'CTRL 26->27 p0',
    'CTRL 24->27 p0', 'CTRL 25->27 p0', 'CALL 0->1 p0', 'CALL 1->0 p0', 'CALL 0->2 p0', 'CALL 2->0 p0',
    'CALL 0->3 p0', 'CALL 6->0 p0', 'CALL 7->0 p0', 'CALL 0->9 p0', 'CALL 29->0 p0', 'CALL 10->2 p0',
    'CALL 2->10 p0', 'CALL 12->3 p0', 'CALL 6->12 p0', 'CALL 7->12 p0', 'CALL 13->1 p0', 'CALL 1->13 p0',
    'DATA 33->3 p1', 'DATA 33->27 p2', 'DATA 34->6 p0', 'DATA 34->9 p0', 'DATA 34->20 p2', 'DATA 34->22 p1',
    'DATA 34->27 p1', 'DATA 35->7 p0', 'DATA 35->20 p4', 'DATA 36->10 p1', 'DATA 37->10 p2', 'DATA 38->10 p3',
    'DATA 39->13 p0', 'DATA 40->15 p0', 'DATA 41->19 p0', 'DATA 42->31 p0',
]

def build(name: str):
    return graph_from_ir((DATA / f"example_{name}.ll").read_text())


def flow_counts(graph) -> tuple[int, int, int]:
    return tuple(sum(1 for e in graph.edge if e.flow == flow) for flow in (0, 1, 2))


def test_example_a_listing() -> None:
    graph = build("a")
    assert node_lines(graph) == EXAMPLE_A_NODES
    assert edge_lines(graph) == EXAMPLE_A_EDGES


def test_example_a_counts_match_spec() -> None:
    # SPEC §1.10: 19 nodes, 27 edges (7 control, 18 data, 2 call)
    graph = build("a")
    assert len(graph.node) == 19
    assert flow_counts(graph) == (7, 18, 2)
    assert [f.name for f in graph.function] == ["A"]
    assert graph.module[0].name == "foo.c"
    # the external node has no features message at all (absent, not empty)
    assert not graph.node[0].HasField("features")
    # both uses of %3 get their own variable node (per-use variables, SPEC §1.4)
    assert graph.node[4].text == graph.node[8].text == "ptr"
    assert graph.node[4].features == graph.node[8].features


def test_example_b_listing() -> None:
    graph = build("b")
    assert node_lines(graph) == EXAMPLE_B_NODES
    assert edge_lines(graph) == EXAMPLE_B_EDGES


def test_example_b_facts_from_spec() -> None:
    graph = build("b")
    assert graph.module[0].name == "-"
    triple = graph.module[0].features.feature["llvm_target_triple"].bytes_list.value[0]
    assert triple == b"x86_64-unknown-linux-gnu"
    edges = set(edge_lines(graph))
    # br (N8) -> first instruction of blk1 at position 0, of blk2 at position 1; both br -> phi at position 0
    assert {"CTRL 8->10 p0", "CTRL 8->13 p1", "CTRL 12->18 p0", "CTRL 17->18 p0"} <= edges
    # phi operands at positions 0 and 1; `sub nsw i32 0, %8`: constant 0 at 0, the variable at 1
    assert {"DATA 19->18 p0", "DATA 20->18 p1", "DATA 25->15 p0", "DATA 16->15 p1"} <= edges
    assert {e for e in edge_lines(graph) if e.startswith("CALL")} == {"CALL 0->1 p0", "CALL 21->0 p0"}
    assert [n.block for n in graph.node[23:]] == [4, 4, 4]  # argument and constants: one past the last block


def test_example_c_listing() -> None:
    graph = build("c")
    assert node_lines(graph) == EXAMPLE_C_NODES
    assert edge_lines(graph) == EXAMPLE_C_EDGES


def test_example_c_facts_from_spec() -> None:
    graph = build("c")
    edges = set(edge_lines(graph))
    assert [f.name for f in graph.function] == ["printf", "llvm.memset.p0.i64", "callee", "main"]
    # placeholders for the two declarations, block 0
    assert EXAMPLE_C_NODES[1:3] == ["N1 INST ; undefined function blk0 fn0 | ", "N2 INST ; undefined function blk0 fn1 | "]
    # callee's two rets (N6, N7) link back to the external node and to the call site (N12)
    assert {"CALL 6->0 p0", "CALL 7->0 p0", "CALL 12->3 p0", "CALL 6->12 p0", "CALL 7->12 p0"} <= edges
    # printf call <-> printf placeholder; no CALL edge for the indirect call N16, whose callee %f is a VAR at 1
    assert {"CALL 13->1 p0", "CALL 1->13 p0", "DATA 18->16 p1"} <= edges
    assert not [e for e in edges if e.startswith("CALL") and ("16->" in e or "->16 " in e)]
    # switch successors: default 0, case one 1, case two 2; data: condition 0, case 1 at 2, case 2 at 4
    assert {"CTRL 20->26 p0", "CTRL 20->22 p1", "CTRL 20->25 p2", "DATA 21->20 p0", "DATA 34->20 p2",
            "DATA 35->20 p4"} <= edges
    # the unreachable block's `ret i32 7` (N31) has its constant edge and nothing else
    assert [e for e in edge_lines(graph) if "->31 " in e or " 31->" in e] == ["DATA 42->31 p0"]
    # constants: i32 1 is shared by the alloca size, callee's `ret i32 1`, the switch case, the add and the phi
    assert sorted(e for e in edges if e.startswith("DATA 34->")) == [
        "DATA 34->20 p2", "DATA 34->22 p1", "DATA 34->27 p1", "DATA 34->6 p0", "DATA 34->9 p0",
    ]
    texts = {line.split(" | ")[1]: line.split()[2] for line in EXAMPLE_C_NODES if " CONST " in line}
    assert texts["@g = global i32 5, align 4"] == "ptr"
    assert texts["@fp = global ptr @callee, align 8"] == "ptr"
    assert texts["ptr getelementptr inbounds ([7 x i8], ptr @.str, i64 0, i64 1)"] == "ptr"
