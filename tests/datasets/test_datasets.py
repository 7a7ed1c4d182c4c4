"""Tests of programl.datasets (issue 10 item 1): the README's examples run as written, then each data set is checked
against the files it was made from, on the data the README examples processed (so the builds run once).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

from programl.data import devmap as devmap_data
from programl.data import poj104 as poj104_data
from programl.data.vocabulary import Vocabulary
from programl.datasets import DEEPDATAFLOW22, POJ104, DeepDataFlow, DevMap, EncodeVocabulary
from programl.exceptions import ProgramlError
from programl.loader import NodeBudgetBatchSampler

REPO = Path(__file__).resolve().parents[2]
SNIPPET = re.compile(r"```python\n(.*?)```", re.DOTALL)
ROWS = range(40)  # the README's DevMap rows


def readme_blocks() -> list[str]:
    """The README's python blocks that use programl.datasets."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [block for block in SNIPPET.findall(text) if "programl.datasets" in block]


@pytest.fixture(scope="module")
def readme(shared_data: Path, clang22, tmp_path_factory) -> tuple[Path, list[str]]:
    """Run each README block in its own interpreter, in a fresh directory; returns the directory and outputs."""
    cwd = tmp_path_factory.mktemp("readme")
    env = dict(os.environ, PROGRAML_SHARED_DATA=str(shared_data), PYTHONPATH=str(REPO))
    outputs = []
    for block in readme_blocks():
        result = subprocess.run(
            [sys.executable, "-c", block], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
        )
        assert result.returncode == 0, f"README block failed:\n{block}\n{result.stderr[-3000:]}"
        outputs.append(result.stdout)
    return cwd, outputs


def test_readme_shows_each_data_set() -> None:
    blocks = readme_blocks()
    assert len(blocks) == 3
    for name in ("DevMap(", "POJ104(", "DeepDataFlow("):
        assert sum(name in b for b in blocks) == 1, name


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
def test_readme_examples_run(readme) -> None:
    _, (devmap_out, poj_out, ddf_out) = readme
    assert re.search(r"^8 \[[01, ]+\] torch\.Size\(\[8, 2\]\)$", devmap_out, re.MULTILINE), devmap_out
    assert "DevMap(20 examples, amd, ncc, train of fold 0/4" in devmap_out
    assert "POJ104(9 examples, train, size=5" in poj_out and "POJ104(3 examples, val, size=5" in poj_out
    assert re.search(r"DeepDataFlow\(\d+ examples, reachability, train, size=2", ddf_out), ddf_out


# ------------------------------------------------------------------------------------------------------- DevMap
@pytest.fixture(scope="module")
def devmap_root(readme) -> Path:
    return readme[0] / "data" / "devmap"


def test_devmap_examples_match_the_csv(devmap_root: Path, shared_data: Path) -> None:
    dataset = DevMap(devmap_root, "amd", "ncc", rows=ROWS, log=False)
    table = devmap_data.read_platform_csv(shared_data / "devmap" / "cgo17-amd.csv")
    assert len(dataset) == len(ROWS) and dataset.names == [table[i].name for i in ROWS]
    for i in (0, 17, 39):
        data, row = dataset[i], table[i]
        assert data.y.tolist() == [row.label] and data.row.tolist() == [row.row]
        assert data.transfer_bytes.tolist() == [row.transfer] and data.wgsize.tolist() == [row.wgsize]
        assert torch.equal(data.graph_x, torch.tensor([[row.transfer, row.wgsize]], dtype=torch.float32))
        assert data.runtimes.tolist() == [[row.runtime_cpu, row.runtime_gpu]]
        assert data.edge_index.shape[1] == data.edge_flow.numel() == data.edge_pos.numel() > 0
        assert int(data.x.max()) < len(dataset.texts)
    assert dataset.sizes.tolist() == [dataset[i].num_nodes for i in range(len(dataset))]
    assert repr(dataset) == f"DevMap(40 examples, amd, ncc, all, {len(dataset.texts)} texts)"


def test_devmap_splits_are_the_folds(devmap_root: Path) -> None:
    parts = {
        s: DevMap(devmap_root, "amd", "ncc", s, fold=1, folds=4, rows=ROWS, log=False) for s in ("train", "val", "test")
    }
    rows = {s: sorted(int(d.row) for d in ds) for s, ds in parts.items()}
    assert sorted(rows["train"] + rows["val"] + rows["test"]) == list(ROWS)  # disjoint, and every row once
    labels = [int(d.y) for d in DevMap(devmap_root, "amd", "ncc", rows=ROWS, log=False)]
    split = devmap_data.cross_validation_splits(labels, 4, 204)[1]
    assert rows["test"] == split.test.tolist() and rows["val"] == split.val.tolist()


def test_devmap_options_get_their_own_processed_files(devmap_root: Path) -> None:
    nvidia = DevMap(devmap_root, "nvidia", "ncc", rows=ROWS, log=False)
    amd = DevMap(devmap_root, "amd", "ncc", rows=ROWS, log=False)
    fewer = DevMap(devmap_root, "amd", "ncc", rows=range(20), log=False)
    assert len({tuple(d.processed_file_names) for d in (nvidia, amd, fewer)}) == 3
    assert len(fewer) == 20
    assert [int(d.row) for d in fewer] == list(range(20))
    # the platforms differ in their auxiliary inputs, not in their graphs
    assert torch.equal(nvidia[3].edge_index, amd[3].edge_index)
    transfers = [(float(n.graph_x[0, 0]), float(a.graph_x[0, 0])) for n, a in zip(nvidia, amd)]
    assert any(n != a for n, a in transfers)


def test_devmap_processing_is_deterministic(devmap_root: Path, tmp_path: Path) -> None:
    again = DevMap(tmp_path / "devmap", "amd", "ncc", rows=range(10), log=False)
    first = DevMap(devmap_root, "amd", "ncc", rows=range(10), log=False)
    assert again.texts == first.texts
    for a, b in zip(again, first):
        for key in ("x", "edge_index", "edge_flow", "edge_pos", "node_type", "y", "graph_x"):
            assert torch.equal(a[key], b[key]), key
    # raw files are the sha256-checked public ones
    for name in again.raw_file_names:
        assert devmap_data.sha256_file(Path(again.raw_dir) / name) == devmap_data.SOURCES[name].sha256
    # a damaged processed file is one line that names it, and force_reload makes it again
    data_path = Path(again.processed_paths[0])
    data_path.write_bytes(data_path.read_bytes()[:100])
    with pytest.raises(ProgramlError) as info:
        DevMap(tmp_path / "devmap", "amd", "ncc", rows=range(10), log=False)
    assert "\n" not in str(info.value) and str(data_path) in str(info.value) and "force_reload" in str(info.value)
    redone = DevMap(tmp_path / "devmap", "amd", "ncc", rows=range(10), log=False, force_reload=True)
    assert torch.equal(redone[9].x, first[9].x)


def test_devmap_subset_is_a_stratified_sample_of_the_amd_rows(shared_data: Path, tmp_path: Path) -> None:
    """``subset=N`` (``programl train devmap --subset N``): the rows ``stratified_rows`` draws from the AMD labels
    with ``seed``, the same on both platforms, in the processed file of those rows; it excludes ``rows``."""
    root, mirrors = tmp_path / "devmap", [shared_data / "devmap"]
    amd = DevMap(root, "amd", "ncc", subset=12, seed=5, mirrors=mirrors, log=False)
    table = devmap_data.read_platform_csv(shared_data / "devmap" / "cgo17-amd.csv")
    expected = devmap_data.stratified_rows([row.label for row in table], 12, 5)
    assert amd.rows == expected and [int(d.row) for d in amd] == expected
    assert DevMap(root, "nvidia", "ncc", subset=12, seed=5, log=False).rows == expected
    assert DevMap(root, "amd", "ncc", rows=expected, log=False).processed_paths == amd.processed_paths
    assert DevMap(root, "amd", "ncc", subset=12, seed=6, log=False).rows != expected
    with pytest.raises(ValueError, match="rows or subset"):
        DevMap(root, "amd", "ncc", rows=expected, subset=12, log=False)
    with pytest.raises(ValueError, match=r"not in 2\.\.680"):
        DevMap(root, "amd", "ncc", subset=1, log=False)


@pytest.mark.parametrize(
    "data, meta",
    [
        ([1, 2], None),  # InMemoryDataset.load asserted on these
        ({"a": 1}, None),
        (None, None),
        (({"a": 1}, None, None), None),  # ... and raised AttributeError on this
        ("keep", {}),  # the metadata lacked its entries: a KeyError, then a TypeError
        ("keep", {"texts": 5, "names": 7}),
    ],
)
def test_any_damaged_processed_file_is_one_line(devmap_root: Path, tmp_path: Path, data, meta) -> None:
    root = tmp_path / "devmap"
    shutil.copytree(devmap_root, root)
    dataset = DevMap(root, "amd", "ncc", rows=ROWS, log=False)
    data_path, meta_path = map(Path, dataset.processed_paths[:2])
    if data != "keep":
        torch.save(data, data_path)
    if meta is not None:
        meta_path.write_text(json.dumps(meta))
    damaged = data_path if data != "keep" else meta_path
    with pytest.raises(ProgramlError, match="a damaged processed file") as info:
        DevMap(root, "amd", "ncc", rows=ROWS, log=False)
    assert "\n" not in str(info.value) and str(damaged) in str(info.value)


def _corrupt(data: dict, slices: dict, how: str) -> tuple[dict, dict]:
    """A processed file's collated examples, damaged as a crafted or garbled file could be (issue 39 item 4)."""
    data, slices = dict(data), {k: v.clone() for k, v in slices.items()}
    if how == "slices past the data":
        slices["x"][-1] += 5
    elif how == "slices that shrink":
        slices["y"][1] = int(slices["y"][2]) + 1
    elif how == "slices of another length":
        slices["y"] = slices["y"][:-1]
    elif how == "an edge to another example's node":
        data["edge_index"] = data["edge_index"].clone()
        data["edge_index"][0, 0] = 10_000
    elif how == "no labels":
        del data["y"], slices["y"]
    elif how == "slices that are not offsets":
        slices["x"] = slices["x"].float()
    return data, slices


@pytest.mark.parametrize(
    "how",
    [
        "slices past the data",
        "slices that shrink",
        "slices of another length",
        "an edge to another example's node",
        "no labels",
        "slices that are not offsets",
    ],
)
def test_a_garbled_processed_file_is_one_line_before_any_example_is_read(
    devmap_root: Path, tmp_path: Path, how: str
) -> None:
    """Issue 39 item 4: such a file ended in a bare IndexError when an example or a split was read."""
    from programl.util.safe_torch import load_tensors

    root = tmp_path / "devmap"
    shutil.copytree(devmap_root, root)
    data_path = Path(DevMap(root, "amd", "ncc", split="train", rows=ROWS, log=False).processed_paths[0])
    data, slices, cls = load_tensors(data_path)
    torch.save((*_corrupt(data, slices, how), cls), data_path)
    with pytest.raises(ProgramlError, match="a damaged processed file") as info:
        DevMap(root, "amd", "ncc", split="train", rows=ROWS, log=False)
    assert "\n" not in str(info.value) and str(data_path) in str(info.value), how


@pytest.mark.parametrize("record", ["pre_transform.pt", "pre_filter.pt", "data", "data-legacy-pickle"])
def test_a_data_set_directory_never_runs_code(devmap_root: Path, tmp_path: Path, record: str) -> None:
    """Issue 39 item 2: PyG unpickled processed/pre_transform.pt and pre_filter.pt with weights_only=False, and
    retried a processed file that way; a payload in any of them ran when DevMap(root) was made."""
    from tests.payload import payload_runs, write_payload

    marker = tmp_path / "marker"
    assert payload_runs(marker)
    root = tmp_path / "devmap"
    shutil.copytree(devmap_root, root)
    processed = Path(DevMap(root, "amd", "ncc", rows=ROWS, log=False).processed_dir)
    data_path = Path(DevMap(root, "amd", "ncc", rows=ROWS, log=False).processed_paths[0])
    if record.startswith("data"):
        write_payload(data_path, marker, "pickle" if record.endswith("pickle") else "torch", ({}, None, Data))
        with pytest.raises(ProgramlError, match="refusing to unpickle|damaged processed file") as info:
            DevMap(root, "amd", "ncc", rows=ROWS, log=False)
        assert "\n" not in str(info.value) and "weights_only=False" not in str(info.value)
    else:
        write_payload(processed / record, marker)
        with pytest.warns(UserWarning, match="differs"):
            dataset = DevMap(root, "amd", "ncc", rows=ROWS, log=False)
        assert len(dataset) == len(ROWS)  # the record is only compared, and a refused one counts as differing
    assert not marker.exists()


def test_poj104_and_deepdataflow_directories_never_run_code(poj_root: Path, ddf_root: Path, tmp_path: Path) -> None:
    """Issue 39 item 2, for the other two data sets: their records and POJ-104's processed file."""
    from tests.payload import payload_runs, write_payload

    marker = tmp_path / "marker"
    assert payload_runs(marker)
    poj = tmp_path / "poj104"
    shutil.copytree(poj_root, poj)
    split = POJ104(poj, "val", size=5, classes=[1, 2, 3], log=False)
    for record in ("pre_transform.pt", "pre_filter.pt"):
        write_payload(Path(split.processed_dir) / record, marker)
    with pytest.warns(UserWarning, match="differs"):
        assert len(POJ104(poj, "val", size=5, classes=[1, 2, 3], log=False)) == len(split)
    write_payload(Path(split.processed_paths[split._position]), marker, around=({}, None, Data))
    with pytest.raises(ProgramlError, match="refusing to unpickle"):
        POJ104(poj, "val", size=5, classes=[1, 2, 3], log=False)
    ddf = tmp_path / "ddf22"
    shutil.copytree(ddf_root, ddf, symlinks=True)
    dataset = DeepDataFlow(ddf, "reachability", "train", size=2, log=False)
    write_payload(Path(dataset.processed_dir) / "pre_transform.pt", marker)
    with pytest.warns(UserWarning, match="differs"):
        assert len(DeepDataFlow(ddf, "reachability", "train", size=2, log=False)) == len(dataset)
    assert not marker.exists()


def test_encode_vocabulary_is_the_training_vocabulary(devmap_root: Path) -> None:
    train = DevMap(devmap_root, "amd", "ncc", "train", fold=0, folds=4, rows=ROWS, log=False)
    vocabulary = train.vocabulary()
    counts: dict[str, int] = {}
    for data in train:
        for i in data.x.tolist():
            counts[train.texts[i]] = counts.get(train.texts[i], 0) + 1
    assert vocabulary == Vocabulary.from_counts(counts)
    encode = EncodeVocabulary(vocabulary, train.texts)
    test = DevMap(devmap_root, "amd", "ncc", "test", fold=0, folds=4, rows=ROWS, log=False, transform=encode)
    raw = DevMap(devmap_root, "amd", "ncc", "test", fold=0, folds=4, rows=ROWS, log=False)
    for encoded, plain in zip(test, raw):
        expected = [vocabulary.get(train.texts[i], len(vocabulary)) for i in plain.x.tolist()]
        assert encoded.x.tolist() == expected
    assert len(vocabulary) < len(train.texts) + 1


# ------------------------------------------------------------------------------------------------------- POJ-104
@pytest.fixture(scope="module")
def poj_root(readme) -> Path:
    return readme[0] / "data" / "poj104"


def test_poj104_splits_hold_disjoint_programs_with_their_classes(poj_root: Path, shared_data: Path) -> None:
    splits = {s: POJ104(poj_root, s, size=5, classes=[1, 2, 3], log=False) for s in ("train", "val", "test")}
    programs = {s: {n.rsplit(".", 1)[0] for n in ds.names} for s, ds in splits.items()}
    assert not programs["train"] & programs["val"] and not programs["train"] & programs["test"]
    assert [len(splits[s]) + len(splits[s].missing) for s in ("train", "val", "test")] == [9, 3, 3]
    for ds in splits.values():
        assert ds.texts == splits["train"].texts  # one text table for the three splits
        for name, data in zip(ds.names, ds):
            assert int(data.y) == int(name.split(".")[0]) - 1
    # the split is the data module's seeded 3:1:1 split
    chosen = poj104_data.subset_split(
        poj104_data.split_programs([p for p in _programs(shared_data) if p.label in (1, 2, 3)], 204), 5
    )
    assert programs["test"] <= set(chosen["test"])


def _programs(shared_data: Path):
    return poj104_data.read_programs(shared_data / "poj104")


def test_poj104_options_get_their_own_processed_files(poj_root: Path) -> None:
    base = POJ104(poj_root, "val", size=5, classes=[1, 2, 3], log=False)
    names = set(base.processed_file_names)
    other = {
        "size": dict(size=10, classes=[1, 2, 3]),
        "classes": dict(size=5, classes=[1, 2]),
        "settings": dict(size=5, classes=[1, 2, 3], settings=(0, 1)),
        "seed": dict(size=5, classes=[1, 2, 3], seed=1),
        "eval_settings": dict(size=5, classes=[1, 2, 3], settings=(0, 1), eval_settings=(0,)),
        "numbers_and_types": dict(size=5, classes=[1, 2, 3], numbers_and_types=True),
        "string_bytes": dict(size=5, classes=[1, 2, 3], string_bytes=True),
        "both": dict(size=5, classes=[1, 2, 3], numbers_and_types=True, string_bytes=True),
    }
    for what, options in other.items():
        assert not names & set(_probe(options).processed_file_names), what
    kinds = [set(_probe(other[k]).processed_file_names) for k in ("numbers_and_types", "string_bytes", "both")]
    assert not kinds[0] & kinds[1] and not kinds[0] & kinds[2] and not kinds[1] & kinds[2]
    # training on variants and scoring on -O0 is not the data set of the variants in every split
    variants = dict(size=5, classes=[1, 2, 3], settings=(0, 1))
    assert set(_probe(variants).processed_file_names).isdisjoint(
        _probe({**variants, "eval_settings": (0,)}).processed_file_names
    )


def _probe(options: dict) -> POJ104:
    """A POJ104 with the options set and nothing read (its processed file names)."""
    probe = POJ104.__new__(POJ104)
    probe.split, probe.size, probe.seed = "val", options.get("size"), options.get("seed", 204)
    probe.classes, probe.settings = sorted(options["classes"]), tuple(options.get("settings", (0,)))
    probe.eval_settings = options.get("eval_settings")
    probe.numbers_and_types = options.get("numbers_and_types", False)
    probe.string_bytes = options.get("string_bytes", False)
    return probe


def test_poj104_eval_settings_train_on_variants_and_score_on_one(poj_root: Path) -> None:
    """``eval_settings``: the training split holds every setting of its programs, the validation and test splits
    only theirs, all with one text table; the other settings of validation and test programs are never compiled;
    the same settings for every split are the single-setting data set, files and all."""
    options = dict(size=5, classes=[1, 2, 3], settings=(0, 1))
    splits = {s: POJ104(poj_root, s, **options, eval_settings=(0,), log=False) for s in ("train", "val", "test")}
    assert {n.rsplit(".", 1)[1] for n in splits["train"].names} == {"0", "1"}
    for split in ("val", "test"):
        assert {n.rsplit(".", 1)[1] for n in splits[split].names + splits[split].missing} == {"0"}
        assert splits[split].texts == splits["train"].texts
        built = {p.name for p in (splits[split].build_dir / "graphs").iterdir()}
        programs = {n.rsplit(".", 1)[0] for n in splits[split].names}
        assert not {f"{p}.1.ProgramGraph.pb" for p in programs} & built
    # -O0 validation is the -O0 data set's validation split
    plain = POJ104(poj_root, "val", size=5, classes=[1, 2, 3], log=False)
    assert splits["val"].names == plain.names
    assert all(torch.equal(a.y, b.y) and a.num_nodes == b.num_nodes for a, b in zip(splits["val"], plain))
    assert "settings=[0]" in repr(splits["val"]) and "settings=[0, 1]" in repr(splits["train"])
    same = POJ104(poj_root, "val", **options, eval_settings=(1, 0), log=False)
    assert same.eval_settings is None
    assert same.processed_file_names == POJ104(poj_root, "val", **options, log=False).processed_file_names
    assert POJ104.is_processed(poj_root, **options, eval_settings=(0,))


def test_poj104_rejects_an_empty_split(poj_root: Path, tmp_path: Path) -> None:
    with pytest.raises(ProgramlError, match="empty"):
        POJ104(tmp_path / "poj", "train", size=1, classes=[1], log=False)


def test_poj104_processed_files_alone_are_the_data_set(poj_root: Path, tmp_path: Path) -> None:
    """The processed files, copied under another root without ``raw/`` or the build (a GPU machine), are read there
    as they are: no archive is fetched and nothing is built, even with no mirror."""
    options = dict(size=5, classes=[1, 2, 3])
    train = POJ104(poj_root, "train", **options, log=False)
    copy = tmp_path / "copy"
    assert not POJ104.is_processed(copy, **options)
    (copy / "processed").mkdir(parents=True)
    for path in train.processed_paths:
        shutil.copy(path, copy / "processed")
    assert POJ104.is_processed(copy, size=5, classes=[3, 2, 1]) and not POJ104.is_processed(copy, size=6)
    for split in ("train", "val", "test"):
        here, there = (
            POJ104(poj_root, split, **options, log=False),
            POJ104(copy, split, **options, mirrors=[], log=False),
        )
        assert there.names == here.names and there.texts == here.texts and there.missing == here.missing
        assert torch.equal(there[0].x, here[0].x) and np.array_equal(there.sizes, here.sizes)
        # the programs of the split: those with graphs and those that did not compile, 3:1:1 of 5 per class
        assert len(there.programs) == {"train": 9, "val": 3, "test": 3}[split]
        assert set(there.programs) == {n.rsplit(".", 1)[0] for n in here.names + here.missing}
    assert sorted(p.name for p in copy.iterdir()) == ["processed"]


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
def test_poj104_legacy_split_is_the_labelled_legacy_ir(poj_root: Path, shared_data: Path) -> None:
    legacy = POJ104(poj_root, "legacy", log=False)
    expected = poj104_data.read_legacy_ir(shared_data / "legacy-ir")
    assert len(legacy) == len(expected) == 1000 and not legacy.missing
    assert legacy.names == [name[: -len(".ll")] for name, _, _ in expected]
    assert [int(d.y) for d in legacy] == [label - 1 for _, label, _ in expected]
    assert legacy.processed_file_names == ["poj104-legacy.pt", "poj104-legacy.json"]
    train = POJ104(poj_root, "train", size=5, classes=[1, 2, 3], log=False)
    legacy.transform = EncodeVocabulary(train.vocabulary(), legacy.texts)
    assert int(legacy[0].x.max()) <= len(train.vocabulary())


# ------------------------------------------------------------------------------------------------------- DeepDataFlow
@pytest.fixture(scope="module")
def ddf_root(readme) -> Path:
    return readme[0] / "data" / "ddf22"


def test_deepdataflow_is_the_store_of_the_built_data_set(ddf_root: Path) -> None:
    dataset = DeepDataFlow(ddf_root, "reachability", "train", size=2, log=False)
    built = dataset.data_dir
    assert json.loads((built / "dataset.json").read_text())  # the builder's summary
    store = DeepDataFlow.from_directory(built, "reachability", "train")
    assert len(dataset) == len(store) > 0
    for i in (0, len(store) - 1):
        a, b = dataset[i], store[i]
        for key in ("x", "edge_index", "y", "root", "step_count"):
            assert torch.equal(a[key], b[key]), key
    assert dataset.texts == list(Vocabulary.load(built / "vocab" / "programl.csv").texts)
    assert int(dataset.step_counts.max()) <= 30
    assert dataset.sizes.tolist() == [dataset[i].num_nodes for i in range(len(dataset))]


def test_deepdataflow_filters_and_splits(ddf_root: Path) -> None:
    everything = DeepDataFlow(ddf_root, "reachability", "train", size=2, max_steps=None, log=False)
    ddf30 = DeepDataFlow(ddf_root, "reachability", "train", size=2, log=False)
    assert len(everything) == int((everything.step_counts >= 0).sum()) >= len(ddf30)
    assert int((everything.step_counts <= 30).sum()) == len(ddf30)
    graphs = {}
    for split in ("train", "val", "test"):
        ds = DeepDataFlow(ddf_root, "datadep", split, size=2, max_steps=None, log=False)
        graphs[split] = set(ds.graph_names)
    assert not graphs["train"] & graphs["val"] and not graphs["train"] & graphs["test"]
    assert repr(ddf30).startswith(f"DeepDataFlow({len(ddf30)} examples, reachability, train, size=2, max_steps=30")


def test_deepdataflow_size_and_recipe_name_the_processed_data(ddf_root: Path) -> None:
    dataset = DeepDataFlow(ddf_root, "reachability", "train", size=2, log=False)
    probe = DeepDataFlow.__new__(DeepDataFlow)
    probe.recipe, probe.size = DEEPDATAFLOW22, 3
    assert probe.processed_file_names != dataset.processed_file_names
    probe.recipe, probe.size = {**DEEPDATAFLOW22, "max_roots": 5}, 2
    assert probe.processed_file_names != dataset.processed_file_names


def test_the_recipe_constant_is_the_recipe_file() -> None:
    recipe = json.loads((REPO / "datasets" / "deepdataflow22" / "recipe.json").read_text(encoding="utf-8"))
    recipe.pop("description", None)
    assert recipe == DEEPDATAFLOW22


def test_deepdataflow_dataset_has_pyg_paths(ddf_root: Path) -> None:
    """DeepDataFlow.from_directory's raw_paths / processed_paths name its files (they raised NotImplementedError)."""
    built = DeepDataFlow(ddf_root, "liveness", "val", size=2, log=False).data_dir
    store = DeepDataFlow.from_directory(built, "liveness", "val")
    # the labels of a build in the compact format (the default) are labels/all/, every analysis in one file per graph
    assert [Path(p).name for p in store.raw_paths] == ["graphs", "all", "val", "programl.csv"]
    assert all(Path(p).exists() for p in store.raw_paths + store.processed_paths)
    assert store.processed_paths[1].endswith("val/liveness/meta.json")


# ------------------------------------------------------------------------------------------------------- loading
def test_dataloader_with_workers_gives_the_planned_batches(devmap_root: Path) -> None:
    from torch_geometric.loader import DataLoader

    dataset = DevMap(devmap_root, "amd", "ncc", rows=ROWS, log=False)
    sampler = NodeBudgetBatchSampler(dataset.sizes, 3_000, shuffle=True, seed=3)
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        loaded = list(DataLoader(dataset, batch_sampler=sampler, num_workers=2))
        expected = [Batch.from_data_list([dataset[i] for i in b]) for b in sampler.plan()]
        assert len(loaded) == len(expected) == len(sampler)
        for a, b in zip(loaded, expected):
            assert torch.equal(a.row, b.row) and torch.equal(a.edge_index, b.edge_index)
    assert sorted(int(r) for b in loaded for r in b.row) == list(ROWS)
    assert np.all([b.num_nodes <= 3_000 or b.num_graphs == 1 for b in loaded])
