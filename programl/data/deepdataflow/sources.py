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

* **Download**: ``<data>/<path>`` (default ``downloads/<the URL's file name>``) by
  :func:`programl.data.download.fetch`: kept when its sha256 matches, else downloaded (streamed to a temporary file,
  renamed into place only when the checksum matches), so a rerun resumes and a broken download leaves nothing.
* **Unpack**: into ``<work>/archives/<archive file name>-<sha256[:12]>`` (``<work>`` is ``OUT/sources`` for
  ``programl dataset build``; sources that share an archive share its tree), through a temporary folder renamed
  into place when complete, so an interrupted unpack is redone. Only plain files and folders inside the tree are
  unpacked (tar's ``data`` filter; zip members checked the same way).
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
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

from programl.data.deepdataflow.inputs import Input, setting_tag
from programl.exceptions import ProgramlError
from programl.graph_builder import clang, flang

__all__ = ["COMPILERS", "LANGUAGES", "archive_files", "archive_inputs", "cache_path", "fetch_archive", "unpack_archive"]

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
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+-]*$")


def _check(source: dict[str, Any]) -> None:
    """Raise ProgramlError for a malformed archive source (before anything is downloaded)."""
    name = source.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ProgramlError(f"archive source: 'name' must be letters, digits, _, + or - (got {name!r})")
    for key in ("url", "sha256"):
        if not isinstance(source.get(key), str) or not source[key]:
            raise ProgramlError(f"archive source {name}: '{key}' is required")
    if not re.fullmatch(r"[0-9a-f]{64}", source["sha256"]):
        raise ProgramlError(f"archive source {name}: 'sha256' must be 64 lower-case hex digits")
    if not (source.get("licence") or source.get("license")):
        raise ProgramlError(f"archive source {name}: 'licence' is required (the archive's licence)")
    unknown = set(source) - _KEYS
    if unknown:
        raise ProgramlError(f"archive source {name}: unknown keys {', '.join(sorted(unknown))}")
    files = source.get("files")
    if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
        raise ProgramlError(f"archive source {name}: 'files' must be a non-empty list of globs")
    for compiler in source.get("compilers", ()):
        if compiler not in COMPILERS:
            raise ProgramlError(
                f"archive source {name}: unknown compiler {compiler!r} (expected {', '.join(COMPILERS)})"
            )
    for key in ("includes", "files", "exclude"):
        for entry in source.get(key, ()):
            if entry.startswith("/") or ".." in PurePosixPath(entry).parts:
                raise ProgramlError(f"archive source {name}: '{key}' entry {entry!r} must stay inside the tree")


def cache_path(source: dict[str, Any]) -> str:
    return source.get("path") or f"downloads/{os.path.basename(urlparse(source['url']).path)}"


def fetch_archive(source: dict[str, Any], data_dir: str | os.PathLike) -> Path:
    """The source's archive in the cache under ``data_dir``, downloaded (sha256-checked) when missing.

    Raises:
        ProgramlError: The download failed or its checksum differs (nothing is left in the cache then).
    """
    from programl.data.download import fetch

    return fetch(Path(data_dir) / cache_path(source), source["sha256"], url=source["url"])


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


def unpack_archive(archive: str | os.PathLike, destination: str | os.PathLike) -> Path:
    """Unpack a ``.tar(.gz|.bz2|.xz)``, ``.tgz`` or ``.zip`` into ``destination`` (atomically: a temporary folder
    renamed into place; a complete ``destination`` is kept as it is). Returns the tree the globs are relative to:
    the single top folder when there is one, else ``destination``.

    Raises:
        ProgramlError: The archive cannot be read, or a member points outside it.
    """
    archive, destination = Path(archive), Path(destination)
    if not destination.is_dir():
        destination.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".part", dir=destination.parent))
        try:
            if zipfile.is_zipfile(archive):
                with zipfile.ZipFile(archive) as z:
                    z.extractall(scratch, members=_safe_members(z))
            else:
                with tarfile.open(archive, "r:*") as t:
                    t.extractall(scratch, filter="data")
            os.replace(scratch, destination)
        except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError) as error:
            shutil.rmtree(scratch, ignore_errors=True)
            if isinstance(error, OSError) and not isinstance(error, tarfile.TarError) and error.filename:
                raise  # a full disk: the command says so
            raise ProgramlError(f"{archive}: cannot unpack ({error})") from None
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
    entries = [e for e in destination.iterdir() if not e.name.startswith(".")]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else destination


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
    _check(source)
    name = source["name"]
    archive = fetch_archive(source, data_dir)
    tree = unpack_archive(archive, Path(work_dir) / "archives" / f"{archive.name}-{source['sha256'][:12]}")
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
