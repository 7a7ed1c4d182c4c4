"""The ``archive`` source kind of data-set recipes: a public source archive (a PyPI sdist, a Debian ``.orig.tar``),
downloaded once, checked by sha256, unpacked, and its C, C++, OpenCL, CUDA and Fortran files compiled with one or
more compilers at each setting (``datasets/deepdataflow22-wide``).

A source of a recipe (:mod:`programl.data.deepdataflow.recipe`)::

    {"kind": "archive", "name": "zstd",
     "url": "http://deb.debian.org/debian/pool/main/libz/libzstd/libzstd_1.5.4+dfsg2.orig.tar.xz",
     "sha256": "8cf4...", "licence": "BSD-3-Clause OR GPL-2.0-only",
     "path": "downloads/libzstd_1.5.4+dfsg2.orig.tar.xz",      # the cache, relative to --data (optional)
     "files": ["lib/**/*.c"], "exclude": ["lib/legacy/*"],      # globs, relative to the unpacked tree
     "includes": ["lib", "lib/common"], "defines": ["ZSTD_MULTITHREAD=0"],
     "compilers": ["clang-22", "clang-14"], "settings": [["-O0"], ["-O2"]],
     "group_depth": 2, "max_files": 200}

* **Check**: :func:`check_archive_source`, before anything is downloaded: known keys of the right JSON types, an
  ``http(s)`` URL, ``path`` a file in ``downloads/`` (relative, normalised), ``includes``, ``files`` and ``exclude``
  inside the tree, ``settings``, ``flags`` and ``defines`` that a recipe may give
  (:func:`programl.data.deepdataflow.recipe.check_recipe_flags`: no flag that loads or runs other code).
* **Download**: ``<data>/<path>`` (default ``downloads/<the URL's file name>``) by
  :func:`programl.data.download.fetch`: kept when its sha256 matches, else downloaded (streamed to a temporary file,
  renamed into place only when the checksum matches), so a rerun resumes and a broken download leaves nothing. A
  download stops at ``size`` (the archive's bytes, when the source states them) or at
  :data:`~programl.data.download.MAX_DOWNLOAD_BYTES`, and is refused.
* **Unpack**: into ``<work>/archives/<archive file name>-<sha256[:12]>`` (``<work>`` is ``OUT/sources`` for
  ``programl dataset build``; sources that share an archive share its tree), through a temporary folder renamed
  into place when complete, so an interrupted unpack is redone. Only the members a compile may read are unpacked
  (:func:`keep_member`: files with a source or header suffix anywhere, and files without a suffix), only plain
  files, folders and links inside the tree (tar's ``data`` filter; zip members checked the same way), and at most
  :data:`MAX_MEMBERS` members and :data:`MAX_UNPACKED_BYTES` bytes: past either cap the archive is refused in one
  line and nothing is left.
  When the archive holds a single top folder (``zstd-1.5.4/``, as sdists and Debian tarballs do), the globs are
  relative to it.
* **Files**: every file matching one of ``files`` (``**`` spans folders) and none of ``exclude``, in path order;
  the language comes from the suffix (:data:`LANGUAGES`). ``max_files`` (and the ``--size`` of the build) keeps
  the first files of a seeded order, so the files of a smaller build are a subset of those of a larger one.
* **Compilers**: ``clang-22`` (C, C++, OpenCL, CUDA), ``clang-14`` (the same; its bitcode read by LLVM 22,
  :mod:`programl.graph_builder.clang`), ``flang-22`` (Fortran); each file is compiled by every listed compiler that
  knows its language, at every setting (default ``[["-O0"]]``), with ``-I<tree>/<include>`` for each of
  ``includes`` and ``-D<define>`` for each of ``defines`` after the setting. ``flags`` adds flags as they are.
* **Names**: ``<name>.<path with / as _, without suffix>.<compiler>-<setting>.<suffix>``, e.g.
  ``zstd.lib_compress_zstd_compress.clang14-O2.c``: the compiler is part of the name, so the graphs of one file by
  two compilers are two examples (of one group).
* **Groups** (the split unit): ``<name>`` for the whole archive (``group_depth`` 0, the default: a library stays
  in one split), or ``<name>/<the first group_depth folders of the file's path>`` for big archives whose
  sub-folders are separate programs (``scipy/integrate/quadpack``).

A file that does not compile is an input like any other: the build records its failure in the manifest.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

from programl.data.deepdataflow.checks import (
    DOWNLOADS,
    _shown,
    check_defines,
    check_describing,
    check_field,
    check_recipe_flags,
    check_relative_path,
    check_settings,
    check_strings,
    check_url,
)
from programl.data.deepdataflow.inputs import Input, setting_tag
from programl.exceptions import ProgramlError
from programl.graph_builder import clang, flang

__all__ = [
    "COMPILERS",
    "HEADER_SUFFIXES",
    "LANGUAGES",
    "MAX_MEMBERS",
    "MAX_UNPACKED_BYTES",
    "archive_files",
    "archive_inputs",
    "cache_path",
    "check_archive_source",
    "fetch_archive",
    "keep_member",
    "unpack_archive",
]

#: Suffix (lower case) -> language (clang's ``-x`` name, or ``fortran``).
LANGUAGES = {**clang.LANGUAGES, **dict.fromkeys(flang.FORTRAN_SUFFIXES, "fortran")}
#: Compiler -> the languages it compiles.
COMPILERS = {
    "clang-22": ("c", "c++", "cl", "cuda"),
    "clang-14": ("c", "c++", "cl", "cuda"),
    "flang-22": ("fortran",),
}
_DEFAULT_COMPILER = {"c": "clang-22", "c++": "clang-22", "cl": "clang-22", "cuda": "clang-22", "fortran": "flang-22"}
_KEYS = {
    "kind", "name", "url", "sha256", "licence", "license", "path", "files", "exclude", "includes", "defines", "flags",
    "compilers", "settings", "group_depth", "max_files", "homepage", "provenance", "notes", "size",
}  # fmt: skip
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]*")
#: Suffixes (lower case) of files that are included rather than compiled: unpacked with the sources.
HEADER_SUFFIXES = frozenset(
    {".h", ".hh", ".hpp", ".hxx", ".h++", ".hp", ".inc", ".inl", ".ipp", ".tcc", ".tpp", ".txx", ".def", ".cuh", ".fi",
     ".fh", ".cmn"}
)  # fmt: skip
_KEPT_SUFFIXES = frozenset(LANGUAGES) | HEADER_SUFFIXES
#: The most bytes the members an archive source keeps may unpack to (a few hundred megabytes for the biggest
#: sources of ``datasets/deepdataflow22-wide``); a larger archive is refused, not unpacked until the disk is full.
MAX_UNPACKED_BYTES = 1 << 30
#: The most members an archive may have (sdists and Debian source tarballs have thousands).
MAX_MEMBERS = 200_000
#: The note, in an unpacked tree, of its single top folder.
_TOP_FILE = ".programl-top"


def check_archive_source(source: dict[str, Any]) -> None:
    """Raise ProgramlError for a malformed archive source, before anything is downloaded: an unknown key, a field of
    the wrong JSON type, a URL that is not http(s), a path outside ``<data>/downloads/`` or outside the tree, a flag
    or define a recipe may not give (:func:`programl.data.deepdataflow.recipe.check_recipe_flags`)."""
    name = source.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ProgramlError(f"archive source: 'name' must be letters, digits, _, + or - (got {_shown(name)})")
    where = f"archive source {name}"
    unknown = set(source) - _KEYS
    if unknown:
        raise ProgramlError(f"{where}: unknown keys {', '.join(_shown(k) for k in sorted(unknown))}")
    for key in ("url", "sha256"):
        if not isinstance(source.get(key), str) or not source[key]:
            raise ProgramlError(f"{where}: '{key}' is required")
    check_url(source["url"], f"{where}: 'url'")
    if not re.fullmatch(r"[0-9a-f]{64}", source["sha256"]):
        raise ProgramlError(f"{where}: 'sha256' must be 64 lower-case hex digits")
    if not (source.get("licence") or source.get("license")):
        raise ProgramlError(f"{where}: 'licence' is required (the archive's licence)")
    check_describing(source, where)
    files = source.get("files")
    if not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files):
        raise ProgramlError(f"{where}: 'files' must be a non-empty list of globs")
    for key in ("exclude", "includes", "compilers"):
        if key in source:
            check_strings(source[key], f"{where}: '{key}'")
    for compiler in source.get("compilers", ()):
        if compiler not in COMPILERS:
            raise ProgramlError(f"{where}: unknown compiler {_shown(compiler)} (expected {', '.join(COMPILERS)})")
    for key in ("includes", "files", "exclude"):
        for entry in source.get(key, ()):
            if entry.startswith("/") or ".." in PurePosixPath(entry).parts:
                raise ProgramlError(f"{where}: '{key}' entry {_shown(entry)} must stay inside the tree")
    for include in source.get("includes", ()):
        check_relative_path(include, f"{where}: 'includes' entry")
    if "defines" in source:
        check_defines(source["defines"], f"{where}: 'defines'")
    if "flags" in source:
        check_recipe_flags(source["flags"], f"{where}: 'flags'")
    if "settings" in source:
        check_settings(source["settings"], f"{where}: 'settings'")
    for key, minimum in (("group_depth", 0), ("max_files", 1), ("size", 1)):
        if key in source:
            check_field(source[key], int, f"{where}: '{key}'", minimum=minimum)
    if "path" in source:
        path = check_relative_path(source["path"], f"{where}: 'path'")
        if path.split("/")[0] != DOWNLOADS or path.count("/") < 1:
            raise ProgramlError(f"{where}: 'path' {_shown(path)} must be a file in {DOWNLOADS}/ (the download cache)")
    else:
        file_name = os.path.basename(urlparse(source["url"]).path)
        if not file_name or file_name in (".", "..") or "\\" in file_name or file_name.startswith("."):
            raise ProgramlError(f"{where}: the URL names no file to keep in {DOWNLOADS}/ (give 'path')")


def cache_path(source: dict[str, Any]) -> str:
    """The archive's place in the download cache, relative to the data directory: ``path``, else
    ``downloads/<the URL's file name>`` (:func:`check_archive_source` keeps both inside ``downloads/``)."""
    return source.get("path") or f"{DOWNLOADS}/{os.path.basename(urlparse(source['url']).path)}"


def fetch_archive(source: dict[str, Any], data_dir: str | os.PathLike) -> Path:
    """The source's archive in the cache under ``data_dir``, downloaded (sha256-checked) when missing.

    Raises:
        ProgramlError: The download failed, has more bytes than the source's ``size`` (or than
            :data:`~programl.data.download.MAX_DOWNLOAD_BYTES`), or its checksum differs (nothing is left in the
            cache then).
    """
    from programl.data.download import MAX_DOWNLOAD_BYTES, fetch

    most = min(source.get("size") or MAX_DOWNLOAD_BYTES, MAX_DOWNLOAD_BYTES)  # the size a recipe states, if less
    return fetch(Path(data_dir) / cache_path(source), source["sha256"], url=source["url"], max_bytes=most)


def _safe_members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    members = []
    for info in archive.infolist():
        parts = PurePosixPath(info.filename).parts
        if info.filename.startswith("/") or ".." in parts or "\\" in info.filename:
            raise ProgramlError(f"{archive.filename}: member {info.filename!r} points outside the archive")
        if (info.external_attr >> 16) & 0o170000 not in (0, 0o100000, 0o040000):  # links, devices
            continue
        members.append(info)
    return members


class _Limits:
    """Counts an archive's members and the bytes unpacked, refusing (one line) past the caps."""

    def __init__(self, archive: Path, max_bytes: int, max_members: int) -> None:
        self.archive, self.max_bytes, self.max_members = archive, max_bytes, max_members
        self.members = self.bytes = 0
        self.tops: dict[str, bool] = {}  # first path part -> whether it is a folder

    def member(self, name: str, is_dir: bool) -> None:
        self.members += 1
        if self.members > self.max_members:
            raise ProgramlError(f"{self.archive}: has more than {self.max_members:,} members (refused)")
        parts = PurePosixPath(name).parts
        if parts:
            self.tops[parts[0]] = self.tops.get(parts[0], False) or is_dir or len(parts) > 1

    def unpacked(self, size: int) -> None:
        self.bytes += max(size, 0)
        if self.bytes > self.max_bytes:
            raise ProgramlError(
                f"{self.archive}: the members kept unpack to more than {self.max_bytes:,} bytes (refused)"
            )

    def top(self) -> str:
        """The single top folder of the archive ('' when there is none), from all of its members."""
        tops = {name: is_dir for name, is_dir in self.tops.items() if not name.startswith(".")}
        return next(iter(tops)) if len(tops) == 1 and next(iter(tops.values())) else ""


def _tar_members(archive: tarfile.TarFile, keep, limits: _Limits):  # noqa: ANN001, ANN202
    sizes: dict[str, int] = {}
    for member in archive:
        limits.member(member.name, member.isdir())
        if member.isreg():
            sizes[member.name] = member.size
        if member.isdir() or not keep(member.name):
            continue
        limits.unpacked(member.size if member.isreg() else sizes.get(member.linkname, 0) if member.islnk() else 0)
        yield member


def unpack_archive(
    archive: str | os.PathLike,
    destination: str | os.PathLike,
    keep: Callable[[str], bool] | None = None,
    max_bytes: int | None = None,
    max_members: int | None = None,
) -> Path:
    """Unpack a ``.tar(.gz|.bz2|.xz)``, ``.tgz`` or ``.zip`` into ``destination`` (atomically: a temporary folder
    renamed into place; a complete ``destination`` is kept as it is). Returns the tree the globs are relative to:
    the single top folder when there is one (among all members, kept or not), else ``destination``.

    Args:
        archive: The archive.
        destination: The folder to make.
        keep: Which members to unpack, by their path in the archive (None: all); the others are never written.
        max_bytes: The most bytes the members kept may have (default :data:`MAX_UNPACKED_BYTES`).
        max_members: The most members the archive may have (default :data:`MAX_MEMBERS`).

    Raises:
        ProgramlError: The archive cannot be read, a member points outside it, or it passes a cap (one line;
            nothing is left then).
    """
    archive, destination = Path(archive), Path(destination)
    keep = keep or (lambda name: True)
    limits = _Limits(archive, MAX_UNPACKED_BYTES if max_bytes is None else max_bytes, max_members or MAX_MEMBERS)
    if not destination.is_dir():
        destination.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".part", dir=destination.parent))
        try:
            if zipfile.is_zipfile(archive):
                with zipfile.ZipFile(archive) as z:
                    members = []
                    for info in _safe_members(z):
                        limits.member(info.filename, info.is_dir())
                        if not info.is_dir() and keep(info.filename):
                            limits.unpacked(info.file_size)  # zipfile writes no more than file_size
                            members.append(info)
                    z.extractall(scratch, members=members)
            else:
                with tarfile.open(archive, "r:*") as t:
                    t.extractall(scratch, members=_tar_members(t, keep, limits), filter="data")
            top = limits.top()
            if top:
                (scratch / top).mkdir(exist_ok=True)
            (scratch / _TOP_FILE).write_text(top, encoding="utf-8")
            os.replace(scratch, destination)
        except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError) as error:
            shutil.rmtree(scratch, ignore_errors=True)
            if isinstance(error, OSError) and not isinstance(error, tarfile.TarError) and error.filename:
                raise  # a full disk: the command says so
            raise ProgramlError(f"{archive}: cannot unpack ({error})") from None
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
    marker = destination / _TOP_FILE
    if marker.is_file():  # the top folder among all members, noted when unpacked
        top = marker.read_text(encoding="utf-8").strip()
        return destination / top if top and (destination / top).is_dir() else destination
    entries = [e for e in destination.iterdir() if not e.name.startswith(".")]  # unpacked whole, before the note
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else destination


def keep_member(name: str) -> bool:
    """Whether an archive source unpacks a member (by its path in the archive): a file with a source or header suffix
    (:data:`LANGUAGES`, :data:`HEADER_SUFFIXES`), wherever it is, since a file compiled may include any of them
    (``#include "../common/x.h"``, a ``.c`` file that includes another), or a file without a suffix (headers such as
    ``Eigen/Core``). The files the globs pick are among them; documents, data and the rest are never written. The
    choice is the same for every source, so sources of one archive share its tree."""
    suffix = PurePosixPath(name).suffix.lower()
    return not suffix or suffix in _KEPT_SUFFIXES


def _matches(path: str, patterns: Sequence[str]) -> bool:
    """Whether ``path`` (relative, with /) matches a glob: ``*`` within a folder, ``**/`` any folders (or none)."""
    for pattern in patterns:
        regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*")
        regex = regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        if re.fullmatch(regex, path):
            return True
    return False


def archive_files(tree: str | os.PathLike, files: Sequence[str], exclude: Sequence[str] = ()) -> list[str]:
    """The paths (relative to ``tree``, with /) of the files that match ``files`` and not ``exclude``, sorted;
    only suffixes of :data:`LANGUAGES`."""
    tree = Path(tree)
    found = []
    for root, dirs, names in os.walk(tree):
        dirs.sort()
        for name in names:
            path = Path(root) / name
            relative = path.relative_to(tree).as_posix()
            if path.suffix.lower() not in LANGUAGES or not path.is_file() or path.is_symlink():
                continue
            if _matches(relative, files) and not _matches(relative, exclude):
                found.append(relative)
    return sorted(found)


def _order(seed: int, key: str) -> bytes:
    return hashlib.sha256(f"{seed}:{key}".encode()).digest()


def _group(name: str, relative: str, depth: int) -> str:
    folders = PurePosixPath(relative).parts[:-1][:depth] if depth > 0 else ()
    return "/".join((name, *folders))


def _stem(relative: str) -> str:
    path = PurePosixPath(relative)
    stem = str(path.with_suffix("")) if path.suffix else relative
    return re.sub(r"[^A-Za-z0-9_.+=-]", "_", stem.replace("/", "_"))


def archive_inputs(
    source: dict[str, Any],
    data_dir: str | os.PathLike,
    work_dir: str | os.PathLike,
    size: int | None = None,
    seed: int = 204,
) -> list[Input]:
    """The inputs of an ``archive`` source (module docstring): fetched, unpacked, one input per file, compiler and
    setting.

    Args:
        source: The recipe's source.
        data_dir: The data directory (the download cache is under it).
        work_dir: Where archives are unpacked (``<work_dir>/archives/``).
        size: Most files (None: ``max_files``, else all).
        seed: The recipe's seed (the order in which files are taken).

    Raises:
        ProgramlError: A malformed source, a failed download or checksum, an archive that cannot be unpacked.
    """
    check_archive_source(source)
    name = source["name"]
    archive = fetch_archive(source, data_dir)
    folder = Path(work_dir) / "archives" / f"{archive.name}-{source['sha256'][:12]}"
    tree = unpack_archive(archive, folder, keep_member)
    files = archive_files(tree, source["files"], source.get("exclude", ()))
    if not files:
        raise ProgramlError(f"archive source {name}: no file of {archive.name} matches {source['files']}")
    caps = [c for c in (source.get("max_files"), size) if c is not None]
    if caps:
        files = sorted(sorted(files, key=lambda f: _order(seed, f"{name}:{f}"))[: min(caps)])
    compilers = source.get("compilers") or sorted(set(_DEFAULT_COMPILER.values()))
    settings = [tuple(s) for s in source.get("settings", [["-O0"]])]
    extra = [f"-I{tree / include}" for include in source.get("includes", ())]
    extra += [f"-D{define}" for define in source.get("defines", ())]
    extra += list(source.get("flags", ()))
    depth = int(source.get("group_depth", 0))
    inputs = []
    seen: set[str] = set()
    for relative in files:
        suffix = PurePosixPath(relative).suffix
        language = LANGUAGES[suffix.lower()]
        stem = _stem(relative)
        for compiler in compilers:
            if language not in COMPILERS[compiler]:
                continue
            for setting in settings:
                item_name = f"{name}.{stem}.{compiler.replace('-', '')}-{setting_tag(setting)}{suffix.lower()}"
                if item_name in seen:  # foo.cc and foo.cpp, or names that differ only in characters made '_'
                    item_name = (
                        f"{name}.{stem}_{hashlib.sha256(relative.encode()).hexdigest()[:6]}"
                        + item_name[len(f"{name}.{stem}") :]
                    )
                seen.add(item_name)
                default = _DEFAULT_COMPILER[language] == compiler
                inputs.append(
                    Input(
                        name=item_name,
                        group=_group(name, relative, depth),
                        kind="source",
                        language=language if default else f"{language}@{compiler}",
                        flags=(*setting, *extra),
                        path=str(tree / relative),
                        source=f"{cache_path(source)}:{relative}",
                    )
                )
    return inputs
