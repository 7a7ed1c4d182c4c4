"""Label files of a DeepDataFlow data set: the original's protobuf per (graph, analysis), or one compact file per
graph (docs/spec/wire-format.md#label-records, docs/spec/datasets.md#deepdataflow-layout; docs/spec/datasets.md#builds).

Two forms hold the same records (per root: the root node, ``data_flow_step_count``, ``data_flow_active_node_count``
and the 0/1 ``data_flow_value`` of every node):

* ``protobuf``: ``labels/<analysis>/<name>.ProgramGraphFeaturesList.pb``, one ``ProgramGraphFeaturesList`` per graph
  and analysis (docs/spec/wire-format.md#label-records; ProGraML's released data sets, and ``programl dataset build
  --label-format protobuf``). Seven bytes per node per feature list, two lists per record: ~45 KB per POJ-104 graph and
  analysis.
* ``compact`` (this project's builder, the default): ``labels/all/<name>.DataFlowLabels.bin``, one file per graph
  holding every analysis that labelled it, ~200 bytes per analysis. Byte layout (little-endian)::

      header    "PGLABELS"  u16 version (1)  u16 sections  u32 nodes (N)
      sections  per analysis, in the build's analysis order:
                u8 name length, the analysis name (ASCII), u32 records (R), u32 payload bytes, u32 crc32 of the payload
      payloads  per section: zlib( u32 roots[R] | i64 step counts[R] | i64 active node counts[R] | the R x N
                                   0/1 labels, row after row, packed 8 to a byte, least significant bit first )

  A graph with no eligible root for an analysis has no section for it; a graph with none for any has no file.
  Every length, the checksum and the decompressed size are checked when read, so a damaged file is one line
  (:class:`LabelFileError`), never wrong labels.

Label files are received data. A file of either form is read only when it is a regular file (a directory, a FIFO or
a device such as ``/dev/zero`` is opened without blocking and refused unread) of at most
:data:`MAX_LABEL_FILE_BYTES`. A compact file's sizes are checked against its own size before anything is
decompressed or allocated: a section declares at most what its zlib payload can inflate to (1,032 bytes a byte) and
at most :data:`MAX_LABEL_VALUES` label values, and, where the graph is known (:func:`read_labels` with
``num_nodes``, :func:`convert_labels`), exactly the graph's number of nodes. Section names are printable ASCII.

Which file holds a graph's labels for an analysis: the protobuf file when there is one (the original's layout, or
the per-analysis override of a derived root, :mod:`~programl.data.deepdataflow.derived`), else the analysis's
section of the compact file (:func:`read_labels`). Both forms carry exactly the same records, and converting between
them (:func:`convert_labels`, ``programl dataset convert``) loses nothing: a compact data set converted to protobuf
has the label files a protobuf build writes, byte for byte.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from programl.data.deepdataflow.layout import COMPACT_LABEL_SUFFIX, LABEL_FORMATS, LABEL_SUFFIX, Layout
from programl.dataflow.base import AnalysisResult
from programl.exceptions import ProgramlError
from programl.util.fs import RefusedFileError, read_regular_file

__all__ = [
    "MAX_LABEL_FILE_BYTES",
    "MAX_LABEL_VALUES",
    "LabelFileError",
    "LabelWriteError",
    "check_label_format",
    "compact_analyses",
    "convert_labels",
    "decode_compact",
    "encode_compact",
    "label_file",
    "labelled_names",
    "read_compact",
    "read_labels",
    "remove_stale_temporaries",
    "write_labels",
]

MAGIC = b"PGLABELS"
VERSION = 1
_HEADER = struct.Struct("<8sHHI")  # magic, version, number of sections, nodes
_SECTION = struct.Struct("<III")  # records, payload bytes, crc32 of the payload (after the name)
_ZLIB_LEVEL = 6
_ZLIB_RATIO = 1032  # the most bytes deflate inflates one byte to (a 258-byte match coded in 2 bits)
#: The largest label file read, of either form: a protobuf file of a graph of a million nodes with ten records takes
#: ~140 MB, its compact file ~2 MB. A larger file is refused unread.
MAX_LABEL_FILE_BYTES = 256 << 20
#: The most label values (records x nodes) a section of a compact file may declare, one byte each once decoded:
#: ten records of a graph of 26 million nodes.
MAX_LABEL_VALUES = 1 << 28
_MAX_GRAPH_FILE_BYTES = 2 << 30  # the graph read to check a label file against (convert_labels)


class LabelFileError(ProgramlError, ValueError):
    """A label file that cannot be read (damaged, truncated, of a newer format, not a regular file, too large, or
    not of its graph's size); one line naming it."""


class LabelWriteError(ProgramlError):
    """A label file that cannot be written or removed (a read-only data set, a full disk, a file where a directory
    belongs); one line naming it and the operating system's reason."""


def _read_file(path: Path, limit: int = MAX_LABEL_FILE_BYTES, what: str = "label file") -> bytes | None:
    """The bytes of ``path``, None when there is no such file. Only a regular file of at most ``limit`` bytes is read
    (:func:`programl.util.fs.read_regular_file`: a FIFO put in its place is not waited on).

    Raises:
        LabelFileError: It is not a regular file, or holds more than ``limit`` bytes (one line naming it).
        OSError: It cannot be read.
    """

    def refused(why: str) -> LabelFileError:
        return LabelFileError(f"{path}: not a readable {what} ({why})")

    try:
        return read_regular_file(path, limit, what=what)
    except (FileNotFoundError, NotADirectoryError):  # (a file where a directory of the path belongs: none either)
        return None
    except RefusedFileError as error:
        raise refused(error.why) from None


# ---------------------------------------------------------------------------------------------------- encoding
def _payload(result: AnalysisResult, num_nodes: int) -> bytes:
    labels = np.asarray(result.labels)
    roots = np.asarray(result.roots, dtype=np.int64)
    if labels.ndim != 2 or labels.shape != (len(roots), num_nodes):
        raise ValueError(f"labels of shape {labels.shape} for {len(roots)} roots of a graph of {num_nodes} nodes")
    if len(roots) and (roots.min() < 0 or roots.max() >= num_nodes):
        raise ValueError(f"a root outside the graph's {num_nodes} nodes")
    if labels.size and (labels.min() < 0 or labels.max() > 1):
        raise ValueError("labels other than 0 and 1 (the compact form packs one bit per node)")
    steps = np.asarray(result.step_counts, dtype="<i8")
    active = np.asarray(result.active_node_counts, dtype="<i8")
    if steps.shape != roots.shape or active.shape != roots.shape:
        raise ValueError("step and active node counts do not have one value per root")
    bits = np.packbits(labels.astype(np.uint8, copy=False).reshape(-1), bitorder="little")
    return b"".join((roots.astype("<u4").tobytes(), steps.tobytes(), active.tobytes(), bits.tobytes()))


def encode_compact(results: Mapping[str, AnalysisResult]) -> bytes:
    """The compact label file of one graph: a section per analysis, in the mapping's order (module docstring).

    Args:
        results: Analysis name -> its records on this graph (all of one graph: the same number of nodes).

    Raises:
        ValueError: No results, results of graphs of different sizes, labels other than 0/1, a root outside the
            graph, or an analysis name that is not short printable ASCII.
    """
    if not results:
        raise ValueError("no analyses to write")
    sizes = {r.num_nodes for r in results.values()}
    if len(sizes) != 1:
        raise ValueError(f"label records of graphs of different sizes: {sorted(sizes)} nodes")
    num_nodes = sizes.pop()
    heads, payloads = [], []
    for analysis, result in results.items():
        name = analysis.encode("ascii", "replace")
        if not 0 < len(name) < 256 or not analysis.isascii() or not analysis.isprintable():
            raise ValueError(f"analysis name {analysis!r} is not 1-255 printable ASCII characters")
        payload = zlib.compress(_payload(result, num_nodes), _ZLIB_LEVEL)
        heads.append(bytes((len(name),)) + name + _SECTION.pack(len(result), len(payload), zlib.crc32(payload)))
        payloads.append(payload)
    return b"".join((_HEADER.pack(MAGIC, VERSION, len(results), num_nodes), *heads, *payloads))


# ---------------------------------------------------------------------------------------------------- decoding
def _sections(
    data: bytes, where: str, graph_nodes: int | None = None
) -> tuple[int, list[tuple[str, int, int, int, int]]]:
    """``(nodes, [(analysis, records, offset, length, crc32)])`` of a compact file, its layout checked (and its
    number of nodes, when ``graph_nodes`` says the graph's)."""

    def damaged(why: str) -> LabelFileError:
        return LabelFileError(f"{where}: not a readable label file ({why})")

    if len(data) < _HEADER.size or not data.startswith(MAGIC):
        what = "empty" if not data else "truncated" if MAGIC.startswith(data[: len(MAGIC)]) else "no PGLABELS header"
        raise damaged(what)
    _, version, count, num_nodes = _HEADER.unpack_from(data)
    if version != VERSION:
        raise damaged(f"format version {version}; this programl reads version {VERSION}")
    if graph_nodes is not None and num_nodes != graph_nodes:
        raise damaged(f"labels of {num_nodes:,} nodes; its graph has {graph_nodes:,}")
    pos, sections, names = _HEADER.size, [], set()
    for _ in range(count):
        if pos >= len(data):
            raise damaged("truncated section table")
        size = data[pos]
        end = pos + 1 + size + _SECTION.size
        if end > len(data):
            raise damaged("truncated section table")
        try:
            name = data[pos + 1 : pos + 1 + size].decode("ascii")
        except UnicodeDecodeError:
            raise damaged("a section name that is not ASCII") from None
        if not name.isprintable():  # ("datadep\0" would pass for no analysis, and be dropped by a conversion)
            raise damaged(f"section name {name!r} is not printable ASCII")
        if not name or name in names:
            raise damaged(f"section name {name!r} empty or repeated")
        names.add(name)
        records, length, crc = _SECTION.unpack_from(data, pos + 1 + size)
        # what the section declares, bounded before anything is inflated or allocated
        if records * num_nodes > MAX_LABEL_VALUES:
            raise damaged(
                f"{name}: {records:,} records of {num_nodes:,} nodes, more than the {MAX_LABEL_VALUES:,} label "
                "values a label file may hold"
            )
        if records and not num_nodes:
            raise damaged(f"{name}: {records:,} records of a graph of no nodes")
        expected = 20 * records + (records * num_nodes + 7) // 8
        if expected > _ZLIB_RATIO * length + 64:
            raise damaged(
                f"{name}: {records:,} records of {num_nodes:,} nodes take {expected:,} bytes, more than "
                f"{length:,} compressed bytes hold"
            )
        sections.append([name, records, 0, length, crc])
        pos = end
    for section in sections:
        section[2] = pos
        pos += section[3]
    if pos != len(data):
        raise damaged(f"{len(data):,} bytes where the sections take {pos:,}")
    return num_nodes, [tuple(s) for s in sections]


def _decode_section(data: bytes, section: tuple, num_nodes: int, where: str) -> AnalysisResult:
    name, records, offset, length, crc = section

    def damaged(why: str) -> LabelFileError:
        return LabelFileError(f"{where}: not a readable label file ({name}: {why})")

    payload = data[offset : offset + length]
    if zlib.crc32(payload) != crc:
        raise damaged("checksum mismatch")
    expected = 20 * records + (records * num_nodes + 7) // 8
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(payload, expected + 1)
    except zlib.error as error:
        raise damaged(f"zlib: {error}") from None
    if len(raw) != expected or not inflate.eof or inflate.unused_data or inflate.unconsumed_tail:
        raise damaged(f"{len(raw):,} bytes of records where {records} records of {num_nodes} nodes take {expected:,}")
    roots = np.frombuffer(raw, dtype="<u4", count=records).astype(np.int64)
    steps = np.frombuffer(raw, dtype="<i8", count=records, offset=4 * records).astype(np.int64)
    active = np.frombuffer(raw, dtype="<i8", count=records, offset=12 * records).astype(np.int64)
    bits = np.frombuffer(raw, dtype=np.uint8, offset=20 * records)
    labels = np.unpackbits(bits, count=records * num_nodes, bitorder="little").reshape(records, num_nodes)
    if records and roots.max() >= num_nodes:
        raise damaged(f"a root outside the graph's {num_nodes} nodes")
    return AnalysisResult(analysis=name, roots=roots, labels=labels, step_counts=steps, active_node_counts=active)


def decode_compact(
    data: bytes, analyses: Iterable[str] | None = None, *, where: str = "label file", num_nodes: int | None = None
) -> dict[str, AnalysisResult]:
    """The records of a compact label file: analysis -> :class:`~programl.dataflow.base.AnalysisResult`.

    Args:
        data: The file's bytes.
        analyses: Decode only these sections (those the file has); None: all.
        where: The file, for error messages.
        num_nodes: The graph's number of nodes, when known: a file of another size is refused before any section is
            decoded.

    Raises:
        LabelFileError: The file is damaged, truncated, of another format version, or not of ``num_nodes`` nodes
            (one line).
    """
    nodes, sections = _sections(data, where, num_nodes)
    wanted = None if analyses is None else set(analyses)
    return {s[0]: _decode_section(data, s, nodes, where) for s in sections if wanted is None or s[0] in wanted}


def compact_analyses(data: bytes, where: str = "label file") -> dict[str, int]:
    """Analysis -> number of records of a compact label file (its section table only; nothing is decompressed)."""
    return {s[0]: s[1] for s in _sections(data, where)[1]}


def read_compact(
    path: str | os.PathLike, analyses: Iterable[str] | None = None, *, num_nodes: int | None = None
) -> dict[str, AnalysisResult]:
    """:func:`decode_compact` of a file (a regular file of at most :data:`MAX_LABEL_FILE_BYTES`).

    Raises:
        LabelFileError: The file is damaged, not a regular file, too large, or not of ``num_nodes`` nodes (one line
            naming it).
        OSError: It cannot be read (``FileNotFoundError``: there is none).
    """
    data = _read_file(Path(path))
    if data is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    return decode_compact(data, analyses, where=str(path), num_nodes=num_nodes)


# ---------------------------------------------------------------------------------------------------- a data set
def read_labels(layout: Layout, analysis: str, name: str, *, num_nodes: int | None = None) -> AnalysisResult | None:
    """The records of graph ``name`` for ``analysis``: its protobuf file when there is one, else the analysis's
    section of its compact file; None when it has neither (no eligible root, or not labelled).

    Args:
        layout: The data set.
        analysis: The analysis.
        name: The graph.
        num_nodes: The graph's number of nodes, when known: labels of another size are refused (a compact file's
            before anything is decompressed).

    Raises:
        LabelFileError: The file is damaged (the compact form), not a regular file, larger than
            :data:`MAX_LABEL_FILE_BYTES`, or not of ``num_nodes`` nodes.
        AnalysisError: The protobuf file is damaged (:func:`programl.dataflow.records.labels_to_arrays`).
        OSError: A file exists but cannot be read.
    """
    from programl.dataflow.records import labels_to_arrays

    path = layout.labels(analysis, name)
    data = _read_file(path)
    if data is not None:
        result = labels_to_arrays(data, analysis=analysis)
        if num_nodes is not None and len(result) and result.num_nodes != num_nodes:
            raise LabelFileError(
                f"{path}: not a readable label file (labels of {result.num_nodes:,} nodes; its graph has {num_nodes:,})"
            )
        return result
    path = layout.compact_labels(name)
    data = _read_file(path)
    if data is None:
        return None
    return decode_compact(data, (analysis,), where=str(path), num_nodes=num_nodes).get(analysis)


def label_file(layout: Layout, analysis: str, name: str) -> Path:
    """The file :func:`read_labels` reads for ``name`` and ``analysis``: the protobuf file when there is one, else
    the compact file (which may not exist either)."""
    path = layout.labels(analysis, name)
    return path if path.exists() else layout.compact_labels(name)


def labelled_names(layout: Layout, analysis: str) -> set[str]:
    """Names of the graphs that have labels for ``analysis`` in either form (each compact file's section table is
    read; a damaged one counts as labelled, so that its reader reports it)."""
    names = set(layout.label_names(analysis, "protobuf"))
    for name in layout.label_names(analysis, "compact"):
        if name in names:
            continue
        path = layout.compact_labels(name)
        try:
            data = _read_file(path)
            if data is not None and analysis in compact_analyses(data, str(path)):
                names.add(name)
        except LabelFileError:
            names.add(name)
    return names


def write_labels(
    layout: Layout,
    name: str,
    results: Mapping[str, AnalysisResult],
    analyses: Sequence[str],
    label_format: str,
    write: Callable[[Path, bytes], object] | None = None,
) -> None:
    """Write graph ``name``'s records (``results``: analysis -> records; analyses of ``analyses`` not in it have
    none) in ``label_format``, atomically, and remove its files of the other form (so the new ones are the ones
    read). ``compact``: one file, or none when no analysis labelled the graph; ``protobuf``: one file per analysis
    (:func:`programl.dataflow.records.labels_to_bytes`, byte-identical to ``programl analyze``). ``write(path,
    data)`` writes a file (default :func:`programl.util.fs.atomic_write_bytes`)."""
    from programl.dataflow.records import labels_to_bytes
    from programl.util.fs import atomic_write_bytes

    check_label_format(label_format)
    write = write or atomic_write_bytes
    if label_format == "compact":
        if results:
            write(layout.compact_labels(name), encode_compact(results))
        else:
            layout.compact_labels(name).unlink(missing_ok=True)
        for analysis in analyses:
            if layout.label_dir(analysis).is_dir():  # (a compact data set has none: a look, not an unlink)
                layout.labels(analysis, name).unlink(missing_ok=True)
        return
    for analysis in analyses:
        path = layout.labels(analysis, name)
        if analysis in results:
            write(path, labels_to_bytes(results[analysis]))
        else:
            path.unlink(missing_ok=True)
    layout.compact_labels(name).unlink(missing_ok=True)


def check_label_format(label_format: str) -> str:
    """``label_format`` when it is one of :data:`~programl.data.deepdataflow.layout.LABEL_FORMATS`.

    Raises:
        ValueError: It is not.
    """
    if label_format not in LABEL_FORMATS:
        raise ValueError(f"unknown label format {label_format!r}; expected one of {', '.join(LABEL_FORMATS)}")
    return label_format


# ---------------------------------------------------------------------------------------------------- conversion
#: The temporary file of an atomic write of a label file (:func:`programl.util.fs.atomic_write_bytes`:
#: ``.<file name>.<8 random characters>.tmp`` beside it), which a writer killed before its rename leaves behind.
_TEMPORARY = re.compile(
    rf"\A\.(.+(?:{re.escape(COMPACT_LABEL_SUFFIX)}|{re.escape(LABEL_SUFFIX)}))\.[a-z0-9_]{{8}}\.tmp\Z"
)


def remove_stale_temporaries(layout: Layout, analyses: Sequence[str]) -> int:
    """Remove the temporary files that interrupted writes of label files left behind (a process killed between
    writing one and renaming it into place: ``kill -9``, the OOM killer, a power cut), in ``labels/all`` and the
    directories of ``analyses``; returns how many. Only names of that form are removed, and no directory; one that
    cannot be removed is left (the writes that follow say why). For when no other process writes the data set's
    labels: :func:`convert_labels` calls it before it starts."""
    removed = 0
    for directory in (layout.compact_label_dir, *(layout.label_dir(a) for a in analyses)):
        try:
            entries = os.listdir(directory)
        except OSError:  # none, or unreadable: the conversion says so when it lists it
            continue
        for entry in entries:
            if not _TEMPORARY.match(entry):
                continue
            try:
                if not stat.S_ISDIR(os.lstat(directory / entry).st_mode):
                    os.unlink(directory / entry)
                    removed += 1
            except OSError:
                pass
    return removed


def _read_protobuf(path: Path, analysis: str, num_nodes: int | None) -> AnalysisResult | None:
    """The records of a protobuf label file (None when there is none), of ``num_nodes`` nodes when given."""
    from programl.dataflow.records import labels_to_arrays

    data = _read_file(path)
    if data is None:
        return None
    result = labels_to_arrays(data, analysis=analysis)
    if num_nodes is not None and len(result) and result.num_nodes != num_nodes:
        raise LabelFileError(
            f"{path}: not a readable label file (labels of {result.num_nodes:,} nodes; its graph has {num_nodes:,})"
        )
    return result


def _graph_nodes(layout: Layout, name: str) -> int:
    """The number of nodes of graph ``name`` (``graphs/<name>.ProgramGraph.pb``), which its labels must have."""
    from programl.proto import ProgramGraph

    path = layout.graph(name)
    try:
        data = _read_file(path, _MAX_GRAPH_FILE_BYTES, "graph")
    except OSError as error:
        raise LabelFileError(f"{path}: cannot be read ({error.strerror or error})") from None
    if data is None:
        raise LabelFileError(f"{path}: no such file (the graph whose size its label files must have)")
    try:
        return len(ProgramGraph.FromString(data).node)
    except Exception as error:  # noqa: BLE001 - a damaged protobuf raises DecodeError and others: one line
        raise LabelFileError(f"{path}: not a readable graph ({type(error).__name__})") from None


def _cannot(path: Path, error: OSError, done: str) -> LabelWriteError:
    """``path: cannot be written (reason)``, naming the directory that failed when it is not the file's own."""
    reason = error.strerror or str(error)
    if isinstance(error, FileExistsError):  # (creating a directory the path needs, where a file is)
        reason = os.strerror(errno.ENOTDIR)
    culprit = error.filename
    where = f"{culprit}: " if culprit is not None and Path(culprit) in path.parents else ""
    return LabelWriteError(f"{path}: cannot be {done} ({where}{reason})")


def _convert_one(layout: Layout, name: str, analyses: Sequence[str], label_format: str) -> bool:
    """Rewrite graph ``name``'s labels in ``label_format`` when any are in the other form; whether it did. Every
    file is read (and checked against the graph's size) before any is written; a failure leaves them as they were.

    Raises:
        LabelFileError: A label file, or the graph, cannot be read; or the compact file has a section of an analysis
            not among ``analyses`` (the conversion would drop it).
        AnalysisError: A protobuf label file is damaged.
        LabelWriteError: A label file cannot be written or removed.
    """
    from programl.util.fs import atomic_write_bytes

    compact = layout.compact_labels(name)
    protobuf = {analysis: layout.labels(analysis, name) for analysis in analyses}
    sources = [compact] if label_format == "protobuf" else protobuf.values()
    if not any(os.path.lexists(path) for path in sources):  # (a directory in a file's place is not nothing to do)
        return False
    num_nodes = _graph_nodes(layout, name)
    where = compact
    try:
        data = _read_file(compact)
        sections = {} if data is None else decode_compact(data, where=str(compact), num_nodes=num_nodes)
        dropped = [analysis for analysis in sections if analysis not in protobuf]
        if dropped:
            raise LabelFileError(
                f"{compact}: a section of {dropped[0]!r}, not one of the analyses converted ({', '.join(analyses)}); "
                "converting would drop it"
            )
        results = {}
        for analysis, path in protobuf.items():
            where = path
            result = _read_protobuf(path, analysis, num_nodes)
            if result is None:
                result = sections.get(analysis)
            if result is not None:
                results[analysis] = result
    except OSError as error:
        raise LabelFileError(f"{where}: cannot be read ({error.strerror or error})") from None

    def write(path: Path, data: bytes) -> None:
        try:
            atomic_write_bytes(path, data)
        except OSError as error:
            raise _cannot(path, error, "written") from None

    try:
        write_labels(layout, name, results, analyses, label_format, write)
    except OSError as error:  # removing the other form's files
        raise _cannot(Path(error.filename or compact), error, "removed") from None
    return True


def _convert_chunk(task: tuple[str, list[str], tuple[str, ...], str]) -> list[ProgramlError | None]:
    """Per name: None when converted (or nothing to do), else why not (a one-line error)."""
    root, names, analyses, label_format = task
    layout = Layout(root)
    out: list[ProgramlError | None] = []
    for name in names:
        try:
            _convert_one(layout, name, analyses, label_format)
            out.append(None)
        except ProgramlError as error:
            out.append(error)
        except (OSError, ValueError, MemoryError) as error:  # (labels no file can hold: a root outside the graph)
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            out.append(LabelFileError(f"{name}: its labels cannot be converted ({type(error).__name__}: {reason})"))
    return out


def convert_labels(
    root: str | os.PathLike,
    label_format: str,
    names: Sequence[str] | None = None,
    analyses: Sequence[str] | None = None,
    *,
    jobs: int = 1,
    progress: Callable[[Iterable, int, str], Iterable] | None = None,
) -> dict[str, ProgramlError]:
    """Bring the label files of a data set (or of the graphs ``names``) into ``label_format``, in place.

    Each graph's files are read in the other form and written in this one (atomically), then the other form's files
    are removed (and their directories, once empty); graphs already in ``label_format`` are left alone, so an
    interrupted conversion resumes: the temporary files of a conversion that was killed are removed first
    (:func:`remove_stale_temporaries`), and the result is that of a conversion never interrupted. A graph whose labels
    cannot be read, are not of its graph's number of nodes (``graphs/<name>.ProgramGraph.pb``), hold a section the
    conversion would drop, or cannot be written, is left as it is and named in the result.

    Args:
        root: The data set.
        label_format: ``compact`` or ``protobuf``.
        names: The graphs (default: every graph with a label file).
        analyses: The analyses (default: the five; only those with labels are written).
        jobs: Worker processes.
        progress: Wraps the stream of converted graphs, ``progress(iterable, total, description)``.

    Returns:
        ``{name: error}`` for the graphs that could not be converted: a one-line :class:`LabelWriteError` when their
        files could not be written or removed, else why they could not be read (:class:`LabelFileError`,
        :class:`~programl.exceptions.AnalysisError`).

    Raises:
        ValueError: ``label_format`` is unknown.
    """
    from programl.dataflow.names import ANALYSES
    from programl.util.executor import TimeoutProcessPool, execute

    check_label_format(label_format)
    layout = Layout(root)
    analyses = tuple(analyses or ANALYSES)
    remove_stale_temporaries(layout, analyses)
    if names is None:

        def listed(analysis: str | None, form: str) -> list[str]:
            try:
                return layout.label_names(analysis, form)
            except NotADirectoryError:  # a file where the directory belongs holds none (writes there fail, each said)
                return []

        found: set[str] = set(listed(None, "compact"))
        for analysis in analyses:
            found.update(listed(analysis, "protobuf"))
        names = sorted(found)
    names = list(names)
    chunks = [names[i : i + 64] for i in range(0, len(names), 64)]
    tasks = [(str(layout.root), chunk, analyses, label_format) for chunk in chunks]
    pool = TimeoutProcessPool(max_workers=jobs) if jobs > 1 and len(tasks) > 1 else None
    failed: dict[str, ProgramlError] = {}
    try:
        results: Iterator = (why for chunk in execute(_convert_chunk, tasks, executor=pool) for why in chunk)
        if progress is not None:
            results = iter(progress(results, len(names), f"labels to {label_format}"))
        for name, why in zip(names, results):
            if why is not None:
                failed[name] = why
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    emptied = [layout.compact_label_dir] if label_format == "protobuf" else [layout.label_dir(a) for a in analyses]
    for directory in emptied:  # the other form's directories, when nothing is left in them
        try:
            directory.rmdir()
        except OSError:
            pass
    return failed
