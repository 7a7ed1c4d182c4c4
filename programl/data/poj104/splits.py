"""POJ-104's split: seeded per class 3:1:1 by program, its subsets, and the settings each split reads
(:mod:`programl.data.poj104`)."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from programl.data.poj104.download import Program
from programl.util.fs import atomic_write_text

__all__ = ["canonical_settings", "distinct_eval_settings", "load_split", "split_programs", "subset_split"]


def canonical_settings(settings: Sequence[int]) -> tuple[int, ...]:
    """Optimisation settings as a selection reads them: ascending, each once."""
    return tuple(sorted(set(int(i) for i in settings)))


def distinct_eval_settings(settings: tuple[int, ...], eval_settings: Sequence[int] | None) -> tuple[int, ...] | None:
    """The validation and test splits' settings when they differ from the (canonical) training ``settings``, else
    None: one set for all splits.

    Raises:
        ValueError: ``eval_settings`` names no setting.
    """
    if eval_settings is None:
        return None
    chosen = canonical_settings(eval_settings)
    if not chosen:
        raise ValueError("eval_settings must name at least one setting (or be None)")
    return None if chosen == settings else chosen


def split_programs(
    programs: Sequence[Program], seed: int = 204, ratios: tuple[int, int, int] = (3, 1, 1)
) -> dict[str, list[str]]:
    """Seeded per-class split of program ids into ``train``/``val``/``test`` in proportions ``ratios`` (3:1:1).

    The programs of each class are put in a random order (a generator seeded with ``(seed, label)``, so a class's
    order does not depend on the other classes); the first 3/5 are training, the next 1/5 validation, the rest test.
    Each list is in that order (which :func:`subset_split` relies on).
    """
    by_label: dict[int, list[Program]] = defaultdict(list)
    for program in programs:
        by_label[program.label].append(program)
    total = sum(ratios)
    out: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    for label in sorted(by_label):
        group = sorted(by_label[label], key=lambda p: p.index)
        order = np.random.default_rng([seed, label]).permutation(len(group))
        n_train = round(len(group) * ratios[0] / total)
        n_val = round(len(group) * ratios[1] / total)
        ids = [group[i].id for i in order]
        out["train"] += ids[:n_train]
        out["val"] += ids[n_train : n_train + n_val]
        out["test"] += ids[n_train + n_val :]
    return out


def subset_split(split: dict[str, list[str]], per_class: int | None) -> dict[str, list[str]]:
    """The first programs of each class in each split, ``per_class`` programs per class in 3:1:1 proportion
    (e.g. 100 -> 60 / 20 / 20); ``None`` keeps everything. A subset's test programs are full-split test programs."""
    if per_class is None:
        return {k: list(v) for k, v in split.items()}
    quota = {"train": round(per_class * 3 / 5), "val": round(per_class / 5)}
    quota["test"] = per_class - quota["train"] - quota["val"]
    out: dict[str, list[str]] = {}
    for name, ids in split.items():
        taken: dict[str, int] = defaultdict(int)
        kept = []
        for pid in ids:
            label = pid.split(".")[0]
            if taken[label] < quota[name]:
                taken[label] += 1
                kept.append(pid)
        out[name] = kept
    return out


def load_split(data_dir: str | os.PathLike, programs: Sequence[Program], seed: int = 204) -> dict[str, list[str]]:
    """:func:`split_programs`, written to ``data_dir/splits/seed<seed>/{train,val,test}.txt`` the first time (and
    read back afterwards, so a run always sees the split it was trained with)."""
    directory = Path(data_dir) / "splits" / f"seed{seed}"
    files = {name: directory / f"{name}.txt" for name in ("train", "val", "test")}
    if all(f.is_file() for f in files.values()):
        return {name: f.read_text(encoding="utf-8").split() for name, f in files.items()}
    split = split_programs(programs, seed)
    for name, f in files.items():
        atomic_write_text(f, "".join(pid + "\n" for pid in split[name]))
    return split
