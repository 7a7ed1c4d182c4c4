"""The POJ-104 algorithm-classification data set (classifyapp; docs/spec/tasks.md#algorithm-classification,
docs/spec/tasks.md#poj-104-table, docs/spec/datasets.md#other-data-sets, docs/spec/graph.md#functions-and-modules
features).

104 classes of student programs (Mou et al., AAAI 2016), one C/C++ program per file: ``codexglue/<label>/<n>.cpp``
in ``poj104.tar.xz`` (``../shared/data/poj104``), or an extracted ``codexglue/`` directory.

Programs (:func:`read_programs`) are deduplicated by content: classes 65 and 81 hold every program twice; a text that
occurs under two different labels (5 texts) is ambiguous and left out. Each keeps the id ``<label>.<n>`` of its
first file (lowest ``n``).

Compilation (:func:`compile_program`) follows ProGraML's ``poj104.cc``: a fixed header of includes,
``#define LEN 512``, ``#define MAX_LENGTH 512`` and ``using namespace std;`` is prepended, ``void main`` becomes
``int main``, and clang-22 compiles C++11 at one of the 8 optimisation settings (``-O0``..``-O3``, each with and
without ``-ffast-math``; index i as ProGraML's ``<label>.<srcId>.<i>``). About 96 % of the programs compile so; two
fallback recipes lift that (PROVENANCE): the header plus ``<iomanip>`` and ``<string>`` in C++11, then in GNU++98.
This project also gives an implicit-int ``main(`` an ``int`` (old C style, rejected by C++). The manifest records
which recipe compiled each program. Each recipe's header is precompiled once per flag set (a clang PCH), which
makes a compile about 8x faster and gives the same IR as prepending the header text (a test checks it).

On disk (``data_dir``: the build directory of :class:`programl.datasets.POJ104`, ``<root>/processed/build``;
:func:`build_poj104` is resumable, atomic, parallel with a per-program timeout, and never stops on a bad program)::

    pch/<recipe>.<flags-hash>.pch           precompiled headers
    graphs/<label>.<n>.<i>.ProgramGraph.pb  graph feature ``poj104_label`` = label (1..104)
    ir/<label>.<n>.<i>.ll                   the IR (only with ``keep_ir``)
    manifest.jsonl                          per program and setting: recipe, content hash, status, error, timings
    legacy/graphs/<file>.ProgramGraph.pb    the 1,000 labelled legacy IR files (``legacy_ir``), their manifest

Split (:func:`split_programs`): seeded, per class 3:1:1 (train/val/test) by program, so that every setting of a
program lands in the same split. :func:`subset_split` takes the first programs of each class and split, keeping a
subset's test programs inside the full test split.
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import re
import tarfile
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from programl.data.download import sha256_file
from programl.data.manifest import Manifest
from programl.data.pipeline import run_tasks
from programl.data.report import BuildReport as _BuildReport
from programl.exceptions import ProgramlError
from programl.proto import ProgramGraph
from programl.util.fs import atomic_write_bytes, atomic_write_text

__all__ = [
    "ARCHIVE",
    "ARCHIVE_SHA256",
    "CONTENT_SHA256",
    "HEADER",
    "LEGACY_ARCHIVE",
    "LEGACY_SHA256",
    "NUM_CLASSES",
    "OPT_SETTINGS",
    "RECIPES",
    "BuildReport",
    "Program",
    "Recipe",
    "build_legacy",
    "build_poj104",
    "canonical_settings",
    "compile_program",
    "distinct_eval_settings",
    "fetch_poj104",
    "graph_name",
    "legacy_examples",
    "load_split",
    "poj104_examples",
    "prepare_source",
    "read_legacy_ir",
    "read_programs",
    "split_programs",
    "subset_split",
]

NUM_CLASSES = 104
ARCHIVE = "poj104.tar.xz"
ARCHIVE_SHA256 = "040cfc2238bf86c93aac6e72d4cdd33929f919522919a5ccc41804db0d2a0b6f"
#: sha256 of the sorted lines ``<label>/<n>.cpp <sha256 of the file>`` of the 53,000 files (checks a download).
CONTENT_SHA256 = "3a3ab86f7098926872054b4532dfccf4d95384ad78a617d394e17837e5bbee36"
#: The public repository at the commit the archive was taken from (its folder ``codexglue/``).
REPOSITORY_URL = "https://github.com/guilhermeivo/dataset-poj-104/archive/28790c70.tar.gz"
LEGACY_ARCHIVE = "llvm_ir.tar.bz2"
LEGACY_SHA256 = "5a42fd261f7714400168dddecd2a49de106bb93f9784c52276911db5669d4e09"
#: ProGraML's test fixture (Apache-2.0) with the 1,000 legacy IR files.
LEGACY_URL = "https://raw.githubusercontent.com/ChrisCummins/ProGraML/d5df3cc/tests/data/llvm_ir.tar.bz2"

#: ProGraML's header (``tasks/classifyapp/dataset/poj104.cc``).
HEADER = (
    "#include <cstdio>\n#include <cstdlib>\n#include <cmath>\n#include <cstring>\n#include <iostream>\n"
    "#include <algorithm>\n#define LEN 512\n#define MAX_LENGTH 512\nusing namespace std;\n"
)
_HEADER_MORE = HEADER.replace("#include <algorithm>\n", "#include <algorithm>\n#include <iomanip>\n#include <string>\n")

#: The 8 settings, index i of ProGraML's ``<label>.<srcId>.<i>``.
OPT_SETTINGS: tuple[tuple[str, ...], ...] = (
    ("-O0",),
    ("-O1",),
    ("-O2",),
    ("-O3",),
    ("-O0", "-ffast-math"),
    ("-O1", "-ffast-math"),
    ("-O2", "-ffast-math"),
    ("-O3", "-ffast-math"),
)


@dataclass(frozen=True)
class Recipe:
    """A header and a language standard to compile a program with."""

    name: str
    header: str
    std: str


#: Tried in order until one compiles (module docstring).
RECIPES = (
    Recipe("programl", HEADER, "-std=c++11"),
    Recipe("more-headers", _HEADER_MORE, "-std=c++11"),
    Recipe("gnu++98", _HEADER_MORE, "-std=gnu++98"),
)

_VOID_MAIN = re.compile(r"\bvoid\s+main\s*\(")
_IMPLICIT_INT_MAIN = re.compile(r"^(\s*)main\s*\(", re.MULTILINE)


# ---------------------------------------------------------------------------------------------------------------
# Programs


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


def prepare_source(text: str, recipe: Recipe = RECIPES[0], with_header: bool = True) -> str:
    """The text clang compiles: the recipe's header (unless precompiled), ``void main``/``main`` -> ``int main``."""
    body = _IMPLICIT_INT_MAIN.sub(r"\1int main(", _VOID_MAIN.sub("int main(", text))
    return (recipe.header if with_header else "") + body


def compile_program(
    text: str,
    setting: Sequence[str] = ("-O0",),
    recipes: Sequence[Recipe] = RECIPES,
    pch: dict[str, str] | None = None,
    timeout: float | None = 120,
) -> tuple[str, Recipe]:
    """Compile a program with the first recipe that works; returns ``(IR, recipe)``.

    Args:
        text: The program.
        setting: Optimisation flags (one of :data:`OPT_SETTINGS`).
        recipes: Recipes to try in order.
        pch: Recipe name -> precompiled header for this setting (see :func:`precompile_headers`); without one the
            header text is prepended.
        timeout: Seconds per clang run.

    Raises:
        GraphCreationError: No recipe compiles the program (the error of the first recipe).
    """
    from programl.exceptions import GraphCreationError
    from programl.graph_builder import clang

    first_error: GraphCreationError | None = None
    for recipe in recipes:
        header = (pch or {}).get(recipe.name)
        flags = [recipe.std, *setting] + (["-include-pch", header] if header else [])
        try:
            source = prepare_source(text, recipe, with_header=header is None)
            return clang.compile_source(source, "c++", flags, timeout=timeout), recipe
        except GraphCreationError as error:
            first_error = first_error or error
    assert first_error is not None
    raise first_error


#: A temporary file of :func:`precompile_headers`: ``.<recipe>.<hash>.pch.<pid>.tmp``, the writer's PID in it, or
#: clang's own temporary beside it (``.<recipe>.<hash>.pch.<pid>-<random>.tmp.tmp``, renamed onto the first).
_PCH_TEMP = re.compile(r"\.[^/]+\.pch\.(?P<pid>\d+)(?:-[0-9A-Za-z]+\.tmp)?\.tmp")
#: The lock of a PCH directory: every writer holds it shared while its temporary files exist.
_PCH_LOCK = ".pch.lock"


def _pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (on this machine)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process (or a number no PID can be)
        return False
    except OSError:  # EPERM: another user's process, alive
        return True
    return True


def _lock_pch_directory(directory: Path) -> int | None:
    """Take the directory's lock shared, after removing the temporary files of writers that are gone; returns the
    lock's descriptor (to close when done), None where no lock can be had (no ``fcntl``, a read-only directory).

    A writer killed with ``kill -9`` leaves its ``.<name>.pch.<pid>.tmp`` behind (and clang, when it was the one
    killed, its own temporary). A temporary file is stale when its PID is no longer alive, or when nobody holds the
    lock (which every live writer holds shared, its clang included, until its files are renamed or removed): an
    exclusive lock taken here proves that no writer is at work, so every temporary file goes (also one whose PID
    now belongs to another process). A live writer's files are never touched.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: only the PID rule
        fcntl = None
    fd = None
    exclusive = False
    if fcntl is not None:
        try:
            fd = os.open(directory / _PCH_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError:
            fd = None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                exclusive = True
            except OSError:  # a writer is at work: only the files of dead PIDs go
                pass
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                match = _PCH_TEMP.fullmatch(entry.name)
                if match and not entry.is_dir(follow_symlinks=False):
                    if exclusive or not _pid_alive(int(match["pid"])):
                        try:
                            os.unlink(entry.path)
                        except OSError:
                            pass
    finally:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)  # from exclusive (or none) to shared: this process now writes
    return fd


def precompile_headers(
    directory: str | os.PathLike, setting: Sequence[str], recipes: Sequence[Recipe] = RECIPES, timeout: float = 300
) -> dict[str, str]:
    """Precompile each recipe's header for ``setting`` into ``directory`` (once); recipe name -> PCH path.

    A header that does not precompile (or not within ``timeout`` seconds) is left out (its recipe then prepends the
    text). Each PCH is written to ``.<name>.<pid>.tmp`` and renamed into place; the temporary files of writers that
    died (``kill -9``) are removed first, those of live writers left alone (:func:`_lock_pch_directory`).
    """
    import subprocess

    from programl.graph_builder import clang

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    lock = _lock_pch_directory(directory)
    try:
        out = {}
        for recipe in recipes:
            digest = hashlib.sha256(f"{recipe.header}{recipe.std}{' '.join(setting)}".encode()).hexdigest()[:16]
            path = directory / f"{recipe.name}.{digest}.pch"
            if not path.is_file():
                tmp = directory / f".{path.name}.{os.getpid()}.tmp"
                command = [clang.find_clang(), "-x", "c++-header", recipe.std, *setting, "-", "-o", str(tmp)]
                try:
                    # clang holds the lock too (pass_fds): a clang left running by a killed writer still counts
                    result = subprocess.run(
                        command,
                        input=recipe.header.encode(),
                        capture_output=True,
                        timeout=timeout,
                        pass_fds=() if lock is None else (lock,),
                    )
                    if result.returncode:
                        continue
                    os.replace(tmp, path)
                except subprocess.TimeoutExpired:
                    continue
                finally:
                    tmp.unlink(missing_ok=True)
            out[recipe.name] = str(path)
        return out
    finally:
        if lock is not None:
            os.close(lock)


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


# ---------------------------------------------------------------------------------------------------------------
# Splits


def canonical_settings(settings: Sequence[int]) -> tuple[int, ...]:
    """Optimisation settings as a selection reads them: ascending, each once."""
    return tuple(sorted(set(int(i) for i in settings)))


def distinct_eval_settings(settings: tuple[int, ...], eval_settings: Sequence[int] | None) -> tuple[int, ...] | None:
    """The validation and test splits' settings when they differ from the (canonical) training ``settings``, else
    None: one set for all splits.

    Raises:
        ValueError: ``eval_settings`` names no setting.
    """
    if eval_settings is None:
        return None
    chosen = canonical_settings(eval_settings)
    if not chosen:
        raise ValueError("eval_settings must name at least one setting (or be None)")
    return None if chosen == settings else chosen


def split_programs(
    programs: Sequence[Program], seed: int = 204, ratios: tuple[int, int, int] = (3, 1, 1)
) -> dict[str, list[str]]:
    """Seeded per-class split of program ids into ``train``/``val``/``test`` in proportions ``ratios`` (3:1:1).

    The programs of each class are put in a random order (a generator seeded with ``(seed, label)``, so a class's
    order does not depend on the other classes); the first 3/5 are training, the next 1/5 validation, the rest test.
    Each list is in that order (which :func:`subset_split` relies on).
    """
    by_label: dict[int, list[Program]] = defaultdict(list)
    for program in programs:
        by_label[program.label].append(program)
    total = sum(ratios)
    out: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    for label in sorted(by_label):
        group = sorted(by_label[label], key=lambda p: p.index)
        order = np.random.default_rng([seed, label]).permutation(len(group))
        n_train = round(len(group) * ratios[0] / total)
        n_val = round(len(group) * ratios[1] / total)
        ids = [group[i].id for i in order]
        out["train"] += ids[:n_train]
        out["val"] += ids[n_train : n_train + n_val]
        out["test"] += ids[n_train + n_val :]
    return out


def subset_split(split: dict[str, list[str]], per_class: int | None) -> dict[str, list[str]]:
    """The first programs of each class in each split, ``per_class`` programs per class in 3:1:1 proportion
    (e.g. 100 -> 60 / 20 / 20); ``None`` keeps everything. A subset's test programs are full-split test programs."""
    if per_class is None:
        return {k: list(v) for k, v in split.items()}
    quota = {"train": round(per_class * 3 / 5), "val": round(per_class / 5)}
    quota["test"] = per_class - quota["train"] - quota["val"]
    out: dict[str, list[str]] = {}
    for name, ids in split.items():
        taken: dict[str, int] = defaultdict(int)
        kept = []
        for pid in ids:
            label = pid.split(".")[0]
            if taken[label] < quota[name]:
                taken[label] += 1
                kept.append(pid)
        out[name] = kept
    return out


def load_split(data_dir: str | os.PathLike, programs: Sequence[Program], seed: int = 204) -> dict[str, list[str]]:
    """:func:`split_programs`, written to ``data_dir/splits/seed<seed>/{train,val,test}.txt`` the first time (and
    read back afterwards, so a run always sees the split it was trained with)."""
    directory = Path(data_dir) / "splits" / f"seed{seed}"
    files = {name: directory / f"{name}.txt" for name in ("train", "val", "test")}
    if all(f.is_file() for f in files.values()):
        return {name: f.read_text(encoding="utf-8").split() for name, f in files.items()}
    split = split_programs(programs, seed)
    for name, f in files.items():
        atomic_write_text(f, "".join(pid + "\n" for pid in split[name]))
    return split


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


# ---------------------------------------------------------------------------------------------------------------
# Legacy IR (a small extra test set)

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
