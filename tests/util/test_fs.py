"""Atomic writes (programl.util.fs)."""

from __future__ import annotations

import pytest

from programl.util import fs


def test_writes_and_creates_parents(tmp_path) -> None:
    path = fs.atomic_write_bytes(tmp_path / "a" / "b" / "x.pb", b"data")
    assert path.read_bytes() == b"data"
    assert fs.atomic_write_text(tmp_path / "t.txt", "héllo").read_text(encoding="utf-8") == "héllo"


def test_replaces_existing_file(tmp_path) -> None:
    (tmp_path / "x").write_bytes(b"old")
    fs.atomic_write_bytes(tmp_path / "x", b"new")
    assert (tmp_path / "x").read_bytes() == b"new"


def test_failed_write_leaves_old_file_and_no_temp(tmp_path) -> None:
    (tmp_path / "x").write_bytes(b"old")
    with pytest.raises(TypeError):
        fs.atomic_write_bytes(tmp_path / "x", "not bytes")  # type: ignore[arg-type]
    assert (tmp_path / "x").read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["x"]
