"""studies/plot_classifyapp_runs.py: runs that carry one POJ-104 training on, drawn as one curve."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

SCRIPT = runpy.run_path(str(Path(__file__).resolve().parents[1] / "plot_classifyapp_runs.py"))


def _run(directory: Path, errors: list[float], model: dict, result_epoch: int | None = None) -> Path:
    directory.mkdir()
    records = [{"epoch": e + 1, "train_error": 2 * v, "val_error": v} for e, v in enumerate(errors)]
    (directory / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (directory / "config.json").write_text(json.dumps({"model": model}))
    if result_epoch is not None:
        result = {"checkpoint_epoch": result_epoch, "test": {"error": 0.05}}
        (directory / "result.json").write_text(json.dumps(result))
    return directory


def test_parse_run():
    assert SCRIPT["parse_run"]("runs/poj104:7") == (Path("runs/poj104"), 7)
    assert SCRIPT["parse_run"]("runs/poj104") == (Path("runs/poj104"), None)


def test_chain_continues_the_epochs(tmp_path):
    first = _run(tmp_path / "a", [0.5, 0.4, 0.3, 0.25], {"lr": 2.5e-4}, result_epoch=3)
    second = _run(tmp_path / "b", [0.2, 0.1], {"lr": 2.5e-4, "lr_decay": "cosine"}, result_epoch=2)
    segments = SCRIPT["chain"]([(first, 3), (second, None)])
    assert segments[0]["epochs"] == [1, 2, 3] and segments[1]["epochs"] == [4, 5]
    assert segments[0]["val"] == pytest.approx([50, 40, 30]) and segments[1]["train"] == pytest.approx([40, 20])
    assert segments[0]["test"] == (3, pytest.approx(5.0)) and segments[1]["test"] == (5, pytest.approx(5.0))
    assert segments[1]["label"] == "lr 0.00025, cosine decay"
    # a result from beyond the epochs taken is not drawn
    assert SCRIPT["chain"]([(first, 2)])[0]["test"] is None


def test_main_writes_a_png_or_says_why_not(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    first = _run(tmp_path / "a", [0.5, 0.4], {"lr": 2.5e-4})
    out = tmp_path / "curves.png"
    assert SCRIPT["main"]([f"{first}:2", str(first), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert SCRIPT["main"]([str(tmp_path / "missing"), "-o", str(out)]) == 1
    assert "plot_classifyapp_runs.py:" in capsys.readouterr().err


@pytest.mark.parametrize("damaged", ["config.json", "result.json"])
def test_a_damaged_run_file_is_one_line_with_its_place(tmp_path, capsys, damaged):
    run = _run(tmp_path / "a", [0.5, 0.4], {"lr": 2.5e-4}, result_epoch=2)
    (run / damaged).write_text('{"model": 1,')
    assert SCRIPT["main"]([str(run), "-o", str(tmp_path / "x.png")]) == 1
    error = capsys.readouterr().err.strip()
    assert (
        error
        == f"plot_classifyapp_runs.py: {run / damaged}:1:13: not JSON (Expecting property name enclosed in double quotes)"
    )
    assert not (tmp_path / "x.png").exists()


def test_a_reference_curve_is_read_and_drawn_or_refused_in_one_line(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    run = _run(tmp_path / "a", [0.5, 0.4], {"lr": 2.5e-4, "precision": "bf16"})
    assert SCRIPT["chain"]([(run, None)])[0]["label"] == "lr 0.00025, bf16"
    reference = tmp_path / "ref.csv"
    reference.write_text("epoch,where,train_error,val_error\n1,H100,84.9,63.1\n2,CPU,55.1,38.3\n")
    assert SCRIPT["read_reference"](reference) == {
        "epoch": [1, 2],
        "train_error": [84.9, 55.1],
        "val_error": [63.1, 38.3],
    }
    out = tmp_path / "curves.png"
    assert SCRIPT["main"]([str(run), "-o", str(out), "--reference", str(reference), "--reference-label", "fp32"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    reference.write_text("epoch,val_error\n1,63.1\n")
    assert SCRIPT["main"]([str(run), "-o", str(out), "--reference", str(reference)]) == 1
    assert "needs the columns epoch, train_error and val_error" in capsys.readouterr().err
    # the published float32 run's file reads
    published = SCRIPT["read_reference"](Path(__file__).resolve().parents[1] / "data" / "poj104-float32-run.csv")
    assert published["epoch"] == list(range(1, 22)) and published["val_error"][-1] == 4.9
