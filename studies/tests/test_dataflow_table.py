"""studies/dataflow_table.py end to end (issue 36 item 1): the paper's three cells (DDF-30 at T=30, DDF-60 at T=60,
DDF at T=200) and the until-stable variant of each, for a shipped model on the tiny DeepDataFlow data set
(tests/data/_ddf.py, no compiler needed); the full build's test filter keeps only the groups it ranks as test."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.data._ddf import tiny_dataset  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "dataflow_table.py"


@pytest.fixture(scope="module")
def script():
    return runpy.run_path(str(SCRIPT), run_name="dataflow_table")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return tiny_dataset(tmp_path_factory.mktemp("tiny"), chains=(2, 3, 4, 6, 8, 20, 40, 70))


def test_three_cells_fixed_and_until_stable(script, dataset: Path, tmp_path: Path, capsys) -> None:
    from programl.datasets import DeepDataFlow
    from programl.pretrained import pretrained

    out = tmp_path / "table.json"
    assert script["main"]([str(dataset), "--models", "reachability", "--threads", "1", "--json", str(out)]) == 0
    assert script["main"]([str(dataset), "--models", "reachability", "--stable", "--json", str(out)]) == 0
    result = json.loads(out.read_text())["models"]  # the second run keeps the first's rows
    fixed, stable = result["reachability"], result["reachability (until stable)"]
    vocabulary = pretrained("reachability").directory / "vocab.csv"
    for cell, limit, steps in script["CELLS"]:
        expected = len(
            DeepDataFlow.from_directory(dataset, "reachability", "test", max_steps=limit, vocabulary_path=vocabulary)
        )
        assert fixed["table"][cell]["examples"] == stable["table"][cell]["examples"] == expected
        assert fixed["table"][cell]["steps"] == fixed["table"][cell]["mean_steps"] == steps
        assert stable["table"][cell]["steps"] == "stable" and stable["table"][cell]["mean_steps"] >= 30
        for row in (fixed, stable):
            assert 0 <= row["table"][cell]["f1"] <= 1 and 0 <= row["table"][cell]["pooled_f1"] <= 1
    assert fixed["paper"] == {"DDF-30": 0.998, "DDF-60": 0.997, "DDF": 0.943}
    table = capsys.readouterr().out
    assert "| reachability | reachability | DDF | T=200 |" in table and "until stable (" in table


def test_until_stable_halts_at_the_models_own_patience(script, dataset: Path, tmp_path: Path) -> None:
    """``--stable`` without ``--patience`` runs a step-free model as ``programl predict`` does (its model.json's
    patience: 240 for dominance-step-free), and says which patience it used; ``--patience`` overrides it."""
    from programl.pretrained import pretrained

    out = tmp_path / "table.json"
    base = [str(dataset), "--cells", "DDF-30", "--stable", "--threads", "1", "--json", str(out), "--models"]
    assert script["main"]([*base, "dominance-step-free"]) == 0
    own = pretrained("dominance-step-free").metadata["inference"]["patience"]
    row = json.loads(out.read_text())["models"]["dominance-step-free (until stable)"]
    assert own == 240 and row["patience"] == own and row["table"]["DDF-30"]["mean_steps"] >= 30 + own
    assert script["main"]([*base, "dominance-step-free", "--patience", "7"]) == 0
    assert json.loads(out.read_text())["models"]["dominance-step-free (until stable)"]["patience"] == 7


def test_the_full_build_filter_keeps_its_test_groups(script, dataset: Path, tmp_path: Path, monkeypatch) -> None:
    from programl.data.manifest import read_manifest

    entries = read_manifest(dataset / "manifest.jsonl")
    groups = sorted({e["group"] for e in entries.values() if not e.get("error")})
    ranks = {g: (0.9 if i % 2 else 0.5) for i, g in enumerate(groups)}  # every other group "test" in the full build
    monkeypatch.setitem(script["main"].__globals__, "full_build_ranks", lambda recipe, data: ranks)
    out = tmp_path / "table.json"
    argv = [str(dataset), "--models", "datadep", "--cells", "DDF-30", "--recipe", "r.json", "--data-dir", "."]
    assert script["main"]([*argv, "--json", str(out)]) == 0
    kept = json.loads(out.read_text())["models"]["datadep"]["table"]["DDF-30"]["examples"]
    assert script["main"]([*argv[:5], "--json", str(tmp_path / "all.json")]) == 0
    everything = json.loads((tmp_path / "all.json").read_text())["models"]["datadep"]["table"]["DDF-30"]["examples"]
    assert 0 < kept < everything or (kept == 0 and everything > 0)
    with pytest.raises(SystemExit):  # a recipe source that cannot be enumerated without building
        recipe = tmp_path / "recipe.json"
        recipe.write_text(json.dumps({"sources": [{"kind": "files", "path": "x"}]}))
        script["full_build_ranks"](recipe, tmp_path)


def test_by_size_splits_each_cell_into_buckets_and_plots(script, dataset: Path, tmp_path: Path, capsys) -> None:
    """--by-size (issue 36 item 3): each bucket holds the cell's examples of that graph size, together all of them,
    scored with the cell's inference; --plot writes a PNG."""
    from programl.datasets import DeepDataFlow
    from programl.pretrained import pretrained

    out, png = tmp_path / "sizes.json", tmp_path / "sizes.png"
    argv = [str(dataset), "--models", "reachability", "--cells", "DDF-30", "DDF", "--by-size", "--plot", str(png)]
    assert script["main"]([*argv, "--threads", "1", "--json", str(out)]) == 0
    entry = json.loads(out.read_text())["models"]["reachability"]
    vocabulary = pretrained("reachability").directory / "vocab.csv"
    data = DeepDataFlow.from_directory(dataset, "reachability", "test", max_steps=None, vocabulary_path=vocabulary)
    buckets = entry["by_size"]["DDF"]
    assert sum(b["examples"] for b in buckets.values()) == entry["table"]["DDF"]["examples"] == len(data)
    for label, low, high in script["SIZE_BUCKETS"]:
        expected = sum(1 for n in data.sizes if n >= low and (high is None or n <= high))
        assert buckets.get(label, {"examples": 0})["examples"] == expected
    assert all(b["steps"] == 200 and 0 <= b["f1"] <= 1 for b in buckets.values())
    assert set(entry["by_size"]) == {"DDF-30", "DDF"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| reachability | DDF | T=200 |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        script["main"]([str(dataset), "--models", "reachability", "--plot", str(png)])


def test_steps_scores_every_cell_at_one_t(script, dataset: Path, tmp_path: Path) -> None:
    """--steps T: each cell's examples at T (a model whose analysis needs no more than T hops, e.g. liveness)."""
    out = tmp_path / "t.json"
    assert script["main"]([str(dataset), "--models", "reachability", "--steps", "40", "--json", str(out)]) == 0
    cells = json.loads(out.read_text())["models"]["reachability (T=40)"]["table"]
    assert [c["steps"] for c in cells.values()] == [40, 40, 40]
    with pytest.raises(SystemExit):
        script["main"]([str(dataset), "--models", "reachability", "--steps", "40", "--stable"])


def test_several_patiences_score_in_one_pass_as_each_alone(script, dataset: Path, tmp_path: Path) -> None:
    """``--patience 1 4`` (on the validation split, to choose one) gives a row per patience, each the cell that
    ``--patience P`` alone gives."""
    base = [str(dataset), "--models", "reachability-step-free", "--stable", "--split", "val", "--threads", "1"]
    both, alone = tmp_path / "both.json", tmp_path / "alone.json"
    assert script["main"]([*base, "--patience", "4", "1", "--json", str(both)]) == 0
    rows = json.loads(both.read_text())["models"]
    assert sorted(rows) == [f"reachability-step-free (until stable, latched, patience {p})" for p in (1, 4)]
    for patience in (1, 4):
        assert script["main"]([*base, "--patience", str(patience), "--json", str(alone)]) == 0
        own = json.loads(alone.read_text())["models"]["reachability-step-free (until stable, latched)"]
        row = rows[f"reachability-step-free (until stable, latched, patience {patience})"]
        assert row["patience"] == own["patience"] == patience
        for cell, c in own["table"].items():
            assert {k: v for k, v in row["table"][cell].items() if k != "seconds"} == {
                k: v for k, v in c.items() if k != "seconds"
            }
    one, four = (rows[f"reachability-step-free (until stable, latched, patience {p})"]["table"]["DDF"] for p in (1, 4))
    assert one["mean_steps"] < four["mean_steps"]
