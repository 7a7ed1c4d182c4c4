"""ProgramGraph <-> ``networkx.MultiDiGraph``, losslessly (docs/spec/python-api.md#transforms ``to_networkx``,
docs/spec/policy.md#lossless-conversions, docs/spec/design.md#data-model).

The graph has exactly the attributes of ProGraML's and CompilerGym's ``Programl`` observation
(``node_link_graph(<graph2json output>, multigraph=True, directed=True)``):

* nodes ``0..n-1`` (the node index) with ``type``, ``text``, ``function``, ``block`` and, where the node has a
  ``Features`` message, ``features`` (``{key: [values]}``);
* edges ``(source, target, key)`` whose attributes are exactly ``{"flow": f, "position": p}``, plus ``features``
  where the edge has a ``Features`` message (so ``G.edges[u, v, 0] == {"flow": 1, "position": 0}`` holds as it does
  on CompilerGym's graphs);
* graph attributes ``function`` (list of ``{name, module[, features]}``), ``module`` (list of ``{name[, features]}``)
  and ``features`` when the graph has them.

Differences from ProGraML 0.3.2 / CompilerGym, both needed for a lossless round trip:

* Parallel edges (two DATA edges from one variable into ``select i1 true, i32 %k, i32 %k``, one constant used twice
  by an instruction) are kept with distinct keys 0, 1, ... (networkx's own numbering, in edge order). The original
  gives every edge key 0, so networkx collapses them (the first difference of docs/spec/python-api.md#transforms).
  A graph without parallel edges has key 0 on every edge, as CompilerGym's.
* One more graph attribute, ``edge_order``: the ``(source, target, key)`` of every edge in ``ProgramGraph.edge``
  order. networkx iterates edges grouped by source node and cannot hold the global edge order by itself (which the
  analyses and the wire format depend on); :func:`from_networkx` emits edges in this order. Edges it does not name
  (edges a user added) follow in networkx's order; triples of edges that are gone are skipped. Graphs without it
  (CompilerGym's, 0.3.2's) are read in networkx's edge order. ``node_link_data`` carries it along under ``graph``,
  and :func:`programl.from_json` honours it there too.

Feature values use the encoding of :mod:`programl.io.json_convert` (bytes as text; non-UTF-8 bytes through the
``surrogateescape`` handler; empty lists of a kind as ``{"int64_list": []}`` etc.).

**The external node has no ``features`` attribute**, because its protobuf has no ``Features`` message (absent is not
empty, and a lossless conversion must keep that). ``torch_geometric.utils.from_networkx`` requires every node to have
the same attribute names (ProGraML issue #196) and raises ``ValueError`` on such a graph; call
``to_networkx(graph, features=False)`` to drop every ``features`` attribute (nodes, edges, graph) and get uniform
attributes. For learning, :func:`programl.to_pyg` is the direct route.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

import networkx as nx

from programl.exceptions import GraphTransformError
from programl.io.json_convert import (
    EDGE_ORDER,
    ORDER,
    _graph_attributes,
    _link_dicts,
    _node_dicts,
    graph_from_node_link,
)
from programl.io.one_or_many import convert_one_or_many
from programl.proto import ProgramGraph

__all__ = ["from_networkx", "graph_from_networkx", "graph_to_networkx", "to_networkx"]


def graph_to_networkx(graph: ProgramGraph, features: bool = True) -> nx.MultiDiGraph:
    """One graph as a ``MultiDiGraph`` (the worker behind :func:`to_networkx`)."""
    if not isinstance(graph, ProgramGraph):
        raise GraphTransformError(f"expected a ProgramGraph, got {type(graph).__name__}")
    g = nx.MultiDiGraph()
    attributes = _graph_attributes(graph)
    if not features:
        attributes.pop("features", None)
        for entry in attributes["function"] + attributes["module"]:
            entry.pop("features", None)
    g.graph.update(attributes)
    nodes = []
    for entry in _node_dicts(graph, features=features):
        node_id = entry.pop("id")
        nodes.append((node_id, entry))
    g.add_nodes_from(nodes)
    edges = []
    node_ids = list(range(len(graph.node)))  # one int object per node, shared by the edge_order triples
    edge_order = []
    for entry in _link_dicts(graph, features=features):
        source = entry.pop("source")
        target = entry.pop("target")
        key = entry.pop("key")
        del entry[ORDER]  # the order lives in the graph attribute, not on the edge
        edges.append((source, target, key, entry))
        edge_order.append((node_ids[source], node_ids[target], key))
    g.graph[EDGE_ORDER] = edge_order
    g.add_edges_from(edges)  # _link_dicts has rejected edges to nodes that do not exist
    return g


def to_networkx(
    graphs: ProgramGraph | Iterable[ProgramGraph],
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
    *,
    features: bool = True,
) -> nx.MultiDiGraph | Iterator[nx.MultiDiGraph]:
    """Convert one or more program graphs to ``networkx.MultiDiGraph``.

    Args:
        graphs: A ``ProgramGraph``, or an iterable of them.
        timeout: Seconds to wait for each graph when several are given (see :func:`programl.util.executor.execute`).
        executor: Anything with ``submit(fn, x)`` to run conversions on, when several graphs are given.
        chunksize: The most graphs in flight at once, when several are given.
        features: ``False`` leaves out every ``features`` attribute, so that all nodes (and all edges) have the same
            attribute names, as ``torch_geometric.utils.from_networkx`` requires.

    Returns:
        One graph for one input; otherwise a lazy iterator of graphs, in input order.

    Raises:
        GraphTransformError: An input is not a ``ProgramGraph`` or has edges to missing nodes.
    """
    fn = functools.partial(graph_to_networkx, features=features)
    return convert_one_or_many(fn, graphs, timeout, executor, chunksize)


def graph_from_networkx(g: nx.Graph) -> ProgramGraph:
    """The ``ProgramGraph`` for one networkx graph (the worker behind :func:`from_networkx`)."""
    if not isinstance(g, nx.Graph):
        raise GraphTransformError(f"expected a networkx graph, got {type(g).__name__}")
    if not g.is_directed():
        raise GraphTransformError("program graphs are directed; got an undirected networkx graph")
    nodes = [{**attributes, "id": node} for node, attributes in g.nodes(data=True)]
    if g.is_multigraph():
        links = [
            {**attributes, "source": u, "target": v, "key": key}
            for u, v, key, attributes in g.edges(keys=True, data=True)
        ]
    else:
        links = [{**attributes, "source": u, "target": v} for u, v, attributes in g.edges(data=True)]
    return graph_from_node_link({"directed": True, "graph": g.graph, "nodes": nodes, "links": links})


def from_networkx(
    graphs: nx.Graph | Iterable[nx.Graph],
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
) -> ProgramGraph | Iterator[ProgramGraph]:
    """Convert one or more networkx graphs back to program graphs.

    Accepts the graphs of :func:`to_networkx`, ProGraML 0.3.2's ``to_networkx`` and CompilerGym's ``Programl``
    observation (whose parallel edges were already collapsed by networkx; what is there is kept). Edges come in the
    order of the graph attribute ``edge_order`` where there is one (see the module docstring), else in networkx's
    order. Node ids
    ``0..n-1`` are used as node indices; other ids are numbered in networkx's node order. Missing attributes take
    the protobuf defaults (0, ``""``); ``DiGraph`` works as well as ``MultiDiGraph``.

    Args:
        graphs: A networkx graph, or an iterable of them.
        timeout: Seconds to wait for each input when several are given.
        executor: Anything with ``submit(fn, x)``, used when several inputs are given.
        chunksize: The most inputs in flight at once, when several are given.

    Returns:
        One ``ProgramGraph`` for one input; otherwise a lazy iterator of them, in input order.

    Raises:
        GraphTransformError: The graph is undirected or its attributes do not describe a program graph.
    """
    return convert_one_or_many(
        graph_from_networkx, graphs, timeout, executor, chunksize, one=nx.Graph, what="a networkx graph"
    )
