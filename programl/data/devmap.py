"""The OpenCL device-mapping data set (DevMap; docs/spec/tasks.md#device-mapping,
docs/spec/tasks.md#device-mapping-table, docs/spec/graph.md#functions-and-modules,
docs/spec/datasets.md#other-data-sets).

680 OpenCL kernels-with-inputs, each run on a CPU (Intel i7-3820) and on a GPU of two platforms: AMD Tahiti 7970
(``amd``) and NVIDIA GTX 970 (``nvidia``). The label says which device was faster (``oracle``: CPU or GPU;
``devmap_label`` = 1 when the GPU was faster); the auxiliary inputs are ``transfer`` (bytes moved to the device) and
``wgsize`` (work-group size), which differ between the platforms.

Sources (a directory such as ``../shared/data/devmap``, or downloaded from the public URLs in :data:`SOURCES` with
sha256 checks by :func:`fetch_sources`, through :mod:`programl.data.download`):

* ``cgo17-{amd,nvidia}.csv``: one row per kernel-with-input, same row order in both files;
* ``task_devmap_kernels.zip``: the OpenCL sources (``kernels_cl/``);
* ``task_devmap.zip``: NCC's LLVM IR of the kernels (``kernels_ir/``, typed pointers, read by LLVM 22);
* ``devmap_clang22_manifest.csv``: per row the kernel file, NCC's IR file and the extra clang-22 flags. It is made
  by this project, not downloadable: where it is absent, :func:`derive_manifest` makes the same table from
  ProGraML's ``name2ncc_path`` rule and the flag recipe below (a test checks the two agree on all 680 rows).

Two graph variants are built per row by :func:`build_devmap`, in worker processes with a per-file timeout, atomically
and resumably, with a ``manifest.jsonl`` that records every row's outcome:

* ``clang22``: the kernel compiled by clang-22 (``-x cl -cl-std=CL1.2 -Xclang -finclude-default-header -target
  spir64 -O0 -I kernels_cl`` plus the row's flags). clang-22 wraps every kernel ``k`` in a stub that calls
  ``__clang_ocl_kern_imp_k`` (which holds the body); both functions are kept in the graph, as clang emits them.
* ``ncc``: NCC's released IR.

On disk (under ``data_dir``, e.g. ``~/.cache/programl/devmap``), in ProGraML's layout::

    src/kernels_cl/*.cl, *.h          extracted sources
    src/kernels_ir/*.ll               extracted NCC IR
    <variant>/ir/<name>.ll            clang-22's IR (clang22 only)
    <variant>/graphs_amd/<name>.ProgramGraph.pb
    <variant>/graphs_nvidia/<name>.ProgramGraph.pb
    <variant>/manifest.jsonl          one line per row: inputs, flags, content hash, status, error, seconds

where ``<name>`` is ``<benchmark>-<dataset>``. Each graph carries the graph features of
docs/spec/graph.md#functions-and-modules for its platform: ``devmap_label``, ``wgsize``, ``transfer_bytes`` (int64) and
``wgsize_log1p``, ``transfer_bytes_log1p`` (float; unlike ProGraML's ``create.py``, ``wgsize_log1p`` is computed from
``wgsize``).

Cross-validation (docs/spec/tasks.md#device-mapping): :func:`cross_validation_splits` gives the paper's rotating
80/10/10 splits of a seeded stratified 10-fold partition (fold k is the test set, fold k+1 the validation set, the rest
training); :func:`stratified_rows` a seeded stratified sample of the rows (quick looks, tests).
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from programl.data.download import download_url, fetch, sha256_file
from programl.data.manifest import Manifest
from programl.data.pipeline import run_tasks
from programl.data.report import BuildReport as _BuildReport
from programl.exceptions import ProgramlError
from programl.proto import ProgramGraph
from programl.util.fs import atomic_write_bytes, atomic_write_text

__all__ = [
    "AUX_MEDIANS",
    "CLANG22_BASE_FLAGS",
    "MANIFEST_FILE",
    "PLATFORMS",
    "PLATFORM_NAMES",
    "SOURCES",
    "VARIANTS",
    "BuildReport",
    "DevmapData",
    "DevmapRow",
    "ManifestRow",
    "Source",
    "Split",
    "build_devmap",
    "check_sources",
    "cross_validation_splits",
    "derive_manifest",
    "devmap_features",
    "extract_sources",
    "fetch_file",
    "fetch_sources",
    "load_devmap",
    "opencl_source",
    "read_manifest",
    "read_platform_csv",
    "sha256_file",
    "stratified_rows",
]

PLATFORMS = ("amd", "nvidia")
PLATFORM_NAMES = {"amd": "AMD Tahiti 7970", "nvidia": "NVIDIA GTX 970"}
VARIANTS = ("clang22", "ncc")
MANIFEST_FILE = "devmap_clang22_manifest.csv"

#: Medians of the auxiliary inputs over the 680 rows of each platform's ``cgo17-<platform>.csv`` (``numpy.median`` of
#: ``transfer`` bytes and ``wgsize``; tests/models/test_pretrained.py checks them against the data): what a model is
#: given for a kernel whose inputs are unknown (``programl predict devmap``).
AUX_MEDIANS: dict[str, dict[str, int]] = {
    "amd": {"transfer": 57_594_120, "wgsize": 62},
    "nvidia": {"transfer": 57_594_120, "wgsize": 61},
}

#: clang-22 flags of every OpenCL kernel besides ``-x cl -cl-std=CL1.2 -Xclang -finclude-default-header -target
#: spir64`` (which :mod:`programl.graph_builder.clang` adds for OpenCL) and ``-I kernels_cl``.
CLANG22_BASE_FLAGS = ("-O0",)


@dataclass(frozen=True)
class Source:
    """A public input file: where to download it and its checksum."""

    name: str
    url: str | None
    sha256: str
    size: int


_PHD = "https://raw.githubusercontent.com/ChrisCummins/phd/aab7f16bd1f3546f81e349fc6e2325fb17beb851"
_E2E = "https://raw.githubusercontent.com/ChrisCummins/paper-end2end-dl/df6fa690cbf18bdcab23f26c5832f36884f037b5"

#: The data set's files (PROVENANCE.md of ``../shared/data/devmap``); the manifest has no URL (made by this project).
SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source(
            "cgo17-amd.csv",
            f"{_E2E}/data/case-study-a/cgo17-amd.csv",
            "0076271192aa9a0a7c21aa9a637e34cd4460f8e21e756215dd23ffb2ae62dc62",
            2_147_324,
        ),
        Source(
            "cgo17-nvidia.csv",
            f"{_E2E}/data/case-study-a/cgo17-nvidia.csv",
            "095c1ccef333e0a65e0e70b3ebde0aef851b61528ec46496a5d1687905abd099",
            2_147_529,
        ),
        Source(
            "task_devmap.zip",
            f"{_PHD}/deeplearning/ncc/published_results/task_devmap.zip",
            "3c840f84936a83e329c7a94d011c45ddfcfce8bdbb1a9b1904123e83851913d5",
            3_005_171,
        ),
        Source(
            "task_devmap_kernels.zip",
            f"{_PHD}/deeplearning/ncc/published_results/task_devmap_kernels.zip",
            "cd15063e8acb2ea7b04c2aa7e2ad51ba405d71abffbac5b0ef083fc1acc81136",
            441_847,
        ),
        Source(MANIFEST_FILE, None, "6bf7deff414b5add3d051156701d13242e54ce4b521f5d1dc70a9005f03cdd30", 93_511),
    )
}

# ---------------------------------------------------------------------------------------------------------------
# Files: checksums and downloads


def fetch_file(url: str, path: str | os.PathLike, sha256: str, timeout: float = 120) -> Path:
    """Download ``url`` to ``path`` (streamed, atomic, sha256-checked: :func:`programl.data.download.download_url`).

    Raises:
        ProgramlError: The download failed or its checksum is wrong (nothing is written then).
    """
    return download_url(url, path, sha256, timeout=timeout)


def check_sources(directory: str | os.PathLike, verify: bool = True) -> dict[str, Path]:
    """Paths of the data set's files in ``directory`` (the manifest only when present).

    Args:
        directory: Holds the files listed in :data:`SOURCES`.
        verify: Check each file's sha256.

    Raises:
        ProgramlError: A required file is missing or has the wrong checksum.
    """
    directory = Path(directory)
    found: dict[str, Path] = {}
    for name, source in SOURCES.items():
        path = directory / name
        if not path.is_file():
            if source.url is None:
                continue
            raise ProgramlError(f"{path}: missing (download it with fetch_sources() or from {source.url})")
        if verify and sha256_file(path) != source.sha256:
            raise ProgramlError(f"{path}: sha256 differs from the published {source.sha256}")
        found[name] = path
    return found


def fetch_sources(directory: str | os.PathLike, mirrors: Sequence[str | os.PathLike | None] = ()) -> dict[str, Path]:
    """Put the public files into ``directory`` (linked or copied from a mirror directory such as
    ``../shared/data/devmap``, else downloaded; sha256-checked by :func:`programl.data.download.fetch`), and the
    manifest where a mirror has it; returns :func:`check_sources`."""
    directory = Path(directory)
    for name, source in SOURCES.items():
        if source.url is None and not any(m is not None and (Path(m) / name).is_file() for m in mirrors):
            continue  # the manifest is derived when no mirror has it
        fetch(directory / name, source.sha256, url=source.url, mirrors=mirrors)
    return check_sources(directory)


# ---------------------------------------------------------------------------------------------------------------
# Tables


@dataclass(frozen=True)
class DevmapRow:
    """One kernel-with-input of one platform (a row of ``cgo17-<platform>.csv``).

    Attributes:
        row: 0-based row index (the same kernel-with-input has the same index on both platforms).
        benchmark, dataset: Kernel and input names; ``name`` = ``benchmark-dataset``.
        transfer: Bytes transferred to the device (auxiliary input).
        wgsize: Work-group size (auxiliary input).
        oracle: ``"CPU"`` or ``"GPU"``, the faster device.
        runtime_cpu, runtime_gpu: Measured runtimes.
    """

    row: int
    benchmark: str
    dataset: str
    transfer: int
    wgsize: int
    oracle: str
    runtime_cpu: float
    runtime_gpu: float

    @property
    def name(self) -> str:
        return f"{self.benchmark}-{self.dataset}"

    @property
    def label(self) -> int:
        """1 when the GPU was faster (``devmap_label``), else 0."""
        return 1 if self.oracle == "GPU" else 0

    def runtime(self, device: int) -> float:
        """Runtime on device 0 (CPU) or 1 (GPU)."""
        return self.runtime_gpu if device else self.runtime_cpu


def _open_csv(path: str | os.PathLike) -> Iterator[dict[str, str]]:
    csv.field_size_limit(sys.maxsize)  # the `src` column holds whole kernels
    with open(path, newline="", encoding="utf-8") as f:
        yield from csv.DictReader(f)


def read_platform_csv(path: str | os.PathLike) -> list[DevmapRow]:
    """Read ``cgo17-<platform>.csv`` (columns ``benchmark, dataset, transfer, wgsize, oracle, runtime_cpu,
    runtime_gpu``; the others are ignored).

    Raises:
        ProgramlError: A column is missing or a value is malformed (with the row number).
    """
    rows = []
    for i, record in enumerate(_open_csv(path)):
        try:
            row = DevmapRow(
                row=i,
                benchmark=record["benchmark"],
                dataset=record["dataset"],
                transfer=int(record["transfer"]),
                wgsize=int(record["wgsize"]),
                oracle=record["oracle"],
                runtime_cpu=float(record["runtime_cpu"]),
                runtime_gpu=float(record["runtime_gpu"]),
            )
        except (KeyError, ValueError) as error:
            raise ProgramlError(f"{path}: row {i}: {type(error).__name__}: {error}") from None
        if row.oracle not in ("CPU", "GPU"):
            raise ProgramlError(f"{path}: row {i}: oracle {row.oracle!r} is neither CPU nor GPU")
        rows.append(row)
    return rows


@dataclass(frozen=True)
class ManifestRow:
    """One row of ``devmap_clang22_manifest.csv``: which files a kernel-with-input uses and its clang-22 flags.

    ``flags`` are split on white space and passed verbatim (``-DCLASS='A'`` keeps its quotes: the NPB headers compare
    ``CLASS`` with character literals).
    """

    row: int
    benchmark: str
    dataset: str
    kernels_cl_file: str
    kernels_ir_file: str
    flags: tuple[str, ...] = ()
    note: str = ""

    @property
    def name(self) -> str:
        return f"{self.benchmark}-{self.dataset}"


def read_manifest(path: str | os.PathLike) -> list[ManifestRow]:
    """Read ``devmap_clang22_manifest.csv``.

    Raises:
        ProgramlError: A column is missing, or a row has ``clang22_ok`` other than 1.
    """
    rows = []
    for record in _open_csv(path):
        try:
            rows.append(
                ManifestRow(
                    row=int(record["row"]),
                    benchmark=record["benchmark"],
                    dataset=record["dataset"],
                    kernels_cl_file=record["kernels_cl_file"],
                    kernels_ir_file=record["kernels_ir_file"],
                    flags=tuple(record["clang22_extra_flags"].split()),
                    note=record.get("note", "") or "",
                )
            )
        except (KeyError, ValueError) as error:
            raise ProgramlError(f"{path}: {type(error).__name__}: {error}") from None
    return rows


#: Kernels that use macros their benchmark's host code defines; clang-22 gets these values (the manifest's flags).
CLANG22_MACRO_FLAGS = (
    "-DN_GP=8",
    "-DLSIZE=64",
    "-DBLOCK_SIZE=16",
    "-DRADIUS=4",
    "-DMAXWORKX=8",
    "-DMAXWORKY=8",
    "-DMT_RNG_COUNT=4096",
    "-DLROWS=16",
)
CLANG22_MACRO_KERNELS = frozenset(
    [
        "npb-3.3-CG-main_0",
        "npb-3.3-FT-cffts1",
        "npb-3.3-FT-cffts2",
        "npb-3.3-FT-cffts3",
        "nvidia-4.2-FDTD3d-FiniteDifferences",
        "nvidia-4.2-MatrixMul-matrixMul",
        "nvidia-4.2-MersenneTwister-BoxMuller",
        "rodinia-3.1-hotspot-hotspot",
        "rodinia-3.1-lud-lud_diagonal",
        "rodinia-3.1-lud-lud_internal",
        "rodinia-3.1-lud-lud_perimeter",
        "rodinia-3.1-nw-nw_kernel1",
        "rodinia-3.1-nw-nw_kernel2",
        "shoc-1.1.5-Stencil2D-StencilKernel",
    ]
    + [
        f"shoc-1.1.5-S3D-{k}"
        for k in (
            "gr_base",
            "qssa2_kernel",
            "qssa_kernel",
            "qssab_kernel",
            "ratt10_kernel",
            "ratt2_kernel",
            "ratt3_kernel",
            "ratt4_kernel",
            "ratt5_kernel",
            "ratt6_kernel",
            "ratt7_kernel",
            "ratt8_kernel",
            "ratt9_kernel",
            "ratt_kernel",
            "ratx2_kernel",
            "ratx4_kernel",
            "ratx_kernel",
            "ratxb_kernel",
            "rdsmh_kernel",
            "rdwdot10_kernel",
            "rdwdot2_kernel",
            "rdwdot3_kernel",
            "rdwdot6_kernel",
            "rdwdot7_kernel",
            "rdwdot8_kernel",
            "rdwdot9_kernel",
            "rdwdot_kernel",
        )
    ]
)

#: The NPB SP ``initialize2..5`` kernels use the ``npb-3.3npb-SP-*`` sources, which declare ``exact_solution``.
_SP_VARIANT = {f"npb-3.3-SP-initialize{i}": f"npb-3.3npb-SP-initialize{i}.cl" for i in range(2, 6)}
_SP_NOTE = "use npb-3.3npb-SP-* variant (declares exact_solution)"

#: ``parboil-0.2-bfs``: the flat directory's ``config.h`` belongs to another benchmark; its own values instead.
_BFS_FILE = "parboil-0.2-bfs-BFS_kernel.cl"
_BFS_INCLUDE = '#include "config.h"'
_BFS_DEFINES = {
    "MAX_THREADS_PER_BLOCK": "256",
    "LOCAL_MEM_SIZE": "1600",
    "INF": "2147483647",
    "WHITE": "16677217",
    "GRAY": "16677218",
    "GRAY0": "16677219",
    "GRAY1": "16677220",
    "BLACK": "16677221",
}
_BFS_NOTE = (
    'flat kernels_cl/config.h belongs to another benchmark: drop #include ""config.h"" and define '
    "MAX_THREADS_PER_BLOCK=256 LOCAL_MEM_SIZE=1600 INF=2147483647 WHITE/GRAY/GRAY0/GRAY1/BLACK=16677217..16677221"
).replace('""', '"')


def _resolve(benchmark: str, dataset: str, available: Iterable[str], suffix: str) -> str:
    """ProGraML's ``name2ncc_path``: ``benchmark-dataset``, then ``benchmark``, then ``benchmark_dataset``."""
    names = set(available)
    for stem in (f"{benchmark}-{dataset}", benchmark, f"{benchmark}_{dataset}"):
        if stem + suffix in names:
            return stem + suffix
    raise ProgramlError(f"no {suffix} file for {benchmark}-{dataset}")


def derive_manifest(rows: Sequence[DevmapRow], cl_files: Iterable[str], ir_files: Iterable[str]) -> list[ManifestRow]:
    """The clang-22 manifest from the CSV rows and the file names of ``kernels_cl/`` and ``kernels_ir/``.

    Rules: files by :func:`_resolve` (ProGraML's ``name2ncc_path``); NPB kernels get ``-DCLASS='<dataset>'``; the
    kernels of :data:`CLANG22_MACRO_KERNELS` get :data:`CLANG22_MACRO_FLAGS`; SP ``initialize2..5`` use the
    ``npb-3.3npb-SP-*`` sources.

    Raises:
        ProgramlError: A row has no source or IR file.
    """
    cl_files, ir_files = sorted(cl_files), sorted(ir_files)
    manifest = []
    for row in rows:
        flags: list[str] = []
        if row.benchmark.startswith("npb-"):
            flags.append(f"-DCLASS='{row.dataset}'")
        if row.benchmark in CLANG22_MACRO_KERNELS:
            flags.extend(CLANG22_MACRO_FLAGS)
        cl = _SP_VARIANT.get(row.benchmark) or _resolve(row.benchmark, row.dataset, cl_files, ".cl")
        note = _SP_NOTE if row.benchmark in _SP_VARIANT else _BFS_NOTE if cl == _BFS_FILE else ""
        ir = _resolve(row.benchmark, row.dataset, ir_files, ".ll")
        manifest.append(ManifestRow(row.row, row.benchmark, row.dataset, cl, ir, tuple(flags), note))
    return manifest


def opencl_source(row: ManifestRow, kernels_cl: str | os.PathLike) -> tuple[str, tuple[str, ...]]:
    """The text and clang-22 flags (besides the OpenCL ones) of a row's kernel.

    The ``parboil-0.2-bfs`` kernel gets its own ``config.h`` values instead of the include (manifest note).
    """
    path = Path(kernels_cl) / row.kernels_cl_file
    text = path.read_bytes().decode("utf-8", "replace")
    if row.kernels_cl_file == _BFS_FILE:
        defines = "".join(f"#define {k} {v}\n" for k, v in _BFS_DEFINES.items())
        text = text.replace(_BFS_INCLUDE, defines)
    return text, (*CLANG22_BASE_FLAGS, "-I", str(kernels_cl), *row.flags)


# ---------------------------------------------------------------------------------------------------------------
# Sources on disk


def _extract_members(archive: Path, prefix: str, destination: Path) -> None:
    """Extract the files ``<prefix>/<name>`` of a zip (no ``__MACOSX``, no dot files) into ``destination``."""
    if destination.is_dir() and (destination / ".complete").is_file():
        return
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                parts = info.filename.split("/")
                # only plain files directly under the prefix: no dot files (nor "." and ".."), no empty names
                if info.is_dir() or len(parts) != 2 or parts[0] != prefix or parts[1][:1] in ("", ".", "\\"):
                    continue
                with zf.open(info) as member, open(staging / parts[1], "wb") as out:
                    shutil.copyfileobj(member, out, 1 << 20)
        (staging / ".complete").write_text(sha256_file(archive) + "\n")
        if destination.exists():
            shutil.rmtree(destination)
        os.replace(staging, destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def extract_sources(sources: dict[str, Path], data_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Extract ``kernels_cl/`` (from ``task_devmap_kernels.zip``) and ``kernels_ir/`` (from ``task_devmap.zip``)
    into ``data_dir/src`` once; returns their paths."""
    src = Path(data_dir) / "src"
    kernels_cl, kernels_ir = src / "kernels_cl", src / "kernels_ir"
    _extract_members(sources["task_devmap_kernels.zip"], "kernels_cl", kernels_cl)
    _extract_members(sources["task_devmap.zip"], "kernels_ir", kernels_ir)
    return kernels_cl, kernels_ir


# ---------------------------------------------------------------------------------------------------------------
# Graphs


def devmap_features(row: DevmapRow) -> dict[str, int | float]:
    """The graph features of docs/spec/graph.md#functions-and-modules for one platform's row."""
    return {
        "devmap_label": row.label,
        "wgsize": row.wgsize,
        "transfer_bytes": row.transfer,
        "wgsize_log1p": math.log1p(row.wgsize),
        "transfer_bytes_log1p": math.log1p(row.transfer),
    }


def _with_features(graph: ProgramGraph, features: dict[str, int | float]) -> ProgramGraph:
    out = ProgramGraph()
    out.CopyFrom(graph)
    for key, value in features.items():
        feature = out.features.feature[key]
        if isinstance(value, int):
            feature.int64_list.value.append(value)
        else:
            feature.float_list.value.append(value)
    return out


@dataclass(frozen=True)
class _BuildTask:
    """What a worker needs to build one row's graph of one variant."""

    row: ManifestRow
    variant: str
    kernels_cl: str
    kernels_ir: str
    ir_output: str | None
    outputs: tuple[tuple[str, dict], ...]  # (graph path, features) per platform
    timeout: float


def _build_row(task: _BuildTask) -> dict:
    """Build, label and write one row's graphs; returns its manifest fields (runs in a worker)."""
    from programl.graph_builder import clang
    from programl.graph_builder.llvm import graph_from_ir

    start = time.perf_counter()
    if task.variant == "clang22":
        text, flags = opencl_source(task.row, task.kernels_cl)
        ir = clang.compile_source(text, "cl", flags, timeout=task.timeout)
        graph = graph_from_ir(ir, path=task.row.kernels_cl_file)
        graph.module[0].name = task.row.kernels_cl_file  # not "-" (clang read the kernel from stdin)
        if task.ir_output:
            atomic_write_text(task.ir_output, ir)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    else:
        data = (Path(task.kernels_ir) / task.row.kernels_ir_file).read_bytes()
        graph = graph_from_ir(data, path=task.row.kernels_ir_file)
        digest = hashlib.sha256(data).hexdigest()
    for path, features in task.outputs:
        atomic_write_bytes(path, _with_features(graph, features).SerializeToString(deterministic=True))
    return {
        "sha256": digest,
        "nodes": len(graph.node),
        "edges": len(graph.edge),
        "seconds": round(time.perf_counter() - start, 3),
    }


@dataclass
class BuildReport:
    """What :func:`build_devmap` did, per variant: one :class:`programl.data.report.BuildReport` each
    (:attr:`variants`), and its counts by variant: rows built now, rows already done, and failures."""

    variants: dict[str, _BuildReport] = field(default_factory=dict)

    @property
    def built(self) -> dict[str, int]:
        return {variant: report.built for variant, report in self.variants.items()}

    @property
    def skipped(self) -> dict[str, int]:
        return {variant: report.skipped for variant, report in self.variants.items()}

    @property
    def failed(self) -> dict[str, list[tuple[str, str]]]:
        return {variant: report.failed for variant, report in self.variants.items()}

    @property
    def errors(self) -> list[OSError]:
        return [error for report in self.variants.values() for error in report.errors]

    @property
    def ok(self) -> bool:
        return all(report.ok for report in self.variants.values())

    @property
    def exit_code(self) -> int:
        return max((report.exit_code for report in self.variants.values()), default=0)


def _load_manifest_rows(
    sources: dict[str, Path], platform_rows: Sequence[DevmapRow], kernels_cl: Path, kernels_ir: Path
) -> list[ManifestRow]:
    if MANIFEST_FILE in sources:
        manifest = read_manifest(sources[MANIFEST_FILE])
    else:
        manifest = derive_manifest(platform_rows, os.listdir(kernels_cl), os.listdir(kernels_ir))
    if [m.name for m in manifest] != [r.name for r in platform_rows]:
        raise ProgramlError("the clang-22 manifest does not list the CSV rows in order")
    return manifest


def _read_tables(sources: dict[str, Path]) -> dict[str, list[DevmapRow]]:
    tables = {p: read_platform_csv(sources[f"cgo17-{p}.csv"]) for p in PLATFORMS}
    if [r.name for r in tables["amd"]] != [r.name for r in tables["nvidia"]]:
        raise ProgramlError("cgo17-amd.csv and cgo17-nvidia.csv do not list the same rows")
    return tables


def _graph_path(data_dir: Path, variant: str, platform: str, name: str) -> Path:
    return data_dir / variant / f"graphs_{platform}" / f"{name}.ProgramGraph.pb"


def build_devmap(
    source_dir: str | os.PathLike,
    data_dir: str | os.PathLike,
    variants: Sequence[str] = VARIANTS,
    *,
    jobs: int | None = None,
    timeout: float = 300,
    force: bool = False,
    verify: bool = True,
    rows: Sequence[int] | None = None,
    progress: Callable[[Iterable, int, str], Iterable] | None = None,
) -> BuildReport:
    """Build the graphs of every row for each variant (module docstring), skipping rows already built.

    Args:
        source_dir: Directory with the files of :data:`SOURCES`.
        data_dir: Output directory (derived data).
        variants: ``"clang22"`` and/or ``"ncc"``.
        jobs: Worker processes (default: all CPUs).
        timeout: Seconds per row before its worker is killed.
        force: Rebuild rows whose graphs exist.
        verify: Check the sha256 of the source files.
        rows: Build only these row indices (default: all 680).
        progress: Wraps the stream of finished rows, e.g. a tqdm bar: ``progress(iterable, total, description)``.

    Returns:
        A :class:`BuildReport`. A row that fails is recorded (``manifest.jsonl`` status ``failed``) and the others go
        on; it is retried by the next call.
    """
    for variant in variants:
        if variant not in VARIANTS:
            raise ProgramlError(f"unknown devmap variant {variant!r} (expected one of {', '.join(VARIANTS)})")
    data_dir = Path(data_dir)
    sources = check_sources(source_dir, verify=verify)
    tables = _read_tables(sources)
    kernels_cl, kernels_ir = extract_sources(sources, data_dir)
    manifest_rows = _load_manifest_rows(sources, tables["amd"], kernels_cl, kernels_ir)
    if rows is not None:
        manifest_rows = [manifest_rows[i] for i in sorted(set(rows))]
    report = BuildReport()
    for variant in variants:
        start = time.perf_counter()
        report.variants[variant] = variant_report = _BuildReport()
        manifest = Manifest(data_dir / variant / "manifest.jsonl", variant_report)
        tasks = []
        for m in manifest_rows:
            outputs = tuple(
                (str(_graph_path(data_dir, variant, p, m.name)), devmap_features(tables[p][m.row])) for p in PLATFORMS
            )
            if manifest.check(m.name, None, _outputs_exist(outputs), force=force):
                ir_output = str(data_dir / variant / "ir" / f"{m.name}.ll") if variant == "clang22" else None
                tasks.append(_BuildTask(m, variant, str(kernels_cl), str(kernels_ir), ir_output, outputs, timeout))
        run_tasks(
            _build_row,
            tasks,
            manifest,
            _describe,
            jobs=jobs,
            timeout=timeout,
            progress=progress,
            description=f"devmap {variant}",
        )
        if manifest.changed:  # one line per row, in row order
            manifest.compact(sorted(manifest.entries.values(), key=lambda e: e["row"]))
        variant_report.seconds = time.perf_counter() - start
    return report


def _outputs_exist(outputs: Sequence[tuple[str, dict]]) -> Callable[[object], bool]:
    return lambda _entry: all(os.path.isfile(path) for path, _ in outputs)


def _describe(task: _BuildTask) -> dict:
    """A row's manifest entry before it is built."""
    m = task.row
    return {
        "row": m.row,
        "name": m.name,
        "input": m.kernels_cl_file if task.variant == "clang22" else m.kernels_ir_file,
        "flags": list(m.flags) if task.variant == "clang22" else [],
    }


# ---------------------------------------------------------------------------------------------------------------
# Loading


@dataclass
class DevmapData:
    """The rows and graphs of one platform and variant, in CSV row order.

    Attributes:
        platform, variant: As given to :func:`load_devmap`.
        rows: One :class:`DevmapRow` per kernel-with-input.
        graphs: The labelled ``ProgramGraph`` of each row (graph features of docs/spec/graph.md#functions-and-modules).
    """

    platform: str
    variant: str
    rows: list[DevmapRow]
    graphs: list[ProgramGraph]

    @property
    def labels(self) -> np.ndarray:
        return np.array([r.label for r in self.rows], dtype=np.int64)

    @property
    def runtimes(self) -> np.ndarray:
        """(N, 2) runtimes, column 0 CPU, column 1 GPU."""
        return np.array([(r.runtime_cpu, r.runtime_gpu) for r in self.rows], dtype=np.float64)

    def __len__(self) -> int:
        return len(self.rows)

    def subset(self, indices: Sequence[int]) -> DevmapData:
        return DevmapData(
            self.platform, self.variant, [self.rows[i] for i in indices], [self.graphs[i] for i in indices]
        )


def load_devmap(
    source_dir: str | os.PathLike,
    data_dir: str | os.PathLike,
    platform: str,
    variant: str = "clang22",
    rows: Sequence[int] | None = None,
) -> DevmapData:
    """Load the built graphs of one platform and variant (build them first with :func:`build_devmap`).

    Args:
        source_dir: Directory with ``cgo17-<platform>.csv`` (labels, auxiliary inputs and runtimes).
        data_dir: Where :func:`build_devmap` wrote the graphs.
        platform: ``"amd"`` or ``"nvidia"``.
        variant: ``"clang22"`` or ``"ncc"``.
        rows: Only these row indices (default: all).

    Raises:
        ProgramlError: Unknown platform/variant, or a graph is missing (build first) or disagrees with the CSV.
    """
    if platform not in PLATFORMS:
        raise ProgramlError(f"unknown devmap platform {platform!r} (expected amd or nvidia)")
    if variant not in VARIANTS:
        raise ProgramlError(f"unknown devmap variant {variant!r} (expected one of {', '.join(VARIANTS)})")
    table = read_platform_csv(Path(source_dir) / f"cgo17-{platform}.csv")
    selected = [table[i] for i in rows] if rows is not None else table
    graphs = []
    for row in selected:
        path = _graph_path(Path(data_dir), variant, platform, row.name)
        try:
            graph = ProgramGraph.FromString(path.read_bytes())
        except FileNotFoundError:
            raise ProgramlError(f"{path}: missing; build the devmap graphs first") from None
        label = list(graph.features.feature["devmap_label"].int64_list.value)
        if label != [row.label]:
            raise ProgramlError(f"{path}: devmap_label {label} disagrees with the CSV ({row.label})")
        graphs.append(graph)
    return DevmapData(platform, variant, list(selected), graphs)


# ---------------------------------------------------------------------------------------------------------------
# Cross-validation


def stratified_rows(labels: Sequence[int], size: int, seed: int = 204) -> list[int]:
    """A seeded sample of about ``size`` of the rows, stratified by ``labels`` (0/1), sorted (quick looks, tests).

    Each class contributes ``round(size * class share)`` rows, drawn by a permutation of its rows with
    ``numpy.random.default_rng(seed)`` (class 0 first), so the sample of ``size`` rows is the same on both platforms
    when ``labels`` are one platform's (``programl train devmap --subset`` uses the AMD labels).

    Raises:
        ValueError: ``size`` is not in ``2..len(labels)``.
    """
    labels = np.asarray(labels)
    if not 2 <= size <= len(labels):
        raise ValueError(f"a sample of {size} rows is not in 2..{len(labels)}")
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for label in (0, 1):
        members = np.flatnonzero(labels == label)
        take = round(size * len(members) / len(labels))
        chosen.extend(rng.permutation(members)[:take].tolist())
    return sorted(chosen)


@dataclass(frozen=True)
class Split:
    """Indices of one cross-validation fold."""

    fold: int
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def cross_validation_splits(labels: Sequence[int], n_folds: int = 10, seed: int = 204) -> list[Split]:
    """Rotating train/validation/test splits of a seeded, stratified ``n_folds``-fold partition
    (docs/spec/tasks.md#device-mapping).

    The examples are partitioned into ``n_folds`` folds with the class proportions of ``labels`` (scikit-learn's
    ``StratifiedKFold(shuffle=True, random_state=seed)``). Split ``k`` tests on fold ``k``, validates on fold
    ``(k + 1) % n_folds`` and trains on the others (80/10/10 for 10 folds): every example is tested exactly once, and
    the validation set used to choose the epoch is disjoint from the test set.

    Raises:
        ValueError: ``n_folds < 3``, or a class has fewer than ``n_folds`` examples.
    """
    from sklearn.model_selection import StratifiedKFold

    if n_folds < 3:
        raise ValueError(f"need at least 3 folds for train/validation/test, got {n_folds}")
    labels = np.asarray(labels)
    kfold = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    folds = [np.sort(test) for _, test in kfold.split(np.zeros(len(labels)), labels)]
    splits = []
    for k in range(n_folds):
        val = folds[(k + 1) % n_folds]
        train = np.sort(np.concatenate([folds[j] for j in range(n_folds) if j not in (k, (k + 1) % n_folds)]))
        splits.append(Split(k, train, val, folds[k]))
    return splits
