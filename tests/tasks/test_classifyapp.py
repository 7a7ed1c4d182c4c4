"""Tests of programl.tasks.classifyapp on tiny real pipelines: clang-22 -> graphs -> GGNN (SPEC §6.6).

The programs are three small families of C programs (loops, recursion, string scans) with random constants and
optional statements, laid out as a POJ-104 ``codexglue/`` directory; the tests train tiny models on them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.exceptions import ProgramlError  # noqa: E402
from programl.tasks.classifyapp import train as classifyapp  # noqa: E402
from programl.training import RunLock, load_checkpoint  # noqa: E402

LOOP = """int main() {{
  int n, i; long s = 0;
  scanf("%d", &n);
  {extra}
  for (i = 0; i < n; i++) {{ s += i * {a} + {b}; }}
  printf("%ld\\n", s);
  return 0;
}}
"""
RECURSION = """int f(int n) {{
  if (n <= {a}) return {b};
  {extra}
  return f(n - 1) + f(n - 2);
}}
int main() {{ int n; scanf("%d", &n); printf("%d\\n", f(n)); return 0; }}
"""
STRING = """int main() {{
  char s[{a}]; int c = 0, i;
  scanf("%s", s);
  {extra}
  for (i = 0; s[i]; i++) if (s[i] == 'a' + {b}) c++;
  printf("%d\\n", c);
  return 0;
}}
"""
EXTRAS = ["", "if (n > 100) n = 100;", "n = n % 97;", "n = n * 2 + 1;"]


def synthetic_codexglue(root, per_class: int = 15, seed: int = 0):
    rng = np.random.default_rng(seed)
    for label, template in enumerate((LOOP, RECURSION, STRING), start=1):
        for i in range(per_class):
            extra = EXTRAS[int(rng.integers(len(EXTRAS)))]
            if template is STRING:
                extra = extra.replace("n", "c")
            text = template.format(a=int(rng.integers(2, 90)), b=int(rng.integers(1, 20)), extra=extra)
            path = root / "codexglue" / str(label) / f"{i + 1}.cpp"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return root / "codexglue"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, clang22):
    root = tmp_path_factory.mktemp("synthetic")
    source = synthetic_codexglue(root)
    data_dir = root / "data"
    from programl.data import poj104

    report = poj104.build_poj104(source, data_dir, [0], programs=poj104.read_programs(source, verify=False), jobs=2)
    assert report.built == 45 and not report.failed
    return source, data_dir


def parse(command: str, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    if command == "train":
        classifyapp.add_train_arguments(parser)
    else:
        classifyapp.add_evaluate_arguments(parser)
    return parser.parse_args([str(a) for a in argv])


def tiny(dataset, run_dir, *extra: str) -> list[str]:
    """A tiny run's options; ``dataset`` is (source, data directory), the source None for none (the default)."""
    source, data_dir = dataset
    return [
        *(["--source", source] if source is not None else []),
        "--data-dir",
        data_dir,
        "--no-verify",
        "--no-legacy",
        "--no-build",
        "--run-dir",
        run_dir,
        "--hidden",
        "16",
        "--layer-timesteps",
        "1",
        "1",
        "--dropout",
        "0",
        "--lr",
        "0.01",
        "--batch-graphs",
        "6",
        "--threads",
        "1",
        "-q",
        *extra,
    ]


def test_tiny_training_beats_chance_on_held_out_programs(dataset, tmp_path, capsys) -> None:
    run = tmp_path / "run"
    assert classifyapp.train_main(parse("train", *tiny(dataset, run, "--epochs", "12"))) == 0
    result = json.loads((run / "result.json").read_text())
    assert result["scope"]["programs"] == {"train": 27, "val": 9, "test": 9}
    # 3 classes: chance is 1/3; the held-out test programs were never seen in training
    assert result["test"]["count"] == 9
    assert result["test"]["accuracy"] >= 7 / 9
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in log] == list(range(1, 13))
    assert log[-1]["train_loss"] < log[0]["train_loss"]
    for name in ("curves.png", "confusion.png", "best.pt", "last.pt", "vocab.csv", "config.json"):
        assert (run / name).is_file()
    assert "test top-1 error" in capsys.readouterr().out

    assert classifyapp.evaluate_main(parse("evaluate", "--run-dir", run, "--split", "test", "-q")) == 0
    evaluation = json.loads((run / "evaluation_best.json").read_text())
    assert evaluation["test"]["error"] == pytest.approx(result["test"]["error"])
    # every error is in one of the (at most 3) pairs of the 3 classes, named 1..3 as the source's folders
    pairs = evaluation["test"]["confused_pairs"]
    assert sum(p["count"] for p in pairs) == round(evaluation["test"]["error"] * 9)
    assert all(1 <= a < b <= 3 for a, b in (p["classes"] for p in pairs))

    # a run still training holds its directory; --out evaluates it all the same, only reading it
    with RunLock(run):
        with pytest.raises(ProgramlError, match="in use by another programl train or evaluate"):
            classifyapp.evaluate_main(parse("evaluate", "--run-dir", run, "--split", "test", "-q"))
        out = tmp_path / "evaluated"
        assert (
            classifyapp.evaluate_main(parse("evaluate", "--run-dir", run, "--split", "test", "--out", out, "-q")) == 0
        )
    assert json.loads((out / "evaluation_best.json").read_text()) == evaluation
    assert (out / "confusion.png").is_file() and not (out / "best.pt").exists()


def test_resumed_run_equals_uninterrupted_run(dataset, tmp_path) -> None:
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert classifyapp.train_main(parse("train", *tiny(dataset, straight, "--epochs", "3"))) == 0
    assert classifyapp.train_main(parse("train", *tiny(dataset, resumed, "--epochs", "1"))) == 0
    assert classifyapp.train_main(parse("train", *tiny(dataset, resumed, "--epochs", "3"))) == 0
    a = load_checkpoint(straight / "last.pt", restore_rng=False)
    b = load_checkpoint(resumed / "last.pt", restore_rng=False)
    assert a["epoch"] == b["epoch"] == 3
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    log = [json.loads(line)["epoch"] for line in (resumed / "log.jsonl").read_text().splitlines()]
    assert log == [1, 2, 3]


def test_changed_options_need_restart(dataset, tmp_path) -> None:
    from programl.training import UsageError

    run = tmp_path / "run"
    assert classifyapp.train_main(parse("train", *tiny(dataset, run, "--epochs", "1"))) == 0
    with pytest.raises(UsageError, match="other options"):
        classifyapp.train_main(parse("train", *tiny(dataset, run, "--epochs", "2", "--lr", "0.5")))
    source, data_dir = dataset
    # another --data-dir whose data set holds other graphs (one program fewer): not this run's data
    other = tmp_path / "other-source" / "codexglue"
    shutil.copytree(source, other)
    (other / "2" / "3.cpp").unlink()
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(data_dir, elsewhere, ignore=shutil.ignore_patterns("raw", "processed"))
    with pytest.raises(UsageError, match=r"other options \(data_dir\)"):
        classifyapp.train_main(parse("train", *tiny((other, elsewhere), run, "--epochs", "2")))
    assert classifyapp.train_main(parse("train", *tiny(dataset, run, "--epochs", "1", "--lr", "0.5", "--restart"))) == 0


def test_config_takes_the_options_of_a_real_run(dataset, tmp_path) -> None:
    """``--config`` of the config.json a run wrote (its data digest and scope beside the options) gives that run's
    options again: the same model options, the same data directory (it was refused: 'data_sha256' is not an
    option), and the same run resumed."""
    run = tmp_path / "run"
    argv = tiny(dataset, run, "--epochs", "1", "--lr", "0.02", "--seed", "5")
    assert classifyapp.train_main(parse("train", *argv)) == 0
    saved = json.loads((run / "config.json").read_text())
    assert saved["data_sha256"] and saved["scope"]
    again = parse("train", "--config", run / "config.json", "--run-dir", run, "--epochs", "2", "--no-build", "-q")
    assert classifyapp.ClassifyappOptions.from_args(again).config() == saved["model"]
    assert again.data_dir == str(dataset[1]) and again.seed == 5 and again.lr == 0.02
    assert classifyapp.train_main(again) == 0  # resumed: the same options
    log = [json.loads(line)["epoch"] for line in (run / "log.jsonl").read_text().splitlines()]
    assert log == [1, 2]
    # evaluate reads the options back checked: a hand-edited value is one line naming the file
    from programl.exceptions import ProgramlError

    for key, value, reason in [("settings", [9], "--settings must be in 0..7, not 9"), ("hidden", 16.5, "hidden = ")]:
        (tmp_path / key).mkdir()
        (tmp_path / key / "config.json").write_text(json.dumps({**saved, "model": {**saved["model"], key: value}}))
        with pytest.raises(ProgramlError, match=f"^{tmp_path / key / 'config.json'}: {reason}"):
            classifyapp.evaluate_main(parse("evaluate", "--run-dir", tmp_path / key, "-q"))


def test_training_on_variants_scored_on_one_setting(dataset, tmp_path) -> None:
    """``--settings 0 1 --eval-settings 0``: the training split holds both compilations of each program, the model
    is chosen and tested on -O0 graphs only (the -O1 graphs of validation and test programs are never built)."""
    source, data_dir = dataset
    data = tmp_path / "data"
    shutil.copytree(data_dir, data, ignore=shutil.ignore_patterns("raw", "processed"))
    run = tmp_path / "run"
    argv = [a for a in tiny((source, data), run, "--epochs", "1") if a != "--no-build"]
    assert classifyapp.train_main(parse("train", *argv, "--settings", "0", "1", "--eval-settings", "0", "-j", "1")) == 0
    result = json.loads((run / "result.json").read_text())
    assert result["scope"]["graphs"] == {"train": 54, "val": 9, "test": 9, "legacy": 0}
    assert result["test"]["count"] == 9
    config = json.loads((run / "config.json").read_text())["model"]
    assert config["settings"] == [0, 1] and config["eval_settings"] == [0]
    built = {p.name.split(".")[2] for p in (data / "graphs").iterdir()}
    assert built == {"0", "1"} and len(list((data / "graphs").iterdir())) == 45 + 27


def test_eval_settings_kept_as_the_data_set_reads_them() -> None:
    """``--eval-settings`` is ascending and each setting once; naming the training settings (in any order) makes it
    a single-setting run (None), so the card says nothing of it and a resumption with or without it is the same."""
    from programl.tasks.classifyapp.spec import ClassifyappOptions

    def options(settings, eval_settings):
        return ClassifyappOptions(settings=settings, eval_settings=eval_settings, seed=0)

    assert options([0, 1, 2, 3], [0]).eval_settings == [0]
    assert options([0, 1], [1, 0, 1]).eval_settings is None
    assert options([3, 1], [1, 3]).eval_settings is None
    assert options([0], [2, 1, 2]).eval_settings == [1, 2]
    assert options([0], None).eval_settings is None


def test_rgcn_alternative(dataset, tmp_path) -> None:
    run = tmp_path / "rgcn"
    assert classifyapp.train_main(parse("train", *tiny(dataset, run, "--epochs", "1", "--model", "rgcn"))) == 0
    model = classifyapp.rgcn_graph_classifier(10, 104, hidden_channels=8, layer_timesteps=[2, 1])
    assert len(model.convs) == 2 and model.schedule == [0, 0, 1]
    assert json.loads((run / "result.json").read_text())["test"]["count"] == 9


@pytest.mark.skipif(
    shutil.which("torchrun") is None and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "torchrun")),
    reason="torchrun not installed",
)
def test_ddp_with_torchrun_on_two_cpu_processes(dataset, tmp_path) -> None:
    torchrun = shutil.which("torchrun") or os.path.join(os.path.dirname(sys.executable), "torchrun")
    run = tmp_path / "ddp"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    command = [
        torchrun,
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "programl.tasks.classifyapp",
        "train",
        *map(str, tiny(dataset, run, "--epochs", "2", "--device", "cpu")),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads((run / "config.json").read_text())
    assert config["world_size"] == 2
    result = json.loads((run / "result.json").read_text())
    assert result["world_size"] == 2 and result["test"]["count"] == 9
    assert [json.loads(line)["epoch"] for line in (run / "log.jsonl").read_text().splitlines()] == [1, 2]
    assert "test top-1 error" in done.stdout


def test_quiet_means_no_epoch_lines_as_in_the_other_tasks(dataset, tmp_path, capsys) -> None:
    assert classifyapp.train_main(parse("train", *tiny(dataset, tmp_path / "quiet", "--epochs", "1"))) == 0
    assert "epoch 1:" not in capsys.readouterr().err
    loud = [a for a in tiny(dataset, tmp_path / "loud", "--epochs", "1") if a != "-q"]
    assert classifyapp.train_main(parse("train", *loud)) == 0
    err = capsys.readouterr().err
    assert "epoch 1: train loss" in err and "\r" not in err  # and no progress bars into a captured stderr


def _graphs_only(data_dir, to):
    """A copy of the fixture's graph directory (as ``programl train classifyapp`` wrote it before the data set
    layout: ``graphs/`` and ``manifest.jsonl`` at its top), without the data set's ``raw/`` and ``processed/``."""
    shutil.copytree(data_dir, to, ignore=shutil.ignore_patterns("raw", "processed"))
    return to


def test_a_damaged_graph_file_is_one_line(dataset, tmp_path) -> None:
    """docs/reliability.md: a built graph that was damaged on disk names its file (no traceback)."""
    source, data_dir = dataset
    copy = _graphs_only(data_dir, tmp_path / "data")
    bad = sorted((copy / "graphs").glob("*.ProgramGraph.pb"))[0]
    bad.write_bytes(b"\xff\xff\xff not a protobuf")
    with pytest.raises(ProgramlError, match=rf"{re.escape(bad.name)}: not a readable ProgramGraph"):
        classifyapp.train_main(parse("train", *tiny((source, copy), tmp_path / "run", "--epochs", "1")))


def test_no_build_refuses_graphs_that_were_never_built(dataset, tmp_path) -> None:
    """``--no-build`` collates the graphs there are; one that was never built would be missing from the processed
    files for good, so it is a one-line error instead (a program that failed to compile is only left out)."""
    source, data_dir = dataset
    copy = _graphs_only(data_dir, tmp_path / "data")
    gone = sorted((copy / "graphs").glob("*.ProgramGraph.pb"))[3]
    gone.unlink()
    with pytest.raises(ProgramlError, match=r"1 graphs of this selection are not built .*without --no-build"):
        classifyapp.train_main(parse("train", *tiny((source, copy), tmp_path / "run", "--epochs", "1")))


def test_a_run_moves_with_the_processed_files_alone(dataset, tmp_path, monkeypatch) -> None:
    """The data set root's processed files are all a run needs (what a graph pack was): a run begun here and resumed
    under another root that holds only them (no source, no graph files, no clang: a GPU machine) is the same run,
    and trains the same model bit for bit as a run that never moved."""
    source, data_dir = dataset
    straight, moved = tmp_path / "straight", tmp_path / "moved"
    assert classifyapp.train_main(parse("train", *tiny(dataset, straight, "--epochs", "2"))) == 0
    assert classifyapp.train_main(parse("train", *tiny(dataset, moved, "--epochs", "1"))) == 0
    elsewhere = copy_processed(data_dir, tmp_path / "elsewhere")
    monkeypatch.chdir(tmp_path)  # no ../shared/data here: no source at all
    monkeypatch.delenv("PROGRAML_SHARED_DATA", raising=False)
    assert classifyapp.train_main(parse("train", *tiny((None, elsewhere), moved, "--epochs", "2"))) == 0
    assert sorted(p.name for p in elsewhere.iterdir()) == ["processed"]  # nothing fetched, nothing built
    a = load_checkpoint(straight / "last.pt", restore_rng=False)
    b = load_checkpoint(moved / "last.pt", restore_rng=False)
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    first, second = (json.loads((run / "result.json").read_text()) for run in (straight, moved))
    assert first["test"] == second["test"] and first["scope"] == second["scope"]
    configs = [json.loads((run / "config.json").read_text()) for run in (straight, moved)]
    assert configs[1]["data_dir"] == str(elsewhere) and configs[0]["data_sha256"] == configs[1]["data_sha256"]


def test_a_run_from_before_the_data_set_layout_is_evaluated_from_its_graphs(dataset, tmp_path, monkeypatch) -> None:
    """A run made before training read :class:`programl.datasets.POJ104`: its ``config.json`` names a directory of
    the old layout (``graphs/``, ``manifest.jsonl``; no ``raw/``, ``processed/``) and holds no data digest.
    ``programl evaluate`` collates its graphs where they are (nothing built) from the programs of ``--source``, and
    without a source says so in one line."""
    source, data_dir = dataset
    old = _graphs_only(data_dir, tmp_path / "old-data")
    run = tmp_path / "run"
    assert classifyapp.train_main(parse("train", *tiny((source, old), run, "--epochs", "1"))) == 0
    result = json.loads((run / "result.json").read_text())
    shutil.rmtree(old / "raw")  # as the earlier code left it
    shutil.rmtree(old / "processed")
    config = json.loads((run / "config.json").read_text())
    del config["data_sha256"]
    (run / "config.json").write_text(json.dumps(config))
    manifest = (old / "manifest.jsonl").read_bytes()

    monkeypatch.chdir(tmp_path)  # no ../shared/data here
    monkeypatch.delenv("PROGRAML_SHARED_DATA", raising=False)
    from programl.training import UsageError

    with pytest.raises(UsageError, match=r"must be processed and no source was found: give --source PATH"):
        classifyapp.evaluate_main(parse("evaluate", "--run-dir", run, "--split", "test", "-q"))
    argv = ["--run-dir", run, "--split", "test", "--source", source, "--no-verify", "-q"]
    assert classifyapp.evaluate_main(parse("evaluate", *argv)) == 0
    evaluation = json.loads((run / "evaluation_best.json").read_text())
    assert evaluation["test"] == result["test"]
    assert (old / "manifest.jsonl").read_bytes() == manifest and not (old / "processed" / "build").exists()


def copy_processed(root, to):
    """``to``, a data set root holding only the processed files of ``root`` (no raw files, no build)."""
    (to / "processed").mkdir(parents=True)
    for path in (root / "processed").iterdir():
        if path.is_file() and path.suffix in (".pt", ".json"):
            shutil.copy(path, to / "processed" / path.name)
    return to


def synthetic_data_set(root, per_class: int = 10):
    """A POJ-104 data set root of random graphs in 3 classes told apart by their node texts, made without clang or
    POJ-104: the programs' graphs are written where a build puts them, and :class:`~programl.datasets.POJ104`
    collates them (``build=False``). Returns a root that holds only the processed files, as one copied to another
    machine."""
    from programl.data import poj104
    from programl.datasets import POJ104
    from programl.proto import ProgramGraph

    rng = np.random.default_rng(0)
    source, made = root / "source" / "codexglue", root / "made"
    graphs = made / "processed" / "build" / "graphs"
    graphs.mkdir(parents=True)
    for label in (1, 2, 3):
        for n in range(1, per_class + 1):
            (source / str(label)).mkdir(parents=True, exist_ok=True)
            (source / str(label) / f"{n}.cpp").write_text(f"int main() {{ return {label * 1000 + n}; }}\n")
            graph = ProgramGraph()
            nodes = int(rng.integers(8, 30))
            for _ in range(nodes):
                node = graph.node.add()
                node.type, node.text = int(rng.integers(0, 3)), f"text{2 * (label - 1) + int(rng.integers(0, 2))}"
            for _ in range(2 * nodes):
                edge = graph.edge.add()
                edge.flow, edge.position = int(rng.integers(0, 3)), int(rng.integers(0, 3))
                edge.source, edge.target = int(rng.integers(0, nodes)), int(rng.integers(0, nodes))
            graph.features.feature["poj104_label"].int64_list.value[:] = [label]
            name = poj104.graph_name(f"{label}.{n}", 0)
            (graphs / f"{name}.ProgramGraph.pb").write_bytes(graph.SerializeToString())
    POJ104(made, "train", mirrors=[source], verify=False, build=False, log=False)
    return copy_processed(made, root / "data")


def test_training_from_processed_files_alone_on_the_default_device(tmp_path, monkeypatch) -> None:
    """A data set's processed files are all a machine needs (no clang, no POJ-104 source): the run trains on the GPU
    where there is one."""
    root = synthetic_data_set(tmp_path / "poj")
    monkeypatch.chdir(tmp_path)  # no ../shared/data here: no source, no legacy test set
    monkeypatch.delenv("PROGRAML_SHARED_DATA", raising=False)
    argv = tiny((None, root), tmp_path / "run", "--epochs", "6", "--device", "auto")
    argv.remove("--no-legacy")
    assert classifyapp.train_main(parse("train", *argv)) == 0
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["device"].startswith("cuda" if torch.cuda.is_available() else "cpu")
    assert result["scope"]["programs"] == {"train": 18, "val": 6, "test": 6}
    assert result["test"]["count"] == 6 and result["test"]["accuracy"] >= 4 / 6  # chance is 1/3
    assert "legacy" not in result and sorted(p.name for p in root.iterdir()) == ["processed"]


def test_confused_pairs_sum_both_directions_most_first() -> None:
    """Class 3 taken for 5 once and 5 for 3 twice is one pair of 3 errors, ahead of the pair (1, 2) with 1; right
    answers count nowhere; classes are the labels plus one (POJ-104's folders), shares of all errors."""
    targets = np.array([2, 4, 4, 0, 7, 7])
    predictions = np.array([4, 2, 2, 1, 7, 7])
    assert classifyapp.confused_pairs(targets, predictions) == [
        {"classes": [3, 5], "count": 3, "share": 0.75},
        {"classes": [1, 2], "count": 1, "share": 0.25},
    ]
    assert classifyapp.confused_pairs(targets, predictions, top=1) == [{"classes": [3, 5], "count": 3, "share": 0.75}]
    assert classifyapp.confused_pairs(targets, targets) == []


def test_the_printed_result_names_the_most_confused_pairs() -> None:
    """The result line, then per split its first three pairs; a split without errors adds no line."""
    pairs = [{"classes": [26, 62], "count": 74, "share": 0.16}, {"classes": [13, 53], "count": 40, "share": 0.09}]
    result = {
        "test": {"error": 0.0, "count": 5, "confused_pairs": []},
        "val": {"error": 0.047, "count": 10006, "confused_pairs": pairs},
    }
    lines = classifyapp._result_line(result).splitlines()
    assert lines[0].startswith("classifyapp: test top-1 error 0.00 % (5 graphs); val top-1 error 4.70 % (10006 graphs)")
    assert lines[1:] == ["  val: most confused class pairs (errors both ways): 26/62 74, 13/53 40"]


def test_numbers_and_types_start_from_the_paper_models_weights_and_learn_them(dataset, tmp_path) -> None:
    """``--numbers-and-types`` (issue 40 item 2, beside devmap's): the examples carry ``x_num`` / ``x_type`` in
    processed files of their own; weights of the paper's model start such a model (``--init-from``) with the new
    embedding at zero, so it first computes their logits exactly; training then moves it off zero; the run is
    evaluated and exported with the option, and ``predict`` annotates a plain graph for it."""
    from torch_geometric.loader import DataLoader

    from programl.datasets import POJ104
    from programl.pretrained.export import export_pretrained
    from programl.pretrained.hub import pretrained
    from programl.proto import ProgramGraph
    from programl.tasks.classifyapp.predict import predict_classifyapp

    source, data_dir = dataset
    data = tmp_path / "data"
    shutil.copytree(data_dir, data, ignore=shutil.ignore_patterns("raw", "processed"))
    plain = tmp_path / "plain"
    assert classifyapp.train_main(parse("train", *tiny((source, data), plain, "--epochs", "2"))) == 0
    run = tmp_path / "numbers"
    argv = tiny((source, data), run, "--epochs", "2", "--numbers-and-types", "--init-from", plain / "best.pt")
    assert classifyapp.train_main(parse("train", *argv)) == 0

    config = json.loads((run / "config.json").read_text())["model"]
    assert config["numbers_and_types"] is True
    processed = sorted(p.name for p in (data / "processed").glob("poj104-*.pt"))
    assert len(processed) == 6 and sum(name.endswith("-nt-train.pt") for name in processed) == 1
    val = POJ104(data, "val", build_dir=data, build=False, verify=False, numbers_and_types=True)
    example = val[0]
    assert example.x_num.shape == (example.num_nodes, 10) and example.x_type.shape == (example.num_nodes, 6)
    assert int((example.x_num[:, 0] > 0).sum()) > 0  # the programs' constants carry their values

    # the paper's weights in the larger model: the same logits as the paper's model, the new embedding at zero
    vocabulary = classifyapp._load_vocabulary(plain / "vocab.csv")
    classifyapp._encode({"val": val}, vocabulary)
    _starts_from_the_loaded_logits(
        plain, config, vocabulary, next(iter(DataLoader(val, batch_size=9))), "numbers_and_types"
    )
    # trained: the embedding has moved off zero
    trained = load_checkpoint(run / "last.pt", restore_rng=False)["model"]
    assert float(trained["numbers_and_types.digits.weight"].abs().sum()) > 0

    assert classifyapp.evaluate_main(parse("evaluate", "--run-dir", run, "--split", "test", "-q")) == 0
    assert json.loads((run / "evaluation_best.json").read_text())["test"]["count"] == 9
    model = pretrained(export_pretrained(run, "classifyapp-nt", output_dir=tmp_path / "models"))
    assert json.loads((tmp_path / "models" / "classifyapp-nt" / "model.json").read_text())["model"]["kwargs"][
        "numbers_and_types"
    ]
    graph = ProgramGraph.FromString(next((data / "graphs").glob("1.*.ProgramGraph.pb")).read_bytes())
    prediction = predict_classifyapp(model, graph, top=3)  # a graph built without them: annotated for the model
    assert len(prediction.classes) == 3 and sum(prediction.probabilities) <= 1 + 1e-6

    # --string-bytes (issue 40 item 4) from the numbers-and-types run: its own processed files, the string
    # embedding at zero (the numbers run's logits exactly), then learned; predict annotates a plain graph again
    strings = tmp_path / "strings"
    argv = tiny((source, data), strings, "--epochs", "2", "--numbers-and-types", "--string-bytes", "--init-from", run)
    assert classifyapp.train_main(parse("train", *argv, "--new-inputs-lr", "0.01")) == 0
    config = json.loads((strings / "config.json").read_text())["model"]
    assert config["string_bytes"] is True and config["numbers_and_types"] is True and config["new_inputs_lr"] == 0.01
    groups = load_checkpoint(strings / "last.pt", restore_rng=False)["optimizer"]["param_groups"]
    assert len(groups) == 2 and groups[1]["lr"] / groups[0]["lr"] == pytest.approx(0.01 / config["lr"])
    resumed = tiny(
        (source, data), strings, "--epochs", "3", "--numbers-and-types", "--string-bytes", "--init-from", run
    )
    assert classifyapp.train_main(parse("train", *resumed, "--new-inputs-lr", "0.01")) == 0  # the two groups resume
    assert [json.loads(line)["epoch"] for line in (strings / "log.jsonl").read_text().splitlines()] == [1, 2, 3]
    assert len(list((data / "processed").glob("poj104-*-nt-str-*.pt"))) == 3
    val = POJ104(data, "val", build_dir=data, build=False, verify=False, numbers_and_types=True, string_bytes=True)
    example = val[0]
    assert example.x_str.shape == (example.num_nodes, 17) and int((example.x_str[:, 0] > 0).sum()) > 0  # printf's
    classifyapp._encode({"val": val}, vocabulary)
    _starts_from_the_loaded_logits(run, config, vocabulary, next(iter(DataLoader(val, batch_size=9))), "string_bytes")
    trained = load_checkpoint(strings / "last.pt", restore_rng=False)["model"]
    assert float(trained["string_bytes.bytes.weight"].abs().sum()) > 0
    model = pretrained(export_pretrained(strings, "classifyapp-str", output_dir=tmp_path / "models"))
    prediction = predict_classifyapp(model, graph, top=3)
    assert len(prediction.classes) == 3 and sum(prediction.probabilities) <= 1 + 1e-6


def _starts_from_the_loaded_logits(loaded_run, config: dict, vocabulary, batch, new: str) -> None:
    """``loaded_run``'s best weights in a model of ``config``, which adds the input embedding ``new``: that embedding
    starts at zero, so the larger model computes the loaded model's logits exactly."""
    from programl.training.checkpoint import load_initial_weights

    loaded = classifyapp._make_model(json.loads((loaded_run / "config.json").read_text())["model"], len(vocabulary))
    load_checkpoint(loaded_run / "best.pt", model=loaded, restore_rng=False)
    larger = classifyapp._make_model(config, len(vocabulary))
    load_initial_weights(loaded_run / "best.pt", model=larger, missing_ok=larger.init_from_missing_ok)
    assert all(not p.detach().any() for p in getattr(larger, new).parameters())
    loaded.eval(), larger.eval()
    with torch.no_grad():
        assert torch.equal(loaded(batch).logits, larger(batch).logits)


def test_numbers_and_types_are_a_ggnn_option() -> None:
    from programl.tasks.classifyapp.spec import ClassifyappSpec

    config = {"model": "rgcn", "hidden": 8, "layer_timesteps": [1], "dropout": 0.0, "numbers_and_types": True}
    with pytest.raises(ProgramlError, match="ggnn option"):
        ClassifyappSpec().model_spec(config, 10)
    paper = ClassifyappSpec().model_spec({**config, "model": "ggnn", "no_positions": False, "node_type_gru": False}, 10)
    assert paper["kwargs"]["numbers_and_types"] is True
    del config["numbers_and_types"]
    plain = ClassifyappSpec().model_spec({**config, "model": "ggnn", "no_positions": False, "node_type_gru": False}, 10)
    assert "numbers_and_types" not in plain["kwargs"]  # the paper's model.json as it was
    assert "string_bytes" not in plain["kwargs"]
    with pytest.raises(ProgramlError, match="--string-bytes is a ggnn option"):
        ClassifyappSpec().model_spec({**config, "string_bytes": True}, 10)


def test_new_inputs_lr_puts_the_optional_embeddings_in_a_group_of_their_own() -> None:
    from programl.models.graph_classifier import GGNNGraphClassifier
    from programl.tasks.classifyapp.train import _parameter_groups

    both = GGNNGraphClassifier(5, 2, hidden_channels=8, layer_timesteps=[1], numbers_and_types=True, string_bytes=True)
    groups = _parameter_groups(both, 1e-3)
    names = {id(p): n for n, p in both.named_parameters()}
    assert [g.get("lr") for g in groups] == [None, 1e-3]
    assert {names[id(p)].split(".")[0] for p in groups[1]["params"]} == {"numbers_and_types", "string_bytes"}
    assert len(groups[0]["params"]) + len(groups[1]["params"]) == len(list(both.parameters()))
    # without the option, or without such embeddings: one group, as before
    assert len(_parameter_groups(both, None)) == 1
    assert len(_parameter_groups(GGNNGraphClassifier(5, 2, hidden_channels=8, layer_timesteps=[1]), 1e-3)) == 1
