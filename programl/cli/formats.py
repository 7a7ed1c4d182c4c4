"""Output formats of ``programl build`` and ``programl convert``: file suffixes and serialisation of one graph.

``pb`` (binary ``ProgramGraph``, deterministic bytes), ``pbtxt`` (protobuf text), ``json`` (node-link with the key
``links``, docs/spec/python-api.md#transforms): the bytes :func:`programl.io.files.write_graph` writes for these
suffixes; ``dot`` (Graphviz text), ``svg`` and ``png`` (rendered with Graphviz's ``dot``).
"""

from __future__ import annotations

from programl.proto import ProgramGraph

__all__ = ["FORMATS", "SUFFIXES", "serialize_graph"]

SUFFIXES = {
    "pb": ".ProgramGraph.pb",
    "pbtxt": ".ProgramGraph.pbtxt",
    "json": ".ProgramGraph.json",
    "dot": ".dot",
    "svg": ".svg",
    "png": ".png",
}
FORMATS = tuple(SUFFIXES)


def serialize_graph(graph: ProgramGraph, fmt: str, timeout: float | None = 300) -> bytes:
    """The bytes of ``graph`` in format ``fmt`` (one of :data:`FORMATS`); ``timeout``: seconds Graphviz may take
    to render svg or png (the caller's ``--timeout``)."""
    if fmt in ("pb", "pbtxt", "json"):  # the bytes of a graph file, as programl.io.files writes it
        from programl.io.files import graph_file_bytes

        return graph_file_bytes(graph, SUFFIXES[fmt])
    if fmt == "dot":
        from programl.io.dot import to_dot

        return to_dot(graph).encode("utf-8")
    if fmt in ("svg", "png"):
        from programl.io.dot import render_dot

        return render_dot(graph, format=fmt, timeout=timeout)
    raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
