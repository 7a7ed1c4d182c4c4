"""studies/dataflow_until_stable.py end to end (issue 36 item 2): fixed T against running until the predictions
stop changing, by step bucket, on the tiny DeepDataFlow data set (tests/data/_ddf.py, no compiler needed)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.data._ddf import tiny_dataset  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "dataflow_until_stable.py"


def test_buckets_modes_and_steps(tmp_path: Path, capsys) -> None:
    main = runpy.run_path(str(SCRIPT), run_name="dataflow_until_stable")["main"]
    data = tiny_dataset(tmp_path, chains=(2, 3, 4, 6, 8, 20, 40))
    out = tmp_path / "until_stable.json"
    argv = [str(data), "--analyses", "reachability", "--per-bucket", "5", "--steps", "30", "3"]
    assert (
        main(
            [*argv, "--min-steps", "3", "--max-steps", "90", "--exclude-sources", "--threads", "1", "--json", str(out)]
        )
        == 0
    )
    result = json.loads(out.read_text())["analyses"]["reachability"]
    assert list(result) == ["T=30", "T=3", "until stable"]
    for mode, cells in result.items():
        assert list(cells) == ["<=30", "31-60", ">60", "all"]
        assert cells["all"]["examples"] == sum(cells[b]["examples"] for b in ("<=30", "31-60", ">60"))
        assert all(cells[b]["examples"] <= 5 for b in ("<=30", "31-60", ">60"))
        if mode != "until stable":
            assert all(c["mean_steps"] == int(mode[2:]) for c in cells.values() if c["examples"])
    stable = result["until stable"]["all"]
    assert 3 <= stable["mean_steps"] <= 90 and stable["examples"] == result["T=30"]["all"]["examples"] > 0
    assert "| until stable |" in capsys.readouterr().out
