"""Atomic writes and one-line JSON reads (programl.util.fs)."""

from __future__ import annotations

import os
import stat

import pytest

from programl.exceptions import ProgramlError
from programl.util import fs
from programl.util.fs import read_json


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


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_mode_follows_the_umask(tmp_path, umask, mode) -> None:
    old = os.umask(umask)
    try:
        assert fs.current_umask() == umask
        new = fs.atomic_write_bytes(tmp_path / "new.pb", b"data")
        (tmp_path / "old.pb").write_bytes(b"old")
        os.chmod(tmp_path / "old.pb", 0o600)
        replaced = fs.atomic_write_text(tmp_path / "old.pb", "new")
        plain = tmp_path / "plain"
        plain.write_bytes(b"")  # what any program's new file gets
    finally:
        os.umask(old)
    assert stat.S_IMODE(new.stat().st_mode) == mode
    assert stat.S_IMODE(replaced.stat().st_mode) == mode
    assert stat.S_IMODE(plain.stat().st_mode) == mode


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, r"none\.json: no such file"),
        ("dir", r"d: a directory, not a file"),
        (b"\xff\xfe{", r"x\.json: not JSON \(invalid start byte\)"),
        (b'{"a": 1,\n', r"x\.json:2:1: not JSON \(Expecting property name"),
    ],
)
def test_read_json_errors_are_one_line(tmp_path, content, message) -> None:
    if content is None:
        path = tmp_path / "none.json"
    elif content == "dir":
        path = tmp_path / "d"
        path.mkdir()
    else:
        path = tmp_path / "x.json"
        path.write_bytes(content)
    with pytest.raises(ProgramlError, match=message) as caught:
        read_json(path)
    assert "\n" not in str(caught.value)


def test_read_json_reads_any_value(tmp_path) -> None:
    path = tmp_path / "x.json"
    path.write_text('[1, {"b": null}]')
    assert read_json(path) == [1, {"b": None}]


def test_write_bytes_names_the_file_in_its_error(tmp_path, monkeypatch) -> None:
    """A full disk's ``OSError`` carries no file name; :func:`fs.write_bytes` adds the destination's."""

    def full(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fs, "atomic_write_bytes", full)
    with pytest.raises(OSError) as caught:
        fs.write_bytes(tmp_path / "run" / "last.pt", b"x")
    assert caught.value.errno == 28 and caught.value.filename == str(tmp_path / "run" / "last.pt")


def test_write_json_is_indented_sorted_and_takes_arrays_and_paths(tmp_path) -> None:
    import numpy as np

    path = fs.write_json(tmp_path / "r.json", {"b": np.arange(2), "a": tmp_path, "c": np.float32(0.5)})
    assert path.read_text(encoding="utf-8") == (
        '{\n  "a": ' + f'"{tmp_path}"' + ',\n  "b": [\n    0,\n    1\n  ],\n  "c": 0.5\n}\n'
    )
    assert fs.jsonable(np.int64(3)) == 3
    with pytest.raises(TypeError, match="set is not JSON serialisable"):
        fs.jsonable({1})
