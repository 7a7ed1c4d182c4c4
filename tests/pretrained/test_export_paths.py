"""An exported model directory names no place on the exporting machine (programl.pretrained.export.portable_path):
its ``model.json`` and ``MODEL_CARD.md`` travel to every user, so a path the user gave relative stays as given, an
absolute one inside the current directory becomes relative to it, and any other keeps its last two components."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.pretrained.export import export_pretrained, portable_path  # noqa: E402
from tests.models import pretrained_runs as runs  # noqa: E402

#: An absolute path in a text, as tests/test_no_machine_paths.py finds them (not inside a longer path or a URL).
ABSOLUTE = re.compile(r"(?<![\w.~$/:-])/[\w.-]+")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A real tiny reachability run; its config.json records the data set by its absolute path."""
    return runs.dataflow_run(tmp_path_factory.mktemp("paths"))


def _exported(directory: Path) -> tuple[dict, str, str]:
    text = (directory / "model.json").read_text()
    return json.loads(text), text, (directory / "MODEL_CARD.md").read_text()


def test_the_rules() -> None:
    assert portable_path("runs/reach") == "runs/reach"  # relative: as given
    assert portable_path("../shared/data/ddf") == "../shared/data/ddf"
    assert portable_path("/srv/me/main/runs/reach", cwd="/srv/me/main") == "runs/reach"  # inside the cwd
    assert portable_path("/srv/me/main", cwd="/srv/me/main") == "."
    assert portable_path("/srv/me/data/ddf22-3000", cwd="/srv/me/main") == "data/ddf22-3000"  # outside: the last two
    assert portable_path("/x", cwd="/srv") == "x"
    assert portable_path("/srv/me/main/../runs/a", cwd="/elsewhere") == "runs/a"
    assert portable_path("/dev/null", cwd="/srv") == "/dev/null"  # the same on every machine
    assert portable_path(Path("/srv/me/runs/b"), cwd="/srv/me") == "runs/b"


def test_a_run_outside_the_current_directory_keeps_its_last_components(run, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    command = f"programl train dataflow --dataset {run.parent / 'ddf'} --run-dir {run} --log /dev/null"
    metadata, text, card = _exported(export_pretrained(run, output_dir=tmp_path / "models", command=command))
    parent = run.parent.name
    training = metadata["training"]
    assert training["run_dir"] == f"{parent}/{run.name}"
    assert training["results"] == f"{run.name}/result.json"
    config = json.loads((run / "config.json").read_text())
    assert Path(config["dataset"]).is_absolute()  # what training recorded
    assert training["config"] == {**config, "dataset": f"{parent}/ddf"}
    assert (
        training["command"]
        == f"programl train dataflow --dataset {parent}/ddf --run-dir {parent}/{run.name} --log /dev/null"
    )
    for written in (text, card):
        assert str(run.parent) not in written
        assert {m.group(0) for m in ABSOLUTE.finditer(written)} <= {"/dev"}, written
    assert f"* Run directory: `{parent}/{run.name}`" in card


def test_a_run_inside_the_current_directory_is_recorded_relative_to_it(run, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(run.parent)
    metadata, text, card = _exported(export_pretrained(run, output_dir=tmp_path / "absolute"))
    assert metadata["training"]["run_dir"] == run.name
    assert metadata["training"]["config"]["dataset"] == "ddf"
    # the equivalent command is made of the same paths
    assert metadata["training"]["command"].startswith(f"programl train dataflow --config {run.name}/config.json ")
    assert str(run.parent) not in text + card
    # a relative run directory is recorded as given, and the files are the same bytes
    again = export_pretrained(Path(run.name), output_dir=tmp_path / "relative")
    for name in ("model.json", "MODEL_CARD.md", "weights.pt"):
        assert (again / name).read_bytes() == (tmp_path / "absolute" / "reachability" / name).read_bytes(), name
