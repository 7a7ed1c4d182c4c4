"""Fixtures of the model tests."""

from __future__ import annotations

import numpy as np
import pytest
from tests.models.random_graphs import INSTRUCTION, label_record, random_program_graph


@pytest.fixture
def reachability_examples():
    """``(graphs, records)``: 6 random graphs with 2 reachability roots each (12 labelled examples)."""
    rng = np.random.default_rng(1234)
    graphs, records = [], []
    for _ in range(6):
        g = random_program_graph(rng, num_blocks=int(rng.integers(3, 6)))
        instructions = [i for i, n in enumerate(g.node) if n.type == INSTRUCTION and i > 0]
        roots = rng.choice(instructions, size=2, replace=False)
        graphs.append(g)
        records.append([label_record(g, int(r)) for r in roots])
    return graphs, records


@pytest.fixture(autouse=True)
def _single_threaded_torch():
    """Run the model tests on one intra-op thread: the graphs are tiny, so extra threads only add synchronisation,
    and on a shared 2-core machine a busy second core makes multi-threaded steps 10x slower at random."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
