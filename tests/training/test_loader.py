"""Tests of programl.training.loader: the planned batch sampler and the loader's workers (issue 35 item 3)."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Data  # noqa: E402

from programl.training.loader import PlannedBatches, make_loader  # noqa: E402


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
        "from programl.training.loader import _init_worker\n"
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
