"""studies/dataflow_cards.py (issue 36 item 6): the shipped data-flow models' cards carry the paper's table that
docs/results.json publishes, and a change of results.json shows as a card that is behind."""

from __future__ import annotations

import json
import runpy
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "studies" / "dataflow_cards.py"


@pytest.fixture(scope="module")
def script():
    return runpy.run_path(str(SCRIPT), run_name="dataflow_cards")


def test_the_shipped_cards_carry_the_published_table(script, capsys) -> None:
    assert script["main"](["--check"]) == 0, capsys.readouterr().out
    results = json.loads((REPO / "docs" / "results.json").read_text())["dataflow"]
    card = (REPO / "programl" / "pretrained" / "weights" / "reachability-fixpoint" / "MODEL_CARD.md").read_text()
    ddf = results["reachability"]["step_free_table"]["DDF"]
    row = f"| DDF | to its fixed point | {ddf['examples']:,} |"
    assert row in card and "### The paper's table (docs/spec/tasks.md#deepdataflow-table)" in card
    # the large-graph table stays after it
    assert card.index("### The paper's table") < card.index("### Large graphs, by size") < card.index("## Compute")
    faithful = json.loads((REPO / "programl" / "pretrained" / "weights" / "dominance" / "model.json").read_text())
    cell = faithful["scores"]["paper_table"]["DDF"]
    assert cell["f1"] == results["dominance"]["table"]["DDF"]["f1"] and cell["paper"]["f1"] == 0.123


def test_a_changed_result_leaves_the_card_behind_until_written(script, tmp_path: Path, capsys) -> None:
    weights = tmp_path / "weights"
    for name in ("dominance", "dominance-fixpoint", "reachability", "reachability-fixpoint"):
        shutil.copytree(REPO / "programl" / "pretrained" / "weights" / name, weights / name)
    results = json.loads((REPO / "docs" / "results.json").read_text())
    results["dataflow"] = {k: results["dataflow"][k] for k in ("dominance", "reachability")}
    results["dataflow"]["reachability"]["step_free_table"]["DDF"].update(f1=0.993219, steps="stable", patience=20)
    (tmp_path / "results.json").write_text(json.dumps(results))
    argv = ["--results", str(tmp_path / "results.json"), "--weights", str(weights)]
    assert script["main"]([*argv, "--check"]) == 1
    assert "1 model(s) behind docs/results.json: reachability-fixpoint" in capsys.readouterr().out
    before = (weights / "dominance" / "MODEL_CARD.md").read_text()
    assert script["main"](argv) == 0 and script["main"]([*argv, "--check"]) == 0
    card = (weights / "reachability-fixpoint" / "MODEL_CARD.md").read_text()
    assert "| DDF | until stable (patience 20) |" in card and "| 0.993 |" in card
    assert card.count("### The paper's table") == 1  # replaced, not added twice
    assert card.count("### Large graphs, by size") == 1  # kept
    assert (weights / "dominance" / "MODEL_CARD.md").read_text() == before
