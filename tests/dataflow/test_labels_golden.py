"""The labels stay byte-identical while the natural call is made faster (issue 38 item 1).

``labels_golden.json`` holds, for every input below, the first 16 hex digits of the sha256 of its graph and, for each
analysis and root sample, of the labels (``df.analyze(graph, a, ...).SerializeToString(deterministic=True)``, or the
``AnalysisError`` message), as the code made them before the speed work. Two root samples: the default one (seed 0,
up to 10 roots, the natural call) and seed 1 without a cap on the roots (``ceil(eligible / 10)`` of them).

Inputs (real graphs of our builder):

* ``tests/data/byte_identity_ir.tar.xz``: the 35 C/C++ programs of ``tests/data/programs`` compiled once by clang-22
  at -O0 and -O2 (and four at -O2 -g);
* one generated function of 2,100 instructions in one loop (``benchmarks/dataflow.py --big-function``; the default
  sample only): more than :data:`~programl.dataflow.liveness.DENSE_VALUES` values, so liveness takes its chunked path;
* every 30th of the first 300 of the 1,000 legacy IR files of ``../shared/data/legacy-ir`` (skipped when absent).

The graph digests are checked first, so a changed builder is told apart from changed labels. Regenerate (only when a
change of output is intended): ``.venv/bin/python -m tests.dataflow.test_labels_golden``.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

import pytest

import programl.dataflow as df
from benchmarks.dataflow import big_function_ir
from programl.graph_builder.llvm import graph_from_ir
from tests.conftest import SHARED_DATA, TESTS_DATA

DIGESTS = Path(__file__).with_name("labels_golden.json")
FROZEN_IR = TESTS_DATA / "byte_identity_ir.tar.xz"
LEGACY_IR = SHARED_DATA / "legacy-ir" / "llvm_ir.tar.bz2"
SAMPLES = {"default": {}, "seed1-all": {"seed": 1, "max_roots": None}}
BIG_FUNCTION = 2100


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def digests_of(text: str, name: str) -> dict[str, str]:
    """Digest of the graph, and of each analysis's labels for each root sample (natural call: the ProgramGraph)."""
    graph = graph_from_ir(text, module_name=name)
    out = {"graph": _digest(graph.SerializeToString(deterministic=True))}
    for sample, kwargs in SAMPLES.items():
        if name.startswith("big-function") and sample != "default":
            continue
        for analysis in df.ANALYSES:
            try:
                labels = df.analyze(graph, analysis, **kwargs).SerializeToString(deterministic=True)
                out[f"{analysis}/{sample}"] = _digest(labels)
            except df.AnalysisError as error:
                out[f"{analysis}/{sample}"] = f"AnalysisError: {error}"
    return out


def bundled_inputs() -> dict[str, str]:
    inputs = {}
    with tarfile.open(FROZEN_IR) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            inputs[f"frozen/{member.name}"] = tar.extractfile(member).read().decode("utf-8")
    inputs[f"big-function-{BIG_FUNCTION}"] = big_function_ir(BIG_FUNCTION)
    return inputs


def legacy_inputs() -> dict[str, str]:
    wanted = {f"{i:03d}.ll" for i in range(0, 300, 30)}
    inputs = {}
    with tarfile.open(LEGACY_IR) as tar:  # one pass, stopping after the last wanted file (bz2 cannot seek back)
        for member in tar:
            if member.name in wanted:
                inputs[f"legacy/{member.name}"] = tar.extractfile(member).read().decode("utf-8")
                if len(inputs) == len(wanted):
                    break
    return dict(sorted(inputs.items()))


def check(inputs: dict[str, str]) -> None:
    wanted = json.loads(DIGESTS.read_text())
    assert set(inputs) <= set(wanted)
    graphs, labels = [], []
    for name, text in inputs.items():
        got = digests_of(text, name)
        if got["graph"] != wanted[name]["graph"]:
            graphs.append(name)
            continue
        labels += [f"{name} ({key})" for key, value in got.items() if value != wanted[name][key]]
    assert not graphs, f"the builder's graphs changed (not the labels): {', '.join(graphs[:20])}"
    assert not labels, f"labels changed: {', '.join(labels[:20])}"


def test_labels_of_bundled_graphs_are_byte_identical() -> None:
    check(bundled_inputs())


def test_labels_of_legacy_graphs_are_byte_identical() -> None:
    if not LEGACY_IR.is_file():
        pytest.skip(f"legacy IR corpus not found at {LEGACY_IR}")
    check(legacy_inputs())


def test_view_and_natural_call_agree() -> None:
    # the prebuilt-view path (analyze_arrays + labels_to_bytes) and the natural call give the same bytes
    inputs = bundled_inputs()
    for name in ("frozen/switch_dense.c.O0.ll", "frozen/templates.cc.O2.ll"):
        graph = graph_from_ir(inputs[name])
        view = df.GraphView.from_graph(graph)
        for analysis in df.ANALYSES:
            natural = df.analyze(graph, analysis).SerializeToString(deterministic=True)
            assert df.labels_to_bytes(df.analyze_arrays(view, analysis)) == natural


def main() -> None:
    inputs = bundled_inputs()
    if LEGACY_IR.is_file():
        inputs.update(legacy_inputs())
    DIGESTS.write_text(json.dumps({name: digests_of(text, name) for name, text in inputs.items()}, indent=1) + "\n")
    print(f"wrote {DIGESTS} ({len(inputs)} inputs)")


if __name__ == "__main__":
    main()
