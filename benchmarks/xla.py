#!/usr/bin/env python3
"""XLA HLO graphs: build time of programl.graph_builder.xla against the original ``xla2graph``, and agreement.

Inputs: the jax fixtures of tests/data/xla, and synthetic modules of N instructions (a chain of elementwise ops on
``f32[8,8]``, each using the two before it). Each is built three times by each builder; the table gives the least
CPU time (of this process for ours; of the child for ``xla2graph``, including its start of about 5 ms; CPU time, so
that other load on the machine counts less) and whether the outputs are byte-identical. Needs the reference binary
for the comparison (make reference).

    .venv/bin/python benchmarks/xla.py --sizes 1000 10000 100000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.graph_builder.xla import graph_from_hlo_bytes  # noqa: E402
from programl.third_party.tensorflow import xla_pb2  # noqa: E402
from tests.graph_builder.reference import find_reference_tool  # noqa: E402


def chain(size: int) -> bytes:
    """A serialized HloProto: one parameter and ``size - 1`` adds and multiplies, each of the two before it."""
    module = xla_pb2.HloModuleProto(name=f"chain{size}", entry_computation_id=1)
    computation = module.computations.add(id=1, name="main")
    for index in range(1, size + 1):
        inst = computation.instructions.add(id=index, name=f"v{index}")
        inst.opcode = "parameter" if index == 1 else ("add" if index % 2 else "multiply")
        inst.operand_ids.extend([] if index == 1 else [index - 1, max(1, index - 2)])
        inst.shape.element_type = xla_pb2.F32
        inst.shape.dimensions.extend([8, 8])
    return xla_pb2.HloProto(hlo_module=module).SerializeToString()


def ours(data: bytes, repeat: int) -> tuple[float, bytes]:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        graph = graph_from_hlo_bytes(data)
        best = min(best, time.process_time() - start)
    return best, graph.SerializeToString()


def reference(binary: str, data: bytes, repeat: int) -> tuple[float, bytes]:
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        command = [binary, "--stdin_fmt=pb", "--stdout_fmt=pb"]
        result = subprocess.run(command, input=data, capture_output=True, timeout=600)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return best, result.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000], help="synthetic module sizes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "bench-results" / "xla.json")
    args = parser.parse_args()

    binary = find_reference_tool("xla2graph")
    inputs = [(path.name, path.read_bytes()) for path in sorted((REPO / "tests" / "data" / "xla").glob("*.hlo.pb"))]
    inputs += [(f"chain of {size}", chain(size)) for size in args.sizes]
    rows = []
    print(f"{'input':24} {'nodes':>8} {'edges':>8} {'ours (s)':>9} {'xla2graph (s)':>14} {'identical':>9}")
    for name, data in inputs:
        seconds, graph_bytes = ours(data, args.repeat)
        graph = graph_from_hlo_bytes(data)
        row = {"input": name, "nodes": len(graph.node), "edges": len(graph.edge), "ours_cpu_s": seconds}
        if binary:
            row["xla2graph_cpu_s"], expected = reference(binary, data, args.repeat)
            row["identical"] = expected == graph_bytes
        rows.append(row)
        ref = f"{row['xla2graph_cpu_s']:14.3f} {row['identical']!s:>9}" if binary else f"{'-':>14} {'-':>9}"
        print(f"{name:24} {row['nodes']:8d} {row['edges']:8d} {seconds:9.3f} {ref}")
    if not binary:
        print("xla2graph not installed (make reference): no comparison", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    return 0 if all(row.get("identical", True) for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
