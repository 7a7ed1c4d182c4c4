#!/usr/bin/env python3
"""Graph-building speed: graphs/s and nodes/s over a corpus, time per node against size, and the original builder.

Corpus (one IR text per file, readable by both LLVM 10 and LLVM 22, so both builders see one program):
  * the bundled examples (examples/*.ll as they are; .c/.cc/.cl compiled with clang-14),
  * the 1,000 legacy IR files of ../shared/data/legacy-ir (LLVM 3.7 IR),
  * the C files of a few PyPI source distributions (fetched once with `pip download --no-binary :all:` into the
    cache, compiled with clang-14 -O0 to LLVM 10-readable IR; files that do not compile are skipped and counted).

For each file: ours = parse + build + serialise, in this process (best of --repeat for small files); the original =
`llvm2graph-10 --stdout_fmt=pb` as a subprocess (its start-up included; best of --repeat for small files). Times are
CPU seconds (this process's, and the child's from getrusage), so that other work on a shared machine does not count;
--clock wall measures wall time instead.

Targets (issue "Program graphs ..."): linear scaling (time per node of the largest tenth within 2x of the smallest
non-trivial tenth), at most 10 us per node, >= 5x faster than the original in total on files over 10k nodes, never
slower than it on small files. Prints a table, writes JSON (--out) and a PNG plot (--plot).

Usage: .venv/bin/python benchmarks/build.py [--no-reference] [--repeat 3] [--cache DIR] [--out FILE] [--plot FILE]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.graph_builder.llvm import graph_from_ir  # noqa: E402
from tests.graph_builder.reference import find_clang14, find_llvm2graph, llvm10_compatible  # noqa: E402

SDISTS = [
    "regex==2024.11.6",
    "lz4==4.3.3",
    "zstandard==0.23.0",
    "brotli==1.1.0",
    "markupsafe==3.0.2",
    "bitarray==3.0.0",
    "multidict==6.1.0",
]
SHARED = Path(os.environ.get("PROGRAML_SHARED_DATA", REPO.parent / "shared" / "data"))
NON_TRIVIAL_NODES = 100  # smaller graphs are dominated by fixed per-file costs


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- corpus -------------------------------------------------------------------------------------------------------


def compile_llvm10(source: Path, flags: list[str], clang14: str) -> str | None:
    language = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cl": "cl"}[source.suffix]
    extra = ["-cl-std=CL1.2", "-Xclang", "-finclude-default-header", "-target", "spir64"] if language == "cl" else []
    command = [
        clang14,
        "-x",
        language,
        *extra,
        "-S",
        "-emit-llvm",
        "-O0",
        "-Xclang",
        "-disable-noundef-analysis",
        "-w",
        *flags,
        str(source),
        "-o",
        "-",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    return llvm10_compatible(result.stdout) if result.returncode == 0 else None


def example_corpus(clang14: str | None) -> list[tuple[str, str, str]]:
    items = []
    for path in sorted((REPO / "examples").iterdir()):
        if path.suffix == ".ll":
            items.append(("examples", path.name, path.read_text()))
        elif clang14 and path.suffix in (".c", ".cc", ".cl"):
            ir = compile_llvm10(path, [], clang14)
            if ir:
                items.append(("examples", path.name, ir))
    return items


def legacy_corpus() -> list[tuple[str, str, str]]:
    archive = SHARED / "legacy-ir" / "llvm_ir.tar.bz2"
    if not archive.exists():
        log(f"legacy IR not found at {archive}: skipped")
        return []
    with tarfile.open(archive) as tar:
        return [
            ("legacy-ir", m.name, tar.extractfile(m).read().decode("utf-8"))
            for m in sorted(tar.getmembers(), key=lambda m: m.name)
            if m.name.endswith(".ll")
        ]


def sdist_corpus(cache: Path, clang14: str | None) -> tuple[list[tuple[str, str, str]], dict]:
    items, stats = [], {}
    if not clang14:
        log("clang-14 not found: PyPI C files skipped")
        return items, stats
    python_include = subprocess.run(
        [sys.executable, "-c", "import sysconfig;print(sysconfig.get_paths()['include'])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    for spec in SDISTS:
        name = spec.split("==")[0]
        directory = cache / "sdists" / spec
        ir_directory = cache / "ir" / spec
        if not directory.exists():
            log(f"fetching {spec}")
            download = cache / "downloads"
            download.mkdir(parents=True, exist_ok=True)
            fetched = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-binary",
                    ":all:",
                    "--no-deps",
                    spec,
                    "-d",
                    str(download),
                ],
                capture_output=True,
                text=True,
            )
            archives = [
                a
                for a in download.iterdir()
                if a.name.lower().startswith(name.replace("-", "_").lower()) or a.name.lower().startswith(name.lower())
            ]
            if fetched.returncode or not archives:
                log(f"  could not download {spec}: skipped")
                continue
            directory.mkdir(parents=True)
            subprocess.run(["tar", "xf", str(archives[0]), "-C", str(directory)], check=True)
        sources = sorted(Path(p) for p in glob.glob(str(directory / "**" / "*.c"), recursive=True))
        header_dirs = sorted({str(Path(h).parent) for h in glob.glob(str(directory / "**" / "*.h"), recursive=True)})
        flags = [f"-I{d}" for d in header_dirs] + [f"-I{python_include}"]
        compiled = failed = 0
        for source in sources:
            target = ir_directory / (str(source.relative_to(directory)).replace("/", "__") + ".ll")
            if target.exists():
                ir = target.read_text() if target.stat().st_size else None
            else:
                ir = compile_llvm10(source, [f"-I{source.parent}", *flags], clang14)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(ir or "")
            if ir:
                compiled += 1
                items.append((f"pypi:{name}", str(source.relative_to(directory)), ir))
            else:
                failed += 1
        stats[spec] = {"c_files": len(sources), "compiled": compiled, "failed": failed}
        log(f"{spec}: {compiled} of {len(sources)} C files compiled")
    return items, stats


# -- timing -------------------------------------------------------------------------------------------------------


CLOCK = {"cpu": time.process_time, "wall": time.perf_counter}


def child_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_ours(ir: str, repeat: int, clock: str) -> tuple[float, int, int]:
    best = float("inf")
    nodes = edges = 0
    now = CLOCK[clock]
    for _attempt in range(repeat):
        start = now()
        graph = graph_from_ir(ir)
        graph.SerializeToString()
        best = min(best, now() - start)
        nodes, edges = len(graph.node), len(graph.edge)
        if best > 0.5:  # large files: one run is enough
            break
    return best, nodes, edges


def time_reference(ir: str, binary: str, repeat: int, timeout: float, clock: str) -> float | None:
    """Best time of the original builder; None when it rejects the IR; -timeout when it timed out."""
    best = float("inf")
    data = ir.encode("utf-8")
    now = child_cpu_seconds if clock == "cpu" else time.perf_counter
    for _attempt in range(repeat):
        start = now()
        try:
            result = subprocess.run([binary, "--stdout_fmt=pb"], input=data, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return -timeout
        elapsed = now() - start
        if result.returncode:
            return None
        best = min(best, elapsed)
        if best > 0.5:
            break
    return best


def tenths(rows: list[dict], key: str) -> list[dict]:
    """Rows sorted by node count, cut into ten groups; time per node of each group (total time / total nodes)."""
    rows = sorted(rows, key=lambda r: r["nodes"])
    groups = []
    for k in range(10):
        part = rows[k * len(rows) // 10 : (k + 1) * len(rows) // 10]
        if not part:
            continue
        nodes = sum(r["nodes"] for r in part)
        groups.append(
            {
                "tenth": k + 1,
                "files": len(part),
                "nodes_min": part[0]["nodes"],
                "nodes_max": part[-1]["nodes"],
                "us_per_node": 1e6 * sum(r[key] for r in part) / nodes,
            }
        )
    return groups


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "programl" / "bench-build",
        help="where sdists and compiled IR are kept",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench-results" / "build.json")
    parser.add_argument("--plot", type=Path, default=REPO / "bench-results" / "build.png")
    parser.add_argument("--repeat", type=int, default=3, help="runs per small file (best is kept)")
    parser.add_argument("--no-reference", action="store_true", help="do not run llvm2graph-10")
    parser.add_argument("--limit", type=int, default=0, help="at most this many files per corpus (0: all)")
    parser.add_argument("--reference-timeout", type=float, default=600, help="seconds per file for the original")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="CPU seconds (default) or wall time")
    args = parser.parse_args()

    clang14 = find_clang14()
    reference = None if args.no_reference else find_llvm2graph()
    if not args.no_reference and reference is None:
        log("llvm2graph-10 not found (make reference): the comparison is skipped")
    corpus = example_corpus(clang14) + legacy_corpus()
    sdist_items, sdist_stats = sdist_corpus(args.cache, clang14)
    corpus += sdist_items
    if args.limit:
        per_source: dict[str, int] = {}
        limited = []
        for item in corpus:
            per_source[item[0]] = per_source.get(item[0], 0) + 1
            if per_source[item[0]] <= args.limit:
                limited.append(item)
        corpus = limited
    log(f"corpus: {len(corpus)} files")

    rows = []
    for index, (source, name, ir) in enumerate(corpus):
        try:
            seconds, nodes, edges = time_ours(ir, args.repeat, args.clock)
        except Exception as error:  # noqa: BLE001 - reported, the benchmark goes on
            log(f"{source}/{name}: ours failed: {error}")
            continue
        row = {"source": source, "name": name, "bytes": len(ir), "nodes": nodes, "edges": edges, "ours_s": seconds}
        if reference:
            row["reference_s"] = time_reference(ir, reference, args.repeat, args.reference_timeout, args.clock)
            if row["reference_s"] is not None and row["reference_s"] < 0:
                log(f"{source}/{name}: the original took over {args.reference_timeout:g} s ({nodes:,} nodes)")
        rows.append(row)
        if (index + 1) % 100 == 0:
            log(f"  {index + 1} / {len(corpus)}")

    report = summarise(rows, reference is not None)
    report.update(
        {
            "machine": {
                "python": platform.python_version(),
                "cpu": platform.processor() or platform.machine(),
                "cpus": os.cpu_count(),
            },
            "sdists": sdist_stats,
            "per_file": rows,
        }
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print_report(report)
    plot(rows, args.plot)
    log(f"wrote {args.out} and {args.plot}")
    return 0


def summarise(rows: list[dict], with_reference: bool) -> dict:
    total_nodes = sum(r["nodes"] for r in rows)
    ours_total = sum(r["ours_s"] for r in rows)
    non_trivial = [r for r in rows if r["nodes"] >= NON_TRIVIAL_NODES]
    ours_tenths = tenths(non_trivial, "ours_s")
    summary = {
        "files": len(rows),
        "nodes": total_nodes,
        "edges": sum(r["edges"] for r in rows),
        "ours": {
            "seconds": ours_total,
            "graphs_per_s": len(rows) / ours_total,
            "nodes_per_s": total_nodes / ours_total,
            "us_per_node": 1e6 * ours_total / total_nodes,
            "tenths": ours_tenths,
            "linearity": ours_tenths[-1]["us_per_node"] / ours_tenths[0]["us_per_node"],
            "largest_file": max(rows, key=lambda r: r["nodes"])["nodes"],
        },
    }
    compared = [r for r in rows if r.get("reference_s") and r["reference_s"] > 0]
    timed_out = [r for r in rows if r.get("reference_s") and r["reference_s"] < 0]
    if with_reference and compared:
        large = [r for r in compared if r["nodes"] > 10_000]
        small = [r for r in compared if r["nodes"] <= 1_000]
        reference_total = sum(r["reference_s"] for r in compared)
        summary["reference"] = {
            "files": len(compared),
            "seconds": reference_total,
            "graphs_per_s": len(compared) / reference_total,
            "nodes_per_s": sum(r["nodes"] for r in compared) / reference_total,
            "tenths": tenths([r for r in compared if r["nodes"] >= NON_TRIVIAL_NODES], "reference_s"),
            "speedup_total": reference_total / sum(r["ours_s"] for r in compared),
            "speedup_over_10k_nodes": (sum(r["reference_s"] for r in large) / sum(r["ours_s"] for r in large))
            if large
            else None,
            "files_over_10k_nodes": len(large),
            "small_files": len(small),
            "small_median_ms": {
                "ours": 1e3 * statistics.median(r["ours_s"] for r in small),
                "reference": 1e3 * statistics.median(r["reference_s"] for r in small),
            }
            if small
            else None,
            "small_files_where_ours_slower": sum(1 for r in small if r["ours_s"] > r["reference_s"]),
            "timed_out": [
                {"name": r["name"], "nodes": r["nodes"], "ours_s": r["ours_s"], "reference_over_s": -r["reference_s"]}
                for r in timed_out
            ],
            "rejected_by_reference": [r["name"] for r in rows if r.get("reference_s") is None],
        }
    return summary


def print_report(report: dict) -> None:
    ours = report["ours"]
    print(
        f"\ncorpus: {report['files']} files, {report['nodes']:,} nodes, {report['edges']:,} edges; "
        f"largest file {ours['largest_file']:,} nodes"
    )
    print(
        f"ours:      {ours['graphs_per_s']:8.1f} graphs/s {ours['nodes_per_s']:12,.0f} nodes/s "
        f"{ours['us_per_node']:6.2f} us/node (total {ours['seconds']:.1f} s)"
    )
    reference = report.get("reference")
    if reference:
        print(
            f"original:  {reference['graphs_per_s']:8.1f} graphs/s {reference['nodes_per_s']:12,.0f} nodes/s "
            f"(total {reference['seconds']:.1f} s over {reference['files']} files)"
        )
        print(
            f"speed-up in total: {reference['speedup_total']:.1f}x; on the {reference['files_over_10k_nodes']} "
            f"files over 10k nodes: {reference['speedup_over_10k_nodes'] or float('nan'):.1f}x"
        )
        for item in reference["timed_out"]:
            print(
                f"  {item['name']} ({item['nodes']:,} nodes): ours {item['ours_s']:.1f} s, the original did not finish "
                f"in {item['reference_over_s']:g} s (> {item['reference_over_s'] / item['ours_s']:.0f}x)"
            )
        if reference["rejected_by_reference"]:
            print(f"  rejected by the original (not LLVM 10 IR): {', '.join(reference['rejected_by_reference'])}")
        if reference["small_median_ms"]:
            small = reference["small_median_ms"]
            print(
                f"small files (<= 1k nodes, n={reference['small_files']}): median {small['ours']:.2f} ms "
                f"(ours) vs {reference['small_median_ms']['reference']:.2f} ms (original); ours slower on "
                f"{reference['small_files_where_ours_slower']}"
            )
    print("\ntime per node by size (files >= 100 nodes, ten groups by node count):")
    header = f"{'tenth':>5} {'files':>6} {'nodes':>17} {'ours us/node':>13}"
    if reference:
        header += f" {'original us/node':>17}"
    print(header)
    for k, group in enumerate(ours["tenths"]):
        line = (
            f"{group['tenth']:>5} {group['files']:>6} {group['nodes_min']:>8,}-{group['nodes_max']:<8,} "
            f"{group['us_per_node']:>13.2f}"
        )
        if reference and k < len(reference["tenths"]):
            line += f" {reference['tenths'][k]['us_per_node']:>17.2f}"
        print(line)
    print(f"linearity (largest tenth / smallest tenth, ours): {ours['linearity']:.2f} (target <= 2)")


def plot(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not installed: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    nodes = [r["nodes"] for r in rows]
    axes[0].scatter(nodes, [r["ours_s"] for r in rows], s=6, label="programl (LLVM 22)")
    compared = [r for r in rows if r.get("reference_s") and r["reference_s"] > 0]
    if compared:
        axes[0].scatter(
            [r["nodes"] for r in compared],
            [r["reference_s"] for r in compared],
            s=6,
            label="ProGraML 0.3.2 llvm2graph-10",
            alpha=0.6,
        )
    axes[0].set(xscale="log", yscale="log", xlabel="nodes", ylabel="seconds per file", title="Time per file")
    axes[0].legend()
    axes[1].scatter(nodes, [1e6 * r["ours_s"] / max(r["nodes"], 1) for r in rows], s=6, label="programl")
    if compared:
        axes[1].scatter(
            [r["nodes"] for r in compared],
            [1e6 * r["reference_s"] / r["nodes"] for r in compared],
            s=6,
            label="llvm2graph-10",
            alpha=0.6,
        )
    axes[1].axhline(10, color="grey", linestyle="--", linewidth=1, label="10 us/node target")
    axes[1].set(xscale="log", yscale="log", xlabel="nodes", ylabel="microseconds per node", title="Time per node")
    axes[1].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
