"""ProgramGraph -> Graphviz DOT text, and rendering it to SVG/PNG (docs/spec/python-api.md#transforms ``to_dot``).

:func:`to_dot` writes what ProGraML 0.3.2's ``graph2dot`` writes (boost ``write_graphviz`` of a subgraph tree):

* ``digraph main`` with graph defaults ``margin=0, nodesep=0.4, ranksep=0.4, fontname=Inconsolata, fontsize=20``,
  node defaults ``fontname=Inconsolata, fontsize=20, penwidth=2, width=1, margin=0`` and edge defaults
  ``fontname=Inconsolata, fontsize=20, penwidth=3, arrowsize=.8``;
* a ``subgraph external`` holding node 0 (the external node) and every CONSTANT node, then one
  ``subgraph cluster<name>`` per function (``label=<name>, margin=10, style=dotted``; the name truncated to 32
  characters) holding that function's other nodes;
* node ``label`` = ``text`` truncated to 32 characters (longer texts keep 29 and get ``...``). INSTRUCTION: box,
  filled ``#3c78d8``, font ``#ffffff``; VARIABLE: ellipse, filled ``#f4cccc``, colour and font ``#990000``;
  CONSTANT: diamond, filled ``#e99c9c``, colour and font ``#990000``;
* edges CONTROL ``color="#345393", weight=10``, DATA ``color="#990000", weight=0``, CALL ``color="#65ae4d",
  weight=1``; a non-zero position becomes ``headlabel`` (DATA) or ``taillabel`` (others). An edge whose two ends lie
  in the same subgraph is written inside it, any other at the top level; within each, edges are ordered by source
  node (stable in edge order), as boost writes them. No features are exported.

Differences from ``graph2dot`` (all in how the text is spelled, none in the drawing's structure): attributes come in
a fixed order (the original's order is that of a hash map and varies from run to run); ``labelfontcolor`` of a
position label is the edge's colour (the original means to do this but writes ``labelfontcolor=""``); a backslash in
a label is escaped (``\\\\``) and DOT keywords are quoted, so any text gives valid DOT; labels are truncated by
characters, not UTF-8 bytes. Like the original, the text has no trailing newline.

:func:`render_dot` runs the Graphviz ``dot`` binary (``apt-get install graphviz``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from typing import Any

from programl.exceptions import GraphTransformError
from programl.io.one_or_many import convert_one_or_many
from programl.proto import Edge, Node, ProgramGraph
from programl.util.fs import atomic_write_bytes

__all__ = ["render_dot", "to_dot"]

#: Labels longer than this are truncated with an ellipsis (as in graph2dot).
MAX_LABEL_LENGTH = 32

_GRAPH_DEFAULTS = (
    ("margin", "0"),
    ("nodesep", "0.4"),
    ("ranksep", "0.4"),
    ("fontname", "Inconsolata"),
    ("fontsize", "20"),
)
_NODE_DEFAULTS = (("fontname", "Inconsolata"), ("fontsize", "20"), ("penwidth", "2"), ("width", "1"), ("margin", "0"))
_EDGE_DEFAULTS = (("fontname", "Inconsolata"), ("fontsize", "20"), ("penwidth", "3"), ("arrowsize", ".8"))

_NODE_STYLE = {
    Node.INSTRUCTION: (("shape", "box"), ("style", "filled"), ("fillcolor", "#3c78d8"), ("fontcolor", "#ffffff")),
    Node.VARIABLE: (
        ("shape", "ellipse"),
        ("style", "filled"),
        ("fillcolor", "#f4cccc"),
        ("color", "#990000"),
        ("fontcolor", "#990000"),
    ),
    Node.CONSTANT: (
        ("shape", "diamond"),
        ("style", "filled"),
        ("fillcolor", "#e99c9c"),
        ("color", "#990000"),
        ("fontcolor", "#990000"),
    ),
}
_EDGE_STYLE = {Edge.CONTROL: ("#345393", "10"), Edge.DATA: ("#990000", "0"), Edge.CALL: ("#65ae4d", "1")}

_ID = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")
_NUMERAL = re.compile(r"-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)\Z")
_KEYWORDS = frozenset({"node", "edge", "graph", "digraph", "subgraph", "strict"})

#: Output formats :func:`render_dot` accepts.
RENDER_FORMATS = ("svg", "png", "pdf")


def _truncate(text: str) -> str:
    if len(text) > MAX_LABEL_LENGTH:
        return text[: MAX_LABEL_LENGTH - 3] + "..."
    return text


def _quote(value: str) -> str:
    """A DOT identifier: bare if it is a plain name or numeral (as boost writes it), else a quoted string."""
    if (_ID.match(value) and value.lower() not in _KEYWORDS) or _NUMERAL.match(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _attributes(pairs: Iterable[tuple[str, str]]) -> str:
    return ", ".join(f"{name}={_quote(value)}" for name, value in pairs)


def _block(kind: str, pairs: Iterable[tuple[str, str]]) -> str:
    return f"{kind} [\n{_attributes(pairs)}];\n"


def _edge_line(edge: Any) -> str:
    pairs: list[tuple[str, str]] = []
    style = _EDGE_STYLE.get(edge.flow)
    if style is not None:
        pairs += [("color", style[0]), ("weight", style[1])]
    if edge.position:
        pairs.append(("headlabel" if edge.flow == Edge.DATA else "taillabel", str(edge.position)))
        if style is not None:
            pairs.append(("labelfontcolor", style[0]))
    suffix = f"[{_attributes(pairs)}]" if pairs else ""
    return f"{edge.source} -> {edge.target}{suffix};\n"


def graph_to_dot(graph: ProgramGraph) -> str:
    """One graph as DOT text (the worker behind :func:`to_dot`)."""
    if not isinstance(graph, ProgramGraph):
        raise GraphTransformError(f"expected a ProgramGraph, got {type(graph).__name__}")
    function_count = len(graph.function)
    node_count = len(graph.node)

    # Subgraph 0 is "external"; subgraph f + 1 is function f's cluster.
    membership = []
    members: list[list[int]] = [[] for _ in range(function_count + 1)]
    for index, node in enumerate(graph.node):
        if index == 0 or node.type == Node.CONSTANT or not function_count:
            subgraph = 0  # a graph without Function messages (from_pyg's, a hand-built one) has no clusters
        else:
            if not 0 <= node.function < function_count:
                raise GraphTransformError(
                    f"node {index} belongs to function {node.function}, but the graph has {function_count} functions"
                )
            subgraph = node.function + 1
        membership.append(subgraph)
        members[subgraph].append(index)

    inner: list[list[Any]] = [[] for _ in range(function_count + 1)]
    outer: list[Any] = []
    for position, edge in enumerate(graph.edge):
        if not (0 <= edge.source < node_count and 0 <= edge.target < node_count):
            raise GraphTransformError(
                f"edge {position} ({edge.source} -> {edge.target}) refers to a node that does not exist"
            )
        subgraph = membership[edge.source]
        (inner[subgraph] if subgraph == membership[edge.target] else outer).append(edge)

    parts = [
        "digraph main {\n",
        _block("graph", _GRAPH_DEFAULTS),
        _block("node", _NODE_DEFAULTS),
        _block("edge", _EDGE_DEFAULTS),
    ]
    for subgraph in range(function_count + 1):
        if subgraph == 0:
            parts.append("subgraph external {\n")
        else:
            name = _truncate(graph.function[subgraph - 1].name)
            parts.append(f"subgraph {_quote('cluster' + name)} {{\n")
            parts.append(_block("graph", (("label", name), ("margin", "10"), ("style", "dotted"))))
        for index in members[subgraph]:
            node = graph.node[index]
            pairs = (("label", _truncate(node.text)), *_NODE_STYLE.get(node.type, ()))
            parts.append(f"{index}[{_attributes(pairs)}];\n")
        parts.extend(_edge_line(edge) for edge in sorted(inner[subgraph], key=lambda e: e.source))
        parts.append("}\n")
    parts.extend(_edge_line(edge) for edge in sorted(outer, key=lambda e: e.source))
    parts.append("}\n")
    return "".join(parts)


def to_dot(
    graphs: ProgramGraph | Iterable[ProgramGraph],
    timeout: float | None = 300,
    executor: Any = None,
    chunksize: int | None = None,
) -> str | Iterator[str]:
    """Convert one or more program graphs to Graphviz DOT text.

    Args:
        graphs: A ``ProgramGraph``, or an iterable of them.
        timeout: Seconds to wait for each graph when several are given (see :func:`programl.util.executor.execute`).
        executor: Anything with ``submit(fn, x)`` to run conversions on, when several graphs are given.
        chunksize: The most graphs in flight at once, when several are given.

    Returns:
        One DOT string for one graph; otherwise a lazy iterator of strings, in input order.

    Raises:
        GraphTransformError: A node names a function the graph does not have, or an edge a node it does not have.
    """
    return convert_one_or_many(graph_to_dot, graphs, timeout, executor, chunksize)


def _dot_binary() -> str:
    path = os.environ.get("PROGRAML_DOT") or shutil.which("dot")
    if not path:
        raise GraphTransformError(
            "the Graphviz `dot` program was not found on PATH; install Graphviz (e.g. `apt-get install graphviz`)"
        )
    return path


def render_dot(
    graph_or_dot: ProgramGraph | str,
    path: str | os.PathLike | None = None,
    format: str = "svg",  # noqa: A002 - the name Graphviz uses
    timeout: float | None = 300,
) -> bytes:
    """Render a program graph (or DOT text) with Graphviz ``dot``.

    Args:
        graph_or_dot: A ``ProgramGraph`` (converted with :func:`to_dot`) or DOT text.
        path: If given, the rendering is also written there (atomically).
        format: ``"svg"`` (default), ``"png"`` or ``"pdf"``.
        timeout: Seconds to let ``dot`` run.

    Returns:
        The rendered image.

    Raises:
        GraphTransformError: ``dot`` is not installed, fails, or the format is not supported.
        TimeoutError: ``dot`` ran longer than ``timeout``.
    """
    if format not in RENDER_FORMATS:
        raise GraphTransformError(f"unsupported format {format!r}; expected one of {', '.join(RENDER_FORMATS)}")
    if isinstance(graph_or_dot, ProgramGraph):
        text = graph_to_dot(graph_or_dot)
    elif isinstance(graph_or_dot, str):
        text = graph_or_dot
    else:
        raise GraphTransformError(f"expected a ProgramGraph or DOT text, got {type(graph_or_dot).__name__}")
    try:
        process = subprocess.run(
            [_dot_binary(), f"-T{format}"],
            input=text.encode("utf-8", "surrogateescape"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        process_timeout = f"{timeout:g} s" if timeout is not None else "its timeout"
        raise TimeoutError(f"dot ran longer than {process_timeout}") from error
    if process.returncode:
        message = process.stderr.decode("utf-8", "replace").strip()
        raise GraphTransformError(f"dot failed (exit code {process.returncode}): {message}")
    if path is not None:
        atomic_write_bytes(path, process.stdout)
    return process.stdout
