"""programl.io as a package: its public names, lazy imports, no torch, and worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.io.io_helpers import example_graph

import programl
import programl.io
from programl.io import from_networkx, to_dot, to_json, to_networkx
from programl.util.executor import TimeoutProcessPool


def test_all_names_resolve_and_match_the_top_level_api() -> None:
    for name in programl.io.__all__:
        value = getattr(programl.io, name)
        assert callable(value), name
        if name in programl.__all__:
            assert getattr(programl, name) is value, name
    assert sorted(programl.io.__all__) == programl.io.__all__
    assert set(dir(programl.io)) >= set(programl.io.__all__)


def test_importing_io_needs_neither_torch_nor_networkx() -> None:
    code = (
        "import sys, programl.io, programl.io.serialize, programl.io.json_convert, programl.io.dot, "
        "programl.io.files, programl.io.compiler_gym\n"
        "assert 'torch' not in sys.modules and 'networkx' not in sys.modules, sorted(sys.modules)\n"
        "import programl.io.networkx_convert\n"
        "assert 'torch' not in sys.modules\n"
    )
    root = Path(programl.__file__).resolve().parents[1]  # this checkout, not an installed copy
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, env=env, cwd=root)


def test_conversions_run_in_worker_processes() -> None:
    graphs = [example_graph() for _ in range(4)]
    for i, graph in enumerate(graphs):
        graph.node[1].text = f"op{i}"
    with TimeoutProcessPool(max_workers=2, timeout=120) as pool:
        nx_graphs = list(to_networkx(graphs, executor=pool, features=False))
        assert [g.nodes[1] for g in nx_graphs] == [
            {"block": 0, "function": 0, "text": f"op{i}", "type": 0} for i in range(4)
        ]
        assert list(from_networkx(to_networkx(graphs), executor=pool)) == graphs
        assert [d["nodes"][1]["text"] for d in to_json(graphs, executor=pool, chunksize=1)] == [
            f"op{i}" for i in range(4)
        ]
        assert list(to_dot(graphs, executor=pool)) == [to_dot(g) for g in graphs]
