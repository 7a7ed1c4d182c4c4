"""``DeepDataFlow``: the DeepDataFlow-22 data-flow data set as a PyG ``Dataset`` on disk
(docs/spec/tasks.md#data-flow-protocol, docs/spec/datasets.md#deepdataflow-layout).

POJ-104 C++ programs and the DevMap OpenCL kernels compiled by clang-22 at -O0 and -O2, labelled with the five
analyses of docs/spec/analyses.md, split 3:1:1 by source program (``datasets/deepdataflow22``). One example per (graph,
label record) of one analysis: hundreds of thousands of examples at full size, so the data stay on disk, memory-mapped
(:class:`programl.datasets.directory.DeepDataFlowDataset`, which this class wraps).

PyG layout under ``root``::

    raw/poj104/poj104.tar.xz, raw/devmap/*   the recipe's sources, linked or copied from ../shared/data (or
                                             $PROGRAML_SHARED_DATA), else downloaded, sha256-checked
    processed/<name>/                        the data set in the DeepDataFlow layout, built by
                                             programl.data.deepdataflow.build_dataset (resumable; ``<name>`` says
                                             the recipe and size), and its memory-mapped split stores

Examples (``Data``) as :class:`~programl.datasets.directory.DeepDataFlowDataset`: ``x`` (ids of the data set's training
vocabulary, :attr:`DeepDataFlow.texts`; remap with :class:`~programl.datasets.transforms.EncodeVocabulary`),
``node_type``, ``edge_index``, ``edge_flow``, ``edge_pos``, ``root`` (the selector), ``y`` (per-node label),
``step_count``, ``graph_index``. ``max_steps`` 30 / 60 / None gives DDF-30 / DDF-60 / all (a filter of the index; the
processed data are the same).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import programl

try:
    from torch_geometric.data import Data, Dataset
except ModuleNotFoundError as _error:  # installed without the ml extra: one line that says which extra to install
    raise programl._ml_import_error("programl.datasets", _error) or _error from None

from programl.data.deepdataflow.layout import SPLITS
from programl.data.download import shared_data
from programl.data.vocabulary import Vocabulary
from programl.dataflow.names import ANALYSES, check_analysis
from programl.datasets.directory import DeepDataFlowDataset
from programl.datasets.processed import SafeProcessing

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
    """One analysis and split of DeepDataFlow-22 (module docstring; docs/spec/tasks.md#data-flow-protocol,
    docs/spec/datasets.md#deepdataflow-layout).

    Args:
        root: Data set directory (``raw/``, ``processed/``).
        analysis: One of :data:`programl.dataflow.ANALYSES` (``reachability``, ``liveness`` ...).
        split: ``train``, ``val`` or ``test``.
        size: Source programs per recipe source (a small version of the same data set; default: all).
        max_steps: Keep records within this many data-flow steps (30 = DDF-30, 60 = DDF-60, None = all).
        max_nodes: Keep graphs with at most this many nodes (40,000 in the paper's runs; None: no limit).
        recipe: The recipe (default :data:`DEEPDATAFLOW22`).
        mirrors: Directories that hold the recipe's source paths (default: the shared research data, when found).
        jobs: Worker processes of the build and of the one-time conversion (default: all CPUs).
        transform, force_reload, log: As for every PyG data set.

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
        self.store = DeepDataFlowDataset(
            self.data_dir,
            analysis,
            split,
            max_steps=max_steps,
            max_nodes=max_nodes,
            jobs=jobs or os.cpu_count() or 1,
        )
        #: text of every vocabulary id in ``x`` (the data set's training vocabulary; id ``len(texts)``: unknown)
        self.texts: list[str] = list(Vocabulary.load(self.store.vocabulary_path).texts)

    # ------------------------------------------------------------------------------------------------- PyG layout
    @property
    def name(self) -> str:
        """``<recipe>-<size>-<hash of the recipe>``: the processed data set of these options."""
        digest = hashlib.sha256(json.dumps(self.recipe, sort_keys=True).encode()).hexdigest()[:8]
        label = str(self.recipe.get("name", "recipe")).lower().replace(" ", "_")
        return f"{label}-{'all' if self.size is None else self.size}-{digest}"

    @property
    def data_dir(self) -> Path:
        """The built data set (DeepDataFlow layout)."""
        return Path(self.processed_dir) / self.name

    @property
    def raw_file_names(self) -> list[str]:
        names = []
        for source in self.recipe["sources"]:
            if source.get("kind") == "devmap":
                from programl.data.devmap import SOURCES

                names += [f"{source['path']}/{n}" for n, s in SOURCES.items() if s.url is not None]
            else:
                names.append(source["path"])
        return names

    @property
    def processed_file_names(self) -> list[str]:
        return [f"{self.name}/dataset.json"]

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
                from programl.exceptions import ProgramlError

                raise ProgramlError(f"{raw / source['path']}: missing (a recipe source without sha256 is not fetched)")
            fetch(raw / source["path"], source["sha256"], url=source.get("url"), mirrors=[m.parent for m in mirrors])

    def process(self) -> None:
        """Build the data set (:func:`programl.data.deepdataflow.build_dataset`) into ``processed/<name>``."""
        from programl.data.deepdataflow.builder import build_dataset
        from programl.data.deepdataflow.recipe import recipe_inputs, recipe_settings
        from programl.exceptions import ProgramlError

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

    # ------------------------------------------------------------------------------------------------- access
    def len(self) -> int:
        return self.store.len()

    def get(self, idx: int) -> Data:
        return self.store.get(idx)

    @property
    def sizes(self) -> np.ndarray:
        """Node count of every example (in dataset order), for node-budget batching."""
        return self.store.sizes[np.asarray(self.indices(), dtype=np.int64)]

    @property
    def step_counts(self) -> np.ndarray:
        """``data_flow_step_count`` of every example (in dataset order)."""
        return self.store.step_counts[np.asarray(self.indices(), dtype=np.int64)]

    def vocabulary(self) -> Vocabulary:
        """The data set's vocabulary (of its training graphs, docs/spec/models.md#vocabulary)."""
        return Vocabulary.load(self.store.vocabulary_path)

    def __repr__(self) -> str:
        steps = "all" if self.max_steps is None else self.max_steps
        return (
            f"{type(self).__name__}({len(self)} examples, {self.analysis}, {self.split}, "
            f"size={'all' if self.size is None else self.size}, max_steps={steps}, max_nodes={self.max_nodes})"
        )
