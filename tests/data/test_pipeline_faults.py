"""The fault handling of the data-set pipeline (issue 39, item 3 B): stale temporaries of killed writers, and which
failures a rerun retries."""

from __future__ import annotations

import os
import time

from programl.data.pipeline import error_text, is_transient, remove_stale_temporaries
from programl.graph_builder.clang import CompilerError


def test_only_stale_temporaries_nobody_holds_open_are_removed(tmp_path) -> None:
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    old = time.time() - 600
    stale = graphs / ".a.ProgramGraph.pb.x1y2z3.tmp"
    stale.write_bytes(b"partial")
    held = graphs / ".b.ProgramGraph.pb.q9w8e7.tmp"
    held.write_bytes(b"being written")
    fresh = graphs / ".c.ProgramGraph.pb.r5t6y7.tmp"
    fresh.write_bytes(b"just now")
    output = graphs / "a.ProgramGraph.pb"
    output.write_bytes(b"a graph")
    for path in (stale, held, output):
        os.utime(path, (old, old))
    with open(held, "rb"):
        assert remove_stale_temporaries(tmp_path) == 1
    assert not stale.exists() and held.exists() and fresh.exists() and output.exists()


def test_a_compiler_stopped_by_a_signal_is_retried_and_a_killed_dask_task_is_one_line() -> None:
    assert is_transient(CompilerError("clang was killed by SIGINT", "a.c"))
    assert is_transient(CompilerError("flang was killed by SIGTERM", "a.f90"))
    assert not is_transient(CompilerError("clang was killed by SIGKILL", "a.c"))  # e.g. the OOM killer
    assert not is_transient(CompilerError("expected '('", "a.f90", 2, 5))

    class KilledWorker(Exception):
        pass

    assert error_text(KilledWorker("Attempted to run task 'x' on 4 different workers...")) == (
        "crashed: the dask workers that ran it died (killed, or out of memory)"
    )
