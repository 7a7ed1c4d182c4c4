"""Benchmarks by URI, the data sets they come from, and their fixed train / validation / test splits
(docs/gym.md#benchmarks).

A benchmark is a program as LLVM 22 bitcode, verified by ``opt-22``, with the ``optnone`` attribute removed (clang
puts it on every function at ``-O0``, where it makes every pass skip the function). URIs, as CompilerGym writes them:

* ``file:///path/to/prog.c`` (also ``.cc``, ``.cpp``, ``.cxx``, ``.cl``, ``.ll``, ``.bc``; a plain path works too):
  the user's own program. Sources are compiled by clang-22 at ``-O0``; at most ``max_input_bytes`` are read, and
  only from a regular file.
* ``generator://llvm-stress-v0/<seed>``: ``llvm-stress-22 -seed=<seed>`` (seed 0 .. 2**32 - 1).
* ``generator://csmith-v0/<seed>``: ``csmith --seed <seed>``, compiled by clang-22 at ``-O0`` (needs the Debian
  packages ``csmith`` and ``libcsmith-dev``; without them loading says so in one line). Its C source is kept
  (:attr:`Benchmark.source`), so that the program can be run before and after optimisation.
* ``benchmark://poj104-v1/<label>/<n>``: POJ-104 program ``<label>/<n>.cpp`` (:mod:`programl.data.poj104`: the
  project's header and fallbacks, C++ at ``-O0``), from ``<data_dir>/poj104/poj104.tar.xz``.
* ``benchmark://devmap-v0/<benchmark>-<dataset>``: a DevMap OpenCL kernel with its row's flags
  (:mod:`programl.data.devmap`, ``spir64`` at ``-O0``), from ``<data_dir>/devmap``; its sources are extracted once
  into ``<cache_dir>/devmap``. (``llc-22`` has no ``spir64`` back end: object sizes are not defined for them.)
* ``benchmark://wide-v0/<source>/<path>``: file ``<path>`` of a public source archive of the wide C corpus (zstd,
  brotli, lua, pycryptodome, erfa, chipmunk, box2d), compiled by clang-22 at ``-O0`` with the archive's include
  folders and macros (:mod:`programl.gym.wide`: the archives are downloaded once into ``<data_dir>/downloads`` or
  ``<cache_dir>/downloads`` and unpacked into ``<cache_dir>/wide``).

``data_dir`` defaults to ``$PROGRAML_GYM_DATA``, else the shared research data beside a checkout
(:func:`programl.data.download.shared_data`); ``cache_dir`` to ``$PROGRAML_GYM_CACHE``, else
``~/.cache/programl/gym``.

Splits (:func:`split_of`): a benchmark's split is fixed by the SHA-256 of ``"<seed>:<uri>"``: its first 8 bytes as
an integer modulo 10 give 0-7 ``train``, 8 ``val``, 9 ``test`` (80 / 10 / 10 %). The default seed is 0. A URI's
split never depends on which other benchmarks exist.
"""

from __future__ import annotations

import functools
import hashlib
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from programl.exceptions import GraphCreationError, ProgramlError, UnsupportedCompiler
from programl.gym.errors import BenchmarkError
from programl.gym.state import Toolchain, assemble, disassemble, strip_optnone
from programl.gym.tools import ToolFailure, find_csmith, find_llvm_tool

__all__ = [
    "DATASETS",
    "DEFAULT_BENCHMARK",
    "DEFAULT_MAX_INPUT_BYTES",
    "SPLITS",
    "Benchmark",
    "benchmark_uris",
    "load_benchmark",
    "sample_uris",
    "split_of",
    "split_uris",
]

#: The data sets by name: what a URI of each looks like.
DATASETS = {
    "llvm-stress-v0": "generator://llvm-stress-v0/<seed>",
    "csmith-v0": "generator://csmith-v0/<seed>",
    "poj104-v1": "benchmark://poj104-v1/<label>/<n>",
    "devmap-v0": "benchmark://devmap-v0/<benchmark>-<dataset>",
    "wide-v0": "benchmark://wide-v0/<source>/<path>",
}
#: The benchmark an environment starts with when none is named (needs only LLVM 22's tools).
DEFAULT_BENCHMARK = "generator://llvm-stress-v0/0"
#: The largest user file a benchmark is read from by default (bytes).
DEFAULT_MAX_INPUT_BYTES = 64 << 20
#: The split names, in order.
SPLITS = ("train", "val", "test")

_SOURCE_SUFFIXES = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".c++": "c++", ".cl": "cl"}
_UINT32 = 2**32


@dataclass(eq=False)
class Benchmark:
    """A program to optimise.

    Attributes:
        uri: Its URI (module docstring).
        bitcode: The module as ``opt-22`` wrote it (verified, ``optnone`` removed): the initial state.
        source: The source text it was compiled from, when it was compiled here (C for Csmith programs).
        language: The source's language (``c``, ``c++``, ``cl``), when there is a source.
        baselines: What was computed from it once for every episode (``-Oz`` / ``-O3`` bitcode and costs);
            shared by the environments and forks that use it.
    """

    uri: str
    bitcode: bytes
    source: str | None = None
    language: str | None = None
    baselines: dict[str, Any] = field(default_factory=dict, repr=False)

    def __str__(self) -> str:
        return self.uri


def split_of(uri: str, seed: int = 0) -> str:
    """The split (``train``, ``val`` or ``test``) a benchmark URI belongs to (module docstring)."""
    digest = hashlib.sha256(f"{seed}:{uri}".encode()).digest()
    bucket = int.from_bytes(digest[:8], "big") % 10
    return "train" if bucket < 8 else ("val" if bucket == 8 else "test")


def _data_dir(data_dir: str | os.PathLike | None, name: str) -> Path:
    from programl.data.download import shared_data

    root = data_dir or os.environ.get("PROGRAML_GYM_DATA") or None
    if root:
        path = Path(root).expanduser() / name
        if not path.is_dir():
            raise BenchmarkError(f"{path}: not a folder (data_dir must hold {name}/)")
        return path
    found = shared_data(name)
    if found is None:
        raise BenchmarkError(f"the {name} data set was not found: pass data_dir= (a folder holding {name}/)")
    return found


def _cache_dir(cache_dir: str | os.PathLike | None) -> Path:
    root = cache_dir or os.environ.get("PROGRAML_GYM_CACHE") or "~/.cache/programl/gym"
    return Path(root).expanduser()


def benchmark_uris(
    dataset: str,
    data_dir: str | os.PathLike | None = None,
    count: int | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> list[str]:
    """The URIs of a data set, in a fixed order.

    Args:
        dataset: A name of :data:`DATASETS`.
        data_dir: Where ``poj104/`` and ``devmap/`` are (module docstring), and ``downloads/`` (``wide-v0``).
        count: At most this many (the generators need it: they have 2**32 programs).
        cache_dir: Where ``wide-v0``'s archives are unpacked (and downloaded, without ``data_dir``).

    Raises:
        BenchmarkError: Unknown data set, or its data is not found (for ``wide-v0``: an archive that is not in the
            cache cannot be downloaded).
    """
    if dataset in ("llvm-stress-v0", "csmith-v0"):
        if count is None:
            raise BenchmarkError(f"generator://{dataset} has 2**32 programs: pass count=")
        return [f"generator://{dataset}/{seed}" for seed in range(min(count, _UINT32))]
    if dataset == "poj104-v1":
        uris = [
            f"benchmark://poj104-v1/{p.label}/{p.index}"
            for p in _poj104_programs(str(_data_dir(data_dir, "poj104"))).values()
        ]
    elif dataset == "devmap-v0":
        uris = [
            f"benchmark://devmap-v0/{row.name}" for row in _devmap_manifest(str(_data_dir(data_dir, "devmap"))).values()
        ]
    elif dataset == "wide-v0":
        from programl.gym import wide

        uris = wide.uris(data_dir, cache_dir)
    else:
        raise BenchmarkError(f"unknown data set {dataset!r} (known: {', '.join(DATASETS)})")
    return uris[:count] if count is not None else uris


def split_uris(
    dataset: str,
    split: str,
    data_dir: str | os.PathLike | None = None,
    count: int | None = None,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
) -> list[str]:
    """The URIs of one split of a data set (:func:`split_of`); for a generator, of its first ``count`` programs."""
    if split not in SPLITS:
        raise BenchmarkError(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})")
    return [uri for uri in benchmark_uris(dataset, data_dir, count, cache_dir) if split_of(uri, seed) == split]


def sample_uris(
    dataset: str,
    split: str,
    count: int,
    data_dir: str | os.PathLike | None = None,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
) -> list[str]:
    """``count`` URIs of one split of a data set, fixed by the arguments alone: for a generator, the first ``count``
    seeds in the split; otherwise URIs spread evenly over the split's fixed order (so that a sample of POJ-104 covers
    its problems instead of the first one's programs). The whole split when it has ``count`` or fewer.

    Raises:
        BenchmarkError: Unknown data set or split, a ``count`` below 1, or the data set's data is not found.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise BenchmarkError(f"count must be a positive integer, not {count!r}")
    if dataset in ("llvm-stress-v0", "csmith-v0"):
        scanned = 16 * count
        while True:  # about 1 in 10 seeds is a test or validation seed: scan more until count are found
            uris = split_uris(dataset, split, data_dir, count=min(scanned, _UINT32), seed=seed)
            if len(uris) >= count or scanned >= _UINT32:
                return uris[:count]
            scanned *= 4
    uris = split_uris(dataset, split, data_dir, seed=seed, cache_dir=cache_dir)
    if len(uris) <= count:
        return uris
    return [uris[(i * len(uris)) // count] for i in range(count)]


def load_benchmark(
    uri: str | os.PathLike,
    toolchain: Toolchain | None = None,
    data_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES,
) -> Benchmark:
    """The benchmark a URI names (module docstring).

    Args:
        uri: The URI (or a plain path of a file).
        toolchain: The tools and limits (default: :class:`~programl.gym.state.Toolchain` ()).
        data_dir: Where ``poj104/`` and ``devmap/`` are, and ``downloads/`` (``wide-v0``'s archives) if it is given.
        cache_dir: Where DevMap's sources are extracted and ``wide-v0``'s archives unpacked (and downloaded, without
            ``data_dir``).
        max_input_bytes: The largest file read.

    Raises:
        BenchmarkError: The URI is malformed or names nothing, or the program cannot be read, compiled or verified
            (one line that names the file or URI).
        UnsupportedCompiler: A tool it needs (opt-22, clang-22, llvm-stress-22, csmith) is not installed.
    """
    toolchain = toolchain or Toolchain()
    text = os.fspath(uri)
    parsed = urllib.parse.urlparse(text)
    if parsed.scheme in ("", "file"):
        path = urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else text
        if parsed.scheme == "file" and parsed.netloc not in ("", "localhost"):
            raise BenchmarkError(f"{text}: a file:// URI names a local file (file:///path)")
        return _load_file(Path(path), toolchain, max_input_bytes, uri=f"file://{Path(path).resolve()}")
    parts = [urllib.parse.unquote(p) for p in parsed.path.split("/") if p]
    if parsed.scheme == "generator" and parsed.netloc in ("llvm-stress-v0", "csmith-v0"):
        seed = _seed(text, parts)
        if parsed.netloc == "llvm-stress-v0":
            return _load_llvm_stress(text, seed, toolchain)
        return _load_csmith(text, seed, toolchain)
    if parsed.scheme == "benchmark" and parsed.netloc == "poj104-v1":
        return _load_poj104(text, parts, toolchain, data_dir)
    if parsed.scheme == "benchmark" and parsed.netloc == "devmap-v0":
        return _load_devmap(text, parts, toolchain, data_dir, cache_dir)
    if parsed.scheme == "benchmark" and parsed.netloc == "wide-v0":
        from programl.gym import wide

        ir, source, language = wide.compile_benchmark(text, toolchain.timeout, data_dir, cache_dir)
        return _finish(text, ir, text, toolchain, source=source, language=language)
    known = ", ".join(["file:///path/to/prog.{c,cc,cpp,cl,ll,bc}", *DATASETS.values()])
    raise BenchmarkError(f"{text}: unknown benchmark URI (known: {known})")


def _seed(uri: str, parts: list[str]) -> int:
    if len(parts) != 1 or not parts[0].isdigit() or int(parts[0]) >= _UINT32:
        raise BenchmarkError(f"{uri}: the seed must be an integer from 0 to 2**32 - 1")
    return int(parts[0])


def _finish(uri: str, ir: str, path: str, toolchain: Toolchain, source=None, language=None) -> Benchmark:
    return Benchmark(uri, assemble(strip_optnone(ir), path, toolchain), source=source, language=language)


def _load_file(path: Path, toolchain: Toolchain, max_input_bytes: int, uri: str) -> Benchmark:
    from programl.util.fs import read_regular_file

    name = str(path)
    suffix = path.suffix.lower()
    if suffix not in _SOURCE_SUFFIXES and suffix not in (".ll", ".bc"):
        raise BenchmarkError(f"{name}: unknown file type (expected .c, .cc, .cpp, .cxx, .cl, .ll or .bc)")
    try:  # only a regular file of at most max_input_bytes, checked before it is read
        data = read_regular_file(path, max_input_bytes, what="benchmark file")
    except ProgramlError as error:
        raise BenchmarkError(str(error)) from None
    except OSError as error:
        raise BenchmarkError(f"{name}: {error.strerror or error}") from None
    if suffix in _SOURCE_SUFFIXES:
        from programl.graph_builder import clang

        language = _SOURCE_SUFFIXES[suffix]
        try:
            ir = clang.compile_file(name, ["-O0"], language=language, timeout=toolchain.timeout)
        except (GraphCreationError, TimeoutError) as error:
            raise BenchmarkError(_prefixed(str(error), name)) from None
        source = data.decode("utf-8", "replace")
        return _finish(uri, ir, name, toolchain, source=source, language=language)
    if suffix == ".bc" or data[:4] in (b"BC\xc0\xde", b"\xde\xc0\x17\x0b"):
        ir = disassemble(data, name, toolchain)
    else:
        try:
            ir = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BenchmarkError(f"{name}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    return _finish(uri, ir, name, toolchain)


def _prefixed(message: str, name: str) -> str:
    return message if name in message else f"{name}: {message}"


def _load_llvm_stress(uri: str, seed: int, toolchain: Toolchain) -> Benchmark:
    stress = find_llvm_tool("llvm-stress")
    try:
        ir = toolchain.run([stress, f"-seed={seed}", "-o", "-"], path=uri).decode("utf-8", "replace")
    except ToolFailure as failure:
        raise BenchmarkError(f"{uri}: {failure}") from None
    return _finish(uri, ir, uri, toolchain)


def _load_csmith(uri: str, seed: int, toolchain: Toolchain) -> Benchmark:
    from programl.graph_builder import clang

    csmith, include = find_csmith()
    if include is None:
        raise UnsupportedCompiler("csmith.h not found beside csmith; install it with `apt-get install libcsmith-dev`")
    try:
        source = toolchain.run([csmith, "--seed", str(seed)], path=uri).decode("utf-8", "replace")
    except ToolFailure as failure:
        raise BenchmarkError(f"{uri}: {failure}") from None
    try:
        ir = clang.compile_source(source, "c", ["-O0", "-I", include, "-ferror-limit=1"], timeout=toolchain.timeout)
    except (GraphCreationError, TimeoutError) as error:
        raise BenchmarkError(f"{uri}: {error}") from None
    return _finish(uri, ir, uri, toolchain, source=source, language="c")


@functools.lru_cache(maxsize=4)
def _poj104_programs(directory: str) -> dict[tuple[int, int], Any]:
    from programl.data.poj104 import read_programs

    try:
        return {(p.label, p.index): p for p in read_programs(directory)}
    except ProgramlError as error:
        raise BenchmarkError(str(error)) from None


def _load_poj104(uri: str, parts: list[str], toolchain: Toolchain, data_dir) -> Benchmark:
    from programl.data.poj104 import compile_program

    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise BenchmarkError(f"{uri}: expected benchmark://poj104-v1/<label>/<n>")
    program = _poj104_programs(str(_data_dir(data_dir, "poj104"))).get((int(parts[0]), int(parts[1])))
    if program is None:
        raise BenchmarkError(f"{uri}: no such program in POJ-104 (or a duplicate of another)")
    try:
        ir, _ = compile_program(program.text, ("-O0",), timeout=toolchain.timeout)
    except (GraphCreationError, TimeoutError) as error:
        raise BenchmarkError(f"{uri}: {error}") from None
    return _finish(uri, ir, uri, toolchain, source=program.text, language="c++")


@functools.lru_cache(maxsize=4)
def _devmap_manifest(directory: str) -> dict[str, Any]:
    from programl.data.devmap import MANIFEST_FILE, read_manifest

    try:
        return {row.name: row for row in read_manifest(Path(directory) / MANIFEST_FILE)}
    except (ProgramlError, OSError) as error:
        raise BenchmarkError(f"{directory}: {error}") from None


def _load_devmap(uri: str, parts: list[str], toolchain: Toolchain, data_dir, cache_dir) -> Benchmark:
    from programl.data import devmap
    from programl.graph_builder import clang

    directory = _data_dir(data_dir, "devmap")
    row = _devmap_manifest(str(directory)).get(parts[0]) if len(parts) == 1 else None
    if row is None:
        raise BenchmarkError(f"{uri}: no such DevMap kernel (expected benchmark://devmap-v0/<benchmark>-<dataset>)")
    try:
        kernels_cl, _ = devmap.extract_sources(devmap.check_sources(directory), _cache_dir(cache_dir) / "devmap")
        text, flags = devmap.opencl_source(row, kernels_cl)
        ir = clang.compile_source(text, "cl", flags, timeout=toolchain.timeout)
    except UnsupportedCompiler:
        raise
    except (ProgramlError, TimeoutError, OSError) as error:
        raise BenchmarkError(f"{uri}: {error}") from None
    return _finish(uri, ir, uri, toolchain, source=text, language="cl")
