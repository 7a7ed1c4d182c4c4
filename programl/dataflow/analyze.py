"""Run an analysis on a graph: pick the roots, label them (docs/spec/analyses.md#common-rules;
docs/spec/policy.md#labels for the seed).

Roots: the eligible nodes of the analysis, ascending, are shuffled with ``numpy.random.default_rng(seed)
.permutation`` and the first ``n = min(ceil(len(eligible) / 10), max_roots)`` are taken (the reference shuffles
with an unseeded clock and takes the same number). ``roots=`` names them explicitly instead. The same graph, analysis
and seed always give the same roots and labels, and byte-identical records.

A ``ProgramGraph`` argument gets its view from :func:`~programl.dataflow.columnar.cached_view`, so running the five
analyses one call at a time on the same graph builds the view (and the per-graph work shared by the analyses) once.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

from programl.dataflow.base import AnalysisResult, RootedAnalysis
from programl.dataflow.columnar import GraphView, cached_view
from programl.dataflow.datadep import DataDep
from programl.dataflow.dominance import Dominance
from programl.dataflow.liveness import Liveness
from programl.dataflow.names import ANALYSES, check_analysis
from programl.dataflow.reachability import Reachability
from programl.dataflow.records import arrays_to_labels
from programl.dataflow.subexpressions import Subexpressions
from programl.exceptions import AnalysisError
from programl.proto import ProgramGraph, ProgramGraphFeaturesList
from programl.util.checks import is_integer

# ANALYSES is programl.dataflow.names's, re-exported for code that imports it from here
__all__ = [
    "ANALYSES",
    "analysis_class",
    "analyze",
    "analyze_arrays",
    "choose_roots",
    "eligible_roots",
    "num_roots",
    "select_roots",
]

_CLASSES: dict[str, type[RootedAnalysis]] = {
    cls.name: cls for cls in (Reachability, Dominance, DataDep, Liveness, Subexpressions)
}


def analysis_class(analysis: str) -> type[RootedAnalysis]:
    """The class that implements ``analysis``.

    Raises:
        AnalysisError: For an unknown name.
    """
    return _CLASSES[check_analysis(analysis, AnalysisError)]


def _prepare(graph: Any, analysis: str) -> RootedAnalysis:
    cls = analysis_class(analysis)
    view = cached_view(graph)
    key = f"analysis.{analysis}"
    instance = view.cache.get(key)
    if instance is None:
        instance = cls(view)
        view.cache[key] = instance
    return instance


def eligible_roots(graph: ProgramGraph | GraphView, analysis: str) -> np.ndarray:
    """Every node that may be a root of ``analysis`` on ``graph``, ascending.

    Raises:
        AnalysisError: For an unknown analysis, or when the analysis's initialisation fails (liveness).
    """
    return _prepare(graph, analysis).eligible_roots()


def num_roots(num_eligible: int, max_roots: int | None = 10) -> int:
    """``min(ceil(num_eligible / 10), max_roots)`` (no cap when ``max_roots`` is None)."""
    n = math.ceil(num_eligible / 10)
    return n if max_roots is None else min(n, max_roots)


_LOCAL = threading.local()


def _generator(seed: int | None) -> np.random.Generator:
    """``numpy.random.default_rng(seed)``, reset to its initial state from a per-thread cache (seeding costs
    more than resetting)."""
    if seed is None or not isinstance(seed, (int, np.integer)):
        return np.random.default_rng(seed)
    cache = getattr(_LOCAL, "generators", None)
    if cache is None:
        cache = _LOCAL.generators = {}
    hit = cache.get(int(seed))
    if hit is None:
        generator = np.random.default_rng(seed)
        if len(cache) >= 64:
            cache.clear()
        hit = cache[int(seed)] = (generator, generator.bit_generator.state)
    generator, state = hit
    generator.bit_generator.state = state
    return generator


def _sample(seed: int | None, size: int, n: int) -> np.ndarray:
    """The first ``n`` of ``default_rng(seed).permutation(size)``: the positions :func:`select_roots` takes. The
    permutation of an array shuffles it with the same draws as ``permutation(len(array))`` shuffles ``arange``, so
    ``permutation(eligible)[:n] == eligible[_sample(seed, len(eligible), n)]``. Kept per thread for integer seeds and
    short samples (the five analyses of a graph share sizes, and seeding and shuffling cost more than the lookup)."""
    if seed is None or not isinstance(seed, (int, np.integer)) or n > 64:
        return _generator(seed).permutation(size)[:n]
    cache = getattr(_LOCAL, "samples", None)
    if cache is None:
        cache = _LOCAL.samples = {}
    key = (int(seed), size, n)
    hit = cache.get(key)
    if hit is None:
        if len(cache) >= 1024:
            cache.clear()
        hit = cache[key] = _generator(seed).permutation(size)[:n]
        hit.flags.writeable = False
    return hit


def select_roots(eligible: np.ndarray, max_roots: int | None = 10, seed: int | None = 0) -> np.ndarray:
    """Sample the roots: the first :func:`num_roots` of ``numpy.random.default_rng(seed).permutation(eligible)``."""
    eligible = np.asarray(eligible, dtype=np.int64)
    return eligible[_sample(seed, len(eligible), num_roots(len(eligible), max_roots))]


def analyze_arrays(
    graph: ProgramGraph | GraphView,
    analysis: str,
    max_roots: int | None = 10,
    seed: int | None = 0,
    roots: Iterable[int] | None = None,
) -> AnalysisResult:
    """Label a graph with one analysis; numpy arrays, no protobuf.

    Args:
        graph: A ``ProgramGraph`` or a prebuilt :class:`~programl.dataflow.columnar.GraphView` (build the view once
            to run several analyses or seeds on one graph).
        analysis: One of :data:`ANALYSES`.
        max_roots: Cap on the number of sampled roots (``None``: no cap); at most ``ceil(eligible / 10)`` are taken.
        seed: Seed of ``numpy.random.default_rng`` for the root sample.
        roots: Explicit roots (in record order) instead of a sample; each must be eligible.

    Returns:
        The roots, labels and counters: see :class:`~programl.dataflow.base.AnalysisResult`.

    Raises:
        AnalysisError: Unknown analysis; no eligible root ("No eligible root nodes in graph with N nodes"); an
            explicit root that is not eligible or not an integer; a ``seed`` or ``max_roots`` that is not a
            non-negative / positive integer; or the analysis fails on the graph (dominance past 1000 steps,
            liveness past its work-list limit), with the reference's message.
    """
    runner = _prepare(graph, analysis)
    return runner.run(_chosen_roots(runner, analysis, max_roots, seed, roots))


def _chosen_roots(runner: RootedAnalysis, analysis: str, max_roots, seed, roots) -> np.ndarray:
    """The roots :func:`analyze_arrays` labels: ``roots`` checked, else its seeded sample."""
    if max_roots is not None and (not isinstance(max_roots, (int, np.integer)) or max_roots < 1):
        raise AnalysisError(f"max_roots must be a positive integer or None, not {max_roots!r}")
    if seed is not None and (not is_integer(seed) or seed < 0):
        raise AnalysisError(f"seed must be a non-negative integer or None, not {seed!r}")
    eligible = runner.eligible_roots()
    if roots is None:
        if not len(eligible):
            raise AnalysisError(f"No eligible root nodes in graph with {runner.view.num_nodes} nodes")
        return select_roots(eligible, max_roots, seed)
    given = np.asarray(roots).reshape(-1) if isinstance(roots, np.ndarray) else list(roots)
    for root in given:
        if not is_integer(root):  # 1.7, "1" and True would otherwise be taken for node 1
            raise AnalysisError(f"roots must be node indices (integers), not {root!r}")
    outside = [int(root) for root in given if not 0 <= int(root) < runner.view.num_nodes]
    chosen = np.asarray([] if outside else given, dtype=np.int64).reshape(-1)
    bad = outside or chosen[~np.isin(chosen, eligible)].tolist()
    if len(bad):
        raise AnalysisError(
            f"node {int(bad[0])} is not an eligible {analysis} root "
            f"(graph has {runner.view.num_nodes} nodes, {len(eligible)} eligible)"
        )
    return chosen


def choose_roots(
    graph: ProgramGraph | GraphView,
    analysis: str,
    max_roots: int | None = 10,
    seed: int | None = 0,
    roots: Iterable[int] | None = None,
) -> np.ndarray:
    """The roots :func:`analyze_arrays` would label with these arguments (``roots`` checked, else its seeded sample),
    without running the analysis: for a model that predicts the labels of a graph on which the analysis itself
    gives up (docs/spec/analyses.md#common-rules).

    Raises:
        AnalysisError: As :func:`analyze_arrays` for the roots: none eligible, or a given root that is not.
    """
    return _chosen_roots(_prepare(graph, analysis), analysis, max_roots, seed, roots)


def analyze(
    graph: ProgramGraph | GraphView,
    analysis: str,
    max_roots: int | None = 10,
    seed: int | None = 0,
    roots: Iterable[int] | None = None,
) -> ProgramGraphFeaturesList:
    """Label a graph with one analysis: a ``ProgramGraphFeaturesList`` laid out as in
    docs/spec/wire-format.md#label-records.

    Same arguments and errors as :func:`analyze_arrays`; one record per root, in root order.

    Reachability may start at any of the 15 instructions of the repository's ``examples/dot_product.ll``, so 2 roots
    are sampled (a tenth, rounded up); the records are those of :func:`analyze_arrays`, byte for byte:

    >>> import programl
    >>> import programl.dataflow as df
    >>> graph = programl.from_llvm_ir(open("examples/dot_product.ll").read())
    >>> labels = df.analyze(graph, "reachability", seed=0)
    >>> len(labels.graph), df.labels_to_arrays(labels).roots, df.labels_to_arrays(labels).step_counts
    (2, array([ 4, 24]), array([13, 11]))
    >>> arrays = df.analyze_arrays(graph, "reachability", seed=0)
    >>> labels.SerializeToString(deterministic=True) == df.labels_to_bytes(arrays)
    True
    """
    return arrays_to_labels(analyze_arrays(graph, analysis, max_roots=max_roots, seed=seed, roots=roots))
