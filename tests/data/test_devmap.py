"""Tests of programl.data.devmap on the real DevMap files: tables, manifest, graphs, features, splits (SPEC §6.5)."""

from __future__ import annotations

import json
import math
import os
import shutil
from collections import Counter

import numpy as np
import pytest

from programl.data import devmap
from programl.data.devmap.build import _load_devmap
from programl.exceptions import ProgramlError
from programl.proto import ProgramGraph

# rows that exercise each rule: plain kernel, NPB class flag, SP source variant, parboil bfs fix, macro flags
ROWS = [0, 16, 483, 555, 580]


@pytest.fixture(scope="module")
def source(shared_data):
    return shared_data / "devmap"


@pytest.fixture(scope="module")
def built(source, tmp_path_factory, clang22):
    data_dir = tmp_path_factory.mktemp("devmap")
    report = devmap.build_devmap(source, data_dir, rows=ROWS, jobs=2)
    return data_dir, report


def test_tables(source) -> None:
    amd = devmap.read_platform_csv(source / "cgo17-amd.csv")
    nvidia = devmap.read_platform_csv(source / "cgo17-nvidia.csv")
    assert len(amd) == len(nvidia) == 680
    assert [r.name for r in amd] == [r.name for r in nvidia]
    assert len({r.benchmark for r in amd}) == 256
    assert Counter(r.oracle for r in amd) == {"CPU": 400, "GPU": 280}  # static mapping CPU: 58.8 %
    assert Counter(r.oracle for r in nvidia) == {"GPU": 387, "CPU": 293}  # static mapping GPU: 56.9 %
    first = amd[0]
    assert (first.name, first.transfer, first.wgsize, first.label) == (
        "amd-app-sdk-3.0-BinomialOption-binomial_options-default",
        2048,
        255,
        1,
    )
    for row in amd + nvidia:  # the oracle is the faster device
        assert row.label == int(row.runtime_gpu < row.runtime_cpu)
    assert sum(a.transfer != b.transfer or a.wgsize != b.wgsize for a, b in zip(amd, nvidia)) > 0


def test_sources_are_checked(source, tmp_path) -> None:
    found = devmap.check_sources(source)
    assert set(found) == set(devmap.SOURCES)
    for name in ("cgo17-amd.csv", "cgo17-nvidia.csv", "task_devmap.zip", "task_devmap_kernels.zip"):
        shutil.copy(source / name, tmp_path / name)
    assert devmap.MANIFEST_FILE not in devmap.check_sources(tmp_path)  # optional: derived when absent
    with open(tmp_path / "cgo17-amd.csv", "ab") as f:
        f.write(b"\n")
    with pytest.raises(ProgramlError, match="sha256 differs"):
        devmap.check_sources(tmp_path)
    os.unlink(tmp_path / "task_devmap.zip")
    with pytest.raises(ProgramlError, match="task_devmap.zip: missing"):
        devmap.check_sources(tmp_path, verify=False)


def test_derived_manifest_equals_the_shipped_one(source, tmp_path) -> None:
    rows = devmap.read_platform_csv(source / "cgo17-amd.csv")
    kernels_cl, kernels_ir = devmap.extract_sources(devmap.check_sources(source), tmp_path)
    derived = devmap.derive_manifest(rows, os.listdir(kernels_cl), os.listdir(kernels_ir))
    shipped = devmap.read_manifest(source / devmap.MANIFEST_FILE)
    assert len(shipped) == 680
    assert derived == shipped
    assert shipped[16].flags == ("-DCLASS='A'",)  # quotes kept: NPB compares CLASS with 'A'
    assert shipped[483].kernels_cl_file == "npb-3.3npb-SP-initialize2.cl"


def test_opencl_source_fixes_parboil_bfs(source, tmp_path) -> None:
    kernels_cl, _ = devmap.extract_sources(devmap.check_sources(source), tmp_path)
    row = devmap.read_manifest(source / devmap.MANIFEST_FILE)[555]
    text, flags = devmap.opencl_source(row, kernels_cl)
    assert '#include "config.h"' not in text and "#define BLACK 16677221" in text
    assert flags[:3] == ("-O0", "-I", str(kernels_cl))


def test_build_writes_labelled_graphs_for_both_variants(source, built) -> None:
    data_dir, report = built
    assert report.ok and report.built == {"clang22": len(ROWS), "ncc": len(ROWS)}
    tables = {p: devmap.read_platform_csv(source / f"cgo17-{p}.csv") for p in devmap.PLATFORMS}
    for variant in devmap.VARIANTS:
        manifest = [json.loads(line) for line in (data_dir / variant / "manifest.jsonl").read_text().splitlines()]
        assert [e["row"] for e in manifest] == ROWS and {e["status"] for e in manifest} == {"ok"}
        for platform in devmap.PLATFORMS:
            data = _load_devmap(source, data_dir, platform, variant, rows=ROWS)
            assert len(data) == len(ROWS) and [r.row for r in data.rows] == ROWS
            for row, graph in zip(data.rows, data.graphs):
                expected = tables[platform][row.row]
                features = graph.features.feature
                assert features["devmap_label"].int64_list.value == [expected.label]
                assert features["wgsize"].int64_list.value == [expected.wgsize]
                assert features["transfer_bytes"].int64_list.value == [expected.transfer]
                assert features["wgsize_log1p"].float_list.value[0] == pytest.approx(math.log1p(expected.wgsize))
                assert features["transfer_bytes_log1p"].float_list.value[0] == pytest.approx(
                    math.log1p(expected.transfer)
                )
                assert len(graph.node) > 10 and graph.node[0].text == "[external]"
            assert np.array_equal(data.labels, [tables[platform][i].label for i in ROWS])
            assert data.runtimes.shape == (len(ROWS), 2)
    clang = _load_devmap(source, data_dir, "amd", "clang22", rows=[0]).graphs[0]
    functions = {f.name for f in clang.function}
    assert {"binomial_options", "__clang_ocl_kern_imp_binomial_options"} <= functions
    assert clang.module[0].name == "amd-app-sdk-3.0-BinomialOption-binomial_options.cl"
    assert (data_dir / "clang22" / "ir" / "amd-app-sdk-3.0-BinomialOption-binomial_options-default.ll").is_file()


def test_rebuild_skips_and_is_deterministic(source, built, tmp_path) -> None:
    data_dir, _ = built
    again = devmap.build_devmap(source, data_dir, rows=ROWS)
    assert again.built == {"clang22": 0, "ncc": 0} and again.skipped == {"clang22": len(ROWS), "ncc": len(ROWS)}
    fresh = devmap.build_devmap(source, tmp_path, variants=["clang22"], rows=ROWS[:2], jobs=1)
    assert fresh.ok
    for name in ("amd-app-sdk-3.0-BinomialOption-binomial_options-default", "npb-3.3-BT-add-A"):
        relative = f"clang22/graphs_nvidia/{name}.ProgramGraph.pb"
        assert (tmp_path / relative).read_bytes() == (data_dir / relative).read_bytes()


def test_failures_are_recorded_and_do_not_stop_the_batch(source, tmp_path, clang22) -> None:
    for name in ("cgo17-amd.csv", "cgo17-nvidia.csv", "task_devmap.zip", "task_devmap_kernels.zip"):
        os.symlink(source / name, tmp_path / name)
    lines = (source / devmap.MANIFEST_FILE).read_text().splitlines()
    fields = lines[45].split(",")  # row 44: npb-3.3-BT-error_norm A, which includes bt.h
    fields[6] = "-DCLASS='Q'"  # an unknown NPB class: bt.h stops with #error
    lines[45] = ",".join(fields)
    (tmp_path / devmap.MANIFEST_FILE).write_text("\n".join(lines) + "\n")
    report = devmap.build_devmap(tmp_path, tmp_path / "out", variants=["clang22"], rows=[0, 44], verify=False)
    assert report.built == {"clang22": 1}
    assert [name for name, _ in report.failed["clang22"]] == ["npb-3.3-BT-error_norm-A"]
    assert "Unknown class" in report.failed["clang22"][0][1]
    entries = [json.loads(line) for line in (tmp_path / "out" / "clang22" / "manifest.jsonl").read_text().splitlines()]
    assert [(e["row"], e["status"]) for e in entries] == [(0, "ok"), (44, "failed")]
    with pytest.raises(ProgramlError, match="missing; build"):
        _load_devmap(tmp_path, tmp_path / "out", "amd", "clang22", rows=[44])


def test_unknown_platform_and_variant(source, tmp_path) -> None:
    with pytest.raises(ProgramlError, match="platform"):
        _load_devmap(source, tmp_path, "intel")
    with pytest.raises(ProgramlError, match="variant"):
        devmap.build_devmap(source, tmp_path, variants=["gcc"])


def test_graph_proto_round_trip(built) -> None:
    data_dir, _ = built
    path = next((data_dir / "ncc" / "graphs_amd").iterdir())
    graph = ProgramGraph.FromString(path.read_bytes())
    assert graph.SerializeToString(deterministic=True) == path.read_bytes()


@pytest.mark.parametrize("seed", [204, 7])
def test_cross_validation_splits_stratified_disjoint_covering(seed) -> None:
    labels = np.array([1] * 280 + [0] * 400)
    splits = devmap.cross_validation_splits(labels, 10, seed)
    assert len(splits) == 10
    tested = np.concatenate([s.test for s in splits])
    assert sorted(tested.tolist()) == list(range(680))  # every example tested exactly once
    for k, split in enumerate(splits):
        assert split.fold == k
        parts = [set(split.train.tolist()), set(split.val.tolist()), set(split.test.tolist())]
        assert not (parts[0] & parts[1]) and not (parts[0] & parts[2]) and not (parts[1] & parts[2])
        assert len(parts[0] | parts[1] | parts[2]) == 680
        assert np.array_equal(split.val, splits[(k + 1) % 10].test)  # rotating validation fold
        for part in (split.test, split.val):
            assert len(part) == 68 and abs(labels[part].sum() - 28) <= 1  # class proportions kept
        assert len(split.train) == 544
    again = devmap.cross_validation_splits(labels, 10, seed)
    assert all(np.array_equal(a.test, b.test) for a, b in zip(splits, again))
    other = devmap.cross_validation_splits(labels, 10, seed + 1)
    assert any(not np.array_equal(a.test, b.test) for a, b in zip(splits, other))


def test_cross_validation_needs_three_folds() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        devmap.cross_validation_splits([0, 1] * 10, 2)


def test_stratified_rows_keep_the_class_shares() -> None:
    """``stratified_rows`` (``DevMap(subset=N)``, ``--subset N``): sorted distinct rows, each class in its share,
    a function of the seed; every row when asked for all; a size outside 2..N is an error."""
    labels = [0] * 60 + [1] * 40
    rows = devmap.stratified_rows(labels, 20, 3)
    assert rows == sorted(set(rows)) and len(rows) == 20
    assert sum(labels[r] for r in rows) == 8  # 40 % of 20
    assert rows == devmap.stratified_rows(labels, 20, 3) != devmap.stratified_rows(labels, 20, 4)
    assert devmap.stratified_rows(labels, 100, 3) == list(range(100))
    for size in (1, 101):
        with pytest.raises(ValueError, match=r"not in 2\.\.100"):
            devmap.stratified_rows(labels, size, 3)


def test_a_crafted_kernel_archive_extracts_only_plain_files_under_its_prefix(tmp_path) -> None:
    """Issue 39: names a crafted zip may hold (an empty name that is no directory, ``..``, a path out, an absolute
    path, a backslash name, a dot file) are skipped; only ``<prefix>/<name>`` files land in the destination."""
    import zipfile

    from programl.data.devmap.download import _extract_members

    archive = tmp_path / "kernels.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("kernels/ok.cl", "kernel void A() {}")
        zf.writestr(zipfile.ZipInfo("kernels/"), "")  # a directory entry
        zf.writestr("kernels/..", "x")
        zf.writestr("kernels/.hidden", "x")
        zf.writestr("kernels/../escape.cl", "x")
        zf.writestr("/kernels/abs.cl", "x")
        zf.writestr("kernels/\\evil.cl", "x")
        info = zipfile.ZipInfo("kernels/")
        info.external_attr = 0o100644 << 16  # claims to be a file
        zf.writestr(info, "x")
    destination = tmp_path / "out" / "kernels"
    _extract_members(archive, "kernels", destination)
    assert sorted(p.name for p in destination.iterdir()) == [".complete", "ok.cl"]
    assert not (tmp_path / "out" / "escape.cl").exists()
