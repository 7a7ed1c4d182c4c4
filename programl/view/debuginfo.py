"""Source lines of a graph's instructions, from the debug information of the IR it was built from.

An instruction compiled with ``-g`` carries a ``!dbg !N`` attachment in its ``full_text``
(docs/spec/graph.md#node-fields); ``!N`` is a ``DILocation`` (line, column, scope) defined at the end of the IR text,
whose scope chain leads to a ``DIFile``. The graph holds only the attachment, as LLVM prints the module (metadata
numbered in LLVM's order, whatever numbers the IR text gave them), so the locations are read from the module as LLVM
prints it. ``programl view`` compiles C, C++, OpenCL, CUDA and Fortran sources with ``-g`` for this (the graph is the
same: LLVM 22 keeps debug information in records, not instructions).

The debug information names its files, and a received ``.ll`` (or a ``#line "..."`` in a C file) can name any file,
while the page is made to be shared: a source file's lines are embedded only when it is the input itself or lies
below an allowed directory (the input's own directory, and the ``source_root`` directories the caller names), with
no hidden file or directory on the way below it (``.ssh/id_rsa``, ``.env``), never under ``/proc``, ``/sys`` or
``/dev``, never through a symbolic link that leads out of the allowed directories, only a regular file (not a FIFO
or a device) of at most :data:`MAX_SOURCE_BYTES`. Every other file is not read: its nodes have no source line, and
:attr:`SourceLocations.not_embedded` says why.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

from programl.proto import ProgramGraph

__all__ = ["MAX_SOURCE_BYTES", "SourceLocations", "source_locations"]

_METADATA = re.compile(r"^!(\d+) = (?:distinct )?!(\w+)\((.*)\)\s*$", re.MULTILINE)
_FIELD = re.compile(r'(\w+): (?:!(\d+)|"((?:[^"\\]|\\.)*)"|(-?\d+))')
_DBG = re.compile(r"!dbg !(\d+)")
#: Lines longer than this are cut in the page.
MAX_LINE = 240
#: Source files larger than this are not read (an amalgamated SQLite is 9 MB).
MAX_SOURCE_BYTES = 16 << 20
#: Directories whose files are never read, whatever the allowed directories.
SYSTEM_DIRECTORIES = ("/proc", "/sys", "/dev")


@dataclass
class SourceLocations:
    """Where instructions come from.

    Attributes:
        files: The source files named, as the debug information names them.
        nodes: Node id -> ``(index in files, line, column)``.
        lines: Per file (same order as ``files``): line number -> the line's text, for the lines that ``nodes``
            point at and that could be read (the file is the input, or an allowed file where the debug information
            says or beside the input: module docstring); empty when the file was not read.
        not_embedded: The files of ``files`` whose lines were not read -> why (``"not found"``, ``"outside the
            input's directory"``, ``"under /proc"`` ...).
    """

    files: list[str] = field(default_factory=list)
    nodes: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    lines: list[dict[int, str]] = field(default_factory=list)
    not_embedded: dict[str, str] = field(default_factory=dict)


def _fields(text: str) -> dict[str, str | int]:
    out: dict[str, str | int] = {}
    for name, ref, string, number in _FIELD.findall(text):
        if ref:
            out[name] = f"!{ref}"
        elif number:
            out[name] = int(number)
        else:
            out[name] = string
    return out


def _unescape_ir(text: str) -> str:
    """An IR string's ``\\XX`` hex escapes decoded."""
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def _as_llvm_prints(ir: str) -> str:
    """``ir`` as LLVM prints it: the text the graph's full texts come from (metadata numbered in LLVM's order, so
    that a ``!dbg !N`` of the graph names the same ``!N`` here, whatever numbers the input gave its metadata)."""
    from programl.graph_builder import llvm as builder

    def printed() -> str:
        module = builder.parse_ir(ir)
        try:
            return str(module)
        finally:
            module.close()

    if builder._needs_big_stack(ir, None):  # printing deep nesting needs the stack its parse needs
        return builder._call_on_stack(builder._BIG_STACK, None, printed)
    return printed()


def _within(path: str, directory: str) -> str | None:
    """``path`` relative to ``directory`` when it is ``directory`` or below it (both absolute), else None."""
    try:
        if os.path.commonpath([path, directory]) != directory:
            return None
    except ValueError:  # one relative, or different drives
        return None
    return os.path.relpath(path, directory)


class _Policy:
    """Which files may be read: the input itself, and regular files below the allowed directories (module
    docstring)."""

    def __init__(self, near: str | None, source_root: Sequence[str]) -> None:
        self.input = os.path.realpath(near) if near else None
        self.roots = [os.path.realpath(os.path.dirname(os.path.abspath(near)))] if near else []
        self.roots += [os.path.realpath(root) for root in source_root]
        if near and source_root:
            self.outside = "outside the input's directory and the source roots"
        elif near:
            self.outside = "outside the input's directory"
        else:
            self.outside = "outside the source roots" if source_root else "no source root is allowed"

    def check(self, candidate: str) -> tuple[os.stat_result | None, str | None]:
        """``(the file's status, None)`` when it may be read, ``(None, why not)`` for an existing file that may not,
        ``(None, None)`` when there is no such file."""
        absolute = os.path.abspath(candidate)
        if not os.path.lexists(absolute):
            return None, None
        real = os.path.realpath(absolute)
        for system in SYSTEM_DIRECTORIES:
            if _within(real, system) is not None or _within(absolute, system) is not None:
                return None, f"under {system}"
        if real != self.input:
            inside = [relative for relative in (_within(real, root) for root in self.roots) if relative is not None]
            if not inside:
                if any(_within(absolute, root) is not None for root in self.roots):
                    return None, "a symbolic link out of the allowed directories"
                return None, self.outside
            if all(any(part.startswith(".") for part in relative.split(os.sep)) for relative in inside):
                return None, "a hidden file or directory"
        try:
            info = os.stat(real)
        except OSError as error:
            return None, error.strerror or "unreadable"
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        if info.st_size > MAX_SOURCE_BYTES:
            return None, f"larger than {MAX_SOURCE_BYTES >> 20} MiB"
        return info, None

    def resolve(self, name: str, directory: str, near: str | None) -> tuple[str | None, os.stat_result | None, str]:
        """The path to read for a ``DIFile`` (as recorded, beside the input, or below a source root) and its status,
        or None, None and why not."""
        candidates = [name if os.path.isabs(name) or not directory else os.path.join(directory, name), name]
        if near:
            candidates.append(os.path.join(os.path.dirname(near), os.path.basename(name)))
        for root in self.roots[1 if near else 0 :]:
            if not os.path.isabs(name):
                candidates.append(os.path.join(root, name))
            candidates.append(os.path.join(root, os.path.basename(name)))
        refused = None
        for candidate in candidates:
            if not candidate:
                continue
            info, why = self.check(candidate)
            if info is not None:
                return os.path.realpath(candidate), info, ""
            refused = refused or why
        return None, None, refused or "not found"


def _read_lines(path: str, checked: os.stat_result, wanted: set[int]) -> tuple[dict[int, str], str]:
    """The ``wanted`` lines of the regular file ``path`` (and ``""``), or ``({}, why not)``. The file is opened
    without following a link and without blocking (a FIFO put in its place meanwhile), and once open it must be the
    file ``checked`` (the status :meth:`_Policy.check` allowed): the file read is the file checked."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    before = checked
    try:
        with open(os.open(path, flags), "rb") as file:
            info = os.fstat(file.fileno())
            if (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino) or not stat.S_ISREG(info.st_mode):
                return {}, "replaced while it was read"
            data = file.read(MAX_SOURCE_BYTES + 1)
    except OSError as error:
        return {}, error.strerror or "unreadable"
    if len(data) > MAX_SOURCE_BYTES:
        return {}, f"larger than {MAX_SOURCE_BYTES >> 20} MiB"
    out = {}
    for number, text in enumerate(re.split(r"\r\n|\r|\n", data.decode("utf-8", "replace")), 1):
        if number in wanted:
            out[number] = text if len(text) <= MAX_LINE else text[: MAX_LINE - 3] + "..."
    return out, ""


def _roots_of(source_root: str | os.PathLike | Sequence[str | os.PathLike] | None) -> list[str]:
    if source_root is None:
        return []
    if isinstance(source_root, (str, os.PathLike)):
        source_root = [source_root]
    return [os.fspath(root) for root in source_root]


def source_locations(
    ir: str,
    graph: ProgramGraph,
    near: str | None = None,
    *,
    source_root: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
) -> SourceLocations:
    """The source location of each instruction of ``graph`` that has one in ``ir`` (the IR text it was built from),
    with the lines of the files that may be read (module docstring).

    Args:
        ir: LLVM IR text, with debug information (else the result is empty).
        graph: The graph built from ``ir``.
        near: The input's path: it and the files below its directory may be read, and a source file the debug
            information names is also looked for beside it. None: only the ``source_root`` directories.
        source_root: A directory (or several) whose files may be read too, wherever the debug information places
            them (a source file it names is also looked for there).

    Raises:
        GraphCreationError: ``ir`` is not valid IR.
    """
    out = SourceLocations()
    if "!dbg" not in ir:
        return out
    ir = _as_llvm_prints(ir)
    if "!dbg" not in ir:  # LLVM dropped debug information it found invalid
        return out
    policy = _Policy(near, _roots_of(source_root))
    metadata = {int(m.group(1)): (m.group(2), m.group(3)) for m in _METADATA.finditer(ir)}
    cache: dict[int, int | None] = {}  # scope -> file index
    located: list[tuple[str, str]] = []  # per file: (name, directory) as recorded

    def file_of(ref: int, depth: int = 0) -> int | None:
        if ref in cache:
            return cache[ref]
        found = None
        kind, body = metadata.get(ref, ("", ""))
        fields = _fields(body)
        if kind == "DIFile":
            name = _unescape_ir(str(fields.get("filename", "")))
            directory = _unescape_ir(str(fields.get("directory", "")))
            shown = name if os.path.isabs(name) or not directory else os.path.join(directory, name)
            if shown not in out.files:
                out.files.append(shown)
                out.lines.append({})
                located.append((name, directory))
            found = out.files.index(shown)
        elif depth < 64:
            for key in ("file", "scope"):
                value = fields.get(key)
                if isinstance(value, str) and value.startswith("!"):
                    found = file_of(int(value[1:]), depth + 1)
                    if found is not None:
                        break
        cache[ref] = found
        return found

    for i, node in enumerate(graph.node):
        feature = node.features.feature.get("full_text") if node.HasField("features") else None
        if feature is None or not feature.bytes_list.value:
            continue
        match = _DBG.search(feature.bytes_list.value[0].decode("utf-8", "replace"))
        if not match:
            continue
        kind, body = metadata.get(int(match.group(1)), ("", ""))
        if kind != "DILocation":
            continue
        fields = _fields(body)
        line = fields.get("line")
        scope = fields.get("scope")
        if not isinstance(line, int) or line <= 0 or not isinstance(scope, str):
            continue
        index = file_of(int(scope[1:]))
        if index is None:
            continue
        column = fields.get("column")
        out.nodes[i] = (index, line, column if isinstance(column, int) else 0)
    for index, (name, directory) in enumerate(located):
        wanted = {line for f, line, _ in out.nodes.values() if f == index}
        path, checked, why = policy.resolve(name, directory, near)
        if path is None or checked is None:
            out.not_embedded[out.files[index]] = why
            continue
        out.lines[index], why = _read_lines(path, checked, wanted)
        if why:
            out.not_embedded[out.files[index]] = why
    return out
