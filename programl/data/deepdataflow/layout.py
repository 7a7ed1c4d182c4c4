"""The DeepDataFlow directory layout: where every file of a data set lives (docs/spec/datasets.md#deepdataflow-layout,
docs/spec/datasets.md#builds).

::

    <root>/ir/<name>.ll                                            textual LLVM IR
    <root>/graphs/<name>.ProgramGraph.pb                           binary ProgramGraph
    <root>/labels/<analysis>/<name>.ProgramGraphFeaturesList.pb    one record per root, or
    <root>/labels/all/<name>.DataFlowLabels.bin                    every analysis of a graph, compact (the default)
    <root>/{train,val,test}/<name>.ProgramGraph.pb                 relative symlinks to ../graphs/...
    <root>/vocab/programl.csv                                      tab-separated, count-ordered
    <root>/manifest.jsonl                                          one line per input (this project's builder)
    <root>/dataset.json                                            summary of the last build (this project's builder)

The records are those of docs/spec/wire-format.md#label-records, the vocabulary that of docs/spec/models.md#vocabulary.

ProGraML's released DeepDataFlow (``*_20.06.01`` tarballs) has the same shape: its dominance labels may sit in
``labels/domtree`` (the tarball's name), which :meth:`Layout.label_dir` accepts too. A graph has labels for an
analysis when its label file exists (the original's scripts delete empty label files, and graphs with no eligible
root have none).

This project's builder writes the labels of a graph in one of two forms (``--label-format``;
:mod:`~programl.data.deepdataflow.labels`): ``compact`` (the default), one ``labels/all/<name>.DataFlowLabels.bin``
per graph holding every analysis that labelled it (zlib-compressed columns, bits for the per-node labels: ~1 KB per
graph where the protobuf files take ~200 KB), or ``protobuf``, the original's files above. Readers take either, per
graph and analysis: the protobuf file when there is one, else the compact file's section
(:func:`~programl.data.deepdataflow.labels.read_labels`).

The manifest is the JSON-lines file of every builder (:mod:`programl.data.manifest`, whose :func:`read_manifest`,
:func:`append_manifest` and :func:`write_manifest` are re-exported here): appended to as inputs finish (a line torn
by a crash is ignored when read); the latest line of a name wins.
"""

from __future__ import annotations

import os
from pathlib import Path

from programl.data.manifest import append_manifest, read_manifest, write_manifest

__all__ = [
    "COMPACT_LABEL_DIR",
    "COMPACT_LABEL_SUFFIX",
    "GRAPH_SUFFIX",
    "LABEL_FORMATS",
    "LABEL_SUFFIX",
    "SPLITS",
    "Layout",
    "append_manifest",
    "read_manifest",
    "write_manifest",
]

SPLITS = ("train", "val", "test")
GRAPH_SUFFIX = ".ProgramGraph.pb"
LABEL_SUFFIX = ".ProgramGraphFeaturesList.pb"
#: The compact label files (every analysis of one graph): ``labels/all/<name>.DataFlowLabels.bin``.
COMPACT_LABEL_DIR = "all"
COMPACT_LABEL_SUFFIX = ".DataFlowLabels.bin"
#: The forms a build writes its labels in: this project's compact files (the default), or the original's protobuf.
LABEL_FORMATS = ("compact", "protobuf")
#: Directory names under ``labels/`` that hold an analysis (ProGraML's tarball calls dominance ``domtree``).
LABEL_DIR_NAMES = {"dominance": ("dominance", "domtree")}


class Layout:
    """Paths of a DeepDataFlow data set rooted at ``root`` (nothing is created until written).

    Args:
        root: The data set directory.
    """

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"Layout({str(self.root)!r})"

    # ------------------------------------------------------------------------------------------------ files
    @property
    def manifest(self) -> Path:
        return self.root / "manifest.jsonl"

    @property
    def summary(self) -> Path:
        return self.root / "dataset.json"

    @property
    def vocabulary(self) -> Path:
        return self.root / "vocab" / "programl.csv"

    @property
    def graphs_dir(self) -> Path:
        return self.root / "graphs"

    def ir(self, name: str) -> Path:
        return self.root / "ir" / f"{name}.ll"

    def graph(self, name: str) -> Path:
        return self.graphs_dir / f"{name}{GRAPH_SUFFIX}"

    def label_dir(self, analysis: str) -> Path:
        """``labels/<analysis>`` (or an alias such as ``labels/domtree`` when only that one exists)."""
        names = LABEL_DIR_NAMES.get(analysis, (analysis,))
        for name in names:
            path = self.root / "labels" / name
            if path.is_dir():
                return path
        return self.root / "labels" / names[0]

    def labels(self, analysis: str, name: str) -> Path:
        """The original's label file of ``name`` for ``analysis`` (``labels/<analysis>/<name>...pb``)."""
        return self.label_dir(analysis) / f"{name}{LABEL_SUFFIX}"

    def has_labels(self, analysis: str) -> bool:
        """Whether the data set has a directory of labels for ``analysis`` (its own, or the compact files')."""
        return self.label_dir(analysis).is_dir() or self.compact_label_dir.is_dir()

    @property
    def compact_label_dir(self) -> Path:
        return self.root / "labels" / COMPACT_LABEL_DIR

    def compact_labels(self, name: str) -> Path:
        """The compact label file of ``name`` (every analysis; ``labels/all/<name>.DataFlowLabels.bin``)."""
        return self.compact_label_dir / f"{name}{COMPACT_LABEL_SUFFIX}"

    def label_names(self, analysis: str | None, label_format: str = "protobuf") -> list[str]:
        """Names of the graphs with a label file of ``label_format`` (``protobuf``: for ``analysis``; ``compact``:
        any compact file, whichever analyses it holds), sorted."""
        if label_format == "compact":
            return _names_in(self.compact_label_dir, COMPACT_LABEL_SUFFIX)
        if analysis is None:
            raise ValueError("protobuf label files are per analysis: name one")
        return _names_in(self.label_dir(analysis), LABEL_SUFFIX)

    def split_dir(self, split: str) -> Path:
        return self.root / split

    def split_link(self, split: str, name: str) -> Path:
        return self.split_dir(split) / f"{name}{GRAPH_SUFFIX}"

    # ------------------------------------------------------------------------------------------------ listing
    def graph_names(self) -> list[str]:
        """Names of every graph in ``graphs/``, sorted."""
        return _names_in(self.graphs_dir)

    def split_names(self, split: str) -> list[str]:
        """Names of the graphs in a split directory (its symlinks or files), sorted.

        Raises:
            FileNotFoundError: The data set has no such split directory.
        """
        directory = self.split_dir(split)
        if not directory.is_dir():
            raise FileNotFoundError(f"{directory}: no such split directory (expected {', '.join(SPLITS)})")
        return _names_in(directory)

    def resolve_graph(self, split: str | None, name: str) -> Path:
        """The graph file of ``name``: ``graphs/<name>...`` when present, else the split's own file or link."""
        path = self.graph(name)
        if path.exists() or split is None:
            return path
        return self.split_link(split, name)


def _names_in(directory: Path, suffix: str = GRAPH_SUFFIX) -> list[str]:
    try:
        entries = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(e[: -len(suffix)] for e in entries if e.endswith(suffix))
