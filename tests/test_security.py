"""No file a user receives runs code (issue 39 item 1; docs/security.md).

A pickle payload (tests/payload.py: it creates a marker file when unpickled) goes through every CLI command and API
function that reads a file a user may have received: a run's ``best.pt`` / ``last.pt`` (``evaluate``, a resumed
``train``, ``export-pretrained``), an exported model's ``weights.pt`` (``train --init-from``, ``predict --model``,
``programl.pretrained.pretrained``), the checkpoint API, and the files that are not torch files at all (graphs, configs,
vocabularies) given a pickle instead. Each must refuse in one line and the marker must never appear. The data set
directories (PyG's ``pre_transform.pt`` / ``pre_filter.pt`` and processed files) are covered in
tests/datasets/test_datasets.py, where their fixtures are built. A static check keeps every ``torch.load`` in the one
safe reader.
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.exceptions import ProgramlError  # noqa: E402
from programl.util.safe_torch import UnsafeFileError, load_tensors  # noqa: E402
from tests.models import pretrained_runs as runs  # noqa: E402
from tests.payload import payload_bytes, payload_runs, write_payload  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: a checkpoint's layout, the payload where its model state would be
CHECKPOINT = {"model": None, "optimizer": None, "epoch": 1, "extra": {}}


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path]:
    """(run directory, exported model directory) of a real tiny reachability run."""
    from programl.pretrained.export import export_pretrained

    tmp = tmp_path_factory.mktemp("security")
    run = runs.dataflow_run(tmp)
    export_pretrained(run, output_dir=tmp / "models")
    return run, tmp / "models" / "reachability"


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    marker = tmp_path / "MARKER"
    assert payload_runs(marker), "the payload does not run when unpickled: the tests below would prove nothing"
    return marker


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    """``programl ARGS`` in a fresh interpreter, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "programl", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_refused(result: subprocess.CompletedProcess, marker: Path, *, what: str = "refusing to unpickle") -> None:
    assert not marker.exists(), "the payload ran"
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    assert what in result.stderr, result.stderr
    assert "weights_only=False" not in result.stderr + result.stdout


def poisoned_run(run: Path, tmp_path: Path, marker: Path, *files: str, kind: str = "torch") -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    for name in files:
        write_payload(copy / name, marker, kind, CHECKPOINT)
    return copy


def poisoned_model(model: Path, tmp_path: Path, marker: Path, kind: str = "torch") -> Path:
    """An exported model whose weights.pt is a payload, with model.json's sha256 and size made to match (an attacker
    who ships the directory controls both), so that the unpickling reader itself is what refuses it."""
    copy = tmp_path / "models" / "reachability"
    shutil.copytree(model, copy)
    data = payload_bytes(marker, kind, {"weight": None})
    (copy / "weights.pt").write_bytes(data)
    meta = json.loads((copy / "model.json").read_text())
    meta["weights"]["sha256"] = hashlib.sha256(data).hexdigest()
    meta["weights"]["bytes"] = len(data)
    (copy / "model.json").write_text(json.dumps(meta, indent=2))
    return copy


# ---------------------------------------------------------------------------------------------------------------
# The three paths of the finding, and export


@pytest.mark.parametrize("kind", ["torch", "pickle"])
def test_evaluate_never_unpickles_a_run_directory(trained, tmp_path, marker, kind) -> None:
    run = poisoned_run(trained[0], tmp_path, marker, "best.pt", kind=kind)
    result = cli("evaluate", "dataflow", "--run-dir", run, "--threads", "1", "-q", cwd=tmp_path)
    assert_refused(result, marker)
    assert "best.pt" in result.stderr


def test_a_resumed_run_never_unpickles_its_last_checkpoint(trained, tmp_path, marker) -> None:
    run = poisoned_run(trained[0], tmp_path, marker, "last.pt")
    config = json.loads((run / "config.json").read_text())
    dataset = config.get("data", {}).get("dataset") or str(trained[0].parent / "ddf")
    argv = ["train", "dataflow", "--analysis", "reachability", "--dataset", dataset, "--run-dir", run]
    argv += ["--threads", "1", "--train-examples", "10", "20", "--val-examples", "4", "--batch-nodes", "600"]
    result = cli(*argv, "--test-steps", "30", "-q", cwd=tmp_path)
    assert_refused(result, marker)
    assert "last.pt" in result.stderr


@pytest.mark.parametrize("target", ["file", "directory"])
def test_init_from_never_unpickles_received_weights(trained, tmp_path, marker, target) -> None:
    model = poisoned_model(trained[1], tmp_path, marker)
    argv = ["train", "dataflow", "--analysis", "reachability", "--dataset", trained[0].parent / "ddf"]
    argv += ["--run-dir", tmp_path / "new", "--threads", "1", "--train-examples", "10", "--val-examples", "4"]
    argv += ["--init-from", model / "weights.pt" if target == "file" else model]
    result = cli(*argv, "--batch-nodes", "600", "--test-steps", "30", "-q", cwd=tmp_path)
    assert_refused(result, marker)


def test_export_never_unpickles_a_run_directory(trained, tmp_path, marker) -> None:
    run = poisoned_run(trained[0], tmp_path, marker, "best.pt")
    result = cli("export-pretrained", run, "-o", tmp_path / "out", cwd=tmp_path)
    assert_refused(result, marker)
    assert not (tmp_path / "out" / "reachability" / "weights.pt").exists()


def test_predict_never_unpickles_a_received_model(trained, tmp_path, marker) -> None:
    model = poisoned_model(trained[1], tmp_path, marker)
    example = runs.EXAMPLES / "dot_product.ll"
    result = cli("predict", "dataflow", example, "--model", model, "-j", "1", cwd=tmp_path)
    assert_refused(result, marker, what="weights.pt")


# ---------------------------------------------------------------------------------------------------------------
# The API


def test_the_checkpoint_api_never_unpickles(trained, tmp_path, marker) -> None:
    from programl.pretrained import pretrained
    from programl.training import load_checkpoint
    from programl.training.checkpoint import load_initial_weights

    run = poisoned_run(trained[0], tmp_path, marker, "best.pt", "last.pt")
    model = poisoned_model(trained[1], tmp_path, marker)
    calls = [
        lambda: load_checkpoint(run / "best.pt"),
        lambda: load_checkpoint(run / "last.pt", restore_rng=True),
        lambda: load_initial_weights(run / "best.pt", model=torch.nn.Linear(1, 1)),
        lambda: load_initial_weights(model, model=torch.nn.Linear(1, 1)),
        lambda: pretrained("reachability", directory=model.parent),
        lambda: load_tensors(model / "weights.pt"),
    ]
    for call in calls:
        with pytest.raises(ProgramlError) as info:
            call()
        assert "\n" not in str(info.value) and "weights_only=False" not in str(info.value)
        assert not marker.exists()


def test_the_safe_reader_names_what_it_refused(tmp_path, marker) -> None:
    path = write_payload(tmp_path / "weights.pt", marker)
    with pytest.raises(
        UnsafeFileError,
        match=r"weights.pt: not a readable checkpoint \(it holds a reference to posix\.system, not only",
    ):
        load_tensors(path, what="checkpoint")
    (tmp_path / "text.pt").write_text("hello")
    with pytest.raises(ProgramlError, match="not a file torch.save writes"):
        load_tensors(tmp_path / "text.pt")
    assert not marker.exists()


def test_a_checkpoint_cannot_be_written_with_an_object_inside(tmp_path) -> None:
    """What would be refused when read is refused when written (a run could otherwise not resume)."""
    from programl.training import save_checkpoint

    with pytest.raises(TypeError, match=r"\['extra'\]\['partial'\]: a object"):
        save_checkpoint(tmp_path / "x.pt", model=torch.nn.Linear(1, 1), epoch=0, extra={"partial": object()})
    assert not (tmp_path / "x.pt").exists()


# ---------------------------------------------------------------------------------------------------------------
# Files that are not torch files, given a pickle


def test_readers_of_other_formats_given_a_pickle(tmp_path, marker) -> None:
    import programl
    from programl.data.vocabulary import Vocabulary

    pb = write_payload(tmp_path / "x.ProgramGraph.pb", marker, "pickle")
    for args in (["stats", pb], ["analyze", "reachability", pb], ["convert", pb, "--format", "json"]):
        result = cli(*args, cwd=tmp_path)
        assert result.returncode != 0 and "Traceback" not in result.stderr, (args, result.stderr)
    with pytest.raises(Exception):  # noqa: B017, PT011 - any parse error; what matters is the marker
        programl.load_graphs(pb)
    vocab = write_payload(tmp_path / "vocab.csv", marker, "pickle")
    with pytest.raises((ValueError, UnicodeDecodeError, ProgramlError)):
        Vocabulary.load(vocab)
    config = write_payload(tmp_path / "config.json", marker, "pickle")
    result = cli("train", "dataflow", "--config", config, "--run-dir", tmp_path / "r", cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------------------------
# Static: the package has one reader of torch files, and unpickles nothing else


def _calls(tree: ast.AST) -> list[tuple[str, ast.Call]]:
    """``(dotted name, call)`` of every call in a module: ``torch.load``, ``pickle.loads``, ``np.load`` ..."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            parts, func = [], node.func
            while isinstance(func, ast.Attribute):
                parts.append(func.attr)
                func = func.value
            if isinstance(func, ast.Name):
                out.append((".".join([func.id, *reversed(parts)]), node))
    return out


def test_no_unsafe_reader_in_the_package() -> None:
    package = REPO / "programl"
    sources = {p.relative_to(package).as_posix(): p.read_text(encoding="utf-8") for p in package.rglob("*.py")}
    assert not [p for p, text in sources.items() if "weights_only=False" in text]
    torch_loads, unpicklers = set(), set()
    for path, text in sources.items():
        for name, call in _calls(ast.parse(text)):
            if name == "torch.load":
                torch_loads.add(path)
                assert any(k.arg == "weights_only" and getattr(k.value, "value", None) is True for k in call.keywords)
            if name in ("pickle.load", "pickle.loads", "pickle.Unpickler", "dill.load", "dill.loads"):
                unpicklers.add(path)
            if name in ("np.load", "numpy.load"):
                assert any(k.arg == "allow_pickle" and getattr(k.value, "value", None) is False for k in call.keywords)
    assert torch_loads == {"util/safe_torch.py"}
    # pickle only between the package's own processes (the worker pipe of util/executor.py)
    assert unpicklers <= {"util/executor.py", "util/_worker.py"}
