"""What a DeepDataFlow build consumes: one :class:`Input` per graph to make (docs/spec/datasets.md#builds).

An input is a source file (C, C++, OpenCL C) compiled at one optimisation setting, a ready IR file (``.ll``, ``.bc``),
or an in-memory program with a named compile recipe (POJ-104's header recipe). Each has

* a ``name``, its file stem in the layout (``graphs/<name>.ProgramGraph.pb``);
* a ``group``, the source program it comes from: every setting of one program lands in the same split;
* a content ``digest`` over everything that determines its outputs, so that a rebuild knows what is up to date.

:func:`discover_inputs` turns files and directories into inputs: ``dir/sub/foo.c`` at ``-O0`` and ``-O2`` gives
``sub_foo.O0.c`` and ``sub_foo.O2.c`` (group ``sub/foo.c``); ``bar.ll`` gives ``bar`` (IR is taken as it is).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from programl.exceptions import GraphCreationError

__all__ = ["IR_SUFFIXES", "SOURCE_SUFFIXES", "Input", "discover_inputs", "setting_tag"]

#: Source suffix -> clang ``-x`` language (as :mod:`programl.graph_builder.clang`)
SOURCE_SUFFIXES = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".c++": "c++", ".cl": "cl"}
IR_SUFFIXES = (".ll", ".bc")
_LANG_TAG = {"c": "c", "c++": "cc", "cl": "cl"}


@dataclass(frozen=True)
class Input:
    """One graph to build.

    Attributes:
        name: File stem of its outputs (unique within a data set).
        group: The source program (all inputs of a group share a split).
        kind: ``"source"`` (compile ``path`` or ``text`` with clang-22), ``"ir"`` (textual IR or bitcode) or a named
            recipe such as ``"poj104"`` (compile ``text`` with :func:`programl.data.poj104.compile_program`).
        language: ``c``, ``c++`` or ``cl`` for sources.
        flags: Compiler flags (the optimisation setting first).
        path: The file to read, or None when ``text`` holds the input.
        text: The input itself (sources of an archive), or None.
        source: Where it came from, for the manifest (a path or ``archive:member``).
        extra: Recipe-specific options (e.g. precompiled headers), part of neither name nor digest.
    """

    name: str
    group: str
    kind: str
    language: str | None = None
    flags: tuple[str, ...] = ()
    path: str | None = None
    text: str | None = field(default=None, repr=False)
    source: str = ""
    extra: tuple[tuple[str, str], ...] = ()

    def content(self) -> bytes:
        """The input's bytes (the file's, or the text's UTF-8)."""
        if self.text is not None:
            return self.text.encode("utf-8")
        if self.path is None:
            raise GraphCreationError("input has neither a path nor a text", self.source or self.name)
        try:
            return Path(self.path).read_bytes()
        except OSError as error:
            raise GraphCreationError(error.strerror or str(error), self.path) from None

    def digest(self, config: dict | None = None, root: str | os.PathLike | None = None) -> str:
        """The freshness key (:func:`programl.util.freshness.freshness_key`) of this input's outputs: a sha256 over
        the content, the kind, language and flags, ``config`` (the build's settings) and the programl version.

        A flag naming a path inside ``root`` (the data set, e.g. ``-I <root>/sources/devmap/kernels_cl``) counts by
        its place in the data set, so that a copy of the data set (``cp -r``) is up to date.
        """
        from programl import __version__
        from programl.util.freshness import freshness_key

        flags = [_portable_flag(flag, root) for flag in self.flags] if root is not None else list(self.flags)
        meta = {"kind": self.kind, "language": self.language, "flags": flags, "config": config or {}}
        return freshness_key(self.content(), meta, version=__version__)


def _portable_flag(flag: str, root: str | os.PathLike) -> str:
    """``flag`` with a path inside ``root`` written as ``<root>/...`` (``-I`` joined to its path counts too)."""
    head = "-I" if flag.startswith("-I") and len(flag) > 2 else ""
    body = flag[len(head) :]
    if not body or body.startswith("-"):
        return flag
    base, path = os.path.abspath(root), os.path.abspath(body)
    if path == base or path.startswith(base + os.sep):
        return head + "<root>" + path[len(base) :].replace(os.sep, "/")
    return flag


def setting_tag(flags: Sequence[str]) -> str:
    """A file-name-safe tag for an optimisation setting: ``("-O3", "-ffast-math")`` -> ``O3_ffast-math``."""
    tag = "_".join(f.lstrip("-") for f in flags)
    return re.sub(r"[^A-Za-z0-9_.+=-]", "-", tag) or "default"


def _walk(path: Path) -> Iterable[tuple[Path, str]]:
    """(file, path relative to what was given) of the inputs under ``path``."""
    if path.is_dir():
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for f in sorted(files):
                p = Path(root) / f
                if p.suffix.lower() in SOURCE_SUFFIXES or p.suffix.lower() in IR_SUFFIXES:
                    yield p, p.relative_to(path).as_posix()
    else:
        yield path, path.name


def discover_inputs(
    paths: Iterable[str | os.PathLike],
    settings: Sequence[Sequence[str]] = (("-O0",),),
    extra_flags: Sequence[str] = (),
) -> list[Input]:
    """Inputs for files and directories (searched recursively for C, C++, OpenCL, ``.ll`` and ``.bc`` files).

    Args:
        paths: Files or directories.
        settings: Compiler settings; each source file gives one input per setting (IR files one in all).
        extra_flags: More clang flags for every source (``-I``, ``-D`` ...), after the setting's.

    Returns:
        Inputs in the order found (directories sorted).

    Raises:
        GraphCreationError: A file does not exist or has an unknown suffix, or two inputs would share a name.
    """
    inputs: list[Input] = []
    seen: dict[str, str] = {}
    for given in paths:
        given = Path(given)
        if not given.exists():
            raise GraphCreationError("no such file or directory", str(given))
        for path, relative in _walk(given):
            suffix = path.suffix.lower()
            stem = relative[: -len(path.suffix)].replace("/", "_") if path.suffix else relative.replace("/", "_")
            if suffix in IR_SUFFIXES:
                items = [Input(stem, relative, "ir", None, (), str(path), source=str(path))]
            elif suffix in SOURCE_SUFFIXES:
                language = SOURCE_SUFFIXES[suffix]
                items = [
                    Input(
                        f"{stem}.{setting_tag(setting)}.{_LANG_TAG[language]}",
                        relative,
                        "source",
                        language,
                        (*setting, *extra_flags),
                        str(path),
                        source=str(path),
                    )
                    for setting in settings
                ]
            else:
                raise GraphCreationError(
                    "unknown input type (expected .c, .cc, .cpp, .cxx, .c++, .cl, .ll or .bc)", str(path)
                )
            for item in items:
                if item.name in seen:
                    raise GraphCreationError(
                        f"gives the graph name {item.name!r} that {seen[item.name]} also gives", str(path)
                    )
                seen[item.name] = str(path)
                inputs.append(item)
    return inputs
