"""studies/dataflow_more_roots.py end to end on a tiny DeepDataFlow data set (tests/data/_ddf.py, no compiler
needed): more distinct training roots, the base's examples kept first, validation and test untouched, reruns
byte-identical, one-line errors."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import numpy as np
import pytest

from programl.data.deepdataflow.labels import labelled_names, read_labels
from programl.data.deepdataflow.layout import Layout
from programl.dataflow.records import load_labels
from tests.data._ddf import tiny_dataset

SCRIPT = Path(__file__).resolve().parents[1] / "dataflow_more_roots.py"
SUFFIX = ".ProgramGraphFeaturesList.pb"


@pytest.fixture(scope="module")
def main():
    """The script's ``main(argv)``."""
    return runpy.run_path(str(SCRIPT), run_name="dataflow_more_roots")["main"]


@pytest.fixture(scope="module", params=["compact", "protobuf"])
def base(tmp_path_factory, request) -> Path:
    """The base build, its labels in either form."""
    return tiny_dataset(tmp_path_factory.mktemp("tiny"), chains=(2, 3, 4, 6, 8, 20, 40, 60), label_format=request.param)


@pytest.fixture(scope="module")
def derived(main, base: Path, tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("more")
    argv = ["--base", str(base), "--out", str(out), "--analysis", "datadep", "--seeds", "1", "2", "3", "-j", "1"]
    assert main(argv) == 0
    return out, argv


def names(directory: Path) -> set[str]:
    return {p.name.removesuffix(".ProgramGraph.pb") for p in directory.iterdir()}


def test_training_graphs_get_more_distinct_roots_and_keep_the_base_records(derived, base: Path) -> None:
    out, _ = derived
    train = names(base / "train")
    grew = 0
    layout, derived_layout = Layout(base), Layout(out / "root")
    labelled = sorted(labelled_names(layout, "datadep"))
    assert len(labelled) >= 8
    for name in labelled:
        path = layout.labels("datadep", name)
        merged_path = out / "root" / "labels" / "datadep" / f"{name}{SUFFIX}"
        original, merged = read_labels(layout, "datadep", name), read_labels(derived_layout, "datadep", name)
        if name not in train:  # validation and test: the base's
            assert merged == original
            if path.exists():
                assert os.path.realpath(merged_path) == str(path.resolve())
            continue
        assert len(set(merged.roots.tolist())) == len(merged.roots)  # every example distinct
        k = len(original)
        assert np.array_equal(merged.roots[:k], original.roots) and np.array_equal(merged.labels[:k], original.labels)
        grew += len(merged) > k
        # each added record is the analysis at its root: the same as in the draw that found it
        for row, root in list(enumerate(merged.roots.tolist()))[k:]:
            draws = [load_labels(d) for d in sorted(out.glob(f"draw-*/labels/datadep/{name}{SUFFIX}"))]
            found = [(d, list(d.roots).index(root)) for d in draws if root in d.roots]
            assert found, root
            d, j = found[0]
            assert np.array_equal(merged.labels[row], d.labels[j])
            assert merged.step_counts[row] == d.step_counts[j]
    assert grew >= 3  # the longer chains have many eligible roots


def test_the_data_set_reads_more_training_examples_and_the_same_val_and_test(derived, base: Path, capsys) -> None:
    from programl.datasets import DeepDataFlow

    out, _ = derived
    sizes = {}
    for root in (base, out / "root"):
        sizes[root] = [
            DeepDataFlow.from_directory(str(root), "datadep", s, max_steps=30).len() for s in ("train", "val", "test")
        ]
    (train0, val0, test0), (train1, val1, test1) = sizes[base], sizes[out / "root"]
    assert train1 > train0 and (val1, test1) == (val0, test0)


def test_a_rerun_is_byte_identical(main, derived, capsys) -> None:
    out, argv = derived
    files = sorted((out / "root" / "labels" / "datadep").iterdir())
    before = {p.name: p.read_bytes() for p in files}
    assert main(argv) == 0
    assert {p.name: p.read_bytes() for p in files} == before
    assert "validation and test unchanged" in capsys.readouterr().out


def test_errors_are_one_line(main, tmp_path: Path, capsys) -> None:
    assert main(["--base", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a DeepDataFlow build" in err and "Traceback" not in err


def test_an_out_that_holds_another_base_fails_before_drawing(main, base: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["--base", str(base), "--out", str(out), "--analysis", "datadep", "--seeds", "1", "-j", "1"]) == 0
    other = tiny_dataset(tmp_path / "other", chains=(2, 3, 4))
    capsys.readouterr()
    assert main(["--base", str(other), "--out", str(out), "--analysis", "datadep", "--seeds", "2", "-j", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already links" in err and "use another output directory" in err
    assert not (out / "draw-2").exists()  # no work done into the wrong root
