"""ProgramGraph <-> networkx node-link JSON, losslessly (docs/spec/python-api.md#transforms ``to_json``,
docs/spec/policy.md#lossless-conversions).

The layout is the one ProGraML 0.3.2's ``graph2json`` writes and CompilerGym's ``ProgramlJson`` observation holds::

    {"directed": true, "multigraph": true,
     "graph": {"function": [{"module": 0, "name": "main"}, ...],
               "module": [{"features": {...}, "name": "foo.c"}], "features": {...}},
     "nodes": [{"block": 0, "features": {"full_text": ["..."]}, "function": 0, "id": 1, "text": "alloca", "type": 0},
               ...],
     "links": [{"flow": 1, "key": 0, "order": 0, "position": 0, "source": 4, "target": 3}, ...]}

Keys are in the same (sorted) order as ``graph2json``'s. ``features`` appears exactly where the protobuf has a
``Features`` message (the external node has none: the key is absent, not ``{}``). Node-link data always uses the key
``links`` (never networkx 3.6's default ``edges``); pass ``edges="links"`` to ``json_graph.node_link_graph``.

Where this differs from ``graph2json`` (all three keep it lossless; every reader here also accepts the original):

* ``key`` numbers parallel edges between the same ordered node pair 0, 1, 2, ... in edge order (networkx's own
  numbering), so ``node_link_graph`` keeps them. ``graph2json`` writes ``key: 0`` on every link, which makes networkx
  collapse parallel edges (the first difference of docs/spec/python-api.md#transforms); :func:`from_json` reads the
  link list itself and never collapses.
* ``order`` is the edge's index in ``ProgramGraph.edge``. networkx iterates edges grouped by source node, so it cannot
  remember the global edge order by itself; this one integer per edge restores it. Readers sort links by ``order``
  when present (links without it keep their place after the ordered ones) and use list order otherwise, so graphs
  without it (the original's, CompilerGym's) load in their link order. ``node_link_data`` of a
  :func:`programl.to_networkx` graph has no ``order`` on its links (its edges are exactly CompilerGym's) but the graph
  attribute ``edge_order`` (``[source, target, key]`` per edge, in edge order), which readers honour the same way.
* Feature values: ``{key: [values]}`` as in the original (bytes as text, floats, ints). Two cases the original cannot
  express get an explicit form:

  - bytes that are not valid UTF-8 are decoded with Python's ``surrogateescape`` error handler (each undecodable byte
    0xXY becomes the lone surrogate U+DCXY; ``str.encode("utf-8", "surrogateescape")`` gives the bytes back). Valid
    UTF-8 decodes exactly as in the original. JSON text written with ``ensure_ascii=True`` (Python's default) keeps
    them as ``\\udcXY`` escapes.
  - an empty list has no element to tell its kind, so an *empty* ``bytes_list``/``float_list``/``int64_list`` is
    written as ``{"bytes_list": []}`` (etc.); ``[]`` means a ``Feature`` whose kind is unset (the original writes
    ``[]`` for all four, and :func:`from_json` reads ``[]`` as kind unset).

The same value encoding is used for ``ProgramGraphFeaturesList`` label files (:func:`features_list_to_json`), whose
JSON form is ``{"context": {...}, "graph": [{"node_features": {name: [feature, ...]}, ..., "features": {...}}]}``.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from programl.exceptions import GraphTransformError
from programl.io.one_or_many import convert_one_or_many
from programl.proto import (
    Edge,
    Feature,
    FeatureLists,
    Features,
    Node,
    ProgramGraph,
    ProgramGraphFeatures,
    ProgramGraphFeaturesList,
)

__all__ = [
    "feature_from_json",
    "feature_to_json",
    "features_from_json",
    "features_list_from_json",
    "features_list_to_json",
    "features_to_json",
    "from_json",
    "graph_from_json",
    "graph_from_node_link",
    "graph_to_node_link",
    "to_json",
]

JsonDict = dict[str, Any]

#: Link attribute holding the edge's index in ``ProgramGraph.edge`` (see the module docstring).
ORDER = "order"

#: Graph attribute of :func:`programl.to_networkx` graphs: ``(source, target, key)`` of each edge, in edge order.
EDGE_ORDER = "edge_order"

_KINDS = ("bytes_list", "float_list", "int64_list")


# --------------------------------------------------------------------------------------------------------------
# Feature values


def feature_to_json(feature: Feature) -> list | dict:
    """One ``Feature`` as a JSON value: a list of its values, or ``{"<kind>": []}`` for an empty list of a kind."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return []
    if kind == "bytes_list":
        values = [value.decode("utf-8", "surrogateescape") for value in feature.bytes_list.value]
    elif kind == "float_list":
        values = list(feature.float_list.value)
    else:
        values = list(feature.int64_list.value)
    return values if values else {kind: []}


def features_to_json(features: Features) -> JsonDict:
    """A ``Features`` map as ``{key: value}`` with keys sorted (as ``graph2json`` writes them)."""
    feature_map = features.feature
    return {key: feature_to_json(feature_map[key]) for key in sorted(feature_map)}


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real)


def _is_text(value: Any) -> bool:
    return isinstance(value, (str, bytes, bytearray))


def _to_bytes(value: str | bytes | bytearray, where: str) -> bytes:
    if isinstance(value, str):
        try:
            return value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as error:
            raise GraphTransformError(f"{where}: string cannot be encoded as bytes: {error}") from error
    return bytes(value)


def _fill_kind(feature: Feature, kind: str, values: list | tuple, where: str) -> None:
    """Append ``values`` to ``feature``'s list of the given kind (which is set even when ``values`` is empty)."""
    target = getattr(feature, kind)
    target.SetInParent()
    try:
        if kind == "bytes_list":
            if not all(_is_text(v) for v in values):
                raise GraphTransformError(f"{where}: a bytes_list holds strings or bytes")
            target.value.extend(_to_bytes(v, where) for v in values)
        elif kind == "int64_list":
            if not all(_is_int(v) for v in values):
                raise GraphTransformError(f"{where}: an int64_list holds integers")
            target.value.extend(int(v) for v in values)
        else:
            if not all(_is_real(v) for v in values):
                raise GraphTransformError(f"{where}: a float_list holds numbers")
            target.value.extend(float(v) for v in values)
    except (ValueError, TypeError, OverflowError) as error:
        raise GraphTransformError(f"{where}: {error}") from error


def _fill_feature(feature: Feature, value: Any, where: str) -> None:
    """Set ``feature`` from its JSON value (see :func:`feature_from_json`)."""
    if type(value) is list and len(value) == 1 and type(value[0]) is str:  # fast path: full_text
        try:
            feature.bytes_list.value.append(value[0].encode("utf-8", "surrogateescape"))
            return
        except UnicodeEncodeError:
            pass  # reported below
    if isinstance(value, Mapping):
        if not value:
            return
        if len(value) != 1 or next(iter(value)) not in _KINDS:
            raise GraphTransformError(f"{where}: expected a list or one of {{{', '.join(_KINDS)}: [...]}}")
        kind, values = next(iter(value.items()))
        if hasattr(values, "tolist"):
            values = values.tolist()
        if not isinstance(values, (list, tuple)):
            raise GraphTransformError(f"{where}: {kind} must hold a list, got {type(values).__name__}")
        _fill_kind(feature, kind, values, where)
        return
    if hasattr(value, "tolist"):  # numpy arrays
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise GraphTransformError(f"{where}: a feature must be a list of values, got {type(value).__name__}")
    if not value:
        return
    if all(_is_text(v) for v in value):
        _fill_kind(feature, "bytes_list", value, where)
    elif all(_is_int(v) for v in value):
        _fill_kind(feature, "int64_list", value, where)
    elif all(_is_real(v) for v in value):
        _fill_kind(feature, "float_list", value, where)
    else:
        kinds = sorted({type(v).__name__ for v in value})
        raise GraphTransformError(f"{where}: a feature list mixes value types {kinds}")


def feature_from_json(value: Any, where: str = "feature") -> Feature:
    """The ``Feature`` for a JSON value.

    A list of strings (or bytes) is a ``bytes_list``, of ints an ``int64_list``, of numbers with at least one float a
    ``float_list``; ``[]`` or ``{}`` is a feature with no kind; ``{"int64_list": [...]}`` (etc.) names the kind.

    Raises:
        GraphTransformError: The value fits none of these.
    """
    feature = Feature()
    _fill_feature(feature, value, where)
    return feature


def _fill_features(features: Features, value: Any, where: str) -> None:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise GraphTransformError(f"{where}: features must be a mapping, got {type(value).__name__}")
    features.SetInParent()
    for key, feature_value in value.items():
        if not isinstance(key, str):
            raise GraphTransformError(f"{where}: feature names must be strings, got {key!r}")
        _fill_feature(features.feature[key], feature_value, f"{where}[{key!r}]")


def features_from_json(value: Mapping[str, Any], where: str = "features") -> Features:
    """The ``Features`` message for ``{key: value}`` (see :func:`feature_from_json`)."""
    features = Features()
    _fill_features(features, value, where)
    return features


# --------------------------------------------------------------------------------------------------------------
# Graphs


def _maybe_features(message: Any, out: JsonDict) -> None:
    if message.HasField("features"):
        out["features"] = features_to_json(message.features)


def _graph_attributes(graph: ProgramGraph) -> JsonDict:
    functions = []
    for function in graph.function:
        entry: JsonDict = {}
        _maybe_features(function, entry)
        entry["module"] = function.module
        entry["name"] = function.name
        functions.append(entry)
    modules = []
    for module in graph.module:
        entry = {}
        _maybe_features(module, entry)
        entry["name"] = module.name
        modules.append(entry)
    attributes: JsonDict = {}
    _maybe_features(graph, attributes)
    attributes["function"] = functions
    attributes["module"] = modules
    return attributes


def _node_dicts(graph: ProgramGraph, features: bool = True) -> Iterator[JsonDict]:
    for index, node in enumerate(graph.node):
        entry: JsonDict = {"block": node.block}
        if features:
            _maybe_features(node, entry)
        entry["function"] = node.function
        entry["id"] = index
        entry["text"] = node.text
        entry["type"] = node.type
        yield entry


def _link_dicts(graph: ProgramGraph, features: bool = True) -> Iterator[JsonDict]:
    seen: dict[tuple[int, int], int] = {}
    num_nodes = len(graph.node)
    for index, edge in enumerate(graph.edge):
        pair = (edge.source, edge.target)
        if not (0 <= pair[0] < num_nodes and 0 <= pair[1] < num_nodes):
            raise GraphTransformError(
                f"edge {index} ({pair[0]} -> {pair[1]}) refers to a node that does not exist "
                f"(the graph has {num_nodes} nodes)"
            )
        key = seen.get(pair, 0)
        seen[pair] = key + 1
        entry: JsonDict = {}
        if features:
            _maybe_features(edge, entry)
        entry["flow"] = edge.flow
        entry["key"] = key
        entry[ORDER] = index
        entry["position"] = edge.position
        entry["source"] = edge.source
        entry["target"] = edge.target
        yield entry


def graph_to_node_link(graph: ProgramGraph) -> JsonDict:
    """One graph as a node-link dict (the worker behind :func:`to_json`)."""
    if not isinstance(graph, ProgramGraph):
        raise GraphTransformError(f"expected a ProgramGraph, got {type(graph).__name__}")
    return {
        "directed": True,
        "graph": _graph_attributes(graph),
        "links": list(_link_dicts(graph)),
        "multigraph": True,
        "nodes": list(_node_dicts(graph)),
    }


def to_json(
    graphs: ProgramGraph | Iterable[ProgramGraph],
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
) -> JsonDict | Iterator[JsonDict]:
    """Convert one or more program graphs to networkx node-link data (a JSON-serializable dict).

    Args:
        graphs: A ``ProgramGraph``, or an iterable of them.
        timeout: Seconds to wait for each graph when several are given (see :func:`programl.util.executor.execute`).
        executor: Anything with ``submit(fn, x)`` to run conversions on, when several graphs are given.
        chunksize: The most graphs in flight at once, when several are given.

    Returns:
        One dict for one graph; otherwise a lazy iterator of dicts, in input order.

    Raises:
        GraphTransformError: An input is not a ``ProgramGraph``, or has an edge to a node it does not have.
    """
    return convert_one_or_many(graph_to_node_link, graphs, timeout, executor, chunksize)


def _index(value: Any, where: str) -> int:
    try:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return int(value.__index__())
    except (AttributeError, TypeError) as error:
        raise GraphTransformError(f"{where}: expected an integer, got {value!r}") from error


def _enum(enum: Any, value: Any, where: str) -> int:
    if isinstance(value, str):
        try:
            return enum.Value(value)
        except ValueError as error:
            raise GraphTransformError(f"{where}: unknown name {value!r}") from error
    return _index(value, where)


def _field(entry: Mapping[str, Any], field: str, default: Any, kind: str, position: int, enum: Any = None) -> Any:
    """``entry[field]`` checked as an int (or enum name) for an int field; the error names ``kind[position].field``."""
    value = entry.get(field, default)
    if type(value) is int:
        return value
    where = f"{kind}[{position}].{field}"
    if field == "text" or field == "name":
        if not isinstance(value, str):
            raise GraphTransformError(f"{where}: expected a string, got {type(value).__name__}")
        return value
    if enum is not None:
        return _enum(enum, value, where)
    return _index(value, where)


def _add(container: Any, kind: str, index: int, /, **fields: Any) -> Any:
    """``container.add(**fields)``, with an error that names the field that does not fit."""
    try:
        return container.add(**fields)
    except (ValueError, TypeError):
        for name, value in fields.items():
            try:
                container.add(**{name: value})
            except (ValueError, TypeError) as error:
                raise GraphTransformError(f"{kind}[{index}].{name}: {error}") from error
        raise


def _node_indices(nodes: list[Mapping[str, Any]]) -> tuple[list[int], dict[Any, int]]:
    """The order in which to emit nodes, and node id -> node index.

    Nodes whose ids are exactly 0..n-1 keep those ids as their indices; any other ids are numbered in list order.
    """
    ids = []
    for position, node in enumerate(nodes):
        if not isinstance(node, Mapping):
            raise GraphTransformError(f"nodes[{position}]: expected a mapping, got {type(node).__name__}")
        ids.append(node.get("id", position))
    count = len(ids)
    if all(type(i) is int for i in ids) and sorted(ids) == list(range(count)):
        order = sorted(range(count), key=ids.__getitem__)
        return order, {i: i for i in ids}
    index: dict[Any, int] = {}
    for position, node_id in enumerate(ids):
        try:
            if node_id in index:
                raise GraphTransformError(f"nodes[{position}]: duplicate node id {node_id!r}")
        except TypeError as error:
            raise GraphTransformError(f"nodes[{position}]: node id {node_id!r} is not hashable") from error
        index[node_id] = position
    return list(range(count)), index


def _link_order(links: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Links sorted by ``order`` where they have one (stable); links without it follow, in their list order."""
    try:
        if [link[ORDER] for link in links] == list(range(len(links))):
            return links  # already in order (this module's output)
    except (KeyError, TypeError):
        pass
    if not any(isinstance(link, Mapping) and ORDER in link for link in links):
        return links
    ordered = []
    rest = []
    for position, link in enumerate(links):
        if isinstance(link, Mapping) and ORDER in link:
            ordered.append((_index(link[ORDER], f"links[{position}].{ORDER}"), position, link))
        else:
            rest.append(link)
    ordered.sort(key=lambda item: (item[0], item[1]))
    return [link for _, _, link in ordered] + rest


def _in_edge_order(links: list, edge_order: Any) -> list:
    """Links in the order ``graph.edge_order`` names them (``[source, target, key]`` per edge, as
    :func:`programl.to_networkx` records it); links it does not name follow in list order, triples naming no link
    are skipped."""
    if isinstance(edge_order, (str, bytes, Mapping)) or not isinstance(edge_order, Iterable):
        kind = type(edge_order).__name__
        raise GraphTransformError(f"graph.{EDGE_ORDER}: expected a list of [source, target, key], got {kind}")
    where: dict[tuple, list[int]] = {}
    for position, link in enumerate(links):
        if isinstance(link, Mapping):
            try:
                where.setdefault((link.get("source"), link.get("target"), link.get("key", 0)), []).append(position)
            except TypeError:  # an unhashable node id: the link loop reports it
                pass
    for positions in where.values():
        positions.reverse()  # pop() from the end takes the first
    taken = [False] * len(links)
    ordered = []
    for index, triple in enumerate(edge_order):
        try:
            source, target, key = triple
            positions = where.get((source, target, key))
        except (TypeError, ValueError) as error:
            message = f"graph.{EDGE_ORDER}[{index}]: expected [source, target, key], got {triple!r:.80}"
            raise GraphTransformError(message) from error
        if positions:
            position = positions.pop()
            taken[position] = True
            ordered.append(links[position])
    if len(ordered) < len(links):
        ordered += [link for position, link in enumerate(links) if not taken[position]]
    return ordered


def _list_of(value: Any, what: str) -> list:
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise GraphTransformError(f"{what}: expected a list, got {type(value).__name__}")
    return list(value)


def graph_from_node_link(data: Mapping[str, Any]) -> ProgramGraph:
    """The ``ProgramGraph`` for a node-link dict (the worker behind :func:`from_json`).

    Accepts this module's output, ``graph2json``'s / CompilerGym's (``key: 0`` on every link), and
    ``node_link_data`` of :func:`programl.to_networkx` graphs (links in networkx order, restored by the graph
    attribute ``edge_order``, or by ``order`` on each link).
    Links may be under ``links`` or ``edges`` (not both); ``nodes`` must be there.

    Raises:
        GraphTransformError: The data does not describe a program graph.
    """
    if not isinstance(data, Mapping):
        raise GraphTransformError(f"expected a node-link mapping, got {type(data).__name__}")
    if data.get("directed", True) is False:
        raise GraphTransformError("node-link data describes an undirected graph; program graphs are directed")
    if "nodes" not in data:
        raise GraphTransformError(f"node-link data has no 'nodes' (its keys: {', '.join(map(repr, data)) or 'none'})")
    if "links" in data and "edges" in data:
        raise GraphTransformError("node-link data has both 'links' and 'edges': which are the graph's edges?")
    nodes = _list_of(data.get("nodes"), "nodes")
    links = _list_of(data["links"] if "links" in data else data.get("edges"), "links")
    attributes = data.get("graph") or {}
    if not isinstance(attributes, Mapping):
        raise GraphTransformError(f"graph: expected a mapping, got {type(attributes).__name__}")
    if attributes.get(EDGE_ORDER) is not None:
        links = _in_edge_order(links, attributes[EDGE_ORDER])

    graph = ProgramGraph()
    order, node_index = _node_indices(nodes)
    for position in order:
        entry = nodes[position]
        node = _add(
            graph.node,
            "nodes",
            position,
            type=_field(entry, "type", 0, "nodes", position, Node.Type),
            text=_field(entry, "text", "", "nodes", position),
            function=_field(entry, "function", 0, "nodes", position),
            block=_field(entry, "block", 0, "nodes", position),
        )
        features = entry.get("features")
        if features is not None:
            _fill_features(node.features, features, f"nodes[{position}].features")

    for position, entry in enumerate(_link_order(links)):
        if not isinstance(entry, Mapping):
            raise GraphTransformError(f"links[{position}]: expected a mapping, got {type(entry).__name__}")
        try:
            source = node_index[entry["source"]]
            target = node_index[entry["target"]]
        except (KeyError, TypeError):
            for end in ("source", "target"):
                try:
                    node_index[entry[end]]
                except (KeyError, TypeError) as error:
                    message = f"links[{position}].{end}: no node with id {entry.get(end)!r}"
                    raise GraphTransformError(message) from error
            raise
        edge = _add(
            graph.edge,
            "links",
            position,
            flow=_field(entry, "flow", 0, "links", position, Edge.Flow),
            position=_field(entry, "position", 0, "links", position),
            source=source,
            target=target,
        )
        features = entry.get("features")
        if features is not None:
            _fill_features(edge.features, features, f"links[{position}].features")

    for position, entry in enumerate(_list_of(attributes.get("function"), "graph.function")):
        if not isinstance(entry, Mapping):
            raise GraphTransformError(f"graph.function[{position}]: expected a mapping, got {type(entry).__name__}")
        function = _add(
            graph.function,
            "graph.function",
            position,
            name=_field(entry, "name", "", "graph.function", position),
            module=_field(entry, "module", 0, "graph.function", position),
        )
        if entry.get("features") is not None:
            _fill_features(function.features, entry["features"], f"graph.function[{position}].features")
    for position, entry in enumerate(_list_of(attributes.get("module"), "graph.module")):
        if not isinstance(entry, Mapping):
            raise GraphTransformError(f"graph.module[{position}]: expected a mapping, got {type(entry).__name__}")
        module = _add(graph.module, "graph.module", position, name=_field(entry, "name", "", "graph.module", position))
        if entry.get("features") is not None:
            _fill_features(module.features, entry["features"], f"graph.module[{position}].features")
    if attributes.get("features") is not None:
        _fill_features(graph.features, attributes["features"], "graph.features")
    return graph


def graph_from_json(data: Mapping[str, Any] | str | bytes) -> ProgramGraph:
    """One graph from a node-link dict or its JSON text (the worker behind :func:`from_json`)."""
    if isinstance(data, (str, bytes, bytearray)):
        try:
            data = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise GraphTransformError(f"invalid JSON: {error}") from error
    return graph_from_node_link(data)


def from_json(
    data: Mapping[str, Any] | str | bytes | Iterable[Mapping[str, Any] | str | bytes],
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
) -> ProgramGraph | Iterator[ProgramGraph]:
    """Convert node-link data (a dict, or its JSON text) back to program graphs.

    Args:
        data: A node-link dict or JSON string/bytes, or an iterable of them.
        timeout: Seconds to wait for each input when several are given.
        executor: Anything with ``submit(fn, x)``, used when several inputs are given.
        chunksize: The most inputs in flight at once, when several are given.

    Returns:
        One ``ProgramGraph`` for one input; otherwise a lazy iterator of them, in input order.

    Raises:
        GraphTransformError: The input is not valid JSON or does not describe a program graph.
    """
    one = (Mapping, str, bytes, bytearray)
    return convert_one_or_many(graph_from_json, data, timeout, executor, chunksize, one=one, what="node-link data")


# --------------------------------------------------------------------------------------------------------------
# Label files: ProgramGraphFeaturesList


_FEATURE_LISTS_FIELDS = ("node_features", "edge_features", "function_features", "module_features")


def _feature_lists_to_json(lists: FeatureLists) -> JsonDict:
    return {
        name: [feature_to_json(feature) for feature in lists.feature_list[name].feature]
        for name in sorted(lists.feature_list)
    }


def features_list_to_json(features_list: ProgramGraphFeaturesList) -> JsonDict:
    """A ``ProgramGraphFeaturesList`` (label file, docs/spec/wire-format.md#label-records) as a JSON-serializable dict.

    Each message field appears only when the message has it (``{}`` when present but empty); each ``FeatureList``
    is a list of feature values, e.g. ``"data_flow_value": [[0], [1], [1], ...]``.
    """
    out: JsonDict = {}
    if features_list.HasField("context"):
        out["context"] = features_to_json(features_list.context)
    graphs = []
    for features in features_list.graph:
        entry: JsonDict = {}
        for field in _FEATURE_LISTS_FIELDS:
            if features.HasField(field):
                entry[field] = _feature_lists_to_json(getattr(features, field))
        if features.HasField("features"):
            entry["features"] = features_to_json(features.features)
        graphs.append(entry)
    out["graph"] = graphs
    return out


def features_list_from_json(data: Mapping[str, Any] | str | bytes) -> ProgramGraphFeaturesList:
    """Inverse of :func:`features_list_to_json` (also accepts the JSON text).

    Raises:
        GraphTransformError: The data does not describe a ``ProgramGraphFeaturesList``.
    """
    if isinstance(data, (str, bytes, bytearray)):
        try:
            data = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise GraphTransformError(f"invalid JSON: {error}") from error
    if not isinstance(data, Mapping):
        raise GraphTransformError(f"expected a mapping, got {type(data).__name__}")
    out = ProgramGraphFeaturesList()
    if data.get("context") is not None:
        _fill_features(out.context, data["context"], "context")
    for position, entry in enumerate(_list_of(data.get("graph"), "graph")):
        where = f"graph[{position}]"
        if not isinstance(entry, Mapping):
            raise GraphTransformError(f"{where}: expected a mapping, got {type(entry).__name__}")
        features: ProgramGraphFeatures = out.graph.add()
        for field in _FEATURE_LISTS_FIELDS:
            value = entry.get(field)
            if value is None:
                continue
            if not isinstance(value, Mapping):
                raise GraphTransformError(f"{where}.{field}: expected a mapping, got {type(value).__name__}")
            lists = getattr(features, field)
            lists.SetInParent()
            for name, items in value.items():
                feature_list = lists.feature_list[name]
                for i, item in enumerate(_list_of(items, f"{where}.{field}[{name!r}]")):
                    _fill_feature(feature_list.feature.add(), item, f"{where}.{field}[{name!r}][{i}]")
        if entry.get("features") is not None:
            _fill_features(features.features, entry["features"], f"{where}.features")
    return out
