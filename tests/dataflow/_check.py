"""Shared assertions: run one root through the public API and compare it with the literal reference."""

from __future__ import annotations

import pytest

import programl.dataflow as df
from tests.dataflow import _reference as ref


def one(graph, analysis: str, root: int) -> tuple[list[int], int, int]:
    """``(labels, step_count, active_node_count)`` of one explicit root."""
    r = df.analyze_arrays(graph, analysis, roots=[root])
    return r.labels[0].tolist(), int(r.step_counts[0]), int(r.active_node_counts[0])


def assert_like_reference(view, rg: ref.Graph, analysis: str, roots) -> int:
    """Every root gives the reference's labels and counters (or its error); returns how many were compared.

    Roots whose literal queue is too long to play are skipped.
    """
    compared = 0
    for root in roots:
        try:
            expected = ref.RUN_ONE[analysis](rg, root)
        except ref.QueueTooLong:
            continue
        except ref.RefError as error:
            with pytest.raises(df.AnalysisError, match=str(error)):
                one(view, analysis, root)
            continue
        assert one(view, analysis, root) == expected, (analysis, root)
        compared += 1
    return compared
