"""The shipped data-flow models on programs they never saw (issue 11 item 6: "tested on examples"): POJ-104
programs of DeepDataFlow-22's test split (the models' training data; datasets/deepdataflow22), compiled at -O0 as
the data set compiles them, 10 sampled eligible roots each, those within 30 data-flow steps (DDF-30) predicted at
T=30 (every root, until stable, for a step-free variant) and compared node for node with the analysis itself. The models whose model cards reach the paper's F1 are held
to it, less a margin for a small sample."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

import programl  # noqa: E402
from programl.dataflow.analyze import analyze_arrays, eligible_roots  # noqa: E402
from programl.pretrained import pretrained, pretrained_names  # noqa: E402
from programl.tasks.dataflow.spec import STEP_FREE_MODES  # noqa: E402
from programl.util.scores import precision_recall_f1  # noqa: E402

SHARED = Path(os.environ.get("PROGRAML_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))

#: Pooled F1 each model must reach: its model card's test F1 at T=30 (0.999, 0.997, 0.998, 0.955; the root-context
#: subexpressions variant, not the paper's model, 0.9998) less a margin.
# The models they replaced got less: reachability (test F1 0.914) 0.979, datadep (0.837) 0.864 on 230 roots,
# liveness (0.907) 0.916 on 225 roots (the shipped one: 0.957); the shipped reachability model: 0.9994 on 99 roots.
REACHES = {
    "reachability": 0.99,
    "dominance": 0.99,
    "datadep": 0.99,
    "liveness": 0.93,
    "subexpressions-root-context": 0.99,
    # the step-free variants (issue 36 item 2), which run until stable, on every root whatever its step count
    # (measured: datadep 1.000, dominance 0.976, reachability 0.994, subexpressions 1.000 on 187-230 roots; on the same
    # 230 dominance roots the faithful model makes 0.812 at T=30 and 0.956 at T=200: both share the step-free
    # model's false positives, on roots of 277-461 analysis steps)
    "datadep-step-free": 0.99,
    "dominance-step-free": 0.97,
    "reachability-step-free": 0.99,
    "subexpressions-step-free": 0.99,
    # liveness over the control floods (issue 36 item 3), at T=30 on every root whatever its step count (measured:
    # 0.999 on 230 roots, where the faithful model makes 0.957 on its 225 DDF-30 roots)
    "liveness-floods": 0.99,
    # the fixed-point models, to their fixed point on every root (measured: 1.000 on each analysis's roots)
    "reachability-fixpoint": 0.999,
    "dominance-fixpoint": 0.999,
    "datadep-fixpoint": 0.999,
    "subexpressions-fixpoint": 0.99,
}
PROGRAMS = 24  # test-split programs, the first of every fourth class
ROOTS_PER_GRAPH = 10  # a seeded sample of each graph's eligible roots

pytestmark = [
    pytest.mark.skipif(shutil.which("clang-22") is None, reason="clang-22 not installed (apt-get install clang-22)"),
    pytest.mark.skipif(not (SHARED / "poj104" / "poj104.tar.xz").is_file(), reason=f"no POJ-104 archive in {SHARED}"),
]


@pytest.fixture(scope="module")
def graphs() -> list:
    from programl.data.deepdataflow.split import split_groups
    from programl.data.poj104 import compile_program, read_programs
    from programl.exceptions import GraphCreationError

    programs = read_programs(SHARED / "poj104")
    # The data set splits the groups of the inputs that built, 3:1:1 in the order of sha256("204:<group>"). The last
    # tenth of that order over every program is in the test split whichever inputs failed (4 % of them did), so
    # ratios 9:0:1 name programs the models never trained on without rebuilding the data set.
    split = split_groups([f"poj104_{p.id}" for p in programs], seed=204, ratios=(9, 0, 1))
    first: dict[int, object] = {}
    for program in programs:
        if split[f"poj104_{program.id}"] == "test":
            first.setdefault(program.label, program)
    chosen = [first[label] for label in sorted(first)[::4]][:PROGRAMS]
    out = []
    for program in chosen:
        try:
            ir, _ = compile_program(program.text, ("-O0",))
        except GraphCreationError:  # a program that does not compile is left out, as in the data set
            continue
        out.append(programl.from_llvm_ir(ir))
    assert len(out) >= PROGRAMS // 2
    return out


def pooled_scores(name: str, graphs: list) -> tuple[dict[str, float], int]:
    """Pooled precision, recall and F1 of the shipped model ``name`` over the DDF-30 roots of ``graphs`` (every root
    for a step-free variant or the control-flood liveness), and their number."""
    model = pretrained(name)
    limit = None if (model.metadata.get("inference") or {}).get("mode") in STEP_FREE_MODES else 30
    analysis = model.metadata["analysis"]
    tp = fn = fp = roots = 0
    for graph in graphs:
        sample = np.random.default_rng(0).permutation(eligible_roots(graph, analysis))[:ROOTS_PER_GRAPH]
        exact = analyze_arrays(graph, analysis, roots=sorted(sample.tolist()))
        within = exact.step_counts <= (limit if limit is not None else np.inf)
        if not within.any():
            continue
        predicted = model.predict(graph, roots=exact.roots[within].tolist()).predicted
        truth = exact.labels[within].astype(bool)
        tp += int(np.sum(predicted & truth))
        fn += int(np.sum(~predicted & truth))
        fp += int(np.sum(predicted & ~truth))
        roots += int(within.sum())
    return precision_recall_f1(tp, fn, fp), roots


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
@pytest.mark.parametrize("name", sorted(REACHES))
def test_shipped_model_labels_unseen_programs_as_its_card_says(name, graphs) -> None:
    if name not in pretrained_names():
        pytest.skip(f"no {name} model is shipped")
    scores, roots = pooled_scores(name, graphs)
    print(f"{name}: {roots} roots of {len(graphs)} programs, " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
    assert roots >= 20
    assert scores["f1"] >= REACHES[name], scores
