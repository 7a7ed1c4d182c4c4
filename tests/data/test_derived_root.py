"""programl.data.deepdataflow.derived: the symlink rules shared by the scripts that assemble derived roots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from programl.data.deepdataflow.derived import DerivedRootError, link, link_all, link_converted_splits


def test_link_makes_an_absolute_symlink_and_keeps_it_on_a_second_call(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "a").write_text("a")
    monkeypatch.chdir(tmp_path)  # a relative source is made absolute
    link(tmp_path / "l", Path("a"))
    assert os.readlink(tmp_path / "l") == str(tmp_path / "a")
    link(tmp_path / "l", tmp_path / "a")  # the same target again: kept, no error
    assert (tmp_path / "l").read_text() == "a"


def test_link_to_another_file_is_an_error_that_names_both(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    link(tmp_path / "l", tmp_path / "a")
    with pytest.raises(DerivedRootError, match=r"already links .*a, not .*b: use another --prefix"):
        link(tmp_path / "l", tmp_path / "b", hint="use another --prefix")
    assert (tmp_path / "l").read_text() == "a"


def test_link_leaves_a_regular_file_alone(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a")
    (tmp_path / "own").write_text("own")
    link(tmp_path / "own", tmp_path / "a")
    assert not (tmp_path / "own").is_symlink() and (tmp_path / "own").read_text() == "own"


def test_link_all_links_every_file_or_the_names_given(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("x", "y", "z"):
        (source / name).write_text(name)
    link_all(tmp_path / "all", source)
    link_all(tmp_path / "some", source, names=["y"])
    assert sorted(os.listdir(tmp_path / "all")) == ["x", "y", "z"]
    assert os.listdir(tmp_path / "some") == ["y"] and (tmp_path / "some" / "y").read_text() == "y"


def test_converted_val_and_test_splits_are_linked_for_every_key_and_train_is_not(tmp_path: Path) -> None:
    base, root = tmp_path / "base", tmp_path / "root"
    for key in ("k1", "k2"):
        for split in ("train", "val", "test"):
            (base / "processed" / "ddf-v1" / key / split).mkdir(parents=True)
    (base / "processed" / "ddf-v1" / "k3" / "val").mkdir(parents=True)  # a key whose test was never converted
    made = link_converted_splits(base, root)
    rel = sorted(str(p.relative_to(root / "processed" / "ddf-v1")) for p in made)
    assert rel == ["k1/test", "k1/val", "k2/test", "k2/val", "k3/val"]
    assert all(p.is_symlink() for p in made)
    assert not (root / "processed" / "ddf-v1" / "k1" / "train").exists()
    assert link_converted_splits(base, root) == made  # again: the same links, kept
