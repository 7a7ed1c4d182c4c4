"""Tests of programl.training (the engine the tasks share): devices, seeds, checkpoints, logs, plots, sharding,
distributed set-up."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from programl import training as common  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from programl.tasks.run_options import read_config_options  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_import_does_not_load_torch() -> None:
    """The engine and the tasks' specs (what ``--help`` reads) import no torch; the training modules do, at their
    top (they run only when a command does)."""
    code = (
        "import sys, programl.training, programl.tasks.registry, programl.tasks.devmap.spec, "
        "programl.tasks.classifyapp.spec, programl.tasks.dataflow.spec, programl.tasks.run_options; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout
    assert out.strip() == "False"


def test_resolve_device() -> None:
    assert common.resolve_device("cpu").type == "cpu"
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert common.resolve_device("auto").type == expected
    with pytest.raises(common.UsageError, match="not a device"):
        common.resolve_device("tpu-9000")
    if not torch.cuda.is_available():
        with pytest.raises(common.UsageError, match="CUDA is not available"):
            common.resolve_device("cuda")


def test_seed_everything_reproduces_draws() -> None:
    common.seed_everything(7)
    first = (np.random.rand(), torch.rand(3))
    common.seed_everything(7)
    second = (np.random.rand(), torch.rand(3))
    assert first[0] == second[0] and torch.equal(first[1], second[1])


def _model_and_optimizer():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    for _ in range(3):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return model, optimizer


def test_checkpoint_round_trip_restores_model_optimizer_and_rng(tmp_path) -> None:
    torch.manual_seed(0)
    model, optimizer = _model_and_optimizer()
    path = common.save_checkpoint(
        tmp_path / "c" / "last.pt",
        model=model,
        optimizer=optimizer,
        epoch=3,
        best_metric=0.75,
        best_epoch=2,
        extra={"note": "x"},
    )
    expected_draw = torch.rand(2)  # the draw right after saving
    assert [p.name for p in path.parent.iterdir()] == ["last.pt"]  # no temporary file left
    torch.manual_seed(123)
    clone, clone_optimizer = _model_and_optimizer()
    state = common.load_checkpoint(path, model=clone, optimizer=clone_optimizer)
    assert state["epoch"] == 3 and state["best_metric"] == 0.75 and state["best_epoch"] == 2
    assert state["extra"] == {"note": "x"}
    for a, b in zip(model.state_dict().values(), clone.state_dict().values()):
        assert torch.equal(a, b)
    assert clone_optimizer.state_dict()["state"][0]["step"] == optimizer.state_dict()["state"][0]["step"]
    assert torch.equal(torch.rand(2), expected_draw)


def test_load_checkpoint_rejects_garbage(tmp_path) -> None:
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ProgramlError, match="not a readable checkpoint"):
        common.load_checkpoint(tmp_path / "bad.pt")


def test_epoch_log_json_lines_csv_and_truncation(tmp_path) -> None:
    log = common.EpochLog(tmp_path)
    for epoch in (1, 2, 3):
        log.append({"epoch": epoch, "train_loss": 1.0 / epoch, "val_accuracy": 0.5 + epoch / 10, "cm": [[1]]})
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in lines] == [1, 2, 3]
    csv_lines = (tmp_path / "log.csv").read_text().splitlines()
    assert csv_lines[0] == "epoch,train_loss,val_accuracy"  # nested values stay in the JSON lines only
    assert len(csv_lines) == 4
    reopened = common.EpochLog(tmp_path)
    assert len(reopened.records) == 3
    reopened.truncate(1)
    assert [r["epoch"] for r in common.EpochLog(tmp_path).records] == [1]
    assert len((tmp_path / "log.csv").read_text().splitlines()) == 2
    silent = common.EpochLog(tmp_path / "other", enabled=False)
    silent.append({"epoch": 1})
    assert not (tmp_path / "other").exists()


def test_plots_are_png_files(tmp_path) -> None:
    records = [
        {
            "epoch": e,
            "train_loss": 1 / e,
            "val_loss": 1.2 / e,
            "train_accuracy": 0.5 + e / 20,
            "val_accuracy": 0.4 + e / 20,
        }
        for e in range(1, 6)
    ]
    curves = common.plot_learning_curves(records, tmp_path / "curves.png", title="t", mark_epoch=4)
    small = common.plot_confusion_matrix([[5, 1], [2, 7]], tmp_path / "cm2.png", labels=["CPU", "GPU"])
    big = common.plot_confusion_matrix(np.eye(104, dtype=int) * 3, tmp_path / "cm104.png")
    for path in (curves, small, big):
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5_000


@pytest.mark.parametrize(("n", "world"), [(10, 1), (10, 2), (11, 2), (7, 3), (1, 4), (0, 2)])
def test_shard_equal_sizes_and_covering(n, world) -> None:
    items = list(range(n))
    shares = [common.shard(items, rank, world) for rank in range(world)]
    if n == 0:
        assert all(s == [] for s in shares)
        return
    assert len({len(s) for s in shares}) == 1  # lock step
    assert set().union(*map(set, shares)) == set(items)
    assert sum(len(s) for s in shares) - n < world  # only the padding repeats


def test_single_process_distributed(monkeypatch) -> None:
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    dist = common.init_distributed("cpu")
    assert dist.is_main and not dist.enabled and dist.world_size == 1 and dist.device.type == "cpu"
    tensor = torch.ones(2)
    assert torch.equal(dist.all_reduce_sum(tensor), torch.ones(2))
    model = torch.nn.Linear(2, 2)
    assert dist.wrap(model) is model and common.unwrap(model) is model
    dist.barrier()
    dist.shutdown()


def test_check_same_run_names_every_changed_option(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    config = {"lr": 0.1, "epochs": 3, "hidden": 8}
    common.write_json(tmp_path / "config.json", {"task": "t", "model": config, "data_dir": str(data)})
    saved = common.check_same_run(tmp_path, "t", {**config, "epochs": 9}, paths={"data_dir": data}, ignore=["epochs"])
    assert saved["model"] == config
    with pytest.raises(common.UsageError) as error:
        common.check_same_run(tmp_path, "t", {**config, "lr": 0.2, "hidden": 4}, paths={"data_dir": tmp_path})
    assert str(error.value) == (
        f"{tmp_path} holds a run with other options (hidden, lr, data_dir): use another --run-dir, or --restart"
    )
    # an option that runs written before it existed lack is taken at its default
    common.check_same_run(tmp_path, "t", {**config, "new": 1}, defaults={"new": 1})
    with pytest.raises(common.UsageError, match=r"\(new\)"):
        common.check_same_run(tmp_path, "t", {**config, "new": 2}, defaults={"new": 1})
    with pytest.raises(ProgramlError, match="a `programl train t` run"):
        common.check_same_run(tmp_path, "other", config)


@pytest.mark.parametrize("task", ["devmap", "classifyapp"])
def test_config_option_reads_back_what_a_run_writes(tmp_path, task) -> None:
    """``--config`` of the graph tasks: the options dataclass that a run writes into config.json comes back as
    parsed."""
    import argparse
    import importlib

    module = importlib.import_module(f"programl.tasks.{task}.train")
    options = getattr(module, f"{task.capitalize()}Options")
    parser = argparse.ArgumentParser()
    module.add_train_arguments(parser)
    args = parser.parse_args(
        ["--lr", "0.125", "--seed", "7", "--epochs", "3", "--data-dir", str(tmp_path), "--warmup-examples", "50"]
    )
    config = {"task": task, "model": options.from_args(args).config(), "data_dir": str(tmp_path), "scope": {"x": 1}}
    common.write_json(tmp_path / "config.json", config)
    again = parser.parse_args(["--config", str(tmp_path / "config.json")])
    assert options.from_args(again) == options.from_args(args) and again.data_dir == str(tmp_path)
    assert again.warmup_examples == 50
    override = parser.parse_args(["--config", str(tmp_path / "config.json"), "--seed", "8"])
    assert override.seed == 8 and override.lr == 0.125
    with pytest.raises(ProgramlError, match=f"`programl train {task}` run, not of dataflow"):
        read_config_options(tmp_path / "config.json", "dataflow", parser)


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("lr", "x", "lr = 'x': "),
        ("epochs", [1, 2], "epochs = \\[1, 2\\] is a list"),
        ("seed", 1.5, "seed = 1.5: "),
        ("layer_timesteps", 2, "layer_timesteps = 2 is not a list"),
        ("layer_timesteps", ["x"], "layer_timesteps = \\['x'\\]: "),
        ("node_type_gru", "yes", "node_type_gru = 'yes' is not true or false"),
    ],
)
def test_a_hand_edited_config_with_bad_values_is_one_line(tmp_path, key, value, reason) -> None:
    """``--config`` checks each value as the option's command line would (its type, its range, its number of
    values): one line naming the file and the option, before any run directory is made."""
    import argparse

    from programl.tasks.classifyapp import train as classifyapp

    parser = argparse.ArgumentParser()
    classifyapp.add_train_arguments(parser)
    common.write_json(tmp_path / "config.json", {"task": "classifyapp", "model": {"hidden": 8, key: value}})
    with pytest.raises(ProgramlError, match=reason) as info:
        read_config_options(tmp_path / "config.json", "classifyapp", parser)
    assert str(info.value).startswith(f"{tmp_path / 'config.json'}: ") and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"model": {"hiden": 8}}, "model entry 'hiden' is not an option of this task \\(did you mean 'hidden'\\?\\)"),
        ({"model": {}, "lr": 0.5}, "'lr' is an option of the model: it belongs in the \"model\" entry"),
        ({"model": {}, "learning_rate": 0.5}, "entry 'learning_rate' is not an option of this task"),
        ({"model": {"run_dir": "elsewhere"}}, "model entry 'run_dir' is not an option"),
    ],
)
def test_unknown_or_misplaced_config_keys_are_one_line(tmp_path, config, reason) -> None:
    """Issue 39 item 9: such keys were ignored, and the run trained with other options than the file said."""
    import argparse

    from programl.tasks.classifyapp import train as classifyapp

    parser = argparse.ArgumentParser()
    classifyapp.add_train_arguments(parser)
    common.write_json(tmp_path / "config.json", {"task": "classifyapp", **config})
    with pytest.raises(ProgramlError, match=reason) as info:
        read_config_options(tmp_path / "config.json", "classifyapp", parser)
    assert str(info.value).startswith(f"{tmp_path / 'config.json'}: ") and "\n" not in str(info.value)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_rng_state_restores_from_a_checkpoint_loaded_onto_the_gpu(tmp_path) -> None:
    """A run on the GPU resumes: its checkpoint, loaded with ``map_location="cuda"``, holds the CUDA generator states
    on the GPU, which the setters only take as CPU bytes."""
    common.seed_everything(3)
    state = common.rng_state()
    torch.save({"rng": state}, tmp_path / "c.pt")
    first = (torch.rand(2), torch.rand(2, device="cuda").cpu())
    loaded = torch.load(tmp_path / "c.pt", map_location="cuda", weights_only=True)["rng"]
    common.set_rng_state(loaded)
    second = (torch.rand(2), torch.rand(2, device="cuda").cpu())
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
