"""A DeepDataFlow directory of graphs with the original's (LLVM 10) texts, and the dead branches of old IR (issue 36
item 5): DeepDataFlow.from_directory's ``typed_pointers`` (part of the processed key) and the AddDeadBranches transform."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

from programl.data.vocabulary import Vocabulary
from programl.dataflow import analyze
from programl.datasets import AddDeadBranches, DeepDataFlow
from programl.proto import Node, ProgramGraph

IR = """
define i32 @f(i32* %p, i32 %n) {
entry:
  %a = alloca i32*, align 8
  store i32* %p, i32** %a, align 8
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %yes, label %no
yes:
  %q = load i32*, i32** %a, align 8
  %v = load i32, i32* %q, align 4
  ret i32 %v
no:
  ret i32 0
}
"""


def _as_original(graph: ProgramGraph) -> ProgramGraph:
    """``graph`` with the texts llvm2graph-10 gives its pointers (every ``ptr`` here is an ``i32*`` or ``i32**``)."""
    out = ProgramGraph()
    out.CopyFrom(graph)
    for node in out.node:
        if node.type != Node.INSTRUCTION and node.text == "ptr":
            node.text = "i32*"
    return out


def _data_set(root: Path, graph: ProgramGraph, vocabulary: Vocabulary) -> Path:
    for sub in ("graphs", "labels/reachability", "train", "vocab"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    name = "f.ll"
    (root / "graphs" / f"{name}.ProgramGraph.pb").write_bytes(graph.SerializeToString())
    labels = analyze(graph, "reachability", seed=0)
    (root / "labels" / "reachability" / f"{name}.ProgramGraphFeaturesList.pb").write_bytes(labels.SerializeToString())
    (root / "train" / f"{name}.ProgramGraph.pb").symlink_to(f"../graphs/{name}.ProgramGraph.pb")
    vocabulary.save(root / "vocab" / "programl.csv")
    return root


def test_a_data_set_of_the_originals_graphs_reads_in_llvm22_texts(tmp_path: Path) -> None:
    from programl.graph_builder.llvm import graph_from_ir

    ours = graph_from_ir(IR)
    texts = sorted({n.text for n in ours.node})
    vocabulary = Vocabulary(texts, [1] * len(texts))
    expected = [vocabulary[n.text] for n in ours.node]
    root = _data_set(tmp_path / "ddf", _as_original(ours), vocabulary)
    auto = DeepDataFlow.from_directory(root, "reachability", "train", max_steps=None)
    keep = DeepDataFlow.from_directory(root, "reachability", "train", max_steps=None, typed_pointers="keep")
    assert auto[0].x.tolist() == expected
    assert (keep[0].x == len(vocabulary)).sum() == sum(n.text == "ptr" for n in ours.node) > 0
    # each mode has its own processed directory (the cache key includes the option)
    assert Path(auto.processed_dir) != Path(keep.processed_dir)
    assert Path(keep.processed_dir).parent.name.endswith("-keep")
    assert DeepDataFlow.from_directory(root, "reachability", "train", max_steps=None)[0].x.tolist() == expected
    with pytest.raises(ValueError, match="typed_pointers"):
        DeepDataFlow.from_directory(root, "reachability", "train", typed_pointers="off")


def test_add_dead_branches_appends_isolated_unlabelled_br_nodes() -> None:
    data = Data(
        x=torch.tensor([3, 4, 5]),
        node_type=torch.tensor([0, 1, 0]),
        edge_index=torch.tensor([[0, 1], [1, 2]]),
        edge_flow=torch.tensor([1, 1]),
        edge_pos=torch.tensor([0, 0]),
        root=torch.tensor([1, 0, 0]),
        y=torch.tensor([1, 0, 1]),
        step_count=torch.tensor([2]),
        num_nodes=3,
    )
    out = AddDeadBranches(br_id=7, probability=1.0, max_count=2, seed=0)(data.clone())
    k = int(out.num_nodes) - 3
    assert 1 <= k <= 2
    assert out.x.tolist() == [3, 4, 5] + [7] * k
    assert out.node_type.tolist() == [0, 1, 0] + [0] * k
    assert out.y.tolist() == [1, 0, 1] + [0] * k and out.root.tolist() == [1, 0, 0] + [0] * k
    assert out.edge_index.tolist() == data.edge_index.tolist() and out.step_count.tolist() == [2]
    assert AddDeadBranches(7, probability=0.0)(data.clone()).num_nodes == 3
    with pytest.raises(ValueError):
        AddDeadBranches(7, probability=2.0)


def test_keyed_dead_branches_depend_on_the_example_alone() -> None:
    """``keyed=True`` (training's ``--dead-branches``): an example gets the same dead branches whenever it is drawn,
    in any order and from a fresh transform (a resumed run, another worker); other examples get other draws."""

    def example(graph: int, root: int) -> Data:
        return Data(
            x=torch.arange(6),
            root=torch.nn.functional.one_hot(torch.tensor(root), 6),
            y=torch.zeros(6, dtype=torch.long),
            graph_index=torch.tensor([graph]),
            num_nodes=6,
        )

    keys = [(g, r) for g in range(20) for r in (0, 3)]
    first = AddDeadBranches(7, probability=0.5, max_count=3, seed=204, keyed=True)
    counts = {k: int(first(example(*k)).num_nodes) for k in keys}
    again = AddDeadBranches(7, probability=0.5, max_count=3, seed=204, keyed=True)
    assert {k: int(again(example(*k)).num_nodes) for k in reversed(keys)} == counts
    assert set(counts.values()) >= {6, 7} and max(counts.values()) <= 9  # some without, some with 1..3
    other = AddDeadBranches(7, probability=0.5, max_count=3, seed=205, keyed=True)
    assert {k: int(other(example(*k)).num_nodes) for k in keys} != counts
    with pytest.raises(ValueError, match="seed"):
        AddDeadBranches(7, keyed=True)


def test_dead_branch_labels_are_those_of_the_analyses() -> None:
    """The labels AddDeadBranches gives (0) are what the analyses give an isolated ``br`` in a built graph."""
    from programl.graph_builder.llvm import graph_from_ir

    graph = graph_from_ir(IR)
    dead = graph.node.add(type=Node.INSTRUCTION, text="br", function=graph.node[1].function, block=99)
    dead.features.feature["full_text"].bytes_list.value.append(b"br label %yes")
    index = len(graph.node) - 1
    for analysis in ("reachability", "dominance", "datadep", "liveness", "subexpressions"):
        try:
            labels = analyze(graph, analysis, seed=0)
        except Exception:  # noqa: BLE001 - no eligible root in this small graph
            continue
        for record in labels.graph:
            values = record.node_features.feature_list["data_flow_value"].feature
            roots = record.node_features.feature_list["data_flow_root_node"].feature
            if roots[index].int64_list.value[0]:
                continue  # the dead branch itself as root
            assert values[index].int64_list.value[0] == 0, analysis
