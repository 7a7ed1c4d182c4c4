"""Saving and loading lists of program graphs (docs/spec/python-api.md#serialization), with programl 0.3.2's semantics.

Graphs travel as one ``ProgramGraphList`` message (``context`` unset), gzip-compressed by default:

* :func:`to_bytes` / :func:`from_bytes`: the binary wire format, ``compression="gz"`` or ``None``; any other value
  raises ``TypeError``. Corrupt input raises :class:`~programl.exceptions.GraphCreationError`.
* :func:`save_graphs` / :func:`load_graphs`: the same through a file.
* :func:`to_string` / :func:`from_string`: protobuf text format.
* ``idx_list`` selects graphs by index; ``None`` **or an empty list** returns all graphs (as in 0.3.2, where the
  empty list is falsy); an index out of range raises ``IndexError``, an ``idx_list`` that is not a sequence of
  indices ``TypeError`` (0.3.2 returned every graph for ``0``).

Three checks 0.3.2 did not make, so that a wrong file is an error rather than a wrong answer: the bytes of one
``ProgramGraph`` (what ``programl build`` writes) parse as a ``ProgramGraphList`` of empty graphs, one per edge,
so a list with fields no ``ProgramGraphList`` has is refused, naming the single graph when it is one; empty input
is not gzip data; ``data`` and ``string`` must be bytes and str.

Two deliberate refinements, neither visible to a reader of the bytes: gzip output has a zero timestamp and protobuf
maps are serialized in sorted order, so the same graphs always give the same bytes; :func:`save_graphs` writes
atomically (a temporary file renamed over the destination).
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable, Iterable

from google.protobuf import message as pb_message
from google.protobuf import text_format, unknown_fields

from programl.exceptions import GraphCreationError
from programl.proto import ProgramGraph, ProgramGraphList
from programl.util.fs import atomic_write_bytes

__all__ = ["from_bytes", "from_string", "load_graphs", "save_graphs", "to_bytes", "to_string"]


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


_COMPRESSORS: dict[str | None, Callable[[bytes], bytes]] = {"gz": _gzip, None: lambda data: data}
_DECOMPRESSORS: dict[str | None, Callable[[bytes], bytes]] = {"gz": gzip.decompress, None: lambda data: data}


def _codec(table: dict[str | None, Callable[[bytes], bytes]], compression: str | None) -> Callable[[bytes], bytes]:
    try:
        return table[compression]
    except (KeyError, TypeError):
        supported = ", ".join(sorted(str(name) for name in table))
        raise TypeError(f"Invalid compression argument: {compression}. Supported compressions: {supported}") from None


def _select(graph_list: ProgramGraphList, idx_list: list[int] | None) -> list[ProgramGraph]:
    if idx_list is not None and (isinstance(idx_list, (str, bytes)) or not isinstance(idx_list, Iterable)):
        raise TypeError(f"idx_list must be a list of graph indices or None, not {type(idx_list).__name__}")
    if idx_list:
        return [graph_list.graph[i] for i in idx_list]
    return list(graph_list.graph)


def _check_is_graph_list(graph_list: ProgramGraphList, data: bytes) -> None:
    """Refuse a message that parsed as a ``ProgramGraphList`` only by leaving fields unknown (see the module doc)."""
    if not len(unknown_fields.UnknownFieldSet(graph_list)) and not len(
        unknown_fields.UnknownFieldSet(graph_list.context)
    ):
        return
    graph = ProgramGraph()
    try:
        graph.ParseFromString(data)
    except pb_message.DecodeError:
        graph = None
    if graph is not None and len(graph.node) and not len(unknown_fields.UnknownFieldSet(graph)):
        raise GraphCreationError(
            f"this is one ProgramGraph ({len(graph.node)} nodes), not a ProgramGraphList: read it with "
            "programl.read_graph() (a .ProgramGraph.pb file) or ProgramGraph.FromString()"
        )
    raise GraphCreationError("not a ProgramGraphList: it has fields a ProgramGraphList does not have")


def to_bytes(graphs: Iterable[ProgramGraph], compression: str | None = "gz") -> bytes:
    """Serialize a sequence of program graphs to bytes.

    Args:
        graphs: An iterable of ``ProgramGraph``.
        compression: ``"gz"`` (default) for gzip, or ``None`` for the raw ``ProgramGraphList`` message.

    Returns:
        The serialized graphs.

    Raises:
        TypeError: ``compression`` is not ``"gz"`` or ``None``.
    """
    compress = _codec(_COMPRESSORS, compression)
    return compress(ProgramGraphList(graph=list(graphs)).SerializeToString(deterministic=True))


def from_bytes(data: bytes, idx_list: list[int] | None = None, compression: str | None = "gz") -> list[ProgramGraph]:
    """Deserialize program graphs from bytes written by :func:`to_bytes`.

    Args:
        data: The serialized graphs.
        idx_list: Zero-based indices of the graphs to return; ``None`` or empty returns all.
        compression: ``"gz"`` (default) or ``None``, as given to :func:`to_bytes`.

    Returns:
        A list of ``ProgramGraph``.

    Raises:
        TypeError: ``compression`` is not ``"gz"`` or ``None``, ``data`` is not bytes, or ``idx_list`` is not a
            sequence of indices.
        GraphCreationError: The data is not a (compressed) ``ProgramGraphList`` (the bytes of a single
            ``ProgramGraph`` included, which the message says), or is empty with ``compression="gz"``.
    """
    decompress = _codec(_DECOMPRESSORS, compression)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"from_bytes() expects bytes, got {type(data).__name__}")
    if compression == "gz" and not len(data):
        raise GraphCreationError("empty input: not gzip data (an empty list saved with compression='gz' is 20 bytes)")
    graph_list = ProgramGraphList()
    try:
        raw = decompress(data)
        graph_list.ParseFromString(raw)
    except (gzip.BadGzipFile, EOFError, zlib.error, pb_message.DecodeError) as error:
        raise GraphCreationError(str(error) or type(error).__name__) from error
    _check_is_graph_list(graph_list, raw)
    return _select(graph_list, idx_list)


def save_graphs(path: str | os.PathLike, graphs: Iterable[ProgramGraph], compression: str | None = "gz") -> None:
    """Write a sequence of program graphs to a file (atomically; see :func:`to_bytes`).

    Raises:
        TypeError: ``compression`` is not ``"gz"`` or ``None`` (nothing is written).
    """
    atomic_write_bytes(path, to_bytes(graphs, compression=compression))


def load_graphs(
    path: str | os.PathLike, idx_list: list[int] | None = None, compression: str | None = "gz"
) -> list[ProgramGraph]:
    """Read program graphs from a file written by :func:`save_graphs` (see :func:`from_bytes`).

    Raises:
        TypeError: ``compression`` is not ``"gz"`` or ``None``.
        GraphCreationError: The file is not a (compressed) ``ProgramGraphList``; its ``path`` names the file.
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        return from_bytes(data, idx_list=idx_list, compression=compression)
    except GraphCreationError as error:
        raise GraphCreationError(error.message, path=os.fspath(path)) from error


def to_string(graphs: Iterable[ProgramGraph]) -> str:
    """Serialize a sequence of program graphs to protobuf text format (a ``ProgramGraphList``).

    Map entries (features) are printed sorted by key, so the text is deterministic.
    """
    return text_format.MessageToString(ProgramGraphList(graph=list(graphs)))


def from_string(string: str, idx_list: list[int] | None = None) -> list[ProgramGraph]:
    """Deserialize program graphs from text written by :func:`to_string`.

    Args:
        string: A ``ProgramGraphList`` in protobuf text format.
        idx_list: Zero-based indices of the graphs to return; ``None`` or empty returns all.

    Raises:
        GraphCreationError: The text does not parse as a ``ProgramGraphList``.
    """
    if not isinstance(string, str):
        raise TypeError(f"from_string() expects str, got {type(string).__name__}")
    graph_list = ProgramGraphList()
    try:
        text_format.Merge(string, graph_list)
    except (text_format.ParseError, pb_message.DecodeError, UnicodeDecodeError) as error:
        raise GraphCreationError(str(error)) from error
    return _select(graph_list, idx_list)
