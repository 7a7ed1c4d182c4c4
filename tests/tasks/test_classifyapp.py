"""Tests of programl.tasks.classifyapp on tiny real pipelines: clang-22 -> graphs -> GGNN (SPEC §6.6).

The programs are three small families of C programs (loops, recursion, string scans) with random constants and
optional statements, laid out as a POJ-104 ``codexglue/`` directory; the tests train tiny models on them.
"""

from __future__ import annotations

import argparse
import json
import os
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
    source, data_dir = dataset
    return [
        "--source",
        source,
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
    elsewhere = tmp_path / "elsewhere"  # the same programs, graphs under another --data-dir: not this run's data
    shutil.copytree(data_dir, elsewhere)
    with pytest.raises(UsageError, match=r"other options \(data_dir\)"):
        classifyapp.train_main(parse("train", *tiny((source, elsewhere), run, "--epochs", "2")))
    assert classifyapp.train_main(parse("train", *tiny(dataset, run, "--epochs", "1", "--lr", "0.5", "--restart"))) == 0


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


def test_a_damaged_graph_file_is_one_line(tmp_path) -> None:
    """docs/reliability.md: a built graph that was damaged on disk names its file (no traceback)."""
    from programl.exceptions import ProgramlError

    bad = tmp_path / "1.ProgramGraph.pb"
    bad.write_bytes(b"\xff\xff\xff not a protobuf")
    with pytest.raises(ProgramlError, match=r"1\.ProgramGraph\.pb: not a readable ProgramGraph"):
        classifyapp._read_graphs([bad], classifyapp._text_table(), "reading", False)


def test_a_run_from_its_graph_pack_needs_no_graph_files_and_equals_the_run_from_them(dataset, tmp_path) -> None:
    """``--pack``: the first run writes the pack; a run elsewhere from the pack alone (no source, no graph files, as
    on a GPU node without clang) trains the same model bit for bit."""
    source, data_dir = dataset
    pack = tmp_path / "poj.npz"
    files_run, pack_run = tmp_path / "files", tmp_path / "pack"
    assert classifyapp.train_main(parse("train", *tiny(dataset, files_run, "--epochs", "2", "--pack", pack))) == 0
    assert pack.is_file()
    moved = tmp_path / "moved.npz"  # only the pack travels: the source and the graphs are not where it was made
    shutil.copy(pack, moved)
    argv = tiny(dataset, pack_run, "--epochs", "2", "--pack", moved)
    argv[argv.index("--source") + 1] = tmp_path / "no-source"
    argv[argv.index("--data-dir") + 1] = tmp_path / "no-graphs"
    assert classifyapp.train_main(parse("train", *argv)) == 0
    # the run records where its graphs came from (so that it resumes back there as the same run)
    assert json.loads((pack_run / "config.json").read_text())["data_dir"] == str(data_dir)
    assert not (tmp_path / "no-graphs").exists()
    a = load_checkpoint(files_run / "last.pt", restore_rng=False)
    b = load_checkpoint(pack_run / "last.pt", restore_rng=False)
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    first, second = (json.loads((run / "result.json").read_text()) for run in (files_run, pack_run))
    assert first["test"] == second["test"] and first["scope"] == second["scope"]
    assert (files_run / "vocab.csv").read_text() == (pack_run / "vocab.csv").read_text()

    from programl.training import UsageError

    with pytest.raises(UsageError, match="per_class differ"):  # a pack of other graphs is refused, by name
        classifyapp.train_main(parse("train", *tiny(dataset, tmp_path / "other", "--per-class", "10", "--pack", moved)))


def synthetic_pack(path, per_split=(18, 6, 6)):
    """A graph pack of random graphs in 3 classes told apart by their node texts (no clang, no source needed)."""
    from torch_geometric.data import Data

    from programl.data.graph_pack import save_graph_pack

    generator = torch.Generator().manual_seed(0)
    splits = {}
    for name, count in zip(("train", "val", "test"), per_split):
        graphs = []
        for i in range(count):
            label, nodes = i % 3, int(torch.randint(8, 30, (1,), generator=generator))
            edges = 2 * nodes
            graphs.append(
                Data(
                    x=torch.randint(0, 2, (nodes,), generator=generator) + 2 * label,
                    node_type=torch.randint(0, 3, (nodes,), generator=generator),
                    edge_index=torch.randint(0, nodes, (2, edges), generator=generator),
                    edge_flow=torch.randint(0, 3, (edges,), generator=generator),
                    edge_pos=torch.randint(0, 3, (edges,), generator=generator),
                    graph_y=torch.tensor([label]),  # 0-based, as to_pyg gives it
                )
            )
        splits[name] = graphs
    splits["legacy"] = []
    scope = {"programs": {n: len(g) for n, g in splits.items() if n != "legacy"}, "graphs": {}, "missing": {}}
    meta = {"task": "classifyapp", "scope": scope, "settings": [0], "per_class": None, "split_seed": 204}
    save_graph_pack(path, splits, [f"text{i}" for i in range(6)], meta)
    return path


def test_training_from_a_pack_alone_on_the_default_device(tmp_path) -> None:
    """A pack is all a machine needs (no clang, no POJ-104 source): the run trains on the GPU where there is one."""
    pack = synthetic_pack(tmp_path / "pack.npz")
    nowhere = tmp_path / "nowhere"
    argv = tiny((nowhere, nowhere), tmp_path / "run", "--epochs", "6", "--pack", pack, "--device", "auto")
    argv.remove("--no-legacy")
    assert classifyapp.train_main(parse("train", *argv)) == 0
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["device"].startswith("cuda" if torch.cuda.is_available() else "cpu")
    assert result["test"]["count"] == 6 and result["test"]["accuracy"] >= 4 / 6  # chance is 1/3
    assert "legacy" not in result and not nowhere.exists()
