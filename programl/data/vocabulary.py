"""Node-text vocabulary: build, save, load and measure coverage (docs/spec/models.md#vocabulary,
docs/spec/models.md#vocabulary-coverage).

A :class:`Vocabulary` maps ``node.text`` to an integer id: id ``r`` is row ``r`` of the count-ordered table, and every
unknown text gets the single out-of-vocabulary id ``len(vocabulary)`` (the embedding table therefore has
``len(vocabulary) + 1`` rows).

File format (ProGraML's ``vocab/programl.csv``; tab-separated despite the name)::

    cumulative_frequency<TAB>cumulative_node_frequency<TAB>count<TAB>text
    0.3185<TAB>0.3185<TAB>1234<TAB>i32
    ...

rows in descending count order; ``cumulative_frequency`` = running count / total count of the counted texts,
``cumulative_node_frequency`` = running count / total number of nodes seen (the two differ only when some nodes are
not counted, e.g. a vocabulary restricted to instruction nodes); both printed with 4 significant digits.

Loading follows ProGraML's ``LoadVocabulary``: skip the header; row ``r`` (0-based after the header) gets id ``r``;
stop after the first row whose cumulative frequency is ``>= target_cumfreq`` (default 1.0), or after ``max_items``
rows when ``max_items > 0``. The released ``programl.csv`` loads unchanged.

Two deliberate differences from ProGraML's generator (``create_vocab.cc``; the first quirk is described in
docs/spec/models.md#vocabulary):

* **No collapsing of equal counts.** The original orders rows through a set keyed on count alone, so of several
  texts with the same count only one survives. Here every text gets a row; ties are broken by text (code-point
  order), so the table is deterministic.
* **Cumulative columns round down** (still 4 significant digits): the original rounds to nearest, so a row well
  before the end can already print ``1`` and a loader with ``target_cumfreq=1.0`` silently drops every rarer text.
  Rounding down keeps ``1`` for the last row only, so a file written here loads completely with the default
  ``target_cumfreq`` (both here and with the original loader).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path

import numpy as np

from programl.proto import ProgramGraph

__all__ = [
    "HEADER",
    "CoverageReport",
    "Vocabulary",
    "build_vocabulary",
    "load_vocabulary",
    "save_vocabulary",
    "vocabulary_coverage",
]

#: Header line of the vocabulary file (tab-separated).
HEADER = ("cumulative_frequency", "cumulative_node_frequency", "count", "text")

_NODE_TYPE_NAMES = ("instruction", "variable", "constant", "type")
#: The largest vocabulary file :meth:`Vocabulary.load` reads by default (1 GiB; ProGraML's ``programl.csv`` is
#: well under 1 MiB).
MAX_FILE_BYTES = 1 << 30


def _floor_4g(numerator: int, denominator: int) -> str:
    """``numerator / denominator`` with 4 significant digits, rounded down, printed like C++ ``setprecision(4)``."""
    if denominator <= 0 or numerator <= 0:
        return "0"
    value = Decimal(numerator) / Decimal(denominator)
    exponent = value.adjusted()  # power of ten of the leading digit
    quantum = Decimal(1).scaleb(exponent - 3)
    value = value.quantize(quantum, rounding=ROUND_FLOOR)
    return f"{float(value):.4g}"


class Vocabulary(Mapping[str, int]):
    """An immutable text -> id mapping in count order (docs/spec/models.md#vocabulary).

    Behaves as a read-only ``dict`` from text to id (``vocab["i32"]``, ``"i32" in vocab``, ``vocab.get(t, oov)``,
    ``len(vocab)``), so it can be passed to :func:`programl.io.pyg.to_pyg` directly.

    Args:
        texts: The texts in id order (id = position); must be unique.
        counts: Optional occurrence count per text (same order), used when saving.
        total_nodes: Number of nodes the counts were taken from (the denominator of ``cumulative_node_frequency``);
            defaults to ``sum(counts)``.

    Raises:
        ValueError: Duplicate texts, or ``counts`` of the wrong length.
    """

    def __init__(
        self,
        texts: Sequence[str],
        counts: Sequence[int] | None = None,
        total_nodes: int | None = None,
    ) -> None:
        self._texts: tuple[str, ...] = tuple(texts)
        self._ids: dict[str, int] = {t: i for i, t in enumerate(self._texts)}
        if len(self._ids) != len(self._texts):
            dupes = sorted(t for t, c in Counter(self._texts).items() if c > 1)
            raise ValueError(f"duplicate texts in vocabulary: {dupes[:5]}")
        if counts is not None and len(counts) != len(self._texts):
            raise ValueError(f"{len(counts)} counts for {len(self._texts)} texts")
        self._counts: tuple[int, ...] | None = tuple(int(c) for c in counts) if counts is not None else None
        self.total_nodes = total_nodes

    # Mapping interface -----------------------------------------------------------------------------------------------
    def __getitem__(self, text: str) -> int:
        return self._ids[text]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def __contains__(self, text: object) -> bool:
        return text in self._ids

    def get(self, text: str, default: int | None = None) -> int | None:  # type: ignore[override]
        """The id of ``text``, or ``default`` when it is not in the vocabulary (as ``dict.get``)."""
        return self._ids.get(text, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Vocabulary):
            return self._texts == other._texts
        return Mapping.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        head = ", ".join(repr(t) for t in self._texts[:3])
        return f"Vocabulary({len(self)} texts: {head}{', ...' if len(self) > 3 else ''})"

    # Encoding --------------------------------------------------------------------------------------------------------
    @property
    def oov_id(self) -> int:
        """The id of every unknown text: ``len(self)``."""
        return len(self._texts)

    @property
    def texts(self) -> tuple[str, ...]:
        """The texts in id order."""
        return self._texts

    @property
    def counts(self) -> tuple[int, ...] | None:
        """Occurrence counts in id order, when known."""
        return self._counts

    def encode(self, texts: Iterable[str]) -> np.ndarray:
        """Ids of ``texts`` as an int64 array (unknown -> :attr:`oov_id`)."""
        oov = self.oov_id
        return np.fromiter((self._ids.get(t, oov) for t in texts), dtype=np.int64)

    def decode(self, ids: Iterable[int]) -> list[str | None]:
        """Texts of ``ids`` (the OOV id, or any id out of range, gives None)."""
        n = len(self._texts)
        return [self._texts[i] if 0 <= i < n else None for i in (int(i) for i in ids)]

    def encode_graph(self, graph: ProgramGraph) -> np.ndarray:
        """Ids of the node texts of ``graph``, in node order."""
        return self.encode(n.text for n in graph.node)

    # Construction ----------------------------------------------------------------------------------------------------
    @classmethod
    def from_counts(
        cls,
        counts: Mapping[str, int],
        *,
        total_nodes: int | None = None,
        max_items: int = 0,
        min_count: int = 1,
    ) -> Vocabulary:
        """A vocabulary ordered by descending count, ties broken by text (see the module docstring).

        Args:
            counts: Occurrences per text.
            total_nodes: Nodes seen in total (default: the sum of ``counts``).
            max_items: Keep only the first ``max_items`` rows (0 = all).
            min_count: Drop texts seen fewer times.
        """
        rows = sorted(((t, c) for t, c in counts.items() if c >= min_count), key=lambda tc: (-tc[1], tc[0]))
        if total_nodes is None:
            total_nodes = sum(counts.values())
        if max_items > 0:
            rows = rows[:max_items]
        return cls([t for t, _ in rows], [c for _, c in rows], total_nodes=total_nodes)

    # Persistence -----------------------------------------------------------------------------------------------------
    def to_tsv(self) -> str:
        """The vocabulary in ProGraML's tab-separated format (module docstring); needs :attr:`counts`.

        Raises:
            ValueError: Counts are unknown, or a text contains a tab or a line break.
        """
        if self._counts is None:
            raise ValueError("a vocabulary without counts cannot be saved in the count-ordered format")
        total = sum(self._counts)
        total_nodes = self.total_nodes if self.total_nodes is not None else total
        lines = ["\t".join(HEADER)]
        running = 0
        for text, count in zip(self._texts, self._counts, strict=True):
            if any(c in text for c in "\t\n\r"):
                raise ValueError(f"text {text!r} contains a tab or line break and cannot be stored")
            running += count
            lines.append(f"{_floor_4g(running, total)}\t{_floor_4g(running, total_nodes)}\t{count}\t{text}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_tsv(cls, text: str, *, target_cumfreq: float = 1.0, max_items: int = 0) -> Vocabulary:
        """Parse the tab-separated format with ProGraML's loading rules (module docstring).

        Raises:
            ValueError: A row does not have four tab-separated fields or has a non-numeric frequency/count.
        """
        texts: list[str] = []
        counts: list[int] = []
        lines = text.splitlines()
        for lineno, line in enumerate(lines[1:], start=2):
            if not line:
                continue
            parts = line.split("\t", 3)
            if len(parts) != 4:
                raise ValueError(f"line {lineno}: expected 4 tab-separated fields, got {len(parts)}")
            try:
                cumfreq = float(parts[0])
                count = int(parts[2])
            except ValueError as e:
                raise ValueError(f"line {lineno}: {e}") from None
            texts.append(parts[3])
            counts.append(count)
            if cumfreq >= target_cumfreq or (max_items > 0 and len(texts) >= max_items):
                break
        return cls(texts, counts)

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_tsv` to ``path`` (atomically: temporary file + rename)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_text(self.to_tsv(), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        *,
        target_cumfreq: float = 1.0,
        max_items: int = 0,
        max_bytes: int | None = MAX_FILE_BYTES,
    ) -> Vocabulary:
        """Read a vocabulary file (ours or ProGraML's ``programl.csv``); see :meth:`from_tsv`.

        The file may have been received (an exported model's, ``train --init-from``): it is read only when it is a
        regular file of at most ``max_bytes`` bytes (:func:`~programl.util.safe_torch.read_regular_file`), so a FIFO
        or a device in its place is refused instead of blocking or filling memory.

        Raises:
            ProgramlError: Not a regular file, or larger than ``max_bytes`` (one line naming it).
            OSError: The file cannot be opened.
            UnicodeDecodeError, ValueError: Not a vocabulary (see :meth:`from_tsv`).
        """
        from programl.util.safe_torch import read_regular_file

        data = read_regular_file(path, max_bytes, what="vocabulary")
        return cls.from_tsv(data.decode("utf-8"), target_cumfreq=target_cumfreq, max_items=max_items)


def _node_texts(graph: ProgramGraph, node_types: Iterable[int] | None) -> Iterator[str]:
    if node_types is None:
        return (n.text for n in graph.node)
    keep = frozenset(node_types)
    return (n.text for n in graph.node if n.type in keep)


def build_vocabulary(
    graphs: Iterable[ProgramGraph],
    *,
    node_types: Iterable[int] | None = None,
    max_items: int = 0,
    min_count: int = 1,
) -> Vocabulary:
    """Count the node texts of ``graphs`` and return the count-ordered vocabulary (docs/spec/models.md#vocabulary).

    Args:
        graphs: Any iterable of ProgramGraphs (consumed once).
        node_types: Count only nodes of these ``Node.Type`` values (e.g. ``[0]`` for the CDFG vocabulary of
            instruction opcodes); ``cumulative_node_frequency`` is still relative to all nodes.
        max_items: Keep at most this many rows (0 = all).
        min_count: Drop texts seen fewer times.
    """
    counts: Counter[str] = Counter()
    total_nodes = 0
    types = None if node_types is None else tuple(node_types)
    for graph in graphs:
        if not isinstance(graph, ProgramGraph):
            raise TypeError(f"build_vocabulary() expects ProgramGraphs, got {type(graph).__name__}")
        total_nodes += len(graph.node)
        counts.update(_node_texts(graph, types))
    return Vocabulary.from_counts(counts, total_nodes=total_nodes, max_items=max_items, min_count=min_count)


def save_vocabulary(vocabulary: Vocabulary, path: str | os.PathLike) -> None:
    """Write ``vocabulary`` to ``path`` in ProGraML's tab-separated format."""
    vocabulary.save(path)


def load_vocabulary(path: str | os.PathLike, *, target_cumfreq: float = 1.0, max_items: int = 0) -> Vocabulary:
    """Read a vocabulary file with ProGraML's loading rules (``target_cumfreq``, ``max_items``)."""
    return Vocabulary.load(path, target_cumfreq=target_cumfreq, max_items=max_items)


@dataclass
class CoverageReport:
    """How many nodes of some graphs have a text in the vocabulary (docs/spec/models.md#vocabulary-coverage).

    Attributes:
        nodes: Number of nodes examined.
        covered: Number of those whose text is in the vocabulary.
        per_type: ``{"instruction": (covered, nodes), "variable": ..., "constant": ...}`` (and ``"type"`` if any).
    """

    nodes: int = 0
    covered: int = 0
    per_type: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def coverage(self) -> float:
        """Fraction of nodes covered (NaN when there are no nodes)."""
        return self.covered / self.nodes if self.nodes else math.nan

    def type_coverage(self, node_type: str) -> float:
        """Fraction of nodes of ``node_type`` covered (NaN when there are none)."""
        covered, nodes = self.per_type.get(node_type, (0, 0))
        return covered / nodes if nodes else math.nan

    def as_dict(self) -> dict[str, object]:
        """A JSON-friendly summary."""
        return {
            "nodes": self.nodes,
            "covered": self.covered,
            "coverage": self.coverage,
            "per_type": {
                name: {"nodes": n, "covered": c, "coverage": c / n if n else None}
                for name, (c, n) in self.per_type.items()
            },
        }


def vocabulary_coverage(vocabulary: Mapping[str, int], graphs: Iterable[ProgramGraph]) -> CoverageReport:
    """Fraction of the nodes of ``graphs`` whose text is in ``vocabulary``, overall and per node type
    (docs/spec/models.md#vocabulary-coverage)."""
    covered = [0, 0, 0, 0]
    nodes = [0, 0, 0, 0]
    for graph in graphs:
        for node in graph.node:
            t = node.type if 0 <= node.type < 4 else 3
            nodes[t] += 1
            if node.text in vocabulary:
                covered[t] += 1
    per_type = {name: (covered[t], nodes[t]) for t, name in enumerate(_NODE_TYPE_NAMES) if t < 3 or nodes[t]}
    return CoverageReport(nodes=sum(nodes), covered=sum(covered), per_type=per_type)
