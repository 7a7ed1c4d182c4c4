"""PyG datasets over a DeepDataFlow directory: one example per label record (docs/spec/tasks.md#data-flow-protocol,
docs/spec/models.md#graph-tensors, docs/spec/datasets.md#deepdataflow-layout; docs/spec/datasets.md#builds).

:class:`DeepDataFlowDataset` reads a data set in the DeepDataFlow layout: one built by ``programl dataset build``, or
ProGraML's released one (``graphs/``, ``labels/<analysis>/`` with the ``data_flow_*`` keys, ``train|val|test/``
directories of symlinks, ``vocab/programl.csv``); labels in the original's protobuf files or in this project's
compact ones (:mod:`programl.data.deepdataflow.labels`), which give the same examples. Example ``i`` is one (graph,
label record) pair, as a :class:`torch_geometric.data.Data` with the attributes of :func:`programl.io.pyg.to_pyg`
with labels:

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
``graph_index`` (1,) long   index of the graph in :attr:`DeepDataFlowDataset.graph_names`
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

Batching: pass :attr:`DeepDataFlowDataset.sizes` to :class:`programl.loader.NodeBudgetBatchSampler`
(10,000-node batches, a seeded order per epoch) and that to ``torch_geometric.loader.DataLoader(batch_sampler=...)``,
as ``programl train dataflow`` does. :meth:`DeepDataFlowDataset.fixed_sample` gives the validation sample of
docs/spec/tasks.md#data-flow-protocol (graphs sorted by name, shuffled with a seeded ``random.Random``, their records
taken in order).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable
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
from programl.dataflow.names import check_analysis
from programl.exceptions import ProgramlError

__all__ = ["DeepDataFlowDataset"]


class DeepDataFlowDataset(Dataset):
    """One example per label record of one analysis in one split of a DeepDataFlow data set (module docstring).

    Args:
        root: The data set directory (ours or ProGraML's released layout).
        analysis: One of :data:`programl.dataflow.ANALYSES` (``reachability``, ``liveness`` ...).
        split: ``train``, ``val`` or ``test``.
        max_steps: Keep records with ``data_flow_step_count <= max_steps`` (30 = DDF-30, 60 = DDF-60; None: all).
        max_nodes: Keep graphs with at most this many nodes (None: no limit); graphs with no nodes are dropped.
        vocabulary_path: Vocabulary file (default ``<root>/vocab/programl.csv``).
        processed_dir: Where the converted split lives (default ``<root>/processed``).
        jobs: Worker processes for the one-time conversion.
        progress: Progress wrapper for the conversion (see :func:`prepare_split`).
        transform: Applied to every example when read (PyG convention).
        typed_pointers: How the typed-pointer texts of graphs built by the original ProGraML 0.3.2 (the released
            DeepDataFlow graphs: ``i32*``, ``struct*``) meet the vocabulary (:mod:`programl.io.typed_pointers`):
            ``auto`` (default) looks a text the vocabulary lacks up as LLVM 22 prints it (``ptr``), so this
            project's vocabularies and models read them, while the released ``vocab/programl.csv`` keeps its own
            ids; ``map`` looks every text up so; ``keep`` as it is. Each mode has its own processed directory.

    Raises:
        ProgramlError: The processed split is damaged (its index arrays and columns disagree, or are unreadable).

    Example:
        A data set of five IR files of the repository, built as ``programl dataset build`` builds one (split 3:1:1
        by program), then its training examples in batches of at most 100 nodes, in a seeded order:

        >>> from programl.data.deepdataflow import build_dataset, discover_inputs
        >>> files = ["examples/dot_product.ll", "tests/data/io_parallel.ll"]
        >>> files += [f"tests/data/example_{c}.ll" for c in "abc"]
        >>> build_dataset(discover_inputs(files), "ddf", jobs=1).splits
        {'train': 3, 'val': 1, 'test': 1}
        >>> train = DeepDataFlowDataset("ddf", "reachability", "train", max_steps=30)
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

    def __init__(
        self,
        root: str | os.PathLike,
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
    ) -> None:
        check_analysis(analysis)
        if split not in SPLITS and not (Path(root) / split).is_dir():
            raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
        self.analysis = analysis
        self.split = split
        self.max_steps = max_steps
        self.max_nodes = max_nodes
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
        super().__init__(str(self.layout.root), transform=transform, log=False)

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
    def raw_dir(self) -> str:
        """The data set directory (its ``graphs/``, labels, split and vocabulary are the raw files)."""
        return str(self.layout.root)

    @property
    def raw_file_names(self) -> list[str]:
        """The graphs, this analysis's labels (``labels/<analysis>``, or ``labels/all`` where the labels are in the
        compact form), the split's links and the vocabulary, relative to :attr:`raw_dir`."""
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

    @property
    def processed_dir(self) -> str:
        """The converted split: ``<processed_dir>/ddf-v1/<vocabulary key>/<split>`` (module docstring)."""
        return str(self.graph_dir.parent)

    @property
    def processed_file_names(self) -> list[str]:
        """The graph store and this analysis's label store (their ``meta.json``, written last)."""
        return [f"{self.graph_dir.name}/meta.json", f"{self.label_dir.name}/meta.json"]

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

    def fixed_sample(self, count: int, seed: int = 205) -> DeepDataFlowDataset:
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

    # ------------------------------------------------------------------------------------------------- access
    def _open(self) -> dict[str, np.ndarray]:
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
        a = self._open()
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
        return (
            f"{type(self).__name__}({self.analysis}, {self.split}, {len(self)} examples of {self.num_records} "
            f"records, max_steps={steps}, max_nodes={self.max_nodes})"
        )
