#!/usr/bin/env python3
"""Building against LLVM's floor: graph building as a multiple of LLVM's own parse + print.

Any builder on LLVM must at least parse the module and print it once (the instruction texts are LLVM's printing),
so ``llvmlite.binding.parse_assembly`` in a fresh context followed by ``str(module)`` is the floor. For every file
of ``benchmarks/build.py``'s corpus (bundled examples, the 1,000 legacy IR files, the C files of seven PyPI
sdists compiled by clang-14), this process times, side by side and interleaved:

  * ours  = ``graph_from_ir(ir)`` + ``SerializeToString()`` (everything a user pays for a graph);
  * floor = fresh context + ``parse_assembly(ir)`` + ``str(module)`` (for old IR that LLVM 22 reads only once the
    builder has respelled a few attributes, of the respelled text: the builder pays for a failed first parse).

Times are CPU seconds of this process (``--clock wall`` for wall time), the best of ``--repeat`` interleaved runs
of each (on a shared machine single runs of the same file vary by 20 %). The target line is the ratio of total
times on the files over 10k nodes (target <= 4x). Also printed: linearity (ours, time per node of the largest tenth
of the files >= 100 nodes over the smallest tenth; target <= 2) and, with ``--reference``, the speed-up over the
original (``llvm2graph-10 --stdout_fmt=pb`` as a subprocess, its child CPU time, one run; on the files over 10k
nodes only; target >= 10x).

``--before DIR`` also times, interleaved with the two, the builder of another checkout (``DIR/programl``, e.g.
``git archive <commit> programl | tar -x -C DIR``) in this same process, checks that it serialises every graph to
the same bytes as ours, and prints its ratio beside ours: a before/after comparison measured side by side.

Usage: nice .venv/bin/python benchmarks/build_floor.py [--reference] [--before DIR] [--repeat 3] [--min-nodes 0]
       [--out FILE]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import llvmlite.binding as llvm  # noqa: E402
from build import (  # noqa: E402
    NON_TRIVIAL_NODES,
    example_corpus,
    legacy_corpus,
    log,
    sdist_corpus,
    tenths,
    time_reference,
)

from programl.graph_builder.llvm import graph_from_ir  # noqa: E402
from programl.graph_builder.llvm_parse import _upgrade_legacy_attributes  # noqa: E402
from tests.graph_builder.reference import find_clang14, find_llvm2graph  # noqa: E402

LARGE = 10_000
CLOCK = {"cpu": time.process_time, "wall": time.perf_counter}


def floor_once(ir: str) -> None:
    context = llvm.create_context()
    module = llvm.parse_assembly(ir, context=context)
    str(module)
    module.close()
    context.close()


def floor_text(ir: str) -> str:
    """The text LLVM 22 reads: ``ir``, or (old typed-pointer IR) ``ir`` with the spellings the builder upgrades."""
    try:
        floor_once(ir)
    except RuntimeError:
        return _upgrade_legacy_attributes(ir)
    return ir


def ours_once(ir: str, build=graph_from_ir) -> tuple[int, int, bytes]:
    graph = build(ir)
    data = graph.SerializeToString()
    return len(graph.node), len(graph.edge), data


def load_builder(root: Path):
    """``graph_from_ir`` of the checkout at ``root``, imported beside this checkout's (its own ``programl``
    modules, removed from ``sys.modules`` again so that both stay usable)."""
    ours = {name: module for name, module in sys.modules.items() if name == "programl" or name.startswith("programl.")}
    for name in ours:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        build = importlib.import_module("programl.graph_builder.llvm").graph_from_ir
    finally:
        sys.path.remove(str(root))
        for name in [name for name in sys.modules if name == "programl" or name.startswith("programl.")]:
            del sys.modules[name]
        sys.modules.update(ours)
    return build


def time_both(ir: str, repeat: int, clock: str, before=None) -> tuple[float, float, int, int, float | None] | None:
    """Best ours, best floor (and best of the ``before`` builder) of ``repeat`` runs each, interleaved (ours,
    [before,] floor, ours, ...); None when LLVM 22 rejects the IR. Raises when ``before`` serialises differently."""
    now = CLOCK[clock]
    best_ours = best_floor = best_before = float("inf")
    nodes = edges = 0
    floor_ir = floor_text(ir)
    for attempt in range(repeat):
        gc.collect()
        start = now()
        try:
            nodes, edges, data = ours_once(ir)
        except Exception as error:  # noqa: BLE001 - reported, the benchmark goes on
            log(f"  ours failed: {error}")
            return None
        best_ours = min(best_ours, now() - start)
        if before is not None:
            gc.collect()
            start = now()
            *_, before_data = ours_once(ir, before)
            best_before = min(best_before, now() - start)
            if attempt == 0 and before_data != data:
                raise AssertionError("the --before builder serialises this graph to other bytes")
            del before_data
        del data
        gc.collect()
        start = now()
        floor_once(floor_ir)
        best_floor = min(best_floor, now() - start)
    return best_ours, best_floor, nodes, edges, (best_before if before is not None else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "programl" / "bench-build",
        help="where sdists and compiled IR are kept (shared with benchmarks/build.py)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench-results" / "build_floor.json")
    parser.add_argument("--repeat", type=int, default=3, help="runs per file (the best is kept)")
    parser.add_argument("--min-nodes", type=int, default=0, help="time only files with at least this many nodes")
    parser.add_argument("--reference", action="store_true", help="also time llvm2graph-10 on files over 10k nodes")
    parser.add_argument("--reference-timeout", type=float, default=600, help="seconds per file for the original")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="CPU seconds (default) or wall time")
    parser.add_argument(
        "--before", type=Path, help="a checkout (DIR/programl) whose builder is timed beside ours, same bytes checked"
    )
    args = parser.parse_args()
    before = load_builder(args.before) if args.before else None

    clang14 = find_clang14()
    corpus = example_corpus(clang14) + legacy_corpus() + sdist_corpus(args.cache, clang14)[0]
    log(f"corpus: {len(corpus)} files")
    reference = find_llvm2graph() if args.reference else None
    if args.reference and reference is None:
        log("llvm2graph-10 not found (make reference): the comparison with the original is skipped")

    rows = []
    for index, (source, name, ir) in enumerate(corpus):
        if args.min_nodes and len(ir) < 2 * args.min_nodes:  # too few bytes for that many nodes: skip unbuilt
            continue
        timed = time_both(ir, args.repeat, args.clock, before)
        if timed is None:
            log(f"{source}/{name}: skipped")
            continue
        ours, floor, nodes, edges, before_s = timed
        if nodes < args.min_nodes:
            continue
        row = {"source": source, "name": name, "nodes": nodes, "edges": edges, "ours_s": ours, "floor_s": floor}
        if before is not None:
            row["before_s"] = before_s
        if reference and nodes > LARGE:
            row["reference_s"] = time_reference(ir, reference, 1, args.reference_timeout, args.clock)
        rows.append(row)
        if (index + 1) % 200 == 0:
            log(f"  {index + 1} / {len(corpus)}")

    large = sorted((r for r in rows if r["nodes"] > LARGE), key=lambda r: r["nodes"])
    non_trivial = [r for r in rows if r["nodes"] >= NON_TRIVIAL_NODES]
    ours_tenths = tenths(non_trivial, "ours_s") if len(non_trivial) >= 10 else []
    report = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "llvm": ".".join(map(str, llvm.llvm_version_info)),
            "clock": args.clock,
        },
        "files": len(rows),
        "nodes": sum(r["nodes"] for r in rows),
        "large_files": len(large),
        "large_ours_s": sum(r["ours_s"] for r in large),
        "large_floor_s": sum(r["floor_s"] for r in large),
        "ratio_over_10k_nodes": sum(r["ours_s"] for r in large) / sum(r["floor_s"] for r in large) if large else None,
        "ratio_all": sum(r["ours_s"] for r in rows) / sum(r["floor_s"] for r in rows) if rows else None,
        "us_per_node_over_10k_nodes": 1e6 * sum(r["ours_s"] for r in large) / sum(r["nodes"] for r in large)
        if large
        else None,
        "tenths": ours_tenths,
        "linearity": ours_tenths[-1]["us_per_node"] / ours_tenths[0]["us_per_node"] if ours_tenths else None,
        "per_file": rows,
    }
    compared = [r for r in large if r.get("reference_s") and r["reference_s"] > 0]
    timed_out = [r for r in large if r.get("reference_s") and r["reference_s"] < 0]
    if compared:
        report["speedup_over_original"] = sum(r["reference_s"] for r in compared) / sum(r["ours_s"] for r in compared)
        report["original_files"] = len(compared)
        report["original_timed_out"] = [r["name"] for r in timed_out]
    if before is not None:
        before_tenths = tenths(non_trivial, "before_s") if len(non_trivial) >= 10 else []
        report["before"] = {
            "checkout": str(args.before),
            "large_before_s": sum(r["before_s"] for r in large),
            "ratio_over_10k_nodes": sum(r["before_s"] for r in large) / sum(r["floor_s"] for r in large)
            if large
            else None,
            "ratio_all": sum(r["before_s"] for r in rows) / sum(r["floor_s"] for r in rows) if rows else None,
            "tenths": before_tenths,
            "linearity": before_tenths[-1]["us_per_node"] / before_tenths[0]["us_per_node"] if before_tenths else None,
        }
        if compared:
            report["before"]["speedup_over_original"] = sum(r["reference_s"] for r in compared) / sum(
                r["before_s"] for r in compared
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))

    print(f"\ncorpus: {report['files']} files, {report['nodes']:,} nodes; {len(large)} files over 10k nodes")
    print(
        f"{'file':<44} {'nodes':>9} {'ours s':>8} {'floor s':>8} {'ratio':>6} {'original s':>11}"
        + (f" {'before s':>9} {'ratio':>6}" if before else "")
    )
    for r in large:
        original = r.get("reference_s")
        shown = "" if original is None else (f"> {-original:g}" if original < 0 else f"{original:.2f}")
        print(
            f"{(r['source'] + '/' + r['name'])[-44:]:<44} {r['nodes']:>9,} {r['ours_s']:>8.3f} {r['floor_s']:>8.3f} "
            f"{r['ours_s'] / r['floor_s']:>5.2f}x {shown:>11}"
            + (f" {r['before_s']:>9.3f} {r['before_s'] / r['floor_s']:>5.2f}x" if before else "")
        )
    if ours_tenths:
        print(
            f"linearity (ours, us/node of the largest tenth / smallest tenth of files >= {NON_TRIVIAL_NODES} nodes): "
            f"{report['linearity']:.2f} ({ours_tenths[0]['us_per_node']:.2f} -> {ours_tenths[-1]['us_per_node']:.2f}; "
            "target <= 2)"
        )
    print(f"all files: ours / LLVM parse+print = {report['ratio_all']:.2f}x")
    if before is not None:
        b = report["before"]
        if b["linearity"] is not None:
            print(f"before: linearity {b['linearity']:.2f}; all files: before / parse+print = {b['ratio_all']:.2f}x")
        if "speedup_over_original" in b:
            print(f"before: original (llvm2graph-10) / before on the same files: {b['speedup_over_original']:.1f}x")
        if large:
            print(
                f"BEFORE ({args.before}) / LLVM parse+print on the {len(large)} files over 10k nodes: "
                f"{b['ratio_over_10k_nodes']:.2f}x ({b['large_before_s']:.2f} s); ours / before: "
                f"{report['large_ours_s'] / b['large_before_s']:.2f}"
            )
    if compared:
        print(
            f"original (llvm2graph-10) / ours on the {len(compared)} files over 10k nodes it finished: "
            f"{report['speedup_over_original']:.1f}x (target >= 10x)"
            + (f"; it timed out on {', '.join(report['original_timed_out'])}" if timed_out else "")
        )
    if large:
        print(
            f"TARGET ours / LLVM parse+print on the {len(large)} files over 10k nodes: "
            f"{report['ratio_over_10k_nodes']:.2f}x (target <= 4x; {report['large_ours_s']:.2f} s vs "
            f"{report['large_floor_s']:.2f} s)"
        )
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
