#!/usr/bin/env python3
"""More distinct training examples from the same training graphs: further seeded root draws (issue 11 item 1).

A DeepDataFlow build labels each graph once, with ``min(ceil(eligible / 10), 10)`` roots drawn with the build's
seed (SPEC §4.1), so the number of examples is fixed by the corpus: DeepDataFlow-22 holds 69,372 DDF-30 training
examples for subexpressions, not the 200k of issue 11. A draw with another seed picks other roots of the same
eligible set. This script draws again for the *training* graphs only (``programl analyze ANALYSIS BASE/train
--seed S``, one directory per seed, resumable), and merges each training graph's records into one label file: the
base build's records first, then each draw's records whose root is not labelled yet, so every (graph, root)
example is distinct and the base build's examples are all kept. Validation and test keep the base build's single
draw, untouched, so scores stay comparable with every other run.

It assembles a derived data set root ``OUT/root``: the base build's graphs (symlinks), ``train``/``val``/``test``
(symlinks to the base's), the merged training labels of ANALYSIS (a graph with no new root links the base file),
the base's validation and test labels (symlinks), its vocabulary, and its converted val/test splits (symlinks, so
only ``train`` is converted again). It prints the training examples (all, and DDF-30) before and after. A base whose
labels are compact (``labels/all/``, the builder's default) has its compact files linked and the merged training
labels written beside them as protobuf files, which readers take first
(:func:`programl.data.deepdataflow.labels.read_labels`).

Usage::

    python studies/dataflow_more_roots.py --base data/ddf22-full --out data/ddf22-roots --seeds 1 2 3 -j 2
    programl train dataflow --analysis subexpressions --dataset data/ddf22-roots/root ...
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from programl.data.deepdataflow.derived import DerivedRootError, link, link_all, link_converted_splits
from programl.data.deepdataflow.layout import COMPACT_LABEL_DIR, GRAPH_SUFFIX, LABEL_SUFFIX, Layout
from programl.dataflow.names import ANALYSES


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, required=True, help="the DeepDataFlow build (programl dataset build)")
    parser.add_argument("--out", type=Path, required=True, help="where the draws and the derived root go")
    parser.add_argument("--analysis", choices=ANALYSES, default="subexpressions", help="default: subexpressions")
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[1, 2, 3],
        help="seeds of the further draws (default: 1 2 3; the build's own seed adds nothing)",
    )
    parser.add_argument(
        "--max-roots", type=int, default=10, help="roots per graph and draw, as the build (default: 10)"
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        default=30,
        help="also count the examples of at most this many steps (DDF-30; default: 30)",
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, help="labelling workers (default: 1)")
    return parser.parse_args(argv)


def draw(args: argparse.Namespace, seed: int) -> Path:
    """Label the base's training graphs with ``seed`` into ``OUT/draw-<seed>`` (up-to-date files are kept)."""
    out = args.out / f"draw-{seed}"
    command = [
        sys.executable,
        "-m",
        "programl",
        "analyze",
        args.analysis,
        str(args.base / "train"),
        "-o",
        str(out),
        "--seed",
        str(seed),
        "--max-roots",
        str(args.max_roots),
        "-j",
        str(args.jobs),
        "-q",
    ]
    subprocess.run(command, check=True)
    return out / "labels" / args.analysis


def merge(base, base_file: Path | None, draw_files: list[Path], target: Path, max_steps: int) -> np.ndarray:
    """Write ``target``: the base's records (``base``), then the draws' records of roots not yet labelled (a graph
    with no new root gets a symlink to the base's protobuf file ``base_file``, or nothing when the base's labels are
    compact: the derived root links the compact files). Returns the counts (records, records of at most
    ``max_steps`` steps) before and after, as ``[before, before_ddf, after, after_ddf]``."""
    from programl.dataflow.base import AnalysisResult
    from programl.dataflow.records import load_labels, save_labels

    parts = [base, *(load_labels(f) for f in draw_files)]
    seen: set[int] = set()
    rows = []
    for part in parts:
        for k, root in enumerate(part.roots.tolist()):
            if root not in seen:
                seen.add(root)
                rows.append((part, k))
    base = parts[0]
    steps = np.array([p.step_counts[k] for p, k in rows], dtype=np.int64)
    counts = np.array([len(base), (base.step_counts <= max_steps).sum(), len(rows), (steps <= max_steps).sum()])
    if len(rows) == len(base):
        if base_file is not None:
            os.symlink(os.path.abspath(base_file), target)
        return counts
    merged = AnalysisResult(
        analysis=base.analysis,
        roots=np.array([p.roots[k] for p, k in rows], dtype=np.int64),
        labels=np.stack([p.labels[k] for p, k in rows]),
        step_counts=steps,
        active_node_counts=np.array([p.active_node_counts[k] for p, k in rows], dtype=np.int64),
    )
    save_labels(target, merged)
    return counts


def start_root(args: argparse.Namespace) -> None:
    """Link the base's graphs and splits into ``OUT/root`` before any draw, so an ``--out`` that holds another
    base's root fails at once (:class:`DerivedRootError`), not after the draws."""
    root = args.out / "root"
    root.mkdir(parents=True, exist_ok=True)
    for name in ("graphs", "train", "val", "test"):
        link(root / name, args.base.resolve() / name)


def assemble(args: argparse.Namespace, draws: list[Path]) -> tuple[Path, np.ndarray]:
    """The derived root ``OUT/root`` (module docstring); returns it and the training counts of :func:`merge`."""
    from programl.data.deepdataflow.labels import labelled_names, read_labels

    base, root = args.base.resolve(), args.out / "root"
    layout = Layout(base)
    labels = root / "labels" / args.analysis
    labels.mkdir(parents=True, exist_ok=True)
    (root / "vocab").mkdir(exist_ok=True)
    shutil.copyfile(base / "vocab" / "programl.csv", root / "vocab" / "programl.csv")
    if layout.compact_label_dir.is_dir():  # compact labels: every graph's file, merged records override them
        link_all(root / "labels" / COMPACT_LABEL_DIR, layout.compact_label_dir)
    train = {p.name[: -len(GRAPH_SUFFIX)] for p in (base / "train").iterdir() if p.name.endswith(GRAPH_SUFFIX)}
    counts = np.zeros(4, dtype=np.int64)
    for name in sorted(labelled_names(layout, args.analysis)):
        path = layout.labels(args.analysis, name)
        base_file = path if path.is_file() else None
        target = labels / f"{name}{LABEL_SUFFIX}"
        if name not in train:  # validation and test: the base's draw
            if base_file is not None:
                link(target, base_file)
            continue
        if target.is_symlink() or target.is_file():  # merged by an earlier, interrupted run: count it again
            target.unlink()
        draw_files = [d / target.name for d in draws if (d / target.name).is_file()]
        base_records = read_labels(layout, args.analysis, name)
        counts += merge(base_records, base_file, draw_files, target, args.max_steps)
    # The base build's converted val/test splits: only train is converted again.
    link_converted_splits(base, root)
    return root, counts


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if not (args.base / "train").is_dir() or not Layout(args.base).has_labels(args.analysis):
            print(
                f"error: {args.base}: not a DeepDataFlow build with {args.analysis} labels (train/, labels/)",
                file=sys.stderr,
            )
            return 1
        start_root(args)
        draws = [draw(args, seed) for seed in args.seeds]
        root, counts = assemble(args, draws)
    except subprocess.CalledProcessError as error:  # the tool has printed its own message
        print(f"error: programl analyze exited with status {error.returncode}", file=sys.stderr)
        return 1
    except DerivedRootError as error:  # --out holds another derived root
        print(f"error: {error}", file=sys.stderr)
        return 1
    except OSError as error:  # a missing directory, a full disk
        print(f"error: {error.filename or ''}: {error.strerror or error}", file=sys.stderr)
        return 1
    print(
        f"{root}: {args.analysis} training examples {counts[0]:,} -> {counts[2]:,}, of at most {args.max_steps} "
        f"steps {counts[1]:,} -> {counts[3]:,} (seeds {' '.join(map(str, args.seeds))}; validation and test "
        "unchanged)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
