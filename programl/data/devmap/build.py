"""The DevMap graphs: built per row and variant from the data set's files, resumably, then loaded with their rows
(:mod:`programl.data.devmap`)."""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from programl.data.devmap.download import MANIFEST_FILE, check_sources, extract_sources
from programl.data.devmap.manifest import (
    PLATFORMS,
    DevmapRow,
    ManifestRow,
    derive_manifest,
    opencl_source,
    read_manifest,
    read_platform_csv,
)
from programl.data.manifest import Manifest
from programl.data.pipeline import run_tasks
from programl.data.report import BuildReport as _BuildReport
from programl.exceptions import ProgramlError
from programl.proto import ProgramGraph
from programl.util.fs import atomic_write_bytes, atomic_write_text

__all__ = ["VARIANTS", "BuildReport", "DevmapData", "build_devmap", "devmap_features"]

VARIANTS = ("clang22", "ncc")


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
        platform, variant: The platform's and the variant's.
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


def _load_devmap(
    source_dir: str | os.PathLike,
    data_dir: str | os.PathLike,
    platform: str,
    variant: str = "clang22",
    rows: Sequence[int] | None = None,
) -> DevmapData:
    """Load the built graphs of one platform and variant (build them first with :func:`build_devmap`): what
    :class:`programl.datasets.DevMap` reads (its ``load_graphs()`` gives them to a user).

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
