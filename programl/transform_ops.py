"""programl 0.3.2's ``programl.transform_ops`` module, for code written against it
(docs/spec/python-api.md#transforms).

``to_json``, ``to_networkx`` and ``to_dot`` are those of :mod:`programl.io` (lossless: parallel edges keep distinct
keys, docs/spec/policy.md#lossless-conversions). :func:`to_dgl` builds a DGL graph when ``dgl`` is installed and raises
an ``ImportError`` that says how to get it when not (0.3.2 imported dgl when ``programl`` was imported, and failed with
dgl >= 1.0).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from programl.exceptions import GraphTransformError
from programl.io.dot import to_dot
from programl.io.json_convert import to_json
from programl.io.networkx_convert import to_networkx
from programl.proto import ProgramGraph
from programl.util.executor import execute

__all__ = [
    "GRAPH2DOT",
    "GRAPH2JSON",
    "GraphTransformError",
    "JsonDict",
    "ProgramGraph",
    "graph_to_dgl",
    "to_dgl",
    "to_dot",
    "to_json",
    "to_networkx",
]

#: 0.3.2: the paths of its ``graph2dot`` / ``graph2json`` binaries; here the functions that do their work.
GRAPH2DOT = "programl.io.dot.graph_to_dot"
GRAPH2JSON = "programl.io.json_convert.graph_to_node_link"

JsonDict = dict[str, Any]

DGL_HINT = (
    "to_dgl needs the dgl package, which is not installed: pip install dgl (wheels for your torch and CUDA: "
    "https://www.dgl.ai/pages/start.html); or use programl.to_pyg for torch-geometric"
)


def _dgl():
    try:
        import dgl
    except ImportError as error:
        raise ImportError(DGL_HINT, name="dgl") from error
    return dgl


def graph_to_dgl(graph: ProgramGraph) -> Any:
    """One ``ProgramGraph`` as a ``dgl.DGLGraph``: the graph's nodes and edges in order (parallel edges kept), with
    ``ndata["type"]``, ``edata["flow"]`` and ``edata["position"]`` (int64 tensors).

    Raises:
        ImportError: dgl is not installed (the message says how to install it).
        GraphTransformError: An edge names a node the graph does not have.
    """
    dgl = _dgl()
    import torch

    if not isinstance(graph, ProgramGraph):
        raise GraphTransformError(f"to_dgl expects a ProgramGraph, got {type(graph).__name__}")
    count = len(graph.node)
    source = [edge.source for edge in graph.edge]
    target = [edge.target for edge in graph.edge]
    bad = next((i for i, (s, t) in enumerate(zip(source, target)) if not (0 <= s < count and 0 <= t < count)), None)
    if bad is not None:
        raise GraphTransformError(f"edge {bad} joins {source[bad]} -> {target[bad]}, but the graph has {count} nodes")
    result = dgl.graph(
        (torch.tensor(source, dtype=torch.int64), torch.tensor(target, dtype=torch.int64)), num_nodes=count
    )
    result.ndata["type"] = torch.tensor([node.type for node in graph.node], dtype=torch.int64)
    result.edata["flow"] = torch.tensor([edge.flow for edge in graph.edge], dtype=torch.int64)
    result.edata["position"] = torch.tensor([edge.position for edge in graph.edge], dtype=torch.int64)
    return result


def to_dgl(
    graphs: ProgramGraph | Iterable[ProgramGraph],
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
) -> Any | Iterator[Any]:
    """Convert one or more program graphs to `DGL <https://www.dgl.ai>`_ graphs (see :func:`graph_to_dgl`).

    Args:
        graphs: A ``ProgramGraph``, or an iterable of them.
        timeout, executor, chunksize: As for :func:`programl.to_networkx`, when several graphs are given.

    Returns:
        A ``dgl.DGLGraph`` for one graph, else a lazy iterator of them in input order.

    Raises:
        ImportError: dgl is not installed; raised by the call, before any graph is converted.
        GraphTransformError: An input is not a valid graph.
    """
    _dgl()
    if isinstance(graphs, ProgramGraph):
        return graph_to_dgl(graphs)
    return execute(graph_to_dgl, graphs, executor=executor, chunksize=chunksize, timeout=timeout)
