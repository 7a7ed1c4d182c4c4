"""studies/devmap_above.py (issue 40, item 3): the nested cross-validation never reads an outer test row (its
folds are subsets of the outer training rows; changing the test rows' labels and runtimes changes no choice and
no prediction), the kernel neighbour columns never read a row's own label, and the script runs end to end on real
devmap rows."""

from __future__ import annotations

import importlib.util
import json
import runpy
from pathlib import Path

import numpy as np
import pytest

for module in ("xgboost", "sklearn"):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[baselines]')", allow_module_level=True)

from programl.data.devmap import (  # noqa: E402
    build_devmap,
    cross_validation_splits,
    read_platform_csv,
    stratified_rows,
)

ABOVE = runpy.run_path(str(Path(__file__).resolve().parents[1] / "devmap_above.py"))


@pytest.fixture(autouse=True)
def small_models(monkeypatch):
    """Fewer trees and rounds than the benchmark's, to keep the tests fast (the same code paths)."""
    module = ABOVE["candidate_probabilities"].__globals__
    monkeypatch.setitem(module, "FOREST_TREES", {"forest": 30, "forest_kernel": 30})
    monkeypatch.setitem(module, "XGB_PARAMS", {**module["XGB_PARAMS"], "n_estimators": 30})


def _problem(n: int = 90, sizes: int = 3):
    """``n / sizes`` kernels at ``sizes`` problem sizes each; the GPU is faster above a kernel-specific transfer."""
    rng = np.random.default_rng(0)
    kernels = n // sizes
    kernel = np.repeat(np.arange(kernels), sizes)
    aux = np.stack([rng.uniform(5, 20, n), rng.uniform(0, 0.5, n)], axis=1)
    threshold = rng.uniform(8, 17, kernels)[kernel]
    ratio = aux[:, 0] - threshold + rng.normal(0, 0.3, n)  # log(runtime_cpu / runtime_gpu)
    labels = (ratio > 0).astype(np.int64)
    counts = np.eye(kernels)[kernel] * rng.integers(1, 5, kernels)[kernel][:, None]
    blocks = {
        "rich": np.hstack([aux, counts]),
        "ratio": (aux[:, 0] - aux[:, 1])[:, None],
        "nt": rng.normal(size=(n, 4)),
        "aux": aux,
        "kernel": kernel,
    }
    return blocks, labels, ratio


def test_inner_folds_are_inside_the_outer_training_rows():
    _, labels, _ = _problem()
    for split in cross_validation_splits(labels, 5, 204):
        train = np.sort(np.concatenate([split.train, split.val]))
        inner = ABOVE["nested_cv_folds"](labels, train, 3, seed=0)
        assert len(inner) == 3
        for inner_train, inner_val in inner:
            assert not set(inner_train) & set(inner_val)
            assert set(inner_train) | set(inner_val) == set(train)
            assert not (set(inner_train) | set(inner_val)) & set(split.test)
        assert sorted(np.concatenate([v for _, v in inner])) == sorted(train)  # each training row validated once


def test_the_choice_and_predictions_do_not_read_the_test_rows():
    blocks, labels, ratio = _problem(120, sizes=6)
    split = cross_validation_splits(labels, 5, 204)[0]
    train, test = np.sort(np.concatenate([split.train, split.val])), split.test
    names = ("forest", "kernel_nn", "xgb_kernel", "xgb_regress_kernel", "vote_nn")
    chosen, scores = ABOVE["choose"](blocks, labels, ratio, train, 3, 0, names)
    p = ABOVE["candidate_probabilities"](blocks, labels, ratio, train, test, 0, names)
    flipped, scrambled = labels.copy(), ratio.copy()
    flipped[test] = 1 - flipped[test]
    scrambled[test] = -scrambled[test] * 7
    again, scores_again = ABOVE["choose"](blocks, flipped, scrambled, train, 3, 0, names)
    assert (again, scores_again) == (chosen, scores)
    p_again = ABOVE["candidate_probabilities"](blocks, flipped, scrambled, train, test, 0, names)
    for name in names:
        assert np.array_equal(p[name], p_again[name]), name
    accuracy = ((p["kernel_nn"] > 0.5) == labels[test]).mean()
    assert accuracy >= 0.7, accuracy  # the kernel's own rows at other sizes say much
    with pytest.raises(ValueError, match="overlap"):
        ABOVE["candidate_probabilities"](blocks, labels, ratio, train, train[:5], 0, names)


def test_kernel_columns_leave_out_the_row_itself():
    blocks, labels, ratio = _problem()
    rows = np.arange(len(labels))
    columns = ABOVE["kernel_features"](blocks["kernel"], blocks["aux"], labels, ratio, rows, rows)
    assert (columns[:, 0] == 2).all()  # three rows per kernel: two neighbours each
    flipped = labels.copy()
    flipped[0] = 1 - flipped[0]
    again = ABOVE["kernel_features"](blocks["kernel"], blocks["aux"], flipped, ratio, rows, rows)
    assert np.array_equal(columns[0], again[0], equal_nan=True)  # row 0's own label is not among its columns
    assert not np.array_equal(columns[1:3], again[1:3], equal_nan=True)  # its kernel's other rows see it
    unseen = ABOVE["kernel_features"](blocks["kernel"], blocks["aux"], labels, ratio, rows[3:], rows[:3])
    assert (unseen[:, 0] == 0).all() and np.isnan(unseen[:, 1:]).all()  # kernel 0 has no training row


def test_runs_end_to_end_on_real_rows(shared_data, tmp_path, capsys):
    source = shared_data / "devmap"
    if not source.is_dir():
        pytest.skip(f"no devmap data at {source}")
    table = read_platform_csv(source / "cgo17-amd.csv")
    rows = stratified_rows([r.label for r in table], 40)
    assert build_devmap(source, tmp_path / "processed" / "build", ["ncc"], jobs=1, rows=rows).ok
    out = tmp_path / "above.json"
    argv = ["--source-dir", str(source), "--data-dir", str(tmp_path), "--rows", *map(str, rows)]
    argv += ["--no-ir2vec", "--seeds", "0", "--folds", "3", "--inner-folds", "3", "-o", str(out)]
    assert ABOVE["main"](argv) == 0
    result = json.loads(out.read_text())
    assert result["rows"] == 40
    for platform in ("amd", "nvidia"):
        records = result["records"][platform]
        assert len(records) == 3
        for record in records:
            assert record["chosen"] in ABOVE["CANDIDATES"]
            assert record["inner"][record["chosen"]] == max(record["inner"].values())
            assert record["test"]["nested"] == record["test"][record["chosen"]]
        summary = result["summary"][platform]
        assert sum(summary["nested"]["chosen"].values()) == 3
        assert 0.5 <= summary["forest"]["accuracy_mean"] <= 1
    printed = capsys.readouterr().out
    assert ABOVE["main"](["--from-json", str(out)]) == 0  # the tables again from the JSON, the same
    again = capsys.readouterr().out
    assert "nested choice" in again and again in printed


def test_a_fixed_candidate_on_several_fold_seeds(shared_data, tmp_path, capsys):
    """``--fixed`` (a pre-registered design) skips the inner choice; ``--fold-seed A B`` runs every fold of each
    partition, and a fold counts as a (fold seed, fold) pair in the summary."""
    source = shared_data / "devmap"
    if not source.is_dir():
        pytest.skip(f"no devmap data at {source}")
    table = read_platform_csv(source / "cgo17-amd.csv")
    rows = stratified_rows([r.label for r in table], 40)
    assert build_devmap(source, tmp_path / "processed" / "build", ["ncc"], jobs=1, rows=rows).ok
    out = tmp_path / "fixed.json"
    argv = ["--source-dir", str(source), "--data-dir", str(tmp_path), "--rows", *map(str, rows), "--no-ir2vec"]
    argv += ["--seeds", "0", "--folds", "3", "--fold-seed", "1", "2", "--fixed", "vote_all", "-o", str(out)]
    assert ABOVE["main"](argv) == 0
    result = json.loads(out.read_text())
    assert result["fixed"] == "vote_all" and result["fold_seed"] == [1, 2]
    for platform in ("amd", "nvidia"):
        records = result["records"][platform]
        assert sorted((r["fold_seed"], r["fold"]) for r in records) == [(s, f) for s in (1, 2) for f in range(3)]
        assert all(r["chosen"] == "vote_all" and r["inner"] == {} for r in records)
        assert all(r["test"]["nested"] == r["test"]["vote_all"] for r in records)
        by_fold = result["summary"][platform]["nested"]["accuracy_by_fold"]
        assert len(by_fold) == 6
        accuracy = [
            r["test"]["vote_all"]["accuracy"] for r in sorted(records, key=lambda r: (r["fold_seed"], r["fold"]))
        ]
        assert by_fold == pytest.approx(accuracy)
    printed = capsys.readouterr().out
    assert "`vote_all`, fixed in advance" in printed
    assert ABOVE["main"](["--from-json", str(out)]) == 0
    assert "`vote_all`, fixed in advance" in capsys.readouterr().out


def test_perfograph_protocol_reports_the_best_split(shared_data, tmp_path, capsys):
    """``--perfograph``: PERFOGRAPH's ten random stratified 90/10 splits instead of the folds; the summary keeps
    the best split's accuracy beside the mean over the ten."""
    source = shared_data / "devmap"
    if not source.is_dir():
        pytest.skip(f"no devmap data at {source}")
    table = read_platform_csv(source / "cgo17-amd.csv")
    rows = stratified_rows([r.label for r in table], 40)
    assert build_devmap(source, tmp_path / "processed" / "build", ["ncc"], jobs=1, rows=rows).ok
    out = tmp_path / "perfograph.json"
    argv = ["--source-dir", str(source), "--data-dir", str(tmp_path), "--rows", *map(str, rows), "--no-ir2vec"]
    argv += ["--seeds", "0", "--perfograph", "--fixed", "vote_all", "--platforms", "amd", "-o", str(out)]
    assert ABOVE["main"](argv) == 0
    result = json.loads(out.read_text())
    records = result["records"]["amd"]
    assert [(r["fold_seed"], r["fold"]) for r in records] == [("perfograph", k) for k in range(10)]
    labels = np.array([table[r].label for r in rows])
    for _, _, train, test in ABOVE["outer_splits"](labels, 10, ["perfograph"], "train+val"):
        assert len(test) == 4 and not set(train) & set(test) and len(train) + len(test) == 40
    summary = result["summary"]["amd"]["vote_all"]
    accuracy = [r["test"]["vote_all"]["accuracy"] for r in records]
    assert summary["perfograph_best"] == pytest.approx(max(accuracy))
    assert summary["accuracy_mean"] == pytest.approx(np.mean(accuracy))
