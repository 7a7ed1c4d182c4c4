"""Seeded train/val/test split of a DeepDataFlow data set by source program (docs/spec/datasets.md#deepdataflow-layout,
docs/spec/datasets.md#builds).

Every input belongs to a *group* (its source program); all inputs of a group go to the same split, so that no
optimisation level of a test program is seen in training. Groups are ordered by ``sha256(f"{seed}:{group}")`` (a
seeded permutation that does not depend on the other groups) and cut in proportions 3:1:1: the first
``round(3n/5)`` train, the next ``round(n/5)`` val, the rest test. The same groups and seed always give the same
split; adding groups moves few existing ones.

(The original assigned each non-POJ IR file independently with probabilities 0.6/0.2/0.2, unseeded.)
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping

from programl.data.deepdataflow.layout import SPLITS, Layout

__all__ = ["split_groups", "write_split_links"]


def _key(seed: int, group: str) -> bytes:
    return hashlib.sha256(f"{seed}:{group}".encode()).digest()


def split_groups(groups: Iterable[str], seed: int = 204, ratios: tuple[int, int, int] = (3, 1, 1)) -> dict[str, str]:
    """Assign every group to ``train``, ``val`` or ``test``.

    Args:
        groups: Group names (duplicates are ignored).
        seed: Seed of the permutation.
        ratios: Proportions of train, val and test.

    Returns:
        ``{group: split}``.
    """
    ordered = sorted(set(groups), key=lambda g: (_key(seed, g), g))
    n = len(ordered)
    total = sum(ratios)
    n_train = round(n * ratios[0] / total)
    n_val = round(n * ratios[1] / total)
    out = {}
    for i, group in enumerate(ordered):
        out[group] = "train" if i < n_train else "val" if i < n_train + n_val else "test"
    return out


def write_split_links(layout: Layout, assignment: Mapping[str, str]) -> dict[str, int]:
    """Make ``<split>/<name>.ProgramGraph.pb`` relative symlinks to ``../graphs/...`` for ``{name: split}``.

    Links that should not be there (names no longer in a split, or moved to another) are removed; a link is
    replaced atomically (made under a temporary name, then renamed). Returns the number of graphs per split.
    """
    counts = dict.fromkeys(SPLITS, 0)
    for split in SPLITS:
        directory = layout.split_dir(split)
        directory.mkdir(parents=True, exist_ok=True)
        wanted = {name for name, s in assignment.items() if s == split}
        for existing in layout.split_names(split):
            if existing not in wanted:
                os.unlink(layout.split_link(split, existing))
        for name in sorted(wanted):
            link = layout.split_link(split, name)
            target = os.path.relpath(layout.graph(name), directory)
            if os.path.islink(link) and os.readlink(link) == target:
                counts[split] += 1
                continue
            tmp = directory / f".{link.name}.tmp"
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(target, tmp)
            os.replace(tmp, link)
            counts[split] += 1
    return counts
