"""The data-flow models on large graphs: F1 / precision / recall per analysis and per size bucket, the steps each
model takes against the analysis's own iterations, and seconds per root against the exact analysis.

Graphs: ``*.ProgramGraph.pb`` files, ``.ll`` files, or folders of them (e.g. the ``val`` and ``test`` folders of a
``programl dataset build`` of the wide recipe: code the models never trained on). Each graph falls in the bucket of
its node count (default edges 1k, 2k, 5k, 10k, 20k, 50k); graphs outside every bucket are left out.

Per graph and analysis: the roots are the analysis's own seeded sample, at most ``--roots`` of them
(docs/spec/analyses.md#common-rules); the exact labels come from :func:`programl.dataflow.analyze_arrays` (timed:
the exact analysis's seconds per root), the predictions from the model ``programl predict dataflow`` runs by
default for that analysis (or ``--model ANALYSIS=NAME``), through :meth:`PretrainedModel.predict
<programl.pretrained.hub.PretrainedModel.predict>` (timed: the model's seconds per root, the graph's encoding
included). Scores per bucket: precision, recall and F1 pooled over every node of every root, and the mean of the
per-root F1.

Steps against the analysis: a model that runs until it stops (``until_stable``, ``fixpoint``) reports the steps
each root took. The analysis's own iterations are, for reachability, dominance and datadep, its synchronous rounds:
``h = root``, then ``h = root | meet(h)`` over the analysis's edges (control successors, control predecessors with
all of them needed, reversed data edges) until nothing changes, the round that confirms it included
(:func:`synchronous_rounds`; its fixed point is checked against the exact labels, so the count is of the analysis
itself); for liveness and subexpressions the record's ``data_flow_step_count``. The table gives the median and the
largest ratio of the two per bucket.

The reference gives up on the largest functions (dominance after 1,000 set updates, liveness after ``max(2 |V|,
5000)`` work-list pops: docs/spec/analyses.md), and the data sets then hold no labels for them. Here such a graph is
labelled by the same analysis with those limits lifted (``--reference-limits`` keeps them and leaves the graph out);
the table counts the graphs labelled past the limits.

``--max-seconds S`` stops a cell (an analysis in a bucket) once its model time passes S; the table then says how many
of the bucket's roots it scored.

    python benchmarks/dataflow_sizes.py data/ddf22-wide/val data/ddf22-wide/test --json bench-results/sizes.json
    python benchmarks/dataflow_sizes.py examples/*.ll --buckets 10 100 --roots 2    # tiny: the test's run
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from programl.dataflow import ANALYSES, analyze_arrays  # noqa: E402
from programl.dataflow.columnar import cached_view  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402

#: Node-count edges of the buckets: [1k, 2k), [2k, 5k), ...
BUCKETS = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000)
#: The analyses whose iterations :func:`synchronous_rounds` counts.
FLOODS = ("reachability", "dominance", "datadep")


def bucket_name(low: int, high: int) -> str:
    """``1k-2k`` for (1000, 2000); plain numbers below a thousand."""

    def short(n: int) -> str:
        return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)

    return f"{short(low)}-{short(high)}"


def read_graphs(paths: list[str]) -> list[tuple[str, object]]:
    """(name, ProgramGraph) of every graph file and ``.ll`` file named or inside a named folder, in name order."""
    import programl
    from programl.proto import ProgramGraph

    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.name.endswith((".ProgramGraph.pb", ".ll")))
        else:
            files.append(path)
    out = []
    for file in files:
        if file.name.endswith(".ll"):
            graph = programl.from_llvm_ir(file.read_text())
        else:
            graph = ProgramGraph.FromString(file.read_bytes())
        out.append((file.name, graph))
    return out


def synchronous_rounds(graph, analysis: str, root: int) -> tuple[int, np.ndarray]:
    """The analysis's own iterations for one root, and the labels they reach (docs/spec/analyses.md).

    Reachability: ``h = {root}``, then every node with a control predecessor in ``h`` joins. Datadep: the same
    backward over data edges, labelling instructions only. Dominance: a node of the root's function joins when it
    has control predecessors and all of them are in ``h`` (the least fixed point the reference's sweeps reach). The
    count includes the round that changes nothing. The graph's arrays are the analyses' own view of it
    (:func:`programl.dataflow.columnar.cached_view`: built once per graph, not once per root).
    """
    view = cached_view(graph)
    flow, src, dst, n = view.edge_flow, view.edge_src, view.edge_dst, view.num_nodes
    if analysis == "datadep":
        keep = flow == 1
        src, dst = dst[keep], src[keep]
    else:
        keep = flow == 0
        src, dst = src[keep], dst[keep]
    h = np.zeros(n, dtype=bool)
    h[root] = True
    if analysis == "dominance":
        same = view.node_function == view.node_function[root]
        same[0] = False
        indegree = np.bincount(dst, minlength=n)
    rounds = 0
    while True:
        rounds += 1
        count = np.bincount(dst, weights=h[src], minlength=n)
        if analysis == "dominance":
            new = h | (same & (indegree > 0) & (count == indegree))
        else:
            new = h | (count > 0)
        if np.array_equal(new, h):
            break
        h = new
    if analysis == "datadep":
        h = h & (view.node_type == 0)
    return rounds, h


@contextlib.contextmanager
def limits_lifted():
    """The dominance and liveness analyses without the reference's limits, for the duration of the block."""
    import programl.dataflow.dominance as dominance
    import programl.dataflow.liveness as liveness
    from programl.dataflow.columnar import clear_view_cache

    saved = dominance.MAX_STEPS, liveness.MIN_POPS
    dominance.MAX_STEPS = liveness.MIN_POPS = 2**62
    clear_view_cache()  # a graph's view caches the live sets, or the error of the limited run
    try:
        yield
    finally:
        dominance.MAX_STEPS, liveness.MIN_POPS = saved
        clear_view_cache()


def default_models(analyses: list[str], chosen: dict[str, str]) -> dict[str, str]:
    """The model per analysis: ``--model`` where given, else the one ``programl predict dataflow`` runs."""
    from programl.pretrained.hub import default_pretrained

    out = {}
    for analysis in analyses:
        name = chosen.get(analysis) or default_pretrained("dataflow", analysis=analysis)
        if name is None:
            raise ProgramlError(f"no model installed for {analysis}")
        out[analysis] = name
    return out


class Cell:
    """The running scores of one analysis in one bucket."""

    def __init__(self) -> None:
        self.tp = self.fp = self.fn = 0
        self.f1s: list[float] = []
        self.ratios: list[float] = []
        self.model_seconds = self.exact_seconds = 0.0
        self.roots = self.graphs = self.skipped_roots = self.gave_up = self.past_limits = 0
        self.model_steps: list[int] = []
        self.analysis_steps: list[int] = []

    def add(self, predicted: np.ndarray, exact: np.ndarray) -> None:
        for p, e in zip(predicted, exact):
            tp, fp, fn = int((p & e).sum()), int((p & ~e).sum()), int((~p & e).sum())
            self.tp, self.fp, self.fn = self.tp + tp, self.fp + fp, self.fn + fn
            self.f1s.append(1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn))

    def result(self) -> dict:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out = {
            "graphs": self.graphs,
            "roots": self.roots,
            "roots_not_scored": self.skipped_roots,
            "graphs_the_analysis_gave_up": self.gave_up,
            "graphs_labelled_past_the_reference_limits": self.past_limits,
            "precision": round(precision, 6),
            "recall": round(recall, 6),
            "f1": round(f1, 6),
            "mean_root_f1": round(float(np.mean(self.f1s)), 6) if self.f1s else None,
            "min_root_f1": round(float(np.min(self.f1s)), 6) if self.f1s else None,
            "model_seconds_per_root": round(self.model_seconds / max(1, self.roots), 4),
            "exact_seconds_per_root": round(self.exact_seconds / max(1, self.roots), 6),
        }
        if self.ratios:
            out["steps_ratio_median"] = round(float(np.median(self.ratios)), 3)
            out["steps_ratio_max"] = round(float(np.max(self.ratios)), 3)
            out["model_steps_median"] = float(np.median(self.model_steps))
            out["analysis_steps_median"] = float(np.median(self.analysis_steps))
        return out


def score(
    graphs: list[tuple[str, object]],
    analyses: list[str],
    models: dict[str, str],
    *,
    buckets: tuple[int, ...] = BUCKETS,
    roots: int = 4,
    seed: int = 0,
    max_seconds: float | None = None,
    reference_limits: bool = False,
    show=print,
) -> dict:
    """The table: ``{analysis: {bucket: cell}}`` (:meth:`Cell.result`), graphs in the given order."""
    from programl.exceptions import AnalysisError
    from programl.pretrained import pretrained

    loaded = {analysis: pretrained(models[analysis]) for analysis in analyses}
    names = [bucket_name(a, b) for a, b in zip(buckets, buckets[1:])]
    cells = {analysis: {name: Cell() for name in names} for analysis in analyses}
    for index, (file, graph) in enumerate(graphs):
        n = len(graph.node)
        where = [i for i, (a, b) in enumerate(zip(buckets, buckets[1:])) if a <= n < b]
        if not where:
            continue
        bucket = names[where[0]]
        for analysis in analyses:
            cell = cells[analysis][bucket]
            start = time.perf_counter()
            cell_past = False
            try:
                result = analyze_arrays(graph, analysis, max_roots=roots, seed=seed)
            except AnalysisError as error:  # no eligible root, or the reference's limits
                if "No eligible root" in str(error):
                    continue
                if reference_limits:
                    cell.gave_up += 1
                    continue
                start = time.perf_counter()
                with limits_lifted():
                    result = analyze_arrays(graph, analysis, max_roots=roots, seed=seed)
                cell.past_limits += 1
                cell_past = True
            exact_seconds = time.perf_counter() - start
            if max_seconds is not None and cell.model_seconds > max_seconds:
                cell.skipped_roots += len(result.roots)
                continue
            lifted = limits_lifted() if cell_past else contextlib.nullcontext()
            start = time.perf_counter()
            with lifted:  # liveness's eligible roots need its live sets, which stop at the same limit
                prediction = loaded[analysis].predict(graph, roots=result.roots.tolist())
            cell.model_seconds += time.perf_counter() - start
            cell.exact_seconds += exact_seconds
            exact = result.labels.astype(bool)
            cell.add(prediction.predicted, exact)
            cell.graphs += 1
            cell.roots += len(result.roots)
            taken = prediction.steps_taken
            for row, root in enumerate(result.roots.tolist()):
                if analysis in FLOODS:
                    own, fixed = synchronous_rounds(graph, analysis, root)
                    if not np.array_equal(fixed, exact[row]):
                        raise AssertionError(f"{file}: the synchronous {analysis} of root {root} is not the analysis's")
                else:
                    own = int(result.step_counts[row])
                if taken is not None:
                    cell.model_steps.append(int(taken[row]))
                    cell.analysis_steps.append(own)
                    cell.ratios.append(int(taken[row]) / max(1, own))
        show(f"[{index + 1}/{len(graphs)}] {file}: {n:,} nodes ({bucket})")
    return {analysis: {name: cells[analysis][name].result() for name in names} for analysis in analyses}


def table_lines(table: dict, models: dict[str, str]) -> list[str]:
    """The Markdown table: one row per analysis and bucket."""
    lines = [
        "| analysis (model) | bucket | graphs | roots | P | R | F1 | mean / min F1 per root | steps / analysis's "
        "(median, max) | s / root, model | s / root, exact |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for analysis, row in table.items():
        for bucket, c in row.items():
            if not c["roots"]:
                gave_up = c["graphs_the_analysis_gave_up"]
                why = f"the analysis gave up on all {gave_up}" if gave_up else ""
                lines.append(f"| {analysis} ({models[analysis]}) | {bucket} | 0 | 0 | {why} | | | | | | |")
                continue
            steps = (
                f"{c['steps_ratio_median']:.2f}, {c['steps_ratio_max']:.2f}" if "steps_ratio_median" in c else "fixed T"
            )
            roots = f"{c['roots']}" + (f" (+{c['roots_not_scored']} not scored)" if c["roots_not_scored"] else "")
            if c["graphs_labelled_past_the_reference_limits"]:
                roots += f" ({c['graphs_labelled_past_the_reference_limits']} graphs past the limits)"
            lines.append(
                f"| {analysis} ({models[analysis]}) | {bucket} | {c['graphs']} | {roots} | {c['precision']:.3f} | "
                f"{c['recall']:.3f} | {c['f1']:.3f} | {c['mean_root_f1']:.3f} / {c['min_root_f1']:.3f} | {steps} | "
                f"{c['model_seconds_per_root']:.3f} | {c['exact_seconds_per_root']:.4f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="graph files (*.ProgramGraph.pb, .ll) or folders of them")
    parser.add_argument("--analyses", nargs="+", choices=ANALYSES, default=list(ANALYSES))
    parser.add_argument("--model", action="append", default=[], metavar="ANALYSIS=NAME", help="another model")
    parser.add_argument("--buckets", nargs="+", type=int, default=list(BUCKETS), help="node-count edges")
    parser.add_argument("--roots", type=int, default=4, help="most roots per graph and analysis (default 4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the root sample (default 0)")
    parser.add_argument("--max-seconds", type=float, help="stop a cell once its model time passes this")
    parser.add_argument(
        "--reference-limits",
        action="store_true",
        help="leave out the graphs past the reference's dominance and liveness limits instead of labelling them",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--json", help="write the table and its settings here")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    chosen = dict(item.split("=", 1) for item in args.model)
    models = default_models(args.analyses, chosen)
    graphs = read_graphs(args.paths)
    start = time.perf_counter()
    table = score(
        graphs,
        args.analyses,
        models,
        buckets=tuple(sorted(args.buckets)),
        roots=args.roots,
        seed=args.seed,
        max_seconds=args.max_seconds,
        reference_limits=args.reference_limits,
        show=lambda line: print(line, file=sys.stderr),
    )
    seconds = time.perf_counter() - start
    print("\n".join(table_lines(table, models)))
    print(f"{len(graphs)} graphs read; {seconds:.0f} s, {args.threads} thread(s), {platform.processor() or 'cpu'}")
    if args.json:
        settings = {k: v for k, v in vars(args).items() if k not in ("json",)}
        report = {"settings": settings, "models": models, "seconds": round(seconds, 1), "table": table}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
