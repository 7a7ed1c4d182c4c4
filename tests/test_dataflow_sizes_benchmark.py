"""benchmarks/dataflow_sizes.py, the large-graph table of the data-flow models, run on a small bundled graph: the
buckets, the scores, the steps against the analysis's own rounds and the seconds per root are all produced, and the
shipped fixed-point models are exact on it and stop within the analysis's rounds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import dataflow_sizes  # noqa: E402


def test_the_table_of_a_small_graph(tmp_path: Path, capsys) -> None:
    out = tmp_path / "sizes.json"
    argv = [str(ROOT / "examples" / "dot_product.ll"), "--buckets", "10", "100", "1000", "--roots", "3"]
    assert dataflow_sizes.main([*argv, "--analyses", "reachability", "dominance", "datadep", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    table = report["table"]
    assert set(table) == {"reachability", "dominance", "datadep"}
    for analysis, row in table.items():
        assert list(row) == ["10-100", "100-1k"]
        small, empty = row["10-100"], row["100-1k"]
        assert empty["roots"] == 0 and small["graphs"] == 1 and 2 <= small["roots"] <= 3  # the analysis's own sample
        assert report["models"][analysis] == f"{analysis}-fixpoint"
        assert small["f1"] == 1.0 and small["min_root_f1"] == 1.0
        # the fixed-point model takes the analysis's own synchronous rounds, no more
        assert small["steps_ratio_max"] == 1.0
        assert small["model_seconds_per_root"] > 0 and small["exact_seconds_per_root"] > 0
    printed = capsys.readouterr().out
    assert "| reachability (reachability-fixpoint) | 10-100 | 1 | 2 | 1.000 | 1.000 | 1.000 |" in printed


def test_bucket_names() -> None:
    assert dataflow_sizes.bucket_name(1000, 2000) == "1k-2k"
    assert dataflow_sizes.bucket_name(20_000, 50_000) == "20k-50k"
    assert dataflow_sizes.bucket_name(10, 100) == "10-100"


def test_a_model_that_runs_at_a_fixed_t_reports_no_ratio(tmp_path: Path) -> None:
    out = tmp_path / "sizes.json"
    argv = [str(ROOT / "examples" / "dot_product.ll"), "--buckets", "10", "100", "--roots", "2"]
    assert (
        dataflow_sizes.main([*argv, "--analyses", "liveness", "--model", "liveness=liveness", "--json", str(out)]) == 0
    )
    cell = json.loads(out.read_text())["table"]["liveness"]["10-100"]
    assert cell["roots"] == 2 and "steps_ratio_median" not in cell and 0.0 <= cell["f1"] <= 1.0
