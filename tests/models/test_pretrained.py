"""Pretrained models (programl.pretrained.hub, .export, .card; the tasks' predictors): export a run -> load ->
predict, the errors (one line each), the networks the export rebuilds against the tasks' own, and every model shipped
in the package (skipped, with the reason, while none is)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

import programl  # noqa: E402
from programl.exceptions import AnalysisError, ProgramlError  # noqa: E402
from programl.pretrained import PretrainedModel, pretrained, pretrained_names  # noqa: E402
from programl.pretrained.export import export_pretrained, model_spec  # noqa: E402
from programl.pretrained.hub import (  # noqa: E402
    PRETRAINED_DIR,
    build_model,
    find_pretrained,
    find_pretrained_metadata,
    read_metadata,
)
from programl.proto import ProgramGraph  # noqa: E402
from tests.models import pretrained_runs as runs  # noqa: E402

FILES = ["MODEL_CARD.md", "model.json", "vocab.csv", "weights.pt"]


@pytest.fixture(scope="module")
def dataflow_export(tmp_path_factory) -> tuple[Path, Path]:
    """(run directory, models directory) of a real tiny reachability run, exported."""
    tmp = tmp_path_factory.mktemp("dataflow")
    run = runs.dataflow_run(tmp)
    export_pretrained(run, output_dir=tmp / "models")
    return run, tmp / "models"


@pytest.fixture(scope="module")
def graph():
    return runs.graph_of(runs.EXAMPLES / "dot_product.ll")


# ---------------------------------------------------------------------------------------------------------------
# Export


def test_export_writes_the_four_files_from_the_run(dataflow_export) -> None:
    run, models = dataflow_export
    directory = models / "reachability"
    assert sorted(p.name for p in directory.iterdir()) == FILES
    metadata = json.loads((directory / "model.json").read_text())
    result = json.loads((run / "result.json").read_text())
    assert metadata["task"] == "dataflow" and metadata["analysis"] == "reachability" and metadata["steps"] == 30
    assert metadata["model"] == {
        "class": "DataflowGGNN",
        "args": [metadata["vocabulary"]["entries"]],
        "kwargs": {"num_steps": 30},
    }
    assert metadata["outputs"]["classes"] == ["false", "true"]
    # the scores are result.json's, without the confusion matrices
    test = {k: v for k, v in result["tests"]["T30"].items() if k != "confusion_matrix"}
    assert metadata["scores"]["tests"]["T30"] == test
    assert metadata["scores"]["best_val_f1"] == result["best_val_f1"]
    assert metadata["compute"]["train_seconds"] == result["train_seconds"]
    config = json.loads((run / "config.json").read_text())  # the data set's absolute path: its last two components
    assert metadata["training"]["config"] == {**config, "dataset": f"{run.parent.name}/ddf"}
    assert (directory / "vocab.csv").read_bytes() == (run / "vocab.csv").read_bytes()
    weights = (directory / "weights.pt").read_bytes()
    assert metadata["weights"]["sha256"] == hashlib.sha256(weights).hexdigest()
    state = torch.load(directory / "weights.pt", weights_only=True)  # a plain state_dict
    checkpoint = torch.load(run / "best.pt", weights_only=True)["model"]
    assert state.keys() == checkpoint.keys() and all(torch.equal(state[k], checkpoint[k]) for k in state)
    card = (directory / "MODEL_CARD.md").read_text()
    t30 = result["tests"]["T30"]
    assert f"| T30 | 30 | DDF-30 | {t30['examples']} | {t30['precision']:.3f} | {t30['recall']:.3f} " in card
    threads = result["threads"]  # CPU-hours: wall-clock x processes x threads
    assert f"{result['train_seconds']:.1f} s wall-clock on 1 process(es) of {threads} thread(s)" in card
    assert f"{result['train_seconds'] * threads / 3600:.3f} CPU-hours (wall-clock x processes x threads" in card
    for section in ("## Data", "## Protocol", "## Scores", "## Compute", "## Limitations", "## Provenance"):
        assert section in card


def test_export_is_deterministic(dataflow_export, tmp_path) -> None:
    run, models = dataflow_export
    again = export_pretrained(run, output_dir=tmp_path)
    for name in FILES:
        assert (again / name).read_bytes() == (models / "reachability" / name).read_bytes(), name


def test_a_new_run_starts_from_an_exported_model(dataflow_export, tmp_path, capsys) -> None:
    """``programl train --init-from`` an exported model's directory: the run starts from its weights (a learning
    rate of 1e-9 keeps them); a ``vocab.csv`` that orders the texts otherwise is refused in one line."""
    from programl.tasks.dataflow import train as dataflow

    run, models = dataflow_export
    argv = ["train", "--analysis", "reachability", "--dataset", str(run.parent / "ddf"), "--threads", "1"]
    argv += ["--train-examples", "10", "--val-examples", "4", "--batch-nodes", "600", "--test-steps", "30", "-q"]
    exported = models / "reachability"
    assert (
        dataflow.main([*argv, "--run-dir", str(tmp_path / "tuned"), "--init-from", str(exported), "--lr", "1e-9"]) == 0
    )
    start = torch.load(exported / "weights.pt", weights_only=True)
    tuned = torch.load(tmp_path / "tuned" / "best.pt", weights_only=False)["model"]
    assert sorted(tuned) == sorted(start)
    for key, value in start.items():
        torch.testing.assert_close(tuned[key], value, atol=1e-6, rtol=0)
    reordered = tmp_path / "reordered"
    shutil.copytree(exported, reordered)
    header, first, second, *rest = (reordered / "vocab.csv").read_text().splitlines(keepends=True)
    (reordered / "vocab.csv").write_text("".join([header, second, first, *rest]))
    capsys.readouterr()
    assert dataflow.main([*argv, "--run-dir", str(tmp_path / "refused"), "--init-from", str(reordered)]) != 0
    err = capsys.readouterr().err
    assert "vocab.csv: the vocabulary of the --init-from weights" in err and "Traceback" not in err
    assert not (tmp_path / "refused" / "best.pt").exists()


def test_the_card_of_a_second_stage_counts_the_epochs_before_it(dataflow_export, tmp_path) -> None:
    """A run that started from another run's checkpoint (``--init-from best.pt``, a second stage with another
    schedule): its card names the model's epoch over both runs, from the starting checkpoint's epoch. A run started
    from an exported ``weights.pt`` (which holds no epoch) gets no such count."""
    from programl.tasks.dataflow import train as dataflow

    run, models = dataflow_export
    argv = ["train", "--analysis", "reachability", "--dataset", str(run.parent / "ddf"), "--threads", "1"]
    argv += ["--train-examples", "10", "--val-examples", "4", "--batch-nodes", "600", "--test-steps", "30", "-q"]
    before = torch.load(run / "best.pt", weights_only=False)["epoch"]
    for start, name in ((run / "best.pt", "second"), (models / "reachability", "from-export")):
        assert dataflow.main([*argv, "--run-dir", str(tmp_path / name), "--init-from", str(start)]) == 0
        export_pretrained(tmp_path / name, output_dir=tmp_path / name / "models")
    second = tmp_path / "second" / "models" / "reachability"
    training = json.loads((second / "model.json").read_text())["training"]
    assert training["init_from_epoch"] == before
    epoch = training["checkpoint_epoch"]
    card = (second / "MODEL_CARD.md").read_text()
    assert (
        f"(fine-tuning; a checkpoint of epoch {before}, so this model's epoch {epoch} is epoch {before + epoch} "
        "counting the epochs before it)" in card
    )
    from_export = tmp_path / "from-export" / "models" / "reachability"
    assert json.loads((from_export / "model.json").read_text())["training"]["init_from_epoch"] is None
    card = (from_export / "MODEL_CARD.md").read_text()
    assert "(fine-tuning): the hours above" in card and "counting the epochs" not in card


def test_training_facts_a_scores_file_lacks_come_from_the_run(dataflow_export, tmp_path) -> None:
    """``--card-from`` a file of scores only (an evaluation, e.g. of a run still training): the card's time, device
    and threads come from the last epoch of ``log.jsonl``, the processes from ``config.json``, the best epoch and
    its validation F1 from the checkpoint, and the card says so; a ``result.json`` keeps its own facts."""
    run, models = dataflow_export
    result = json.loads((run / "result.json").read_text())
    scores = {k: v for k, v in result.items() if k in ("split", "checkpoint", "checkpoint_epoch", "tests")}
    (tmp_path / "scores.json").write_text(json.dumps(scores))
    directory = export_pretrained(run, output_dir=tmp_path / "models", card_from=tmp_path / "scores.json")
    metadata = json.loads((directory / "model.json").read_text())
    last = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()][-1]
    compute = metadata["compute"]
    assert compute["train_seconds"] == last["elapsed_seconds"] and compute["device"] == "cpu"
    assert compute["threads"] == last["threads"] == 1 and compute["processes"] == 1
    assert compute["facts_from_log_epoch"] == last["epoch"]
    best = torch.load(run / "best.pt", weights_only=False)
    assert metadata["scores"]["best_epoch"] == best["best_epoch"]
    assert metadata["scores"]["best_val_f1"] == best["best_metric"] == result["best_val_f1"]
    card = (directory / "MODEL_CARD.md").read_text()
    assert f"the run's `log.jsonl` at its epoch {last['epoch']}" in card and "1 process(es) of 1 thread(s)" in card
    shipped = json.loads((models / "reachability" / "model.json").read_text())["compute"]
    assert shipped["facts_from_log_epoch"] is None and shipped["train_seconds"] == result["train_seconds"]


def test_scores_of_another_checkpoint_are_refused(dataflow_export, tmp_path) -> None:
    """The card's scores must be those of the exported ``best.pt``: not of ``last.pt``, nor of a ``best.pt`` that the
    run has replaced since it was evaluated."""
    run, _ = dataflow_export
    result = json.loads((run / "result.json").read_text())
    for change, message in (
        ({"checkpoint": "last"}, "scores.json: scores of last.pt, and the export is of best.pt"),
        (
            {"checkpoint_epoch": result["checkpoint_epoch"] + 1},
            f"scores.json: scores of the checkpoint of epoch {result['checkpoint_epoch'] + 1}, and ",
        ),
    ):
        (tmp_path / "scores.json").write_text(json.dumps({**result, **change}))
        with pytest.raises(ProgramlError, match=re.escape(message)):
            export_pretrained(run, output_dir=tmp_path / "models", card_from=tmp_path / "scores.json")
    assert not (tmp_path / "models").exists()


def test_a_compute_note_goes_into_the_card_and_the_metadata(dataflow_export, tmp_path) -> None:
    run, models = dataflow_export
    note = "Epochs 1-5 ran on a lent GPU, the others on two CPU threads."
    directory = export_pretrained(run, output_dir=tmp_path, compute_note=note)
    assert json.loads((directory / "model.json").read_text())["compute"]["note"] == note
    card = (directory / "MODEL_CARD.md").read_text()
    compute = card[card.index("## Compute") : card.index("## Limitations")]
    assert note in compute and "CPU-hours" in compute
    assert "note" not in json.loads((models / "reachability" / "model.json").read_text())["compute"]


def test_the_card_splits_the_hours_of_a_run_that_moved_between_devices(dataflow_export, tmp_path) -> None:
    """Each epoch records the device it ended on; the export sums the seconds by device, and the card gives each
    device's share in its own unit (a single-device run keeps its one line)."""
    run, models = dataflow_export
    assert json.loads((models / "reachability" / "model.json").read_text())["compute"]["seconds_by_device"] == {
        "cpu": pytest.approx(sum(json.loads(line)["seconds"] for line in (run / "log.jsonl").read_text().splitlines()))
    }
    moved = tmp_path / "run"
    shutil.copytree(run, moved)
    [record] = [json.loads(line) for line in (moved / "log.jsonl").read_text().splitlines()]
    gpu_epoch = {**record, "epoch": record["epoch"] + 1, "seconds": 90.0, "device": "cuda"}
    cpu_epoch = {**record, "seconds": 3600.0}
    (moved / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (cpu_epoch, gpu_epoch)))
    directory = export_pretrained(moved, output_dir=tmp_path / "models")
    assert json.loads((directory / "model.json").read_text())["compute"]["seconds_by_device"] == {
        "cpu": 3600.0,
        "cuda": 90.0,
    }
    card = (directory / "MODEL_CARD.md").read_text()
    threads = json.loads((run / "result.json").read_text())["threads"]
    assert f"3,600.0 s on cpu: {threads:.3f} CPU-hours, 90.0 s on cuda: 0.025 GPU-hours" in card
    (moved / "log.jsonl").write_text(json.dumps({k: v for k, v in record.items() if k != "device"}) + "\n")
    directory = export_pretrained(moved, output_dir=tmp_path / "models", force=True)
    assert json.loads((directory / "model.json").read_text())["compute"]["seconds_by_device"] is None  # older logs


def test_export_refuses_to_overwrite_without_force(dataflow_export) -> None:
    run, models = dataflow_export
    with pytest.raises(ProgramlError, match=r"exists \(--force replaces it\)$"):
        export_pretrained(run, output_dir=models)
    assert export_pretrained(run, output_dir=models, force=True) == models / "reachability"
    assert sorted(p.name for p in models.iterdir()) == ["reachability"]  # no staging directory left


def test_export_errors_are_one_line(dataflow_export, tmp_path) -> None:
    run, _ = dataflow_export
    with pytest.raises(ProgramlError, match="no such run directory"):
        export_pretrained(tmp_path / "nothing", output_dir=tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "best.pt", "result.json"):
        (broken / name).write_bytes((run / name).read_bytes())
    with pytest.raises(ProgramlError, match=r"vocab.csv: no such file \(not a finished run\?\)"):
        export_pretrained(broken, output_dir=tmp_path)
    (broken / "vocab.csv").write_text((run / "vocab.csv").read_text().rsplit("\n", 2)[0] + "\n")  # one text fewer
    with pytest.raises(ProgramlError, match="best.pt: does not fit the network") as info:
        export_pretrained(broken, output_dir=tmp_path)
    assert "\n" not in str(info.value)
    with pytest.raises(ProgramlError, match="a model name is"):
        export_pretrained(run, "../x", output_dir=tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# Loading


def test_load_and_list(dataflow_export) -> None:
    _, models = dataflow_export
    assert pretrained_names(models) == ["reachability"]
    assert find_pretrained("dataflow", analysis="reachability", directory=models) == ["reachability"]
    assert find_pretrained("dataflow", analysis="liveness", directory=models) == []
    found = find_pretrained_metadata("dataflow", analysis="reachability", directory=models)
    assert found == {"reachability": read_metadata(models / "reachability")}
    assert find_pretrained_metadata("devmap", directory=models) == {}
    model = pretrained("reachability", directory=models)
    assert isinstance(model, PretrainedModel) and not model.model.training
    assert model.task == "dataflow" and model.analysis == "reachability" and model.classes == ["false", "true"]
    assert len(model.vocabulary) == model.metadata["vocabulary"]["entries"]
    assert model.card.startswith("# reachability: ProGraML data-flow GGNN")
    by_path = pretrained(str(models / "reachability"))
    assert by_path.metadata == model.metadata


def test_unknown_names_list_the_known_ones(dataflow_export, tmp_path) -> None:
    _, models = dataflow_export
    with pytest.raises(ProgramlError, match=r"^unknown pretrained model 'nope'; known: reachability$"):
        pretrained("nope", directory=models)
    with pytest.raises(ProgramlError, match=r"none are installed in .* yet \(programl export-pretrained\)$"):
        pretrained("nope", directory=tmp_path)
    with pytest.raises(ProgramlError, match="not a pretrained model"):
        pretrained(str(tmp_path))


def test_damaged_models_are_one_line_errors(dataflow_export, tmp_path) -> None:
    _, models = dataflow_export
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in FILES:
        (copy / name).write_bytes((models / "reachability" / name).read_bytes())
    weights = bytearray((copy / "weights.pt").read_bytes())
    weights[-100] ^= 0xFF
    (copy / "weights.pt").write_bytes(bytes(weights))
    with pytest.raises(ProgramlError, match=r"weights.pt: damaged \(its sha256"):
        pretrained(str(copy))
    (copy / "weights.pt").write_bytes((models / "reachability" / "weights.pt").read_bytes())
    metadata = json.loads((models / "reachability" / "model.json").read_text())
    (copy / "model.json").write_text(json.dumps({**metadata, "format": 99}))
    with pytest.raises(ProgramlError, match="format 99; this programl reads format 1"):
        pretrained(str(copy))
    (copy / "model.json").write_text(json.dumps({**metadata, "model": {"class": "os.system"}}))
    with pytest.raises(ProgramlError, match="unknown model class 'os.system'"):
        pretrained(str(copy))
    (copy / "model.json").write_text("{")
    with pytest.raises(ProgramlError, match="model.json:1:2: not JSON"):
        pretrained(str(copy))


@pytest.mark.parametrize(
    "entry", ["weights.pt", {"sha256": "x"}, {"file": "../../etc/hostname"}, {"file": "/etc/hostname"}, {"file": ""}]
)
def test_a_weights_entry_must_name_a_file_in_the_directory(dataflow_export, tmp_path, entry) -> None:
    """A hand-edited model.json: a str or a missing file was a TypeError/KeyError, a path outside was read."""
    _, models = dataflow_export
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in FILES:
        (copy / name).write_bytes((models / "reachability" / name).read_bytes())
    metadata = json.loads((copy / "model.json").read_text())
    (copy / "model.json").write_text(json.dumps({**metadata, "weights": entry}))
    with pytest.raises(ProgramlError, match="the weights entry must be .* naming a file in the model directory"):
        pretrained(str(copy))


# ---------------------------------------------------------------------------------------------------------------
# Predicting


def test_dataflow_prediction_uses_the_analyses_roots(dataflow_export, graph) -> None:
    from programl.dataflow.analyze import analyze_arrays

    model = pretrained("reachability", directory=dataflow_export[1])
    prediction = model.predict(graph, compare=True)
    exact = analyze_arrays(graph, "reachability", seed=0)  # the roots `programl analyze` samples
    assert np.array_equal(prediction.roots, exact.roots)
    assert np.array_equal(prediction.exact, exact.labels.astype(bool))
    assert prediction.probabilities.shape == (len(exact.roots), len(graph.node))
    assert np.array_equal(prediction.predicted, prediction.probabilities > 0.5)
    out = prediction.to_dict()
    for row, entry in enumerate(out["roots"]):
        assert entry["root"]["id"] == int(exact.roots[row])
        shown = [n["id"] for n in entry["nodes"]]
        assert shown == sorted(np.flatnonzero(prediction.predicted[row] | prediction.exact[row]).tolist())
        c = entry["confusion"]
        assert (
            sum(c.values()) == len(graph.node) and entry["predicted_true"] == c["true_positives"] + c["false_positives"]
        )
    again = model.predict(graph, compare=True)  # deterministic
    assert np.array_equal(again.probabilities, prediction.probabilities)


def test_dataflow_roots_can_be_chosen(dataflow_export, graph) -> None:
    from programl.dataflow.analyze import eligible_roots

    model = pretrained("reachability", directory=dataflow_export[1])
    eligible = eligible_roots(graph, "reachability")
    three = model.predict(graph, num_roots=3, seed=5)
    assert len(three.roots) == 3 and set(three.roots.tolist()) <= set(eligible.tolist())
    one = model.predict(graph, roots=[int(eligible[-1])], steps=2)
    assert one.roots.tolist() == [int(eligible[-1])] and one.steps == 2 and one.exact is None
    variable = next(i for i, n in enumerate(graph.node) if n.type == 1)
    with pytest.raises(AnalysisError, match=f"node {variable} is not an eligible reachability root"):
        model.predict(graph, roots=[variable])


def test_prediction_options_must_be_integers(dataflow_export, graph) -> None:
    """1.5 roots, 1.9 steps (which ran 1) and a bool are mistakes, not numbers to round."""
    model = pretrained("reachability", directory=dataflow_export[1])
    for options, message in [
        ({"num_roots": 1.5}, "the number of roots must be a positive integer, not 1.5"),
        ({"num_roots": 0}, "the number of roots must be a positive integer, not 0"),
        ({"steps": 1.9}, "steps must be an integer >= 0, not 1.9"),
        ({"steps": -1}, "steps must be an integer >= 0, not -1"),
        ({"num_roots": 2, "seed": True}, "seed must be an integer >= 0, not True"),
    ]:
        with pytest.raises(ProgramlError, match=re.escape(message)):
            model.predict(graph, **options)


@pytest.mark.parametrize("name", ["devmap-amd", "classifyapp"])
def test_graph_models_refuse_a_graph_without_instructions(name) -> None:
    """Before, devmap answered 'GPU' with probability 1.0 for ProgramGraph()."""
    model = pretrained(name)
    for empty in (ProgramGraph(), programl.from_llvm_ir("")):  # no nodes; the external node only
        with pytest.raises(ProgramlError, match=r"the graph holds no instructions \(\d nodes\)"):
            model.predict(empty)
    with pytest.raises(TypeError, match="expected a ProgramGraph, got NoneType"):
        model.predict(None)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"transfer": float("nan")}, "--transfer must be a finite number >= 0, not nan"),
        ({"transfer": float("inf")}, "--transfer must be a finite number >= 0, not inf"),
        ({"transfer": "5"}, "--transfer must be a number, not '5'"),
        ({"wgsize": -1}, "--wgsize must be a finite number >= 0, not -1"),
        ({"wgsize": True}, "--wgsize must be a number, not True"),
    ],
)
def test_devmap_inputs_must_be_numbers(graph, options, message) -> None:
    with pytest.raises(ProgramlError, match=re.escape(message)):
        pretrained("devmap-amd").predict(graph, **options)


def test_devmap_export_and_prediction(tmp_path, graph) -> None:
    run = runs.devmap_run(tmp_path)
    directory = export_pretrained(run, output_dir=tmp_path / "models")
    assert directory.name == "devmap-amd"
    metadata = json.loads((directory / "model.json").read_text())
    assert metadata["platform"] == "amd" and metadata["training"]["fold"] == 1  # best validation; tie -> lower fold
    assert metadata["outputs"]["classes"] == ["CPU", "GPU"]
    assert metadata["scores"]["test"] == runs.DEVMAP_TEST and metadata["compute"]["train_seconds"] == 7.5
    assert metadata["compute"]["all_folds_seconds"] == 22.5
    card = (directory / "MODEL_CARD.md").read_text()
    assert "| 0.625 | 0.610 | 0.625 | 0.600 | 0.500 | 1.250 | 2.000 |" in card and "0.700 ± 0.050" in card
    model = pretrained(str(directory))
    default = model.predict(graph)
    assert default.source == "default" and (default.transfer, default.wgsize) == (57_594_120, 62)
    assert default.device in ("CPU", "GPU") and abs(sum(default.probabilities.values()) - 1) < 1e-6
    assert default.probability == max(default.probabilities.values())
    given = model.predict(graph, transfer=1024, wgsize=4)
    assert given.source == "given" and (given.transfer, given.wgsize) == (1024, 4)
    featured = type(graph)()
    featured.CopyFrom(graph)  # a DevMap graph carries its row's inputs as features
    featured.features.feature["transfer_bytes"].int64_list.value.append(4096)
    featured.features.feature["wgsize"].int64_list.value.append(128)
    from_graph = model.predict(featured)
    assert from_graph.source == "graph" and (from_graph.transfer, from_graph.wgsize) == (4096, 128)
    assert model.predict(featured, transfer=4096, wgsize=128).probabilities == from_graph.probabilities
    assert export_pretrained(run, "other", output_dir=tmp_path / "models", fold=2).name == "other"


def test_classifyapp_export_and_prediction(tmp_path, graph) -> None:
    run = runs.classifyapp_run(tmp_path)
    directory = export_pretrained(run, output_dir=tmp_path / "models")
    metadata = json.loads((directory / "model.json").read_text())
    assert directory.name == "classifyapp" and metadata["outputs"]["classes"][:2] == ["1", "2"]
    assert len(metadata["outputs"]["classes"]) == 104 and metadata["inputs"]["flags"] == ["-O0"]
    assert "per_class_accuracy" not in metadata["scores"]["test"]
    card = (directory / "MODEL_CARD.md").read_text()
    assert "| test | 48 | 25.00 | 0.7500 |" in card and "0.020 CPU-hours" in card  # 36 s x 2 processes
    # a result.json without the machine: the card says it of the machine, not as if it named one
    assert "device cpu (machine not recorded)" in card
    prediction = pretrained(str(directory)).predict(graph, top=5)
    with pytest.raises(ProgramlError, match=r"top must be a positive integer, not 2\.0"):
        pretrained(str(directory)).predict(graph, top=2.0)
    assert len(prediction.classes) == 5 and len(set(prediction.classes)) == 5
    assert prediction.probabilities == sorted(prediction.probabilities, reverse=True)
    assert all(c in metadata["outputs"]["classes"] for c in prediction.classes)


# ---------------------------------------------------------------------------------------------------------------
# The networks the export rebuilds are the tasks' own


def _same_network(a, b) -> None:
    assert type(a) is type(b)
    sa, sb = a.state_dict(), b.state_dict()
    assert {k: tuple(v.shape) for k, v in sa.items()} == {k: tuple(v.shape) for k, v in sb.items()}
    assert repr(a) == repr(b)


@pytest.mark.parametrize(
    "argv", [["--analysis", "liveness"], ["--analysis", "datadep", "--model", "rgcn", "--steps", "5"]]
)
def test_dataflow_network_is_the_tasks(argv) -> None:
    from programl.tasks.dataflow import train as dataflow

    config = runs.task_config(dataflow, argv)
    _same_network(build_model(model_spec("dataflow", config, 23)), dataflow._make_model(config, 23))


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--positions", "--node-type-gru", "--steps", "4", "--layers", "4"],
        ["--readout-channels", "4", "--pooling", "mean", "--hidden", "16"],
    ],
)
def test_devmap_network_is_the_tasks(argv) -> None:
    from programl.tasks.devmap import folds
    from programl.tasks.devmap import train as devmap

    config = runs.task_config(devmap, argv)
    _same_network(build_model(model_spec("devmap", config, 23)), folds.network(config, 23))


@pytest.mark.parametrize(
    "argv",
    [
        ["--hidden", "8"],
        ["--hidden", "8", "--no-positions", "--node-type-gru"],
        ["--model", "rgcn", "--hidden", "8", "--layer-timesteps", "1", "2"],
    ],
)
def test_classifyapp_network_is_the_tasks(argv) -> None:
    from programl.tasks.classifyapp import train as classifyapp

    config = runs.task_config(classifyapp, argv)
    _same_network(build_model(model_spec("classifyapp", config, 23)), classifyapp._make_model(config, 23))


@pytest.mark.parametrize(
    ("args", "reason"),
    [([10**12], "cannot build DataflowGGNN: "), ([-3], "must be >= 0"), ([None], "cannot build DataflowGGNN: ")],
)
def test_absurd_model_sizes_are_one_line(args, reason) -> None:
    """A damaged or hostile model.json (``predict --model DIR``, an export of a bad config): a ProgramlError that the
    CLI prints on one line, not a RuntimeError from torch's allocator or a TypeError from a constructor."""
    with pytest.raises(ProgramlError, match=reason) as info:
        build_model({"class": "DataflowGGNN", "args": args})
    assert "\n" not in str(info.value)


def test_missing_options_are_named() -> None:
    with pytest.raises(ProgramlError, match="no layers, positions among the model options"):
        model_spec(
            "devmap",
            {
                "hidden": 8,
                "steps": 2,
                "node_type_gru": False,
                "message_dropout": 0,
                "state_dropout": 0,
                "aux_dropout": 0,
                "aux_hidden": 4,
            },
            5,
        )


# ---------------------------------------------------------------------------------------------------------------
# Defaults and packaging


def test_devmap_defaults_are_the_medians_of_the_data(shared_data) -> None:
    from programl.data.devmap import AUX_MEDIANS, read_platform_csv

    for platform, defaults in AUX_MEDIANS.items():
        rows = read_platform_csv(shared_data / "devmap" / f"cgo17-{platform}.csv")
        assert defaults["transfer"] == np.median([r.transfer for r in rows])
        assert defaults["wgsize"] == np.median([r.wgsize for r in rows])


def test_package_data_ships_every_file_of_a_model() -> None:
    tomllib = pytest.importorskip("tomllib")
    pyproject = tomllib.loads((runs.REPO / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["programl.pretrained"]
    for name in FILES:
        assert any(fnmatch.fnmatch(f"weights/some-model/{name}", p) for p in patterns), name
    assert "programl.pretrained.weights*" in pyproject["tool"]["setuptools"]["packages"]["find"]["exclude"]


# ---------------------------------------------------------------------------------------------------------------
# Every shipped model predicts on a bundled example (runs by itself once weights are in the package)

SHIPPED = pretrained_names()
EXAMPLE = {"dataflow": "dot_product.ll", "devmap": "vector_add.cl", "classifyapp": "quicksort.cc"}


@pytest.mark.parametrize(
    "name",
    SHIPPED
    or [pytest.param(None, marks=pytest.mark.skip(reason=f"no pretrained model is shipped yet in {PRETRAINED_DIR}"))],
)
def test_shipped_model_predicts_on_an_example(name, tmp_path, capsys) -> None:
    from programl.cli import main

    model = pretrained(name)
    metadata = model.metadata
    assert metadata["weights"]["bytes"] < 20 << 20 and model.card.startswith(f"# {name}: ")
    assert metadata["scores"] and metadata["training"]["config"]["task"] == model.task
    example = runs.EXAMPLES / EXAMPLE[model.task]
    if example.suffix != ".ll":
        import shutil

        if not shutil.which("clang-22"):
            pytest.skip("clang-22 not installed (apt-get install clang-22)")
    argv = ["predict", model.task, str(example), "--model", name, "--json", "-j", "1"]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["file"] == str(example) and record["predictions"][0]["model"] == name


def test_until_stable_bounds_read_and_check_model_json() -> None:
    """A step-free model.json's inference (issue 36) as forward_until_stable's arguments, latch included; a model
    run at its T has none; a wrong value is one line naming it (model.json is a file a user may receive)."""
    from programl.exceptions import ProgramlError
    from programl.tasks.dataflow.predict import until_stable_bounds

    inference = {"mode": "until_stable", "min_steps": 30, "max_steps": 4000, "patience": 40, "latch": True}
    assert until_stable_bounds({"inference": inference}) == {
        "min_steps": 30,
        "max_steps": 4000,
        "patience": 40,
        "latch": True,
    }
    assert until_stable_bounds({"steps": 12, "inference": {"mode": "until_stable"}}) == {
        "min_steps": 12,
        "max_steps": 1000,
        "patience": 5,
        "latch": False,
    }
    assert until_stable_bounds({"steps": 30}) is None
    assert until_stable_bounds({"inference": {"mode": "control_floods"}}) is None
    for key, bad, message in (
        ("latch", "yes", "latch must be true or false"),
        ("patience", 0, "patience must be a positive integer"),
        ("max_steps", 10, "max_steps 10 < min_steps"),
    ):
        with pytest.raises(ProgramlError, match=message):
            until_stable_bounds({"inference": {**inference, key: bad}})
