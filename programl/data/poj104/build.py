"""The POJ-104 graphs: every program compiled and built at the chosen settings, resumably, in worker processes
(:mod:`programl.data.poj104`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from programl.data.manifest import Manifest
from programl.data.pipeline import run_tasks
from programl.data.poj104.compile import OPT_SETTINGS, compile_program, precompile_headers
from programl.data.poj104.download import Program, read_programs
from programl.data.report import BuildReport as _BuildReport
from programl.exceptions import ProgramlError
from programl.proto import ProgramGraph
from programl.util.fs import atomic_write_bytes, atomic_write_text

__all__ = ["BuildReport", "build_poj104", "graph_name", "poj104_examples"]


def graph_name(program: Program | str, setting_index: int) -> str:
    """``<label>.<n>.<i>`` (ProGraML's classifyapp file names)."""
    pid = program.id if isinstance(program, Program) else program
    return f"{pid}.{setting_index}"


def _label_graph(graph: ProgramGraph, label: int) -> ProgramGraph:
    graph.features.feature["poj104_label"].int64_list.value[:] = [label]
    return graph


@dataclass(frozen=True)
class _Task:
    program: Program
    setting_index: int
    pch: tuple[tuple[str, str], ...]
    output: str
    ir_output: str | None
    timeout: float


def _build_one(task: _Task) -> dict:
    """Compile, build and write one program at one setting (runs in a worker)."""
    from programl.graph_builder.llvm import graph_from_ir

    start = time.perf_counter()
    ir, recipe = compile_program(
        task.program.text, OPT_SETTINGS[task.setting_index], pch=dict(task.pch), timeout=task.timeout
    )
    compiled = time.perf_counter()
    graph = _label_graph(graph_from_ir(ir, module_name="-"), task.program.label)
    atomic_write_bytes(task.output, graph.SerializeToString(deterministic=True))
    if task.ir_output:
        atomic_write_text(task.ir_output, ir)
    return {
        "recipe": recipe.name,
        "nodes": len(graph.node),
        "edges": len(graph.edge),
        "compile_seconds": round(compiled - start, 3),
        "seconds": round(time.perf_counter() - start, 3),
    }


@dataclass
class BuildReport(_BuildReport):
    """What :func:`build_poj104` / :func:`build_legacy` did: the counts of :class:`programl.data.report.BuildReport`
    (built now, already there, failed ``(name, error)``, ...) and the programs compiled now per recipe."""

    recipes: dict[str, int] = field(default_factory=dict)


def _output_exists(path: Path) -> Callable[[object], bool]:
    return lambda _entry: path.is_file()


def build_poj104(
    source: str | os.PathLike,
    data_dir: str | os.PathLike,
    settings: Sequence[int] = (0,),
    *,
    programs: Sequence[Program] | None = None,
    jobs: int | None = None,
    timeout: float = 120,
    keep_ir: bool = False,
    retry_failed: bool = False,
    progress: Callable[[Iterable, int, str], Iterable] | None = None,
) -> BuildReport:
    """Compile and build the graphs of the programs at the given settings (module docstring).

    Args:
        source: ``poj104.tar.xz``, its directory, or a ``codexglue/`` directory.
        data_dir: Output directory.
        settings: Indices into :data:`OPT_SETTINGS` (default: -O0 only).
        programs: Build only these (default: all of :func:`read_programs`).
        jobs: Worker processes (default: all CPUs).
        timeout: Seconds per program and setting.
        keep_ir: Also write the IR.
        retry_failed: Retry programs the manifest records as failed (default: skip them).
        progress: Wraps the stream of finished programs (e.g. a tqdm bar).
    """
    start = time.perf_counter()
    data_dir = Path(data_dir)
    if programs is None:
        programs = read_programs(source)
    report = BuildReport()
    manifest = Manifest(data_dir / "manifest.jsonl", report)

    def count_recipe(entry: dict) -> None:
        if entry.get("recipe"):
            report.recipes[entry["recipe"]] = report.recipes.get(entry["recipe"], 0) + 1

    def describe(task: _Task) -> dict:
        return {
            "name": graph_name(task.program, task.setting_index),
            "program": task.program.id,
            "label": task.program.label,
            "setting": " ".join(OPT_SETTINGS[task.setting_index]),
            "sha256": task.program.sha256,
        }

    for index in settings:
        if not 0 <= index < len(OPT_SETTINGS):
            raise ProgramlError(f"unknown optimisation setting {index} (expected 0..{len(OPT_SETTINGS) - 1})")
        pch = tuple(precompile_headers(data_dir / "pch", OPT_SETTINGS[index]).items())
        tasks = []
        for program in programs:
            name = graph_name(program, index)
            output = data_dir / "graphs" / f"{name}.ProgramGraph.pb"
            if manifest.check(name, program.sha256, _output_exists(output), retry_failed=retry_failed):
                ir_output = str(data_dir / "ir" / f"{name}.ll") if keep_ir else None
                tasks.append(_Task(program, index, pch, str(output), ir_output, timeout))
        run_tasks(
            _build_one,
            tasks,
            manifest,
            describe,
            jobs=jobs,
            timeout=timeout,
            chunksize=64,
            progress=progress,
            description=f"POJ-104 {' '.join(OPT_SETTINGS[index])}",
            on_entry=count_recipe,
        )
    _finish(manifest, report, start)
    return report


def _finish(manifest: Manifest, report: BuildReport, start: float) -> None:
    """Compact the manifest (one line per name, sorted by name) when this build added to it; the wall time."""
    if manifest.changed:
        manifest.compact(manifest.entries[name] for name in sorted(manifest.entries))
    report.seconds = time.perf_counter() - start


def poj104_examples(
    data_dir: str | os.PathLike, program_ids: Iterable[str], settings: Sequence[int] = (0,)
) -> tuple[list[Path], list[str]]:
    """Graph files of the programs at the settings, and the names of those not built (compile failures)."""
    graphs = Path(data_dir) / "graphs"
    found, missing = [], []
    for pid in program_ids:
        for index in settings:
            path = graphs / f"{graph_name(pid, index)}.ProgramGraph.pb"
            (found if path.is_file() else missing).append(path if path.is_file() else graph_name(pid, index))
    return found, missing
