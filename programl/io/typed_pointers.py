"""Node texts of graphs built by the original ProGraML (LLVM 10) read as LLVM 22 prints them, so that the models of
this project read them (docs/spec/policy.md#llvm-22-texts, docs/spec/graph.md#type-texts; docs/llvm22.md
``opaque-pointer-texts``).

A graph made by ProGraML 0.3.2's ``llvm2graph-10`` (the released DeepDataFlow graphs, a user's own pipeline) names
every pointer by its pointee: a VARIABLE or CONSTANT node's text is its type with the struct-collapsing rule of
docs/spec/graph.md#type-texts (``i32*``, ``struct*``, ``i8**``, ``[4 x i8*]``, ``i32 (i32)*``, ``float addrspace(1)*``).
This project parses IR with LLVM 22, which has only opaque pointers, so its graphs (and the vocabularies of its models)
say ``ptr``, ``[4 x ptr]``, ``ptr addrspace(1)``. INSTRUCTION texts (opcodes, ``[external]``, ``; undefined function``)
are the same in both and never hold a ``*``.

:func:`llvm22_text` rewrites one text: every pointer type becomes ``ptr`` (``ptr addrspace(N)`` outside address
space 0), inside arrays, vectors and function types too; quoted names (``%"class.Foo<int*>"``) are left alone; a
text without ``*`` is returned as it is. It extends
:func:`programl.graph_builder.compare.normalize_type_text` (the normalisation of the differential tests) with
address spaces and quoted names.

How :func:`programl.io.pyg.to_pyg` (and the data sets, and ``programl predict``) use it, by the mode
``typed_pointers``:

* ``"auto"`` (the default): in a graph with typed-pointer texts (some node text ends in ``*``; a graph built by this
  project never has one), a text the vocabulary does not hold is looked up in its LLVM 22 form. A vocabulary of
  typed-pointer texts (the released ``vocab_20.06.01`` ``programl.csv``) keeps its own ids; this project's models
  (``ptr``) read the original's ``i32*`` as ``ptr``. A growing text table (a data set being processed) keeps the
  texts as they are.
* ``"map"``: every text is replaced by its LLVM 22 form before the lookup (also those the vocabulary holds, and
  for a growing table).
* ``"keep"``: texts are looked up as they are (the behaviour before this mapping existed: ``i32*`` is out of a
  ``ptr`` vocabulary).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from programl.graph_builder.compare import normalize_type_text

__all__ = [
    "TYPED_POINTER_MODES",
    "check_typed_pointers",
    "has_typed_pointer_texts",
    "llvm22_text",
    "llvm22_texts",
    "vocabulary_ids",
]

#: The values of the ``typed_pointers`` option (module docstring).
TYPED_POINTER_MODES: tuple[str, ...] = ("auto", "map", "keep")

_QUOTED = re.compile(r'%"[^"]*"')
# a type that a pointer can point to, as far as a regular expression sees one: a named or quoted type, a keyword
# (i32, float, void), a literal struct, an array, a vector, or a pointer already rewritten to an address space
_ATOM = r"(?:ptr addrspace\(\d+\)|%\"[^\"]*\"|%?[\w.$-]+|\{[^{}]*\}|\[[^\[\]]*\]|<[^<>]*>)"
# `<pointee> addrspace(N)*` (a function type's parameter list may follow the pointee), and any further `*`
_ADDRSPACE = re.compile(_ATOM + r"(?:\s*\([^()]*\))?\s*addrspace\((\d+)\)\*(\**)")


def _addrspace(match: re.Match) -> str:
    if match.group(2) or match.group(1) == "0":  # a pointer (in address space 0) to the address-space pointer
        return "ptr"
    return f"ptr addrspace({match.group(1)})"


@functools.lru_cache(maxsize=65536)
def llvm22_text(text: str) -> str:
    """The node text LLVM 22 gives the value whose LLVM 10 text is ``text`` (module docstring).

    >>> llvm22_text("i32*"), llvm22_text("struct**"), llvm22_text("[4 x i8*]"), llvm22_text("i32")
    ('ptr', 'ptr', '[4 x ptr]', 'i32')
    >>> llvm22_text("void (i8*, ...)*"), llvm22_text("<2 x double*>"), llvm22_text("float addrspace(1)*")
    ('ptr', '<2 x ptr>', 'ptr addrspace(1)')
    """
    if "*" not in text:
        return text
    quoted: list[str] = []

    def hide(match: re.Match) -> str:
        quoted.append(match.group(0))
        return f"%__programl_quoted_{len(quoted) - 1}__"

    out = _QUOTED.sub(hide, text)
    if "*" not in out:  # the only `*` were inside quoted names: a type of LLVM 22 as well
        return text
    if "addrspace(" in out:
        previous = None
        while previous != out:
            previous = out
            out = _ADDRSPACE.sub(_addrspace, out)
    if "*" in out:
        # normalize_type_text reads a text that ends in `*` as one pointer; `ptr addrspace(1)*` is one too
        out = normalize_type_text(out)
    for i, name in enumerate(quoted):
        out = out.replace(f"%__programl_quoted_{i}__", name)
    return out


def llvm22_texts(texts: Iterable[str]) -> list[str]:
    """:func:`llvm22_text` of every text."""
    return [llvm22_text(t) for t in texts]


def has_typed_pointer_texts(texts: Sequence[str]) -> bool:
    """Whether some text ends in ``*``: a graph of the original (LLVM 10) builder, in which every pointer-typed
    variable or constant says so; LLVM 22 never prints such a type."""
    return any(t.endswith("*") for t in texts)


def check_typed_pointers(mode: str) -> str:
    """``mode`` when it is one of :data:`TYPED_POINTER_MODES`.

    Raises:
        ValueError: Any other value (one line listing the modes).
    """
    if mode not in TYPED_POINTER_MODES:
        raise ValueError(f"typed_pointers must be one of {', '.join(TYPED_POINTER_MODES)}, not {mode!r}")
    return mode


def vocabulary_ids(texts: Sequence[str], vocabulary: Any, oov: int, mode: str = "auto") -> list:
    """The id of every text in a read-only ``vocabulary`` (anything with ``get(text, default)``), ``oov`` for a
    text it lacks, with the typed-pointer texts of a graph of the original looked up as ``mode`` says (module
    docstring): ``auto`` looks a missing typed-pointer text up in its LLVM 22 form when some text of ``texts`` ends
    in ``*``, ``map`` looks every text up so, ``keep`` as it is.

    Raises:
        ValueError: ``mode`` is not one of :data:`TYPED_POINTER_MODES`.
    """
    check_typed_pointers(mode)
    if mode == "map":
        return [vocabulary.get(llvm22_text(t), oov) for t in texts]
    values = [vocabulary.get(t, oov) for t in texts]
    if mode == "auto" and has_typed_pointer_texts(texts):
        values = [vocabulary.get(llvm22_text(t), oov) if v == oov and "*" in t else v for t, v in zip(texts, values)]
    return values
