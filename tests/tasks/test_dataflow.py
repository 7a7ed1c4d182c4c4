"""``programl train|evaluate dataflow`` (programl.tasks.dataflow): the SPEC §6.1 protocol end to end on a tiny
DeepDataFlow data set, exact resumption (after an epoch and within one), a two-process DDP run, evaluation."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import programl

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.data.deepdataflow import build_dataset, discover_inputs  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from programl.tasks.dataflow import train as dataflow  # noqa: E402
from tests.data._ddf import write_sources  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
REPO = DATA.parents[1]
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def ddf(tmp_path_factory) -> Path:
    src = write_sources(tmp_path_factory.mktemp("src"), chains=(2, 3, 4, 6, 8, 10, 12, 14, 16, 18, 20))
    root = tmp_path_factory.mktemp("ddf")
    build_dataset(discover_inputs([src]), root, jobs=2)
    return root


def _train(ddf: Path, run_dir: Path, *extra: str, schedule=("30", "60")) -> int:
    args = ["train", "--analysis", "datadep", "--dataset", str(ddf), "--run-dir", str(run_dir), "--threads", "1"]
    args += ["--train-examples", *schedule, "--val-examples", "20", "--batch-nodes", "600", "-q", *extra]
    return dataflow.main(args)


def _digest(run_dir: Path) -> str:
    return json.loads((run_dir / "result.json").read_text())["ddp"]["parameter_digests"][0]


def _records(run_dir: Path) -> list[dict]:
    drop = ("seconds", "elapsed_seconds", "val_seconds")
    lines = (run_dir / "log.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in drop} for line in lines]


def test_train_writes_a_complete_run(ddf: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert _train(ddf, run, "--test-steps", "30", "60", "200", "--test-examples", "0", "0", "5") == 0
    line = capsys.readouterr().out
    assert "dataflow datadep test: T=30" in line and "paper DDF-30: P 0.998 R 0.997 F1 0.997" in line
    for name in ("config.json", "vocab.csv", "log.jsonl", "log.csv", "best.pt", "last.pt", "result.json"):
        assert (run / name).is_file(), name
    assert (run / "curves.png").read_bytes()[:8] == PNG and (run / "confusion.png").read_bytes()[:8] == PNG
    records = _records(run)
    assert [r["epoch"] for r in records] == [1, 2]
    assert records[0]["train_examples"] >= 30 and records[1]["train_examples"] >= 60
    result = json.loads((run / "result.json").read_text())
    tests = result["tests"]
    assert sorted(tests) == ["T200", "T30", "T60"]
    assert tests["T200"]["examples"] == 5 and tests["T30"]["examples"] == tests["T30"]["examples_available"]
    for test in tests.values():
        assert 0 <= test["precision"] <= 1 and 0 <= test["recall"] <= 1 and 0 <= test["f1"] <= 1
        assert sum(map(sum, test["confusion_matrix"])) == test["nodes"]
    assert result["best_epoch"] in (1, 2) and result["world_size"] == 1 and result["ddp"]["agree"]
    assert result["threads"] == 1  # --threads 1
    config = json.loads((run / "config.json").read_text())
    assert config["model"]["lr"] == 2.5e-4 and config["model"]["max_steps"] == 30
    scope = config["scope"]
    assert config["model"]["batch_nodes"] == 600 and scope["val_examples"] == min(20, scope["val_examples_available"])


def test_resuming_after_an_epoch_is_exact(ddf: Path, tmp_path: Path) -> None:
    assert _train(ddf, tmp_path / "whole", "--test-steps", "30") == 0
    assert _train(ddf, tmp_path / "split", "--test-steps", "30", schedule=("30",)) == 0
    assert _train(ddf, tmp_path / "split", "--test-steps", "30") == 0  # resumes after epoch 1
    assert _digest(tmp_path / "whole") == _digest(tmp_path / "split")
    assert _records(tmp_path / "whole") == _records(tmp_path / "split")


def test_resuming_within_an_epoch_is_exact(ddf: Path, tmp_path: Path, monkeypatch) -> None:
    assert _train(ddf, tmp_path / "whole", "--test-steps", "30") == 0
    calls = {"n": 0}
    step = torch.optim.AdamW.step

    def interrupted(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # in the middle of the first epoch (of 3 batches), after 1 step was checkpointed
            raise KeyboardInterrupt
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _train(ddf, tmp_path / "cut", "--test-steps", "30", "--checkpoint-minutes", "0")
    state = torch.load(tmp_path / "cut" / "last.pt", weights_only=True)["extra"]["state"]
    assert state["epoch"] == 0 and state["cursor"] == 1 and state["partial"] is not None
    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    assert _train(ddf, tmp_path / "cut", "--test-steps", "30") == 0
    assert _digest(tmp_path / "whole") == _digest(tmp_path / "cut")
    assert _records(tmp_path / "whole") == _records(tmp_path / "cut")


def test_resuming_with_other_options_is_refused(ddf: Path, tmp_path: Path) -> None:
    assert _train(ddf, tmp_path / "run", "--test-steps", "30", schedule=("30",)) == 0
    with pytest.raises(SystemExit) as info:
        _train(ddf, tmp_path / "run", "--test-steps", "30", "--lr", "0.01")
    assert info.value.code == 2
    assert _train(ddf, tmp_path / "run", "--test-steps", "30", "--lr", "0.01", "--restart") == 0


def test_evaluate_reproduces_the_test_of_training(ddf: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert _train(ddf, run, "--test-steps", "30", "200") == 0
    trained = json.loads((run / "result.json").read_text())["tests"]
    assert dataflow.main(["evaluate", "--run-dir", str(run), "--test-steps", "30", "200", "-q"]) == 0
    evaluated = json.loads((run / "evaluation_best_test.json").read_text())["tests"]
    for key in ("T30", "T200"):
        for metric in ("precision", "recall", "f1", "accuracy", "examples", "confusion_matrix"):
            assert evaluated[key][metric] == trained[key][metric], (key, metric)
    assert "dataflow datadep test" in capsys.readouterr().out
    assert dataflow.main(["evaluate", "--run-dir", str(run), "--split", "val", "--test-steps", "30", "-q"]) == 0
    assert (run / "evaluation_best_val.json").is_file()


def test_scoring_does_not_follow_the_training_batches(ddf: Path, tmp_path: Path, capsys) -> None:
    """The same predictions (one checkpoint) score the same per-batch F1 whatever the training --batch-nodes: the
    validation and test batches hold --eval-batch-nodes (10,000) nodes; the pooled F1 is reported beside it and does
    not depend on the batching at all (issue 10 item 3)."""
    run = tmp_path / "run"
    assert _train(ddf, run, "--test-steps", "200", schedule=("30",)) == 0
    result = json.loads((run / "result.json").read_text())["tests"]["T200"]
    assert result["batch_nodes"] == 10_000 and result["batch_policy"] == "carry"
    assert result["examples_scored"] == result["examples"] and 0 <= result["pooled_f1"] <= 1
    record = json.loads((run / "log.jsonl").read_text().splitlines()[0])
    assert {"val_f1", "val_pooled_f1", "train_f1", "train_pooled_f1"} <= set(record)
    assert "pooled F1" in capsys.readouterr().out
    scores = {}
    for training_batch in (600, 7):  # as if trained in other batches: the same weights, another --batch-nodes
        config = json.loads((run / "config.json").read_text())
        config["model"]["batch_nodes"] = training_batch
        (run / "config.json").write_text(json.dumps(config))
        assert dataflow.main(["evaluate", "--run-dir", str(run), "--test-steps", "200", "-q"]) == 0
        scores[training_batch] = json.loads((run / "evaluation_best_test.json").read_text())["tests"]["T200"]
    for key in ("f1", "precision", "recall", "pooled_f1", "batches", "confusion_matrix"):
        assert scores[600][key] == scores[7][key] == result[key], key
    # small scoring batches change the per-batch F1 (ProGraML's), never the pooled F1
    assert dataflow.main(["evaluate", "--run-dir", str(run), "--test-steps", "200", "--eval-batch-nodes", "40"]) == 0
    small = json.loads((run / "evaluation_best_test.json").read_text())["tests"]["T200"]
    assert small["batch_nodes"] == 40 and small["batches"] > result["batches"]
    assert small["pooled_f1"] == result["pooled_f1"] and small["confusion_matrix"] == result["confusion_matrix"]
    # the original code's policy leaves out the examples over the budget and those that overflow a batch
    argv = ["evaluate", "--run-dir", str(run), "--test-steps", "200", "--eval-batch-nodes", "40"]
    assert dataflow.main([*argv, "--eval-batch-policy", "drop", "-q"]) == 0
    dropped = json.loads((run / "evaluation_best_test.json").read_text())["tests"]["T200"]
    assert dropped["batch_policy"] == "drop" and dropped["examples_scored"] < dropped["examples"]
    assert sum(map(sum, dropped["confusion_matrix"])) == dropped["nodes"] < result["nodes"]


def test_evaluation_batches_ignore_the_training_batch_size() -> None:
    sizes = np.array([30, 5000, 4000, 2000, 12000, 10])
    for training in ({"batch_nodes": 100, "batch_policy": "carry"}, {"batch_nodes": 50_000, "batch_policy": "drop"}):
        assert dataflow._eval_plan(sizes, dataflow.DataflowOptions(seed=0, **training)) == [[0, 1, 2], [3], [4], [5]]
    original = dataflow.DataflowOptions(seed=0, eval_batch_nodes=10_000, eval_batch_policy="drop")
    assert dataflow._eval_plan(sizes, original) == [[0, 1, 2], [5]]  # 2000 overflowed, 12000 is over the budget


def test_config_reads_back_the_config_json_of_a_run(ddf: Path, tmp_path: Path) -> None:
    first = tmp_path / "first"
    assert _train(ddf, first, "--test-steps", "30", "--seed", "9", schedule=("30",)) == 0
    config = first / "config.json"
    again = tmp_path / "again"
    argv = ["train", "--config", str(config), "--run-dir", str(again), "--threads", "1", "-q", "--test-steps", "30"]
    assert dataflow.main(argv) == 0
    assert json.loads((again / "config.json").read_text())["model"] == json.loads(config.read_text())["model"]
    assert _digest(again) == _digest(first)  # the same options: the same run
    other = tmp_path / "other"
    assert dataflow.main([*argv[:4], str(other), *argv[5:], "--lr", "0.01"]) == 0  # options after it override it
    changed = json.loads((other / "config.json").read_text())["model"]
    assert changed["lr"] == 0.01 and changed["seed"] == 9 and changed["analysis"] == "datadep"
    (tmp_path / "devmap.json").write_text(json.dumps({"task": "devmap", "model": {}}))
    (tmp_path / "broken.json").write_text('{"model": {"analysis": "datadep",}}')
    for bad in (
        ["--config", str(tmp_path / "devmap.json")],
        ["--config", str(tmp_path / "broken.json")],
        ["--config", str(tmp_path / "none.json")],
        ["--dataset", str(ddf)],
    ):
        with pytest.raises(SystemExit) as info:
            dataflow.main(["train", *bad, "--run-dir", str(tmp_path / "bad")])
        assert info.value.code == 2, bad


def test_usage_errors(ddf: Path, tmp_path: Path) -> None:
    for bad in (["--train-examples", "50", "20"], ["--test-examples", "1", "2"], ["--batch-nodes", "0"]):
        with pytest.raises(SystemExit) as info:
            dataflow.main(["train", "--analysis", "datadep", "--dataset", str(ddf), "--run-dir", str(tmp_path), *bad])
        assert info.value.code == 2
    assert dataflow.main(["evaluate", "--run-dir", str(tmp_path / "nothing")]) == 1


def test_registered_with_the_cli(ddf: Path, tmp_path: Path, monkeypatch) -> None:
    from programl.cli import train as train_cli

    monkeypatch.setattr(train_cli, "REGISTRY", {"dataflow": train_cli.REGISTRY["dataflow"]})
    parser = argparse.ArgumentParser()
    train_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["train", "dataflow", "--analysis", "liveness", "--dataset", str(ddf)])
    assert args.analysis == "liveness" and args.lr == 2.5e-4 and args.batch_nodes == 10_000
    assert args.train_examples[:6] == [10_000, 20_000, 30_000, 40_000, 50_000, 100_000]
    assert args.train_examples[-1] == 1_000_000 and len(args.train_examples) == 15
    from programl.tasks.dataflow.spec import DataflowRunOptions
    from programl.tasks.options import TaskRun

    opts = TaskRun.from_args(args, dataflow.DataflowOptions, DataflowRunOptions)
    assert dataflow._run_dir(opts) == Path("runs/dataflow/liveness")
    assert opts.run.dataset == str(ddf) and opts.model.analysis == "liveness" and opts.run.epochs is None
    code = "import sys, programl.tasks.dataflow.spec; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "False"


def _worker_logs(logs: Path, tail: int = 4000) -> str:
    """The end of every torchrun worker's redirected stdout and stderr (``--log-dir``/``--redirects``)."""
    parts = []
    for path in sorted(logs.rglob("*.log")):
        text = path.read_text(errors="replace")
        parts.append(f"--- {path.relative_to(logs)} ---\n{text[-tail:]}")
    return "\n".join(parts) + "\n--- torchrun ---\n"


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
def test_ddp_two_processes_agree(ddf: Path, tmp_path: Path) -> None:
    import torch.distributed as tdist

    if not tdist.is_available() or not tdist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    run, logs = tmp_path / "ddp", tmp_path / "logs"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env["OMP_NUM_THREADS"] = "1"
    # each process's output goes to its own file under logs/, so a failure shows the process that failed first
    args = "--standalone --nproc_per_node 2 --redirects 3"
    args += " -m programl.tasks.dataflow train --analysis datadep --device cpu"
    args += " --threads 1 --train-examples 30 60 --val-examples 20 --batch-nodes 600 --test-steps 30 -q"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--log-dir",
        str(logs),
        *args.split(),
        "--dataset",
        str(ddf),
        "--run-dir",
        str(run),
    ]
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        _, stderr = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # torchrun and both workers
        process.communicate()
        pytest.fail("the two-process run did not finish in 10 minutes")
    assert process.returncode == 0, _worker_logs(logs) + stderr[-2000:]
    result = json.loads((run / "result.json").read_text())
    assert result["world_size"] == 2
    digests = result["ddp"]["parameter_digests"]
    assert len(digests) == 2 and digests[0] == digests[1] and result["ddp"]["agree"]
    records = _records(run)
    assert [r["epoch"] for r in records] == [1, 2] and records[-1]["train_examples"] >= 60


def test_schedule_options_are_recorded_and_resumed(ddf: Path, tmp_path: Path) -> None:
    """The engine's warm-up, cosine decay and clipping (off by default): kept in config.json, the pre-clip gradient
    norms in the log, and a resumption must keep them (another value is another run)."""
    run = tmp_path / "run"
    extra = ("--test-steps", "30", "--warmup-examples", "20", "--lr-decay", "cosine", "--clip-grad-norm", "0.5")
    assert _train(ddf, run, *extra, schedule=("30",)) == 0
    model = json.loads((run / "config.json").read_text())["model"]
    assert (model["warmup_examples"], model["lr_decay"], model["clip_grad_norm"]) == (20, "cosine", 0.5)
    record = _records(run)[0]
    assert record["train_grad_norm_max"] >= record["train_grad_norm"] > 0
    with pytest.raises(SystemExit) as info:
        _train(ddf, run, *extra[:-1], "0.25")
    assert info.value.code == 2
    assert _train(ddf, run, *extra) == 0 and [r["epoch"] for r in _records(run)] == [1, 2]
    plain = tmp_path / "plain"
    assert _train(ddf, plain, "--test-steps", "30", schedule=("30",)) == 0
    assert "train_grad_norm" not in _records(plain)[0]
    model = json.loads((plain / "config.json").read_text())["model"]
    assert (model["warmup_examples"], model["lr_decay"], model["clip_grad_norm"]) == (0, "off", None)


def test_evaluate_out_reads_a_run_that_another_process_holds(ddf: Path, tmp_path: Path, capsys) -> None:
    """``programl evaluate dataflow --out DIR`` writes its files into DIR and only reads the run directory, so a
    run still training (which holds the directory's lock) can be evaluated; without ``--out`` it is refused."""
    from programl.training import RunLock

    run, out = tmp_path / "run", tmp_path / "evaluated"
    assert _train(ddf, run, "--test-steps", "30", schedule=("30",)) == 0
    argv = ["evaluate", "--run-dir", str(run), "--test-steps", "30", "-q"]
    with RunLock(run):
        capsys.readouterr()
        assert dataflow.main(argv) == 1
        assert "in use by another programl train or evaluate" in capsys.readouterr().err
        assert dataflow.main([*argv, "--out", str(out)]) == 0
    evaluated = json.loads((out / "evaluation_best_test.json").read_text())["tests"]["T30"]
    trained = json.loads((run / "result.json").read_text())["tests"]["T30"]
    for metric in ("precision", "recall", "f1", "examples", "confusion_matrix"):
        assert evaluated[metric] == trained[metric], metric
    assert (out / "confusion.png").is_file() and not (run / "evaluation_best_test.json").exists()


def test_root_context_variant_starts_from_a_faithful_run(ddf: Path, tmp_path: Path, capsys) -> None:
    """``--root-context`` (not in the paper) with ``--init-from`` a faithful run: recorded in config.json, its
    weights hold the faithful ones plus the new readout, the exported spec rebuilds it, evaluation reads it back."""
    from programl.pretrained.export import model_spec
    from programl.pretrained.hub import build_model

    faithful, variant = tmp_path / "faithful", tmp_path / "variant"
    assert _train(ddf, faithful, "--test-steps", "30", schedule=("30",)) == 0
    extra = ("--test-steps", "30", "--root-context", "--init-from", str(faithful / "best.pt"), "--lr", "1e-9")
    assert _train(ddf, variant, *extra, schedule=("30",)) == 0
    config = json.loads((variant / "config.json").read_text())["model"]
    assert config["root_context"] is True
    assert json.loads((faithful / "config.json").read_text())["model"]["root_context"] is False
    weights = torch.load(variant / "best.pt", weights_only=True)["model"]
    before = torch.load(faithful / "best.pt", weights_only=True)["model"]
    assert sorted(set(weights) - set(before)) == [
        f"root_context.{n}" for n in ("hidden.bias", "hidden.weight", "out.bias", "out.weight")
    ]
    torch.testing.assert_close(weights["embedding.weight"], before["embedding.weight"], atol=1e-6, rtol=0)
    spec = model_spec("dataflow", config, 10)
    assert spec["kwargs"] == {"num_steps": 30, "root_context": True}
    assert build_model(spec).root_context is not None
    assert model_spec("dataflow", {"model": "ggnn", "steps": 30}, 10)["kwargs"] == {"num_steps": 30}
    capsys.readouterr()
    assert dataflow.main(["evaluate", "--run-dir", str(variant), "--test-steps", "30", "-q"]) == 0
    trained = json.loads((variant / "result.json").read_text())["tests"]["T30"]
    evaluated = json.loads((variant / "evaluation_best_test.json").read_text())["tests"]["T30"]
    for metric in ("precision", "recall", "f1", "examples", "confusion_matrix"):
        assert evaluated[metric] == trained[metric], metric
    with pytest.raises(SystemExit) as info:  # a GGNN option
        _train(ddf, tmp_path / "rgcn", "--root-context", "--model", "rgcn")
    assert info.value.code == 2


def _variant_of_a_faithful_run(ddf: Path, tmp_path: Path, option: str) -> tuple[Path, Path, dict]:
    """A faithful run and a variant of it (``option``, ``--init-from`` the faithful ``best.pt``), one epoch each:
    their run directories and the variant's ``config.json`` model options."""
    faithful, variant = tmp_path / "faithful", tmp_path / "variant"
    assert _train(ddf, faithful, "--test-steps", "30", schedule=("30",)) == 0
    extra = ("--test-steps", "30", option, "--init-from", str(faithful / "best.pt"))
    assert _train(ddf, variant, *extra, schedule=("30",)) == 0
    return faithful, variant, json.loads((variant / "config.json").read_text())["model"]


def test_control_floods_variant_starts_from_a_faithful_run(ddf: Path, tmp_path: Path, capsys) -> None:
    """``--control-floods`` (issue 36 item 3) with ``--init-from`` a faithful run: recorded in config.json, the
    weights add the two flood vectors, the exported spec and card name it, evaluation reads it back; a GGNN option."""
    from programl.pretrained import pretrained
    from programl.pretrained.export import export_pretrained, model_spec
    from programl.pretrained.hub import build_model

    faithful, variant, config = _variant_of_a_faithful_run(ddf, tmp_path, "--control-floods")
    assert config["control_floods"] is True
    weights = torch.load(variant / "best.pt", weights_only=True)["model"]
    before = torch.load(faithful / "best.pt", weights_only=True)["model"]
    assert sorted(set(weights) - set(before)) == ["flood_embedding"] and weights["flood_embedding"].shape == (4, 32)
    spec = model_spec("dataflow", config, 10)
    assert spec["kwargs"] == {"num_steps": 30, "control_floods": True}
    assert build_model(spec).flood_embedding is not None
    exported = export_pretrained(variant, "floods", output_dir=tmp_path / "models")
    assert "(`control_floods`)" in (exported / "MODEL_CARD.md").read_text()
    assert pretrained(exported).model.flood_embedding is not None
    capsys.readouterr()
    assert dataflow.main(["evaluate", "--run-dir", str(variant), "--test-steps", "30", "-q"]) == 0
    trained = json.loads((variant / "result.json").read_text())["tests"]["T30"]
    evaluated = json.loads((variant / "evaluation_best_test.json").read_text())["tests"]["T30"]
    assert evaluated["f1"] == trained["f1"] and evaluated["examples"] == trained["examples"]
    with pytest.raises(SystemExit) as info:
        _train(ddf, tmp_path / "rgcn", "--control-floods", "--model", "rgcn")
    assert info.value.code == 2


def test_meet_variant_starts_from_a_faithful_run(ddf: Path, tmp_path: Path, capsys) -> None:
    """``--meet`` (issue 36 item 2) with ``--init-from`` a faithful run: recorded in config.json, the weights add the
    meet's map, which the run trained away from its zero start; the exported spec and card name it; a GGNN option."""
    from programl.pretrained import pretrained
    from programl.pretrained.export import export_pretrained, model_spec
    from programl.pretrained.hub import build_model

    faithful, variant, config = _variant_of_a_faithful_run(ddf, tmp_path, "--meet")
    assert config["meet"] is True
    weights = torch.load(variant / "last.pt", weights_only=True)["model"]
    before = torch.load(faithful / "best.pt", weights_only=True)["model"]
    assert sorted(set(weights) - set(before)) == ["conv.meet_linear.bias", "conv.meet_linear.weight"]
    assert weights["conv.meet_linear.weight"].abs().sum().item() > 0
    spec = model_spec("dataflow", config, 10)
    assert spec["kwargs"] == {"num_steps": 30, "meet": True}
    assert build_model(spec).conv.meet_linear is not None
    exported = export_pretrained(variant, "meet", output_dir=tmp_path / "models")
    assert "(`meet`)" in (exported / "MODEL_CARD.md").read_text()
    assert pretrained(exported).model.conv.meet_flow == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        _train(ddf, tmp_path / "rgcn", "--meet", "--model", "rgcn")
    assert info.value.code == 2


def test_dead_branches_reach_the_training_batches_only(ddf: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """``--dead-branches P`` (issue 36 item 5) puts the keyed AddDeadBranches on the training split (validation reads
    the data as it is) and is recorded in config.json; P must lie in [0, 1]."""
    from programl.datasets import AddDeadBranches

    seen = []
    original = AddDeadBranches.forward

    def spy(self, data):
        before = int(data.num_nodes)
        out = original(self, data)
        seen.append((self.keyed, self.probability, int(out.num_nodes) - before))
        return out

    monkeypatch.setattr(AddDeadBranches, "forward", spy)
    run = tmp_path / "run"
    assert _train(ddf, run, "--test-steps", "30", "--dead-branches", "1.0", schedule=("30",)) == 0
    assert json.loads((run / "config.json").read_text())["model"]["dead_branches"] == 1.0
    assert seen and all(keyed and p == 1.0 and 1 <= added <= 3 for keyed, p, added in seen)
    with pytest.raises(SystemExit) as info:
        _train(ddf, tmp_path / "bad", "--dead-branches", "1.5")
    assert info.value.code == 2
    vocabulary = tmp_path / "vocab.csv"  # a vocabulary without "br": one line, not a KeyError
    vocabulary.write_text(
        "cumulative_frequency\tcumulative_node_frequency\tcount\ttext\n0.5\t0.5\t1\tptr\n1\t1\t1\ti32\n"
    )
    argv = ("--dead-branches", "0.5", "--vocabulary", str(vocabulary))
    assert _train(ddf, tmp_path / "no-br", *argv, schedule=("30",)) == 1
    assert "--dead-branches needs the text 'br' in the vocabulary" in capsys.readouterr().err


def test_cover_steps_cover_the_batch_and_draw_the_margin_from_it() -> None:
    """``--step-policy cover`` (issue 36): a batch runs at least its longest example's steps (and at least T), plus
    a margin in 0..step_margin that depends only on the batch and the seed (so a resumed run draws the same)."""
    config = dataflow.DataflowOptions(steps=30, step_margin=60, seed=204)
    counts = torch.tensor([12, 95, 40])
    t = dataflow.cover_steps(counts, 1234, config)
    assert 95 <= t <= 155 and dataflow.cover_steps(counts.clone(), 1234, config) == t
    assert 30 <= dataflow.cover_steps(torch.tensor([3, 5]), 100, config) <= 90
    margins = {dataflow.cover_steps(counts, n, config) - 95 for n in range(200)}
    assert len(margins) > 20 and min(margins) >= 0 and max(margins) <= 60
    assert dataflow.cover_steps(counts, 1234, dataclasses.replace(config, step_margin=0)) == 95


def test_step_free_variant_trains_resumes_and_tests_until_stable(ddf: Path, tmp_path: Path, capsys) -> None:
    """``--step-policy cover``: batches run their own T in training (not the model's), validation and the added
    ``stable`` test run until stable; resuming is exact; an old run's config (no step options) still evaluates."""
    seen: list[int] = []
    forward = dataflow._make_model({"model": "ggnn", "steps": 30}, 10).__class__.forward

    def spy(self, data, num_steps=None):
        if self.training:
            seen.append(num_steps)
        return forward(self, data, num_steps)

    extra = ("--step-policy", "cover", "--step-margin", "7", "--max-steps", "60", "--test-steps", "30")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(forward.__globals__["DataflowGGNN"], "forward", spy)
        assert _train(ddf, tmp_path / "whole", *extra) == 0
    assert seen and all(30 <= t <= 60 + 7 for t in seen) and len(set(seen)) > 1
    result = json.loads((tmp_path / "whole" / "result.json").read_text())
    stable = result["tests"]["stable"]
    assert stable["steps"] == "stable" and stable["max_data_flow_steps"] is None and stable["mean_steps"] >= 30
    assert "T=stable" in capsys.readouterr().out
    config = json.loads((tmp_path / "whole" / "config.json").read_text())["model"]
    assert (config["step_policy"], config["step_margin"], config["stable_patience"]) == ("cover", 7, 5)
    assert _train(ddf, tmp_path / "split", *extra, schedule=("30",)) == 0
    assert _train(ddf, tmp_path / "split", *extra) == 0
    assert _digest(tmp_path / "whole") == _digest(tmp_path / "split")
    assert _records(tmp_path / "whole") == _records(tmp_path / "split")
    # exported, the variant says how it infers, and predict runs it until stable unless given a T
    from programl.pretrained.export import export_pretrained
    from programl.pretrained.hub import pretrained
    from programl.tasks.dataflow.predict import predict_dataflow

    exported = export_pretrained(tmp_path / "whole", "datadep-step-free", output_dir=tmp_path / "models")
    model = pretrained(exported)
    assert model.metadata["inference"] == {"mode": "until_stable", "min_steps": 30, "max_steps": 1000, "patience": 5}
    graph = programl.from_llvm_ir((REPO / "examples" / "dot_product.ll").read_text())
    stable = predict_dataflow(model, graph, num_roots=2)
    assert stable.steps == "until stable" and len(stable.steps_taken) == 2 and min(stable.steps_taken) >= 30
    assert all("steps_taken" in root for root in stable.to_dict()["roots"])
    fixed = predict_dataflow(model, graph, num_roots=2, steps=30)
    assert fixed.steps == 30 and fixed.steps_taken is None and "steps_taken" not in fixed.to_dict()["roots"][0]
    # an until-stable bound chosen after training (on validation) by evaluate, recorded by export from the card
    argv = ["evaluate", "--run-dir", str(tmp_path / "whole"), "--split", "val", "--test-steps", "stable", "-q"]
    assert (
        dataflow.main([*argv, "--stable-patience", "9", "--stable-max-steps", "80", "--out", str(tmp_path / "e")]) == 0
    )
    evaluation = tmp_path / "e" / "evaluation_best_val.json"
    assert json.loads(evaluation.read_text())["until_stable"] == {"patience": 9, "max_steps": 80}
    chosen = export_pretrained(tmp_path / "whole", "chosen", output_dir=tmp_path / "models", card_from=evaluation)
    assert pretrained(chosen).metadata["inference"] == {
        "mode": "until_stable",
        "min_steps": 30,
        "max_steps": 80,
        "patience": 9,
    }
    card = (chosen / "MODEL_CARD.md").read_text()
    assert "for 9 steps (at least 30, at most 80)" in card  # the overview and the limitations both say what runs
    assert "runs each root until no prediction changed for 9 steps (at most 80)" in card
    model.metadata["inference"]["patience"] = "5; rm -rf"  # a received model.json: one line, no traceback
    with pytest.raises(ProgramlError, match="model.json inference patience must be a positive integer"):
        predict_dataflow(model, graph, num_roots=1)
    # a faithful run evaluates until stable on request
    assert _train(ddf, tmp_path / "faithful", "--test-steps", "30", schedule=("30",)) == 0
    config_path = tmp_path / "faithful" / "config.json"
    saved = json.loads(config_path.read_text())
    for key in ("step_policy", "step_margin", "stable_patience", "stable_max_steps"):
        del saved["model"][key]  # as a run written before the options
    config_path.write_text(json.dumps(saved))
    assert dataflow.main(["evaluate", "--run-dir", str(tmp_path / "faithful"), "--test-steps", "stable", "-q"]) == 0
    evaluated = json.loads((tmp_path / "faithful" / "evaluation_best_test.json").read_text())["tests"]
    assert list(evaluated) == ["stable"] and evaluated["stable"]["examples"] > 0
    with pytest.raises(SystemExit) as info:  # a GGNN option
        _train(ddf, tmp_path / "rgcn", "--step-policy", "cover", "--model", "rgcn")
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        _train(ddf, tmp_path / "bad", "--test-steps", "often")


def test_min_nodes_trains_and_validates_on_large_graphs_only(ddf: Path, tmp_path: Path) -> None:
    """``--min-nodes N`` (issue 36 item 3): training and validation keep only graphs of at least N nodes; the test
    keeps every graph; a run without it reads as 0 (no filter)."""
    from programl.datasets import DeepDataFlow

    train = DeepDataFlow.from_directory(ddf, "datadep", "train", max_steps=30)
    sizes = sorted(set(int(n) for n in train.sizes))
    cut = sizes[len(sizes) // 2]
    assert _train(ddf, tmp_path / "all", "--test-steps", "30", schedule=("30",)) == 0
    assert _train(ddf, tmp_path / "big", "--test-steps", "30", "--min-nodes", str(cut), schedule=("30",)) == 0
    config = json.loads((tmp_path / "big" / "config.json").read_text())
    assert config["model"]["min_nodes"] == cut
    scope_all = json.loads((tmp_path / "all" / "config.json").read_text())["scope"]
    scope_big = config["scope"]
    expected = sum(1 for n in train.sizes if n >= cut)
    assert scope_big["train_examples_available"] == expected < scope_all["train_examples_available"]
    tests = [json.loads((tmp_path / run / "result.json").read_text())["tests"]["T30"] for run in ("all", "big")]
    assert tests[0]["examples"] == tests[1]["examples"]  # the test split keeps every graph
