"""studies/devmap_numbers_types.py (issue 40, item 2): the ablation's rows on real devmap rows, several forest
seeds and partitions, each fold's test rows predicted once per seed; the summary is the mean of what the JSON holds."""

from __future__ import annotations

import importlib.util
import json
import runpy
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("sklearn") is None:
    pytest.skip("sklearn is not installed (pip install -e '.[baselines]')", allow_module_level=True)

from programl.data.devmap import build_devmap, read_platform_csv, stratified_rows  # noqa: E402

BENCH = runpy.run_path(str(Path(__file__).resolve().parents[1] / "devmap_numbers_types.py"))


def test_rows_seeds_and_partitions_on_real_rows(shared_data, tmp_path, capsys):
    source = shared_data / "devmap"
    if not source.is_dir():
        pytest.skip(f"no devmap data at {source}")
    rows = stratified_rows([r.label for r in read_platform_csv(source / "cgo17-amd.csv")], 40)
    assert build_devmap(source, tmp_path / "processed" / "build", ["ncc"], jobs=1, rows=rows).ok
    out = tmp_path / "ablation.json"
    argv = ["--source-dir", str(source), "--data-dir", str(tmp_path), "--rows", *map(str, rows), "--trees", "20"]
    argv += ["--folds", "3", "--fold-seed", "1", "2", "--seeds", "0", "1", "-o", str(out)]
    assert BENCH["main"](argv) == 0
    result = json.loads(out.read_text())
    assert result["seeds"] == [0, 1] and result["fold_seed"] == [1, 2] and result["rows"] == rows
    widths = {}
    for platform in ("amd", "nvidia"):
        table = result["results"][platform]
        assert list(table) == [name for name, _ in BENCH["ROWS"]]
        for name, row in table.items():
            assert [(f["fold_seed"], f["fold"]) for f in row["folds"]] == [(s, f) for s in (1, 2) for f in range(3)]
            acc = np.array([[f["by_seed"][s]["accuracy"] for s in ("0", "1")] for f in row["folds"]])
            assert row["accuracy_mean"] == pytest.approx(acc.mean())
            assert row["accuracy_by_seed"] == pytest.approx(acc.mean(axis=0).tolist())
            assert 0 <= row["accuracy_mean"] <= 1
            widths[name] = row["features"]
    # the graph's size is 8 numbers, the numbers/types 20 aggregates, the auxiliary inputs 2
    assert widths["graph"] == 8 and widths["graph + numbers/types"] == 28 and widths["graph + aux"] == 10
    printed = capsys.readouterr().out
    rows_table, gains_table = printed.split("\n\n")[:2]
    assert rows_table.count("| graph + aux + texts |") == 2 and "forest seeds 0, 1" in rows_table
    assert gains_table.count("| graph + aux + texts |") == 2
    # what the numbers and types add, paired per fold: each row with them against the same row without
    for platform in ("amd", "nvidia"):
        table = result["results"][platform]
        gains = BENCH["numbers_types_gains"](table)
        assert list(gains) == ["graph", "graph + aux", "graph + aux + texts"]
        folds = BENCH["fold_accuracy"]
        diff = 100 * (folds(table["graph + numbers/types + aux"]) - folds(table["graph + aux"]))
        assert gains["graph + aux"]["difference"] == pytest.approx(diff.mean())
        assert sum(gains["graph + aux"]["above_level_below"]) == 6
        gain = gains["graph"]
        line = f"| graph | {platform} | {gain['difference']:+.2f} ± {gain['standard_error']:.2f} |"
        assert line in gains_table


def test_one_seed_reproduces_itself(shared_data, tmp_path):
    """The same seed and partition give the same forest predictions (the table's numbers are reproducible)."""
    source = shared_data / "devmap"
    if not source.is_dir():
        pytest.skip(f"no devmap data at {source}")
    rows = stratified_rows([r.label for r in read_platform_csv(source / "cgo17-nvidia.csv")], 30)
    assert build_devmap(source, tmp_path / "processed" / "build", ["ncc"], jobs=1, rows=rows).ok
    argv = ["--source-dir", str(source), "--data-dir", str(tmp_path), "--rows", *map(str, rows), "--trees", "10"]
    argv += ["--folds", "3", "--platforms", "nvidia"]
    runs = []
    for name in ("a.json", "b.json"):
        assert BENCH["main"]([*argv, "-o", str(tmp_path / name)]) == 0
        runs.append(json.loads((tmp_path / name).read_text())["results"])
    assert list(runs[0]) == ["nvidia"] and runs[0] == runs[1]
