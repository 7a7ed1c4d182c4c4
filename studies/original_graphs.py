#!/usr/bin/env python3
"""The shipped data-flow models on graphs built by the original ProGraML 0.3.2 (issue 36 item 5, "Graphs of the
original"; SPEC Policy 1, §4, §6.1; docs/llvm22.md).

Held-out programs: a seeded sample of the C and C++ files of the wide corpus (``data/ddf22-wide``: zstd,
Brotli, Lua, Box2D, Chipmunk, ERFA, PyCryptodome; code the shipped models, trained on DeepDataFlow-22, never saw),
compiled by clang-14 at the level and with the flags the corpus manifest records, to IR that LLVM 10 reads
(``-Xclang -disable-noundef-analysis``, then ``noundef``/``mustprogress``/``willreturn`` stripped, as the
differential tests do: ``tests/graph_builder/reference.py``). Each IR text is built twice:

* ``ours``: by this project (LLVM 22);
* ``original``: by ProGraML 0.3.2's ``llvm2graph-10`` (a subprocess; LLVM 10 texts such as ``i32*``).

Each graph is labelled by this project's analyses (:func:`programl.dataflow.analyze.analyze_arrays`, seed 0: the
roots ``programl analyze`` and ``programl predict`` sample), and the shipped model of each analysis predicts the
labels of the same roots through :func:`programl.tasks.dataflow.predict.predict_dataflow` (the code path of
``programl predict dataflow``) at T=30 steps: on ``ours``, on ``original`` with the typed-pointer texts mapped to
LLVM 22's (``--typed-pointers auto``, the default) and with them kept (``keep``, the behaviour before). Per
analysis: the F1 of the positive class over all (root, node) pairs of the examples (one confusion matrix), on
DDF-30 (examples of at most 30 steps) and on all examples, and the difference to ``ours``; the target of the issue
is |difference| <= 0.005 with the mapping.

Also counted: the instructions in dead blocks (reached by no control edge from their function's entry: clang
keeps a block after ``unreachable`` or ``return`` at -O0) and the false positives the models give there.

Usage (needs ``make reference``: llvm2graph-10 and clang-14; 12 min for 48 files on two loaded cores, the
measurement of studies/history/results-history.md "Graphs of the original")::

    nice -n 10 .venv/bin/python studies/original_graphs.py --count 48 --max-nodes 2000 --json original_graphs.json

``--predict-defaults`` scores what ``programl predict dataflow`` runs when given no ``--model`` and no ``--steps``
(the issue's "done when"): each analysis's step-free variant where one is installed, with its own inference (until
stable, or T=30 over the control floods for liveness). The row ``all, same roots`` counts only the graphs whose
sampled roots were found in both graphs, so that both sides label the same (root, node) pairs.
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.dataflow.analyze import analyze_arrays  # noqa: E402
from programl.dataflow.names import ANALYSES  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from programl.graph_builder.compare import normalize_function_name  # noqa: E402
from programl.graph_builder.llvm import graph_from_ir  # noqa: E402
from programl.io.typed_pointers import has_typed_pointer_texts, llvm22_text  # noqa: E402
from programl.proto import Edge, Node  # noqa: E402
from tests.graph_builder.reference import find_clang14, find_llvm2graph, llvm10_ir, reference_graph  # noqa: E402

CORPUS = Path("data/ddf22-wide")
WAYS = (("ours", "auto"), ("original", "auto"), ("original", "keep"))


def sample(manifest: Path, count: int, max_nodes: int, seed: int) -> list[dict]:
    """A seeded sample of the corpus's clang-14 C/C++ inputs, as even over the sources as they allow."""
    rows = []
    for line in manifest.read_text().splitlines():
        row = json.loads(line)
        if "@clang-14" in row.get("language", "") and row.get("status") == "ok" and 50 <= row["nodes"] <= max_nodes:
            rows.append(row)
    rows.sort(key=lambda r: r["name"])
    by_source: dict[str, list[dict]] = {}
    for i in np.random.default_rng(seed).permutation(len(rows)):
        by_source.setdefault(rows[i]["name"].split(".", 1)[0], []).append(rows[i])
    out, queues = [], sorted(by_source.items())
    while len(out) < count and any(q for _, q in queues):
        for _, queue in queues:
            if queue and len(out) < count:
                out.append(queue.pop())
    return out


def source_path(row: dict, corpus: Path) -> Path | None:
    """``downloads/zstd.tar.xz:lib/x.c`` -> the file in the unpacked archive under ``<corpus>/sources/archives``."""
    archive, relative = row["source"].split(":", 1)
    found = glob.glob(str(corpus / "sources" / "archives" / f"{glob.escape(Path(archive).name)}-*" / "*" / relative))
    return Path(found[0]) if found else None


def dead_instructions(graph) -> np.ndarray:
    """Instruction nodes that no control edge reaches from their function's entry (dead blocks), as a mask."""
    n = len(graph.node)
    succ: list[list[int]] = [[] for _ in range(n)]
    entries = []
    for e in graph.edge:
        if e.flow == Edge.CONTROL:
            succ[e.source].append(e.target)
        elif e.flow == Edge.CALL and e.source == 0:
            entries.append(e.target)
    seen = np.zeros(n, dtype=bool)
    stack = list(entries)
    seen[stack] = True
    while stack:
        for t in succ[stack.pop()]:
            if not seen[t]:
                seen[t] = True
                stack.append(t)
    mask = np.array([nd.type == Node.INSTRUCTION and nd.text != "; undefined function" for nd in graph.node])
    mask[0] = False
    return mask & ~seen


def _keyed_nodes(graph) -> dict[tuple, int]:
    """(function name, ordinal) -> node, for the instructions and instruction-result variables of each function
    whose sequence of such nodes (types, instruction texts) is ``signature[function]``; see :func:`match_nodes`."""
    has_producer = np.zeros(len(graph.node), dtype=bool)
    for e in graph.edge:
        if e.flow == Edge.DATA:
            has_producer[e.target] = True
    names = [normalize_function_name(f.name) for f in graph.function]
    per_function: dict[str, list[tuple[int, tuple]]] = {}
    for i, node in enumerate(graph.node):
        if i == 0 or node.text == "; undefined function":
            continue
        if node.type == Node.INSTRUCTION or (node.type == Node.VARIABLE and has_producer[i]):
            item = (node.type, node.text if node.type == Node.INSTRUCTION else llvm22_text(node.text))
            per_function.setdefault(names[node.function], []).append((i, item))
    return per_function


def match_nodes(original, ours) -> dict[int, int]:
    """Node of ``ours`` -> the same node of ``original`` (built from the same IR), for the instructions and
    instruction-result variables of every function whose such nodes agree in order, type and text (both builders
    emit them in IR order, SPEC §1.5); constants and arguments, ordered by hash maps in the original, are left out."""
    a, b = _keyed_nodes(original), _keyed_nodes(ours)
    out = {}
    for function, nodes in b.items():
        theirs = a.get(function)
        if theirs is None:
            continue
        if [x for _, x in theirs] == [x for _, x in nodes]:
            out.update({mine: other for (mine, _), (other, _) in zip(nodes, theirs)})
            continue
        # an LLVM 22 effect on the variables (lifetime markers take the alloca): the instructions alone, in order
        mine_i = [(i, x) for i, x in nodes if x[0] == Node.INSTRUCTION]
        theirs_i = [(i, x) for i, x in theirs if x[0] == Node.INSTRUCTION]
        if [x for _, x in theirs_i] == [x for _, x in mine_i]:
            out.update({mine: other for (mine, _), (other, _) in zip(mine_i, theirs_i)})

    # argument variables (datadep roots): by their uses, (matched user, position), when unique in both graphs
    def uses(graph, translate):
        found: dict[int, list] = {}
        for e in graph.edge:
            if e.flow == Edge.DATA and graph.node[e.source].type == Node.VARIABLE:
                found.setdefault(e.source, []).append((translate(e.target), e.position))
        return found

    mine = {i: tuple(sorted(u)) for i, u in uses(ours, lambda t: out.get(t, -1)).items() if i not in out}
    taken = set(out.values())
    theirs = {i: tuple(sorted(u)) for i, u in uses(original, lambda t: t).items() if i not in taken}
    by_signature = Counter(theirs.values())
    index = {v: i for i, v in theirs.items() if by_signature[v] == 1}
    for i, signature in mine.items():
        if -1 not in (t for t, _ in signature) and signature in index:
            out[i] = index[signature]
    return out


class Tally:
    """Confusion counts of one (analysis, way, filter)."""

    def __init__(self) -> None:
        self.tp = self.fp = self.fn = self.examples = 0
        self.dead_fp = 0

    def add(self, predicted: np.ndarray, exact: np.ndarray, dead: np.ndarray) -> None:
        self.tp += int((predicted & exact).sum())
        self.fp += int((predicted & ~exact).sum())
        self.fn += int((~predicted & exact).sum())
        self.dead_fp += int((predicted & ~exact & dead[None, :]).sum())
        self.examples += len(predicted)

    @property
    def f1(self) -> float:
        return 2 * self.tp / (2 * self.tp + self.fp + self.fn) if self.tp else 0.0

    def as_dict(self) -> dict:
        return {
            "examples": self.examples,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "dead_block_fp": self.dead_fp,
            "f1": self.f1,
        }


def predict_default_model(analysis: str) -> str:
    """The shipped model ``programl predict dataflow --analysis ANALYSIS`` runs when given no ``--model`` and no
    ``--steps`` (:meth:`programl.tasks.dataflow.spec.DataflowSpec.predict_default`)."""
    from programl.pretrained.hub import default_pretrained

    name = default_pretrained("dataflow", analysis=analysis)
    if name is None:
        raise SystemExit(f"original_graphs.py: no pretrained {analysis} model is installed")
    return name


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the wide corpus build (manifest.jsonl, sources)")
    parser.add_argument("--count", type=int, default=48, help="IR files (default 48)")
    parser.add_argument("--max-nodes", type=int, default=2_000, help="skip larger inputs (by our graph's size; 2,000)")
    parser.add_argument("--seed", type=int, default=0, help="of the file sample")
    parser.add_argument(
        "--steps",
        default="30",
        help="message-passing steps (default 30); 'model': each model's own inference, as programl predict runs it",
    )
    parser.add_argument(
        "--predict-defaults",
        action="store_true",
        help="score the model programl predict picks for each analysis (its step-free variant where one is "
        "installed) with its own inference (implies --steps model)",
    )
    parser.add_argument("--analysis", action="append", choices=ANALYSES, help="default: all five")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "original-graphs-cache", help="IR cache"
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="ANALYSIS=NAME",
        help="score this model (a shipped name or an exported directory) for ANALYSIS instead of the shipped one, "
        "e.g. liveness=liveness-floods",
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    chosen = dict(item.split("=", 1) for item in args.model)
    if args.predict_defaults:
        args.steps = "model"
    steps = None if args.steps == "model" else int(args.steps)

    binary, clang = find_llvm2graph(), find_clang14()
    if not binary or not clang:
        print("needs llvm2graph-10 and clang-14: make reference", file=sys.stderr)
        return 2
    import torch

    from programl.pretrained.hub import pretrained
    from programl.tasks.dataflow.predict import predict_dataflow

    torch.set_num_threads(1)
    analyses = args.analysis or list(ANALYSES)
    if args.predict_defaults:
        chosen = {**{a: predict_default_model(a) for a in analyses}, **chosen}
    models = {a: pretrained(chosen.get(a, a)) for a in analyses}
    rows = sample(args.corpus / "manifest.jsonl", args.count, args.max_nodes, args.seed)
    args.cache.mkdir(parents=True, exist_ok=True)
    filters = ("ddf30", "all", "ddf30 -O0", "ddf30 -O2", "all, same roots")
    tallies = {(a, w, f): Tally() for a in analyses for w in WAYS for f in filters}
    exact_agreement = {a: [0, 0] for a in analyses}
    texts: dict[str, Counter] = {"ours": Counter(), "original": Counter()}
    failures: Counter = Counter()
    dead_nodes = Counter()
    roots_matched, roots_unmatched = Counter(), Counter()
    agreement = {(a, m): [0, 0] for a in analyses for m in ("auto", "keep")}
    built = 0
    start = time.time()
    for k, row in enumerate(rows):
        cached = args.cache / (row["name"] + ".ll")
        if cached.exists():
            ir = cached.read_text()
        else:
            path = source_path(row, args.corpus)
            if path is None:
                failures["source not found"] += 1
                continue
            try:
                ir = llvm10_ir(path, list(row["flags"]))
            except ProgramlError:
                failures["clang-14 failed"] += 1
                continue
            cached.write_text(ir)
        try:
            graphs = {"original": reference_graph(ir, binary, timeout=120), "ours": graph_from_ir(ir)}
        except Exception as error:  # noqa: BLE001 - counted, the others go on
            failures[f"build failed: {type(error).__name__}"] += 1
            continue
        built += 1
        for way, graph in graphs.items():
            texts[way].update(n.text for n in graph.node)
            dead_nodes[way] += int(dead_instructions(graph).sum())
        matched = match_nodes(graphs["original"], graphs["ours"])
        dead = {way: dead_instructions(graph) for way, graph in graphs.items()}
        for analysis in analyses:
            model = models[analysis]
            try:  # the roots programl analyze / predict sample on our graph, and the same nodes of the original's
                ours = analyze_arrays(graphs["ours"], analysis, seed=0)
            except ProgramlError:
                continue  # no eligible root, or the analysis gave up: as the data sets skip it
            results = {"ours": ours}
            roots = [matched.get(int(r)) for r in ours.roots]
            try:
                if None in roots:
                    raise ProgramlError("a root without its node in the original's graph")
                results["original"] = analyze_arrays(graphs["original"], analysis, roots=roots)
                roots_matched[analysis] += 1
            except ProgramlError:  # the original's own sample instead
                roots_unmatched[analysis] += 1
                try:
                    results["original"] = analyze_arrays(graphs["original"], analysis, seed=0)
                except ProgramlError:
                    continue
            predicted = {}
            for way, mode in WAYS:
                graph, result = graphs[way], results[way]
                prediction = predict_dataflow(model, graph, roots=result.roots, steps=steps, typed_pointers=mode)
                predicted[way, mode] = prediction.predicted
                exact = result.labels.astype(bool)
                short = result.step_counts <= 30
                tallies[analysis, (way, mode), "all"].add(prediction.predicted, exact, dead[way])
                if None not in roots:
                    tallies[analysis, (way, mode), "all, same roots"].add(prediction.predicted, exact, dead[way])
                if short.any():
                    level = "-O0" if "-O0." in row["name"] else "-O2"
                    for filt in ("ddf30", f"ddf30 {level}"):
                        tallies[analysis, (way, mode), filt].add(prediction.predicted[short], exact[short], dead[way])
            if None not in roots:  # the same labels? on the nodes both graphs share
                mine = np.fromiter(matched.keys(), dtype=np.int64)
                theirs = np.fromiter(matched.values(), dtype=np.int64)
                same = results["ours"].labels[:, mine] == results["original"].labels[:, theirs]
                exact_agreement[analysis][0] += int(same.sum())
                exact_agreement[analysis][1] += int(same.size)
                for mode in ("auto", "keep"):
                    same = predicted["ours", "auto"][:, mine] == predicted["original", mode][:, theirs]
                    agreement[analysis, mode][0] += int(same.sum())
                    agreement[analysis, mode][1] += int(same.size)
        if (k + 1) % 10 == 0:
            print(f"{k + 1}/{len(rows)} files, {time.time() - start:.0f} s", file=sys.stderr, flush=True)

    vocabulary = models[analyses[0]].vocabulary
    coverage = {}
    for way, counter in texts.items():
        total = sum(counter.values())
        known = sum(c for t, c in counter.items() if t in vocabulary)
        mapped = sum(c for t, c in counter.items() if llvm22_text(t) in vocabulary)
        typed = sum(c for t, c in counter.items() if t.endswith("*") or "*" in t)
        coverage[way] = {
            "nodes": total,
            "in_vocabulary": known / total,
            "in_vocabulary_mapped": mapped / total,
            "typed_pointer_texts": typed / total,
        }
    inference = f"T={steps}" if steps is not None else "each model's own inference"
    print(f"\n{built} IR files built both ways ({dict(failures) or 'no failures'}); {inference}")
    print("models: " + ", ".join(f"{a} {m.name}" for a, m in models.items()))
    for way, c in coverage.items():
        print(
            f"{way}: {c['nodes']:,} nodes; texts with '*': {c['typed_pointer_texts']:.1%}; in the vocabulary: "
            f"{c['in_vocabulary']:.1%} as they are, {c['in_vocabulary_mapped']:.1%} mapped to LLVM 22 texts; "
            f"dead-block instructions: {dead_nodes[way]:,}"
        )
    print(f"original graphs with typed-pointer texts: detected = {has_typed_pointer_texts(list(texts['original']))}")
    header = (
        "| analysis | filter | examples ours / original | F1 ours | F1 original, mapped | diff "
        "| F1 original, kept | diff |"
    )
    print("\n" + header)
    print("|" + "---|" * 8)
    results = []
    for analysis in analyses:
        for filt in filters:
            ours = tallies[analysis, ("ours", "auto"), filt]
            mapped = tallies[analysis, ("original", "auto"), filt]
            kept = tallies[analysis, ("original", "keep"), filt]
            print(
                f"| {analysis} | {filt.replace('ddf30', 'DDF-30')} | {ours.examples:,} / {mapped.examples:,} | "
                f"{ours.f1:.4f} | {mapped.f1:.4f} | {mapped.f1 - ours.f1:+.4f} | {kept.f1:.4f} | "
                f"{kept.f1 - ours.f1:+.4f} |"
            )
            results.append(
                {
                    "analysis": analysis,
                    "filter": filt,
                    "ours": ours.as_dict(),
                    "original_mapped": mapped.as_dict(),
                    "original_kept": kept.as_dict(),
                }
            )
    print(
        "\nroots: the same nodes in both graphs for "
        + ", ".join(f"{a} {roots_matched[a]} of {roots_matched[a] + roots_unmatched[a]} graphs" for a in analyses)
    )
    print(
        "exact labels (the analysis's) equal on the nodes both graphs share: "
        + ", ".join(f"{a} {s / n:.4%}" for a, (s, n) in exact_agreement.items() if n)
    )
    print("predicted labels equal on the nodes both graphs share (instructions, their variables): mapped / kept")
    for analysis in analyses:
        parts = [agreement[analysis, m] for m in ("auto", "keep")]
        print(f"  {analysis}: " + " / ".join(f"{s / n:.4%} of {n:,}" if n else "-" for s, n in parts))
    print("\nfalse positives on dead-block instructions (all examples): ours / original mapped / original kept")
    for analysis in analyses:
        parts = [tallies[analysis, w, "all"] for w in WAYS]
        print(f"  {analysis}: " + " / ".join(f"{t.dead_fp:,} of {t.fp:,} FP" for t in parts))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "files": built,
                    "failures": dict(failures),
                    "steps": steps if steps is not None else "model",
                    "models": {a: m.name for a, m in models.items()},
                    "coverage": coverage,
                    "dead_block_instructions": dict(dead_nodes),
                    "roots_matched": dict(roots_matched),
                    "roots_unmatched": dict(roots_unmatched),
                    "agreement": {f"{a}/{m}": v for (a, m), v in agreement.items()},
                    "exact_agreement": exact_agreement,
                    "results": results,
                    "seconds": time.time() - start,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
