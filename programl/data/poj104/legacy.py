"""The legacy IR of POJ-104: 1,000 labelled IR files of ProGraML's tests, classifyapp's small extra test set
(:mod:`programl.data.poj104`)."""

from __future__ import annotations

import os
import re
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from programl.data.manifest import Manifest
from programl.data.pipeline import run_tasks
from programl.data.poj104.build import BuildReport, _finish, _label_graph, _output_exists
from programl.data.poj104.download import _ARCHIVE_ERRORS, _archive_error
from programl.exceptions import ProgramlError
from programl.util.fs import atomic_write_bytes, sha256_file

__all__ = [
    "LEGACY_ARCHIVE",
    "LEGACY_SHA256",
    "LEGACY_URL",
    "build_legacy",
    "fetch_legacy",
    "legacy_examples",
    "read_legacy_ir",
]

LEGACY_ARCHIVE = "llvm_ir.tar.bz2"
LEGACY_SHA256 = "5a42fd261f7714400168dddecd2a49de106bb93f9784c52276911db5669d4e09"
#: ProGraML's test fixture (Apache-2.0) with the 1,000 legacy IR files.
LEGACY_URL = "https://raw.githubusercontent.com/ChrisCummins/ProGraML/d5df3cc/tests/data/llvm_ir.tar.bz2"
_MODULE_ID = re.compile(r"^; ModuleID = '([^']*)'", re.MULTILINE)


def read_legacy_ir(archive: str | os.PathLike, verify: bool = True) -> list[tuple[str, int, str]]:
    """``(file name, label, IR text)`` of the 1,000 legacy IR files; the label is the class folder in each file's
    ModuleID (``.../test/71/2551.txt.cpp`` -> 71).

    Raises:
        ProgramlError: The archive is missing, has the wrong sha256, or cannot be read.
    """
    archive = Path(archive)
    if archive.is_dir():
        archive = archive / LEGACY_ARCHIVE
    if not archive.is_file():
        raise ProgramlError(f"{archive}: missing (download it from {LEGACY_URL})")
    if verify and sha256_file(archive) != LEGACY_SHA256:
        raise ProgramlError(f"{archive}: sha256 differs from the published {LEGACY_SHA256}")
    out = []
    try:
        with tarfile.open(archive) as tar:
            for member in sorted((m for m in tar if m.isfile() and m.name.endswith(".ll")), key=lambda m: m.name):
                text = tar.extractfile(member).read().decode("utf-8", "replace")
                match = _MODULE_ID.search(text)
                parts = match.group(1).split("/") if match else []
                try:
                    label = int(parts[-2])
                except (IndexError, ValueError):
                    continue
                out.append((os.path.basename(member.name), label, text))
    except _ARCHIVE_ERRORS as error:
        raise _archive_error(archive, error) from None
    return out


@dataclass(frozen=True)
class _LegacyTask:
    name: str
    label: int
    text: str
    output: str


def _build_legacy_one(task: _LegacyTask) -> dict:
    from programl.graph_builder.llvm import graph_from_ir

    start = time.perf_counter()
    graph = _label_graph(graph_from_ir(task.text, path=task.name), task.label)
    atomic_write_bytes(task.output, graph.SerializeToString(deterministic=True))
    return {"nodes": len(graph.node), "edges": len(graph.edge), "seconds": round(time.perf_counter() - start, 3)}


def build_legacy(
    archive: str | os.PathLike,
    data_dir: str | os.PathLike,
    *,
    jobs: int | None = None,
    timeout: float = 120,
    progress: Callable | None = None,
) -> BuildReport:
    """Build the graphs of the legacy IR files into ``data_dir/legacy`` (resumable, like :func:`build_poj104`)."""
    start = time.perf_counter()
    directory = Path(data_dir) / "legacy"
    report = BuildReport()
    manifest = Manifest(directory / "manifest.jsonl", report)
    tasks = []
    for name, label, text in read_legacy_ir(archive):
        output = directory / "graphs" / f"{name[:-3]}.ProgramGraph.pb"
        if manifest.check(name, None, _output_exists(output)):  # no key: the archive's sha256 is checked instead
            tasks.append(_LegacyTask(name, label, text, str(output)))
    run_tasks(
        _build_legacy_one,
        tasks,
        manifest,
        lambda t: {"name": t.name, "label": t.label},
        jobs=jobs,
        timeout=timeout,
        chunksize=64,
        progress=progress,
        description="legacy IR",
    )
    _finish(manifest, report, start)
    return report


def legacy_examples(data_dir: str | os.PathLike) -> list[Path]:
    """The built legacy graphs, sorted by file name."""
    return sorted((Path(data_dir) / "legacy" / "graphs").glob("*.ProgramGraph.pb"))


def fetch_legacy(directory: str | os.PathLike, mirrors: Sequence[str | os.PathLike | None] = ()) -> Path:
    """Put the legacy IR archive into ``directory``: from a mirror directory, else downloaded (sha256-checked,
    :func:`programl.data.download.fetch`)."""
    from programl.data.download import fetch

    return fetch(Path(directory) / LEGACY_ARCHIVE, LEGACY_SHA256, url=LEGACY_URL, mirrors=mirrors)
