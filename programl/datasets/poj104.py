"""``POJ104``: the POJ-104 algorithm-classification data set as a PyG ``InMemoryDataset`` (SPEC §6.6, §7.4; issue 10).

104 classes of student C/C++ programs; one graph per program and optimisation setting (clang-22, ProGraML's header
recipe, :mod:`programl.data.poj104`), a graph-level target (the class, 0..103). About 52,000 programs at one setting
fit in memory.

PyG layout under ``root``::

    raw/poj104.tar.xz   linked or copied from ../shared/data/poj104 (or $PROGRAML_SHARED_DATA/poj104), sha256-checked;
                        without it, the public repository archive is streamed and raw/codexglue/ extracted
    processed/build/    the graphs, built by programl.data.poj104.build_poj104 (resumable, shared by every option)
    processed/poj104-<options>-{train,val,test}.pt and .json (text table, graph names, programs that did not compile)

Examples (``Data``): ``x`` (ids into :attr:`POJ104.texts`; see :mod:`programl.datasets.transforms`),
``node_type``, ``edge_index``, ``edge_flow``, ``edge_pos``, ``y`` (1,) long (class - 1).

Split: the seeded per-class 3:1:1 split by program (:func:`programl.data.poj104.split_programs`), so every setting of
a program lands in the same split; ``size`` keeps the first ``size`` programs of each class in 3:1:1 proportion
(:func:`~programl.data.poj104.subset_split`: a smaller size's test programs are test programs of the full split),
``classes`` keeps only some classes (a quick look). The programs that do not compile with any recipe (about 2.5 %) are
left out and listed in :attr:`POJ104.missing`. ``split="legacy"`` gives classifyapp's extra test set instead: the
1,000 labelled legacy IR files (``raw/llvm_ir.tar.bz2`` from ../shared/data/legacy-ir or ProGraML's repository;
``processed/poj104-legacy.pt``), with its own text table.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data, InMemoryDataset

from programl.data import poj104 as _poj104
from programl.data.download import shared_data
from programl.data.vocabulary import Vocabulary
from programl.datasets.processed import SafeProcessing, load_processed
from programl.datasets.transforms import TextTable, split_sizes, split_vocabulary

__all__ = ["POJ104"]

_SPLITS = ("train", "val", "test")
_LEGACY = "legacy"
_KEEP = ("x", "node_type", "edge_index", "edge_flow", "edge_pos")


class POJ104(SafeProcessing, InMemoryDataset):
    """One split of POJ-104 (module docstring; SPEC §6.6).

    Args:
        root: Data set directory (``raw/``, ``processed/``).
        split: ``"train"``, ``"val"``, ``"test"``, or ``"legacy"``: the 1,000 labelled legacy IR files of ProGraML's
            tests (``llvm_ir.tar.bz2``, clang 3.7 IR of POJ-104 test programs; classifyapp's extra test set), for
            which ``size``, ``classes`` and ``settings`` do not apply.
        size: Programs per class (3:1:1 over the splits; default: all).
        classes: Keep only these classes (1..104; default: all).
        settings: Indices into :data:`programl.data.poj104.OPT_SETTINGS` (default ``(0,)``, -O0).
        seed: Seed of the split (204).
        mirrors: Directories to take the raw archive from first (default: the shared research data, when found).
        jobs: Worker processes of the graph build (default: all CPUs).
        transform, pre_transform, pre_filter, force_reload, log: As for every PyG data set.

    Example:
        >>> from torch_geometric.loader import DataLoader
        >>> train = POJ104("data/poj104", "train", size=10)                    # doctest: +SKIP
        >>> batch = next(iter(DataLoader(train, batch_size=32, shuffle=True)))  # doctest: +SKIP
    """

    def __init__(
        self,
        root: str | os.PathLike,
        split: str = "train",
        *,
        size: int | None = None,
        classes: Sequence[int] | None = None,
        settings: Sequence[int] = (0,),
        seed: int = 204,
        mirrors: Sequence[str | os.PathLike] | None = None,
        jobs: int | None = None,
        transform: Callable[[Data], Data] | None = None,
        pre_transform: Callable[[Data], Data] | None = None,
        pre_filter: Callable[[Data], bool] | None = None,
        force_reload: bool = False,
        log: bool = True,
    ) -> None:
        if split not in (*_SPLITS, _LEGACY):
            raise ValueError(f"unknown split {split!r} (expected train, val, test or legacy)")
        if size is not None and size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        for index in settings:
            if not 0 <= index < len(_poj104.OPT_SETTINGS):
                raise ValueError(f"unknown optimisation setting {index} (expected 0..{len(_poj104.OPT_SETTINGS) - 1})")
        self.split, self.size, self.seed = split, size, seed
        self.classes = sorted(set(int(c) for c in classes)) if classes is not None else None
        self.settings = tuple(sorted(set(int(i) for i in settings)))
        self.mirrors = list(mirrors) if mirrors is not None else [shared_data("poj104"), shared_data("legacy-ir")]
        self.jobs = jobs
        super().__init__(str(root), transform, pre_transform, pre_filter, log=log, force_reload=force_reload)
        meta = load_processed(
            self,
            self.processed_paths[self._position],
            self.processed_paths[-1],
            {"texts": list, "names": dict, "missing": dict},
        )
        #: node text of every id in ``x`` (shared by the three splits; id ``len(texts)``: unknown)
        self.texts: list[str] = meta["texts"]
        #: graph name ``<label>.<n>.<setting>`` of every example
        self.names: list[str] = meta["names"][split]
        #: graph names of this split's programs that did not compile
        self.missing: list[str] = meta["missing"][split]

    # ------------------------------------------------------------------------------------------------- PyG layout
    @property
    def _position(self) -> int:
        return 0 if self.split == _LEGACY else _SPLITS.index(self.split)

    @property
    def raw_file_names(self) -> list[str]:
        if self.split == _LEGACY:
            return [_poj104.LEGACY_ARCHIVE]
        if (Path(self.raw_dir) / "codexglue").is_dir():
            return ["codexglue"]
        return [_poj104.ARCHIVE]

    @property
    def processed_file_names(self) -> list[str]:
        if self.split == _LEGACY:
            return ["poj104-legacy.pt", "poj104-legacy.json"]
        options = json.dumps([self.size, self.classes, self.settings, self.seed])
        stem = f"poj104-{hashlib.sha256(options.encode()).hexdigest()[:12]}"
        return [f"{stem}-{split}.pt" for split in _SPLITS] + [f"{stem}.json"]

    def download(self) -> None:
        """Link or copy the archive from a mirror, else download the public repository (checked)."""
        if self.split == _LEGACY:
            _poj104.fetch_legacy(self.raw_dir, mirrors=self.mirrors)
            return
        _poj104.fetch_poj104(self.raw_dir, mirrors=self.mirrors)

    def process(self) -> None:
        """Compile and build the selected programs (:func:`programl.data.poj104.build_poj104`), then collate each
        split."""
        from programl.exceptions import ProgramlError
        from programl.util.fs import atomic_write_text

        if self.split == _LEGACY:
            self._process_legacy()
            return
        source = Path(self.raw_dir) / self.raw_file_names[0]
        programs = _poj104.read_programs(source)
        if self.classes is not None:
            programs = [p for p in programs if p.label in self.classes]
        chosen = _poj104.subset_split(_poj104.split_programs(programs, self.seed), self.size)
        for split, ids in chosen.items():
            if not ids:
                raise ProgramlError(
                    f"{self.root}: the {split} split of POJ-104 with size={self.size} is empty "
                    "(give a size of 5 or more)"
                )
        wanted = {pid for ids in chosen.values() for pid in ids}
        build = Path(self.processed_dir) / "build"
        _poj104.build_poj104(
            source, build, self.settings, programs=[p for p in programs if p.id in wanted], jobs=self.jobs
        )
        table = TextTable()
        meta: dict = {"names": {}, "missing": {}}
        for split, path in zip(_SPLITS, self.processed_paths):
            found, missing = _poj104.poj104_examples(build, chosen[split], self.settings)
            examples, names = [], []
            for graph_path in found:
                example = self._example(graph_path, table)
                if example is not None:
                    examples.append(example)
                    names.append(graph_path.name[: -len(".ProgramGraph.pb")])
            self.save(examples, path)
            meta["names"][split], meta["missing"][split] = names, list(missing)
        meta["texts"] = table.texts
        atomic_write_text(self.processed_paths[3], json.dumps(meta, sort_keys=True) + "\n")

    def _example(self, path: Path, table: TextTable) -> Data | None:
        """One graph file as an example (``None`` when ``pre_filter`` drops it)."""
        from programl.io.pyg import to_pyg
        from programl.proto import ProgramGraph

        d = to_pyg(ProgramGraph.FromString(path.read_bytes()), table)
        example = Data(**{k: d[k] for k in _KEEP}, num_nodes=d.num_nodes)
        example.y = d.graph_y.view(1).to(torch.long)
        if self.pre_filter is not None and not self.pre_filter(example):
            return None
        return self.pre_transform(example) if self.pre_transform is not None else example

    def _process_legacy(self) -> None:
        """Build the legacy IR graphs (:func:`programl.data.poj104.build_legacy`) and collate them."""
        from programl.exceptions import ProgramlError
        from programl.util.fs import atomic_write_text

        build = Path(self.processed_dir) / "build"
        report = _poj104.build_legacy(Path(self.raw_dir) / _poj104.LEGACY_ARCHIVE, build, jobs=self.jobs)
        if report.failed:
            name, error = report.failed[0]
            raise ProgramlError(f"{build}: {len(report.failed)} legacy IR files failed to build ({name}: {error})")
        table = TextTable()
        examples, names = [], []
        for path in _poj104.legacy_examples(build):
            example = self._example(path, table)
            if example is not None:
                examples.append(example)
                names.append(path.name[: -len(".ProgramGraph.pb")])
        self.save(examples, self.processed_paths[0])
        meta = {"texts": table.texts, "names": {_LEGACY: names}, "missing": {_LEGACY: []}}
        atomic_write_text(self.processed_paths[1], json.dumps(meta, sort_keys=True) + "\n")

    # ------------------------------------------------------------------------------------------------- views
    @property
    def sizes(self) -> np.ndarray:
        """Node count of every example (in dataset order), for node-budget batching."""
        return split_sizes(self)

    def vocabulary(self) -> Vocabulary:
        """The count-ordered vocabulary of this split's graphs (the training vocabulary of SPEC §6.6)."""
        return split_vocabulary(self)

    def __repr__(self) -> str:
        size = "all" if self.size is None else self.size
        return (
            f"{type(self).__name__}({len(self)} examples, {self.split}, size={size}, "
            f"settings={list(self.settings)}, {len(self.texts)} texts)"
        )
