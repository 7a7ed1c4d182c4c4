"""``POJ104``: the POJ-104 algorithm-classification data set as a PyG ``InMemoryDataset``
(docs/spec/tasks.md#algorithm-classification, docs/spec/tasks.md#poj-104-table).

104 classes of student C/C++ programs; one graph per program and optimisation setting (clang-22, ProGraML's header
recipe, :mod:`programl.data.poj104`), a graph-level target (the class, 0..103). About 52,000 programs at one setting
fit in memory.

PyG layout under ``root``::

    raw/poj104.tar.xz   linked or copied from ../shared/data/poj104 (or $PROGRAML_SHARED_DATA/poj104), sha256-checked;
                        or raw/codexglue, a link to a mirror's extracted programs; without either, the public
                        repository archive is streamed and raw/codexglue/ extracted
    processed/build/    the graphs, built by programl.data.poj104.build_poj104 (resumable, shared by every option)
    processed/poj104-<options>-{train,val,test}.pt and .json (text table, graph names, programs that did not compile)

The processed ``.pt`` and ``.json`` files are the data set: copied under ``processed/`` of another root (without
``raw/`` or ``build/``: 218 MB for every program at -O0, 25 MB after ``xz``), they are read there as they are, with no
archive, no clang and no graph file (a GPU machine). ``raw/`` is fetched only when something must be processed.

Examples (``Data``): ``x`` (ids into :attr:`POJ104.texts`; see :mod:`programl.datasets.transforms`),
``node_type``, ``edge_index``, ``edge_flow``, ``edge_pos``, ``y`` (1,) long (class - 1). With
``numbers_and_types=True`` also ``x_num`` (N, 10) and ``x_type`` (N, 6) int32 (stored narrow:
:func:`~programl.datasets.transforms.compact_features`): each constant's value and each vector,
array or struct type's shape (``docs/numbers_types.md``; not in ProGraML, off by default), added to the built graphs
when they are collated (:func:`programl.graph_builder.numbers_types.annotate` without the module's struct bodies, as
``programl predict`` adds them to a graph built without them), into processed files of their own (``-nt``). With
``string_bytes=True`` also ``x_str`` (N, 17) int32: the first bytes of each string constant
(:mod:`programl.graph_builder.string_bytes`), likewise (``-str``).

Split: the seeded per-class 3:1:1 split by program (:func:`programl.data.poj104.split_programs`), so every setting of
a program lands in the same split; ``size`` keeps the first ``size`` programs of each class in 3:1:1 proportion
(:func:`~programl.data.poj104.subset_split`: a smaller size's test programs are test programs of the full split),
``classes`` keeps only some classes (a quick look). The programs that do not compile with any recipe (about 2.5 %) are
left out and listed in :attr:`POJ104.missing`. ``split="legacy"`` gives classifyapp's extra test set instead: the
1,000 labelled legacy IR files (``raw/llvm_ir.tar.bz2`` from ../shared/data/legacy-ir or ProGraML's repository;
``processed/poj104-legacy.pt``), with its own text table.

``build=False`` collates the graphs already built and compiles nothing (a machine without clang); a graph that was
never built is then an error, not a missing example, since the processed files would keep the gap. ``build_dir``
puts the build elsewhere: a data directory of ``programl train classifyapp`` from before this layout
(``graphs/``, ``manifest.jsonl`` at its top) is used where it is.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

import programl

try:
    import torch
    from torch_geometric.data import Data, InMemoryDataset
except ModuleNotFoundError as _error:  # installed without the ml extra: one line that says which extra to install
    raise programl._ml_import_error("programl.datasets", _error) or _error from None

from programl.data import poj104 as _poj104
from programl.data.download import shared_data
from programl.data.vocabulary import Vocabulary
from programl.datasets import poj104_info
from programl.datasets.processed import SafeProcessing, load_processed
from programl.datasets.transforms import TextTable, graph_example, split_sizes, split_vocabulary
from programl.util.progress import progress

__all__ = ["POJ104"]

logger = logging.getLogger(__name__)

_SPLITS = ("train", "val", "test")
_LEGACY = "legacy"
_KEEP = ("x", "node_type", "edge_index", "edge_flow", "edge_pos")


class POJ104(SafeProcessing, InMemoryDataset):
    """One split of POJ-104 (module docstring; docs/spec/tasks.md#algorithm-classification).

    Args:
        root: Data set directory (``raw/``, ``processed/``).
        split: ``"train"``, ``"val"``, ``"test"``, or ``"legacy"``: the 1,000 labelled legacy IR files of ProGraML's
            tests (``llvm_ir.tar.bz2``, clang 3.7 IR of POJ-104 test programs; classifyapp's extra test set), for
            which ``size``, ``classes`` and ``settings`` do not apply.
        size: Programs per class (3:1:1 over the splits; default: all).
        classes: Keep only these classes (1..104; default: all).
        settings: Indices into :data:`programl.data.poj104.OPT_SETTINGS` (default ``(0,)``, -O0).
        eval_settings: The settings of the validation and test splits when they differ from the training split's
            (e.g. ``settings=(0, 1, 2, 3)``, ``eval_settings=(0,)``: compilation variants augment training, the
            model is chosen and scored on -O0 graphs; the other settings of those programs are not compiled).
            Default: ``settings``.
        seed: Seed of the split (204).
        mirrors: Where to take the raw files from first (default: the shared research data, when found): directories
            holding ``poj104.tar.xz`` or ``llvm_ir.tar.bz2``, those files themselves, or a ``codexglue/`` directory
            of the programs (see :func:`programl.data.poj104.fetch_poj104`).
        jobs: Worker processes of the graph build (default: all CPUs).
        verify: Check that the programs are the published POJ-104 (False: other programs, e.g. tests'; the legacy
            archive is always checked).
        build: Compile and build the graphs that are missing (False: collate those already built; module
            docstring).
        build_dir: Where the graphs are built (default ``processed/build``; module docstring).
        numbers_and_types: Add ``x_num`` / ``x_type`` (module docstring; not in ProGraML, off by default). The built
            graphs are shared; the processed files are not.
        string_bytes: Add ``x_str`` (module docstring; not in ProGraML, off by default); likewise.
        transform, pre_transform, pre_filter, force_reload: As for every PyG data set.
        log: As for every PyG data set; also progress bars (on a terminal) and a summary line of the build.

    Example:
        ``POJ104("data/poj104", "train", size=10)`` takes 10 programs of each of the 104 classes of the published
        archive (from the shared research data, else downloaded), which clang-22 compiles. Other programs laid out
        as the archive's (``codexglue/<class>/<n>.cpp``) work alike with ``verify=False``: here two classes of five
        tiny programs, split 3:1:1 (``needs`` skips the example in the tests where clang-22 is not installed):

        >>> needs("clang-22")
        >>> from pathlib import Path
        >>> source = "int main() {{ int s = 0; for (int i = 0; i < {n}; i++) s += i * {label}; return s; }}"
        >>> for label in (1, 2):
        ...     for n in range(1, 6):
        ...         program = Path("mirror/codexglue", str(label), f"{n}.cpp")
        ...         program.parent.mkdir(parents=True, exist_ok=True)
        ...         _ = program.write_text(source.format(n=n, label=label))
        >>> train = POJ104("data/poj104", "train", size=5, mirrors=["mirror"], verify=False, log=False)
        >>> train
        POJ104(6 examples, train, size=5, settings=[0], 14 texts)
        >>> train.names  # <class>.<program>.<setting>
        ['1.2.0', '1.1.0', '1.3.0', '2.1.0', '2.2.0', '2.3.0']
        >>> from torch_geometric.loader import DataLoader
        >>> batch = next(iter(DataLoader(train, batch_size=4)))
        >>> batch.num_graphs, batch.y
        (4, tensor([0, 0, 0, 1]))
    """

    #: The number of classes (the problems 1..104; an example's ``y`` is its class - 1).
    NUM_CLASSES: int = poj104_info.NUM_CLASSES
    #: The 8 optimisation settings (clang-22 flags) that ``settings=`` indexes: ``-O0``..``-O3``, each without and
    #: with ``-ffast-math`` (index i of ProGraML's graph names ``<class>.<program>.<i>``).
    OPT_SETTINGS: tuple[tuple[str, ...], ...] = poj104_info.OPT_SETTINGS
    #: The compiler recipes (header, language standard), tried in order until one compiles a program.
    RECIPES = poj104_info.RECIPES
    #: The raw archive of the programs under ``raw/`` (or their directory, ``raw/codexglue``).
    ARCHIVE: str = _poj104.ARCHIVE
    #: The raw archive of the legacy IR files under ``raw/`` (``split="legacy"``).
    LEGACY_ARCHIVE: str = _poj104.LEGACY_ARCHIVE

    def __init__(
        self,
        root: str | os.PathLike,
        split: str = "train",
        *,
        size: int | None = None,
        classes: Sequence[int] | None = None,
        settings: Sequence[int] = (0,),
        eval_settings: Sequence[int] | None = None,
        seed: int = 204,
        mirrors: Sequence[str | os.PathLike] | None = None,
        jobs: int | None = None,
        verify: bool = True,
        build: bool = True,
        build_dir: str | os.PathLike | None = None,
        numbers_and_types: bool = False,
        string_bytes: bool = False,
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
        for index in (*settings, *(eval_settings or ())):
            if not 0 <= index < len(_poj104.OPT_SETTINGS):
                raise ValueError(f"unknown optimisation setting {index} (expected 0..{len(_poj104.OPT_SETTINGS) - 1})")
        self.split, self.size, self.seed = split, size, seed
        self.classes = sorted(set(int(c) for c in classes)) if classes is not None else None
        self.settings = _poj104.canonical_settings(settings)
        #: the settings of the validation and test splits (None: :attr:`settings`)
        self.eval_settings = _poj104.distinct_eval_settings(self.settings, eval_settings)
        self.mirrors = list(mirrors) if mirrors is not None else [shared_data("poj104"), shared_data("legacy-ir")]
        self.jobs, self.verify, self.build = jobs, verify, build
        self._build_dir = Path(build_dir) if build_dir is not None else None
        self.numbers_and_types = bool(numbers_and_types)
        self.string_bytes = bool(string_bytes)
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
        return _file_names(
            self.split,
            self.size,
            self.classes,
            self.settings,
            self.seed,
            self.eval_settings,
            self.numbers_and_types,
            self.string_bytes,
        )

    def split_settings(self, split: str) -> tuple[int, ...]:
        """The optimisation settings of ``split``'s graphs."""
        return self.settings if split == "train" or self.eval_settings is None else self.eval_settings

    @classmethod
    def is_processed(
        cls,
        root: str | os.PathLike,
        split: str = "train",
        *,
        size: int | None = None,
        classes: Sequence[int] | None = None,
        settings: Sequence[int] = (0,),
        eval_settings: Sequence[int] | None = None,
        seed: int = 204,
        numbers_and_types: bool = False,
        string_bytes: bool = False,
    ) -> bool:
        """Whether ``root`` holds the processed files of this selection (so that opening it reads them, with no raw
        file and no build)."""
        classes = sorted(set(int(c) for c in classes)) if classes is not None else None
        settings = _poj104.canonical_settings(settings)
        eval_settings = _poj104.distinct_eval_settings(settings, eval_settings)
        names = _file_names(split, size, classes, settings, seed, eval_settings, numbers_and_types, string_bytes)
        return all((Path(root) / "processed" / name).is_file() for name in names)

    @classmethod
    def has_raw_files(cls, root: str | os.PathLike, split: str = "train") -> bool:
        """Whether ``root/raw`` holds the raw files of ``split`` (the archive or ``codexglue/`` of the programs; for
        ``"legacy"`` the legacy archive), so that processing needs no mirror or download."""
        raw = Path(root) / "raw"
        names = (cls.LEGACY_ARCHIVE,) if split == _LEGACY else (cls.ARCHIVE, "codexglue")
        return any((raw / name).exists() for name in names)

    @classmethod
    def has_legacy_graphs(cls, root: str | os.PathLike, build_dir: str | os.PathLike | None = None) -> bool:
        """Whether the legacy IR graphs are built under ``root`` (in ``build_dir`` when given, as the argument of the
        data set), so that ``split="legacy"`` with ``build=False`` can collate them."""
        build = Path(build_dir) if build_dir is not None else Path(root) / "processed" / "build"
        return bool(_poj104.legacy_examples(build))

    @staticmethod
    def compile_program(
        text: str, setting: Sequence[str] = ("-O0",), timeout: float | None = 120
    ) -> tuple[str, _poj104.Recipe]:
        """Compile a program as the data set's graphs were (ProGraML's header, C++11, the first of :attr:`RECIPES`
        that compiles it; :func:`programl.data.poj104.compile_program`); returns ``(IR, recipe)``.

        Args:
            text: The program (C or C++).
            setting: Optimisation flags (one of :attr:`OPT_SETTINGS`).
            timeout: Seconds per clang run.

        Raises:
            GraphCreationError: No recipe compiles the program (the error of the first recipe).
        """
        return poj104_info.compile_program(text, setting, timeout=timeout)

    @property
    def build_dir(self) -> Path:
        """Where the graphs are built (``processed/build`` unless ``build_dir`` was given)."""
        return self._build_dir if self._build_dir is not None else Path(self.processed_dir) / "build"

    def _download(self) -> None:
        """PyG's, but only when something must be processed: processed files are read without their raw files, and
        the legacy graphs collated without their archive (``build=False``)."""
        if not self.force_reload and all(Path(p).is_file() for p in self.processed_paths):
            return
        if self.split == _LEGACY and not self.build:
            return
        super()._download()

    def download(self) -> None:
        """Link or copy the archive from a mirror, else download the public repository (checked)."""
        if self.split == _LEGACY:
            _poj104.fetch_legacy(self.raw_dir, mirrors=self.mirrors)
            return
        _poj104.fetch_poj104(self.raw_dir, mirrors=self.mirrors, verify=self.verify)

    def process(self) -> None:
        """Compile and build the selected programs (:func:`programl.data.poj104.build_poj104`; not with
        ``build=False``), then collate each split."""
        from programl.exceptions import ProgramlError
        from programl.util.fs import atomic_write_text

        if self.split == _LEGACY:
            self._process_legacy()
            return
        source = Path(self.raw_dir) / self.raw_file_names[0]
        programs = _poj104.read_programs(source, verify=self.verify)
        if self.classes is not None:
            programs = [p for p in programs if p.label in self.classes]
        chosen = _poj104.subset_split(_poj104.split_programs(programs, self.seed), self.size)
        for split, ids in chosen.items():
            if not ids:
                raise ProgramlError(
                    f"{self.root}: the {split} split of POJ-104 with size={self.size} is empty "
                    "(give a size of 5 or more)"
                )
        build = self.build_dir
        if self.build:
            wanted: dict[tuple[int, ...], set[str]] = {}  # the programs to compile, by settings
            for split, ids in chosen.items():
                wanted.setdefault(self.split_settings(split), set()).update(ids)
            for settings, ids in wanted.items():
                report = _poj104.build_poj104(
                    source,
                    build,
                    settings,
                    programs=[p for p in programs if p.id in ids],
                    jobs=self.jobs,
                    progress=self._progress if self.log else None,
                )
                if self.log:
                    logger.info(
                        f"POJ-104 graphs at settings {list(settings)}: {report.built} built, {report.skipped} up to "
                        f"date, {len(report.failed)} failed (do not compile)"
                    )
        table = TextTable()
        meta: dict = {"names": {}, "missing": {}}
        for split, path in zip(_SPLITS, self.processed_paths):
            found, missing = _poj104.poj104_examples(build, chosen[split], self.split_settings(split))
            if not self.build:
                _check_built(build, missing)
            examples, names = self._examples(found, table, split)
            self.save(examples, path)
            meta["names"][split], meta["missing"][split] = names, list(missing)
        meta["texts"] = table.texts
        atomic_write_text(self.processed_paths[3], json.dumps(meta, sort_keys=True) + "\n")

    def _progress(self, items: Iterable, total: int, description: str, unit: str = "program") -> Iterable:
        """A progress bar over ``items`` when ``log`` is on (and stderr is a terminal)."""
        return progress(items, total, description, enabled=self.log, unit=unit)

    def _examples(self, paths: list[Path], table: TextTable, split: str) -> tuple[list[Data], list[str]]:
        """The examples of graph files ``paths`` (those ``pre_filter`` keeps) and their graph names."""
        examples, names = [], []
        for path in self._progress(paths, len(paths), f"reading {split}", unit="graph"):
            example = self._example(path, table)
            if example is not None:
                examples.append(example)
                names.append(path.name[: -len(".ProgramGraph.pb")])
        return examples, names

    def _example(self, path: Path, table: TextTable) -> Data | None:
        """One graph file as an example (``None`` when ``pre_filter`` drops it).

        Raises:
            ProgramlError: The file is not a readable graph (one line that names it).
        """
        from google.protobuf.message import DecodeError

        from programl.exceptions import ProgramlError
        from programl.proto import ProgramGraph

        try:
            graph = ProgramGraph.FromString(path.read_bytes())
            example = graph_example(
                graph,
                table,
                (*_KEEP, "graph_y"),
                numbers_and_types=self.numbers_and_types,
                string_bytes=self.string_bytes,
            )
        except (DecodeError, ValueError, IndexError) as error:
            raise ProgramlError(f"{path}: not a readable ProgramGraph ({error}); delete it to build it again") from None
        example.y = example.graph_y.view(1).to(torch.long)
        del example.graph_y
        if self.pre_filter is not None and not self.pre_filter(example):
            return None
        return self.pre_transform(example) if self.pre_transform is not None else example

    def _process_legacy(self) -> None:
        """Build the legacy IR graphs (:func:`programl.data.poj104.build_legacy`) and collate them."""
        from programl.exceptions import ProgramlError
        from programl.util.fs import atomic_write_text

        build = self.build_dir
        if self.build:
            report = _poj104.build_legacy(
                Path(self.raw_dir) / _poj104.LEGACY_ARCHIVE,
                build,
                jobs=self.jobs,
                progress=self._progress if self.log else None,
            )
            if report.failed:
                name, error = report.failed[0]
                raise ProgramlError(f"{build}: {len(report.failed)} legacy IR files failed to build ({name}: {error})")
        table = TextTable()
        paths = _poj104.legacy_examples(build)
        if not paths:
            raise ProgramlError(f"{build / 'legacy'}: no legacy IR graphs built (build them: build=True)")
        examples, names = self._examples(paths, table, _LEGACY)
        self.save(examples, self.processed_paths[0])
        meta = {"texts": table.texts, "names": {_LEGACY: names}, "missing": {_LEGACY: []}}
        atomic_write_text(self.processed_paths[1], json.dumps(meta, sort_keys=True) + "\n")

    # ------------------------------------------------------------------------------------------------- views
    @property
    def sizes(self) -> np.ndarray:
        """Node count of every example (in dataset order), for node-budget batching."""
        return split_sizes(self)

    @property
    def programs(self) -> list[str]:
        """The ids ``<label>.<n>`` of this split's programs: those with an example and those that did not compile
        (in the order of :attr:`names`, then :attr:`missing`)."""
        return list(dict.fromkeys(name.rsplit(".", 1)[0] for name in self.names + self.missing))

    def vocabulary(self) -> Vocabulary:
        """The count-ordered vocabulary of this split's graphs (the training vocabulary of
        docs/spec/tasks.md#algorithm-classification)."""
        return split_vocabulary(self)

    def __repr__(self) -> str:
        size = "all" if self.size is None else self.size
        return (
            f"{type(self).__name__}({len(self)} examples, {self.split}, size={size}, "
            f"settings={list(self.split_settings(self.split))}, {len(self.texts)} texts)"
        )


def _file_names(
    split: str,
    size: int | None,
    classes: list[int] | None,
    settings: tuple[int, ...],
    seed: int,
    eval_settings: tuple[int, ...] | None = None,
    numbers_and_types: bool = False,
    string_bytes: bool = False,
) -> list[str]:
    """The processed files of a selection (:attr:`POJ104.processed_file_names`): named by a hash of the options
    (``eval_settings`` enters the hash only when given, so the names of single-setting selections stay as they
    were), with ``-nt`` after the stem for ``numbers_and_types`` and ``-str`` for ``string_bytes``."""
    nt = ("-nt" if numbers_and_types else "") + ("-str" if string_bytes else "")
    if split == _LEGACY:
        return [f"poj104-legacy{nt}.pt", f"poj104-legacy{nt}.json"]
    key: list = [size, classes, settings, seed]
    if eval_settings is not None:
        key.append(eval_settings)
    options = json.dumps(key)
    stem = f"poj104-{hashlib.sha256(options.encode()).hexdigest()[:12]}{nt}"
    return [f"{stem}-{name}.pt" for name in _SPLITS] + [f"{stem}.json"]


def _check_built(build: Path, missing: list[str]) -> None:
    """With ``build=False``: every graph of the selection was built or failed to compile (the manifest says which),
    else a one-line error (its processed files would keep the gap)."""
    from programl.data.manifest import read_manifest
    from programl.exceptions import ProgramlError

    if not missing:
        return
    entries = read_manifest(build / "manifest.jsonl")
    never = [name for name in missing if entries.get(name, {}).get("status") != "failed"]
    if never:
        raise ProgramlError(
            f"{build}: {len(never)} graphs of this selection are not built (e.g. {never[0]}); build them "
            "(build=True; programl train classifyapp without --no-build)"
        )
