"""The printed form of a module, split into the pieces the graph builder needs
(docs/spec/design.md#building-graphs-fast).

The reference builder prints each instruction with ``Instruction::print``, which numbers every value of the
function each time: a walk that prints every instruction is quadratic. We print the whole module once (linear) and
cut the text into per-function instruction texts, global definition lines and metadata lines. LLVM's printer is
regular enough for this:

* a function definition starts with a line ``define ... {`` and ends with a line ``}``;
* inside it an instruction starts on a line indented by exactly two spaces; its continuation lines
  (``switch`` cases, ``invoke``'s ``to label ... unwind label ...``, ``landingpad`` clauses, the closing ``  ]`` of a
  ``switch``) are indented more or are ``  ]``; debug records (``    #dbg_value(...)``) are not instructions;
  block labels start in column 0, as do comments;
* a global definition starts with ``@name = `` in column 0, metadata with ``!`` in column 0.

The builder checks that it found exactly as many instruction texts as LLVM has instructions in each function, and
falls back to printing that function's instructions one by one when it did not.

:func:`nesting_depth` measures how deeply brackets nest in IR text before LLVM sees it: LLVM's parser (and its
printer) recurse once per level of a constant expression, type or metadata tuple, about 1.3 KB of stack per level,
so ten thousand levels overflow an 8 MB stack and kill the process, which Python cannot catch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter

import numpy as np

__all__ = [
    "FunctionText",
    "ModuleText",
    "llvm_identifier",
    "nesting_depth",
    "opcode_of",
    "opcodes_of",
    "result_names_of",
    "result_name_of",
    "split_module",
]

_PLAIN_NAME = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*\Z")


def llvm_identifier(name: str, sigil: str) -> str:
    """A name as LLVM prints it after ``sigil`` (``%`` or ``@``): quoted and escaped when it must be."""
    if _PLAIN_NAME.match(name):
        return sigil + name
    escaped = "".join(
        c if (" " <= c <= "~" and c not in '"\\') else "".join(f"\\{b:02X}" for b in c.encode("utf-8")) for c in name
    )
    return f'{sigil}"{escaped}"'


def _identifier_end(text: str) -> int:
    """Index just past the ``%name`` / ``@name`` identifier at the start of ``text``."""
    if len(text) > 1 and text[1] == '"':
        return text.index('"', 2) + 1
    space = text.find(" ")
    return len(text) if space < 0 else space


def result_name_of(instruction_text: str) -> str:
    """The ``%name`` an instruction defines (``""`` when it defines none)."""
    if not instruction_text.startswith("%"):
        return ""
    return instruction_text[: _identifier_end(instruction_text)]


_CALL_MARKERS = frozenset({"tail", "musttail", "notail"})


def opcode_of(instruction_text: str) -> str:
    """The opcode name of a printed instruction (``getOpcodeName``): ``%3 = tail call ...`` -> ``call``."""
    rest = instruction_text
    if rest.startswith("%"):
        rest = rest[_identifier_end(rest) + 3 :]  # skip "%x = "
    end = rest.find(" ")
    word = rest if end < 0 else rest[:end]
    if word in _CALL_MARKERS:
        rest = rest[end + 1 :]
        end = rest.find(" ")
        word = rest if end < 0 else rest[:end]
    # `unreachable, !dbg !4` and similar one-word instructions with attachments
    return word.rstrip(",")


def opcodes_of(instruction_texts: list[str]) -> list[str]:
    """:func:`opcode_of` of each text: the word after ``%x = `` by ``str.partition``, and :func:`opcode_of` itself
    where that shortcut might not hold (a quoted name, which may hold `` = ``; a call marker)."""
    words = [
        (text.partition(" = ")[2] if text[:1] == "%" else text).partition(" ")[0].rstrip(",")
        for text in instruction_texts
    ]
    if _CALL_MARKERS.isdisjoint(words) and '\0%"' not in "\0" + "\0".join(instruction_texts):
        return words
    for index, (text, word) in enumerate(zip(instruction_texts, words)):
        if text[1:2] == '"' or word in _CALL_MARKERS:
            words[index] = opcode_of(text)
    return words


def result_names_of(instruction_texts: list[str]) -> list[str]:
    """:func:`result_name_of` of each text (``str.partition`` but for quoted names).

    When every text starts with an unquoted ``%name`` (as results do), the first words are cut by ``str.partition``
    mapped in C, and checked at once on their join."""
    names = list(map(itemgetter(0), map(str.partition, instruction_texts, repeat(" "))))
    joined = "\0" + "\0".join(names)
    if joined.count("\0") == len(names) and joined.count("\0%") == len(names) and '\0%"' not in joined:
        return names
    return [
        (text.partition(" ")[0] if text[1:2] != '"' else result_name_of(text)) if text[:1] == "%" else ""
        for text in instruction_texts
    ]


@dataclass
class FunctionText:
    """One function definition: its ``define`` line and its instruction texts in order."""

    header: str
    instructions: list[str] = field(default_factory=list)


@dataclass
class ModuleText:
    """The printed module, cut into pieces."""

    source_filename: str | None
    globals: dict[str, str]
    functions: list[FunctionText]
    metadata_lines: list[str]
    _metadata: dict[str, str] | None = None

    @property
    def metadata(self) -> dict[str, str]:
        """``!N`` -> the text after ``!N = `` (parsed on first use: only profile features need it)."""
        if self._metadata is None:
            self._metadata = {}
            for line in self.metadata_lines:
                key, sep, value = line.partition(" = ")
                if sep:
                    self._metadata[key] = value
        return self._metadata


def _unquote_source_filename(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        value = value[1:-1]
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), value)


_DEBUG_RECORD = re.compile(r"\n    #dbg_[^\n]*")


def split_module(text: str) -> ModuleText:
    """Cut LLVM's printing of a module into per-function instruction texts, globals and metadata.

    Function definitions are found with ``str.find`` and cut into instructions with ``str.split`` (see
    :func:`_instruction_texts`); only the lines between them are read one by one."""
    if "\0" in text:  # (never in LLVM's printing) the separator below would be ambiguous
        return _split_module_by_lines(text)
    functions: list[FunctionText] = []
    outside: list[str] = []  # the text between function definitions
    done = 0
    start = 0 if text.startswith("define ") else text.find("\ndefine ") + 1
    while start >= 0 and (start > 0 or not functions):
        if start == 0 and not text.startswith("define "):
            break
        header_end = text.find("\n", start)
        end = text.find("\n}\n", header_end) if header_end >= 0 else -1
        if end < 0 and header_end >= 0 and text.endswith("\n}", header_end):
            end = len(text) - 2
        if end < 0:  # not closed: left to the line-by-line reading below
            break
        outside.append(text[done:start])
        functions.append(FunctionText(text[start:header_end], _instruction_texts(text[header_end : end + 1])))
        done = end + 3
        start = text.find("\ndefine ", end + 2) + 1
        if start == 0:
            break
    outside.append(text[done:])
    module = _split_module_by_lines("\n".join(outside))
    module.functions = functions + module.functions
    return module


def _instruction_texts(body: str) -> list[str]:
    """The instruction texts of a function body (``\n``, its lines, ``\n``): each line indented by exactly two
    spaces (but ``  ]``) starts an instruction; lines indented more (but debug records) and ``  ]`` continue it;
    other lines (block labels, comments, blank lines) end it."""
    if "\n    #dbg_" in body:
        body = _DEBUG_RECORD.sub("", body)
    multiline = "\n   " in body or "\n  ]\n" in body
    if multiline:  # hide the line breaks inside instructions
        body = body.replace("\n   ", "\0   ").replace("\n  ]\n", "\0  ]\n")
    texts = [piece.partition("\n")[0] for piece in body.split("\n  ")[1:]]
    if multiline:
        texts = [t.replace("\0", "\n") for t in texts]
    return texts


def _split_module_by_lines(text: str) -> ModuleText:
    """:func:`split_module`, one line at a time."""
    source_filename = None
    globals_: dict[str, str] = {}
    functions: list[FunctionText] = []
    metadata: list[str] = []
    current: list[str] | None = None  # instruction texts of the function being read
    lines_of_current: list[str] = []  # lines of the instruction being read

    for line in text.split("\n"):
        if current is not None:
            if line.startswith("  "):
                third = line[2:3]
                if third != " " and line != "  ]":  # a new instruction
                    if lines_of_current:
                        current.append("\n".join(lines_of_current))
                    lines_of_current = [line[2:]]
                elif line.startswith("    #dbg_"):  # a debug record, not an instruction
                    continue
                else:  # continuation of the instruction being read
                    lines_of_current.append(line)
            elif line == "}":
                if lines_of_current:
                    current.append("\n".join(lines_of_current))
                lines_of_current = []
                current = None
            # else: block label, comment or blank line
            continue
        if not line:
            continue
        first = line[0]
        if first == "@":
            globals_[line[: _identifier_end(line)]] = line
        elif first == "!":
            metadata.append(line)
        elif line.startswith("define "):
            function = FunctionText(header=line)
            functions.append(function)
            current = function.instructions
        elif line.startswith("source_filename = "):
            source_filename = _unquote_source_filename(line[len("source_filename = ") :])
    return ModuleText(source_filename, globals_, functions, metadata)


# strings ("..." never holds a raw quote: LLVM escapes it as \22) and comments hold no syntax
_NOT_CODE = re.compile(r'"[^"]*"?|;[^\n]*')
_BRACKET_STEP = np.zeros(256, dtype=np.int8)
_BRACKET_STEP[list(b"([{<")] = 1
_BRACKET_STEP[list(b")]}>")] = -1
_NOT_BRACKETS = bytes(b for b in range(256) if not _BRACKET_STEP[b])
# the same on UTF-8 bytes reduced to brackets and the characters _NOT_CODE looks at (a match consumes the same
# brackets with or without the characters in between)
_NOT_CODE_BYTES = re.compile(rb'"[^"]*"?|;[^\n]*')
_NOT_SYNTAX = bytes(b for b in range(256) if not _BRACKET_STEP[b] and b not in b'";\n')


def _depths(steps: np.ndarray) -> np.ndarray:
    """Nesting depth after every step (+1, -1 or 0), floored at 0 as a parser stops at an unmatched closer."""
    walk = np.cumsum(steps, dtype=np.int64)
    return walk - np.minimum(np.minimum.accumulate(walk), 0) if len(walk) else walk


def _steps(data: bytes) -> np.ndarray:
    return _BRACKET_STEP[np.frombuffer(data, dtype=np.uint8)]


def nesting_depth(text: str, limit: int | None = None) -> tuple[int, int | None]:
    """The deepest nesting of ``( [ { <`` outside strings and comments in IR text.

    Linear: the text is cut down to brackets, quotes, semicolons and newlines, a regular expression drops strings
    and comments, numpy sums the brackets. A text (up to ``64 * limit``
    characters) with at most ``limit`` opening brackets in all is not scanned (it cannot nest deeper).

    Args:
        text: LLVM IR.
        limit: The depth of interest: when the text nests deeper, the offset of the first bracket past it is found.

    Returns:
        ``(depth, offset)``: the maximum depth (when the text was not scanned: its number of opening brackets, an
        upper bound no larger than ``limit``), and the
        UTF-8 byte offset of the first opening bracket at depth ``limit + 1`` (None when the text nests no deeper).
    """
    if limit is not None and len(text) <= 64 * limit:  # (a longer text nearly always has more brackets)
        openers = text.count("(") + text.count("[") + text.count("{") + text.count("<")
        if openers <= limit:
            return openers, None
    # only brackets, quotes, semicolons and newlines matter: drop the rest before the regular expression runs
    syntax = text.encode("utf-8", "surrogatepass").translate(None, _NOT_SYNTAX)
    brackets = _NOT_CODE_BYTES.sub(b"", syntax).translate(None, _NOT_BRACKETS)
    depths = _depths(_steps(brackets))
    depth = int(depths.max()) if len(depths) else 0
    if limit is None or depth <= limit:
        return depth, None
    # rare: locate the bracket, with strings and comments blanked (not dropped) so that offsets stay those of text
    data = _NOT_CODE.sub(lambda m: " " * len(m.group().encode("utf-8", "surrogatepass")), text)
    data_bytes = data.encode("utf-8", "surrogatepass")
    return depth, int(np.argmax(_depths(_steps(data_bytes)) > limit))
