"""The POJ-104 programs: the archive or directory they come from, its checks and download, and the programs read
from it, deduplicated (:mod:`programl.data.poj104`)."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import tarfile
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from programl.exceptions import ProgramlError
from programl.util.fs import sha256_file

__all__ = [
    "ARCHIVE",
    "ARCHIVE_SHA256",
    "CONTENT_SHA256",
    "NUM_CLASSES",
    "REPOSITORY_URL",
    "Program",
    "fetch_poj104",
    "read_programs",
]

NUM_CLASSES = 104
ARCHIVE = "poj104.tar.xz"
ARCHIVE_SHA256 = "040cfc2238bf86c93aac6e72d4cdd33929f919522919a5ccc41804db0d2a0b6f"
#: sha256 of the sorted lines ``<label>/<n>.cpp <sha256 of the file>`` of the 53,000 files (checks a download).
CONTENT_SHA256 = "3a3ab86f7098926872054b4532dfccf4d95384ad78a617d394e17837e5bbee36"
#: The public repository at the commit the archive was taken from (its folder ``codexglue/``).
REPOSITORY_URL = "https://github.com/guilhermeivo/dataset-poj-104/archive/28790c70.tar.gz"


@dataclass(frozen=True)
class Program:
    """One deduplicated POJ-104 program.

    Attributes:
        label: Class, 1..104.
        index: The number ``n`` of its file ``<label>/<n>.cpp`` (the lowest among identical copies).
        text: The source text.
    """

    label: int
    index: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.label}.{self.index}"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


#: What reading a damaged or non-tar archive raises (tarfile's own errors, and those of the decompressors under it).
_ARCHIVE_ERRORS = (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile)


def _archive_error(archive: object, error: BaseException) -> ProgramlError:
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return ProgramlError(f"{archive}: not a readable tar archive ({reason})")


def _program_files(source: Path) -> Iterable[tuple[str, bytes]]:
    """(``<label>/<n>.cpp``, bytes) of every program in the archive or directory.

    Raises:
        ProgramlError: A ``<label>/<n>.cpp`` of the directory is not a readable file, or the archive is damaged.
    """
    if source.is_dir():
        root = source / "codexglue" if (source / "codexglue").is_dir() else source
        for path in sorted(root.glob("*/*.cpp")):
            name = f"{path.parent.name}/{path.name}"
            if not path.is_file():
                raise ProgramlError(f"{root}: {name!r} is not a regular file (a program file is expected there)")
            try:
                data = path.read_bytes()
            except OSError as error:
                raise ProgramlError(f"{root}: {name!r} cannot be read ({error.strerror or error})") from None
            yield name, data
        return
    try:
        with tarfile.open(source) as archive:
            for member in archive:
                parts = member.name.split("/")
                if member.isfile() and len(parts) >= 2 and parts[-1].endswith(".cpp"):
                    yield f"{parts[-2]}/{parts[-1]}", archive.extractfile(member).read()
    except _ARCHIVE_ERRORS as error:
        raise _archive_error(source, error) from None


def read_programs(source: str | os.PathLike, verify: bool = True) -> list[Program]:
    """The deduplicated programs of ``poj104.tar.xz`` (or of a ``codexglue/`` directory), sorted by (label, index).

    Args:
        source: The archive, the directory holding it, or a (downloaded) ``codexglue/`` directory.
        verify: Check the archive's sha256, or a directory's :data:`CONTENT_SHA256`.

    Raises:
        ProgramlError: The source is missing, fails its check, holds no programs, cannot be read (a damaged
            archive), or has a ``<label>/<n>.cpp`` that is not a readable file.
    """
    source = Path(source)
    if source.is_dir() and (source / ARCHIVE).is_file():
        source = source / ARCHIVE
    if not source.exists():
        raise ProgramlError(f"{source}: missing (the POJ-104 archive {ARCHIVE} or a codexglue/ directory)")
    if verify and source.is_file() and sha256_file(source) != ARCHIVE_SHA256:
        raise ProgramlError(f"{source}: sha256 differs from the published {ARCHIVE_SHA256}")
    first: dict[bytes, tuple[int, int]] = {}
    labels: dict[bytes, set[int]] = defaultdict(set)
    texts: dict[bytes, str] = {}
    listing = []
    for name, data in _program_files(source):
        folder, file = name.split("/")
        digest = hashlib.sha256(data).digest()
        listing.append(f"{name} {digest.hex()}\n")
        try:
            label, index = int(folder), int(file[: -len(".cpp")])
        except ValueError:
            continue
        labels[digest].add(label)
        if digest not in first or (label, index) < first[digest]:
            first[digest] = (label, index)
            texts[digest] = data.decode("utf-8", "replace")
    if verify and source.is_dir():
        content = hashlib.sha256("".join(sorted(listing)).encode()).hexdigest()
        if content != CONTENT_SHA256:
            raise ProgramlError(f"{source}: contents differ from the published POJ-104 ({content})")
    programs = [Program(first[d][0], first[d][1], texts[d]) for d in first if len(labels[d]) == 1]
    if not programs:
        raise ProgramlError(f"{source}: no programs found")
    return sorted(programs, key=lambda p: (p.label, p.index))


def fetch_poj104(
    directory: str | os.PathLike,
    url: str = REPOSITORY_URL,
    mirrors: Sequence[str | os.PathLike | None] = (),
    verify: bool = True,
) -> Path:
    """Put POJ-104 into ``directory`` and return it: the archive or the ``codexglue`` directory (both are sources of
    :func:`read_programs`).

    1. ``directory/codexglue`` or ``directory/poj104.tar.xz`` already there is kept (the archive sha256-checked);
    2. else the first mirror that has the programs: a directory holding ``poj104.tar.xz`` (e.g.
       ``../shared/data/poj104``; linked or copied, sha256-checked) or the archive itself; a directory holding
       ``codexglue/``, or a directory of ``<label>/<n>.cpp`` files (an extracted ``codexglue/``), is linked as
       ``directory/codexglue`` (its contents are checked when :func:`read_programs` reads them);
    3. else the repository archive from ``url``, streamed to disk (:func:`programl.data.download.download_url`) and
       its ``codexglue/`` extracted into ``directory/codexglue``, the contents checked against
       :data:`CONTENT_SHA256`.

    Args:
        verify: Check the archive's sha256 and a download's contents (False: a source that is not the published
            POJ-104, e.g. tests' programs).

    Raises:
        ProgramlError: No mirror has the programs and the download failed, a checksum differs, or the downloaded
            archive is damaged or crafted (a member named ``.``/``..``, twice, or a directory where a program file
            belongs; see :func:`_codexglue_member`); one line, naming the archive and the member.
    """
    import shutil
    import tempfile

    from programl.data.download import download_url, fetch

    directory = Path(directory)
    target = directory / "codexglue"
    sha256 = ARCHIVE_SHA256 if verify else None
    if target.is_dir():
        return target
    if (directory / ARCHIVE).is_file():
        return fetch(directory / ARCHIVE, sha256, mirrors=mirrors)
    for mirror in (Path(m) for m in mirrors if m is not None):
        if (mirror / ARCHIVE).is_file() or (mirror.name == ARCHIVE and mirror.is_file()):
            return fetch(directory / ARCHIVE, sha256, mirrors=[mirror])
        programs = mirror / "codexglue" if (mirror / "codexglue").is_dir() else mirror
        if programs.is_dir() and next(programs.glob("*/*.cpp"), None) is not None:
            return _link_directory(programs, target)
    directory.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".codexglue.", dir=directory))
    try:
        archive = download_url(url, staging / "repository.tar.gz", None, timeout=300)
        try:
            with tarfile.open(archive) as tar:
                extracted: set[tuple[str, str]] = set()
                for member in tar:
                    out = _codexglue_member(url, member, extracted)
                    if out is not None:
                        out = staging / "codexglue" / out[0] / out[1]
                        out.parent.mkdir(parents=True, exist_ok=True)
                        with tar.extractfile(member) as data, open(out, "wb") as f:
                            shutil.copyfileobj(data, f, 1 << 20)
        except _ARCHIVE_ERRORS as error:
            raise _archive_error(url, error) from None
        read_programs(staging / "codexglue", verify=verify)
        os.replace(staging / "codexglue", target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _link_directory(source: Path, target: Path) -> Path:
    """``target`` as a symbolic link to the directory ``source`` (made beside it and renamed into place)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    link = target.parent / f".{target.name}.{os.getpid()}.link"
    link.unlink(missing_ok=True)
    os.symlink(source.resolve(), link, target_is_directory=True)
    os.replace(link, target)
    return target


def _codexglue_member(archive: str, member: tarfile.TarInfo, extracted: set[tuple[str, str]]) -> tuple[str, str] | None:
    """Where a repository archive's member goes under ``codexglue/``: ``(<label>, <file>)`` for a file
    ``.../codexglue/<label>/<file>``, None for members that are not extracted (anything else).

    Only plain names are extracted, each once, and only regular files, so that every output is a new file two
    levels under ``codexglue/``: a member named ``.``, ``..`` or with an empty part, a second member of the same
    name, or a ``.cpp`` that is a directory, link or device is a crafted archive.

    Raises:
        ProgramlError: Such a member (one line naming the archive and the member).
    """
    parts = member.name.split("/")
    if len(parts) < 3 or parts[-3] != "codexglue":
        return None
    folder, file = parts[-2], parts[-1]
    if not member.isfile():
        if file.endswith(".cpp"):
            kind = "a directory" if member.isdir() else "a link" if member.issym() or member.islnk() else "not a file"
            raise ProgramlError(f"{archive}: member {member.name!r} is {kind} where a program file is expected")
        return None
    if any(name in ("", ".", "..") for name in (folder, file)):
        raise ProgramlError(f"{archive}: member {member.name!r} is not a plain <label>/<file> name")
    if (folder, file) in extracted:
        raise ProgramlError(f"{archive}: member {member.name!r} is a second codexglue/{folder}/{file}")
    extracted.add((folder, file))
    return folder, file
