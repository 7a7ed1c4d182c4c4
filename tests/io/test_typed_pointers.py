"""Graphs built by the original ProGraML 0.3.2 (LLVM 10 texts such as ``i32*``) read by this project's vocabularies
and models (issue 36 item 5; programl.io.typed_pointers, to_pyg's ``typed_pointers``, ``programl predict
--typed-pointers``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from programl.cli import predict as predict_cli
from programl.datasets.transforms import TextTable
from programl.io.pyg import to_pyg
from programl.io.typed_pointers import (
    TYPED_POINTER_MODES,
    has_typed_pointer_texts,
    llvm22_text,
    vocabulary_ids,
)
from programl.proto import Node, ProgramGraph

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"


@pytest.mark.parametrize(
    "original, llvm22",
    [
        # SPEC §1.7: pointer texts of variables and constants
        ("i32*", "ptr"),
        ("i8**", "ptr"),
        ("struct*", "ptr"),
        ("struct**", "ptr"),
        ("%struct.S*", "ptr"),
        ('%"class.geo::Shape"*', "ptr"),
        ("[4 x %struct.S]*", "ptr"),
        ("i32 (i32)*", "ptr"),
        ("void (i8*, ...)*", "ptr"),
        ("void (i32 (i8*)*, i8*)*", "ptr"),
        ("x86_fp80*", "ptr"),
        # pointers inside aggregates
        ("[4 x i8*]", "[4 x ptr]"),
        ("[3 x [4 x i8*]]", "[3 x [4 x ptr]]"),
        ("<2 x double*>", "<2 x ptr>"),
        ("[4 x %struct.S*]", "[4 x ptr]"),
        ("[2 x void (i8*)*]", "[2 x ptr]"),
        # address spaces (OpenCL)
        ("float addrspace(1)*", "ptr addrspace(1)"),
        ("%struct.S addrspace(3)*", "ptr addrspace(3)"),
        ("i8 addrspace(1)**", "ptr"),
        ("i8 addrspace(1)* addrspace(3)*", "ptr addrspace(3)"),
        ("[2 x float addrspace(3)*]", "[2 x ptr addrspace(3)]"),
        ("void (float addrspace(1)*)*", "ptr"),
        # texts that are the same in LLVM 22
        ("i32", "i32"),
        ("struct", "struct"),
        ("[4 x %struct.S]", "[4 x %struct.S]"),
        ("<4 x float>", "<4 x float>"),
        ('[2 x %"class.Foo<int*>"]', '[2 x %"class.Foo<int*>"]'),  # a `*` inside a quoted name is not a pointer
        ("alloca", "alloca"),
        ("[external]", "[external]"),
        ("; undefined function", "; undefined function"),
        ("ptr", "ptr"),
        ("ptr addrspace(1)", "ptr addrspace(1)"),
    ],
)
def test_llvm22_text(original: str, llvm22: str) -> None:
    assert llvm22_text(original) == llvm22


def test_typed_pointer_graphs_are_told_by_a_trailing_star() -> None:
    assert has_typed_pointer_texts(["alloca", "i32", "i32*"])
    assert not has_typed_pointer_texts(["alloca", "i32", "ptr", "[4 x ptr]", '[2 x %"class.Foo<int*>"]'])


def test_vocabulary_ids_by_mode() -> None:
    ours = {"ptr": 0, "i32": 1, "[4 x ptr]": 2}
    texts = ["i32*", "i32", "[4 x i8*]", "float*"]
    assert vocabulary_ids(texts, ours, 3) == [0, 1, 2, 0]  # auto
    assert vocabulary_ids(texts, ours, 3, "map") == [0, 1, 2, 0]
    assert vocabulary_ids(texts, ours, 3, "keep") == [3, 1, 3, 3]
    # a vocabulary of typed-pointer texts (the released vocab_20.06.01) keeps its own ids under auto
    released = {"i32*": 0, "i32": 1, "ptr": 2}
    assert vocabulary_ids(texts, released, 3) == [0, 1, 3, 2]
    assert vocabulary_ids(texts, released, 3, "map") == [2, 1, 3, 2]
    # a graph without typed-pointer texts is looked up as it is, even where a text holds a `*` (quoted names)
    assert vocabulary_ids(['[2 x %"class.Foo<int*>"]'], {"[2 x ptr]": 0}, 1) == [1]
    with pytest.raises(ValueError, match="auto, map, keep"):
        vocabulary_ids(texts, ours, 3, "on")


def _typed_graph() -> ProgramGraph:
    """A small graph with the original's texts (what llvm2graph-10 makes of `int *p = &x; return *p;`)."""
    graph = ProgramGraph()
    graph.node.add(type=Node.INSTRUCTION, text="[external]")
    for kind, text in [
        (Node.INSTRUCTION, "alloca"),
        (Node.VARIABLE, "i32*"),
        (Node.INSTRUCTION, "load"),
        (Node.VARIABLE, "i32**"),
        (Node.CONSTANT, "[4 x i8*]"),
        (Node.VARIABLE, "i32"),
    ]:
        graph.node.add(type=kind, text=text)
    graph.edge.add(flow=1, source=1, target=2)
    graph.edge.add(flow=1, source=2, target=3)
    return graph


def test_to_pyg_reads_the_originals_texts_in_their_llvm22_form() -> None:
    vocabulary = {"alloca": 0, "load": 1, "ptr": 2, "i32": 3, "[4 x ptr]": 4, "[external]": 5}
    graph = _typed_graph()
    assert to_pyg(graph, vocabulary).x.tolist() == [5, 0, 2, 1, 2, 4, 3]
    assert to_pyg(graph, vocabulary, typed_pointers="map").x.tolist() == [5, 0, 2, 1, 2, 4, 3]
    assert to_pyg(graph, vocabulary, typed_pointers="keep").x.tolist() == [5, 0, 6, 1, 6, 6, 3]
    # the texts kept are the graph's own
    assert to_pyg(graph, vocabulary, keep_text=True).text[2] == "i32*"
    with pytest.raises(ValueError, match="typed_pointers"):
        to_pyg(graph, vocabulary, typed_pointers="yes")


def test_a_growing_table_keeps_the_texts_unless_asked_to_map() -> None:
    table = TextTable()
    to_pyg(_typed_graph(), table)
    assert "i32*" in table and "ptr" not in table
    table = TextTable()
    to_pyg(_typed_graph(), table, typed_pointers="map")
    assert "ptr" in table and "i32*" not in table


def test_predict_offers_the_modes_of_the_library() -> None:
    assert predict_cli.TYPED_POINTER_MODES == TYPED_POINTER_MODES


# ---------------------------------------------------------------------------------------------------------------
# With graphs of the original builder itself


@pytest.fixture(scope="module")
def both_builds() -> list[tuple[str, ProgramGraph, ProgramGraph]]:
    """(program, the original's graph, ours) of a few test programs, from one clang-14 IR text each."""
    from programl.graph_builder.llvm import graph_from_ir
    from tests.graph_builder.reference import find_clang14, find_llvm2graph, llvm10_ir, reference_graph

    if not find_llvm2graph():
        pytest.skip("the original ProGraML 0.3.2's llvm2graph-10 is not installed (make reference)")
    if not find_clang14():
        pytest.skip("clang-14 (IR that LLVM 10 reads) is not installed (make reference)")
    out = []
    for name in ("linked_list.c", "function_pointers.c", "structs.c"):
        path = PROGRAMS / name
        if not path.exists():
            continue
        ir = llvm10_ir(path)
        out.append((name, reference_graph(ir), graph_from_ir(ir)))
    if not out:
        pytest.skip("none of the test programs is present")
    return out


def _instruction_nodes(graph: ProgramGraph) -> np.ndarray:
    return np.array([i for i, n in enumerate(graph.node) if n.type == Node.INSTRUCTION and i], dtype=np.int64)


def test_the_originals_graph_is_in_the_models_vocabulary(both_builds) -> None:
    from programl.pretrained.hub import pretrained

    vocabulary = pretrained("reachability").vocabulary
    oov = len(vocabulary)
    for name, original, ours in both_builds:
        assert has_typed_pointer_texts([n.text for n in original.node]), name
        kept = to_pyg(original, vocabulary, typed_pointers="keep").x
        mapped = to_pyg(original, vocabulary).x
        assert (kept == oov).any(), name  # the typed-pointer texts are unknown as they are
        # mapped, the original's texts are the ones this project's graph has (LLVM 22's)
        assert {llvm22_text(n.text) for n in original.node} <= {n.text for n in ours.node}, name
        assert (mapped == oov).sum() == (to_pyg(ours, vocabulary).x == oov).sum(), name
        # instructions keep their ids: opcodes have no pointer text
        assert mapped[_instruction_nodes(original)].tolist() == kept[_instruction_nodes(original)].tolist(), name


def test_predict_gives_the_same_labels_on_the_originals_graph(both_builds) -> None:
    """Done-when of issue 36 item 5 on small programs: roots at the same instructions, the same predicted labels on
    every instruction (both builders emit the instructions of the same IR in the same order)."""
    from programl.pretrained.hub import pretrained
    from programl.tasks.dataflow.predict import predict_dataflow

    model = pretrained("reachability")
    compared = 0
    for name, original, ours in both_builds:
        mine, theirs = _instruction_nodes(ours), _instruction_nodes(original)
        if [ours.node[i].text for i in mine] != [original.node[i].text for i in theirs]:
            continue  # an LLVM 22 effect on the instructions (debug intrinsics): not this program
        picks = np.linspace(0, len(mine) - 1, num=min(4, len(mine))).astype(int)
        a = predict_dataflow(model, ours, roots=mine[picks].tolist())
        b = predict_dataflow(model, original, roots=theirs[picks].tolist())
        kept = predict_dataflow(model, original, roots=theirs[picks].tolist(), typed_pointers="keep")
        assert (a.predicted[:, mine] == b.predicted[:, theirs]).all(), name
        assert np.allclose(a.probabilities[:, mine], b.probabilities[:, theirs], atol=1e-4), name
        assert kept.roots.tolist() == b.roots.tolist()
        compared += 1
    assert compared
