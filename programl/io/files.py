"""Single graph and label files, in the layout of ProGraML's DeepDataFlow data set
(docs/spec/datasets.md#deepdataflow-layout, docs/spec/datasets.md#builds).

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.protobuf import message as pb_message
from google.protobuf import text_format

from programl.exceptions import GraphCreationError, GraphTransformError
from programl.io import json_convert, serialize
from programl.proto import ProgramGraph, ProgramGraphFeaturesList
from programl.util.fs import atomic_write_bytes

__all__ = ["graph_file_bytes", "read_features_list", "read_graph", "write_features_list", "write_graph"]

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


def _read_message(path: str | os.PathLike, kind: str, cls: type, from_json: Callable[[Any], Any]) -> Any:
    """A ``cls`` message from a ``.pb``, ``.pbtxt`` or ``.json`` file (read with ``from_json``)."""
    where = os.fspath(path)
    data = Path(path).read_bytes()
    message = cls()
    try:
        if kind == ".pb":
            message.ParseFromString(data)
        elif kind == ".pbtxt":
            text_format.Parse(data.decode("utf-8"), message)
        else:
            message = from_json(json.loads(data))
    except pb_message.DecodeError as error:
        raise GraphCreationError(f"not a binary {cls.__name__}: {error}", path=where) from error
    except UnicodeDecodeError as error:
        raise GraphCreationError(f"not UTF-8 text: {error}", path=where) from error
    except text_format.ParseError as error:
        raise GraphCreationError(f"not a {cls.__name__} in text format: {error}", path=where) from error
    except json.JSONDecodeError as error:
        raise GraphCreationError(f"invalid JSON: {error}", path=where) from error
    except GraphTransformError as error:
        raise GraphCreationError(f"not a {cls.__name__} in JSON: {error}", path=where) from error
    return message


def _message_bytes(message: Any, kind: str, to_json: Callable[[Any], bytes]) -> bytes:
    """``message`` as the contents of a ``.pb``, ``.pbtxt`` or ``.json`` file (written with ``to_json``)."""
    if kind == ".pb":
        return message.SerializeToString(deterministic=True)
    if kind == ".pbtxt":
        return text_format.MessageToString(message).encode("utf-8")
    return to_json(message)


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
    if kind != ".gz":
        return _read_message(path, kind, ProgramGraph, json_convert.graph_from_node_link)
    graphs = serialize.load_graphs(path)
    if len(graphs) != 1:
        message = f"expected one graph in the ProgramGraphList, found {len(graphs)}"
        raise GraphCreationError(message, path=os.fspath(path))
    return graphs[0]


def graph_file_bytes(graph: ProgramGraph, suffix: str) -> bytes:
    """The contents of a graph file whose name ends in ``suffix`` (``.pb``, ``.pbtxt``, ``.json`` or ``.gz``).

    The one serialisation of a graph file: :func:`write_graph` and ``programl build/convert --format`` both use it,
    so a ``.ProgramGraph.json`` is the same bytes whoever writes it (compact node-link JSON in ASCII, which keeps
    byte features that are not UTF-8 as ``\\udcXX`` escapes, see :mod:`programl.io.json_convert`).

    Raises:
        GraphTransformError: ``graph`` is not a ``ProgramGraph``, or ``suffix`` names no known format.
    """
    if not isinstance(graph, ProgramGraph):
        raise GraphTransformError(f"expected a ProgramGraph, got {type(graph).__name__}")
    kind = _format(suffix, _GRAPH_FORMATS)
    if kind == ".gz":
        return serialize.to_bytes([graph])
    return _message_bytes(graph, kind, lambda g: _dump_json(json_convert.graph_to_node_link(g)))


def write_graph(path: str | os.PathLike, graph: ProgramGraph) -> Path:
    """Write one ``ProgramGraph`` atomically, in the format named by the suffix (see :func:`read_graph`).

    Returns:
        The path written.

    Raises:
        GraphTransformError: ``graph`` is not a ``ProgramGraph``, or the suffix names no known format.
    """
    return atomic_write_bytes(path, graph_file_bytes(graph, os.fspath(path)))


def read_features_list(path: str | os.PathLike) -> ProgramGraphFeaturesList:
    """Read a ``ProgramGraphFeaturesList`` (data-flow labels, docs/spec/wire-format.md#label-records) from a ``.pb``,
    ``.pbtxt`` or ``.json`` file.

    Raises:
        GraphCreationError: The file's contents are not labels in the format its name says.
        GraphTransformError: The name has none of these suffixes.
        OSError: The file cannot be read.
    """
    kind = _format(path, _LABEL_FORMATS)
    return _read_message(path, kind, ProgramGraphFeaturesList, json_convert.features_list_from_json)


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
    to_json = lambda fl: _dump_json(json_convert.features_list_to_json(fl), readable=True)  # noqa: E731
    return atomic_write_bytes(path, _message_bytes(features_list, kind, to_json))
