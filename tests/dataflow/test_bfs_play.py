"""count_dequeues (programl/dataflow/bfs.py): the queue played from the first duplicate on, within a budget, else
count_entries; both against the literal queue of SPEC §4.1 (issue 38 item 1)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from programl.dataflow import bfs
from programl.dataflow.bfs import count_dequeues, count_entries, trace_bfs
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


def _diamond_chain(k):
    """k diamonds in a row: a_i -> b_i, a_i -> c_i, b_i -> a_{i+1}, c_i -> a_{i+1} (a_i = 3i)."""
    edges = []
    for i in range(k):
        a = 3 * i
        edges += [(a, a + 1), (a, a + 2), (a + 1, a + 3), (a + 2, a + 3)]
    return 3 * k + 1, edges


@pytest.fixture(params=["played", "propagated"])
def budget(request, monkeypatch):
    """A budget no small queue exceeds, or none at all (every count falls back to count_entries)."""
    if request.param == "propagated":
        monkeypatch.setattr(bfs, "PLAY_PER_PAIR", 0)
        monkeypatch.setattr(bfs, "PLAY_SLACK", 0)
    return request.param


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(digraphs(max_nodes=10), st.integers(0, 1000), st.integers(0, 1))
def test_matches_literal_queue(budget, graph, root, start):
    n, edges = graph
    adj, indptr, indices = _csr(n, edges)
    root %= n
    try:
        entries = ref.quirky_bfs(lambda u: adj[u], root, start, n)
    except ref.QueueTooLong:
        return
    assert count_dequeues(indptr, indices, trace_bfs(indptr, indices, root, start)) == len(entries)


@pytest.mark.parametrize("k", [1, 3, 12])
def test_diamond_chains(budget, k):
    n, edges = _diamond_chain(k)
    _, indptr, indices = _csr(n, edges)
    trace = trace_bfs(indptr, indices, 0, 1)
    assert count_dequeues(indptr, indices, trace) == 2 ** (k + 2) - 3 == count_entries(indptr, indices, trace)


def test_an_exponential_queue_is_not_played(monkeypatch):
    played = []
    real = bfs._play
    monkeypatch.setattr(bfs, "_play", lambda *args: played.append(real(*args)) or played[-1])
    n, edges = _diamond_chain(40)
    _, indptr, indices = _csr(n, edges)
    assert count_dequeues(indptr, indices, trace_bfs(indptr, indices, 0, 1)) == 2**42 - 3
    assert played == [None]  # gave up within its budget (64 x 121 pairs + 1024 entries), then propagated
