"""studies/dataflow_steps.py (issue 36 item 2): the per-step record of a model's errors, and halting rules replayed on
it, must agree with the model's own until-stable pass (``forward_until_stable``) example by example, plain and
latched, on the tiny DeepDataFlow data set (tests/data/_ddf.py, no compiler needed)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.data._ddf import tiny_dataset  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "dataflow_steps.py"


@pytest.fixture(scope="module")
def script():
    return runpy.run_path(str(SCRIPT), run_name="dataflow_steps")


@pytest.fixture(scope="module")
def recorded(script, tmp_path_factory) -> Path:
    dataset = tiny_dataset(tmp_path_factory.mktemp("tiny"), chains=(2, 6, 20, 40, 70))
    out = tmp_path_factory.mktemp("steps") / "reach.jsonl"
    argv = ["record", str(dataset), "--model", "reachability", "--split", "test", "--examples", "12", "--steps", "80"]
    assert script["main"]([*argv, "--out", str(out), "-q"]) == 0
    return out


def test_logits_each_step_are_forward_at_each_t() -> None:
    import torch
    from torch_geometric.data import Data

    from programl.models import DataflowGGNN

    torch.manual_seed(0)
    model = DataflowGGNN(10).eval()
    data = Data(
        x=torch.tensor([1, 2, 3, 4]),
        root=torch.tensor([1, 0, 0, 0]),
        edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
        edge_flow=torch.tensor([0, 0, 1]),
        edge_pos=torch.tensor([0, 0, 1]),
    )
    steps = list(model.logits_each_step(data, 5))
    assert len(steps) == 5
    for t in (1, 3, 5):
        assert torch.allclose(steps[t - 1], model(data, num_steps=t), atol=1e-6)


@pytest.mark.parametrize("latch", [False, True])
def test_replay_halts_as_the_model_does(script, recorded: Path, latch: bool) -> None:
    import torch
    from torch_geometric.data import Batch

    from programl.datasets import DeepDataFlow
    from programl.pretrained import pretrained

    lines = recorded.read_text().splitlines()
    header, rows = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    model = pretrained("reachability")
    data = DeepDataFlow.from_directory(
        header["data"],
        "reachability",
        "test",
        max_steps=None,
        max_nodes=40_000,
        vocabulary_path=model.directory / "vocab.csv",
    )
    assert len(rows) == min(12, len(data)) > 3 and header["min_steps"] == 30
    for patience in (1, 20):
        result = script["replay_rows"](rows, header, patience, latch, 80)
        tp = fp = fn = 0
        steps = []
        for row in rows:
            example = data[row["index"]]
            logits, ran = model.model.forward_until_stable(
                Batch.from_data_list([example]), max_steps=80, patience=patience, latch=latch
            )
            predicted, y = logits.argmax(-1).bool(), example.y.bool()
            tp += int((predicted & y).sum())
            fp += int((predicted & ~y).sum())
            fn += int((~predicted & y).sum())
            steps.append(int(ran[0]))
        assert result["mean_steps"] == pytest.approx(sum(steps) / len(steps))
        assert result["pooled_f1"] == pytest.approx(script["f1"](tp, fp, fn))
        assert result["examples"] == len(rows) and 0 <= result["f1"] <= 1
        kinds = {w["kind"] for w in result["wrong"]}
        assert kinds <= {"halted early", "drifted", "never right"}
    assert torch.is_tensor(logits)


def test_replay_prints_a_row_per_rule(script, recorded: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "replay.json"
    argv = ["replay", str(recorded), "--patience", "5", "40", "--latch", "both", "--json", str(out)]
    assert script["main"](argv) == 0
    table = capsys.readouterr().out
    assert "| 5 | no |" in table and "| 40 | yes |" in table
    results = json.loads(out.read_text())["results"]
    assert [(r["patience"], r["latch"]) for r in results] == [(5, False), (40, False), (5, True), (40, True)]


def test_replay_refuses_another_file(script, tmp_path: Path, capsys) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text('{"format": 99}\n')
    assert script["main"](["replay", str(other)]) == 1
    assert "not a record of this script" in capsys.readouterr().err


def test_bad_inputs_are_one_line_errors(script, tmp_path: Path, capsys) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("garbage\n")
    for argv in (
        ["replay", str(garbage)],
        ["replay", str(tmp_path / "missing.jsonl")],
        ["record", str(tmp_path), "--model", "no-such-model", "--out", str(tmp_path / "o.jsonl")],
    ):
        assert script["main"](argv) == 1
        err = capsys.readouterr().err
        assert err.startswith("dataflow_steps ") or "not a record of this script" in err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.jsonl").exists()


def test_first_drop_is_the_first_loss_after_finding_every_true_node(script) -> None:
    first_drop = script["first_drop"]
    assert first_drop([1, 2, 3, 3, 2, 3], 3) == 5  # all found at step 3, one lost at step 5
    assert first_drop([1, 2, 1, 0], 3) is None  # never found them all
    assert first_drop([3, 3, 3], 3) is None  # held to the end
    assert first_drop([0, 0], 0) is None  # nothing to find


def test_curve_pools_recall_and_precision_per_step(script, recorded: Path, tmp_path: Path, capsys) -> None:
    lines = recorded.read_text().splitlines()
    rows = [json.loads(line) for line in lines[1:]]
    c = script["curve_rows"](rows)
    true = sum(r["true"] for r in rows)
    for step in (0, 29, 79):
        tp, fp = sum(r["tp"][step] for r in rows), sum(r["fp"][step] for r in rows)
        assert c["recall"][step] == pytest.approx(tp / true)
        assert c["precision"][step] == pytest.approx(tp / (tp + fp) if tp + fp else 1.0)
    assert len(c["drops"]) == len(rows) == c["examples"]
    plot = tmp_path / "curve.png"
    assert script["main"](["curve", str(recorded), "--steps", "30", "80", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "| model | T=30 | T=80 |" in out and f"R {c['recall'][29]:.3f}" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
