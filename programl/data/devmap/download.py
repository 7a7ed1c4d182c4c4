"""The DevMap data set's files: their URLs and checksums, their download, and the extraction of the OpenCL sources
and NCC's IR (:mod:`programl.data.devmap`)."""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from programl.data.download import download_url, fetch
from programl.exceptions import ProgramlError
from programl.util.fs import sha256_file

__all__ = ["MANIFEST_FILE", "SOURCES", "Source", "check_sources", "extract_sources", "fetch_file", "fetch_sources"]

MANIFEST_FILE = "devmap_clang22_manifest.csv"


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
