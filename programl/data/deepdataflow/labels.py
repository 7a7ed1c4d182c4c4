"""Label files of a DeepDataFlow data set: the original's protobuf per (graph, analysis), or one compact file per
graph (SPEC §2.5, §9.1; DESIGN §5).

Two forms hold the same records (per root: the root node, ``data_flow_step_count``, ``data_flow_active_node_count``
and the 0/1 ``data_flow_value`` of every node):

* ``protobuf``: ``labels/<analysis>/<name>.ProgramGraphFeaturesList.pb``, one ``ProgramGraphFeaturesList`` per graph
  and analysis (SPEC §2.5; ProGraML's released data sets, and ``programl dataset build --label-format protobuf``).
  Seven bytes per node per feature list, two lists per record: ~45 KB per POJ-104 graph and analysis.
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

Which file holds a graph's labels for an analysis: the protobuf file when there is one (the original's layout, or
the per-analysis override of a derived root, :mod:`~programl.data.deepdataflow.derived`), else the analysis's
section of the compact file (:func:`read_labels`). Both forms carry exactly the same records, and converting between
them (:func:`convert_labels`, ``programl dataset convert``) loses nothing: a compact data set converted to protobuf
has the label files a protobuf build writes, byte for byte.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from programl.data.deepdataflow.layout import LABEL_FORMATS, Layout
from programl.dataflow.base import AnalysisResult
from programl.exceptions import ProgramlError

__all__ = [
    "LabelFileError",
    "check_label_format",
    "compact_analyses",
    "convert_labels",
    "decode_compact",
    "encode_compact",
    "label_file",
    "labelled_names",
    "read_compact",
    "read_labels",
    "write_labels",
]

MAGIC = b"PGLABELS"
VERSION = 1
_HEADER = struct.Struct("<8sHHI")  # magic, version, number of sections, nodes
_SECTION = struct.Struct("<III")  # records, payload bytes, crc32 of the payload (after the name)
_ZLIB_LEVEL = 6


class LabelFileError(ProgramlError, ValueError):
    """A compact label file that cannot be read (damaged, truncated, or of a newer format); one line."""


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
            graph, or an analysis name that is not short ASCII.
    """
    if not results:
        raise ValueError("no analyses to write")
    sizes = {r.num_nodes for r in results.values()}
    if len(sizes) != 1:
        raise ValueError(f"label records of graphs of different sizes: {sorted(sizes)} nodes")
    num_nodes = sizes.pop()
    heads, payloads = [], []
    for analysis, result in results.items():
        name = analysis.encode("ascii")
        if not 0 < len(name) < 256:
            raise ValueError(f"analysis name {analysis!r} is not 1-255 ASCII characters")
        payload = zlib.compress(_payload(result, num_nodes), _ZLIB_LEVEL)
        heads.append(bytes((len(name),)) + name + _SECTION.pack(len(result), len(payload), zlib.crc32(payload)))
        payloads.append(payload)
    return b"".join((_HEADER.pack(MAGIC, VERSION, len(results), num_nodes), *heads, *payloads))


# ---------------------------------------------------------------------------------------------------- decoding
def _sections(data: bytes, where: str) -> tuple[int, list[tuple[str, int, int, int, int]]]:
    """``(nodes, [(analysis, records, offset, length, crc32)])`` of a compact file, its layout checked."""

    def damaged(why: str) -> LabelFileError:
        return LabelFileError(f"{where}: not a readable label file ({why})")

    if len(data) < _HEADER.size or not data.startswith(MAGIC):
        what = "empty" if not data else "truncated" if MAGIC.startswith(data[: len(MAGIC)]) else "no PGLABELS header"
        raise damaged(what)
    _, version, count, num_nodes = _HEADER.unpack_from(data)
    if version != VERSION:
        raise damaged(f"format version {version}; this programl reads version {VERSION}")
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
        if not name or name in names:
            raise damaged(f"section name {name!r} empty or repeated")
        names.add(name)
        records, length, crc = _SECTION.unpack_from(data, pos + 1 + size)
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
    data: bytes, analyses: Iterable[str] | None = None, *, where: str = "label file"
) -> dict[str, AnalysisResult]:
    """The records of a compact label file: analysis -> :class:`~programl.dataflow.base.AnalysisResult`.

    Args:
        data: The file's bytes.
        analyses: Decode only these sections (those the file has); None: all.
        where: The file, for error messages.

    Raises:
        LabelFileError: The file is damaged, truncated, or of another format version (one line).
    """
    num_nodes, sections = _sections(data, where)
    wanted = None if analyses is None else set(analyses)
    return {s[0]: _decode_section(data, s, num_nodes, where) for s in sections if wanted is None or s[0] in wanted}


def compact_analyses(data: bytes, where: str = "label file") -> dict[str, int]:
    """Analysis -> number of records of a compact label file (its section table only; nothing is decompressed)."""
    return {s[0]: s[1] for s in _sections(data, where)[1]}


def read_compact(path: str | os.PathLike, analyses: Iterable[str] | None = None) -> dict[str, AnalysisResult]:
    """:func:`decode_compact` of a file.

    Raises:
        LabelFileError: The file is damaged (one line naming it).
        OSError: It cannot be read.
    """
    return decode_compact(Path(path).read_bytes(), analyses, where=str(path))


# ---------------------------------------------------------------------------------------------------- a data set
def read_labels(layout: Layout, analysis: str, name: str) -> AnalysisResult | None:
    """The records of graph ``name`` for ``analysis``: its protobuf file when there is one, else the analysis's
    section of its compact file; None when it has neither (no eligible root, or not labelled).

    Raises:
        LabelFileError: The compact file is damaged.
        AnalysisError: The protobuf file is damaged (:func:`programl.dataflow.records.labels_to_arrays`).
        OSError: A file exists but cannot be read.
    """
    from programl.dataflow.records import labels_to_arrays

    try:
        data = layout.labels(analysis, name).read_bytes()
    except FileNotFoundError:
        pass
    else:
        return labels_to_arrays(data, analysis=analysis)
    path = layout.compact_labels(name)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return decode_compact(data, (analysis,), where=str(path)).get(analysis)


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
            if analysis in compact_analyses(path.read_bytes(), str(path)):
                names.add(name)
        except LabelFileError:
            names.add(name)
        except FileNotFoundError:
            pass
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
def _convert_one(layout: Layout, name: str, analyses: Sequence[str], label_format: str) -> bool:
    """Rewrite graph ``name``'s labels in ``label_format`` when any are in the other form; whether it did."""
    other = "protobuf" if label_format == "compact" else "compact"
    if other == "compact":
        if not layout.compact_labels(name).is_file():
            return False
    elif not any(layout.labels(a, name).is_file() for a in analyses):
        return False
    results = {}
    for analysis in analyses:
        result = read_labels(layout, analysis, name)
        if result is not None:
            results[analysis] = result
    write_labels(layout, name, results, analyses, label_format)
    return True


def _convert_chunk(task: tuple[str, list[str], tuple[str, ...], str]) -> list[str | None]:
    """Per name: None when converted (or nothing to do), else why not (one line)."""
    root, names, analyses, label_format = task
    layout = Layout(root)
    out: list[str | None] = []
    for name in names:
        try:
            _convert_one(layout, name, analyses, label_format)
            out.append(None)
        except (ProgramlError, OSError, ValueError) as error:
            out.append(f"{type(error).__name__}: {error}")
    return out


def convert_labels(
    root: str | os.PathLike,
    label_format: str,
    names: Sequence[str] | None = None,
    analyses: Sequence[str] | None = None,
    *,
    jobs: int = 1,
    progress: Callable[[Iterable, int, str], Iterable] | None = None,
) -> dict[str, str]:
    """Bring the label files of a data set (or of the graphs ``names``) into ``label_format``, in place.

    Each graph's files are read in the other form and written in this one (atomically), then the other form's files
    are removed (and their directories, once empty); graphs already in ``label_format`` are left alone, so an
    interrupted conversion resumes. Graphs whose labels cannot be read are left as they are.

    Args:
        root: The data set.
        label_format: ``compact`` or ``protobuf``.
        names: The graphs (default: every graph with a label file).
        analyses: The analyses (default: the five; only those with labels are written).
        jobs: Worker processes.
        progress: Wraps the stream of converted graphs, ``progress(iterable, total, description)``.

    Returns:
        ``{name: why}`` for the graphs that could not be converted.

    Raises:
        ValueError: ``label_format`` is unknown.
    """
    from programl.dataflow.names import ANALYSES
    from programl.util.executor import TimeoutProcessPool, execute

    check_label_format(label_format)
    layout = Layout(root)
    analyses = tuple(analyses or ANALYSES)
    if names is None:
        found: set[str] = set(layout.label_names(None, "compact"))
        for analysis in analyses:
            found.update(layout.label_names(analysis, "protobuf"))
        names = sorted(found)
    names = list(names)
    chunks = [names[i : i + 64] for i in range(0, len(names), 64)]
    tasks = [(str(layout.root), chunk, analyses, label_format) for chunk in chunks]
    pool = TimeoutProcessPool(max_workers=jobs) if jobs > 1 and len(tasks) > 1 else None
    failed: dict[str, str] = {}
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
