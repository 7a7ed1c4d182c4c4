"""studies/dataflow_f1_by_distance.py end to end: the shipped liveness model on a tiny DeepDataFlow data set
(tests/data/_ddf.py, no compiler needed): tables, JSON, PNG, the sample and the step filter; one-line errors."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("matplotlib")

from tests.data._ddf import tiny_dataset  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "dataflow_f1_by_distance.py"


@pytest.fixture(scope="module")
def main():
    """The script's ``main(argv)``."""
    return runpy.run_path(str(SCRIPT), run_name="dataflow_f1_by_distance")["main"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return tiny_dataset(tmp_path_factory.mktemp("tiny"))


def liveness_on(dataset: Path, *options: str) -> list[str]:
    """The command line that scores the shipped liveness model on the tiny data set's train split (7 examples)."""
    return ["--model", "liveness", "--dataset", str(dataset), "--split", "train", "-q", *options]


def test_tables_json_and_plot(main, dataset: Path, tmp_path: Path, capsys) -> None:
    out, png = tmp_path / "scores.json", tmp_path / "img" / "scores.png"
    options = ["--max-steps", "all", "--steps", "30", "3", "--threads", "1", "--json", str(out), "--plot", str(png)]
    assert main(liveness_on(dataset, *options)) == 0
    text = capsys.readouterr().out
    assert "T=30, by hops distance" in text and "T=3, by control distance" in text and "beyond 3 hops" in text
    result = json.loads(out.read_text())
    assert result["model"] == "liveness" and result["analysis"] == "liveness" and result["max_steps"] is None
    assert result["examples"] == result["examples_available"] >= 5 and result["seed"] is None
    assert list(result["results"]) == ["T30", "T3"]
    for run in result["results"].values():
        hops, control = run["distances"]["hops"], run["distances"]["control"]
        assert hops["pooled"] == control["pooled"] == run["pooled"]
        positives = run["pooled"]["true_positives"] + run["pooled"]["false_negatives"]
        assert sum(r["true_positives"] + r["false_negatives"] for r in hops["buckets"]) == positives
        assert sum(r["nodes"] for r in control["buckets"]) == result["nodes"]
        assert set(hops["beyond_steps"]) == {"positives", "misses"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sample_filter_and_one_distance(main, dataset: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "s.json"
    assert main(liveness_on(dataset, "--max-examples", "2", "--distance", "control", "--json", str(out))) == 0
    result = json.loads(out.read_text())
    assert result["examples"] == 2 and result["seed"] == 205 and result["max_steps"] == 30
    assert list(result["results"]) == ["T30"] and list(result["results"]["T30"]["distances"]) == ["control"]
    assert "by hops" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--model", "nope"], "error: unknown pretrained model 'nope'"),
        (["--model", "/nonexistent/model"], "error: /nonexistent/model: not a pretrained model"),
        (["--dataset", "/nonexistent/ddf"], "error: /nonexistent/ddf: no such data set"),
        (["--split", "nosuch"], "not a DeepDataFlow data set with liveness labels and a nosuch split"),
    ],
)
def test_one_line_errors(main, dataset: Path, capsys, options, message) -> None:
    assert main(liveness_on(dataset, *options)) == 1  # a later option wins
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_usage_errors(main, dataset: Path, capsys) -> None:
    for bad in (["--max-steps", "many"], ["--max-examples", "-1"], ["--steps", "-2"]):
        with pytest.raises(SystemExit) as exit_info:
            main(liveness_on(dataset, *bad))
        assert exit_info.value.code == 2
    assert "--max-steps" in capsys.readouterr().err
