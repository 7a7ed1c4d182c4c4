"""Benchmark the five data-flow analyses (SPEC §4): labels/s and nodes/s per analysis, time per node against graph
size, and the cost of all five analyses relative to building the graph.

Corpus: by default the one of ``benchmarks/build.py`` (the bundled examples, the 1,000 legacy IR files of
``shared/data/legacy-ir`` and the C files of a few PyPI source distributions, from its cache), built into graphs
with this project's builder (timed: the denominator of the ratio); or LLVM IR files / directories / ``.tar.bz2``
archives given as arguments; or prebuilt ``*.pb`` ProgramGraph files with ``--graphs DIR`` (e.g. graphs of the
original ``llvm2graph-10``; then no build time and no ratio).

Per graph: build the columnar view once, then run each analysis with its default root sample (up to 10 roots,
seed 0) through ``analyze_arrays`` (numpy labels; the analysis's per-graph initialisation included), and separately
encode the records to wire bytes (``labels_to_bytes``: what a label file holds) and parse them into the
``ProgramGraphFeaturesList`` message that ``df.analyze`` returns (and free it): a floor under the natural call. A
graph on which an analysis raises ``AnalysisError`` (no eligible root; dominance or liveness past the reference's
limits) counts its time but no labels.

The natural call: also per graph, ``df.analyze(graph, a)`` once per analysis on the
``ProgramGraph`` itself, as a user writes it (view cache cleared first, so the one view build is counted), with its
peak RSS growth (Linux: ``/proc/self/clear_refs`` resets the high-water mark, ``VmHWM`` reads it) in bytes per node
 ``--big-function N`` adds a generated function of N instructions in one loop (3N nodes;
N = 160000 gives a 478k-node graph).

The natural call by analysis: each of the five calls is timed, and the view the first one builds
(a private copy of the graph and its columns, ``df.cached_view``) is timed once more on its own, after the calls, so
that it can be shown as a row of its own rather than as part of the first analysis; the cost of one analysis per
root is its calls' time (``AnalysisError`` included) over the roots it labelled.

Targets: time per node per root flat in graph size; all five analyses (10 roots each) no slower than the build;
the natural call no slower than the build (the ``TARGET`` line: natural five / build <= 1.0); peak RSS per node a
small multiple of the graph's own size.

    python benchmarks/dataflow.py --plot bench-results/dataflow.png       # the build benchmark's corpus
    python benchmarks/dataflow.py path/to/ir/ --limit 200
    python benchmarks/dataflow.py --graphs graphs/                         # prebuilt graphs
    python benchmarks/dataflow.py --big-function 160000 --no-corpus        # one 480k-node function alone
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import platform
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import programl.dataflow as df  # noqa: E402
from programl.proto import ProgramGraph, ProgramGraphFeaturesList  # noqa: E402


def _ir_inputs(paths: list[str], limit: int | None):
    """Yield ``(name, ir_text)`` from ``.ll`` files, directories of them, or ``.tar.bz2``/``.tar.gz`` archives."""
    count = 0
    for p in paths:
        path = Path(p)
        if path.name.endswith((".tar.bz2", ".tar.gz", ".tbz2", ".tgz")):
            with tarfile.open(path) as tar:
                members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".ll")), key=str)
                for member in members:
                    yield member.name, tar.extractfile(member).read().decode()
                    count += 1
                    if limit and count >= limit:
                        return
            continue
        files = sorted(path.rglob("*.ll")) if path.is_dir() else [path]
        for f in files:
            yield str(f), f.read_text()
            count += 1
            if limit and count >= limit:
                return


def _build_corpus(cache: Path, limit: int | None):
    """The corpus of benchmarks/build.py: ``(name, ir_text)`` (at most ``limit`` per part)."""
    from benchmarks.build import example_corpus, find_clang14, legacy_corpus, sdist_corpus

    clang14 = find_clang14()
    parts = [example_corpus(clang14), legacy_corpus(), sdist_corpus(cache, clang14)[0]]
    for part in parts:
        for corpus, name, ir in part[:limit] if limit else part:
            yield f"{corpus}/{name}", ir


def _graph_inputs(directory: str, limit: int | None):
    files = sorted(Path(directory).rglob("*.pb"))
    for f in files[:limit] if limit else files:
        yield str(f), ProgramGraph.FromString(f.read_bytes())


def big_function_ir(n: int) -> str:
    """One function whose loop body is a chain of ``n`` arithmetic instructions, each with its own constant."""
    lines = [
        "define i64 @f(i64 %n) {",
        "entry:",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [ 0, %entry ], [ %inext, %loop ]",
        f"  %x0 = phi i64 [ 1, %entry ], [ %x{n}, %loop ]",
    ]
    ops = ("add", "xor", "mul", "sub")
    lines += [f"  %x{k} = {ops[k % 4]} i64 %x{k - 1}, {k + 7}" for k in range(1, n + 1)]
    lines += [
        "  %inext = add i64 %i, 1",
        "  %c = icmp slt i64 %inext, %n",
        "  br i1 %c, label %loop, label %exit",
        "exit:",
        f"  ret i64 %x{n}",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _reset_peak_rss() -> int | None:
    """Reset the process's RSS high-water mark and return the current RSS in bytes (None where unsupported)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_bytes("VmRSS")
    except OSError:
        return None


def _status_bytes(field: str) -> int | None:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return None


def _natural(graph, max_roots: int, seed: int, now) -> dict:
    """``df.analyze(graph, a)`` for each analysis, as a user calls it: seconds in all and per call, roots labelled
    per call (None: ``AnalysisError``), peak RSS growth (bytes), and the seconds of the view the first call builds
    (timed again on its own afterwards)."""
    df.clear_view_cache()
    gc.collect()
    base = _reset_peak_rss()
    calls, roots = {}, {}
    for analysis in df.ANALYSES:
        t = now()
        try:
            labels = df.analyze(graph, analysis, max_roots=max_roots, seed=seed)
        except df.AnalysisError:
            labels = None
        roots[analysis] = None if labels is None else len(labels.graph)
        del labels  # freed inside the call's time, as a caller that keeps nothing would
        calls[analysis] = now() - t
    peak = _status_bytes("VmHWM") if base is not None else None
    df.clear_view_cache()
    t = now()
    df.cached_view(graph)
    view = now() - t
    df.clear_view_cache()
    return {
        "s": sum(calls.values()),
        "peak_rss_bytes": peak - base if peak is not None else None,
        "view_s": view,
        "calls_s": calls,
        "roots": roots,
    }


def _clock(kind: str):
    return time.process_time if kind == "process" else time.perf_counter


def run(args) -> dict:
    now = _clock(args.clock)
    builder = None
    if not args.graphs:
        try:
            from programl.graph_builder.llvm import graph_from_ir as builder
        except ImportError as error:
            raise SystemExit(f"the graph builder is not available ({error}); use --graphs DIR") from None
    rows = []
    if args.no_corpus:
        inputs = iter(())
    elif args.graphs:
        inputs = _graph_inputs(args.graphs, args.limit)
    elif args.inputs:
        inputs = _ir_inputs(args.inputs, args.limit)
    else:
        inputs = _build_corpus(args.cache, args.limit)
    if args.big_function:
        if builder is None:
            raise SystemExit("--big-function needs the graph builder (not --graphs)")
        inputs = itertools.chain(inputs, [(f"big-function-{args.big_function}", big_function_ir(args.big_function))])
    for name, item in inputs:
        gc.collect()
        row = {"name": name}
        if builder is not None:
            t = now()
            try:
                graph = builder(item)
            except Exception as error:  # noqa: BLE001 - a failed build is reported, not fatal
                print(f"build failed: {name}: {error}", file=sys.stderr)
                continue
            row["build_s"] = now() - t
        else:
            graph = item
        row["nodes"] = len(graph.node)
        row["edges"] = len(graph.edge)
        t = now()
        view = df.GraphView.from_graph(graph)
        row["view_s"] = now() - t
        for analysis in df.ANALYSES:
            t = now()
            try:
                result = df.analyze_arrays(view, analysis, max_roots=args.max_roots, seed=args.seed)
                error = None
            except df.AnalysisError as e:
                result, error = None, str(e)
            elapsed = now() - t
            entry = {"s": elapsed, "roots": len(result) if result else 0, "error": error}
            if result is not None:
                t = now()
                data = df.labels_to_bytes(result)
                entry["encode_s"] = now() - t
                t = now()
                message = ProgramGraphFeaturesList.FromString(data)
                del message, data
                entry["parse_s"] = now() - t  # what the natural call cannot avoid: its result is this message
            row[analysis] = entry
        del view
        natural = _natural(graph, args.max_roots, args.seed, now)
        row["natural_s"], row["natural_peak_rss_bytes"] = natural["s"], natural["peak_rss_bytes"]
        row["natural"] = natural
        rows.append(row)
        if args.verbose:
            print(
                name,
                row["nodes"],
                " ".join(f"{a[:5]}={row[a]['s'] * 1e3:.1f}ms" for a in df.ANALYSES),
                f"natural={row['natural_s'] * 1e3:.1f}ms",
                f"rss/node={_per_node(row):.0f}B" if row["natural_peak_rss_bytes"] is not None else "",
            )
    return summarize(rows, args, builder is not None)


def _natural_by_analysis(rows: list[dict]) -> dict:
    """Seconds, roots and cost per root of each natural call; the view the first call builds is its own row (and
    is taken out of the first analysis's seconds)."""
    view = float(sum(r["natural"]["view_s"] for r in rows))
    out = {"view": {"seconds": view, "graphs": len(rows), "us_per_node": 1e6 * view / sum(r["nodes"] for r in rows)}}
    for k, a in enumerate(df.ANALYSES):
        secs = sum(r["natural"]["calls_s"][a] - (r["natural"]["view_s"] if k == 0 else 0.0) for r in rows)
        done = [r for r in rows if r["natural"]["roots"][a]]
        roots = sum(r["natural"]["roots"][a] for r in done)
        node_roots = sum(r["nodes"] * r["natural"]["roots"][a] for r in done)
        out[a] = {
            "seconds": float(secs),
            "graphs_labelled": len(done),
            "graphs_failed": sum(1 for r in rows if r["natural"]["roots"][a] is None),
            "roots": int(roots),
            "us_per_root": 1e6 * secs / roots if roots else None,
            "us_per_node_per_root": 1e6 * secs / node_roots if node_roots else None,
        }
    return out


def _band(rows: list[dict], lo: int, hi: int | None) -> dict:
    """Natural five / build over the graphs of ``lo <= nodes < hi``."""
    chosen = [r for r in rows if r["nodes"] >= lo and (hi is None or r["nodes"] < hi)]
    build = sum(r["build_s"] for r in chosen)
    natural = sum(r["natural_s"] for r in chosen)
    return {
        "nodes_from": lo,
        "nodes_below": hi,
        "graphs": len(chosen),
        "build_seconds": build,
        "natural_five_seconds": natural,
        "natural_five_over_build": natural / build if build else None,
    }


def _per_node(row: dict) -> float:
    return row["natural_peak_rss_bytes"] / row["nodes"]


def _tenths(rows, min_nodes: int):
    """Smallest and largest tenth (by nodes) of the graphs with at least ``min_nodes`` nodes."""
    rows = [r for r in rows if r["nodes"] >= min_nodes] or rows
    order = sorted(range(len(rows)), key=lambda i: rows[i]["nodes"])
    k = max(1, len(order) // 10)
    return [rows[i] for i in order[:k]], [rows[i] for i in order[-k:]]


def summarize(rows: list[dict], args, have_build: bool) -> dict:
    if not rows:
        raise SystemExit("no graphs")
    nodes = np.array([r["nodes"] for r in rows], dtype=np.float64)
    small, large = _tenths(rows, args.min_nodes)
    per_analysis = {}
    for a in df.ANALYSES:
        secs = np.array([r[a]["s"] for r in rows])
        roots = np.array([r[a]["roots"] for r in rows])
        ok = np.array([r[a]["error"] is None for r in rows])
        labels = float((roots * nodes).sum())
        encode = sum(r[a].get("encode_s", 0.0) for r in rows)

        def us_per_node_root(subset, a=a):
            done = [r for r in subset if r[a]["error"] is None and r[a]["roots"]]
            if not done:
                return None
            return 1e6 * sum(r[a]["s"] for r in done) / sum(r["nodes"] * r[a]["roots"] for r in done)

        per_analysis[a] = {
            "seconds": float(secs.sum()),
            "graphs_labelled": int(ok.sum()),
            "graphs_failed": int((~ok).sum()),
            "examples": int(roots.sum()),
            "labels": int(labels),
            "labels_per_s": labels / secs.sum() if secs.sum() else None,
            "nodes_per_s": float(nodes.sum() / secs.sum()) if secs.sum() else None,
            "us_per_node_per_root_smallest_tenth": us_per_node_root(small),
            "us_per_node_per_root_largest_tenth": us_per_node_root(large),
            "encode_seconds": encode,
            "encode_MB_per_s": (2 * 7 * labels / 1e6) / encode if encode else None,
        }
    view_s = float(sum(r["view_s"] for r in rows))
    parse_s = float(sum(r[a].get("parse_s", 0.0) for r in rows for a in df.ANALYSES))
    all_five = view_s + sum(per_analysis[a]["seconds"] for a in df.ANALYSES)
    summary = {
        "graphs": len(rows),
        "nodes": int(nodes.sum()),
        "tenths_over_graphs_with_at_least_nodes": args.min_nodes,
        "nodes_smallest_tenth": [int(min(r["nodes"] for r in small)), int(max(r["nodes"] for r in small))],
        "nodes_largest_tenth": [int(min(r["nodes"] for r in large)), int(max(r["nodes"] for r in large))],
        "view_seconds": view_s,
        "all_five_seconds": all_five,
        "all_five_us_per_node": 1e6 * all_five / nodes.sum(),
        "all_five_us_per_node_smallest_tenth": 1e6
        * sum(r["view_s"] + sum(r[a]["s"] for a in df.ANALYSES) for r in small)
        / sum(r["nodes"] for r in small),
        "all_five_us_per_node_largest_tenth": 1e6
        * sum(r["view_s"] + sum(r[a]["s"] for a in df.ANALYSES) for r in large)
        / sum(r["nodes"] for r in large),
        "analyses": per_analysis,
        "labels_parse_seconds": parse_s,
    }
    natural = float(sum(r["natural_s"] for r in rows))
    summary["natural_five_seconds"] = natural
    summary["natural_five_us_per_node"] = 1e6 * natural / nodes.sum()
    summary["natural_by_analysis"] = _natural_by_analysis(rows)
    if have_build:
        summary["natural_five_over_build_by_size"] = [
            _band(rows, lo, hi) for lo, hi in ((0, 1000), (1000, 60000), (60000, None), (0, 60000), (0, None))
        ]
    measured = [r for r in rows if r["natural_peak_rss_bytes"] is not None and r["nodes"] >= args.rss_min_nodes]
    if measured:
        largest = max(measured, key=lambda r: r["nodes"])
        summary["peak_rss_bytes_per_node"] = {
            "over_graphs_with_at_least_nodes": args.rss_min_nodes,
            "graphs": len(measured),
            "median": float(np.median([_per_node(r) for r in measured])),
            "max": float(max(_per_node(r) for r in measured)),
            "largest_graph": {"name": largest["name"], "nodes": largest["nodes"], "per_node": _per_node(largest)},
        }
    if have_build:
        build = float(sum(r["build_s"] for r in rows))
        summary["build_seconds"] = build
        summary["build_us_per_node"] = 1e6 * build / nodes.sum()
        summary["all_five_over_build"] = all_five / build if build else None
        summary["natural_five_over_build"] = natural / build if build else None
        summary["labels_parse_over_build"] = parse_s / build if build else None
    return {
        "benchmark": "dataflow",
        "corpus": args.graphs or [str(p) for p in args.inputs] or "benchmarks/build.py corpus",
        "limit": args.limit,
        "max_roots": args.max_roots,
        "seed": args.seed,
        "clock": args.clock,
        "python": sys.version.split()[0],
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "summary": summary,
        "graphs": rows,
    }


def print_table(report: dict) -> None:
    s = report["summary"]
    print(f"{s['graphs']} graphs, {s['nodes']} nodes (clock: {report['clock']})")
    print(
        f"size tenths (graphs >= {s['tenths_over_graphs_with_at_least_nodes']} nodes): "
        f"smallest {s['nodes_smallest_tenth'][0]}-{s['nodes_smallest_tenth'][1]} nodes; "
        f"largest {s['nodes_largest_tenth'][0]}-{s['nodes_largest_tenth'][1]} nodes"
    )
    header = (
        f"{'analysis':<15}{'ok':>6}{'failed':>7}{'labels/s':>12}{'nodes/s':>11}"
        f"{'us/node/root small':>20}{'large':>8}{'encode MB/s':>13}"
    )
    print(header)
    print("-" * len(header))

    def fmt(x, spec):
        return format(x, spec) if x is not None else format("-", ">" + spec.split(".")[0])

    for a, m in s["analyses"].items():
        print(
            f"{a:<15}{m['graphs_labelled']:>6}{m['graphs_failed']:>7}{fmt(m['labels_per_s'], '12.3g')}"
            f"{fmt(m['nodes_per_s'], '11.3g')}{fmt(m['us_per_node_per_root_smallest_tenth'], '20.3f')}"
            f"{fmt(m['us_per_node_per_root_largest_tenth'], '8.3f')}{fmt(m['encode_MB_per_s'], '13.0f')}"
        )
    print(
        f"view: {s['view_seconds']:.3f} s; all five (view + 5 analyses): {s['all_five_seconds']:.3f} s = "
        f"{s['all_five_us_per_node']:.2f} us/node (smallest tenth {s['all_five_us_per_node_smallest_tenth']:.2f}, "
        f"largest tenth {s['all_five_us_per_node_largest_tenth']:.2f})"
    )
    if "build_seconds" in s:
        print(
            f"build: {s['build_seconds']:.3f} s = {s['build_us_per_node']:.2f} us/node; "
            f"all five / build = {s['all_five_over_build']:.2f}"
        )
    else:
        print("build: not timed (prebuilt graphs); no all-five/build ratio")
    natural = f"natural call (df.analyze(graph, a) x5): {s['natural_five_seconds']:.3f} s"
    if s.get("natural_five_over_build") is not None:
        natural += f"; natural five / build = {s['natural_five_over_build']:.2f}"
    print(natural)
    by = s["natural_by_analysis"]
    build = s.get("build_seconds")
    header = f"{'natural call':<26}{'graphs':>7}{'failed':>7}{'roots':>8}{'seconds':>9}{'us/root':>9}"
    header += f"{'us/node/root':>13}" + (f"{'/ build':>9}" if build else "")
    print(header)
    print("-" * len(header))
    view = by["view"]
    line = f"{'view (built by 1st call)':<26}{view['graphs']:>7}{'':>7}{'':>8}{view['seconds']:>9.3f}{'':>9}{'':>13}"
    print(line + (f"{view['seconds'] / build:>9.3f}" if build else ""))
    for a in df.ANALYSES:
        m = by[a]
        line = (
            f"{a:<26}{m['graphs_labelled']:>7}{m['graphs_failed']:>7}{m['roots']:>8}{m['seconds']:>9.3f}"
            f"{_fmt(m['us_per_root'], '9.1f')}{_fmt(m['us_per_node_per_root'], '13.3f')}"
        )
        print(line + (f"{m['seconds'] / build:>9.3f}" if build else ""))
    if build:
        bands = ", ".join(
            f"{b['nodes_from']}-{b['nodes_below'] or 'max'} nodes ({b['graphs']} graphs): "
            f"{_fmt(b['natural_five_over_build'], '.2f').strip()}"
            for b in s["natural_five_over_build_by_size"]
        )
        print(f"natural five / build by size: {bands}")
        print(
            f"floor: parsing (and freeing) the ProgramGraphFeaturesList messages the five calls return: "
            f"{s['labels_parse_seconds']:.3f} s = {s['labels_parse_over_build']:.2f} of build"
        )
        ratio = s["natural_five_over_build"]
        verdict = "met" if ratio <= 1.0 else "missed"
        print(f"TARGET natural five / build = {ratio:.2f} (target <= 1.0: {verdict})")
    rss = s.get("peak_rss_bytes_per_node")
    if rss:
        big = rss["largest_graph"]
        print(
            f"peak RSS growth of the natural call, bytes/node over {rss['graphs']} graphs >= "
            f"{rss['over_graphs_with_at_least_nodes']} nodes: median {rss['median']:.0f}, max {rss['max']:.0f}; "
            f"largest ({big['name']}, {big['nodes']} nodes): {big['per_node']:.0f}"
        )


def _fmt(x, spec: str) -> str:
    return format(x, spec) if x is not None else format("-", ">" + spec.split(".")[0])


def plot(report: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["graphs"]
    fig, ax = plt.subplots(figsize=(7, 5))
    for a in df.ANALYSES:
        xs = [r["nodes"] for r in rows if r[a]["error"] is None]
        ys = [r[a]["s"] * 1e3 for r in rows if r[a]["error"] is None]
        dots = ax.scatter(xs, ys, s=6, label=a, alpha=0.6)
        failed = [(r["nodes"], r[a]["s"] * 1e3) for r in rows if r[a]["error"] is not None]
        if failed:  # AnalysisError (no root, or the reference's limits): time spent until the error
            ax.scatter(*zip(*failed, strict=True), s=14, marker="x", color=dots.get_facecolor()[0], alpha=0.8)
    if any("build_s" in r for r in rows):
        ax.scatter([r["nodes"] for r in rows], [r["build_s"] * 1e3 for r in rows], s=6, c="k", label="build")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("graph nodes")
    ax.set_ylabel("time per graph (ms, up to 10 roots)")
    ax.set_title("programl.dataflow: analysis time vs graph size (x: AnalysisError)")
    ax.legend(markerscale=3)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="IR files, directories or .tar.bz2 archives of .ll (default: see above)")
    p.add_argument("--graphs", help="directory of prebuilt *.pb ProgramGraph files (no build timing)")
    p.add_argument("--limit", type=int, help="at most this many inputs (per part of the default corpus)")
    p.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "programl" / "bench-build",
        help="benchmarks/build.py's cache of PyPI C files compiled to IR",
    )
    p.add_argument("--max-roots", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--min-nodes",
        type=int,
        default=100,
        help="size tenths only over graphs this large (fixed costs rule below)",
    )
    p.add_argument("--clock", choices=["process", "wall"], default="process", help="CPU time (default) or wall")
    p.add_argument("--no-corpus", action="store_true", help="no corpus (with --big-function: that graph alone)")
    p.add_argument("--big-function", type=int, default=0, metavar="N", help="add a generated N-instruction function")
    p.add_argument(
        "--rss-min-nodes", type=int, default=10000, help="peak RSS per node only over graphs this large (page noise)"
    )
    p.add_argument("--out", default="bench-results/dataflow.json", help="JSON report path")
    p.add_argument("--plot", help="PNG of time against graph size per analysis")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    report = run(args)
    print_table(report)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"wrote {out}")
    if args.plot:
        plot(report, args.plot)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
