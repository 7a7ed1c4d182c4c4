"""The quirk BFS without a queue (programl/dataflow/bfs.py) against the literal queue of SPEC §4.1."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from programl.dataflow import bfs
from programl.dataflow.bfs import count_entries, trace_bfs
from programl.exceptions import AnalysisError
from tests.dataflow import _reference as ref
from tests.dataflow._strategies import digraphs


def _csr(n, edges):
    adj = [[] for _ in range(n)]
    for s, t in edges:
        adj[s].append(t)
    indptr, indices = [0], []
    for row in adj:
        indices += row
        indptr.append(len(indices))
    return adj, indptr, indices


def _levels_by_node(entries):
    out: dict[int, set[int]] = {}
    for node, dist in entries:
        out.setdefault(node, set()).add(dist)
    return out


def _trace_levels_by_node(trace):
    out: dict[int, set[int]] = {}
    for k, level in enumerate(trace.levels):
        for node in level:
            out.setdefault(node, set()).add(trace.start + k)
    return out


@pytest.fixture(params=["python", "numpy"])
def propagation(request, monkeypatch):
    """Run count_entries with its pure-Python sums, or force its numpy sums (normally only for wide levels)."""
    if request.param == "numpy":
        monkeypatch.setattr(bfs, "_NUMPY_WORK", -1)
    return request.param


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(digraphs(max_nodes=10), st.integers(0, 1000), st.integers(0, 1))
def test_matches_literal_queue(propagation, graph, root, start):
    n, edges = graph
    adj, indptr, indices = _csr(n, edges)
    root %= n
    try:
        entries = ref.quirky_bfs(lambda u: adj[u], root, start, n)
    except ref.QueueTooLong:
        return
    trace = trace_bfs(indptr, indices, root, start)
    single = [row[0] if len(row) == 1 else -1 for row in adj]
    assert trace_bfs(indptr, indices, root, start, single) == trace
    assert trace.visited == {u for u, _ in entries}
    assert trace.last_distance == entries[-1][1]
    assert _trace_levels_by_node(trace) == _levels_by_node(entries)
    assert count_entries(indptr, indices, trace) == len(entries)


def test_each_node_at_most_two_consecutive_levels():
    # a -> b, a -> c, b -> c: c is enqueued at distance 2 (by a) and again at 3 (by b, before c's first dequeue)
    adj, indptr, indices = _csr(3, [(0, 1), (0, 2), (1, 2)])
    trace = trace_bfs(indptr, indices, 0, 1)
    assert trace.levels == [[0], [1, 2], [2]]
    assert trace.last_distance == 3
    assert count_entries(indptr, indices, trace) == 4 == len(ref.quirky_bfs(lambda u: adj[u], 0, 1, 3))


def _diamond_chain(k):
    """k diamonds in a row: a_i -> b_i, a_i -> c_i, b_i -> a_{i+1}, c_i -> a_{i+1} (a_i = 3i)."""
    edges = []
    for i in range(k):
        a = 3 * i
        edges += [(a, a + 1), (a, a + 2), (a + 1, a + 3), (a + 2, a + 3)]
    return 3 * k + 1, edges


@pytest.mark.parametrize("k", [1, 2, 5, 12])
def test_diamond_chain_doubles_entries(k):
    n, edges = _diamond_chain(k)
    adj, indptr, indices = _csr(n, edges)
    trace = trace_bfs(indptr, indices, 0, 1)
    expected = 2 ** (k + 2) - 3  # a_i dequeued 2**i times, b_i and c_i 2**i times each
    assert count_entries(indptr, indices, trace) == expected == len(ref.quirky_bfs(lambda u: adj[u], 0, 1, n))
    assert trace.last_distance == 2 * k + 1


def test_exponential_queue_is_counted_without_playing_it(propagation):
    n, edges = _diamond_chain(40)
    _, indptr, indices = _csr(n, edges)
    assert count_entries(indptr, indices, trace_bfs(indptr, indices, 0, 1)) == 2**42 - 3


def test_counts_near_the_int64_limit_stay_exact(propagation):
    # 2**63 - 3 entries: past the numpy sums' guard (2**62), so they fall back to Python integers
    n, edges = _diamond_chain(61)
    _, indptr, indices = _csr(n, edges)
    assert count_entries(indptr, indices, trace_bfs(indptr, indices, 0, 1)) == 2**63 - 3


def test_count_beyond_int64_is_an_error(propagation):
    n, edges = _diamond_chain(70)
    _, indptr, indices = _csr(n, edges)
    with pytest.raises(AnalysisError, match="2\\*\\*63"):
        count_entries(indptr, indices, trace_bfs(indptr, indices, 0, 1))
