"""Freshness records (programl.util.freshness): keys over content and options, a record that survives copies."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from programl import __version__
from programl.util.freshness import RECORD_NAME, FreshnessRecord, file_key, freshness_key

V = __version__


def test_key_covers_content_and_options_not_their_order() -> None:
    key = freshness_key(b"abc", {"a": 1, "flags": ["-O2"]}, version=V)
    assert key == freshness_key(b"abc", {"flags": ["-O2"], "a": 1}, version=V)
    assert key != freshness_key(b"abd", {"a": 1, "flags": ["-O2"]}, version=V)
    assert key != freshness_key(b"abc", {"a": 1, "flags": ["-O0"]}, version=V)
    assert key != freshness_key(b"abc", {"a": 1, "flags": ["-O2"]}, version=V + ".post1")
    assert len(key) == 64


@pytest.mark.parametrize(
    "content, options, key",
    [
        (b"abc", {"a": 1, "flags": ["-O2"]}, "eb9a0a86cbdb961a84cca88234e0697001d21b6fcb29fd9dd8428da4963e98d8"),
        (b"", {}, "0a6d638c184b5a89936b6ce5fc5517b1c07d0ee31a2a42decab03b4204391e6a"),
    ],
)
def test_keys_of_0_4_0_are_unchanged(content, options, key) -> None:
    """The keys are stored in users' output directories: the same input, options and version give the same key as
    when the version was read inside this module (issue 35 item 5), or every output would be rebuilt."""
    assert freshness_key(content, options, version="0.4.0") == key


def test_freshness_imports_nothing_above_util() -> None:
    """util sits at the bottom (DESIGN §1): the version comes from the callers, not from ``programl``."""
    import programl.util.freshness as module

    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    above = [name for name in imported if name and name.partition(".")[0] == "programl"]
    assert not [name for name in above if not name.startswith(("programl.util.", "programl.exceptions"))]


def test_file_key_of_a_missing_file_is_none(tmp_path) -> None:
    assert file_key(tmp_path / "nope", {}, version=V) is None
    (tmp_path / "x").write_bytes(b"abc")
    assert file_key(tmp_path / "x", {"k": 1}, version=V) == freshness_key(b"abc", {"k": 1}, version=V)
    assert not FreshnessRecord(tmp_path).is_fresh(tmp_path / "x", None)


def test_record_survives_a_copy_and_notices_damage(tmp_path) -> None:
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "a.pb").write_bytes(b"graph")
    record = FreshnessRecord(out)
    record.add(out / "sub" / "a.pb", "k1")
    record.add(out / "none.pb", "k2", made=False)  # these options make no file
    shutil.copytree(out, tmp_path / "copy", copy_function=shutil.copy)
    for directory in (out, tmp_path / "copy"):
        again = FreshnessRecord(directory)
        assert again.is_fresh(directory / "sub" / "a.pb", "k1")
        assert not again.is_fresh(directory / "sub" / "a.pb", "other key")
        assert again.is_fresh(directory / "none.pb", "k2")
    (out / "sub" / "a.pb").write_bytes(b"grap")  # truncated
    (out / "none.pb").write_bytes(b"stale")  # a file where none should be
    again = FreshnessRecord(out)
    assert not again.is_fresh(out / "sub" / "a.pb", "k1") and not again.is_fresh(out / "none.pb", "k2")


def test_torn_line_is_skipped_and_does_not_swallow_the_next(tmp_path) -> None:
    (tmp_path / "a").write_bytes(b"1")
    (tmp_path / "b").write_bytes(b"2")
    FreshnessRecord(tmp_path).add(tmp_path / "a", "ka")
    with open(tmp_path / RECORD_NAME, "a", encoding="utf-8") as f:
        f.write('{"output": "b", "ke')  # a crash in mid-line
    record = FreshnessRecord(tmp_path)
    assert record.is_fresh(tmp_path / "a", "ka") and not record.is_fresh(tmp_path / "b", "kb")
    record.add(tmp_path / "b", "kb")
    assert FreshnessRecord(tmp_path).is_fresh(tmp_path / "b", "kb")


def test_compaction_keeps_the_latest_entry_of_each_output(tmp_path) -> None:
    (tmp_path / "a").write_bytes(b"1")
    record = FreshnessRecord(tmp_path)
    for i in range(40):
        record.add(tmp_path / "a", f"k{i}")
    record.compact()
    assert (tmp_path / RECORD_NAME).read_text().count("\n") == 1
    assert FreshnessRecord(tmp_path).is_fresh(tmp_path / "a", "k39")


def test_a_failed_write_is_kept_not_raised(tmp_path) -> None:
    (tmp_path / RECORD_NAME).mkdir()  # the record cannot be opened for writing
    (tmp_path / "a").write_bytes(b"1")
    record = FreshnessRecord(tmp_path)
    record.add(tmp_path / "a", "k")
    assert isinstance(record.error, OSError) and record.error.filename == str(tmp_path / RECORD_NAME)
    assert not FreshnessRecord(tmp_path).is_fresh(tmp_path / "a", "k")
