"""``DeepDataFlow``: data-flow examples as a PyG ``Dataset`` on disk, one example per label record
(docs/spec/tasks.md#data-flow-protocol, docs/spec/models.md#graph-tensors, docs/spec/datasets.md#deepdataflow-layout,
docs/spec/datasets.md#builds).

Two ways in, one class:

* ``DeepDataFlow(root, analysis, split)`` builds DeepDataFlow-22 (or a recipe of one's own) under ``root``: POJ-104
  C++ programs and the DevMap OpenCL kernels compiled by clang-22 at -O0 and -O2, labelled with the five analyses of
  docs/spec/analyses.md, split 3:1:1 by source program (``datasets/deepdataflow22``). PyG layout under ``root``::

      raw/poj104/poj104.tar.xz, raw/devmap/*   the recipe's sources, linked or copied from ../shared/data (or
                                               $PROGRAML_SHARED_DATA), else downloaded, sha256-checked
      processed/<name>/                        the data set in the DeepDataFlow layout, built by
                                               programl.data.deepdataflow.build_dataset (resumable; ``<name>`` says
                                               the recipe and size), and its memory-mapped split stores

* ``DeepDataFlow.from_directory(path, analysis, split)`` reads a data set directory already built in the
  DeepDataFlow layout: by ``programl dataset build`` (a wide recipe, say), or ProGraML's released one (``graphs/``,
  ``labels/<analysis>/`` with the ``data_flow_*`` keys, ``train|val|test/`` directories of symlinks,
  ``vocab/programl.csv``); labels in the original's protobuf files or in this project's compact ones
  (:mod:`programl.data.deepdataflow.labels`), which give the same examples. This is what ``programl train dataflow
  --dataset`` reads.

Example ``i`` is one (graph, label record) pair of one analysis, as a :class:`torch_geometric.data.Data` with the
attributes of :func:`programl.io.pyg.to_pyg` with labels (``x`` holds ids of the data set's training vocabulary,
:attr:`DeepDataFlow.texts`; remap them with :class:`~programl.datasets.transforms.EncodeVocabulary`):

==============  ==========  ==============================================================================
attribute       shape       meaning
==============  ==========  ==============================================================================
``x``           (N,) long   vocabulary id of ``node.text`` (OOV = ``len(vocabulary)``)
``node_type``   (N,) long   ``Node.Type``
``edge_index``  (2, E) long edges in protobuf order, parallel edges kept
``edge_flow``   (E,) long   ``Edge.Flow``
``edge_pos``    (E,) long   ``Edge.position``
``root``        (N,) long   ``data_flow_root_node`` (the selector)
``y``           (N,) long   ``data_flow_value``
``step_count``  (1,) long   ``data_flow_step_count``
``graph_index`` (1,) long   index of the graph in :attr:`DeepDataFlow.graph_names`
==============  ==========  ==============================================================================

**On-disk format (scales past memory).** The first use of a split converts it once into flat binary arrays under
``<processed_dir>/<vocabulary key>/<split>/`` (default ``processed_dir``: ``<root>/processed``): a graph store shared
by the five analyses (node texts as vocabulary ids, node types, edges, with per-graph offsets) and a label store per
analysis (per record: graph, root, step count, and the labels). They are memory-mapped, so examples are sliced from
the page cache without holding the data set in memory, and the index (step counts, node counts) is small: the
step-count filter (DDF-30 / DDF-60 / all: ``max_steps`` 30, 60, None) and the graph-size limit (``max_nodes``,
40,000 in the paper's runs; graphs with 0 nodes are dropped too) are applied to it without reading any graph.
Conversion writes to a temporary directory renamed into place (atomic; a crash leaves nothing half-written) and can
run in worker processes. The vocabulary key is a hash of the vocabulary's texts, so a different vocabulary gets its
own conversion.

Batching: pass :attr:`DeepDataFlow.sizes` to :class:`programl.loader.NodeBudgetBatchSampler`
(10,000-node batches, a seeded order per epoch) and that to ``torch_geometric.loader.DataLoader(batch_sampler=...)``,
as ``programl train dataflow`` does. :meth:`DeepDataFlow.fixed_sample` gives the validation sample of
docs/spec/tasks.md#data-flow-protocol (graphs sorted by name, shuffled with a seeded ``random.Random``, their records
taken in order).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import programl

try:
    import torch
    from torch_geometric.data import Data, Dataset
except ModuleNotFoundError as _error:  # installed without the ml extra: one line that says which extra to install
    raise programl._ml_import_error("programl.datasets", _error) or _error from None

from programl.data.deepdataflow.layout import SPLITS, Layout
from programl.data.deepdataflow.store import GRAPH_COLUMNS, memmap, prepare_split
from programl.data.download import shared_data
from programl.data.vocabulary import Vocabulary
from programl.dataflow.names import ANALYSES, check_analysis
from programl.datasets.processed import SafeProcessing
from programl.exceptions import ProgramlError

__all__ = ["DEEPDATAFLOW22", "DeepDataFlow"]

logger = logging.getLogger(__name__)

#: The DeepDataFlow-22 recipe (``datasets/deepdataflow22/recipe.json``; a test checks they agree).
DEEPDATAFLOW22: dict[str, Any] = {
    "name": "DeepDataFlow-22",
    "seed": 204,
    "max_roots": 10,
    "analyses": list(ANALYSES),
    "sources": [
        {
            "kind": "poj104",
            "path": "poj104/poj104.tar.xz",
            "sha256": "040cfc2238bf86c93aac6e72d4cdd33929f919522919a5ccc41804db0d2a0b6f",
            "url": "https://github.com/guilhermeivo/dataset-poj-104/archive/28790c70.tar.gz",
            "settings": [["-O0"], ["-O2"]],
        },
        {"kind": "devmap", "path": "devmap", "settings": [["-O0"], ["-O2"]]},
    ],
}


class DeepDataFlow(SafeProcessing, Dataset):
    """One example per label record of one analysis in one split of a DeepDataFlow data set (module docstring):
    DeepDataFlow-22 built under ``root`` (this constructor), or a directory already built
    (:meth:`from_directory`).

    Args:
        root: Data set directory (``raw/``, ``processed/``).
        analysis: One of :data:`programl.dataflow.ANALYSES` (``reachability``, ``liveness`` ...).
        split: ``train``, ``val`` or ``test``.
        size: Source programs per recipe source (a small version of the same data set; default: all).
        max_steps: Keep records within this many data-flow steps (30 = DDF-30, 60 = DDF-60, None = all).
        max_nodes: Keep graphs with at most this many nodes (40,000 in the paper's runs; None: no limit); graphs with
            no nodes are dropped.
        recipe: The recipe (default :data:`DEEPDATAFLOW22`).
        mirrors: Directories that hold the recipe's source paths (default: the shared research data, when found).
        jobs: Worker processes of the build and of the one-time conversion (default: all CPUs).
        transform, force_reload, log: As for every PyG data set.

    Raises:
        ProgramlError: The processed split is damaged (its index arrays and columns disagree, or are unreadable).

    Example:
        ``DeepDataFlow("data/ddf", "reachability", "train", size=10)`` builds DeepDataFlow-22 from 10 programs of
        each source (POJ-104 and DevMap, from the shared research data or their URLs; clang-22 compiles them). A
        recipe of one's own works alike: here a ``files`` source of five IR files of the repository, put under
        ``raw/`` (nothing to download or compile), in batches of at most 100 nodes:

        >>> import shutil
        >>> from pathlib import Path
        >>> raw = Path("data/ddf/raw/ir")
        >>> raw.mkdir(parents=True)
        >>> for name in ["examples/dot_product.ll", "tests/data/io_parallel.ll", "tests/data/example_a.ll",
        ...              "tests/data/example_b.ll", "tests/data/example_c.ll"]:
        ...     _ = shutil.copy(name, raw)
        >>> recipe = {"name": "IR files", "sources": [{"kind": "files", "path": "ir", "settings": [["-O0"]]}]}
        >>> train = DeepDataFlow("data/ddf", "reachability", "train", recipe=recipe, jobs=1, log=False)
        >>> train
        DeepDataFlow(5 examples, reachability, train, size=all, max_steps=30, max_nodes=40000)
        >>> from torch_geometric.loader import DataLoader
        >>> from programl.loader import NodeBudgetBatchSampler
        >>> sampler = NodeBudgetBatchSampler(train.sizes, 100, shuffle=True)
        >>> [(batch.num_graphs, batch.num_nodes) for batch in DataLoader(train, batch_sampler=sampler)]
        [(3, 63), (2, 76)]
    """

    def __init__(
        self,
        root: str | os.PathLike,
        analysis: str = "reachability",
        split: str = "train",
        *,
        size: int | None = None,
        max_steps: int | None = 30,
        max_nodes: int | None = 40_000,
        recipe: dict[str, Any] | None = None,
        mirrors: Sequence[str | os.PathLike] | None = None,
        jobs: int | None = None,
        transform: Callable[[Data], Data] | None = None,
        force_reload: bool = False,
        log: bool = True,
    ) -> None:
        check_analysis(analysis)
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
        if size is not None and size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self.analysis, self.split, self.size = analysis, split, size
        self.max_steps, self.max_nodes = max_steps, max_nodes
        if recipe is not None:  # a recipe given by the caller is checked before download() joins its paths
            from programl.data.deepdataflow.recipe import check_recipe

            check_recipe(recipe)
        self.recipe = recipe if recipe is not None else DEEPDATAFLOW22
        self.mirrors = list(mirrors) if mirrors is not None else [shared_data("")]
        self.jobs = jobs
        super().__init__(str(root), transform, log=log, force_reload=force_reload)
        self._open_store(self.data_dir, jobs=jobs or os.cpu_count() or 1)

    @classmethod
    def from_directory(
        cls,
        path: str | os.PathLike,
        analysis: str,
        split: str = "train",
        *,
        max_steps: int | None = 30,
        max_nodes: int | None = 40_000,
        vocabulary_path: str | os.PathLike | None = None,
        processed_dir: str | os.PathLike | None = None,
        jobs: int = 1,
        progress: Callable[[Iterable, int, str], Iterable] | None = None,
        transform: Callable[[Data], Data] | None = None,
        typed_pointers: str = "auto",
    ) -> DeepDataFlow:
        """The examples of a data set directory already built (module docstring): nothing is downloaded or built;
        the split is converted once into its memory-mapped store.

        Args:
            path: The data set directory (ours or ProGraML's released layout).
            analysis: One of :data:`programl.dataflow.ANALYSES` (``reachability``, ``liveness`` ...).
            split: ``train``, ``val`` or ``test``.
            max_steps: Keep records with ``data_flow_step_count <= max_steps`` (30 = DDF-30, 60 = DDF-60; None: all).
            max_nodes: Keep graphs with at most this many nodes (None: no limit); graphs with no nodes are dropped.
            vocabulary_path: Vocabulary file (default ``<path>/vocab/programl.csv``).
            processed_dir: Where the converted split lives (default ``<path>/processed``).
            jobs: Worker processes for the one-time conversion.
            progress: Progress wrapper for the conversion (see :func:`~programl.data.deepdataflow.store.prepare_split`).
            transform: Applied to every example when read (PyG convention).
            typed_pointers: How the typed-pointer texts of graphs built by the original ProGraML 0.3.2 (the released
                DeepDataFlow graphs: ``i32*``, ``struct*``) meet the vocabulary (:mod:`programl.io.typed_pointers`):
                ``auto`` (default) looks a text the vocabulary lacks up as LLVM 22 prints it (``ptr``), so this
                project's vocabularies and models read them, while the released ``vocab/programl.csv`` keeps its own
                ids; ``map`` looks every text up so; ``keep`` as it is. Each mode has its own processed directory.

        Raises:
            ProgramlError: The processed split is damaged (its index arrays and columns disagree, or are
                unreadable).

        Example:
            A data set of five IR files of the repository, built as ``programl dataset build`` builds one (split
            3:1:1 by program), then its training examples in batches of at most 100 nodes, in a seeded order:

            >>> from programl.data.deepdataflow import build_dataset, discover_inputs
            >>> files = ["examples/dot_product.ll", "tests/data/io_parallel.ll"]
            >>> files += [f"tests/data/example_{c}.ll" for c in "abc"]
            >>> build_dataset(discover_inputs(files), "ddf", jobs=1).splits
            {'train': 3, 'val': 1, 'test': 1}
            >>> train = DeepDataFlow.from_directory("ddf", "reachability", "train", max_steps=30)
            >>> len(train), train.graph_names, train.sizes
            (5, ['dot_product', 'example_b', 'io_parallel'], array([38, 38, 26, 26, 11]))
            >>> train[0]
            Data(x=[38], edge_index=[2, 59], y=[38], node_type=[38], edge_flow=[59], edge_pos=[59], root=[38], ...)
            >>> from torch_geometric.loader import DataLoader
            >>> from programl.loader import NodeBudgetBatchSampler
            >>> sampler = NodeBudgetBatchSampler(train.sizes, 100, shuffle=True)
            >>> [batch.num_nodes for batch in DataLoader(train, batch_sampler=sampler)]
            [63, 76]
        """
        check_analysis(analysis)
        if split not in SPLITS and not (Path(path) / split).is_dir():
            raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
        dataset = cls.__new__(cls)
        dataset.analysis, dataset.split, dataset.size = analysis, split, None
        dataset.max_steps, dataset.max_nodes = max_steps, max_nodes
        dataset.recipe, dataset.mirrors, dataset.jobs = None, [], jobs
        dataset._open_store(
            path,
            vocabulary_path=vocabulary_path,
            processed_dir=processed_dir,
            jobs=jobs,
            progress=progress,
            typed_pointers=typed_pointers,
        )
        Dataset.__init__(dataset, str(dataset.layout.root), transform=transform, log=False)
        return dataset

    def _open_store(
        self,
        root: str | os.PathLike,
        *,
        vocabulary_path: str | os.PathLike | None = None,
        processed_dir: str | os.PathLike | None = None,
        jobs: int = 1,
        progress: Callable[[Iterable, int, str], Iterable] | None = None,
        typed_pointers: str = "auto",
    ) -> None:
        """Convert the split of the data set directory ``root`` once (:func:`prepare_split`), read and check its
        index, and select the records within ``max_steps`` and ``max_nodes``."""
        analysis, split, max_steps, max_nodes = self.analysis, self.split, self.max_steps, self.max_nodes
        self.layout = Layout(root)
        self.vocabulary_path = Path(vocabulary_path) if vocabulary_path else self.layout.vocabulary
        self.graph_dir, self.label_dir = prepare_split(
            root,
            analysis,
            split,
            vocabulary_path=self.vocabulary_path,
            processed_dir=processed_dir,
            jobs=jobs,
            progress=progress,
            typed_pointers=typed_pointers,
        )
        self.typed_pointers = typed_pointers
        try:
            self.graph_names: list[str] = (self.graph_dir / "names.txt").read_text(encoding="utf-8").split()
            self._node_ptr = np.load(self.graph_dir / "node_ptr.npy", allow_pickle=False)
            self._edge_ptr = np.load(self.graph_dir / "edge_ptr.npy", allow_pickle=False)
            self._graph = np.load(self.label_dir / "graph.npy", allow_pickle=False)
            self._root = np.load(self.label_dir / "root.npy", allow_pickle=False)
            self._steps = np.load(self.label_dir / "steps.npy", allow_pickle=False)
            self._label_ptr = np.load(self.label_dir / "label_ptr.npy", allow_pickle=False)
            self._validate()
        except (OSError, ValueError, EOFError) as error:  # a damaged store: not a traceback, and no wrong examples
            message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ProgramlError(
                f"{self.graph_dir.parent}: a damaged processed split ({message}); delete it to convert it again"
            ) from None
        self._arrays: dict[str, np.ndarray] | None = None
        graph_sizes = np.diff(self._node_ptr)
        record_sizes = graph_sizes[self._graph] if len(self._graph) else np.zeros(0, dtype=np.int64)
        keep = record_sizes > 0
        if max_nodes is not None:
            keep &= record_sizes <= max_nodes
        if max_steps is not None:
            keep &= self._steps <= max_steps
        #: record index (into the label store) of every example
        self.records = np.flatnonzero(keep)

    def _validate(self) -> None:
        """Check the index arrays against each other and the column files' sizes (read side of the store; a store
        whose parts disagree would give wrong examples or read past its columns). Raises ValueError."""
        graphs, records = len(self.graph_names), len(self._graph)
        for name, ptr, count in (
            ("node_ptr", self._node_ptr, graphs),
            ("edge_ptr", self._edge_ptr, graphs),
            ("label_ptr", self._label_ptr, records),
        ):
            if ptr.ndim != 1 or len(ptr) != count + 1 or ptr[0] != 0 or np.any(np.diff(ptr) < 0):
                raise ValueError(f"{name}.npy does not hold {count + 1} increasing offsets from 0")
        for name, array in (("root", self._root), ("steps", self._steps)):
            if array.shape != (records,):
                raise ValueError(f"{name}.npy holds {array.size} values for {records} records")
        if records and (self._graph.min() < 0 or self._graph.max() >= graphs):
            raise ValueError("graph.npy names graphs that are not in the store")
        sizes = np.diff(self._node_ptr)
        if records and (np.any(self._root < 0) or np.any(self._root >= np.maximum(sizes[self._graph], 1))):
            raise ValueError("root.npy names nodes outside their graphs")
        if records and np.any(np.diff(self._label_ptr) != sizes[self._graph]):
            raise ValueError("label_ptr.npy does not give every record one label per node of its graph")
        expected = {c: int(self._node_ptr[-1]) for c in ("x", "node_type")}
        expected.update({c: int(self._edge_ptr[-1]) for c in GRAPH_COLUMNS if c.startswith("edge_")})
        for column, dtype in GRAPH_COLUMNS.items():
            size = (self.graph_dir / f"{column}.bin").stat().st_size
            if size != expected[column] * np.dtype(dtype).itemsize:
                raise ValueError(f"{column}.bin holds {size} bytes, not {expected[column]} values")
        size = (self.label_dir / "labels.bin").stat().st_size
        if size != int(self._label_ptr[-1]):
            raise ValueError(f"labels.bin holds {size} bytes, not {int(self._label_ptr[-1])} labels")

    # ------------------------------------------------------------------------------------------------- PyG layout
    @property
    def name(self) -> str:
        """``<recipe>-<size>-<hash of the recipe>``: the processed data set of these options (a directory's name, for
        :meth:`from_directory`)."""
        if self.recipe is None:
            return self.layout.root.name
        digest = hashlib.sha256(json.dumps(self.recipe, sort_keys=True).encode()).hexdigest()[:8]
        label = str(self.recipe.get("name", "recipe")).lower().replace(" ", "_")
        return f"{label}-{'all' if self.size is None else self.size}-{digest}"

    @property
    def data_dir(self) -> Path:
        """The built data set (DeepDataFlow layout): ``processed/<name>``, or the directory of
        :meth:`from_directory`."""
        if self.recipe is None:
            return self.layout.root
        return Path(self.processed_dir) / self.name

    @property
    def raw_dir(self) -> str:
        """``raw/`` of ``root``; for :meth:`from_directory`, the data set directory (its ``graphs/``, labels, split and
        vocabulary are the raw files)."""
        if self.recipe is None:
            return str(self.layout.root)
        return super().raw_dir

    @property
    def raw_file_names(self) -> list[str]:
        """The recipe's sources; for :meth:`from_directory`, the graphs, this analysis's labels (``labels/<analysis>``,
        or ``labels/all`` where the labels are in the compact form), the split's links and the vocabulary, relative
        to :attr:`raw_dir`."""
        if self.recipe is None:
            root = self.layout.root
            labels = self.layout.label_dir(self.analysis)
            if not labels.is_dir() and self.layout.compact_label_dir.is_dir():
                labels = self.layout.compact_label_dir
            return [
                "graphs",
                os.path.relpath(labels, root),
                os.path.relpath(self.layout.split_dir(self.split), root),
                os.path.relpath(self.vocabulary_path, root),
            ]
        names = []
        for source in self.recipe["sources"]:
            if source.get("kind") == "devmap":
                from programl.data.devmap import SOURCES

                names += [f"{source['path']}/{n}" for n, s in SOURCES.items() if s.url is not None]
            else:
                names.append(source["path"])
        return names

    @property
    def processed_dir(self) -> str:
        """``processed/`` of ``root``; for :meth:`from_directory`, the converted split:
        ``<processed_dir>/ddf-v1/<vocabulary key>/<split>`` (module docstring)."""
        if self.recipe is None:
            return str(self.graph_dir.parent)
        return super().processed_dir

    @property
    def processed_file_names(self) -> list[str]:
        """The built data set's summary; for :meth:`from_directory`, the graph store and this analysis's label store
        (their ``meta.json``, written last)."""
        if self.recipe is None:
            return [f"{self.graph_dir.name}/meta.json", f"{self.label_dir.name}/meta.json"]
        return [f"{self.name}/dataset.json"]

    def _download(self) -> None:
        """PyG's; a directory already built (:meth:`from_directory`) has nothing to download."""
        if self.recipe is not None:
            super()._download()

    def _process(self) -> None:
        """PyG's (:class:`~programl.datasets.processed.SafeProcessing`); a directory already built has nothing to
        process but the conversion of its split, done when it is opened."""
        if self.recipe is not None:
            super()._process()

    def download(self) -> None:
        """Put the recipe's sources under ``raw/``: from a mirror, else from their URLs (sha256-checked)."""
        from programl.data import devmap
        from programl.data.download import fetch

        raw = Path(self.raw_dir)
        for source in self.recipe["sources"]:
            mirrors = [Path(m) / source["path"] for m in self.mirrors if m is not None]
            if source.get("kind") == "devmap":
                devmap.fetch_sources(raw / source["path"], mirrors=mirrors)
                continue
            if "sha256" not in source:
                raise ProgramlError(f"{raw / source['path']}: missing (a recipe source without sha256 is not fetched)")
            fetch(raw / source["path"], source["sha256"], url=source.get("url"), mirrors=[m.parent for m in mirrors])

    def process(self) -> None:
        """Build the data set (:func:`programl.data.deepdataflow.build_dataset`) into ``processed/<name>``."""
        from programl.data.deepdataflow.builder import build_dataset
        from programl.data.deepdataflow.recipe import recipe_inputs, recipe_settings

        inputs = recipe_inputs(self.recipe, self.raw_dir, self.data_dir / "sources", size=self.size)
        report = build_dataset(inputs, self.data_dir, jobs=self.jobs, **recipe_settings(self.recipe))
        if report.errors:  # the data set's own files could not be written (e.g. a full disk)
            error = report.errors[0]
            raise ProgramlError(f"{error.filename or self.data_dir}: {error.strerror or error}")
        if report.failed:  # inputs that do not compile are left out, as in `programl dataset build`
            name, message = report.failed[0]
            logger.warning(
                "%s: %d of %d inputs failed to build (first: %s: %s); see %s",
                self.data_dir,
                len(report.failed),
                len(inputs),
                name,
                message,
                self.data_dir / "manifest.jsonl",
            )

    # ------------------------------------------------------------------------------------------------- index
    @property
    def num_records(self) -> int:
        """Label records in the split before filtering."""
        return int(len(self._graph))

    @property
    def sizes(self) -> np.ndarray:
        """Node count of every example (in dataset order), for node-budget batching."""
        records = self.records[np.asarray(self.indices(), dtype=np.int64)]
        return np.diff(self._node_ptr)[self._graph[records]]

    @property
    def step_counts(self) -> np.ndarray:
        """``data_flow_step_count`` of every example (in dataset order)."""
        return self._steps[self.records[np.asarray(self.indices(), dtype=np.int64)]]

    def graph_name(self, idx: int) -> str:
        """The graph name of example ``idx``."""
        return self.graph_names[int(self._graph[self.records[self.indices()[idx]]])]

    def fixed_sample(self, count: int, seed: int = 205) -> DeepDataFlow:
        """The first ``count`` examples in the order of ProGraML's validation sample
        (docs/spec/tasks.md#data-flow-protocol).

        Graph names sorted, shuffled with ``random.Random(seed)`` (the original: ``val_seed`` 204 plus one), each
        graph's examples in record order. Returns a view (``index_select``) of this dataset.
        """
        positions = np.asarray(self.indices(), dtype=np.int64)
        graphs = self._graph[self.records[positions]]
        order = sorted(range(len(self.graph_names)), key=self.graph_names.__getitem__)
        random.Random(seed).shuffle(order)
        rank = np.empty(len(self.graph_names), dtype=np.int64)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
        chosen = np.lexsort((np.arange(len(positions)), rank[graphs]))[:count]  # by shuffled graph, then record
        return self.index_select(chosen.tolist())

    @functools.cached_property
    def texts(self) -> list[str]:
        """Text of every vocabulary id in ``x`` (the data set's training vocabulary; id ``len(texts)``: unknown)."""
        return list(Vocabulary.load(self.vocabulary_path).texts)

    def vocabulary(self) -> Vocabulary:
        """The data set's vocabulary (of its training graphs, docs/spec/models.md#vocabulary; for
        :meth:`from_directory`, the ``vocabulary_path`` it was given)."""
        return Vocabulary.load(self.vocabulary_path)

    # ------------------------------------------------------------------------------------------------- access
    def _columns(self) -> dict[str, np.ndarray]:
        if self._arrays is None:
            arrays = {c: memmap(self.graph_dir / f"{c}.bin", d) for c, d in GRAPH_COLUMNS.items()}
            arrays["labels"] = memmap(self.label_dir / "labels.bin", np.uint8)
            self._arrays = arrays
        return self._arrays

    def __getstate__(self) -> dict[str, Any]:  # memory maps are reopened in the receiving process
        state = dict(self.__dict__)
        state["_arrays"] = None
        return state

    def len(self) -> int:
        return int(len(self.records))

    def get(self, idx: int) -> Data:
        a = self._columns()
        record = int(self.records[idx])
        g = int(self._graph[record])
        n0, n1 = int(self._node_ptr[g]), int(self._node_ptr[g + 1])
        e0, e1 = int(self._edge_ptr[g]), int(self._edge_ptr[g + 1])
        l0 = int(self._label_ptr[record])
        n = n1 - n0
        root = torch.zeros(n, dtype=torch.long)
        root[int(self._root[record])] = 1
        edge_index = np.stack([a["edge_src"][e0:e1], a["edge_dst"][e0:e1]]).astype(np.int64)
        return Data(
            x=torch.from_numpy(a["x"][n0:n1].astype(np.int64)),
            node_type=torch.from_numpy(a["node_type"][n0:n1].astype(np.int64)),
            edge_index=torch.from_numpy(edge_index.reshape(2, -1)),
            edge_flow=torch.from_numpy(a["edge_flow"][e0:e1].astype(np.int64)),
            edge_pos=torch.from_numpy(a["edge_pos"][e0:e1].astype(np.int64)),
            root=root,
            y=torch.from_numpy(a["labels"][l0 : l0 + n].astype(np.int64)),
            step_count=torch.tensor([int(self._steps[record])], dtype=torch.long),
            graph_index=torch.tensor([g], dtype=torch.long),
            num_nodes=n,
        )

    def __repr__(self) -> str:
        steps = "all" if self.max_steps is None else self.max_steps
        scope = (
            f"directory={str(self.layout.root)!r}"
            if self.recipe is None
            else (f"size={'all' if self.size is None else self.size}")
        )
        return (
            f"{type(self).__name__}({len(self)} examples, {self.analysis}, {self.split}, {scope}, max_steps={steps}, "
            f"max_nodes={self.max_nodes})"
        )
