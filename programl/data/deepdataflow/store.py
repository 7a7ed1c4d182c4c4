"""The processed (PyG-ready) form of a DeepDataFlow split: flat binary columns, memory-mapped
(docs/spec/models.md#graph-tensors, docs/spec/datasets.md#builds).

Per split, under ``<processed_dir>/ddf-v1/<vocabulary key>/<split>/``:

* ``graphs/``: the graph store, shared by the five analyses: ``names.txt`` (graph order), ``node_ptr.npy`` and
  ``edge_ptr.npy`` (per-graph offsets, int64), and the columns ``x.bin`` (vocabulary id, int32), ``node_type.bin``
  (int8), ``edge_src.bin``/``edge_dst.bin`` (graph-local node indices, int32), ``edge_flow.bin`` (int8),
  ``edge_pos.bin`` (int32); ``meta.json`` (counts, and the graphs that could not be read);
* ``<analysis>/``: the label store: per record ``graph.npy`` (graph index, int32), ``root.npy`` (int32),
  ``steps.npy`` (``data_flow_step_count``, int64), ``label_ptr.npy`` (offsets into ``labels.bin``, int64), and
  ``labels.bin`` (``data_flow_value`` per node, uint8); ``meta.json``.

A store is written into a temporary directory and renamed into place when complete, so a reader sees a whole store
or none; conversion runs in worker processes when asked (this module does not import torch, so workers start fast).
The vocabulary key (:func:`vocabulary_key`) is a hash of the vocabulary's texts in id order; with a
``typed_pointers`` mode other than the default ``auto`` (how the LLVM 10 texts of graphs built by the original
ProGraML, ``i32*``, meet the vocabulary: :mod:`programl.io.typed_pointers`) the mode follows it (``<key>-keep``,
``<key>-map``), so each mode has its own conversion. (Stores converted before the option existed sit under the
``auto`` key; they differ from an ``auto`` conversion only for graphs of the original converted with a vocabulary of
LLVM 22 texts: convert those again with ``force``.) Each store's
``meta.json`` also keeps an inputs key (:func:`inputs_key`: the names, sizes and modification times of the files it
was made from, and for a label store its graph store's key): a split whose graphs or labels changed since (a data set
grown in place, a graph rebuilt) is converted again, not read stale; one whose files are all gone (deleted after
conversion) is used as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from programl.data.deepdataflow.layout import Layout
from programl.data.vocabulary import Vocabulary
from programl.exceptions import ProgramlError
from programl.io.typed_pointers import check_typed_pointers, vocabulary_ids
from programl.util.fs import current_umask

__all__ = ["FORMAT", "GRAPH_COLUMNS", "inputs_key", "memmap", "prepare_split", "vocabulary_key"]

#: Version of the processed format (a change makes a new directory).
FORMAT = "ddf-v1"

GRAPH_COLUMNS = {  # per-node / per-edge arrays of the graph store and their dtypes
    "x": np.int32,
    "node_type": np.int8,
    "edge_src": np.int32,
    "edge_dst": np.int32,
    "edge_flow": np.int8,
    "edge_pos": np.int32,
}
_GRAPH_CHUNK = 32  # graphs per worker task


def vocabulary_key(vocabulary: Vocabulary) -> str:
    """A short hash of the vocabulary's texts (in id order)."""
    h = hashlib.sha256()
    for text in vocabulary:
        h.update(text.encode("utf-8") + b"\0")
    return h.hexdigest()[:12]


def inputs_key(files: Iterable[tuple[str, Path]], base: str = "") -> tuple[str, int]:
    """A short hash of ``base`` and, per ``(name, path)``, the file's size and modification time (a missing or
    unreadable file counts as such), and how many of the files are there: a stat per file, so checking a split of
    100k graphs reads no graph."""
    h = hashlib.sha256(base.encode("utf-8") + b"\n")
    found = 0
    for name, path in files:
        try:
            status = os.stat(path)
        except OSError:
            h.update(f"{name}\0-\n".encode("utf-8", "surrogateescape"))
            continue
        h.update(f"{name}\0{status.st_size}\0{status.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
        found += 1
    return h.hexdigest()[:16], found


def _read_meta(store: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((store / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _is_current(store: Path, key: str, found: int = -1, graph_store: str | None = None) -> bool:
    """Whether ``store`` is whole and was made from the inputs ``key`` names, or its inputs are all gone (``found``
    is 0: the raw graphs or labels were deleted after conversion, and the store is what there is; a label store then
    only if it indexes the graph store ``graph_store`` names, as its ``meta.json`` says where it says)."""
    meta = _read_meta(store)
    if meta is None:
        return False
    if meta.get("inputs") == key:
        return True
    return found == 0 and (graph_store is None or meta.get("graph_store", graph_store) == graph_store)


# --------------------------------------------------------------------------------------------------------------
# Conversion (runs in worker processes; no torch needed)

_VOCABULARIES: dict[tuple[str, int, int], Vocabulary] = {}


def _vocabulary(path: str) -> Vocabulary:
    """The vocabulary in ``path``, loaded once per process and version of the file (by size and modification time)."""
    status = os.stat(path)
    key = (path, status.st_size, status.st_mtime_ns)
    if key not in _VOCABULARIES:
        _VOCABULARIES.clear()  # one data set at a time in practice; a rewritten file's old entry is never used again
        _VOCABULARIES[key] = Vocabulary.load(path)
    return _VOCABULARIES[key]


def _convert_graphs(task: tuple[str, str | None, list[str], str, str]) -> list[dict[str, np.ndarray] | str]:
    """Per graph: its columns, or the reason it could not be read (a string)."""
    from programl.dataflow import GraphView
    from programl.proto import ProgramGraph

    root, split, names, vocab_path, typed_pointers = task
    layout = Layout(root)
    vocabulary = _vocabulary(vocab_path)
    oov = len(vocabulary)
    out: list[dict[str, np.ndarray] | str] = []
    for name in names:
        try:
            graph = ProgramGraph.FromString(layout.resolve_graph(split, name).read_bytes())
            view = GraphView.from_graph(graph)
        except Exception as error:  # noqa: BLE001 - a bad file is skipped and counted
            out.append(f"{type(error).__name__}: {error}")
            continue
        texts = [n.text for n in graph.node]
        out.append(
            {
                "x": np.asarray(vocabulary_ids(texts, vocabulary, oov, typed_pointers), dtype=np.int32),
                "node_type": view.node_type,
                "edge_src": view.edge_src,
                "edge_dst": view.edge_dst,
                "edge_flow": view.edge_flow,
                "edge_pos": view.edge_pos,
            }
        )
    return out


def _convert_labels(task: tuple[str, str, list[tuple[int, str, int]]]) -> list[dict[str, np.ndarray] | str | None]:
    """Per (graph index, name, node count): the records of its labels (either form,
    :func:`~programl.data.deepdataflow.labels.read_labels`, which refuses labels of another number of nodes before
    it decodes them), None when its compact file has no records of this analysis, or why they were skipped."""
    from programl.data.deepdataflow.labels import read_labels

    root, analysis, graphs = task
    layout = Layout(root)
    out: list[dict[str, np.ndarray] | str | None] = []
    for _, name, num_nodes in graphs:
        try:
            result = read_labels(layout, analysis, name, num_nodes=num_nodes)
        except Exception as error:  # noqa: BLE001
            out.append(f"{type(error).__name__}: {error}")
            continue
        if result is None:
            out.append(None)
            continue
        out.append(
            {
                "root": result.roots.astype(np.int32),
                "steps": result.step_counts.astype(np.int64),
                "labels": result.labels.astype(np.uint8).reshape(-1),
                "count": np.asarray([len(result)], dtype=np.int64),
            }
        )
    return out


def _chunks(items: Sequence, size: int) -> list[Sequence]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _run(fn: Callable, tasks: list, jobs: int, progress: Callable | None, description: str, total: int) -> Iterable:
    """``fn`` over ``tasks`` in order (in ``jobs`` worker processes when > 1), each result a list per item."""
    from programl.util.executor import TimeoutProcessPool, execute

    pool = TimeoutProcessPool(max_workers=jobs) if jobs > 1 and len(tasks) > 1 else None
    try:
        results = execute(fn, tasks, executor=pool)
        items = (item for chunk in results for item in chunk)
        yield from (progress(items, total, description) if progress else items)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


class _Writer:
    """Append-only binary column files in a temporary directory, renamed into place by :meth:`commit`."""

    def __init__(self, target: Path) -> None:
        self.target = target
        target.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        self.files: dict[str, Any] = {}

    def append(self, column: str, values: np.ndarray, dtype: Any) -> None:
        f = self.files.get(column)
        if f is None:
            f = self.files[column] = open(self.tmp / f"{column}.bin", "wb")  # noqa: SIM115 - closed in commit
        f.write(np.ascontiguousarray(values, dtype=dtype).tobytes())

    def save(self, name: str, array: np.ndarray) -> None:
        np.save(self.tmp / f"{name}.npy", array)

    def commit(self, meta: dict[str, Any]) -> None:
        for f in self.files.values():
            f.flush()
            os.fsync(f.fileno())
            f.close()
        (self.tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        os.chmod(self.tmp, 0o777 & ~current_umask())  # mkdtemp's 0o700 would hide the store from other users
        try:
            os.replace(self.tmp, self.target)
            return
        except OSError:
            if _is_current(self.target, meta.get("inputs")):  # another process made it first (a DDP rank): keep it
                shutil.rmtree(self.tmp, ignore_errors=True)
                return
            if not self.target.exists():
                shutil.rmtree(self.tmp, ignore_errors=True)
                raise
        stale = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.stale.", dir=self.target.parent))
        try:
            try:
                os.replace(self.target, stale / "store")  # a stale store (older inputs): replaced by this one
            except FileNotFoundError:  # another process moved it first
                pass
            try:
                os.replace(self.tmp, self.target)
            except OSError:
                shutil.rmtree(self.tmp, ignore_errors=True)
                if not _is_current(self.target, meta.get("inputs")):  # not another process's current store
                    raise
        finally:
            shutil.rmtree(stale, ignore_errors=True)

    def abort(self) -> None:
        for f in self.files.values():
            f.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _graph_store(
    layout: Layout,
    split: str,
    names: list[str],
    key: str,
    target: Path,
    vocab_path: str,
    jobs: int,
    progress,
    typed_pointers: str = "auto",
) -> None:
    writer = _Writer(target)
    try:
        node_ptr, edge_ptr, kept, skipped = [0], [0], [], {}
        tasks = [
            (str(layout.root), split, list(chunk), vocab_path, typed_pointers) for chunk in _chunks(names, _GRAPH_CHUNK)
        ]
        results = _run(_convert_graphs, tasks, jobs, progress, f"{split} graphs", len(names))
        for name, columns in zip(names, results):
            if isinstance(columns, str):
                skipped[name] = columns
                continue
            for column, dtype in GRAPH_COLUMNS.items():
                writer.append(column, columns[column], dtype)
            kept.append(name)
            node_ptr.append(node_ptr[-1] + len(columns["x"]))
            edge_ptr.append(edge_ptr[-1] + len(columns["edge_src"]))
        for column, dtype in GRAPH_COLUMNS.items():
            writer.append(column, np.zeros(0), dtype)  # every file exists, even when empty
        writer.save("node_ptr", np.asarray(node_ptr, dtype=np.int64))
        writer.save("edge_ptr", np.asarray(edge_ptr, dtype=np.int64))
        (writer.tmp / "names.txt").write_text("".join(f"{n}\n" for n in kept), encoding="utf-8")
        writer.commit(
            {
                "format": FORMAT,
                "split": split,
                "graphs": len(kept),
                "skipped": skipped,
                "inputs": key,
                "typed_pointers": typed_pointers,
            }
        )
    except BaseException:
        writer.abort()
        raise


def _graph_names(graphs: Path) -> list[str]:
    return (graphs / "names.txt").read_text(encoding="utf-8").split()


def _label_store(
    layout: Layout, analysis: str, graphs: Path, key: str, graph_store: str, target: Path, jobs: int, progress
) -> None:
    names = _graph_names(graphs)
    node_ptr = np.load(graphs / "node_ptr.npy", allow_pickle=False)
    sizes = np.diff(node_ptr)
    present = set(layout.label_names(analysis, "protobuf")) | set(layout.label_names(None, "compact"))
    wanted = [(i, n, int(sizes[i])) for i, n in enumerate(names) if n in present]
    writer = _Writer(target)
    try:
        graph, roots, steps, label_ptr, skipped, labelled = [], [], [], [0], {}, 0
        tasks = [(str(layout.root), analysis, list(chunk)) for chunk in _chunks(wanted, _GRAPH_CHUNK)]
        results = _run(_convert_labels, tasks, jobs, progress, f"{analysis} labels", len(wanted))
        for (index, name, num_nodes), records in zip(wanted, results):
            if records is None:  # a compact file without this analysis: no eligible root
                continue
            if isinstance(records, str):
                skipped[name] = records
                continue
            labelled += 1
            count = int(records["count"][0])
            writer.append("labels", records["labels"], np.uint8)
            graph.extend([index] * count)
            roots.extend(records["root"].tolist())
            steps.extend(records["steps"].tolist())
            for _ in range(count):
                label_ptr.append(label_ptr[-1] + num_nodes)
        writer.append("labels", np.zeros(0), np.uint8)
        writer.save("graph", np.asarray(graph, dtype=np.int32))
        writer.save("root", np.asarray(roots, dtype=np.int32))
        writer.save("steps", np.asarray(steps, dtype=np.int64))
        writer.save("label_ptr", np.asarray(label_ptr, dtype=np.int64))
        writer.commit(
            {
                "format": FORMAT,
                "analysis": analysis,
                "records": len(graph),
                "graphs": labelled + len(skipped),
                "skipped": skipped,
                "inputs": key,
                "graph_store": graph_store,
            }
        )
    except BaseException:
        writer.abort()
        raise


def prepare_split(
    root: str | os.PathLike,
    analysis: str,
    split: str,
    *,
    vocabulary_path: str | os.PathLike | None = None,
    processed_dir: str | os.PathLike | None = None,
    jobs: int = 1,
    progress: Callable[[Iterable, int, str], Iterable] | None = None,
    force: bool = False,
    typed_pointers: str = "auto",
) -> tuple[Path, Path]:
    """Convert one split (graphs, then one analysis's labels) unless already done from the same files; returns the
    two store paths. A store made from other files (by size and modification time, :func:`inputs_key`) is replaced.

    Args:
        root: The data set.
        analysis: One of the five analyses.
        split: ``train``, ``val`` or ``test`` (or any directory of graph links).
        vocabulary_path: Vocabulary file (default ``<root>/vocab/programl.csv``).
        processed_dir: Where converted data goes (default ``<root>/processed``).
        jobs: Worker processes for the conversion.
        progress: Wraps the stream of converted graphs, ``progress(iterable, total, description)``.
        force: Convert again even when the stores are current.
        typed_pointers: How the typed-pointer texts of graphs built by the original ProGraML (``i32*``) meet the
            vocabulary: ``auto`` (default; a text the vocabulary lacks is looked up as LLVM 22 prints it, ``ptr``),
            ``map`` or ``keep`` (:mod:`programl.io.typed_pointers`); part of the processed directory's key.

    Raises:
        ValueError: ``typed_pointers`` is not ``auto``, ``map`` or ``keep``.
    """
    check_typed_pointers(typed_pointers)
    layout = Layout(root)
    vocab_path = Path(vocabulary_path) if vocabulary_path else layout.vocabulary
    if not vocab_path.is_file():
        raise FileNotFoundError(f"{vocab_path}: no vocabulary (a DeepDataFlow data set has vocab/programl.csv)")
    try:
        key = vocabulary_key(_vocabulary(str(vocab_path)))
    except (UnicodeDecodeError, ValueError) as error:  # read side: a damaged file is one line, not a traceback
        raise ProgramlError(f"{vocab_path}: not a vocabulary ({error})") from None
    if typed_pointers != "auto":
        key = f"{key}-{typed_pointers}"
    base = Path(processed_dir) if processed_dir else layout.root / "processed"
    graphs = base / FORMAT / key / split / "graphs"
    labels = base / FORMAT / key / split / analysis
    names = layout.split_names(split)
    graphs_key, found = inputs_key(((name, layout.resolve_graph(split, name)) for name in names), base=split)
    if force or not _is_current(graphs, graphs_key, found):
        _graph_store(layout, split, names, graphs_key, graphs, str(vocab_path), jobs, progress, typed_pointers)
    kept = _graph_names(graphs)
    made_from = str((_read_meta(graphs) or {}).get("inputs"))  # the labels index that graph store
    # both forms of every graph's labels (a data set without compact files keys its stores as it always did)
    forms = [lambda name: layout.labels(analysis, name)]
    if layout.compact_label_dir.is_dir():
        forms.append(layout.compact_labels)
    labels_key, found = inputs_key(((name, form(name)) for name in kept for form in forms), base=made_from)
    if force or not _is_current(labels, labels_key, found, graph_store=made_from):
        _label_store(layout, analysis, graphs, labels_key, made_from, labels, jobs, progress)
    return graphs, labels


def memmap(path: Path, dtype: Any) -> np.ndarray:
    """A read-only memory map of a column file (an empty array for an empty file)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r")
