"""``DevMap``: the OpenCL device-mapping data set as a PyG ``InMemoryDataset`` (docs/spec/tasks.md#device-mapping,
docs/spec/tasks.md#device-mapping-table, docs/spec/graph.md#functions-and-modules).

680 kernels-with-inputs per platform (AMD Tahiti 7970, NVIDIA GTX 970): one graph each, a graph-level target (1 when
the GPU was faster) and the auxiliary inputs ``[transfer bytes, work-group size]``. Small enough to hold in memory.

PyG layout under ``root``::

    raw/            the public files (programl.data.devmap.SOURCES), linked or copied from ../shared/data/devmap
                    (or $PROGRAML_SHARED_DATA/devmap), else downloaded from their URLs, sha256-checked
    processed/build/  the graphs, built by programl.data.devmap.build_devmap (shared by every option)
    processed/devmap-<variant>-<platform>-<rows>.pt   the collated examples

Examples (``Data``): ``x`` (ids into :attr:`DevMap.texts`; see :mod:`programl.datasets.transforms`),
``node_type``, ``edge_index``, ``edge_flow``, ``edge_pos``, ``y`` (1,) long (``devmap_label``), ``graph_x`` (1, 2)
float32 (raw ``[transfer, wgsize]``; the paper's model takes their log1p; exact in ``transfer_bytes`` and ``wgsize``,
(1,) long), ``runtimes`` (1, 2) float (CPU, GPU
seconds) and ``row`` (1,) long (the CSV row). With ``numbers_and_types=True`` also ``x_num`` (N, 10) and ``x_type``
(N, 6) int32 (:func:`~programl.datasets.transforms.compact_features`): the value of each numeric constant and the
shape of each vector, array and struct type (:mod:`programl.graph_builder.numbers_types`, ``docs/numbers_types.md``),
in a processed file of its own.

``split`` with ``fold``: the paper's rotating 80/10/10 split ``fold`` of a seeded stratified ``folds``-fold partition
of the loaded rows (:func:`programl.data.devmap.cross_validation_splits`); it selects examples, the processed file is
the same for every split.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

import programl

try:
    import torch
    from torch_geometric.data import Data, InMemoryDataset
except ModuleNotFoundError as _error:  # installed without the ml extra: one line that says which extra to install
    raise programl._ml_import_error("programl.datasets", _error) or _error from None

from programl.data import devmap as _devmap
from programl.data.devmap.build import _load_devmap
from programl.data.download import shared_data
from programl.data.vocabulary import Vocabulary
from programl.datasets import devmap_info
from programl.datasets.processed import SafeProcessing, load_processed
from programl.datasets.transforms import TextTable, graph_example, split_sizes, split_vocabulary

__all__ = ["DevMap"]

_KEEP = ("x", "node_type", "edge_index", "edge_flow", "edge_pos", "graph_x", "transfer_bytes", "wgsize")


class DevMap(SafeProcessing, InMemoryDataset):
    """The DevMap graphs of one platform and variant (module docstring; docs/spec/tasks.md#device-mapping).

    Args:
        root: Data set directory (``raw/``, ``processed/``).
        platform: ``"amd"`` or ``"nvidia"``.
        variant: ``"clang22"`` (the kernels compiled by clang-22; needs clang-22 to process) or ``"ncc"`` (NCC's
            released IR).
        split: ``None`` (every loaded row) or ``"train"``, ``"val"``, ``"test"`` of cross-validation fold ``fold``.
        fold: Which rotation of the folds (0..folds-1).
        folds: Number of folds (10 in the paper).
        seed: Seed of the fold partition (ours: 204; the branch code's ``StratifiedKFold`` used 42,
            docs/spec/tasks.md#device-mapping).
        rows: Load only these CSV rows (default: all 680), e.g. ``range(40)`` for a quick look.
        subset: Instead of ``rows``: a sample of this many rows, stratified by the AMD labels (the same rows for both
            platforms) and drawn with ``seed`` (:func:`programl.data.devmap.stratified_rows`; ``programl train devmap
            --subset``). The rows are chosen once the raw files are there; :attr:`rows` then holds them.
        mirrors: Directories to take the raw files from first (default: the shared research data, when found).
        jobs: Worker processes of the graph build (default: all CPUs).
        build: Build the graphs that are missing (False: collate those already built under ``processed/build``, as
            ``programl train devmap`` builds them; a graph never built is then an error, one line).
        numbers_and_types: Add ``x_num`` / ``x_type`` (not in ProGraML; off by default). The built graphs are
            annotated as they are loaded (:func:`~programl.graph_builder.numbers_types.annotate` without the
            module's struct definitions: a named struct is known as a struct of unknown shape).
        transform, pre_transform, pre_filter, force_reload, log: As for every PyG data set.

    Example:
        >>> needs("shared data")
        >>> from torch_geometric.loader import DataLoader
        >>> train = DevMap("data/devmap", "amd", "ncc", split="train", fold=0, folds=4, rows=range(20), log=False)
        >>> train
        DevMap(10 examples, amd, ncc, train of fold 0/4, 46 texts)
        >>> batch = next(iter(DataLoader(train, batch_size=8)))
        >>> batch.y.tolist()  # 1: the GPU is faster
        [1, 0, 0, 0, 0, 0, 0, 1]
    """

    #: The platforms: ``amd`` (AMD Tahiti 7970) and ``nvidia`` (NVIDIA GTX 970), each with an Intel i7-3820 CPU.
    PLATFORMS: tuple[str, ...] = devmap_info.PLATFORMS
    #: Each platform's GPU, by name.
    PLATFORM_NAMES: dict[str, str] = devmap_info.PLATFORM_NAMES
    #: The graph variants: ``clang22`` (the kernels compiled by clang-22) and ``ncc`` (NCC's released IR).
    VARIANTS: tuple[str, ...] = _devmap.VARIANTS
    #: clang-22 flags of every kernel besides the OpenCL ones and ``-I`` of its directory.
    CLANG22_BASE_FLAGS: tuple[str, ...] = devmap_info.CLANG22_BASE_FLAGS
    #: Per platform, the medians of the auxiliary inputs over its 680 rows (``transfer`` bytes, ``wgsize``): what a
    #: model is given for a kernel whose inputs are unknown (``programl predict devmap``).
    AUX_MEDIANS: dict[str, dict[str, int]] = devmap_info.AUX_MEDIANS

    def __init__(
        self,
        root: str | os.PathLike,
        platform: str = "amd",
        variant: str = "clang22",
        split: str | None = None,
        *,
        fold: int = 0,
        folds: int = 10,
        seed: int = 204,
        rows: Sequence[int] | None = None,
        subset: int | None = None,
        mirrors: Sequence[str | os.PathLike] | None = None,
        jobs: int | None = None,
        build: bool = True,
        numbers_and_types: bool = False,
        transform: Callable[[Data], Data] | None = None,
        pre_transform: Callable[[Data], Data] | None = None,
        pre_filter: Callable[[Data], bool] | None = None,
        force_reload: bool = False,
        log: bool = True,
    ) -> None:
        if platform not in _devmap.PLATFORMS:
            raise ValueError(f"unknown devmap platform {platform!r} (expected {' or '.join(_devmap.PLATFORMS)})")
        if variant not in _devmap.VARIANTS:
            raise ValueError(f"unknown devmap variant {variant!r} (expected {' or '.join(_devmap.VARIANTS)})")
        if split not in (None, "train", "val", "test"):
            raise ValueError(f"unknown split {split!r} (expected train, val, test or None)")
        if split is not None and not 0 <= fold < folds:
            raise ValueError(f"fold {fold} is not in 0..{folds - 1}")
        self.platform, self.variant, self.split = platform, variant, split
        if subset is not None and rows is not None:
            raise ValueError("give rows or subset, not both")
        self.fold, self.folds, self.seed = fold, folds, seed
        #: the CSV rows loaded, sorted (None: all of them)
        self.rows = sorted(set(int(r) for r in rows)) if rows is not None else None
        self.subset = subset
        self.mirrors = list(mirrors) if mirrors is not None else [shared_data("devmap")]
        self.jobs = jobs
        self.build = bool(build)
        self.numbers_and_types = bool(numbers_and_types)
        super().__init__(str(root), transform, pre_transform, pre_filter, log=log, force_reload=force_reload)
        meta = load_processed(
            self,
            self.processed_paths[0],
            self.processed_paths[1],
            {"texts": list, "names": list},
            required=("x", "edge_index", "y", "graph_x"),
        )
        #: node text of every id in ``x`` (id ``len(texts)``: unknown)
        self.texts: list[str] = meta["texts"]
        #: benchmark-dataset name of every loaded row, in order
        self.names: list[str] = meta["names"]
        if split is not None:
            labels = self._data.y.numpy()
            part = _devmap.cross_validation_splits(labels, folds, seed)[fold]
            self._indices = getattr(part, split).tolist()

    # ------------------------------------------------------------------------------------------------- PyG layout
    @property
    def raw_file_names(self) -> list[str]:
        return [name for name, source in _devmap.SOURCES.items() if source.url is not None]

    @property
    def processed_file_names(self) -> list[str]:
        if self.rows is None:
            rows = "all"
        else:
            rows = hashlib.sha256(",".join(map(str, self.rows)).encode()).hexdigest()[:12]
        stem = f"devmap-{self.variant}-{self.platform}-{rows}" + ("-nt" if self.numbers_and_types else "")
        return [f"{stem}.pt", f"{stem}.json"]

    def download(self) -> None:
        """Link or copy the public files from a mirror, else download them (sha256-checked)."""
        _devmap.fetch_sources(self.raw_dir, mirrors=self.mirrors)

    def _download(self) -> None:
        """PyG's download step, then the rows of ``subset`` (drawn from the raw AMD labels, before processing)."""
        super()._download()
        if self.subset is not None:
            table = _devmap.read_platform_csv(Path(self.raw_dir) / "cgo17-amd.csv")
            self.rows = _devmap.stratified_rows([row.label for row in table], self.subset, self.seed)

    def process(self) -> None:
        """Build the graphs (:func:`programl.data.devmap.build_devmap`; not with ``build=False``) and collate them."""
        from programl.exceptions import ProgramlError

        raw = Path(self.raw_dir)
        for mirror in self.mirrors:  # the generated clang-22 manifest has no URL: take it from a mirror if there
            manifest = Path(mirror) / _devmap.MANIFEST_FILE if mirror is not None else None
            if manifest is not None and manifest.is_file() and not (raw / _devmap.MANIFEST_FILE).is_file():
                from programl.data.download import fetch

                fetch(raw / _devmap.MANIFEST_FILE, _devmap.SOURCES[_devmap.MANIFEST_FILE].sha256, mirrors=[mirror])
        build = Path(self.processed_dir) / "build"
        if self.build:
            progress = _build_progress if self.log else None
            report = _devmap.build_devmap(raw, build, [self.variant], jobs=self.jobs, rows=self.rows, progress=progress)
            if not report.ok:
                name, error = report.failed[self.variant][0]
                raise ProgramlError(
                    f"{build}: {len(report.failed[self.variant])} devmap rows failed to build ({name}: {error})"
                )
        data = _load_devmap(raw, build, self.platform, self.variant, rows=self.rows)
        table = TextTable()
        examples = []
        for row, graph in zip(data.rows, data.graphs):
            example = graph_example(graph, table, _KEEP, numbers_and_types=self.numbers_and_types)
            example.y = torch.tensor([row.label], dtype=torch.long)
            example.runtimes = torch.tensor([[row.runtime_cpu, row.runtime_gpu]], dtype=torch.float64)
            example.row = torch.tensor([row.row], dtype=torch.long)
            if self.pre_filter is not None and not self.pre_filter(example):
                continue
            if self.pre_transform is not None:
                example = self.pre_transform(example)
            examples.append(example)
        self.save(examples, self.processed_paths[0])
        from programl.util.fs import atomic_write_text

        meta = {"texts": table.texts, "names": [r.name for r in data.rows]}
        atomic_write_text(self.processed_paths[1], json.dumps(meta, sort_keys=True) + "\n")

    # ------------------------------------------------------------------------------------------------- views
    @property
    def sizes(self) -> np.ndarray:
        """Node count of every example (in dataset order), for node-budget batching."""
        return split_sizes(self)

    def vocabulary(self) -> Vocabulary:
        """The count-ordered vocabulary of this split's graphs (the fold's training vocabulary,
        docs/spec/tasks.md#device-mapping)."""
        return split_vocabulary(self)

    def load_graphs(self) -> _devmap.DevmapData:
        """The built ``ProgramGraph`` of each example of this view, in order, with its row of the platform's CSV
        (:class:`programl.data.devmap.DevmapData`: ``rows``, ``graphs``, ``labels``, ``runtimes``): for models that
        read the graphs and the auxiliary inputs themselves (forests over graph features; the studies). Reads
        ``raw/`` and ``processed/build/``.

        Raises:
            ProgramlError: A graph of ``processed/build/`` is missing or disagrees with the CSV.
        """
        rows = self._data.row.view(-1)[torch.as_tensor(list(self.indices()), dtype=torch.long)].tolist()
        build = Path(self.processed_dir) / "build"
        return _load_devmap(self.raw_dir, build, self.platform, self.variant, rows=rows)

    # ------------------------------------------------------------------------------------------------- the data set
    @staticmethod
    def cross_validation_splits(labels: Sequence[int], folds: int = 10, seed: int = 204) -> list[_devmap.Split]:
        """The paper's rotating train/validation/test splits of a seeded stratified ``folds``-fold partition of
        ``labels`` (:func:`programl.data.devmap.cross_validation_splits`): ``split=`` and ``fold=`` select one of
        them, and a model of one's own can use the same folds.

        Raises:
            ValueError: ``folds < 3``, or a class has fewer than ``folds`` examples.
        """
        return _devmap.cross_validation_splits(labels, folds, seed)

    @staticmethod
    def check_raw_files(directory: str | os.PathLike, verify: bool = True) -> dict[str, Path]:
        """The paths of the data set's raw files in ``directory`` (``raw/``, or a mirror such as
        ``../shared/data/devmap``), each checked against its published sha256 unless ``verify`` is False.

        Raises:
            ProgramlError: A file is missing or its checksum differs (one line naming it).
        """
        return _devmap.check_sources(directory, verify=verify)

    def __repr__(self) -> str:
        split = "all" if self.split is None else f"{self.split} of fold {self.fold}/{self.folds}"
        return (
            f"{type(self).__name__}({len(self)} examples, {self.platform}, {self.variant}, {split}, "
            f"{len(self.texts)} texts)"
        )


def _build_progress(items, total: int, description: str):
    """A bar over the kernels being built (on a terminal; :func:`programl.util.progress.progress`)."""
    from programl.util.progress import progress

    return progress(items, total, description, unit="kernel", min_total=2)
