"""One self-contained HTML page per graph (``programl view``): the graph, its layout, its source lines and, for a
data-flow analysis, the exact labels of each root beside a pretrained model's predictions.

The page inlines everything it needs: Cytoscape.js (``programl/view/vendor``, MIT), the page's own script and style
(``programl/view/assets``) and the graph as JSON. It opens from a file, with no network.

Labels (docs/spec/analyses.md) are computed here, for a set of roots (every eligible root when there are at most
``max_roots``, else a seeded sample of ``max_roots``, or the roots given; ``max_roots`` is 100 by default, fewer on
graphs of more than 1,000 nodes: :func:`programl.view.default_max_roots`): the exact ones by
:func:`programl.dataflow.analyze.analyze_arrays`, the model's through
:meth:`~programl.pretrained.hub.PretrainedModel.predict` (the function behind ``programl predict dataflow``, with
``compare=True``), a few roots at a time. Per root the page gets two bit sets (exact, predicted) and the model's
probability of each node being true, rounded to 1/255.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np

from programl.proto import Edge, Node, ProgramGraph
from programl.view import EXPAND_LIMIT, default_max_roots
from programl.view.debuginfo import SourceLocations
from programl.view.layout import label_of, layout_graph

__all__ = ["CYTOSCAPE_VERSION", "analysis_data", "graph_data", "to_html"]

#: The vendored Cytoscape.js (``programl/view/vendor/README.md``).
CYTOSCAPE_VERSION = "3.35.0"
#: Nodes per batch of the model's forward pass (roots are predicted a few at a time).
BATCH_NODES = 200_000
#: Versions of the data format the page's script reads.
FORMAT = 1


def _full_text(node) -> str:
    feature = node.features.feature.get("full_text") if node.HasField("features") else None
    if feature is None or not feature.bytes_list.value:
        return ""
    return feature.bytes_list.value[0].decode("utf-8", "replace")


def graph_data(
    graph: ProgramGraph,
    *,
    title: str | None = None,
    locations: SourceLocations | None = None,
    expand: str | None = None,
) -> dict[str, Any]:
    """What the page draws of ``graph``: its nodes (type, text, full text, function, block, position), edges,
    groups (functions and the module group, with their expanded sizes), block boxes, counts and source lines.

    Args:
        graph: A ``ProgramGraph``.
        title: What the page is called (default: the module's name).
        locations: Source locations of its instructions (:func:`programl.view.debuginfo.source_locations`).
        expand: ``"all"`` (every function expanded when the page opens), ``"none"``, or None: all when the graph
            has at most :data:`EXPAND_LIMIT` nodes, else none.

    Raises:
        ValueError: ``expand`` is something else.
        GraphTransformError: An edge points at a node that does not exist.
    """
    from programl.exceptions import GraphTransformError

    if expand not in (None, "all", "none"):
        raise ValueError(f"expand must be 'all', 'none' or None, not {expand!r}")
    n = len(graph.node)
    for i, edge in enumerate(graph.edge):
        if not (0 <= edge.source < n and 0 <= edge.target < n):
            raise GraphTransformError(f"edge {i} points at a node that does not exist (the graph has {n} nodes)")
    layout = layout_graph(graph)
    locations = locations or SourceLocations()
    module = graph.module[0].name if len(graph.module) else ""
    types = [int(node.type) for node in graph.node]
    flows = [int(edge.flow) for edge in graph.edge]
    collapse = expand == "none" or (expand is None and n > EXPAND_LIMIT)
    return {
        "format": FORMAT,
        "title": title or module or "program graph",
        "module": module,
        "counts": {
            "nodes": n,
            "edges": len(graph.edge),
            "functions": len(graph.function),
            "instructions": types.count(Node.INSTRUCTION),
            "variables": types.count(Node.VARIABLE),
            "constants": types.count(Node.CONSTANT),
            "control": flows.count(Edge.CONTROL),
            "data": flows.count(Edge.DATA),
            "call": flows.count(Edge.CALL),
        },
        "groups": [
            {"name": g.name, "kind": g.kind, "w": g.width, "h": g.height, "size": len(g.nodes)} for g in layout.groups
        ],
        "blocks": [list(block) for block in layout.blocks],
        "collapsed": [k for k, g in enumerate(layout.groups) if g.nodes] if collapse else [],
        "nodes": {
            "type": types,
            "text": [node.text for node in graph.node],
            "label": [label_of(node.text) for node in graph.node],
            "full": [_full_text(node) for node in graph.node],
            "function": [int(node.function) for node in graph.node],
            "block": [int(node.block) for node in graph.node],
            "group": layout.group,
            "box": layout.block,
            "x": layout.x,
            "y": layout.y,
            "w": layout.width,
        },
        "edges": {
            "source": [int(edge.source) for edge in graph.edge],
            "target": [int(edge.target) for edge in graph.edge],
            "flow": flows,
            "position": [int(edge.position) for edge in graph.edge],
        },
        "functions": [f.name for f in graph.function],
        "files": locations.files,
        "lines": [{str(k): v for k, v in lines.items()} for lines in locations.lines],
        "locations": {str(i): list(loc) for i, loc in locations.nodes.items()},
    }


def _bits(rows: np.ndarray) -> list[str]:
    return [base64.b64encode(np.packbits(row.astype(bool), bitorder="little").tobytes()).decode() for row in rows]


def _bytes(rows: np.ndarray) -> list[str]:
    quantized = np.clip(np.rint(rows * 255), 0, 255).astype(np.uint8)
    return [base64.b64encode(row.tobytes()).decode() for row in quantized]


def _choose_roots(graph: ProgramGraph, analysis: str, roots: Sequence[int] | None, max_roots: int, seed: int):
    """The roots to label: ``roots`` (checked by the analysis), else every eligible root when there are at most
    ``max_roots``, else the first ``max_roots`` of the seeded permutation ``programl predict --roots`` takes; and
    how many are eligible."""
    from programl.dataflow.analyze import eligible_roots
    from programl.exceptions import AnalysisError

    eligible = np.asarray(eligible_roots(graph, analysis), dtype=np.int64)
    if roots is not None:
        return np.asarray(list(roots), dtype=np.int64).reshape(-1), len(eligible)
    if not len(eligible):
        raise AnalysisError(f"No eligible root nodes in graph with {len(graph.node)} nodes")
    if len(eligible) <= max_roots:
        return eligible, len(eligible)
    chosen = np.random.default_rng(seed).permutation(eligible)[:max_roots]
    return np.sort(chosen), len(eligible)


def analysis_data(
    graph: ProgramGraph,
    analysis: str,
    *,
    model: Any = None,
    roots: Sequence[int] | None = None,
    max_roots: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The labels the page shows for ``analysis``: per root, the exact labels and (with ``model``) the model's.

    Args:
        graph: A ``ProgramGraph``.
        analysis: One of :data:`programl.dataflow.ANALYSES`.
        model: A data-flow :class:`~programl.pretrained.hub.PretrainedModel` of ``analysis``, a name or directory
            :func:`~programl.pretrained.hub.pretrained` loads, or None (exact labels only).
        roots: Label these roots (each must be eligible); default: module docstring.
        max_roots: At most this many sampled roots (default: :func:`programl.view.default_max_roots`).
        seed: Seed of the sample.

    Raises:
        AnalysisError: No eligible root, or a given root that is not eligible.
        ProgramlError: The model is not a data-flow model of ``analysis``.
        ModuleNotFoundError: ``model`` is a name or directory, and PyTorch or torch-geometric is not installed (one
            line saying which extra to install).
    """
    from programl.dataflow.analyze import analyze_arrays
    from programl.dataflow.names import check_analysis
    from programl.exceptions import AnalysisError, ProgramlError

    check_analysis(analysis, AnalysisError)
    if max_roots is None:
        max_roots = default_max_roots(len(graph.node))
    if isinstance(max_roots, bool) or not isinstance(max_roots, int) or max_roots < 1:
        raise AnalysisError(f"max_roots must be a positive integer, not {max_roots!r}")
    chosen, eligible = _choose_roots(graph, analysis, roots, max_roots, seed)
    out: dict[str, Any] = {"name": analysis, "eligible": eligible, "roots": chosen.tolist(), "model": None}
    if model is None:
        out["exact"] = _bits(analyze_arrays(graph, analysis, roots=chosen).labels)
        return out
    if isinstance(model, (str, os.PathLike)):
        try:
            from programl.pretrained.hub import pretrained
        except ModuleNotFoundError as error:  # installed without the ml extra: one line, saying which to install
            from programl import _ml_import_error

            replacement = _ml_import_error("programl.view with a model", error)
            if replacement is None:
                raise
            raise replacement from None
        model = pretrained(model)
    if model.analysis != analysis:  # None for a model of another task
        what = f"{model.task} ({model.analysis})" if model.analysis else model.task
        raise ProgramlError(f"model {model.name} is a {what} model, not a dataflow ({analysis}) one")
    per_batch = max(1, BATCH_NODES // max(1, len(graph.node)))
    exact, predicted, probabilities, steps = [], [], [], None
    for start in range(0, len(chosen), per_batch):
        prediction = model.predict(graph, roots=chosen[start : start + per_batch].tolist(), compare=True)
        exact.append(prediction.exact)
        predicted.append(prediction.predicted)
        probabilities.append(prediction.probabilities)
        steps = prediction.steps
    out["exact"] = _bits(np.concatenate(exact))
    out["predicted"] = _bits(np.concatenate(predicted))
    out["probability"] = _bytes(np.concatenate(probabilities))
    out["model"] = {"name": model.name, "steps": steps}
    return out


def _asset(*parts: str) -> str:
    return resources.files("programl.view").joinpath(*parts).read_text(encoding="utf-8")


def _json_for_script(data: Any) -> str:
    """JSON that is safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def to_html(
    graph: ProgramGraph,
    *,
    title: str | None = None,
    analysis: str | None = None,
    model: Any = None,
    roots: Sequence[int] | None = None,
    max_roots: int | None = None,
    seed: int = 0,
    locations: SourceLocations | None = None,
    expand: str | None = None,
    labels: dict[str, Any] | None = None,
) -> str:
    """The page of ``graph``: one self-contained HTML document (no network when it is opened).

    The page embeds the source lines ``locations`` holds, and nothing else of the machine it is made on:
    :func:`programl.view.read_input` and :func:`~programl.view.debuginfo.source_locations` read only the input
    itself and the files below its directory or a ``source_root`` (:mod:`programl.view.debuginfo`). A model given
    here runs in this process, without a time or memory limit (``programl view`` runs it in a worker process under
    ``--timeout`` and ``--max-memory``, and passes its ``labels``).

    Args:
        graph: A ``ProgramGraph``.
        title: The page's title (default: the module's name).
        analysis: Also label roots with this data-flow analysis (:func:`analysis_data`).
        model: With ``analysis``: a pretrained model (or its name) whose predictions the page shows beside the
            exact labels; None: the exact labels only.
        roots, max_roots, seed: Which roots to label (:func:`analysis_data`).
        locations: Source locations of the instructions (:func:`programl.view.debuginfo.source_locations`).
        expand: Which functions are expanded when the page opens (:func:`graph_data`).
        labels: Instead of ``analysis`` and ``model``: the labels :func:`analysis_data` made of ``graph`` elsewhere
            (``programl view`` makes them in a worker process, under its limits).

    Raises:
        AnalysisError: No eligible root for ``analysis``, or a root that is not eligible.
        ProgramlError: ``model`` is not a data-flow model of ``analysis``.
        GraphTransformError: A corrupt graph (an edge to a node that does not exist).
        ModuleNotFoundError: ``model`` is a name or directory, and PyTorch or torch-geometric is not installed (one
            line saying which extra to install).
        ValueError: ``model`` without ``analysis``, or ``labels`` with either.

    The page of the repository's ``examples/dot_product.ll`` with the exact labels of liveness at each of its 14
    eligible roots (no model):

    >>> import programl, programl.view
    >>> graph = programl.from_llvm_ir(open("examples/dot_product.ll").read())
    >>> page = programl.view.to_html(graph, analysis="liveness")
    >>> page.startswith("<!DOCTYPE html>"), "<title>dot_product.ll - programl view</title>" in page
    (True, True)
    >>> programl.view.analysis_data(graph, "liveness")["roots"]
    [1, 2, 4, 6, 8, 10, 12, 14, 16, 19, 22, 24, 26, 28]
    """
    if model is not None and analysis is None:
        raise ValueError("a model needs an analysis (analysis='reachability', ...)")
    if labels is not None and analysis is not None:
        raise ValueError("labels are the labels of an analysis: give one or the other")
    data = graph_data(graph, title=title, locations=locations, expand=expand)
    if analysis:
        labels = analysis_data(graph, analysis, model=model, roots=roots, max_roots=max_roots, seed=seed)
    data["analysis"] = labels
    from programl import __version__

    data["generator"] = f"programl {__version__}"
    template = _asset("assets", "template.html")
    replacements = {
        "{{TITLE}}": html.escape(data["title"]),
        "{{STYLE}}": _asset("assets", "view.css"),
        "{{CYTOSCAPE}}": _asset("vendor", "cytoscape.min.js"),
        "{{DATA}}": _json_for_script(data),
        "{{SCRIPT}}": _asset("assets", "view.js"),
    }
    # one pass over the template: what is put in is never searched for placeholders
    return re.sub(r"\{\{[A-Z]+\}\}", lambda m: replacements.get(m.group(0), m.group(0)), template)
