"""How a POJ-104 program is compiled: ProGraML's header, the 8 optimisation settings, the recipes tried in order, and
their precompiled headers (:mod:`programl.data.poj104`)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["HEADER", "OPT_SETTINGS", "RECIPES", "Recipe", "compile_program", "precompile_headers", "prepare_source"]

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
