"""The data sets answer the data questions: their constants, folds and raw-file checks are attributes and methods of
``DevMap`` and ``POJ104`` (the tasks read nothing from ``programl.data``), those without torch also from
``programl.datasets.devmap_info`` / ``poj104_info``; ``DevMap.load_graphs`` gives the built graphs with their rows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.data import devmap as devmap_data  # noqa: E402
from programl.data import poj104 as poj104_data  # noqa: E402
from programl.datasets import POJ104, DevMap, devmap_info, poj104_info  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402

WITHOUT_TORCH = """\
import importlib.machinery, sys
class _NotInstalled(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in ("torch", "torch_geometric"):
            return None
        return super().find_spec(name, path, target)
sys.meta_path[:] = [_NotInstalled if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""


def test_the_facts_a_spec_reads_need_no_torch() -> None:
    code = WITHOUT_TORCH + (
        "from programl.datasets import Vocabulary\n"
        "from programl.datasets.devmap_info import PLATFORM_NAMES\n"
        "from programl.datasets.poj104_info import NUM_CLASSES, OPT_SETTINGS\n"
        "print(PLATFORM_NAMES['amd'], NUM_CLASSES, len(OPT_SETTINGS), Vocabulary.__name__)\n"
        "try:\n    from programl.datasets import DevMap\nexcept ModuleNotFoundError as error:\n    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "AMD Tahiti 7970 104 8 Vocabulary",
        "programl.datasets needs PyTorch and torch-geometric (not installed): pip install 'programl[ml]'",
    ]


def test_the_data_set_classes_hold_their_facts() -> None:
    assert DevMap.PLATFORMS == devmap_info.PLATFORMS == ("amd", "nvidia")
    assert DevMap.PLATFORM_NAMES == {"amd": "AMD Tahiti 7970", "nvidia": "NVIDIA GTX 970"}
    assert DevMap.VARIANTS == ("clang22", "ncc")
    assert DevMap.CLANG22_BASE_FLAGS == devmap_data.CLANG22_BASE_FLAGS == ("-O0",)
    assert DevMap.AUX_MEDIANS is devmap_info.AUX_MEDIANS and set(DevMap.AUX_MEDIANS) == set(DevMap.PLATFORMS)
    assert POJ104.NUM_CLASSES == poj104_info.NUM_CLASSES == 104
    assert POJ104.OPT_SETTINGS[0] == ("-O0",) and POJ104.OPT_SETTINGS[7] == ("-O3", "-ffast-math")
    assert [r.name for r in POJ104.RECIPES] == ["programl", "more-headers", "gnu++98"]
    assert (POJ104.ARCHIVE, POJ104.LEGACY_ARCHIVE) == ("poj104.tar.xz", "llvm_ir.tar.bz2")


def test_devmap_cross_validation_splits_rotate_a_stratified_partition() -> None:
    labels = [0] * 12 + [1] * 8
    splits = DevMap.cross_validation_splits(labels, 4, seed=7)
    assert len(splits) == 4
    for k, split in enumerate(splits):
        assert sorted([*split.train, *split.val, *split.test]) == list(range(20))
        assert split.val.tolist() == splits[(k + 1) % 4].test.tolist()
        assert sum(labels[i] for i in split.test) == 2  # each fold holds the class shares
    expected = devmap_data.cross_validation_splits(labels, 4, 7)
    assert all(a.test.tolist() == b.test.tolist() for a, b in zip(splits, expected))
    with pytest.raises(ValueError, match="at least 3 folds"):
        DevMap.cross_validation_splits(labels, 2)


def test_devmap_check_raw_files_names_the_missing_or_damaged_file(tmp_path: Path) -> None:
    with pytest.raises(ProgramlError) as missing:
        DevMap.check_raw_files(tmp_path)
    assert str(missing.value).startswith(f"{tmp_path / 'cgo17-amd.csv'}: missing") and "\n" not in str(missing.value)
    for name in ("cgo17-amd.csv", "cgo17-nvidia.csv", "task_devmap.zip", "task_devmap_kernels.zip"):
        (tmp_path / name).write_text("not the published file\n")
    with pytest.raises(ProgramlError, match=r"cgo17-amd\.csv: sha256 differs from the published"):
        DevMap.check_raw_files(tmp_path)
    assert sorted(DevMap.check_raw_files(tmp_path, verify=False)) == sorted(
        name for name, source in devmap_data.SOURCES.items() if source.url is not None
    )


def test_devmap_load_graphs_are_the_examples_with_their_rows(shared_data: Path, tmp_path: Path) -> None:
    root, mirrors = tmp_path / "devmap", [shared_data / "devmap"]
    dataset = DevMap(root, "amd", "ncc", rows=range(12), mirrors=mirrors, log=False)
    data = dataset.load_graphs()
    table = devmap_data.read_platform_csv(shared_data / "devmap" / "cgo17-amd.csv")
    assert [r.row for r in data.rows] == list(range(12)) and data.rows == table[:12]
    assert [len(g.node) for g in data.graphs] == dataset.sizes.tolist()
    assert data.labels.tolist() == [int(example.y) for example in dataset]
    test = DevMap(root, "amd", "ncc", "test", fold=1, folds=3, rows=range(12), log=False)
    assert [r.row for r in test.load_graphs().rows] == [int(example.row) for example in test]


def test_devmap_without_build_reads_only_graphs_already_built(shared_data: Path, tmp_path: Path) -> None:
    """``build=False`` (the studies read the graphs ``programl train devmap`` built): a graph never built is one line."""
    with pytest.raises(ProgramlError) as error:
        DevMap(tmp_path, "amd", "ncc", rows=[3], mirrors=[shared_data / "devmap"], build=False, log=False)
    message = str(error.value)
    assert message.startswith(str(tmp_path / "processed" / "build" / "ncc" / "graphs_amd")) and "\n" not in message
    assert message.endswith(": missing; build the devmap graphs first")
    built = DevMap(tmp_path / "built", "amd", "ncc", rows=[3], mirrors=[shared_data / "devmap"], log=False)
    again = DevMap(tmp_path / "built", "amd", "ncc", rows=[3], build=False, log=False, force_reload=True)
    assert again.load_graphs().rows == built.load_graphs().rows


def test_a_data_set_of_one_example_loads_and_is_checked(shared_data: Path, tmp_path: Path) -> None:
    """PyG saves one example without slices: such a processed file was called damaged; now it loads, checked as any
    other (an edge past its example's nodes is still one line)."""
    import torch
    from torch_geometric.data import Data

    one = DevMap(tmp_path, "nvidia", "ncc", rows=[5], mirrors=[shared_data / "devmap"], log=False)
    assert len(one) == 1 and one[0].row.tolist() == [5] and one.sizes.tolist() == [one[0].num_nodes]
    data = one[0].to_dict()
    data["edge_index"] = data["edge_index"].clone()
    data["edge_index"][1, 0] = one[0].num_nodes
    torch.save((data, None, Data), one.processed_paths[0])
    with pytest.raises(ProgramlError, match="an edge names a node its example does not have"):
        DevMap(tmp_path, "nvidia", "ncc", rows=[5], log=False)


def test_poj104_says_what_raw_files_and_graphs_a_root_holds(tmp_path: Path) -> None:
    assert not POJ104.has_raw_files(tmp_path) and not POJ104.has_raw_files(tmp_path, "legacy")
    (tmp_path / "raw" / "codexglue").mkdir(parents=True)
    assert POJ104.has_raw_files(tmp_path) and not POJ104.has_raw_files(tmp_path, "legacy")
    (tmp_path / "raw" / POJ104.LEGACY_ARCHIVE).write_bytes(b"")
    assert POJ104.has_raw_files(tmp_path, "legacy")
    assert not POJ104.has_legacy_graphs(tmp_path)
    graphs = tmp_path / "processed" / "build" / "legacy" / "graphs"
    graphs.mkdir(parents=True)
    (graphs / "000.ProgramGraph.pb").write_bytes(b"")
    assert POJ104.has_legacy_graphs(tmp_path)
    assert not POJ104.has_legacy_graphs(tmp_path, build_dir=tmp_path / "elsewhere")


def test_poj104_compiles_a_program_as_its_graphs_were(clang22) -> None:
    ir, recipe = POJ104.compile_program('void main() { printf("%d", 1); }', POJ104.OPT_SETTINGS[2])
    assert recipe.name == "programl" and "define" in ir and "@main()" in ir  # void main became int main
    assert (ir, recipe) == poj104_data.compile_program('void main() { printf("%d", 1); }', ("-O2",))
