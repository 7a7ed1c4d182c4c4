"""Tests of programl.loader: node-budget batching (docs/spec/tasks.md#data-flow-protocol), the planned batch sampler
and the loader's workers."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

import numpy as np  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.loader import DataLoader  # noqa: E402

from programl.loader import NodeBudgetBatchSampler, PlannedBatches, make_loader, plan_batches  # noqa: E402


def original_builder(sizes, max_nodes):
    """Independent transcription of v0.1.0 ``DataflowGgnnBatchBuilder.OnItem``/``EndOfItems`` (SPEC §6.1)."""
    batches, current, node_size = [], [], 0
    for i, n in enumerate(sizes):
        if node_size + n > max_nodes:
            if node_size:
                batches.append(current)
                current, node_size = [], 0
            continue  # the overflowing (or oversized) graph is not added
        current.append(i)
        node_size += n
    if node_size:
        batches.append(current)
    return batches


def test_carry_policy_small_example():
    sizes = [4, 4, 3, 12, 5, 5, 1]
    assert list(plan_batches(sizes, max_nodes=10)) == [[0, 1], [2], [3], [4, 5], [6]]


def test_drop_policy_small_example():
    sizes = [4, 4, 3, 12, 5, 5, 1]
    # 3 overflows [4, 4] and is dropped; 12 is oversized and skipped; 1 overflows [5, 5] and is dropped.
    assert list(plan_batches(sizes, max_nodes=10, policy="drop")) == [[0, 1], [4, 5]]


def test_exact_fit():
    assert list(plan_batches([5, 5, 10], max_nodes=10)) == [[0, 1], [2]]
    assert list(plan_batches([5, 5, 10], max_nodes=10, policy="drop")) == [[0, 1]]  # 10 overflows [5, 5]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 40), max_size=60), st.integers(1, 50))
def test_carry_uses_every_example_once_within_budget(sizes, max_nodes):
    batches = list(plan_batches(sizes, max_nodes))
    assert [i for b in batches for i in b] == list(range(len(sizes)))  # every example once, in order
    for b in batches:
        total = sum(sizes[i] for i in b)
        assert total <= max_nodes or len(b) == 1  # only a lone oversized example may exceed the budget
        assert b
    # greedy: the first example of each batch after the first would not have fit into the previous one
    for prev, nxt in zip(batches, batches[1:], strict=False):
        assert sum(sizes[i] for i in prev) + sizes[nxt[0]] > max_nodes


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 40), max_size=60), st.integers(1, 50))
def test_drop_matches_the_original_builder(sizes, max_nodes):
    batches = list(plan_batches(sizes, max_nodes, policy="drop"))
    assert batches == original_builder(sizes, max_nodes)
    assert all(sum(sizes[i] for i in b) <= max_nodes for b in batches)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="positive"):
        list(plan_batches([1], max_nodes=0))
    with pytest.raises(ValueError, match="policy"):
        list(plan_batches([1], policy="fancy"))
    with pytest.raises(ValueError, match="max_graphs"):
        list(plan_batches([1], max_graphs=0))
    with pytest.raises(ValueError, match="min_graphs"):
        NodeBudgetBatchSampler([1], min_graphs=0)


def examples(sizes):
    out = []
    for k, n in enumerate(sizes):
        idx = torch.arange(n)
        out.append(
            Data(
                x=torch.full((n,), k, dtype=torch.long),
                edge_index=torch.stack([idx, (idx + 1) % n]),
                y=torch.zeros(n, dtype=torch.long),
                num_nodes=n,
            )
        )
    return out


@pytest.mark.parametrize("workers", [0, 1], ids=["in-process", "one-worker"])
def test_a_loader_over_the_sampler_yields_disjoint_graph_batches(workers):
    sizes = [300, 4000, 2500, 12000, 3100, 600, 7000, 50]
    sampler = NodeBudgetBatchSampler(sizes, max_nodes=10_000)
    loader = DataLoader(examples(sizes), batch_sampler=sampler, num_workers=workers)
    seen = []
    for batch in loader:
        assert batch.num_nodes <= 10_000 or batch.num_graphs == 1
        # each graph's x carries its example index; edges stay inside their graph
        ids = batch.x[batch.ptr[:-1]].tolist()
        seen += ids
        assert torch.equal(batch.batch[batch.edge_index[0]], batch.batch[batch.edge_index[1]])
    assert seen == list(range(len(sizes)))
    assert len(loader) == 4  # [300, 4000, 2500], [12000], [3100, 600], [7000, 50]


def test_drop_policy_loses_examples():
    sizes = [300, 4000, 2500, 12000, 3100, 600, 7000, 50]
    plan = NodeBudgetBatchSampler(sizes, max_nodes=10_000, policy="drop").plan()
    assert plan == [[0, 1, 2], [4, 5], [7]]  # 12000 and 7000 overflow and are dropped
    assert plan == original_builder(sizes, 10_000)


def test_sampler_shuffle_is_seeded():
    sizes = list(range(1, 60))
    a = NodeBudgetBatchSampler(sizes, max_nodes=100, shuffle=True, seed=3)
    b = NodeBudgetBatchSampler(sizes, max_nodes=100, shuffle=True, seed=3)
    c = NodeBudgetBatchSampler(sizes, max_nodes=100, shuffle=True, seed=4)
    assert a.plan() == b.plan()
    assert a.plan() != c.plan()
    first = a.plan()
    a.set_epoch(1)
    assert a.plan() != first  # a new order per epoch
    b.set_epoch(1)
    assert a.plan() == b.plan()
    assert sorted(i for batch in a.plan() for i in batch) == list(range(len(sizes)))
    assert NodeBudgetBatchSampler(sizes, max_nodes=100).plan()[0] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]


def test_the_sampler_is_a_seeded_permutation_packed_by_plan_batches() -> None:
    sizes = np.random.default_rng(1).integers(1, 4_000, size=200)
    sampler = NodeBudgetBatchSampler(sizes, 10_000, shuffle=True, seed=7)
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        order = np.random.default_rng([7, epoch]).permutation(len(sizes))
        assert list(sampler) == [[int(order[j]) for j in b] for b in plan_batches(sizes[order], 10_000)]
        assert sorted(i for b in sampler for i in b) == list(range(len(sizes)))
        assert all(sizes[b].sum() <= 10_000 or len(b) == 1 for b in sampler)
    first = list(NodeBudgetBatchSampler(sizes, 10_000, shuffle=True, seed=7))
    sampler.set_epoch(0)
    assert list(sampler) == first
    sampler.set_epoch(1)
    assert list(sampler) != first


def test_graph_caps_close_and_merge_batches() -> None:
    """The graph-level tasks' batches (devmap, classifyapp): a graph cap, and no batch of one graph in training."""
    sizes = [5, 5, 5, 20, 5, 5, 5]
    order = list(range(len(sizes)))
    assert list(plan_batches(sizes, 12)) == [[0, 1], [2], [3], [4, 5], [6]]
    assert list(plan_batches(sizes, 100, max_graphs=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    merged = list(plan_batches(sizes, 12, min_graphs=2))
    assert merged == [[0, 1, 2, 3], [4, 5, 6]]  # single examples join the batch before them
    assert sorted(i for b in merged for i in b) == order
    assert NodeBudgetBatchSampler([3, 9], 4, min_graphs=2).plan() == [[0, 1]]
    assert list(plan_batches([], 4, min_graphs=2)) == []


def test_batch_sampler_shares_batches_between_ranks() -> None:
    sizes = np.full(103, 1_000)  # 11 batches of 10 (the last of 3)
    whole = list(NodeBudgetBatchSampler(sizes, 10_000, shuffle=True, seed=2))
    ranks = [
        list(NodeBudgetBatchSampler(sizes, 10_000, shuffle=True, seed=2, num_replicas=3, rank=r)) for r in range(3)
    ]
    assert [len(r) for r in ranks] == [3, 3, 3]  # 11 // 3 each: no rank waits for a batch another lacks
    assert [b for r in range(3) for b in ranks[r]] == [whole[i] for r in range(3) for i in range(r, 9, 3)]
    with pytest.raises(ValueError, match="rank"):
        NodeBudgetBatchSampler(sizes, num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="positive"):
        NodeBudgetBatchSampler(sizes, 0)
    with pytest.raises(ValueError, match="sizes must be a sequence of node counts >= 0"):
        NodeBudgetBatchSampler([-3, 4, 0], max_nodes=5)  # was accepted


def test_planned_batches_give_back_each_steps_state_in_order() -> None:
    """A loader with workers draws ahead: the states come back in the order of the batches, not of the draws."""
    data = [Data(x=torch.tensor([[float(i)]])) for i in range(10)]
    planned = PlannedBatches()
    loader = make_loader(data, planned, workers=2)
    for _ in range(2):  # persistent workers: a second pass with new steps
        planned.feed(([i, i + 1], {"cursor": k}) for k, i in enumerate(range(0, 10, 2)))
        seen = [(batch.x.view(-1).tolist(), planned.take()["cursor"]) for batch in loader]
        assert seen == [([float(i), float(i + 1)], k) for k, i in enumerate(range(0, 10, 2))]


def test_a_worker_ignores_ctrl_c_and_a_vanished_parent_but_reports_other_errors() -> None:
    code = (
        "import signal, sys\n"
        "from programl.loader import _init_worker\n"
        "_init_worker(0)\n"
        "assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN\n"
        "try:\n    raise ConnectionResetError(104, 'Connection reset by peer')\n"
        "except ConnectionError:\n    sys.excepthook(*sys.exc_info())\n"
        "try:\n    raise ValueError('a real error')\n"
        "except ValueError:\n    sys.excepthook(*sys.exc_info())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "ValueError: a real error" in done.stderr and "Connection reset" not in done.stderr
