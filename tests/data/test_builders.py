"""The build pipeline shared by the three data-set builders (programl.data.manifest, .report, .pipeline; DESIGN §1
``data/``, §5): the manifest and the freshness rule, the report, and for each builder that a data set written in the
manifest format of the builders before they shared it is read as up to date, and a rerun leaves every byte as is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from programl.cli.common import EXIT_FAILED, EXIT_OK
from programl.data import devmap, poj104
from programl.data.deepdataflow import build_dataset, discover_inputs
from programl.data.manifest import (
    BUILD,
    FAILED,
    UP_TO_DATE,
    Manifest,
    append_manifest,
    freshness,
    read_manifest,
    write_manifest,
)
from programl.data.report import BuildReport
from tests.data._ddf import write_sources
from tests.data.test_poj104 import BROKEN, HELLO, write_codexglue


def files_of(root: Path, leave_out: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under ``root`` (links as their target's text), by relative path."""
    out = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if name in leave_out or path.is_dir() and not path.is_symlink():
            continue
        out[name] = str(path.readlink()).encode() if path.is_symlink() else path.read_bytes()
    return out


# --------------------------------------------------------------------------------------------------------------
# The manifest and the freshness rule


def test_manifest_latest_line_wins_torn_line_ignored_append_after_it(tmp_path) -> None:
    path = tmp_path / "manifest.jsonl"
    append_manifest(path, [{"name": "a", "status": "failed"}, {"name": "b", "status": "ok"}])
    with open(path, "a") as f:
        f.write('{"name": "c", "sta')  # a crash tore the last line
    assert list(read_manifest(path)) == ["a", "b"]
    append_manifest(path, [{"name": "a", "status": "ok"}])
    assert read_manifest(path) == {"a": {"name": "a", "status": "ok"}, "b": {"name": "b", "status": "ok"}}
    write_manifest(path, [{"name": "b", "status": "ok"}])
    assert path.read_text() == '{"name":"b","status":"ok"}\n'
    assert read_manifest(tmp_path / "missing.jsonl") == {}


@pytest.mark.parametrize(
    ("previous", "key", "outputs", "options", "expected"),
    [
        (None, "k", True, {}, BUILD),
        ({"sha256": "k", "status": "ok"}, "k", True, {}, UP_TO_DATE),
        ({"sha256": "k", "status": "ok"}, "k", False, {}, BUILD),  # an output was removed
        ({"sha256": "k", "status": "ok"}, "other", True, {}, BUILD),  # the input or the options changed
        ({"sha256": "k", "status": "ok"}, "k", True, {"force": True}, BUILD),
        ({"sha256": "k", "status": "failed"}, "k", True, {}, FAILED),
        ({"sha256": "k", "status": "failed"}, "k", True, {"retry_failed": True}, BUILD),
        ({"sha256": "k", "status": "failed", "transient": True}, "k", True, {}, BUILD),  # a full disk, say
        ({"status": "ok"}, None, True, {}, UP_TO_DATE),  # a builder without a key: status and outputs
        ({"status": "failed"}, None, True, {}, BUILD),  # ... which cannot tell a changed input: retried
    ],
)
def test_freshness(previous, key, outputs, options, expected) -> None:
    assert freshness(previous, key, lambda entry: outputs, **options) == expected


def test_manifest_counts_what_it_skips_and_keeps_a_failed_write(tmp_path) -> None:
    path = tmp_path / "manifest.jsonl"
    append_manifest(
        path,
        [
            {"name": "a", "sha256": "1", "status": "ok"},
            {"name": "b", "sha256": "2", "status": "failed", "error": "boom"},
        ],
    )
    report = BuildReport()
    manifest = Manifest(path, report)
    assert [manifest.check(n, k, lambda e: True) for n, k in (("a", "1"), ("b", "2"), ("c", "3"))] == [
        False,
        False,
        True,
    ]
    assert (report.skipped, report.failed) == (1, [("b", "boom")]) and not manifest.changed
    path.unlink()
    path.mkdir()  # appending now fails: kept in the report, not raised
    manifest.record({"name": "c", "status": "ok"})
    assert manifest.changed and manifest.entries["c"] == {"name": "c", "status": "ok"}
    assert [e.filename for e in report.errors] == [str(path)]
    assert report.exit_code == EXIT_FAILED


def test_report_summary_and_exit_code() -> None:
    report = BuildReport(built=3, skipped=1_204, seconds=2.46)
    assert report.summary() == "3 built, 1,204 up to date, 0 failed of 1,207 inputs in 2.5 s"
    assert report.ok and report.exit_code == EXIT_OK and report.up_to_date == 1_204
    report.failed.append(("x", "x.c:1:2: error: boom"))
    assert not report.ok and report.exit_code == EXIT_FAILED and report.total == 1_208


# --------------------------------------------------------------------------------------------------------------
# Each builder: a data set in the format of the builders before they shared the manifest is up to date


def test_deepdataflow_rerun_is_up_to_date_and_changes_no_byte(tmp_path) -> None:
    inputs = discover_inputs([write_sources(tmp_path / "sources", chains=(3,))])
    root = tmp_path / "ddf"
    first = build_dataset(inputs, root, jobs=2)
    assert (first.built, first.skipped, first.failed) == (len(inputs), 0, [])
    before = files_of(root, leave_out=("dataset.json",))  # the summary of the last build: its counts and seconds
    again = build_dataset(inputs, root, jobs=2)
    assert (again.built, again.skipped, again.failed, again.errors) == (0, len(inputs), [], [])
    assert files_of(root, leave_out=("dataset.json",)) == before
    assert json.loads((root / "dataset.json").read_text())["up_to_date"] == len(inputs)


def test_poj104_old_manifest_is_up_to_date_and_a_torn_line_is_rebuilt(tmp_path, clang22) -> None:
    source = write_codexglue(tmp_path, {"1/1.cpp": HELLO, "1/2.cpp": BROKEN, "2/1.cpp": "void main() { }\n"})
    programs = poj104.read_programs(source, verify=False)
    out = tmp_path / "out"
    first = poj104.build_poj104(source, out, [0], programs=programs, jobs=2)
    assert (first.built, first.skipped, [n for n, _ in first.failed]) == (2, 0, ["1.2.0"])
    assert first.recipes == {"programl": 2}
    # the manifest as build_poj104 wrote it before it shared the pipeline: default separators, sorted by name
    manifest = out / "manifest.jsonl"
    entries = read_manifest(manifest)
    manifest.write_text("".join(json.dumps(entries[k], sort_keys=True) + "\n" for k in sorted(entries)))
    before = files_of(out)
    again = poj104.build_poj104(source, out, [0], programs=programs)
    assert (again.built, again.skipped, [n for n, _ in again.failed]) == (0, 2, ["1.2.0"])
    assert files_of(out) == before  # nothing built: not even the manifest is rewritten
    # a crash tore the line of the last program built: that one is rebuilt, the others are read
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(lines[:-1]) + lines[-1][:20])
    resumed = poj104.build_poj104(source, out, [0], programs=programs)
    assert (resumed.built, resumed.skipped, len(resumed.failed)) == (1, 1, 1)
    assert read_manifest(manifest).keys() == entries.keys()
    assert {k: v for k, v in files_of(out).items() if k.startswith("graphs/")} == {
        k: v for k, v in before.items() if k.startswith("graphs/")
    }


def test_devmap_old_manifest_is_up_to_date(shared_data, tmp_path) -> None:
    rows = [0, 16]
    first = devmap.build_devmap(shared_data / "devmap", tmp_path, variants=["ncc"], rows=rows, jobs=2)
    assert first.built == {"ncc": 2} and first.ok and first.exit_code == EXIT_OK
    # the manifest as build_devmap wrote it before it shared the pipeline: default separators, sorted by row
    manifest = tmp_path / "ncc" / "manifest.jsonl"
    entries = sorted(read_manifest(manifest).values(), key=lambda e: e["row"])
    manifest.write_text("\n".join(json.dumps(e, sort_keys=True) for e in entries) + "\n")
    before = files_of(tmp_path / "ncc")
    again = devmap.build_devmap(shared_data / "devmap", tmp_path, variants=["ncc"], rows=rows)
    assert (again.built, again.skipped, again.failed) == ({"ncc": 0}, {"ncc": 2}, {"ncc": []})
    assert files_of(tmp_path / "ncc") == before
    forced = devmap.build_devmap(shared_data / "devmap", tmp_path, variants=["ncc"], rows=rows, force=True)
    assert forced.built == {"ncc": 2}
    assert {k: v for k, v in files_of(tmp_path / "ncc").items() if k.startswith("graphs_")} == {
        k: v for k, v in before.items() if k.startswith("graphs_")
    }
