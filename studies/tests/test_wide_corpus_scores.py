"""studies/wide_corpus_scores.py end to end (issue 36 item 4): the shipped models scored per source of a tiny
DeepDataFlow data set (tests/data/_ddf.py, no compiler needed; its sources are its files)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.data._ddf import tiny_dataset  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "wide_corpus_scores.py"


@pytest.fixture(scope="module")
def script():
    return runpy.run_path(str(SCRIPT), run_name="wide_corpus_scores")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return tiny_dataset(tmp_path_factory.mktemp("tiny"))


def test_every_example_of_every_source_is_scored_once(script, dataset: Path, tmp_path: Path, capsys) -> None:
    from programl.datasets import DeepDataFlow
    from programl.pretrained import pretrained

    out = tmp_path / "scores.json"
    argv = [str(dataset), "--analyses", "datadep", "--per-source", "1000", "--tests", "30:30", "3:all"]
    assert script["main"]([*argv, "--threads", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    cells = result["analyses"]["datadep"]
    vocabulary = pretrained("datadep").directory / "vocab.csv"
    for limit, test in ((30, "T30"), (None, "T3")):
        expected: dict[str, int] = {}
        for split in ("train", "val", "test"):
            data = DeepDataFlow.from_directory(dataset, "datadep", split, max_steps=limit, vocabulary_path=vocabulary)
            for i in range(len(data)):
                source = script["source_of"](data.graph_name(i))
                expected[source] = expected.get(source, 0) + 1
        assert {s: c[test]["examples"] for s, c in cells.items() if test in c} == expected
        for cell in (c[test] for c in cells.values()):
            assert 0.0 <= cell["f1"] <= 1.0 and 0.0 <= cell["pooled_f1"] <= 1.0 and cell["limit"] == limit
    table = capsys.readouterr().out
    assert table.startswith("| source | datadep T=30 DDF-30 | datadep T=3 all |")
    assert all(f"| {source} |" in table for source in cells)


def test_a_sample_is_seeded_and_capped(script, dataset: Path, tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.json"
        argv = [str(dataset), "--analyses", "reachability", "--per-source", "2", "--tests", "30:all"]
        assert script["main"]([*argv, "--threads", "1", "--json", str(out)]) == 0
        runs.append(json.loads(out.read_text())["analyses"]["reachability"])
    assert runs[0] == runs[1]
    assert all(1 <= cell["T30"]["examples"] <= 2 for cell in runs[0].values())
    assert script["source_of"]("zstd.lib_compress_zstd_lazy.clang14-O2.c") == "zstd"
    assert script["source_of"]("poj104_3.17.0") == "poj104"


def test_step_free_variants_until_stable(script, dataset: Path, tmp_path: Path, capsys) -> None:
    """--step-free: each analysis's NAME-step-free model, 'stable' tests run it until stable; an analysis without a
    variant (liveness) is left out with a note."""
    out = tmp_path / "stable.json"
    argv = [str(dataset), "--analyses", "datadep", "liveness", "--step-free", "--tests", "stable:all", "30:30"]
    assert script["main"]([*argv, "--threads", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["models"] == {"datadep": "datadep-step-free"} and list(result["analyses"]) == ["datadep"]
    cells = result["analyses"]["datadep"]
    assert all(c["Tstable"]["limit"] is None and 0 <= c["Tstable"]["f1"] <= 1 for c in cells.values())
    captured = capsys.readouterr()
    assert "liveness-step-free: not installed; left out" in captured.err
    assert captured.out.startswith("| source | datadep until stable all | datadep T=30 DDF-30 |")


def test_a_named_model_on_chosen_splits(script, dataset: Path, tmp_path: Path) -> None:
    """--model scores that model for its own analysis (liveness-floods: liveness); --splits draws only from them."""
    from programl.datasets import DeepDataFlow
    from programl.pretrained import pretrained

    out = tmp_path / "floods.json"
    argv = [str(dataset), "--model", "liveness-floods", "--per-source", "1000", "--tests", "30:all", "--splits", "test"]
    assert script["main"]([*argv, "--threads", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["models"] == {"liveness": "liveness-floods"} and result["splits"] == ["test"]
    vocabulary = pretrained("liveness-floods").directory / "vocab.csv"
    data = DeepDataFlow.from_directory(dataset, "liveness", "test", max_steps=None, vocabulary_path=vocabulary)
    assert sum(c["T30"]["examples"] for c in result["analyses"]["liveness"].values()) == len(data) > 0
    assert all(c["T30"]["splits"] == ["test"] for c in result["analyses"]["liveness"].values())
