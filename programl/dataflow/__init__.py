"""The five ProGraML data-flow analyses: labels for graph neural networks (SPEC §4, records as in SPEC §2.5).

>>> import programl.dataflow as df
>>> view = df.GraphView.from_graph(graph)                     # doctest: +SKIP
>>> for name in df.ANALYSES:                                  # doctest: +SKIP
...     result = df.analyze_arrays(view, name, seed=0)        # roots, (roots x nodes) labels, counters
>>> df.analyze(graph, "liveness")                             # doctest: +SKIP
<a ProgramGraphFeaturesList, one record per root>

Graphs without an eligible root, and graphs on which the reference gives up (dominance past 1000 steps, liveness
past its work-list limit), raise :class:`~programl.exceptions.AnalysisError`.
"""

from programl.dataflow.analyze import (
    ANALYSES,
    analysis_class,
    analyze,
    analyze_arrays,
    eligible_roots,
    num_roots,
    select_roots,
)
from programl.dataflow.base import AnalysisResult, RootedAnalysis
from programl.dataflow.columnar import GraphView, as_view, cached_view, clear_view_cache
from programl.dataflow.records import (
    arrays_to_labels,
    labels_to_arrays,
    labels_to_bytes,
    load_labels,
    save_labels,
)
from programl.exceptions import AnalysisError

__all__ = [
    "ANALYSES",
    "AnalysisError",
    "AnalysisResult",
    "GraphView",
    "RootedAnalysis",
    "analysis_class",
    "analyze",
    "analyze_arrays",
    "arrays_to_labels",
    "as_view",
    "cached_view",
    "clear_view_cache",
    "eligible_roots",
    "labels_to_arrays",
    "labels_to_bytes",
    "load_labels",
    "num_roots",
    "save_labels",
    "select_roots",
]
