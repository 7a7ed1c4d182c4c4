"""Tests of programl.tasks.devmap: the metrics against hand computations and the published static mapping, and a
tiny cross-validated training run on real DevMap kernels (SPEC §6.5, §7.3)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch  # noqa: E402

from programl.tasks.devmap import folds  # noqa: E402
from programl.tasks.devmap import train as devmap  # noqa: E402
from programl.training import UsageError, load_checkpoint  # noqa: E402


def test_metrics_by_hand() -> None:
    labels = np.array([0, 0, 1, 1])
    predictions = np.array([0, 1, 1, 1])
    runtimes = np.array([[1.0, 2.0], [1.0, 4.0], [8.0, 2.0], [3.0, 1.0]])
    m = devmap.devmap_metrics(labels, predictions, runtimes, static_device=0)
    assert m["accuracy"] == 0.75
    # class 0: precision 1, recall 1/2; class 1: precision 2/3, recall 1; weights 1/2 each
    assert m["precision"] == pytest.approx((1 + 2 / 3) / 2)
    assert m["recall"] == pytest.approx((0.5 + 1) / 2)
    assert m["f1"] == pytest.approx((2 / 3 + 0.8) / 2)
    assert m["f1_gpu"] == pytest.approx(0.8)
    speedups = np.array([1 / 1, 1 / 4, 8 / 2, 3 / 1])  # runtime(CPU) / runtime(predicted)
    assert m["speedup_mean"] == pytest.approx(speedups.mean())
    assert m["speedup_geomean"] == pytest.approx(math.exp(np.log(speedups).mean()))
    oracle = np.array([1, 1, 4, 3])
    assert m["oracle_speedup_mean"] == pytest.approx(oracle.mean())


def test_static_mapping_reproduces_the_published_row(shared_data) -> None:
    """Always predicting the majority device gives the arXiv table's static-mapping precision/recall/F1 (SPEC
    §7.3): the published numbers are support-weighted averages over the two classes."""
    from programl.data.devmap import read_platform_csv

    for platform, (accuracy, precision, recall, f1) in devmap.PUBLISHED["Static mapping"].items():
        rows = read_platform_csv(shared_data / "devmap" / f"cgo17-{platform}.csv")
        labels = np.array([r.label for r in rows])
        runtimes = np.array([(r.runtime_cpu, r.runtime_gpu) for r in rows])
        static = int(np.bincount(labels).argmax())
        m = devmap.devmap_metrics(labels, np.full_like(labels, static), runtimes, static)
        assert round(100 * m["accuracy"], 1) == accuracy
        assert (round(m["precision"], 2), round(m["recall"], 2), round(m["f1"], 2)) == (precision, recall, f1)
        assert m["speedup_mean"] == 1.0 and m["oracle_speedup_geomean"] > 1


def parse(command: str, *argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    (devmap.add_train_arguments if command == "train" else devmap.add_evaluate_arguments)(parser)
    return parser.parse_args([str(a) for a in argv])


@pytest.fixture(scope="module")
def tiny_run(shared_data, tmp_path_factory):
    """60 AMD kernels-with-inputs (NCC's IR: no compiler needed), 3 folds, a tiny model, 8 epochs."""
    root = tmp_path_factory.mktemp("devmap")
    argv = [
        "--source-dir",
        shared_data / "devmap",
        "--data-dir",
        root / "data",
        "--variant",
        "ncc",
        "--platform",
        "amd",
        "--subset",
        "60",
        "--folds",
        "3",
        "--hidden",
        "8",
        "--steps",
        "2",
        "--layers",
        "1",
        "--message-dropout",
        "0",
        "--lr",
        "0.01",
        "--batch-nodes",
        "3000",
        "--threads",
        "1",
        "-q",
        "--run-dir",
        root / "run",
    ]
    assert devmap.train_main(parse("train", *argv, "--epochs", "8")) == 0
    return root, argv


def test_tiny_run_beats_chance_on_held_out_folds(tiny_run) -> None:
    root, _ = tiny_run
    report = json.loads((root / "run" / "amd" / "report.json").read_text())
    assert report["folds"] == 3 and report["examples"] == 60  # every kernel tested once
    assert report["mean"]["accuracy"] > 0.6  # chance 0.5; the static mapping (majority) scores ~0.6
    assert report["mean"]["accuracy"] > report["static_mapping_accuracy"]
    assert np.array(report["confusion_matrix"]).sum() == 60
    for fold in range(3):
        fold_dir = root / "run" / "amd" / f"fold_{fold}"
        log = [json.loads(line) for line in (fold_dir / "log.jsonl").read_text().splitlines()]
        assert [r["epoch"] for r in log] == list(range(1, 9))
        result = json.loads((fold_dir / "result.json").read_text())
        best = max(log, key=lambda r: (r["val_accuracy"], -r["val_loss"]))
        assert result["best_epoch"] == best["epoch"]  # chosen on validation
        assert (fold_dir / "curves.png").read_bytes().startswith(b"\x89PNG")
    lines = (root / "run" / "amd" / "predictions.csv").read_text().splitlines()
    assert len(lines) == 61 and lines[0].startswith("row,name,fold,label,prediction")
    assert (root / "run" / "amd" / "confusion.png").is_file() and (root / "run" / "summary.md").is_file()


def test_evaluate_reproduces_the_training_predictions(tiny_run, capsys) -> None:
    root, _ = tiny_run
    before = json.loads((root / "run" / "amd" / "report.json").read_text())
    assert devmap.evaluate_main(parse("evaluate", "--run-dir", root / "run", "--platform", "amd", "-q")) == 0
    after = json.loads((root / "run" / "amd" / "report.json").read_text())
    assert after["per_fold"] == before["per_fold"]
    assert "AMD Tahiti 7970" in capsys.readouterr().out
    # the default --platform all: the run trained AMD only, so AMD only, not an error about NVIDIA
    assert devmap.evaluate_main(parse("evaluate", "--run-dir", root / "run", "-q")) == 0
    assert json.loads((root / "run" / "amd" / "report.json").read_text())["per_fold"] == before["per_fold"]
    assert "NVIDIA" not in capsys.readouterr().out


def test_more_epochs_resume_from_the_checkpoint(tiny_run, tmp_path) -> None:
    root, argv = tiny_run
    # the finished run is extended by 2 epochs; a fresh run of 10 epochs must end with the same weights
    assert devmap.train_main(parse("train", *argv, "--epochs", "10", "--only-folds", "0")) == 0
    fresh = [a if a != root / "run" else tmp_path / "fresh" for a in argv]
    assert devmap.train_main(parse("train", *fresh, "--epochs", "10", "--only-folds", "0")) == 0
    resumed = load_checkpoint(root / "run" / "amd" / "fold_0" / "last.pt", restore_rng=False)
    straight = load_checkpoint(tmp_path / "fresh" / "amd" / "fold_0" / "last.pt", restore_rng=False)
    assert resumed["epoch"] == straight["epoch"] == 10
    for key, value in straight["model"].items():
        assert torch.equal(value, resumed["model"][key]), key


def test_options_are_checked(tiny_run) -> None:
    root, argv = tiny_run
    with pytest.raises(UsageError, match="--folds"):
        devmap.train_main(parse("train", *argv, "--folds", "2"))
    with pytest.raises(UsageError, match="other options"):
        devmap.train_main(parse("train", *argv, "--hidden", "12"))
    with pytest.raises(UsageError, match="--subset"):
        devmap.train_main(parse("train", *argv, "--subset", "1", "--run-dir", root / "other"))


def test_a_data_dir_with_the_raw_files_needs_no_source_dir(tiny_run, tmp_path, monkeypatch) -> None:
    """Without ``--source-dir`` and without the shared data, ``DATA_DIR/raw`` (the files DevMap took for an earlier
    run) is the source the run records; with neither, one usage line."""
    root, argv = tiny_run
    monkeypatch.delenv("PROGRAML_SHARED_DATA", raising=False)
    monkeypatch.chdir(tmp_path)  # no ../shared/data here
    i = argv.index("--source-dir")
    argv = [a if a != root / "run" else tmp_path / "run" for a in argv[:i] + argv[i + 2 :]]
    assert devmap.train_main(parse("train", *argv, "--epochs", "1", "--only-folds", "0")) == 0
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["source_dir"] == str((root / "data" / "raw").resolve())
    assert json.loads((tmp_path / "run" / "amd" / "fold_0" / "result.json").read_text())["epochs"] == 1
    elsewhere = [a if a != root / "data" else tmp_path / "data" for a in argv]
    with pytest.raises(UsageError, match="no devmap source directory: give --source-dir DIR, or --download"):
        devmap.train_main(parse("train", *elsewhere, "--run-dir", tmp_path / "run2"))


def test_evaluating_a_run_whose_files_are_gone_says_what_to_give(tiny_run, tmp_path) -> None:
    """``programl evaluate devmap`` of a run whose source directory and data directory are gone: one line that asks
    for ``--source-dir``; given one, the data set is processed anew there and the predictions are the run's."""
    import shutil

    from programl.exceptions import ProgramlError

    root, argv = tiny_run
    run = tmp_path / "moved"
    shutil.copytree(root / "run", run)
    saved = json.loads((run / "config.json").read_text())
    saved.update(source_dir=str(tmp_path / "gone"), data_dir=str(tmp_path / "data"))
    (run / "config.json").write_text(json.dumps(saved))
    with pytest.raises(ProgramlError, match=r"the run's DevMap files are gone .* give --source-dir DIR"):
        devmap.evaluate_main(parse("evaluate", "--run-dir", run, "-q"))
    with pytest.raises(ProgramlError, match="cgo17-amd.csv: missing"):
        devmap.evaluate_main(parse("evaluate", "--run-dir", run, "--source-dir", tmp_path, "-q"))
    source = argv[argv.index("--source-dir") + 1]
    before = (run / "amd" / "predictions.csv").read_text()
    assert devmap.evaluate_main(parse("evaluate", "--run-dir", run, "--source-dir", source, "-q")) == 0
    assert (run / "amd" / "predictions.csv").read_text() == before
    assert (tmp_path / "data" / "processed").is_dir()


def test_hostile_run_directories(tiny_run, tmp_path) -> None:
    """docs/reliability.md: too many folds, a damaged fold result, a damaged or foreign config.json."""
    from programl.exceptions import ProgramlError

    root, argv = tiny_run
    other = [a if a != root / "run" else tmp_path / "folds" for a in argv]
    with pytest.raises(UsageError, match="--folds 40: the smaller class has"):  # 60 kernels: ~24 in one class
        devmap.train_main(parse("train", *other, "--folds", "40", "--epochs", "1"))
    with pytest.raises(UsageError, match=r"other options \(data_dir\)"):  # the run, on graphs built elsewhere
        devmap.train_main(parse("train", *[a if a != root / "data" else tmp_path / "data" for a in argv]))
    # a damaged result.json of a finished fold: tested again from its checkpoints, and rewritten
    fold = root / "run" / "amd" / "fold_1"
    good = json.loads((fold / "result.json").read_text())
    (fold / "result.json").write_text('{"fold": 1, "test": ')
    assert devmap.train_main(parse("train", *argv, "--epochs", "8", "--only-folds", "1")) == 0
    again = json.loads((fold / "result.json").read_text())
    assert again["predictions"] == good["predictions"] and again["best_epoch"] == good["best_epoch"]
    # config.json damaged, or of another task: one line naming the file; the run is left as it was
    run = tmp_path / "copy"
    (run / "amd").mkdir(parents=True)
    (run / "config.json").write_text('{"model": [')
    with pytest.raises(ProgramlError, match=r"config.json:1:12: not JSON"):
        devmap.evaluate_main(parse("evaluate", "--run-dir", run, "-q"))
    with pytest.raises(ProgramlError, match=r"config.json:1:12: not JSON"):
        devmap.train_main(parse("train", *[a if a != root / "run" else run for a in argv]))
    assert (run / "config.json").read_text() == '{"model": ['
    (run / "config.json").write_text(json.dumps({"task": "classifyapp", "model": {}}))
    with pytest.raises(ProgramlError, match="a `programl train classifyapp` run, not a `programl train devmap` run"):
        devmap.evaluate_main(parse("evaluate", "--run-dir", run, "-q"))


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("hidden", "wide", "hidden = 'wide' is not a value of this option"),
        ("text_counts", 1, "text_counts = 1 is not a value of this option"),
        ("pooling", "max", "pooling = 'max' is not a value of this option"),
        ("folds", 2, "--folds must be at least 3, not 2"),
        ("fold_seed", -1, "--fold-seed must be in 0..4294967295, not -1"),
        ("message_dropout", 1.5, r"--message-dropout must be in \[0, 1\), not 1.5"),
        ("seed", None, "seed = None is not a value of this option"),
    ],
)
def test_evaluate_reads_the_runs_options_checked(tiny_run, tmp_path, key, value, reason) -> None:
    """``programl evaluate devmap`` reads a run's options back as the typed options of the task: a hand-edited value
    of the wrong type, choice or range is one line naming config.json, before any model is built (``folds`` 2 was a
    traceback, ``pooling`` max a model of other options that best.pt did not fit, ``message_dropout`` 1.5 went
    unnoticed)."""
    from programl.exceptions import ProgramlError

    root, _ = tiny_run
    run = tmp_path / "run"
    run.mkdir()
    config = json.loads((root / "run" / "config.json").read_text())
    config["model"][key] = value
    (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(ProgramlError, match=f"^{run / 'config.json'}: {reason}$"):
        devmap.evaluate_main(parse("evaluate", "--run-dir", run, "-q"))
    assert not (run / "amd").exists()  # nothing was evaluated


def test_evaluate_reads_options_a_run_never_recorded_at_their_default(tiny_run, tmp_path) -> None:
    """A run written before an option existed (its config.json lacks the option) is evaluated with the option's
    default, what it trained with; an entry that is no option (of a run of another version) is left out."""
    import shutil

    root, _ = tiny_run
    run = tmp_path / "run"
    shutil.copytree(root / "run", run)
    config = json.loads((run / "config.json").read_text())
    for key in ("aux_bins", "text_counts", "numbers_and_types", "precision", "average_last"):
        del config["model"][key]
    config["model"]["retired_option"] = 3
    (run / "config.json").write_text(json.dumps(config))
    before = json.loads((run / "amd" / "report.json").read_text())
    assert devmap.evaluate_main(parse("evaluate", "--run-dir", run, "-q")) == 0
    assert json.loads((run / "amd" / "report.json").read_text())["per_fold"] == before["per_fold"]
    summary = json.loads((run / "summary.json").read_text())["config"]
    assert summary["aux_bins"] == 0 and summary["average_last"] == 0 and "retired_option" not in summary


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
def test_a_model_too_large_for_memory_is_one_line(tiny_run, tmp_path) -> None:
    """``--hidden 2^24`` under a 4 GiB address-space limit (in a child): one line, exit 1, no traceback."""
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    root, argv = tiny_run
    argv = [str(a if a != root / "run" else tmp_path / "run") for a in argv]
    limit = 4 * 2**30

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    repo = Path(__file__).resolve().parents[2]
    command = [
        sys.executable,
        "-m",
        "programl",
        "train",
        "devmap",
        *argv,
        "--hidden",
        str(2**24),
        "--epochs",
        "1",
        "--only-folds",
        "0",
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=limited,
        env={**os.environ, "PYTHONPATH": str(repo)},
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("programl train devmap: error: out of memory")


def test_aux_bins_fit_on_the_training_rows_and_travel_with_the_model(tiny_run, tmp_path) -> None:
    """``--aux-bins``: the thermometer thresholds are quantiles of log1p of the fold's training inputs only, kept
    in ``best.pt``, re-tested by ``evaluate`` and exported with the weights; an older run counts as 0 bins."""
    from programl.pretrained import pretrained
    from programl.pretrained.export import export_pretrained

    root, argv = tiny_run
    run = tmp_path / "bins"
    argv = [a if a != root / "run" else run for a in argv]
    options = ("--epochs", "2", "--only-folds", "0", "--readout-channels", "4", "--aux-bins", "8")
    assert devmap.train_main(parse("train", *argv, *options)) == 0
    config = json.loads((run / "config.json").read_text())["model"]
    assert config["aux_bins"] == 8
    train = _dataset(root, argv, "train", fold=0)  # the fold's training rows, as the run read them
    inputs = torch.log1p(torch.cat([d.graph_x.view(1, 2) for d in train]).double())
    levels = torch.linspace(0, 1, 10, dtype=torch.float64)[1:-1]
    saved = load_checkpoint(run / "amd" / "fold_0" / "best.pt", restore_rng=False)["model"]
    thresholds = saved["aux.encoding.thresholds"]
    assert thresholds.shape == (2, 8)
    for j in range(2):
        expected = torch.unique(torch.quantile(inputs[:, j], levels)).float()
        torch.testing.assert_close(thresholds[j, : len(expected)], expected)
        assert torch.isinf(thresholds[j, len(expected) :]).all()
    result = json.loads((run / "amd" / "fold_0" / "result.json").read_text())
    assert devmap.evaluate_main(parse("evaluate", "--run-dir", run, "--platform", "amd", "-q")) == 0
    assert json.loads((run / "amd" / "fold_0" / "result.json").read_text())["predictions"] == result["predictions"]
    directory = export_pretrained(run, output_dir=tmp_path / "models", platform="amd")
    model = pretrained(str(directory))
    assert torch.equal(model.model.aux.encoding.thresholds, thresholds)
    # the paper's model (0 bins) is still built for runs that never had the option
    paper = {k: v for k, v in config.items() if k != "aux_bins"} | {"readout_channels": 2}
    assert type(folds.network(paper, 10)).__name__ == "GGNNGraphClassifier"
    assert type(folds.network(config, 10)).__name__ == "PooledReadoutClassifier"
    with pytest.raises(UsageError, match="--aux-bins"):
        devmap.train_main(parse("train", *argv, "--aux-bins", "-1"))


def test_text_counts_scale_from_the_training_rows_and_travel_with_the_model(tiny_run, tmp_path) -> None:
    """``--text-counts``: the head's count scales are the largest log1p node-text counts of the fold's training
    kernels (in the fold's vocabulary), kept in ``best.pt``, re-tested by ``evaluate`` and exported."""
    from programl.data.vocabulary import Vocabulary
    from programl.datasets import EncodeVocabulary
    from programl.pretrained import pretrained
    from programl.pretrained.export import export_pretrained

    root, argv = tiny_run
    run = tmp_path / "counts"
    argv = [a if a != root / "run" else run for a in argv]
    assert devmap.train_main(parse("train", *argv, "--epochs", "2", "--only-folds", "0", "--text-counts")) == 0
    config = json.loads((run / "config.json").read_text())["model"]
    assert config["text_counts"] is True and config["aux_bins"] == 0
    fold = run / "amd" / "fold_0"
    vocabulary = Vocabulary.load(fold / "vocab.csv")
    train = _dataset(root, argv, "train", fold=0)
    assert vocabulary == train.vocabulary()  # the fold's vocabulary: count-ordered, from its training rows
    train.transform = EncodeVocabulary(vocabulary, train.texts)
    largest = torch.zeros(len(vocabulary) + 1)
    for d in train:
        counts = torch.bincount(d.x, minlength=len(vocabulary) + 1).float()
        largest = torch.maximum(largest, torch.log1p(counts))
    saved = load_checkpoint(fold / "best.pt", restore_rng=False)["model"]
    torch.testing.assert_close(saved["text_counts.scale"], torch.where(largest > 0, largest, torch.ones_like(largest)))
    result = json.loads((fold / "result.json").read_text())
    assert devmap.evaluate_main(parse("evaluate", "--run-dir", run, "--platform", "amd", "-q")) == 0
    assert json.loads((fold / "result.json").read_text())["predictions"] == result["predictions"]
    model = pretrained(str(export_pretrained(run, output_dir=tmp_path / "models", platform="amd")))
    assert torch.equal(model.model.text_counts.scale, saved["text_counts.scale"])
    assert type(folds.network(config, 10)).__name__ == "PooledReadoutClassifier"


def test_an_ensemble_of_one_run_with_itself_repeats_its_predictions(tiny_run, tmp_path, capsys) -> None:
    root, _ = tiny_run
    run = root / "run"
    before = json.loads((run / "amd" / "report.json").read_text())
    out = tmp_path / "ens"
    assert devmap.evaluate_main(parse("evaluate", "--run-dir", run, "--ensemble", run, "--out", out, "-q")) == 0
    report = json.loads((out / "amd" / "report.json").read_text())
    assert report["per_fold"]["accuracy"] == before["per_fold"]["accuracy"]  # the mean of p and p is p
    assert report["examples"] == before["examples"] and (out / "summary.md").is_file()
    assert json.loads((out / "summary.json").read_text())["config"]["ensemble"] == [str(run), str(run)]
    assert json.loads((run / "amd" / "report.json").read_text()) == before  # the member's reports untouched
    assert "AMD Tahiti 7970" in capsys.readouterr().out


def test_an_ensemble_averages_the_members_probabilities(tiny_run, tmp_path) -> None:
    """Two runs of other seeds: each fold's ensemble prediction is the argmax of the mean of their softmaxes."""
    root, argv = tiny_run
    other = tmp_path / "seed2"
    argv2 = [a if a != root / "run" else other for a in argv]
    assert devmap.train_main(parse("train", *argv2, "--epochs", "4", "--seed", "7")) == 0
    out = tmp_path / "ens"
    assert (
        devmap.evaluate_main(parse("evaluate", "--run-dir", root / "run", "--ensemble", other, "--out", out, "-q")) == 0
    )
    lines = (out / "amd" / "predictions.csv").read_text().splitlines()[1:]
    expected = {}
    for fold in range(3):
        test = _dataset(root, argv, "test", fold=fold)
        mean = 0.0
        for run in (root / "run", other):
            mean = mean + _probabilities(run, fold, test, "best.pt")
        for d, label in zip(test, mean.argmax(-1)):
            expected[int(d.row)] = int(label)  # predictions.csv names each kernel by its CSV row
    assert {int(line.split(",")[0]): int(line.split(",")[4]) for line in lines} == expected
    assert len(expected) == 60


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--ensemble", "RUN"], "--ensemble needs --out"),
        (["--out", "OUT"], "--out is for the reports of an --ensemble"),
    ],
)
def test_ensemble_usage_errors(tiny_run, tmp_path, extra, message) -> None:
    root, _ = tiny_run
    extra = [str(root / "run") if a == "RUN" else str(tmp_path / "o") if a == "OUT" else a for a in extra]
    with pytest.raises(UsageError, match=message):
        devmap.evaluate_main(parse("evaluate", "--run-dir", root / "run", *extra, "-q"))


def test_an_ensemble_of_runs_on_other_folds_is_a_usage_error(tiny_run, tmp_path) -> None:
    root, _ = tiny_run
    other = tmp_path / "other"
    other.mkdir()
    saved = json.loads((root / "run" / "config.json").read_text())
    saved["model"]["fold_seed"] = 1
    (other / "config.json").write_text(json.dumps(saved))
    with pytest.raises(UsageError, match="fold_seed 1, but .* has 204"):
        devmap.evaluate_main(parse("evaluate", "--run-dir", root / "run", "--ensemble", other, "--out", tmp_path / "o"))


def test_average_last_tests_by_the_mean_of_the_last_epochs_models(tiny_run, tmp_path, capsys) -> None:
    """--average-last 3 of 4 epochs keeps epochs 2-4's weights and predicts each test kernel by the argmax of the
    mean of their softmaxes; evaluate repeats it; a missing epoch is one line; export refuses the run."""
    from programl.exceptions import ProgramlError
    from programl.pretrained.export import export_pretrained

    root, argv = tiny_run
    run = tmp_path / "avg"
    argv2 = [a if a != root / "run" else run for a in argv]
    assert devmap.train_main(parse("train", *argv2, "--epochs", "4", "--average-last", "3")) == 0
    config = json.loads((run / "config.json").read_text())["model"]
    assert config["average_last"] == 3
    for fold in range(3):
        fold_dir = run / "amd" / f"fold_{fold}"
        assert sorted(p.name for p in fold_dir.glob("epoch_*.pt")) == ["epoch_002.pt", "epoch_003.pt", "epoch_004.pt"]
        result = json.loads((fold_dir / "result.json").read_text())
        assert result["averaged_epochs"] == [2, 3, 4]
        test = _dataset(root, argv, "test", fold=fold)
        mean = sum(_probabilities(run, fold, test, f"epoch_{epoch:03d}.pt") for epoch in (2, 3, 4))
        # a result's rows are the test kernels' indices in the run's data set (DevMap's indices of the split)
        predicted = dict(zip(result["rows"], result["predictions"]))
        assert sorted(predicted) == sorted(test.indices())
        assert [predicted[i] for i in test.indices()] == mean.argmax(-1).tolist()
    last = torch.load(run / "amd" / "fold_0" / "last.pt", weights_only=False)["model"]
    fourth = torch.load(run / "amd" / "fold_0" / "epoch_004.pt", weights_only=False)["model"]
    assert all(torch.equal(last[k], fourth[k]) for k in last)
    before = json.loads((run / "amd" / "report.json").read_text())
    assert devmap.evaluate_main(parse("evaluate", "--run-dir", run, "-q")) == 0
    assert json.loads((run / "amd" / "report.json").read_text())["per_fold"] == before["per_fold"]
    out = tmp_path / "ens"  # an ensemble member averages its own epochs
    assert devmap.evaluate_main(parse("evaluate", "--run-dir", run, "--ensemble", run, "--out", out, "-q")) == 0
    assert json.loads((out / "amd" / "report.json").read_text())["per_fold"] == before["per_fold"]
    with pytest.raises(ProgramlError, match="export a run without it"):
        export_pretrained(run, output_dir=tmp_path / "models", platform="amd")
    (run / "amd" / "fold_1" / "epoch_003.pt").unlink()
    (run / "amd" / "fold_1" / "result.json").unlink()
    with pytest.raises(ProgramlError, match="--average-last needs epoch_003.pt"):
        devmap.evaluate_main(parse("evaluate", "--run-dir", run, "-q"))
    with pytest.raises(UsageError, match="--average-last must be in 0..4"):
        devmap.train_main(parse("train", *argv2, "--epochs", "4", "--average-last", "5"))


def _dataset(root: Path, argv: list, split: str, fold: int):
    """The tiny run's examples of ``split`` of ``fold``, read as a user would: DevMap with the run's options (its
    ``--data-dir`` as root, ``--source-dir`` as mirror, ``--subset 60``, ``--folds 3``, the default fold seed)."""
    from programl.datasets import DevMap

    source = Path(argv[argv.index("--source-dir") + 1])
    return DevMap(root / "data", "amd", "ncc", split, fold=fold, folds=3, subset=60, mirrors=[source], log=False)


def _probabilities(run: Path, fold: int, test, checkpoint: str) -> np.ndarray:
    """The class probabilities of ``test`` (in its order) by a fold's ``checkpoint``, its texts encoded by the
    fold's ``vocab.csv``."""
    from programl.data.vocabulary import Vocabulary
    from programl.datasets import EncodeVocabulary

    fold_dir = run / "amd" / f"fold_{fold}"
    config = json.loads((run / "config.json").read_text())["model"]
    vocabulary = Vocabulary.load(fold_dir / "vocab.csv")
    encode = EncodeVocabulary(vocabulary, test.texts)
    batch = Batch.from_data_list([encode(d) for d in test])
    model = folds.network(config, len(vocabulary))
    load_checkpoint(fold_dir / checkpoint, model=model, restore_rng=False)
    model.eval()
    with torch.no_grad():
        return model(batch).logits.softmax(-1).numpy()
