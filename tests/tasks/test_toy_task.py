"""A new task is one package and one registry line: the toy task of ``tests/tasks/toy_task/`` (what a task must say:
name, summary, options, predictor, network, outputs; every other method of ``TaskSpec`` keeps its default), registered
with :func:`programl.tasks.registry.register_task`, gets ``programl train toy`` (options from its dataclasses),
``programl export-pretrained``, a model card written from its ``model.json``, ``PretrainedModel.predict`` and
``programl predict toy`` (whose workers are fresh processes that learn the task from the command) without a change
elsewhere in the package."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from programl import cli
from programl.exceptions import ProgramlError
from programl.tasks.base import TaskSpec
from programl.tasks.registry import TASKS, get_task, register_task
from tests.tasks.toy_task.spec import ToySpec

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
INPUTS = [EXAMPLES / "dot_product.ll"]


@pytest.fixture
def toy():
    """The toy task, registered for one test (the registry as the package has it afterwards)."""
    spec = register_task(ToySpec())
    try:
        yield spec
    finally:
        TASKS.pop(spec.name)


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit:  # argparse: --help and usage errors
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_task_says_a_handful_of_things() -> None:
    """The toy spec's class body holds its name, summary, options, predictor, network and outputs (plus its run
    options); everything else is TaskSpec's."""
    own = {key for key in vars(ToySpec) if not key.startswith("__")}
    assert own == {"name", "summary", "options", "run_options", "predictor", "model_spec", "outputs"}


def test_registering_the_toy_task(toy) -> None:
    assert get_task("toy") is toy and list(TASKS)[-1] == "toy"
    assert toy.train_module == "tests.tasks.toy_task.train" and toy.title == "ProGraML toy"
    with pytest.raises(ValueError, match="a task called 'dataflow' is registered already"):
        register_task(type("Other", (ToySpec,), {"name": "dataflow"})())
    with pytest.raises(ValueError, match="expected a TaskSpec instance"):
        register_task(ToySpec)
    assert register_task(ToySpec()).name == "toy"  # the same task again: replaced, not refused


def test_train_and_evaluate_help_come_from_the_options_dataclasses(toy, capsys) -> None:
    code, out, _ = run_cli(capsys, "train", "toy", "--help")
    assert code == 0
    assert "\n\nLearn whether a program is small or large (a toy task).\n\n" in out
    assert re.search(r"model:\n  --hidden N +node state size \(default: 8\)", out)
    for flag in ("--steps", "--threshold", "--init-from", "--inputs FILE [FILE ...]", "--run-dir", "--device"):
        assert flag in out, flag
    code, out, _ = run_cli(capsys, "evaluate", "toy", "--help")
    assert code == 0 and "--threads" in out and "--hidden" not in out
    code, _, err = run_cli(capsys, "train", "toy", "--hidden", "0")
    assert code == 2 and "--hidden must be in [1, 64], not 0" in err and "Traceback" not in err


@pytest.fixture
def toy_model(toy, tmp_path, capsys) -> Path:
    """A toy model trained by ``programl train toy`` and installed by ``programl export-pretrained``."""
    pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    run = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "toy", "--inputs", *INPUTS, "--run-dir", run, "--threads", "1", "-q")
    assert code == 0, err
    code, out, err = run_cli(capsys, "export-pretrained", run, "-o", tmp_path / "models")
    assert code == 0, err
    return tmp_path / "models" / "toy"


def test_the_card_is_written_from_the_toy_model_json(toy_model) -> None:
    from programl.pretrained.card import model_card

    metadata = json.loads((toy_model / "model.json").read_text())
    card = (toy_model / "MODEL_CARD.md").read_text()
    assert metadata["task"] == "toy" and metadata["outputs"]["classes"] == ["small", "large"]
    assert card == model_card(metadata)
    assert card.startswith("# toy: ProGraML toy\n\nPredicts whether a program has over 20 instructions.\n")
    assert "| task | toy |" in card and "`GGNNGraphClassifier`" in card
    accuracy = metadata["scores"]["test"]["accuracy"]
    assert "From the run's `config.json`: no data directory recorded; scope: programs 1." in card
    assert f"| `test.accuracy` | {accuracy:.4f} |" in card and "| `test.count` | 1 |" in card
    assert "`train_seconds`" not in card and "Training: " in card  # a training fact, not a score
    assert "programl predict toy FILE" in card


def test_pretrained_model_predict_runs_the_toy_predictor(toy_model) -> None:
    from programl.graph_builder.llvm import graph_from_ir
    from programl.pretrained import pretrained
    from programl.proto import ProgramGraph
    from tests.tasks.toy_task.predict import ToyPrediction, instructions

    model = pretrained(toy_model)
    graph = graph_from_ir(INPUTS[0].read_text(), path=str(INPUTS[0]))
    prediction = model.predict(graph)
    assert isinstance(prediction, ToyPrediction) and prediction.instructions == instructions(graph) > 0
    assert prediction.label in ("small", "large") and set(prediction.probabilities) == {"small", "large"}
    assert prediction.probability == max(prediction.probabilities.values())
    assert sum(prediction.probabilities.values()) == pytest.approx(1.0)
    with pytest.raises(ProgramlError, match="the graph holds no instructions"):
        model.predict(ProgramGraph())


def test_programl_predict_toy(toy_model, capsys) -> None:
    """The prediction workers are fresh processes: they get the task from the command (its spec, pickled as its
    class) and register it, so that they read the toy model.json too."""
    argv = ["predict", "toy", INPUTS[0], "--model", toy_model, "-j", "1", "-q"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and err == ""
    assert re.fullmatch(
        rf"{re.escape(str(INPUTS[0]))}: toy \(model toy\): class (small|large); probability [0-9.]+; "
        r'probabilities \{"large": [0-9.]+, "small": [0-9.]+\}; instructions \d+\n',
        out,
    ), out
    code, out, err = run_cli(capsys, *argv, "--json")
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and record["task"] == "toy" and record["predictions"][0]["model"] == "toy"
    assert set(record["predictions"][0]) == {"model", "class", "probability", "probabilities", "instructions"}


def test_a_model_json_with_another_tasks_entry_is_refused(toy_model, capsys) -> None:
    """The entries only another task's models have (``analysis``) are refused in a toy model.json, as in any."""
    metadata = json.loads((toy_model / "model.json").read_text())
    (toy_model / "model.json").write_text(json.dumps({**metadata, "analysis": "reachability"}))
    code, _, err = run_cli(capsys, "predict", "toy", INPUTS[0], "--model", toy_model, "-q")
    assert code == 1
    assert err.strip().endswith("model.json: analysis is for another task than toy (expected none, not 'reachability')")


def test_the_package_tasks_stay_task_specs() -> None:
    assert all(isinstance(spec, TaskSpec) for spec in TASKS.values()) and "toy" not in TASKS
