"""Look into a program graph in a browser (``programl view``): one self-contained HTML page per graph.

The page draws the graph with ProGraML's colours and shapes (instructions blue boxes, variables pink ellipses,
constants red diamonds; control, data and call edges blue, red and green, as :func:`programl.to_dot` draws them),
one frame per function with its basic blocks laid out along the control flow (:mod:`programl.view.layout`). Functions
fold and unfold (graphs of more than :data:`EXPAND_LIMIT` nodes open folded); the user zooms,
searches nodes by text, filters edges by flow and node types, and reads each node's text, full text and source line
(where the IR has debug information, from the input itself, the files below its directory and those below a
``source_root``, as the page is made to be shared: :mod:`programl.view.debuginfo`). Given an analysis, the user
picks a root and sees the exact labels (docs/spec/analyses.md) beside a pretrained model's predictions, its mistakes
highlighted.

Nothing is fetched when a page is opened: Cytoscape.js (MIT, ``programl/view/vendor``) is inlined.

The page of a C function, with the labels of reachability and the bundled reachability model's predictions (the
example needs clang-22 and the ``ml`` extra; ``needs`` skips it in the tests where they are not installed):

>>> import programl
>>> from programl.view import analysis_data, to_html
>>> needs("clang-22", "torch_geometric")
>>> graph = programl.from_cpp("int f(int x) { return x > 0 ? x : -x; }", language="c")
>>> page = to_html(graph, analysis="reachability", model="reachability")
>>> page.startswith("<!DOCTYPE html>"), "<script src=" in page              # one file, nothing to fetch
(True, False)
>>> labels = analysis_data(graph, "reachability", model="reachability")     # what the page shows
>>> labels["model"], len(labels["roots"]), labels["predicted"] == labels["exact"]
({'name': 'reachability', 'steps': 30}, 12, True)
"""

from __future__ import annotations

from typing import Any

from programl.util.lazy import lazy_getattr

__all__ = [
    "DEFAULT_MAX_ROOTS",
    "EXPAND_LIMIT",
    "ROOT_BUDGET",
    "GraphLayout",
    "SourceLocations",
    "analysis_data",
    "default_max_roots",
    "graph_data",
    "layout_graph",
    "read_input",
    "source_locations",
    "to_html",
    "write_html",
]

#: At most this many roots are labelled unless told otherwise (a seeded sample of the eligible ones beyond it) ...
DEFAULT_MAX_ROOTS = 100
#: ... and fewer on large graphs: at most this many nodes in all the roots' labels (roots x nodes; at least 10 roots),
#: which bounds both the model's work and the page's size (10 roots of a 10,000-node graph).
ROOT_BUDGET = 100_000
#: Graphs with at most this many nodes open with every function expanded; larger ones open folded.
EXPAND_LIMIT = 1500

_EXPORTS = {
    "GraphLayout": "programl.view.layout",
    "layout_graph": "programl.view.layout",
    "SourceLocations": "programl.view.debuginfo",
    "source_locations": "programl.view.debuginfo",
    "read_input": "programl.view.inputs",
    "analysis_data": "programl.view.page",
    "graph_data": "programl.view.page",
    "to_html": "programl.view.page",
}
_exported = lazy_getattr(globals(), _EXPORTS)


def __getattr__(name: str) -> Any:
    return _exported(name)


def __dir__() -> list[str]:
    return __all__


def default_max_roots(num_nodes: int) -> int:
    """How many roots a page labels by default on a graph of ``num_nodes`` nodes: :data:`DEFAULT_MAX_ROOTS`, or
    fewer so that roots x nodes stays within :data:`ROOT_BUDGET` (but at least 10)."""
    return min(DEFAULT_MAX_ROOTS, max(10, ROOT_BUDGET // max(1, num_nodes)))


def write_html(path: str, graph, **options: Any) -> int:
    """Write :func:`~programl.view.page.to_html` of ``graph`` to ``path`` (atomically); returns its size in bytes.

    Args:
        path: The HTML file to write.
        graph: A ``ProgramGraph``.
        options: Those of :func:`~programl.view.page.to_html` (``analysis``, ``model``, ``roots`` ...).
    """
    from programl.util.fs import atomic_write_bytes
    from programl.view.page import to_html

    data = to_html(graph, **options).encode("utf-8")
    atomic_write_bytes(path, data)
    return len(data)
