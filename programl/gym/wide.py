"""The wide C corpus as a benchmark data set: ``benchmark://wide-v0/<source>/<path>`` is the file ``<path>`` of a
public source archive, compiled by clang-22 at ``-O0`` with the archive's include folders and macros
(docs/gym.md#benchmarks).

The archives are the C and C++ sources of the wide DeepDataFlow-22 recipe (``datasets/deepdataflow22-wide``):
:data:`SOURCES` holds their URL, sha256, file globs, include folders and macros as that recipe gives them (a test
checks that they agree), and the recipe's code downloads, checks and unpacks them
(:mod:`programl.data.deepdataflow.sources`):

* **Download cache**: ``<data_dir>/downloads/<the URL's file name>`` when ``data_dir=`` or ``$PROGRAML_GYM_DATA``
  names a folder (the layout of ``programl dataset build --data DIR``, so that a data set build's downloads are
  reused), else ``<cache_dir>/downloads/`` (``cache_dir=``, ``$PROGRAML_GYM_CACHE``, default
  ``~/.cache/programl/gym``). An archive that is missing is downloaded there once, on first use, and kept only when
  its sha256 is the recipe's.
* **Unpacked** once into ``<cache_dir>/wide/<archive file name>-<sha256[:12]>`` (only source and header files,
  under the recipe code's caps on members and bytes).
* **Programs**: every file of a source that matches its globs (``files``, not ``exclude``), in path order; the
  recipe's ``max_files`` caps a data set build, not this list. ``<path>`` is relative to the archive's top folder,
  as the globs are: ``benchmark://wide-v0/lua/src/lapi.c``.

The Fortran sources of the recipe (BLAS, LAPACK, scipy's libraries; flang-22) are not part of this data set.
"""

from __future__ import annotations

import functools
import os
import urllib.parse
from pathlib import Path, PurePosixPath
from typing import Any

from programl.gym.errors import BenchmarkError

__all__ = [
    "LANGUAGES",
    "SOURCES",
    "archive_root",
    "compile_benchmark",
    "is_cached",
    "parse_uri",
    "source_files",
    "uris",
]

#: The scheme and host of the data set's URIs.
PREFIX = "benchmark://wide-v0/"
#: The suffixes of the files it compiles, and their clang language.
LANGUAGES = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++"}

#: The C and C++ archive sources of ``datasets/deepdataflow22-wide/recipe.json``, with the fields that fix a
#: program: where the archive is, its checksum, which files are programs and the flags they compile with.
SOURCES: dict[str, dict[str, Any]] = {
    "zstd": {
        "url": "http://deb.debian.org/debian/pool/main/libz/libzstd/libzstd_1.5.4+dfsg2.orig.tar.xz",
        "sha256": "8cf4bbb65e77ec348d052c8d6230eba66d435bddf64c8b5be2fcb16880c19953",
        "licence": "BSD-3-Clause OR GPL-2.0-only",
        "files": [
            "lib/common/*.c",
            "lib/compress/*.c",
            "lib/decompress/*.c",
            "lib/dictBuilder/*.c",
            "lib/legacy/*.c",
            "lib/deprecated/*.c",
            "programs/*.c",
        ],
        "includes": ["lib", "lib/common", "lib/compress", "lib/legacy"],
        "defines": ["ZSTD_LEGACY_SUPPORT=1", "ZSTD_MULTITHREAD"],
    },
    "brotli": {
        "url": "https://files.pythonhosted.org/packages/2f/c2/f9e977608bdf958650638c3f1e28f85a1b075f075ebbe77db8555463787b/Brotli-1.1.0.tar.gz",  # noqa: E501
        "sha256": "81de08ac11bcb85841e440c13611c00b67d3bf82698314928d0b676362546724",
        "licence": "MIT",
        "files": ["c/common/*.c", "c/dec/*.c", "c/enc/*.c", "c/tools/*.c"],
        "includes": ["c/include"],
    },
    "lua": {
        "url": "http://deb.debian.org/debian/pool/main/l/lua5.4/lua5.4_5.4.4.orig.tar.gz",
        "sha256": "164c7849653b80ae67bec4b7473b884bf5cc8d2dca05653475ec2ed27b9ebf61",
        "licence": "MIT",
        "files": ["src/*.c"],
        "defines": ["LUA_COMPAT_5_3", "LUA_USE_LINUX"],
    },
    "pycryptodome": {
        "url": "https://files.pythonhosted.org/packages/13/52/13b9db4a913eee948152a079fe58d035bd3d1a519584155da8e786f767e6/pycryptodome-3.21.0.tar.gz",  # noqa: E501
        "sha256": "f7787e0d469bdae763b876174cf2e6c0f7be79808af26b1da96f1a64bcf47297",
        "licence": "BSD-2-Clause and public domain",
        "files": ["src/*.c"],
        "exclude": ["src/*_template.c"],
        "includes": ["src", "src/libtom"],
        "defines": [
            "HAVE_STDINT_H",
            "PYCRYPTO_LITTLE_ENDIAN",
            "SYS_BITS=64",
            "LTC_NO_ASM",
            "HAVE_UINT128",
            "HAVE_CPUID_H",
            "HAVE_POSIX_MEMALIGN",
        ],
    },
    "erfa": {
        "url": "https://files.pythonhosted.org/packages/71/39/63cc8291b0cf324ae710df41527faf7d331bce573899199d926b3e492260/pyerfa-2.0.1.5.tar.gz",  # noqa: E501
        "sha256": "17d6b24fe4846c65d5e7d8c362dcb08199dc63b30a236aedd73875cc83e1f6c0",
        "licence": "BSD-3-Clause",
        "files": ["liberfa/erfa/src/*.c"],
        "exclude": ["liberfa/erfa/src/t_erfa_c*.c"],
    },
    "chipmunk": {
        "url": "https://files.pythonhosted.org/packages/ac/08/1513c868bc2a6bfa22d47acded27f5525c1db10bf1db4fdfa39160991616/pymunk-6.9.0.tar.gz",  # noqa: E501
        "sha256": "765f7c561a859a1b565bc517a47cc3992d6258e860f9174c533033c218af63c3",
        "licence": "MIT",
        "files": ["Chipmunk2D/src/*.c"],
        "includes": ["Chipmunk2D/include"],
    },
    "box2d": {
        "url": "http://deb.debian.org/debian/pool/main/b/box2d/box2d_2.4.1.orig.tar.gz",
        "sha256": "d6b4650ff897ee1ead27cf77a5933ea197cbeef6705638dd181adc2e816b23c2",
        "licence": "MIT",
        "files": ["src/**/*.cpp"],
        "includes": ["include", "src"],
    },
}


def _recipe_source(name: str) -> dict[str, Any]:
    """The source as the recipe code takes it (``kind``, ``name`` and the fields above)."""
    return {"kind": "archive", "name": name, **SOURCES[name]}


def _cache_dir(cache_dir: str | os.PathLike | None) -> Path:
    root = cache_dir or os.environ.get("PROGRAML_GYM_CACHE") or "~/.cache/programl/gym"
    return Path(root).expanduser()


def archive_root(data_dir: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None) -> Path:
    """The folder whose ``downloads/`` holds the archives (module docstring): ``data_dir`` (or
    ``$PROGRAML_GYM_DATA``) when given, else the cache folder."""
    root = data_dir or os.environ.get("PROGRAML_GYM_DATA") or None
    return Path(root).expanduser() if root else _cache_dir(cache_dir)


def is_cached(name: str, data_dir: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None) -> bool:
    """Whether source ``name``'s archive is in the download cache already (its checksum is checked when used)."""
    from programl.data.deepdataflow.sources import cache_path

    return (archive_root(data_dir, cache_dir) / cache_path(_recipe_source(name))).is_file()


def parse_uri(uri: str) -> tuple[str, str]:
    """``(source, path)`` of a ``benchmark://wide-v0/<source>/<path>`` URI, checked without reading anything: a known
    source, a relative path inside the archive, a C or C++ suffix.

    Raises:
        BenchmarkError: Any of these is not so (one line naming the URI).
    """
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "benchmark" or parsed.netloc != "wide-v0" or parsed.query or parsed.fragment:
        raise BenchmarkError(f"{uri}: not a {PREFIX}<source>/<path> URI")
    parts = [urllib.parse.unquote(p) for p in parsed.path.split("/")[1:]]
    if len(parts) < 2 or not parts[0]:
        raise BenchmarkError(f"{uri}: expected {PREFIX}<source>/<path>, e.g. {PREFIX}lua/src/lapi.c")
    name, path = parts[0], "/".join(parts[1:])
    if name not in SOURCES:
        raise BenchmarkError(f"{uri}: unknown source {name!r} of wide-v0 (known: {', '.join(SOURCES)})")
    if any(p in ("", ".", "..") for p in parts[1:]) or "\\" in path or "\0" in path:
        raise BenchmarkError(f"{uri}: the path must be a relative path inside the archive, without '.' or '..'")
    if PurePosixPath(path).suffix.lower() not in LANGUAGES:
        raise BenchmarkError(f"{uri}: not a C or C++ file (expected {', '.join(LANGUAGES)})")
    return name, path


def _tree(name: str, data_dir: str | os.PathLike | None, cache_dir: str | os.PathLike | None) -> Path:
    """The unpacked tree of source ``name`` (downloaded and unpacked when needed)."""
    from programl.data.deepdataflow.sources import fetch_archive, keep_member, unpack_archive
    from programl.exceptions import ProgramlError

    source = _recipe_source(name)
    try:
        archive = fetch_archive(source, archive_root(data_dir, cache_dir))
        folder = _cache_dir(cache_dir) / "wide" / f"{archive.name}-{source['sha256'][:12]}"
        try:
            return unpack_archive(archive, folder, keep_member)
        except OSError:
            if folder.is_dir():  # another process unpacked it first
                return unpack_archive(archive, folder, keep_member)
            raise
    except (ProgramlError, OSError) as error:
        raise BenchmarkError(f"{PREFIX}{name}: {error}") from None


@functools.lru_cache(maxsize=16)
def _files(name: str, tree: str) -> tuple[str, ...]:
    from programl.data.deepdataflow.sources import archive_files

    source = SOURCES[name]
    return tuple(
        f
        for f in archive_files(tree, source["files"], source.get("exclude", ()))
        if PurePosixPath(f).suffix.lower() in LANGUAGES
    )


def source_files(
    name: str, data_dir: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None
) -> list[str]:
    """The programs of source ``name``: paths relative to its tree, in order (downloads the archive if needed)."""
    if name not in SOURCES:
        raise BenchmarkError(f"unknown source {name!r} of wide-v0 (known: {', '.join(SOURCES)})")
    return list(_files(name, str(_tree(name, data_dir, cache_dir))))


def uris(data_dir: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None) -> list[str]:
    """Every URI of the data set, by source (in :data:`SOURCES`' order) and path."""
    return [
        PREFIX + name + "/" + urllib.parse.quote(path, safe="/+-_.")
        for name in SOURCES
        for path in source_files(name, data_dir, cache_dir)
    ]


def compile_benchmark(
    uri: str,
    timeout: float | None,
    data_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> tuple[str, str, str]:
    """``(ir, source text, language)`` of a URI: its file compiled by clang-22 at ``-O0`` with the source's
    ``-I<tree>/<include>`` and ``-D<define>`` flags.

    Raises:
        BenchmarkError: A malformed URI, a file that is not one of the source's programs, an archive that cannot be
            downloaded, checked or unpacked, a file that does not compile.
        UnsupportedCompiler: clang-22 is not installed.
    """
    from programl.exceptions import GraphCreationError
    from programl.graph_builder import clang

    name, path = parse_uri(uri)
    tree = _tree(name, data_dir, cache_dir)
    if path not in _files(name, str(tree)):
        raise BenchmarkError(f"{uri}: not a program of {name} (benchmark_uris('wide-v0') lists them)")
    source = SOURCES[name]
    flags = ["-O0", *(f"-I{tree / include}" for include in source.get("includes", ()))]
    flags += [f"-D{define}" for define in source.get("defines", ())]
    language = LANGUAGES[PurePosixPath(path).suffix.lower()]
    try:
        ir = clang.compile_file(str(tree / path), flags, language=language, timeout=timeout)
    except (GraphCreationError, TimeoutError) as error:
        raise BenchmarkError(f"{uri}: {error}") from None
    text = (tree / path).read_bytes().decode("utf-8", "replace")
    return ir, text, language
