"""The DevMap data set's tables: the platforms' ``cgo17-<platform>.csv`` and the clang-22 manifest (which files a
kernel-with-input uses and its flags; :mod:`programl.data.devmap`)."""

from __future__ import annotations

import csv
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from programl.exceptions import ProgramlError

__all__ = [
    "AUX_MEDIANS",
    "CLANG22_BASE_FLAGS",
    "PLATFORMS",
    "PLATFORM_NAMES",
    "DevmapRow",
    "ManifestRow",
    "derive_manifest",
    "opencl_source",
    "read_manifest",
    "read_platform_csv",
]

PLATFORMS = ("amd", "nvidia")
PLATFORM_NAMES = {"amd": "AMD Tahiti 7970", "nvidia": "NVIDIA GTX 970"}

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
