"""Source lines of a graph's instructions, from the debug information of the IR it was built from.

An instruction compiled with ``-g`` carries a ``!dbg !N`` attachment in its ``full_text`` (SPEC §1.2); ``!N`` is a
``DILocation`` (line, column, scope) defined at the end of the IR text, whose scope chain leads to a ``DIFile``. The
graph holds only the attachment, so the locations are read from the IR text. ``programl view`` compiles C, C++,
OpenCL, CUDA and Fortran sources with ``-g`` for this (the graph is the same: LLVM 22 keeps debug information in
records, not instructions).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from programl.proto import ProgramGraph

__all__ = ["SourceLocations", "source_locations"]

_METADATA = re.compile(r"^!(\d+) = (?:distinct )?!(\w+)\((.*)\)\s*$", re.MULTILINE)
_FIELD = re.compile(r'(\w+): (?:!(\d+)|"((?:[^"\\]|\\.)*)"|(-?\d+))')
_DBG = re.compile(r"!dbg !(\d+)")
#: Lines longer than this are cut in the page.
MAX_LINE = 240


@dataclass
class SourceLocations:
    """Where instructions come from.

    Attributes:
        files: The source files named, as the debug information names them.
        nodes: Node id -> ``(index in files, line, column)``.
        lines: Per file (same order as ``files``): line number -> the line's text, for the lines that ``nodes``
            point at and that could be read (the file exists where the debug information says, or beside the
            input); empty when the file cannot be read.
    """

    files: list[str] = field(default_factory=list)
    nodes: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    lines: list[dict[int, str]] = field(default_factory=list)


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


def _resolve(name: str, directory: str, near: str | None) -> str | None:
    """A readable path for a ``DIFile``: as recorded, else beside ``near`` (the input), else None."""
    candidates = [name if os.path.isabs(name) else os.path.join(directory, name), name]
    if near:
        candidates.append(os.path.join(os.path.dirname(near), os.path.basename(name)))
    for path in candidates:
        if path and os.path.isfile(path):
            return path
    return None


def source_locations(ir: str, graph: ProgramGraph, near: str | None = None) -> SourceLocations:
    """The source location of each instruction of ``graph`` that has one in ``ir`` (the IR text it was built from).

    Args:
        ir: LLVM IR text, with debug information (else the result is empty).
        graph: The graph built from ``ir``.
        near: The input's path: a source file the debug information names relatively is also looked for beside it.
    """
    out = SourceLocations()
    if "!dbg" not in ir:
        return out
    metadata = {int(m.group(1)): (m.group(2), m.group(3)) for m in _METADATA.finditer(ir)}
    cache: dict[int, int | None] = {}  # scope -> file index

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
                paths.append(_resolve(name, directory, near))
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

    paths: list[str | None] = []
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
    for index, path in enumerate(paths):
        if path is None:
            continue
        wanted = {line for f, line, _ in out.nodes.values() if f == index}
        try:
            with open(path, encoding="utf-8", errors="replace") as file:
                for number, text in enumerate(file, 1):
                    if number in wanted:
                        text = text.rstrip("\n")
                        out.lines[index][number] = text if len(text) <= MAX_LINE else text[: MAX_LINE - 3] + "..."
        except OSError:
            continue
    return out
