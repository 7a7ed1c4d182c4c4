"""Data-set recipes: a JSON file that says which public sources to compile, how, and how to split
(docs/spec/design.md#package-layout ``datasets/``; docs/spec/datasets.md#deepdataflow-layout,
docs/spec/datasets.md#other-data-sets).

A recipe (e.g. ``datasets/deepdataflow22/recipe.json``) holds::

    {"name": "DeepDataFlow-22", "seed": 204, "max_roots": 10, "analyses": [...],
     "sources": [
       {"kind": "poj104", "path": "poj104/poj104.tar.xz", "sha256": "...", "url": "...",
        "settings": [["-O0"], ["-O2"]]},
       {"kind": "devmap", "path": "devmap", "settings": [["-O0"], ["-O2"]]},
       {"kind": "files", "path": "some/dir", "settings": [["-O0"]], "flags": ["-DN=4"]}]}

Paths are relative to a data directory (``--data``, e.g. ``../shared/data``). :func:`recipe_inputs` turns a recipe
into build :class:`~programl.data.deepdataflow.inputs.Input` s; ``size`` caps the number of source programs taken
from each source (a small, quick version of the same data set: the programs of a smaller size are a subset of those
of a larger one).

Source kinds:

* ``poj104``: POJ-104 programs (:mod:`programl.data.poj104`: deduplicated, ProGraML's header recipe, precompiled
  headers with their template instantiations, :data:`PCH_FLAGS`), named ``poj104_<label>.<n>.<i>`` with ``i`` the
  index of the setting in :data:`programl.data.poj104.OPT_SETTINGS` (ProGraML's classifyapp names), grouped by
  program. A size takes programs round-robin over the 104 classes, each class in a seeded order.
* ``devmap``: the OpenCL kernels of the DevMap data set (:mod:`programl.data.devmap`): each kernel file once, with
  the clang-22 flags of its first manifest row; named ``opencl_<file stem>.<setting tag>.cl``, grouped by file. A
  size takes the first files in a seeded order.
* ``files``: C, C++, OpenCL and IR files under a directory (:func:`~programl.data.deepdataflow.inputs.discover_inputs`).
* ``archive``: a public source archive (a PyPI sdist, a Debian ``.orig.tar``) with its URL, sha256 and licence,
  downloaded into ``<data>/downloads/`` when missing, unpacked under the work directory, its C, C++, OpenCL, CUDA
  and Fortran files compiled by each listed compiler (``clang-22``, ``clang-14``, ``flang-22``) at each setting
  (:mod:`programl.data.deepdataflow.sources`; ``datasets/deepdataflow22-wide``). A size takes the first files in a
  seeded order (after the source's own ``max_files``).

A recipe is made to be shared, so a received one is checked whole (:func:`check_recipe`, by :func:`load_recipe` and
:func:`recipe_inputs`) before anything is downloaded, unpacked or compiled, and anything else is one
:class:`~programl.exceptions.ProgramlError` line:

* **Fields**: the keys of the recipe and of each source kind are known ones, each of its JSON type (``seed`` an
  integer from 0, ``max_roots`` from 1, ``analyses`` names of analyses, ``settings`` a list of lists of flags,
  ``flags`` and ``defines`` lists of strings ...).
* **Paths** (``path``, an archive's ``includes``, ``files`` and ``exclude``): relative and normalised (no leading
  ``/``, no ``.``, ``..`` or empty part), so they stay inside ``--data`` (or the unpacked tree); an archive's
  download cache is inside ``<data>/downloads/``, and the other kinds read nothing from there (the one place a
  recipe writes to).
* **Flags** (``settings``, ``flags``, and ``defines`` as ``-D`` flags): :func:`check_recipe_flags`: what
  :func:`programl.graph_builder.clang.check_flags` refuses on the command line, every flag that makes a compiler load
  or run other code (``-fplugin=``, ``-fpass-plugin=``, ``-Xclang``, ``-mllvm``, ``-Wl,``, ``-B``, ``--config`` ...)
  or write or embed files (``-ftime-trace``, ``-fmodules`` ...), and any flag outside the families a recipe needs
  (``-O``, ``-D``, ``-U``, ``-std=``, ``-f``, ``-W``, ``-m``, ``-g``, ``-cl-``, ``--target=`` ...), each one argument.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from programl.data.deepdataflow.checks import (
    _DESCRIBING,
    DOWNLOADS,
    _check_sha256,
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
from programl.data.deepdataflow.inputs import Input, discover_inputs, setting_tag
from programl.exceptions import ProgramlError

__all__ = [
    "DOWNLOADS",
    "MAX_RECIPE_BYTES",
    "PCH_FLAGS",
    "check_defines",
    "check_describing",
    "check_field",
    "check_recipe",
    "check_recipe_flags",
    "check_relative_path",
    "check_settings",
    "check_strings",
    "check_url",
    "load_recipe",
    "recipe_inputs",
    "recipe_settings",
    "source_of",
]

#: Flags for precompiling POJ-104's headers only (not for compiling programs): the header's pending template
#: instantiations are made once, in the PCH, rather than at the end of every program. That takes a -O0 compile of
#: a POJ-104 program from ~76 to ~28 ms of CPU (clang-22; two thirds of it was instantiating the templates of
#: <iostream> and <algorithm> again) and gives the same IR, byte for byte (``benchmarks/dataset_build.py`` compares
#: every graph of a build made each way). The flags are part of the PCH's file name, so a data set built before keeps
#: its own PCH files beside the new ones.
PCH_FLAGS = ("-fpch-instantiate-templates",)

#: The largest recipe file read (a recipe is a few kilobytes).
MAX_RECIPE_BYTES = 1 << 20

#: The keys of a recipe.
_RECIPE_KEYS = frozenset({"name", "description", "notes", "seed", "max_roots", "analyses", "sources"})
#: The keys of each source kind but ``archive`` (:mod:`programl.data.deepdataflow.sources` checks its own).
_SOURCE_KEYS = {
    "poj104": _DESCRIBING | {"kind", "path", "sha256", "url", "settings"},
    "devmap": _DESCRIBING | {"kind", "path", "settings"},
    "files": _DESCRIBING | {"kind", "path", "settings", "flags"},
}


def _check_source(source: dict[str, Any], kind: str, where: str) -> None:
    """Raise ProgramlError for a malformed ``poj104``, ``devmap`` or ``files`` source."""
    unknown = set(source) - _SOURCE_KEYS[kind]
    if unknown:
        raise ProgramlError(f"{where}: unknown keys {', '.join(_shown(k) for k in sorted(unknown))}")
    check_describing(source, where)
    path = check_relative_path(source.get("path"), f"{where}: 'path'")
    if path.split("/")[0] == DOWNLOADS:
        raise ProgramlError(f"{where}: 'path' {_shown(path)} is in {DOWNLOADS}/, the archive sources' download cache")
    if "settings" in source:
        check_settings(source["settings"], f"{where}: 'settings'")
    if "flags" in source:
        check_recipe_flags(source["flags"], f"{where}: 'flags'")
    if "sha256" in source:
        _check_sha256(source["sha256"], f"{where}: 'sha256'")
    if "url" in source:
        check_url(source["url"], f"{where}: 'url'")


def check_recipe(recipe: Any) -> None:
    """Check a recipe whole before anything is downloaded or compiled (module docstring): its keys, their JSON types,
    its paths and its flags.

    Raises:
        ProgramlError: One line saying what is wrong and where (``source 2 (files): 'flags': ...``).
    """
    from programl.dataflow.names import ANALYSES

    check_field(recipe, dict, "a recipe")
    unknown = set(recipe) - _RECIPE_KEYS
    if unknown:
        raise ProgramlError(f"unknown recipe keys {', '.join(_shown(k) for k in sorted(unknown))}")
    for key in ("name", "description", "notes"):
        if key in recipe:
            check_field(recipe[key], str, f"'{key}'")
    if "seed" in recipe:
        check_field(recipe["seed"], int, "'seed'", minimum=0)
        if recipe["seed"] >= 1 << 63:
            raise ProgramlError(f"'seed' must be below 2**63, not {recipe['seed']}")
    if "max_roots" in recipe:
        check_field(recipe["max_roots"], int, "'max_roots'", minimum=1)
    if "analyses" in recipe:
        for analysis in check_strings(recipe["analyses"], "'analyses'", empty=False):
            if analysis not in ANALYSES:
                raise ProgramlError(f"'analyses': unknown analysis {_shown(analysis)} (expected {', '.join(ANALYSES)})")
    sources = recipe.get("sources")
    if not isinstance(sources, list) or not sources:
        raise ProgramlError(f"'sources' must be a non-empty list of sources, not {_shown(sources)}")
    for index, source in enumerate(sources):
        check_field(source, dict, f"source {index + 1}")
        kind = source.get("kind")
        known = isinstance(kind, str) and (kind in _SOURCE_KEYS or kind == "archive")
        where = f"source {index + 1} ({kind if known else _shown(kind)})"
        if not known:
            raise ProgramlError(f"{where}: unknown source kind (expected poj104, devmap, files or archive)")
        if kind == "archive":
            from programl.data.deepdataflow.sources import check_archive_source

            check_archive_source(source)
        else:
            _check_source(source, kind, where)


def load_recipe(path: str | os.PathLike) -> dict[str, Any]:
    """Read a recipe file.

    Raises:
        ProgramlError: The file is not a readable recipe, or not a well-formed one (:func:`check_recipe`); one line
            that names the file.
    """
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_RECIPE_BYTES + 1)
        if len(data) > MAX_RECIPE_BYTES:
            raise ProgramlError(f"{path}: not a recipe (larger than {MAX_RECIPE_BYTES:,} bytes)")
        recipe = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # ValueError: JSON, UTF-8
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ProgramlError(f"{path}: not a readable recipe ({reason})") from None
    if not isinstance(recipe, dict) or not isinstance(recipe.get("sources"), list):
        raise ProgramlError(f"{path}: a recipe is a JSON object with a list of 'sources'")
    try:
        check_recipe(recipe)
    except ProgramlError as error:
        raise ProgramlError(f"{path}: {error}") from None
    return recipe


def _order(seed: int, key: str) -> bytes:
    return hashlib.sha256(f"{seed}:{key}".encode()).digest()


def _settings(source: dict[str, Any]) -> list[tuple[str, ...]]:
    return [tuple(s) for s in source.get("settings", [["-O0"]])]


@functools.lru_cache(maxsize=2)
def _read_programs(archive: str, mtime: int) -> list:
    """The archive's programs (read once per process: reading the 53,000 files takes seconds)."""
    from programl.data import poj104

    return poj104.read_programs(archive, verify=False)


def _poj104_inputs(source: dict[str, Any], data_dir: Path, work_dir: Path, size: int | None, seed: int) -> list[Input]:
    from programl.data import poj104

    archive = data_dir / source["path"]
    if source.get("sha256") and archive.is_file():
        from programl.util.fs import sha256_file

        if sha256_file(archive) != source["sha256"]:
            raise ProgramlError(f"{archive}: sha256 differs from the recipe's {source['sha256']}")
    programs = _read_programs(str(archive), archive.stat().st_mtime_ns if archive.exists() else 0)
    by_class: dict[int, list] = defaultdict(list)
    for program in programs:
        by_class[program.label].append(program)
    for label in by_class:
        by_class[label].sort(key=lambda p: _order(seed, p.id))
    chosen = []
    depth = 0
    while size is None or len(chosen) < size:  # round-robin over classes, each in its seeded order
        layer = [by_class[label][depth] for label in sorted(by_class) if depth < len(by_class[label])]
        if not layer:
            break
        chosen.extend(layer if size is None else layer[: size - len(chosen)])
        depth += 1
    inputs = []
    for flags in _settings(source):
        if flags not in poj104.OPT_SETTINGS:
            raise ProgramlError(f"POJ-104 setting {' '.join(flags)} is not one of ProGraML's 8 settings")
        index = poj104.OPT_SETTINGS.index(flags)
        pch = tuple(sorted(poj104.precompile_headers(work_dir / "pch", (*flags, *PCH_FLAGS)).items()))
        for program in chosen:
            inputs.append(
                Input(
                    name=f"poj104_{program.label}.{program.index}.{index}",
                    group=f"poj104_{program.id}",
                    kind="poj104",
                    language="c++",
                    flags=flags,
                    text=program.text,
                    source=f"{source['path']}:{program.label}/{program.index}.cpp",
                    extra=pch,
                )
            )
    return inputs


def _devmap_inputs(source: dict[str, Any], data_dir: Path, work_dir: Path, size: int | None, seed: int) -> list[Input]:
    from programl.data import devmap

    directory = data_dir / source["path"]
    files = devmap.check_sources(directory)
    if devmap.MANIFEST_FILE not in files:
        raise ProgramlError(f"{directory}: no {devmap.MANIFEST_FILE}")
    kernels_cl, _ = devmap.extract_sources(files, work_dir / "devmap")
    first: dict[str, Any] = {}
    for row in devmap.read_manifest(files[devmap.MANIFEST_FILE]):
        first.setdefault(row.kernels_cl_file, row)
    names = sorted(first, key=lambda f: _order(seed, f))[:size]
    inputs = []
    for flags in _settings(source):
        for file in names:
            text, row_flags = devmap.opencl_source(first[file], kernels_cl)
            kept = [f for f in row_flags if not (f.startswith("-O") and len(f) <= 4)]  # the setting replaces -O0
            stem = file[: -len(".cl")] if file.endswith(".cl") else file
            inputs.append(
                Input(
                    name=f"opencl_{stem}.{setting_tag(flags)}.cl",
                    group=f"opencl_{file}",
                    kind="source",
                    language="cl",
                    flags=(*flags, *kept),
                    text=text,
                    source=f"{source['path']}/task_devmap_kernels.zip:kernels_cl/{file}",
                )
            )
    return inputs


def recipe_inputs(
    recipe: dict[str, Any],
    data_dir: str | os.PathLike,
    work_dir: str | os.PathLike,
    size: int | None = None,
    progress: bool = True,
) -> list[Input]:
    """The inputs of a recipe (module docstring).

    Args:
        recipe: A recipe (:func:`load_recipe`).
        data_dir: Where the recipe's source paths are relative to.
        work_dir: Scratch space for extracted sources and precompiled headers (e.g. ``<data set>/sources``).
        size: Most source programs per source (None: all).
        progress: A progress bar over the sources (on a terminal) and a line for each archive downloaded.

    Raises:
        ProgramlError: The recipe is malformed (:func:`check_recipe`: before any source is read, downloaded or
            unpacked), or a source is missing or fails its checksum.
    """
    from programl.util.progress import progress as progress_bar

    check_recipe(recipe)
    data_dir, work_dir = Path(data_dir), Path(work_dir)
    seed = int(recipe.get("seed", 204))
    inputs: list[Input] = []
    sources = recipe["sources"]
    for source in progress_bar(sources, len(sources), "sources", enabled=progress, unit="source", min_total=2):
        kind = source.get("kind")
        if kind == "poj104":
            inputs += _poj104_inputs(source, data_dir, work_dir, size, seed)
        elif kind == "devmap":
            inputs += _devmap_inputs(source, data_dir, work_dir, size, seed)
        elif kind == "files":
            found = discover_inputs([data_dir / source["path"]], _settings(source), tuple(source.get("flags", ())))
            by_group: dict[str, list[Input]] = defaultdict(list)
            for item in found:
                by_group[item.group].append(item)
            groups = sorted(by_group, key=lambda g: _order(seed, g))[:size]
            inputs += [item for g in sorted(groups) for item in by_group[g]]
        elif kind == "archive":
            from programl.data.deepdataflow import sources as archives

            if progress and not (data_dir / archives.cache_path(source)).is_file():
                from programl.util.progress import message

                message(f"programl dataset build: downloading {source.get('name')} from {source.get('url')}")
            inputs += archives.archive_inputs(source, data_dir, work_dir, size, seed)
        else:
            raise ProgramlError(f"unknown recipe source kind {kind!r} (expected poj104, devmap, files or archive)")
    return inputs


def recipe_settings(recipe: dict[str, Any]) -> dict[str, Any]:
    """The build settings a recipe fixes: ``seed``, ``max_roots``, ``analyses`` (those it names)."""
    return {k: recipe[k] for k in ("seed", "max_roots", "analyses") if k in recipe}


def source_of(name: str) -> str:
    """The recipe source of an input, graph or example name: ``poj104`` for ``poj104_3.17.0``, ``opencl`` for
    ``opencl_<file>.<setting>.cl``, and an archive source's name for ``<name>.<path>.<compiler>-<setting>.<suffix>``
    (``zstd.lib_compress_zstd_lazy.clang14-O2.c`` -> ``zstd``; :mod:`programl.data.deepdataflow.sources`)."""
    head = name.split(".", 1)[0]
    for prefix in ("poj104", "opencl"):
        if head.startswith(prefix + "_"):
            return prefix
    return head
