"""Memory of the analyses on one big function (issue 12, item 10).

Liveness used one bit set per node over all values of the function: quadratic (a 478k-node function needed more
than 14 GB). The graph here has 200,001 nodes in one loop; its dense sets would take ~9 GB. It runs in a child
process under an RLIMIT_AS of 2 GB, so a regression fails with MemoryError instead of eating the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.conftest import REPO_ROOT

CHILD = """
import resource
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
import json
import sys
sys.path.insert(0, {repo!r})
import numpy as np
import programl.dataflow as df

n = {n}
# instructions 1..n in one function: a chain with a back edge n-1 -> 1 (a loop) and the exit n; instruction i uses
# its own constant n + i, so every constant is live around the whole loop
node_type = np.r_[0, np.zeros(n, np.int8), np.full(n, 2, np.int8)]
node_function = np.r_[0, np.ones(n, np.int32), np.zeros(n, np.int32)]
chain = np.arange(1, n)
src = np.r_[chain, n - 1, np.arange(n + 1, 2 * n + 1)]
dst = np.r_[chain + 1, 1, np.arange(1, n + 1)]
flow = np.r_[np.zeros(n, np.int8), np.ones(n, np.int8)]
view = df.GraphView(node_type, node_function, src, dst, flow)
result = df.analyze_arrays(view, "liveness", max_roots=3, seed=0)
eligible = df.eligible_roots(view, "liveness")
print(json.dumps([len(eligible), result.labels.sum(axis=1).tolist(), result.active_node_counts.tolist()]))
"""


def test_liveness_on_a_200k_node_function_fits_in_2_gb() -> None:
    n = 100_000
    code = textwrap.dedent(CHILD.format(limit=2 << 30, repo=str(REPO_ROOT), n=n))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    eligible, labels, active = json.loads(result.stdout)
    assert eligible == n - 1  # every instruction on the loop; the exit has nothing live out
    assert labels == active == [n, n, n]  # all n constants are live out of any loop instruction
