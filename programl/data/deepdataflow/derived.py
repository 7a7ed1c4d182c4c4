"""Derived DeepDataFlow roots: a new root that shares most of a base build through symlinks
(docs/spec/datasets.md#deepdataflow-layout, docs/spec/datasets.md#builds).

A derived root has the layout of :mod:`~programl.data.deepdataflow.layout` but holds only what differs from its base
build (more training labels, extra training graphs); everything else is an absolute symlink into the base. The
scripts ``scripts/dataflow_more_roots.py`` and ``scripts/subexpressions_linked_kernels.py`` assemble such roots with
the helpers here, so that both keep the same rules:

* a link that already exists and points at the same file is kept (assembling again is a no-op, so runs resume);
* a link that points *elsewhere* is an error, never silently the first one (two derived sets written to one place);
* the base's converted validation and test splits (``processed/ddf-v1/<key>/{val,test}``) are linked, not converted
  again: they depend only on the vocabulary, which a derived root copies from its base, so the key is the same.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["DerivedRootError", "link", "link_all", "link_converted_splits"]


class DerivedRootError(RuntimeError):
    """A path of the derived root already links another file than the one asked for."""


def link(target: Path, source: Path, hint: str = "use another output directory") -> None:
    """Make ``target`` an absolute symlink to ``source`` unless it exists; a symlink to another file is an error.

    An existing regular file or directory at ``target`` is left alone (the derived root's own content).
    """
    source = Path(os.path.abspath(source))
    if target.is_symlink():
        if Path(os.readlink(target)) != source:
            raise DerivedRootError(f"{target} already links {os.readlink(target)}, not {source}: {hint}")
        return
    if not target.exists():
        os.symlink(source, target)


def link_all(
    target_dir: Path, source_dir: Path, names: Iterable[str] | None = None, hint: str = "use another output directory"
) -> None:
    """:func:`link` every file of ``source_dir`` (or only ``names``) into ``target_dir``, created if missing."""
    target_dir.mkdir(parents=True, exist_ok=True)
    for name in names if names is not None else sorted(os.listdir(source_dir)):
        link(target_dir / name, source_dir / name, hint)


def link_converted_splits(base: Path, root: Path, splits: Iterable[str] = ("val", "test")) -> list[Path]:
    """Link the base build's converted ``splits`` (every vocabulary key under ``processed/ddf-v1``) into ``root``,
    so only the splits that differ (``train``) are converted again. Returns the links made or kept."""
    linked = []
    for key_dir in sorted((base / "processed" / "ddf-v1").glob("*")):
        for split in splits:
            if (key_dir / split).is_dir():
                target = root / "processed" / "ddf-v1" / key_dir.name / split
                target.parent.mkdir(parents=True, exist_ok=True)
                link(target, key_dir / split)
                linked.append(target)
    return linked
