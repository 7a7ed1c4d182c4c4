"""Single graph and label files, in the layout of ProGraML's DeepDataFlow data set (SPEC §9.1, DESIGN §5).

The format comes from the file name:

=================================  =============================================================================
suffix                             contents
=================================  =============================================================================
``.pb``                            binary protobuf (``graphs/<name>.ProgramGraph.pb``,
                                   ``labels/<analysis>/<name>.ProgramGraphFeaturesList.pb``)
``.pbtxt``                         protobuf text format
``.json``                          graphs: node-link JSON (:mod:`programl.io.json_convert`); labels: a JSON form for
                                   people (:func:`programl.io.json_convert.features_list_to_json`)
``.gz`` (graphs only)              a gzip-compressed ``ProgramGraphList`` (:func:`programl.io.serialize.save_graphs`,
                                   e.g. ``x.ProgramGraphList.pb.gz``) holding exactly one graph
=================================  =============================================================================

Writes are atomic (a temporary file renamed over the destination), and deterministic: the same message always gives
the same bytes. A file that cannot be decoded raises :class:`~programl.exceptions.GraphCreationError` whose
``path`` names it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from google.protobuf import message as pb_message
from google.protobuf import text_format

from programl.exceptions import GraphCreationError, GraphTransformError
from programl.io import json_convert, serialize
from programl.proto import ProgramGraph, ProgramGraphFeaturesList
from programl.util.fs import atomic_write_bytes

__all__ = ["read_features_list", "read_graph", "write_features_list", "write_graph"]

_GRAPH_FORMATS = (".gz", ".pbtxt", ".json", ".pb")
_LABEL_FORMATS = (".pbtxt", ".json", ".pb")


def _format(path: str | os.PathLike, formats: tuple[str, ...]) -> str:
    name = Path(path).name
    for suffix in formats:
        if name.endswith(suffix):
            return suffix
    raise GraphTransformError(
        f"{os.fspath(path)}: cannot tell the file format from its name; expected a name ending in " + ", ".join(formats)
    )


def _parse_binary(message: pb_message.Message, data: bytes, path: str) -> None:
    try:
        message.ParseFromString(data)
    except pb_message.DecodeError as error:
        raise GraphCreationError(f"not a binary {type(message).__name__}: {error}", path=path) from error


def _parse_text(message: pb_message.Message, data: bytes, path: str) -> None:
    try:
        text_format.Parse(data.decode("utf-8"), message)
    except (UnicodeDecodeError, text_format.ParseError, pb_message.DecodeError) as error:
        raise GraphCreationError(f"not a {type(message).__name__} in text format: {error}", path=path) from error


def _parse_json(data: bytes, path: str) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise GraphCreationError(f"invalid JSON: {error}", path=path) from error


def _dump_json(value: Any, readable: bool = False) -> bytes:
    if readable:
        return (_readable_json(value) + "\n").encode("ascii")
    return (json.dumps(value, separators=(",", ":")) + "\n").encode("ascii")


def _is_leaf(value: Any) -> bool:
    """A list of scalars, or of lists of scalars: written on one line."""
    if isinstance(value, dict):
        return not value
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) or _is_leaf(v) for v in value)
    return True


def _readable_json(value: Any, indent: int = 0) -> str:
    """JSON with one line per mapping entry, and value lists kept on one line (label files stay short)."""
    if isinstance(value, dict) and value:
        pad = " " * (indent + 2)
        items = [f"{pad}{json.dumps(key)}: {_readable_json(item, indent + 2)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, list) and value and not _is_leaf(value):
        pad = " " * (indent + 2)
        items = [pad + _readable_json(item, indent + 2) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    return json.dumps(value, separators=(", ", ": "))


def read_graph(path: str | os.PathLike) -> ProgramGraph:
    """Read one ``ProgramGraph`` from a ``.pb``, ``.pbtxt``, ``.json`` or ``.gz`` file.

    Raises:
        GraphCreationError: The file's contents are not a graph in the format its name says.
        GraphTransformError: The name has none of these suffixes.
        OSError: The file cannot be read.
    """
    kind = _format(path, _GRAPH_FORMATS)
    where = os.fspath(path)
    if kind == ".gz":
        graphs = serialize.load_graphs(path)
        if len(graphs) != 1:
            raise GraphCreationError(f"expected one graph in the ProgramGraphList, found {len(graphs)}", path=where)
        return graphs[0]
    data = Path(path).read_bytes()
    graph = ProgramGraph()
    if kind == ".pb":
        _parse_binary(graph, data, where)
    elif kind == ".pbtxt":
        _parse_text(graph, data, where)
    else:
        try:
            graph = json_convert.graph_from_node_link(_parse_json(data, where))
        except GraphTransformError as error:
            raise GraphCreationError(f"not a node-link program graph: {error}", path=where) from error
    return graph


def write_graph(path: str | os.PathLike, graph: ProgramGraph) -> Path:
    """Write one ``ProgramGraph`` atomically, in the format named by the suffix (see :func:`read_graph`).

    Returns:
        The path written.

    Raises:
        GraphTransformError: ``graph`` is not a ``ProgramGraph``, or the suffix names no known format.
    """
    if not isinstance(graph, ProgramGraph):
        raise GraphTransformError(f"expected a ProgramGraph, got {type(graph).__name__}")
    kind = _format(path, _GRAPH_FORMATS)
    if kind == ".gz":
        data = serialize.to_bytes([graph])
    elif kind == ".pb":
        data = graph.SerializeToString(deterministic=True)
    elif kind == ".pbtxt":
        data = text_format.MessageToString(graph).encode("utf-8")
    else:
        data = _dump_json(json_convert.graph_to_node_link(graph))
    return atomic_write_bytes(path, data)


def read_features_list(path: str | os.PathLike) -> ProgramGraphFeaturesList:
    """Read a ``ProgramGraphFeaturesList`` (data-flow labels, SPEC §2.5) from a ``.pb``, ``.pbtxt`` or ``.json`` file.

    Raises:
        GraphCreationError: The file's contents are not labels in the format its name says.
        GraphTransformError: The name has none of these suffixes.
        OSError: The file cannot be read.
    """
    kind = _format(path, _LABEL_FORMATS)
    where = os.fspath(path)
    data = Path(path).read_bytes()
    features_list = ProgramGraphFeaturesList()
    if kind == ".pb":
        _parse_binary(features_list, data, where)
    elif kind == ".pbtxt":
        _parse_text(features_list, data, where)
    else:
        try:
            features_list = json_convert.features_list_from_json(_parse_json(data, where))
        except GraphTransformError as error:
            raise GraphCreationError(f"not a ProgramGraphFeaturesList: {error}", path=where) from error
    return features_list


def write_features_list(path: str | os.PathLike, features_list: ProgramGraphFeaturesList) -> Path:
    """Write a ``ProgramGraphFeaturesList`` atomically, in the format named by the suffix.

    Returns:
        The path written.

    Raises:
        GraphTransformError: ``features_list`` has the wrong type, or the suffix names no known format.
    """
    if not isinstance(features_list, ProgramGraphFeaturesList):
        raise GraphTransformError(f"expected a ProgramGraphFeaturesList, got {type(features_list).__name__}")
    kind = _format(path, _LABEL_FORMATS)
    if kind == ".pb":
        data = features_list.SerializeToString(deterministic=True)
    elif kind == ".pbtxt":
        data = text_format.MessageToString(features_list).encode("utf-8")
    else:
        data = _dump_json(json_convert.features_list_to_json(features_list), readable=True)
    return atomic_write_bytes(path, data)
