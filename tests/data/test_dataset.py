"""The PyG dataset over the DeepDataFlow layout (DeepDataFlow.from_directory): examples equal to to_pyg_examples, the
step-count and graph-size filters, ProGraML's released layout, batching, the fixed validation sample."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.loader import DataLoader  # noqa: E402

from programl.data.deepdataflow import Layout, build_dataset, discover_inputs, read_manifest  # noqa: E402
from programl.data.deepdataflow.store import prepare_split  # noqa: E402
from programl.data.vocabulary import Vocabulary  # noqa: E402
from programl.dataflow import ANALYSES, analyze_arrays  # noqa: E402
from programl.datasets import DeepDataFlow  # noqa: E402
from programl.io.files import read_features_list, read_graph  # noqa: E402
from programl.io.pyg import to_pyg_examples  # noqa: E402
from programl.loader import NodeBudgetBatchSampler  # noqa: E402
from programl.proto import ProgramGraphFeaturesList  # noqa: E402
from tests.data._ddf import write_sources  # noqa: E402

DATA = Path(__file__).resolve().parent
ATTRIBUTES = ("x", "node_type", "edge_index", "edge_flow", "edge_pos", "root", "y", "step_count")


@pytest.fixture(scope="module")
def src(tmp_path_factory) -> Path:
    """The IR fixtures of tests/data and chains of 2..40 instructions (15 source programs)."""
    return write_sources(tmp_path_factory.mktemp("src"), chains=(2, 3, 5, 8, 12, 16, 20, 25, 30, 35, 40))


@pytest.fixture(scope="module")
def ddf(src: Path, tmp_path_factory) -> Path:
    """A small data set of ``src``, its labels in the compact form (the builder's default)."""
    root = tmp_path_factory.mktemp("ddf")
    build_dataset(discover_inputs([src]), root, jobs=2)
    assert (root / "labels" / "all").is_dir() and not (root / "labels" / "liveness").exists()
    return root


@pytest.fixture(scope="module")
def ddf_protobuf(src: Path, tmp_path_factory) -> Path:
    """The same data set with the original's protobuf label files."""
    root = tmp_path_factory.mktemp("ddf-protobuf")
    build_dataset(discover_inputs([src]), root, jobs=2, label_format="protobuf")
    assert (root / "labels" / "liveness").is_dir() and not (root / "labels" / "all").exists()
    return root


def _equal(a, b) -> None:
    for key in ATTRIBUTES:
        assert torch.equal(a[key], b[key]), key
    assert a.num_nodes == b.num_nodes


def _expected(root: Path, analysis: str, split: str, vocabulary) -> dict[str, list]:
    layout = Layout(root)
    out = {}
    for name in layout.split_names(split):
        path = layout.labels(analysis, name)
        if path.exists():
            out[name] = list(to_pyg_examples(read_graph(layout.graph(name)), read_features_list(path), vocabulary))
    return out


@pytest.mark.parametrize("analysis", ["reachability", "liveness", "datadep"])
def test_examples_equal_to_pyg_of_graph_and_labels(ddf: Path, ddf_protobuf: Path, analysis: str) -> None:
    """The examples of the compact data set are to_pyg_examples of the graphs and the protobuf label files."""
    vocabulary = Vocabulary.load(ddf / "vocab" / "programl.csv")
    assert Vocabulary.load(ddf_protobuf / "vocab" / "programl.csv") == vocabulary
    for split in ("train", "val", "test"):
        dataset = DeepDataFlow.from_directory(ddf, analysis, split, max_steps=None, max_nodes=None)
        expected = _expected(ddf_protobuf, analysis, split, vocabulary)
        assert len(dataset) == dataset.num_records == sum(len(v) for v in expected.values())
        seen: dict[str, int] = {}
        for i in range(len(dataset)):
            name = dataset.graph_name(i)
            example = dataset[i]
            _equal(example, expected[name][seen.get(name, 0)])
            assert dataset.graph_names[int(example.graph_index)] == name
            seen[name] = seen.get(name, 0) + 1


@pytest.mark.parametrize("analysis", ANALYSES)
def test_compact_and_protobuf_labels_give_the_same_examples(ddf: Path, ddf_protobuf: Path, analysis: str) -> None:
    """The same graphs, splits and vocabulary, and every example of every split equal, for all five analyses."""
    for split in ("train", "val", "test"):
        compact = DeepDataFlow.from_directory(ddf, analysis, split, max_steps=None, max_nodes=None)
        protobuf = DeepDataFlow.from_directory(ddf_protobuf, analysis, split, max_steps=None, max_nodes=None)
        assert compact.graph_names == protobuf.graph_names
        assert compact.num_records == protobuf.num_records and len(compact) == len(protobuf)
        assert np.array_equal(compact.step_counts, protobuf.step_counts)
        for i in range(len(compact)):
            _equal(compact[i], protobuf[i])
            assert int(compact[i].graph_index) == int(protobuf[i].graph_index)
        for name in ("graph.npy", "root.npy", "steps.npy", "label_ptr.npy", "labels.bin"):
            assert (compact.label_dir / name).read_bytes() == (protobuf.label_dir / name).read_bytes(), name


def test_filters_use_the_index_only(ddf: Path, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(ddf, root, symlinks=True)
    full = DeepDataFlow.from_directory(root, "reachability", "train", max_steps=None, max_nodes=None)
    steps, sizes = full.step_counts, full.sizes
    assert len(steps) == len(full) and steps.max() > 10
    shutil.rmtree(root / "graphs")  # the index is enough: no graph is read again
    shutil.rmtree(root / "labels")
    for max_steps, max_nodes in ((10, None), (None, 60), (5, 40), (0, 1)):
        dataset = DeepDataFlow.from_directory(root, "reachability", "train", max_steps=max_steps, max_nodes=max_nodes)
        keep = np.ones(len(full), dtype=bool)
        if max_steps is not None:
            keep &= steps <= max_steps
        if max_nodes is not None:
            keep &= sizes <= max_nodes
        assert len(dataset) == int(keep.sum())
        assert sorted(dataset.step_counts.tolist()) == sorted(steps[keep].tolist())
        for i in range(len(dataset)):
            example = dataset[i]
            assert (max_steps is None or int(example.step_count) <= max_steps) and example.num_nodes > 0
            assert max_nodes is None or example.num_nodes <= max_nodes


def test_counts_match_the_manifest(ddf: Path) -> None:
    manifest = read_manifest(ddf / "manifest.jsonl")
    for split in ("train", "test"):
        names = Layout(ddf).split_names(split)
        for limit in (30, None):
            expected = sum(
                1
                for n in names
                for s in manifest[n]["labels"]["liveness"].get("steps", ())
                if limit is None or s <= limit
            )
            assert len(DeepDataFlow.from_directory(ddf, "liveness", split, max_steps=limit)) == expected


def test_node_budget_batches(ddf: Path) -> None:
    dataset = DeepDataFlow.from_directory(ddf, "datadep", "train", max_steps=None)
    sampler = NodeBudgetBatchSampler(dataset.sizes, 120, shuffle=True, seed=1)
    loader = DataLoader(dataset, batch_sampler=sampler)
    batches = list(loader)
    assert sum(b.num_graphs for b in batches) == len(dataset)
    assert all(b.num_nodes <= 120 or b.num_graphs == 1 for b in batches)
    sampler.set_epoch(1)
    assert [b.num_nodes for b in loader] != [b.num_nodes for b in batches] or len(batches) < 3
    batch = batches[0]
    assert batch.root.sum() == batch.num_graphs  # one root per example
    assert int(batch.edge_index.max()) < batch.num_nodes


def test_fixed_sample_follows_the_original_order(ddf: Path) -> None:
    import random

    dataset = DeepDataFlow.from_directory(ddf, "reachability", "train", max_steps=None)
    sample = dataset.fixed_sample(7, seed=205)
    assert len(sample) == 7
    order = sorted(set(dataset.graph_names))
    random.Random(205).shuffle(order)
    names = [sample.graph_name(i) for i in range(len(sample))]
    ranks = [order.index(n) for n in names]
    assert ranks == sorted(ranks)  # graphs in the shuffled order, their records together
    assert names[0] == next(n for n in order if any(dataset.graph_name(i) == n for i in range(len(dataset))))
    again = dataset.fixed_sample(7, seed=205)
    assert all(torch.equal(sample[i].y, again[i].y) for i in range(7))
    assert len(dataset.fixed_sample(10_000)) == len(dataset)


def test_a_directory_already_built_is_a_deepdataflow(ddf: Path) -> None:
    """One class for one concept: the examples of a built directory are a ``DeepDataFlow`` (they were a second class,
    DeepDataFlowDataset), its vocabulary and texts those of the directory, and opening it writes no PyG record
    (``pre_transform.pt``) nor ``raw/`` beside the data set."""
    dataset = DeepDataFlow.from_directory(ddf, "liveness", "val", max_steps=None)
    assert type(dataset) is DeepDataFlow and dataset.recipe is None
    assert repr(dataset) == (
        f"DeepDataFlow({len(dataset)} examples, liveness, val, directory={str(ddf)!r}, max_steps=all, max_nodes=40000)"
    )
    assert dataset.data_dir == ddf and dataset.raw_dir == str(ddf) and dataset.name == ddf.name
    assert dataset.texts == list(Vocabulary.load(ddf / "vocab" / "programl.csv").texts)
    assert dataset.vocabulary() == Vocabulary.load(ddf / "vocab" / "programl.csv")
    assert type(dataset.fixed_sample(3)) is DeepDataFlow and len(dataset.fixed_sample(3)) == min(3, len(dataset))
    assert not (ddf / "raw").exists() and not list(ddf.rglob("pre_transform.pt"))


def test_pickles_for_loader_workers(ddf: Path) -> None:
    dataset = DeepDataFlow.from_directory(ddf, "liveness", "test", max_steps=None)
    dataset[0]  # opens the memory maps
    copy = pickle.loads(pickle.dumps(dataset))
    _equal(copy[len(copy) - 1], dataset[len(dataset) - 1])
    loader = __import__("torch_geometric.loader", fromlist=["DataLoader"]).DataLoader(dataset, batch_size=4)
    assert sum(b.num_graphs for b in loader) == len(dataset)


def _flip_a_liveness_byte(data: bytes) -> bytes:
    from programl.data.deepdataflow.labels import _sections

    _, sections = _sections(data, "")
    _, _, offset, length, _ = next(s for s in sections if s[0] == "liveness")
    at = offset + length // 2
    return data[:at] + bytes((data[at] ^ 0x40,)) + data[at + 1 :]


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda data: b"\x12\x05garbage", "no PGLABELS header"),
        (lambda data: data[:-3], "sections take"),
        (lambda data: data[:20], "truncated section table"),
        (lambda data: b"", "empty"),
        (_flip_a_liveness_byte, "liveness: checksum mismatch"),
        (lambda data: data[:8] + b"\x07" + data[9:], "format version 7"),
        ("protobuf", "label record"),  # a damaged protobuf file (it is read before the compact one)
    ],
)
def test_unreadable_files_are_skipped_and_recorded(ddf: Path, tmp_path: Path, damage, said: str) -> None:
    root = tmp_path / "copy"
    shutil.copytree(ddf, root, symlinks=True)
    shutil.rmtree(root / "processed", ignore_errors=True)
    victim = Layout(root).split_names("train")[0]
    if damage == "protobuf":
        label = Layout(root).labels("liveness", victim)
        label.parent.mkdir(parents=True)
        label.write_bytes(b"\x12\x05garbage")
    else:
        label = Layout(root).compact_labels(victim)
        label.write_bytes(damage(label.read_bytes()))
    graphs, labels = prepare_split(root, "liveness", "train")
    why = json.loads((labels / "meta.json").read_text())["skipped"][victim]
    assert said in why and "\n" not in why and (damage == "protobuf" or str(label) in why)
    dataset = DeepDataFlow.from_directory(root, "liveness", "train", max_steps=None)
    assert victim not in {dataset.graph_name(i) for i in range(len(dataset))}
    assert not [p for p in (root / "processed").rglob(".*") if p.name.startswith(".")]  # no temporary left


def _made(store: Path) -> int:
    return (store / "meta.json").stat().st_mtime_ns


def test_a_split_whose_files_changed_is_converted_again(ddf: Path, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(ddf, root, symlinks=True)
    shutil.rmtree(root / "processed", ignore_errors=True)
    layout = Layout(root)
    graphs, labels = prepare_split(root, "liveness", "train")
    made = _made(graphs), _made(labels)
    assert prepare_split(root, "liveness", "train") == (graphs, labels)
    assert (_made(graphs), _made(labels)) == made  # current: left as it is
    victim = layout.split_names("train")[0]
    good_labels = layout.compact_labels(victim).read_bytes()
    layout.compact_labels(victim).write_bytes(b"\x12\x05garbage")  # a label file rewritten: its store again
    prepare_split(root, "liveness", "train")
    assert _made(graphs) == made[0] and _made(labels) != made[1]
    assert victim in json.loads((labels / "meta.json").read_text())["skipped"]
    layout.compact_labels(victim).write_bytes(good_labels)
    good_graph = layout.graph(victim).read_bytes()
    layout.graph(victim).write_bytes(b"\xff\xff not a graph")  # a graph rewritten: both stores again
    prepare_split(root, "liveness", "train")
    assert victim in json.loads((graphs / "meta.json").read_text())["skipped"]
    assert victim not in {DeepDataFlow.from_directory(root, "liveness", "train", max_steps=None).graph_name(0)}
    layout.graph(victim).write_bytes(good_graph)  # mended: back in the split, as converted from scratch
    prepare_split(root, "liveness", "train")
    mended = DeepDataFlow.from_directory(root, "liveness", "train", max_steps=None)
    fresh = DeepDataFlow.from_directory(ddf, "liveness", "train", max_steps=None)
    assert len(mended) == len(fresh)
    for i in range(len(fresh)):
        _equal(mended[i], fresh[i])
    assert not [p for p in (root / "processed").rglob(".*") if p.name.startswith(".")]  # no temporary, no stale store


def test_bad_arguments(ddf: Path) -> None:
    with pytest.raises(ValueError, match="unknown analysis"):
        DeepDataFlow.from_directory(ddf, "domination", "train")
    with pytest.raises(ValueError, match="unknown split"):
        DeepDataFlow.from_directory(ddf, "liveness", "training")
    with pytest.raises(FileNotFoundError, match="vocabulary"):
        DeepDataFlow.from_directory(ddf, "liveness", "train", vocabulary_path=ddf / "nope.csv")


# --------------------------------------------------------------------------------------------------------------
# ProGraML's released layout


def _released_labels(result) -> bytes:
    """A label file written with the protobuf API (not our encoder), as ProGraML's C++ tools write it."""
    message = ProgramGraphFeaturesList()
    for k in range(len(result)):
        record = message.graph.add()
        roots = record.node_features.feature_list["data_flow_root_node"]
        values = record.node_features.feature_list["data_flow_value"]
        for node in range(result.num_nodes):
            roots.feature.add().int64_list.value.append(int(node == result.roots[k]))
            values.feature.add().int64_list.value.append(int(result.labels[k, node]))
        record.features.feature["data_flow_step_count"].int64_list.value.append(int(result.step_counts[k]))
        record.features.feature["data_flow_active_node_count"].int64_list.value.append(
            int(result.active_node_counts[k])
        )
    return message.SerializeToString()


RELEASED_VOCAB = """cumulative_frequency\tcumulative_node_frequency\tcount\ttext
0.3\t0.3\t300\ti32
0.5\t0.5\t200\tadd
0.6\t0.6\t100\t[external]
0.7\t0.7\t100\tbr
1\t1\t300\tret
"""


def test_progaml_released_layout(ddf: Path, tmp_path: Path) -> None:
    """graphs/ + labels/domtree/ + split directories of relative symlinks + a ProGraML vocabulary file."""
    root = tmp_path / "released"
    (root / "graphs").mkdir(parents=True)
    (root / "labels" / "domtree").mkdir(parents=True)
    (root / "vocab").mkdir()
    (root / "vocab" / "programl.csv").write_text(RELEASED_VOCAB)
    names = Layout(ddf).graph_names()
    expected = {}
    vocabulary = Vocabulary.load(root / "vocab" / "programl.csv")
    for i, name in enumerate(names):
        released = f"github.{i}.c"
        graph = read_graph(Layout(ddf).graph(name))
        (root / "graphs" / f"{released}.ProgramGraph.pb").write_bytes(graph.SerializeToString())
        split = ("train", "val", "test")[i % 3]
        (root / split).mkdir(exist_ok=True)
        os.symlink(f"../graphs/{released}.ProgramGraph.pb", root / split / f"{released}.ProgramGraph.pb")
        try:
            result = analyze_arrays(graph, "dominance", seed=i)
        except Exception:  # noqa: BLE001 - no eligible root: no label file, as in the released data
            continue
        data = _released_labels(result)
        (root / "labels" / "domtree" / f"{released}.ProgramGraphFeaturesList.pb").write_bytes(data)
        expected[released] = (
            split,
            list(to_pyg_examples(graph, ProgramGraphFeaturesList.FromString(data), vocabulary)),
        )
    for split in ("train", "val", "test"):
        dataset = DeepDataFlow.from_directory(root, "dominance", split, max_steps=None, max_nodes=None)
        mine = {n: e for n, (s, e) in expected.items() if s == split}
        assert len(dataset) == sum(len(e) for e in mine.values())
        seen: dict[str, int] = {}
        for i in range(len(dataset)):
            name = dataset.graph_name(i)
            _equal(dataset[i], mine[name][seen.get(name, 0)])
            seen[name] = seen.get(name, 0) + 1
        # texts outside the 5-entry vocabulary get the OOV id 5
        assert int(dataset[0].x.max()) <= 5
