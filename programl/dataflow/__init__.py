"""The five ProGraML data-flow analyses: labels for graph neural networks (docs/spec/analyses.md, records as in
docs/spec/wire-format.md#label-records).

The five analyses of the graph of ``tests/data/example_a.ll`` (ProGraML's unit-test IR: two stores, two loads, an
add), then the label records of one:

>>> import programl
>>> import programl.dataflow as df
>>> graph = programl.from_llvm_ir(open("tests/data/example_a.ll").read())
>>> view = df.GraphView.from_graph(graph)                     # built once for the five
>>> for name in df.ANALYSES:
...     result = df.analyze_arrays(view, name, seed=0)        # roots, (roots x nodes) labels, counters
...     print(name, result.roots, result.labels.sum(axis=1), result.step_counts)
reachability [3] [6] [6]
dominance [3] [6] [17]
datadep [12] [2] [4]
liveness [3] [4] [0]
subexpressions [1] [2] [2]
>>> labels = df.analyze(graph, "liveness")                    # a ProgramGraphFeaturesList, one record per root
>>> len(labels.graph), sorted(labels.graph[0].node_features.feature_list)
(1, ['data_flow_root_node', 'data_flow_value'])

Graphs without an eligible root, and graphs on which the reference gives up (dominance past 1000 steps, liveness
past its work-list limit), raise :class:`~programl.exceptions.AnalysisError`:

>>> df.analyze(programl.from_llvm_ir(open("examples/dot_product.ll").read()), "subexpressions")
Traceback (most recent call last):
    ...
programl.exceptions.AnalysisError: No eligible root nodes in graph with 38 nodes

Importing the package imports only :data:`ANALYSES` (:mod:`programl.dataflow.names`) and the exceptions; the analyses
and numpy load when one of the other names is first used (PEP 562), so the command line lists the analyses cheaply.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from programl.dataflow.names import ANALYSES
from programl.exceptions import AnalysisError
from programl.util.lazy import lazy_getattr

# public name -> module that defines it (imported on first use)
_EXPORTS = {
    "analysis_class": "programl.dataflow.analyze",
    "analyze": "programl.dataflow.analyze",
    "analyze_arrays": "programl.dataflow.analyze",
    "eligible_roots": "programl.dataflow.analyze",
    "num_roots": "programl.dataflow.analyze",
    "select_roots": "programl.dataflow.analyze",
    "AnalysisResult": "programl.dataflow.base",
    "RootedAnalysis": "programl.dataflow.base",
    "GraphView": "programl.dataflow.columnar",
    "as_view": "programl.dataflow.columnar",
    "cached_view": "programl.dataflow.columnar",
    "clear_view_cache": "programl.dataflow.columnar",
    "arrays_to_labels": "programl.dataflow.records",
    "labels_to_arrays": "programl.dataflow.records",
    "labels_to_bytes": "programl.dataflow.records",
    "load_labels": "programl.dataflow.records",
    "save_labels": "programl.dataflow.records",
}

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


__getattr__ = lazy_getattr(globals(), _EXPORTS)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """This package, whose ``analyze`` stays the function when the submodule ``analyze`` is imported.

    Python sets ``programl.dataflow.analyze`` to the submodule when it is first imported (by anyone, e.g. ``from
    programl.dataflow.analyze import select_roots``); the package's name ``analyze`` is the function, as it was when
    this ``__init__`` imported everything eagerly.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "analyze" and isinstance(value, types.ModuleType):
            value = value.analyze
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
