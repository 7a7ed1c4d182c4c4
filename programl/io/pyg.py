"""ProgramGraph <-> torch-geometric conversion (docs/spec/models.md#data-flow-ggnn, docs/spec/models.md#graph-tensors;
docs/spec/design.md#data-model).

:func:`to_pyg` turns one ``ProgramGraph`` (optionally with one data-flow label record,
docs/spec/wire-format.md#label-records) into a homogeneous :class:`torch_geometric.data.Data`; :func:`to_pyg_examples`
does the same for every record of a ``ProgramGraphFeaturesList`` while reading the graph once; :func:`to_hetero` gives a
:class:`torch_geometric.data.HeteroData` with one node type per ``Node.Type`` and one relation per
(source type, flow, target type); :func:`from_pyg` is the inverse of :func:`to_pyg` for the structure (node types and
texts, edges with flows and positions, in order), enough for round trips.

Attributes of the homogeneous :class:`~torch_geometric.data.Data` (N nodes, E edges):

=================  ==========  ======================================================================================
attribute          shape       meaning
=================  ==========  ======================================================================================
``x``              (N,) long   vocabulary id of ``node.text``; unknown texts get the OOV id ``len(vocabulary)``
``node_type``      (N,) long   ``Node.Type`` (0 instruction, 1 variable, 2 constant, 3 type)
``edge_index``     (2, E) long (source, target) of every protobuf edge, in protobuf order; parallel edges are kept
``edge_flow``      (E,) long   ``Edge.Flow`` (0 control, 1 data, 2 call, 3 type)
``edge_pos``       (E,) long   ``Edge.position``
``num_nodes``      int         N (also for graphs without edges)
``text``           list[str]   node texts; only when no vocabulary is given or ``keep_text=True``
``root``           (N,) long   ``data_flow_root_node`` of the label record (the selector), when labels are given
``y``              (N,) long   ``data_flow_value`` of the label record, when labels are given
``step_count``     (1,) long   ``data_flow_step_count``, when labels are given
``active_nodes``   (1,) long   ``data_flow_active_node_count``, when the record has it
``<feature>``      (1,) / (1,k) every numeric graph-level feature (``ProgramGraph.features``) under its own name,
                               e.g. ``poj104_label``, ``devmap_label``, ``wgsize``, ``transfer_bytes``
``graph_y``        (1,) long   the graph-level target: ``poj104_label - 1`` (the classifyapp loader's 0-based class)
                               or ``devmap_label``, when the graph has one of them
``graph_x``        (1, 2) float ``[transfer_bytes, wgsize]`` (raw; the devmap model applies log1p), when both exist
``x_num``          (N, 10) long ``number_digits`` of each node (``[kind, sign, exponent, d1..d7]``; all 0: no number),
                               when the graph has numbers and types (``numbers_and_types``, below)
``x_type``         (N, 6) long  ``type_shape`` of each node (``[kind, elements, scalars, bits, element_bits,
                               element_is_float]``; all 0: no vector, array or struct), likewise
``x_str``          (N, 17) long ``string_bytes`` of each node (``[length, b1 + 1, ..., b16 + 1]``; all 0: no string),
                               when the graph has string bytes (``string_bytes``, below)
=================  ==========  ======================================================================================

Shapes are chosen so that :class:`torch_geometric.data.Batch` concatenates them naturally: node and edge tensors along
the node/edge dimension (``edge_index`` offset per graph), graph-level tensors into (B,) or (B, k).

The vocabulary may be anything with ``get(text, default)`` and ``len()`` (a ``dict`` from text to id, or
:class:`programl.data.vocabulary.Vocabulary`), only read; or a table that also has ``add(text) -> id``, which gives
every new text the next id (:class:`programl.datasets.transforms.TextTable`, while a data set is processed: no text is
unknown). This module depends on none of them.

Graphs built by the original ProGraML 0.3.2 (LLVM 10) say ``i32*`` where this project's (LLVM 22) say ``ptr``; by
default (``typed_pointers="auto"``) such a text that the vocabulary lacks is looked up in its LLVM 22 form, so the
models of this project read them (:mod:`programl.io.typed_pointers`; ``typed_pointers="keep"`` turns it off).

Needs the ``ml`` extra: without torch or torch-geometric, importing this module (or ``programl.to_pyg``) raises a
``ModuleNotFoundError`` whose one line says ``pip install 'programl[ml]'``.

Performance: each protobuf field is read once with a list comprehension and then handled with numpy; there is no
per-edge Python work beyond that single read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

import programl

try:
    import torch
    from torch_geometric.data import Data, HeteroData
except ModuleNotFoundError as _error:  # installed without the ml extra: one line that says which extra to install
    _replacement = programl._ml_import_error("programl.io.pyg", _error)
    if _replacement is None:
        raise
    raise _replacement from None

from programl.exceptions import GraphTransformError
from programl.io.typed_pointers import check_typed_pointers, llvm22_texts, vocabulary_ids
from programl.proto import ProgramGraph, ProgramGraphFeatures, ProgramGraphFeaturesList
from programl.util.checks import is_integer

__all__ = [
    "EDGE_FLOW_NAMES",
    "NODE_TYPE_NAMES",
    "from_pyg",
    "graph_arrays",
    "to_hetero",
    "to_pyg",
    "to_pyg_examples",
]

#: ``Node.Type`` value -> node type name used by :func:`to_hetero`.
NODE_TYPE_NAMES: tuple[str, ...] = ("instruction", "variable", "constant", "type")
#: ``Edge.Flow`` value -> relation name used by :func:`to_hetero`.
EDGE_FLOW_NAMES: tuple[str, ...] = ("control", "data", "call", "type")

# Data attributes that a graph-level feature must not overwrite; such a feature is stored as ``graph_<key>``.
_RESERVED = frozenset(
    {
        "x",
        "y",
        "pos",
        "batch",
        "ptr",
        "edge_index",
        "edge_attr",
        "edge_flow",
        "edge_pos",
        "node_type",
        "num_nodes",
        "text",
        "root",
        "step_count",
        "active_nodes",
        "graph_x",
        "graph_y",
        "face",
        "x_num",
        "x_type",
        "x_str",
    }
)


class _Vocab(Protocol):
    def get(self, key: str, default: int, /) -> int: ...

    def __len__(self) -> int: ...


def _adder(vocabulary: Any) -> Any:
    """The ``add(text) -> id`` of a vocabulary that grows (a mapping with an ``add`` method: TextTable), or None."""
    add = getattr(vocabulary, "add", None)
    return add if callable(add) else None


class GraphArrays:
    """Columnar view of a ``ProgramGraph`` (docs/spec/design.md#data-model): numpy arrays read once from the protobuf.

    Attributes:
        node_type: (N,) int64 ``Node.Type``.
        node_text: list of N node texts.
        edge_flow, edge_pos, edge_src, edge_dst: (E,) int64 edge fields in protobuf order.
    """

    __slots__ = ("node_type", "node_text", "edge_flow", "edge_pos", "edge_src", "edge_dst")

    def __init__(self, graph: ProgramGraph) -> None:
        nodes = graph.node
        self.node_type = np.fromiter((n.type for n in nodes), dtype=np.int64, count=len(nodes))
        self.node_text = [n.text for n in nodes]
        edges = graph.edge
        if len(edges):
            columns = np.array([(e.flow, e.position, e.source, e.target) for e in edges], dtype=np.int64)
        else:
            columns = np.zeros((0, 4), dtype=np.int64)
        self.edge_flow, self.edge_pos, self.edge_src, self.edge_dst = columns.T.copy()
        n = len(nodes)
        if columns.size and (columns[:, 2:].min() < 0 or columns[:, 2:].max() >= n):
            bad = int(np.flatnonzero((columns[:, 2:] < 0).any(1) | (columns[:, 2:] >= n).any(1))[0])
            raise GraphTransformError(
                f"edge {bad} ({int(columns[bad, 2])} -> {int(columns[bad, 3])}) refers to a node outside 0..{n - 1}"
            )

    @property
    def num_nodes(self) -> int:
        return len(self.node_text)

    def vocab_ids(self, vocabulary: _Vocab | None, typed_pointers: str = "auto") -> np.ndarray:
        """(N,) int64 vocabulary ids; OOV (and every node when ``vocabulary`` is None) -> ``len(vocabulary)``. A
        vocabulary with ``add(text) -> id`` (a growing table) is asked for every text, so none is unknown.
        ``typed_pointers`` (``auto``, ``map``, ``keep``): how the LLVM 10 texts of a graph built by the original
        ProGraML (``i32*``) are looked up (:mod:`programl.io.typed_pointers`)."""
        check_typed_pointers(typed_pointers)
        if vocabulary is None:
            return np.zeros(self.num_nodes, dtype=np.int64)
        if not (hasattr(vocabulary, "get") and hasattr(vocabulary, "__len__")):
            raise TypeError(
                f"vocabulary must map node text to id (a dict or Vocabulary), not {type(vocabulary).__name__}"
            )
        texts = self.node_text
        add = _adder(vocabulary)
        if add is not None:  # a table that gives each new text the next id (TextTable); it lacks no text
            if typed_pointers == "map":
                texts = llvm22_texts(texts)
            values = [add(t) for t in texts]
            oov = len(vocabulary)
        else:
            oov = len(vocabulary)
            # an LLVM 10 text (i32*) the vocabulary lacks is looked up as LLVM 22 prints it (ptr), by the mode
            values = vocabulary_ids(texts, vocabulary, oov, typed_pointers)
            oov = max(oov, len(vocabulary))  # a mapping whose get adds what it lacks has grown
        try:
            ids = np.array(values) if values else np.zeros(0, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):  # e.g. lists of uneven length
            ids = np.zeros(0, dtype=object)
        out_of_range = ids.dtype.kind in "iu" and ids.size and (ids.min() < 0 or ids.max() > oov)
        if ids.dtype.kind not in "iu" or ids.shape != (len(values),) or out_of_range:
            text, value = next((t, v) for t, v in zip(texts, values) if not _is_id(v, oov))
            raise GraphTransformError(
                f"vocabulary maps {text!r} to {value!r}, not an id in 0..{oov} (its length is the unknown id)"
            )
        return ids.astype(np.int64, copy=False)


def _is_id(value: Any, oov: int) -> bool:
    return is_integer(value) and 0 <= value <= oov


def graph_arrays(graph: ProgramGraph) -> GraphArrays:
    """Read a ``ProgramGraph`` into its columnar numpy view (see :class:`GraphArrays`).

    Raises:
        GraphTransformError: An edge refers to a node index that does not exist.
    """
    return GraphArrays(graph)


def _graph_features(graph: ProgramGraph) -> dict[str, torch.Tensor]:
    """Numeric graph-level features as (1,) or (1, k) tensors; bytes features are skipped."""
    out: dict[str, torch.Tensor] = {}
    for key in sorted(graph.features.feature):
        feature = graph.features.feature[key]
        kind = feature.WhichOneof("kind")
        if kind == "int64_list":
            values = torch.tensor(list(feature.int64_list.value), dtype=torch.long)
        elif kind == "float_list":
            values = torch.tensor(list(feature.float_list.value), dtype=torch.float32)
        else:
            continue
        if values.numel() == 0:
            continue
        name = f"graph_{key}" if key in _RESERVED else key
        out[name] = values if values.numel() == 1 else values.unsqueeze(0)
    return out


def _add_graph_attributes(attrs: dict[str, Any], graph: ProgramGraph) -> None:
    """Add the numeric graph-level features and the targets derived from them (``graph_y``, ``graph_x``)."""
    features = _graph_features(graph)
    targets = _graph_targets(features)
    for name in targets:
        if name in features:  # a feature named "x" or "y" is stored as graph_x / graph_y too
            raise GraphTransformError(
                f"graph feature {name.removeprefix('graph_')!r} and the {name} that to_pyg derives from the "
                "DevMap / POJ-104 features would have the same attribute name; rename the feature"
            )
    attrs.update(features)
    attrs.update(targets)


def _graph_targets(features: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    if "poj104_label" in features:
        out["graph_y"] = features["poj104_label"].reshape(-1)[:1] - 1
    elif "devmap_label" in features:
        out["graph_y"] = features["devmap_label"].reshape(-1)[:1].clone()
    if "transfer_bytes" in features and "wgsize" in features:
        aux = [features["transfer_bytes"].reshape(-1)[0], features["wgsize"].reshape(-1)[0]]
        out["graph_x"] = torch.tensor([[float(aux[0]), float(aux[1])]], dtype=torch.float32)
    return out


def _feature_list_column(record: ProgramGraphFeatures, key: str, num_nodes: int) -> torch.Tensor:
    feature_lists = record.node_features.feature_list
    if key not in feature_lists:
        raise GraphTransformError(f"label record has no node feature list {key!r}")
    column = feature_lists[key].feature
    if len(column) != num_nodes:
        raise GraphTransformError(f"label record {key!r} has {len(column)} entries for a graph of {num_nodes} nodes")
    try:
        values = [f.int64_list.value[0] for f in column]
    except IndexError:
        raise GraphTransformError(f"label record {key!r} has an empty int64_list") from None
    return torch.tensor(values, dtype=torch.long)


def _label_attributes(record: ProgramGraphFeatures, num_nodes: int) -> dict[str, torch.Tensor]:
    out = {
        "root": _feature_list_column(record, "data_flow_root_node", num_nodes),
        "y": _feature_list_column(record, "data_flow_value", num_nodes),
    }
    features = record.features.feature
    for key, name in (("data_flow_step_count", "step_count"), ("data_flow_active_node_count", "active_nodes")):
        if key in features and len(features[key].int64_list.value):
            out[name] = torch.tensor([features[key].int64_list.value[0]], dtype=torch.long)
        elif name == "step_count":
            raise GraphTransformError("label record has no data_flow_step_count feature")
    return out


def _feature_rows(graph: ProgramGraph, key: str, width: int) -> torch.Tensor:
    """(N, width) long of the int64 node feature ``key`` (its first ``width`` values; zero rows where a node has
    none)."""
    out = np.zeros((len(graph.node), width), dtype=np.int64)
    for i, node in enumerate(graph.node):
        features = node.features.feature
        if key in features:
            values = features[key].int64_list.value[:width]
            out[i, : len(values)] = values
    return torch.from_numpy(out)


def _numbers_and_types(graph: ProgramGraph) -> dict[str, torch.Tensor]:
    """``x_num`` (N, 10) and ``x_type`` (N, 6) long from the ``number_digits`` / ``type_shape`` node features (zero
    rows where a node has none; :mod:`programl.graph_builder.numbers_types`)."""
    from programl.graph_builder.numbers_types import NUMBER_FEATURE, NUMBER_WIDTH, TYPE_FEATURE, TYPE_WIDTH

    return {
        "x_num": _feature_rows(graph, NUMBER_FEATURE, NUMBER_WIDTH),
        "x_type": _feature_rows(graph, TYPE_FEATURE, TYPE_WIDTH),
    }


def _string_bytes(graph: ProgramGraph) -> torch.Tensor:
    """``x_str`` (N, 17) long from the ``string_bytes`` node features (zero rows where a node has none;
    :mod:`programl.graph_builder.string_bytes`)."""
    from programl.graph_builder.string_bytes import STRING_FEATURE, STRING_WIDTH

    return _feature_rows(graph, STRING_FEATURE, STRING_WIDTH)


def _check_tristate(name: str, value: bool | None) -> None:
    if value not in (None, True, False):
        raise ValueError(f"{name} must be None, True or False, not {value!r}")


def _base_attributes(
    arrays: GraphArrays,
    graph: ProgramGraph,
    vocabulary: _Vocab | None,
    keep_text: bool | None,
    typed_pointers: str = "auto",
    numbers_and_types: bool | None = None,
    string_bytes: bool | None = None,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "x": torch.from_numpy(arrays.vocab_ids(vocabulary, typed_pointers)),
        "node_type": torch.from_numpy(arrays.node_type),
        "edge_index": torch.from_numpy(np.stack([arrays.edge_src, arrays.edge_dst])),
        "edge_flow": torch.from_numpy(arrays.edge_flow),
        "edge_pos": torch.from_numpy(arrays.edge_pos),
        "num_nodes": arrays.num_nodes,
    }
    if keep_text or (keep_text is None and vocabulary is None):
        attrs["text"] = list(arrays.node_text)
    _add_graph_attributes(attrs, graph)
    _check_tristate("numbers_and_types", numbers_and_types)
    _check_tristate("string_bytes", string_bytes)
    if numbers_and_types is None:
        from programl.graph_builder.numbers_types import is_annotated

        numbers_and_types = is_annotated(graph)
    if numbers_and_types:
        attrs.update(_numbers_and_types(graph))
    if string_bytes is None:
        from programl.graph_builder import string_bytes as strings

        string_bytes = strings.is_annotated(graph)
    if string_bytes:
        attrs["x_str"] = _string_bytes(graph)
    return attrs


def to_pyg(
    graph: ProgramGraph,
    vocabulary: _Vocab | None = None,
    labels: ProgramGraphFeatures | None = None,
    *,
    keep_text: bool | None = None,
    typed_pointers: str = "auto",
    numbers_and_types: bool | None = None,
    string_bytes: bool | None = None,
) -> Data:
    """Convert a ProgramGraph (and optionally one data-flow label record) into a PyG ``Data``.

    Args:
        graph: The program graph.
        vocabulary: Maps node text to id (``dict`` or :class:`~programl.data.vocabulary.Vocabulary`, only read);
            unknown texts get ``len(vocabulary)``. A table with ``add(text) -> id``
            (:class:`~programl.datasets.transforms.TextTable`) gets each new text added with the next id instead.
            Without one, ``x`` is all zeros (the OOV id of an empty vocabulary) and the texts are kept in
            ``data.text``.
        labels: One ``ProgramGraphFeatures`` of a data-flow ``ProgramGraphFeaturesList``
            (docs/spec/wire-format.md#label-records): adds ``root``, ``y``, ``step_count`` (and ``active_nodes``).
        keep_text: Store the node texts as ``data.text`` (as the graph has them); default: only when ``vocabulary``
            is None.
        typed_pointers: How the typed-pointer texts of a graph built by the original ProGraML (LLVM 10: ``i32*``,
            ``struct*``, ``[4 x i8*]``) meet ``vocabulary`` (:mod:`programl.io.typed_pointers`). ``"auto"``
            (default): in a graph with such texts, a text the vocabulary lacks is looked up as LLVM 22 prints it
            (``ptr``, ``[4 x ptr]``, ``ptr addrspace(1)``), so this project's models read the original's graphs;
            a vocabulary of typed-pointer texts (the released ``vocab_20.06.01``) keeps its ids, and a growing
            table keeps the texts. ``"map"``: every text in its LLVM 22 form. ``"keep"``: texts as they are (the
            original's pointer texts are then out of this project's vocabularies).
        numbers_and_types: Add ``x_num`` and ``x_type`` (the ``number_digits`` / ``type_shape`` node features of
            ``programl build --numbers-and-types``, ``docs/numbers_types.md``). None (default): when the graph has
            them (its module feature ``numbers_and_types``); True: always (zeros for a graph without them, so that
            a data set batches); False: never.
        string_bytes: Add ``x_str`` (the ``string_bytes`` node feature of ``programl build --string-bytes``), in the
            same three ways (the module feature ``string_bytes``).

    Returns:
        A ``Data`` with the attributes listed in the module docstring.

    Raises:
        GraphTransformError: An edge refers to a missing node, or the label record does not fit the graph.
        ValueError: ``typed_pointers`` is not ``auto``, ``map`` or ``keep``.
    """
    arrays = GraphArrays(graph)
    attrs = _base_attributes(arrays, graph, vocabulary, keep_text, typed_pointers, numbers_and_types, string_bytes)
    if labels is not None:
        attrs.update(_label_attributes(labels, arrays.num_nodes))
    return Data(**attrs)


def to_pyg_examples(
    graph: ProgramGraph,
    labels: ProgramGraphFeaturesList | Sequence[ProgramGraphFeatures],
    vocabulary: _Vocab | None = None,
    *,
    keep_text: bool | None = None,
    typed_pointers: str = "auto",
) -> Iterator[Data]:
    """Yield one ``Data`` per label record of ``labels`` (one training example each,
    docs/spec/models.md#data-flow-ggnn).

    The graph is read once; the node and edge tensors are shared (not copied) between the yielded examples, so treat
    them as read-only. Arguments and attributes as in :func:`to_pyg`.
    """
    records = labels.graph if isinstance(labels, ProgramGraphFeaturesList) else labels
    arrays = GraphArrays(graph)
    base = _base_attributes(arrays, graph, vocabulary, keep_text, typed_pointers)
    for record in records:
        attrs = dict(base)
        attrs.update(_label_attributes(record, arrays.num_nodes))
        yield Data(**attrs)


def to_hetero(graph: ProgramGraph, vocabulary: _Vocab | None = None, *, typed_pointers: str = "auto") -> HeteroData:
    """Convert a ProgramGraph into a PyG ``HeteroData`` with one node type per ``Node.Type``.

    Node types ``instruction``, ``variable``, ``constant`` (always present, possibly with 0 nodes) and ``type`` (only
    when the graph has TYPE nodes) each get ``x`` (vocabulary ids as in :func:`to_pyg`, (N_t,) long) and
    ``node_index`` (the node's index in the ProgramGraph, (N_t,) long), nodes in graph order. Every
    (source type, flow, target type) that occurs becomes a relation, e.g. ``("instruction", "control",
    "instruction")``, ``("variable", "data", "instruction")``, ``("instruction", "call", "instruction")``, with
    ``edge_index`` (2, E_r) in local indices, ``edge_pos`` (E_r,) long, ``edge_attr`` (E_r, 1) float (the position,
    ready for layers with ``edge_dim=1``) and ``edge_id`` (E_r,) the protobuf edge index; edges keep protobuf order
    within a relation and parallel edges are kept. Numeric graph-level features are stored as in :func:`to_pyg`;
    ``typed_pointers`` as there.

    Raises:
        GraphTransformError: An edge refers to a missing node, or a node/edge type is unknown.
    """
    arrays = GraphArrays(graph)
    if arrays.node_type.size and (arrays.node_type.min() < 0 or arrays.node_type.max() >= len(NODE_TYPE_NAMES)):
        raise GraphTransformError(f"unknown node type {int(arrays.node_type.max())}")
    if arrays.edge_flow.size and (arrays.edge_flow.min() < 0 or arrays.edge_flow.max() >= len(EDGE_FLOW_NAMES)):
        raise GraphTransformError(f"unknown edge flow {int(arrays.edge_flow.max())}")
    ids = arrays.vocab_ids(vocabulary, typed_pointers)
    local = np.zeros(arrays.num_nodes, dtype=np.int64)
    data = HeteroData()
    present = [0, 1, 2] + ([3] if (arrays.node_type == 3).any() else [])
    for t in present:
        members = np.flatnonzero(arrays.node_type == t)
        local[members] = np.arange(members.size)
        store = data[NODE_TYPE_NAMES[t]]
        store.x = torch.from_numpy(ids[members])
        store.node_index = torch.from_numpy(members.astype(np.int64))
        store.num_nodes = int(members.size)
    src_t = arrays.node_type[arrays.edge_src]
    dst_t = arrays.node_type[arrays.edge_dst]
    # One key per edge: (src type, flow, dst type) packed in an integer; a stable sort groups relations in edge order.
    key = (src_t * 4 + arrays.edge_flow) * 4 + dst_t
    order = np.argsort(key, kind="stable")
    keys, starts = np.unique(key[order], return_index=True)
    bounds = [*starts.tolist(), order.size]
    for i, k in enumerate(keys.tolist()):
        sel = order[bounds[i] : bounds[i + 1]]
        s, f, d = k // 16, (k // 4) % 4, k % 4
        store = data[NODE_TYPE_NAMES[s], EDGE_FLOW_NAMES[f], NODE_TYPE_NAMES[d]]
        store.edge_index = torch.from_numpy(np.stack([local[arrays.edge_src[sel]], local[arrays.edge_dst[sel]]]))
        pos = torch.from_numpy(arrays.edge_pos[sel])
        store.edge_pos = pos
        store.edge_attr = pos.to(torch.float32).unsqueeze(1)
        store.edge_id = torch.from_numpy(sel.astype(np.int64))
    for name, value in _graph_features(graph).items():
        if name in NODE_TYPE_NAMES or name in EDGE_FLOW_NAMES:  # HeteroData takes these for node / edge stores
            raise GraphTransformError(f"graph feature {name!r} has the name of a node or edge type of to_hetero")
        data[name] = value
    return data


def from_pyg(data: Data, vocabulary: Sequence[str] | None = None) -> ProgramGraph:
    """Rebuild the structure of a ProgramGraph from a ``Data`` made by :func:`to_pyg` (node and edge order kept).

    Node texts come from ``data.text`` when present, else from ``vocabulary`` (a sequence id -> text; the OOV id
    gives an empty text), else they stay empty. Functions, modules, blocks and features are not restored.

    Raises:
        GraphTransformError: ``data`` lacks ``node_type``, ``edge_index``, ``edge_flow`` or ``edge_pos`` (or ``x``
            for ``vocabulary``), or they do not fit together: an ``edge_index`` that is not (2, E), per-edge or
            per-node attributes of another length, an edge to a missing node, an id in ``x`` below 0.
    """
    for name in ("node_type", "edge_index", "edge_flow", "edge_pos"):
        if getattr(data, name, None) is None:
            raise GraphTransformError(f"Data has no {name!r}: not made by to_pyg()")
    node_type = data.node_type.cpu().tolist()
    num_nodes = len(node_type)
    edge_index = data.edge_index
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise GraphTransformError(f"edge_index has shape {tuple(edge_index.shape)}, not (2, E)")
    num_edges = int(edge_index.shape[1])
    for name in ("edge_flow", "edge_pos"):
        if getattr(data, name).numel() != num_edges:
            raise GraphTransformError(f"{name} has {getattr(data, name).numel()} entries for {num_edges} edges")
    if num_edges and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise GraphTransformError(f"edge_index refers to node {int(edge_index.max())} of a graph of {num_nodes} nodes")
    text = getattr(data, "text", None)
    if text is None and vocabulary is not None:
        if getattr(data, "x", None) is None:
            raise GraphTransformError("Data has no 'x' (vocabulary ids) to look node texts up in the vocabulary")
        ids = data.x.cpu().reshape(-1).tolist()
        if ids and min(ids) < 0:
            raise GraphTransformError(f"x holds the id {min(ids)}, not a vocabulary id")
        text = [vocabulary[i] if i < len(vocabulary) else "" for i in ids]
    if text is not None and len(text) != num_nodes:
        raise GraphTransformError(f"{len(text)} node texts for {num_nodes} nodes")
    graph = ProgramGraph()
    for i, t in enumerate(node_type):
        node = graph.node.add(type=t)
        if text is not None and text[i]:
            node.text = text[i]
    src, dst = data.edge_index.cpu().tolist()
    for s, d, f, p in zip(src, dst, data.edge_flow.cpu().tolist(), data.edge_pos.cpu().tolist(), strict=True):
        graph.edge.add(flow=f, position=p, source=s, target=d)
    return graph
