"""Label records: :class:`AnalysisResult` <-> ``ProgramGraphFeaturesList`` (docs/spec/wire-format.md#label-records).

One ``ProgramGraphFeaturesList`` per (graph, analysis); ``graph[k]`` is the example of the k-th root:

* ``node_features.feature_list["data_flow_root_node"]``: one ``Feature(int64_list=[0|1])`` per node, 1 at the root;
* ``node_features.feature_list["data_flow_value"]``: one ``Feature(int64_list=[0|1])`` per node, the label;
* ``features.feature["data_flow_step_count"]`` and ``["data_flow_active_node_count"]``: ``int64_list=[k]``.

Encoding writes the wire bytes directly with numpy (seven bytes per node and feature list); they are exactly the
bytes of ``SerializeToString(deterministic=True)`` of the equivalent message, so label files are byte-identical
for the same graph and seed. Decoding reads the wire format (of a message, of bytes, or of a file), so files
written by the original ProGraML tools (``*.ProgramGraphFeaturesList.pb``) load with the same code; per-node
features in the common seven-byte form are decoded with numpy, anything else by a general (slower) path.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from programl.dataflow.base import AnalysisResult
from programl.exceptions import AnalysisError
from programl.graph_builder._encode import varint
from programl.proto import ProgramGraphFeaturesList

__all__ = [
    "ROOT_NODE",
    "VALUE",
    "STEP_COUNT",
    "ACTIVE_NODE_COUNT",
    "arrays_to_labels",
    "labels_to_bytes",
    "labels_to_arrays",
    "save_labels",
    "load_labels",
]

ROOT_NODE = "data_flow_root_node"
VALUE = "data_flow_value"
STEP_COUNT = "data_flow_step_count"
ACTIVE_NODE_COUNT = "data_flow_active_node_count"

# Feature list entry of one node: FeatureList.feature (1, len 5) { Feature.int64_list (3, len 3) {
# Int64List.value (1, packed, len 1) [v] } }
_NODE_TEMPLATE = np.array([0x0A, 0x05, 0x1A, 0x03, 0x0A, 0x01, 0x00], dtype=np.uint8)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def _map_entry_head(key: str, value_length: int) -> bytes:
    """The bytes of a ``key -> value`` map entry up to its value, for a value of ``value_length`` bytes."""
    key_field = _field(1, key.encode())
    value_head = varint(2 << 3 | 2) + varint(value_length)
    inner = len(key_field) + len(value_head) + value_length
    return varint(1 << 3 | 2) + varint(inner) + key_field + value_head


@functools.lru_cache(maxsize=4096)
def _count_entry(key_field: bytes, value: int) -> bytes:
    """One ``Features.feature`` map entry ``key -> Feature(int64_list=[value])`` (all lengths below 128), as
    ``graph_builder._encode.encode_features`` writes it."""
    packed = varint(value)
    int64_list = b"\x0a" + bytes((len(packed),)) + packed
    feature = b"\x1a" + bytes((len(int64_list),)) + int64_list
    entry = key_field + b"\x12" + bytes((len(feature),)) + feature
    return b"\x0a" + bytes((len(entry),)) + entry


_ACTIVE_KEY = _field(1, ACTIVE_NODE_COUNT.encode())
_STEP_KEY = _field(1, STEP_COUNT.encode())


def labels_to_bytes(result: AnalysisResult) -> bytes:
    """Serialize to the canonical (deterministic) wire bytes of a ``ProgramGraphFeaturesList``."""
    return bytes(_encode(result))


def _encode(result: AnalysisResult) -> bytearray:
    """:func:`labels_to_bytes`, in a bytearray (parsed without a copy by :func:`arrays_to_labels`).

    Every record is ``graph { node_features { <root list> <value list> } features { <counts> } }``; both feature
    lists are copied into one buffer from a template of seven bytes per node, then the values are written into
    every seventh byte (for all records at once when they have the same length, as they nearly always do).
    """
    num_records, num_nodes = result.labels.shape
    body_length = 7 * num_nodes
    root_head = _map_entry_head(ROOT_NODE, body_length)
    value_head = _map_entry_head(VALUE, body_length)
    lists_length = len(root_head) + len(value_head) + 2 * body_length
    lists_head = varint(1 << 3 | 2) + varint(lists_length)
    roots = result.roots.tolist()
    for root in roots:
        if not -num_nodes <= root < num_nodes:
            raise IndexError(f"root {root} is out of bounds for {num_nodes} nodes")
    heads, tails = [], []  # the bytes before the root list and after the value list
    for active, steps in zip(result.active_node_counts.tolist(), result.step_counts.tolist(), strict=True):
        features = _count_entry(_ACTIVE_KEY, active) + _count_entry(_STEP_KEY, steps)
        tail = b"\x2a" + varint(len(features)) + features
        heads.append(b"\x12" + varint(len(lists_head) + lists_length + len(tail)) + lists_head + root_head)
        tails.append(tail)
    middle = len(value_head) + 2 * body_length
    size = sum(map(len, heads)) + sum(map(len, tails)) + num_records * middle
    out = bytearray(size)
    flat = np.frombuffer(out, dtype=np.uint8)
    if num_records and len(set(map(len, heads))) == 1 and len(set(map(len, tails))) == 1:
        # one row per record: head | root list | value head | value list | tail
        head, tail = len(heads[0]), len(tails[0])
        rows = flat.reshape(num_records, head + middle + tail)
        rows[:, :head] = np.frombuffer(b"".join(heads), dtype=np.uint8).reshape(num_records, head)
        lists = rows[:, head : head + middle]
        lists[:, :body_length] = np.tile(_NODE_TEMPLATE, num_nodes)
        lists[:, body_length + len(value_head) :] = lists[:1, :body_length]
        lists[:, body_length : body_length + len(value_head)] = np.frombuffer(value_head, dtype=np.uint8)
        lists[np.arange(num_records), 6 + 7 * (np.asarray(roots, dtype=np.int64) % max(num_nodes, 1))] = 1
        lists[:, body_length + len(value_head) + 6 :: 7] = result.labels
        rows[:, head + middle :] = np.frombuffer(b"".join(tails), dtype=np.uint8).reshape(num_records, tail)
        return out
    template = _NODE_TEMPLATE.tobytes() * num_nodes
    offset = 0
    for k, (head, tail) in enumerate(zip(heads, tails, strict=True)):
        offset += len(head)
        out[offset - len(head) : offset] = head
        out[offset : offset + body_length] = template
        out[offset + 6 + 7 * (roots[k] % num_nodes)] = 1
        offset += body_length
        out[offset : offset + len(value_head)] = value_head
        offset += len(value_head)
        out[offset : offset + body_length] = template
        flat[offset + 6 : offset + body_length : 7] = result.labels[k]
        offset += body_length
        out[offset : offset + len(tail)] = tail
        offset += len(tail)
    return out


def arrays_to_labels(result: AnalysisResult) -> ProgramGraphFeaturesList:
    """The ``ProgramGraphFeaturesList`` message of docs/spec/wire-format.md#label-records."""
    return ProgramGraphFeaturesList.FromString(_encode(result))


# ---------------------------------------------------------------------------------------------------- decoding
def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise AnalysisError("truncated label record")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes, start: int, end: int):
    """Yield ``(field_number, wire_type, value)``; value is an int or a ``(start, end)`` span."""
    pos = start
    while pos < end:
        tag, pos = _read_varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _read_varint(buf, pos)
        elif wire == 2:
            length, pos = _read_varint(buf, pos)
            value = (pos, pos + length)
            pos += length
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos : pos + 8], "little"), pos + 8
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos : pos + 4], "little"), pos + 4
        else:
            raise AnalysisError(f"unsupported wire type {wire} in label record")
        if pos > end:
            raise AnalysisError("truncated label record")
        yield number, wire, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _feature_int(buf: bytes, span: tuple[int, int]) -> int:
    """First int64 of a ``Feature`` (docs/spec/wire-format.md#feature-messages: ``int64_list`` is field 3)."""
    for number, wire, value in _fields(buf, *span):
        if number == 3 and wire == 2:
            for n2, w2, v2 in _fields(buf, *value):
                if n2 == 1 and w2 == 0:
                    return _signed(v2)
                if n2 == 1 and w2 == 2:  # packed
                    return _signed(_read_varint(buf, v2[0])[0])
    raise AnalysisError("label feature has no int64 value")


def _feature_list(buf: bytes, span: tuple[int, int]) -> np.ndarray:
    """Values of a ``FeatureList`` of single-int64 features, as int64."""
    start, end = span
    raw = np.frombuffer(buf, dtype=np.uint8, count=end - start, offset=start)
    if len(raw) % 7 == 0:
        rows = raw.reshape(-1, 7)
        if (
            np.array_equal(rows[:, :6], np.broadcast_to(_NODE_TEMPLATE[:6], (len(rows), 6)))
            and rows[:, 6].max(initial=0) < 0x80
        ):
            return rows[:, 6].astype(np.int64)
    return np.asarray([_feature_int(buf, v) for n, w, v in _fields(buf, start, end) if n == 1], dtype=np.int64)


def labels_to_arrays(
    labels: ProgramGraphFeaturesList | bytes | bytearray | memoryview, analysis: str | None = None
) -> AnalysisResult:
    """Decode label records (ours or the original ProGraML's) into arrays.

    Args:
        labels: A ``ProgramGraphFeaturesList`` message or its serialized bytes.
        analysis: Name to record in the result (label files do not say which analysis made them).

    Returns:
        The :class:`AnalysisResult`; roots are the nodes whose ``data_flow_root_node`` is 1.

    Raises:
        AnalysisError: If a record lacks a feature of docs/spec/wire-format.md#label-records, does not have exactly one
            root, or the records disagree on the number of nodes.
    """
    buf = bytes(labels) if not hasattr(labels, "SerializeToString") else labels.SerializeToString()
    roots, rows, steps, active = [], [], [], []
    for number, wire, span in _fields(buf, 0, len(buf)):
        if number != 2 or wire != 2:
            continue
        lists: dict[str, np.ndarray] = {}
        scalars: dict[str, int] = {}
        for n1, w1, v1 in _fields(buf, *span):
            if n1 not in (1, 5) or w1 != 2:
                continue
            for n2, w2, entry in _fields(buf, *v1):  # map entries
                if n2 != 1 or w2 != 2:
                    continue
                key, value = "", (0, 0)
                for n3, w3, v3 in _fields(buf, *entry):
                    if n3 == 1 and w3 == 2:
                        key = buf[v3[0] : v3[1]].decode()
                    elif n3 == 2 and w3 == 2:
                        value = v3
                if n1 == 1:
                    lists[key] = _feature_list(buf, value)
                else:
                    scalars[key] = _feature_int(buf, value)
        missing = [k for k in (ROOT_NODE, VALUE) if k not in lists] + [
            k for k in (STEP_COUNT, ACTIVE_NODE_COUNT) if k not in scalars
        ]
        if missing:
            raise AnalysisError(f"label record {len(roots)} lacks {', '.join(missing)}")
        hot = np.flatnonzero(lists[ROOT_NODE])
        if len(hot) != 1:
            raise AnalysisError(f"label record {len(roots)} has {len(hot)} root nodes, expected 1")
        if len(lists[VALUE]) != len(lists[ROOT_NODE]):
            raise AnalysisError(f"label record {len(roots)} has feature lists of different lengths")
        roots.append(int(hot[0]))
        rows.append(lists[VALUE])
        steps.append(scalars[STEP_COUNT])
        active.append(scalars[ACTIVE_NODE_COUNT])
    if len({len(r) for r in rows}) > 1:
        raise AnalysisError("label records disagree on the number of nodes")
    num_nodes = len(rows[0]) if rows else 0
    return AnalysisResult(
        analysis=analysis,
        roots=np.asarray(roots, dtype=np.int64),
        labels=np.asarray(rows, dtype=np.uint8).reshape(len(rows), num_nodes),
        step_counts=np.asarray(steps, dtype=np.int64),
        active_node_counts=np.asarray(active, dtype=np.int64),
    )


def save_labels(path: str | os.PathLike, result: AnalysisResult) -> Path:
    """Write a ``*.ProgramGraphFeaturesList.pb`` file atomically (canonical bytes)."""
    from programl.util.fs import atomic_write_bytes

    return atomic_write_bytes(path, labels_to_bytes(result))


def load_labels(path: str | os.PathLike, analysis: str | None = None) -> AnalysisResult:
    """Read a ``*.ProgramGraphFeaturesList.pb`` file (ours or the original ProGraML's) into arrays."""
    return labels_to_arrays(Path(path).read_bytes(), analysis=analysis)
