"""Hostile model directories (``programl predict --model DIR``, ``programl.pretrained.pretrained(DIR)``, ``train
--init-from``): every field of ``model.json`` is type- and range-checked with an upper limit, each file is read only
when it is a regular file of the size ``model.json`` records (a symlink to ``/dev/zero`` or a FIFO in its place is
refused, never read), ``predict`` reads the weights and builds the network in its limited worker, and ``--model ''``
is a usage error. Each refusal is one line naming the file (and the field).

The shipped reachability model (programl/pretrained/weights) is copied and damaged: no training run is needed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.cli import main  # noqa: E402
from programl.exceptions import ProgramlError  # noqa: E402
from programl.pretrained.hub import PRETRAINED_DIR, pretrained  # noqa: E402
from programl.util.safe_torch import load_tensors, read_regular_file  # noqa: E402
from tests.models import pretrained_runs as runs  # noqa: E402

DOT = runs.EXAMPLES / "dot_product.ll"
REACHABILITY = PRETRAINED_DIR / "reachability"


def copy_model(tmp_path: Path, change=None) -> Path:
    """A copy of the shipped reachability model, its ``model.json`` changed by ``change(metadata)``."""
    copy = tmp_path / "model"
    shutil.copytree(REACHABILITY, copy)
    if change is not None:
        metadata = json.loads((copy / "model.json").read_text())
        change(metadata)
        (copy / "model.json").write_text(json.dumps(metadata))
    return copy


def predict(capsys, *argv) -> tuple[int, str, str]:
    code = main(["predict", "dataflow", *[str(a) for a in argv]])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_python(code: str, *args, timeout: float = 240) -> subprocess.CompletedProcess:
    """``python -c CODE ARGS`` from the repository (a read that blocked would end at ``timeout`` and fail the test)."""
    env = {**os.environ, "PYTHONPATH": str(runs.REPO)}
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=runs.REPO,
    )


def run_cli(*argv, timeout: float = 240) -> subprocess.CompletedProcess:
    return run_python(
        "import sys\nfrom programl.cli import main\nsys.exit(main(sys.argv[1:]))\n", *argv, timeout=timeout
    )


#: What a received model calls in a fresh interpreter: its error's one line, or "loaded".
LOAD = """\
import sys
from programl.exceptions import ProgramlError
from programl.pretrained import pretrained
try:
    pretrained(sys.argv[1])
except ProgramlError as error:
    print(error)
else:
    print("loaded")
"""


def _set(path: str, value):
    """A change of ``model.json``: ``path`` is dotted keys (``model.kwargs.num_steps``)."""

    def change(metadata):
        *parents, last = path.split(".")
        node = metadata
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value

    return change


def _nested(depth: int):
    value: dict = {}
    for _ in range(depth):
        value = {"x": value}
    return value


# ---------------------------------------------------------------------------------------------------------------
# model.json: every field, with an upper limit for every number


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            _set("inference", {"mode": "until_stable", "max_steps": 10**12}),
            ": inference max_steps must be at most 10,000, not 1000000000000",
            id="max_steps 10^12",
        ),
        pytest.param(
            _set("inference", {"mode": "until_stable", "patience": 10**9}),
            ": inference patience must be at most 10,000, not 1000000000",
            id="patience",
        ),
        pytest.param(
            _set("inference", {"mode": "bogus"}),
            ": inference.mode must be one of until_stable, control_floods, fixpoint, not 'bogus'",
            id="bogus inference mode",
        ),
        pytest.param(_set("inference", [1, 2]), ": inference must be an object, not [1, 2]", id="inference a list"),
        pytest.param(
            _set("inference", {"mode": "until_stable", "max_step": 5}),
            ": inference has an unknown key 'max_step' (expected mode, min_steps, max_steps, patience, latch)",
            id="inference key misspelt",
        ),
        pytest.param(
            _set("inference", {"mode": "control_floods", "steps": 10**12}),
            ": inference.steps must be at most 10,000, not 1000000000000",
            id="control floods steps",
        ),
        pytest.param(
            _set("outputs", {"classes": []}), ": outputs.level must be one of node, not None", id="outputs classes []"
        ),
        pytest.param(
            _set("outputs.classes", []), ": outputs.classes must be a list of 2..2 items, not []", id="no classes"
        ),
        pytest.param(
            _set("outputs.classes", [1, 2]),
            ": outputs.classes[0] must be a printable string of at most 200 characters, not 1",
            id="classes not strings",
        ),
        pytest.param(
            _set("outputs.classes", ["false", "\x1b[2J"]),
            ": outputs.classes[1] must be a printable string of at most 200 characters, not '\\x1b[2J'",
            id="class with a terminal escape",
        ),
        pytest.param(_set("steps", 10**12), ": steps must be at most 10,000, not 1000000000000", id="steps 10^12"),
        pytest.param(_set("steps", "30"), ": steps must be an integer 0..10,000, not '30'", id="steps a string"),
        pytest.param(
            _set("model.kwargs.num_steps", 10**12),
            ": model.num_steps must be at most 10,000, not 1000000000000",
            id="num_steps",
        ),
        pytest.param(
            _set("model.kwargs.embedding_dim", 10**9),
            ": model.embedding_dim must be at most 4,096, not 1000000000",
            id="hidden size",
        ),
        pytest.param(
            _set("model.kwargs.max_position", 10**9),
            ": model.max_position must be at most 65,536, not 1000000000",
            id="positions",
        ),
        pytest.param(
            _set("model.args", [10**9]), ": model.args[0] must be at most 2,000,000, not 1000000000", id="vocab size"
        ),
        pytest.param(
            _set("model.kwargs.dropout", 2), ": model.dropout must be a number 0..1, not 2", id="dropout above 1"
        ),
        pytest.param(
            _set("model.kwargs.use_positions", "yes"),
            ": model.use_positions must be true or false, not 'yes'",
            id="flag a string",
        ),
        pytest.param(
            _set("model.kwargs.evil", 1),
            ": model does not fit DataflowGGNN (got an unexpected keyword argument 'evil')",
            id="unknown argument",
        ),
        pytest.param(_set("model", "DataflowGGNN"), ": model must be an object, not 'DataflowGGNN'", id="model a str"),
        pytest.param(
            _set("vocabulary.entries", 10**9),
            ": vocabulary.entries must be at most 2,000,000, not 1000000000",
            id="vocabulary entries",
        ),
        pytest.param(
            _set("vocabulary.entries", 5),
            ": model is built for a vocabulary of 134 entries, and vocabulary.entries is 5",
            id="vocabulary entries of another network",
        ),
        pytest.param(_set("weights.bytes", -1), ": weights.bytes must be at least 0, not -1", id="bytes below 0"),
        pytest.param(
            _set("weights.bytes", 10**13),
            ": weights.bytes must be at most 2,147,483,648, not 10000000000000",
            id="bytes 10 TB",
        ),
        pytest.param(_set("format", "1"), ": format must be an integer 1..1,000,000, not '1'", id="format a str"),
        pytest.param(
            _set("name", "x\ny"),
            ": name must be letters, digits, '.', '_' and '-' (not first; at most 128), not 'x\\ny'",
            id="name with a newline",
        ),
        pytest.param(
            _set("analysis", "nonsense"),
            ": analysis must be one of reachability, dominance, datadep, liveness, subexpressions, not 'nonsense'",
            id="analysis",
        ),
        pytest.param(
            _set("platform", "amd"),
            ": platform is for another task than dataflow (expected none, not 'amd')",
            id="platform of another task",
        ),
        pytest.param(
            _set("inputs.flags", ["-fplugin=./evil.so"]),
            ": inputs.flags[0] '-fplugin=./evil.so' is not a flag a model may set (only -O0..-O3, -Os, -Oz, "
            "-ffast-math, -std=, -cl-std=, -D, -U, -g, -w)",
            id="a compiler plugin",
        ),
        pytest.param(
            _set("inputs.flags", ["-o", "out.ll"]),
            ": inputs.flags[0] '-o' is not a flag a model may set",
            id="an output flag",
        ),
        pytest.param(
            _set("parameters", 10**13),
            ": parameters must be at most 1,000,000,000, not 10000000000000",
            id="parameters",
        ),
        pytest.param(
            _set("training.config.model.hidden", 1e300),
            ": training.config.model.hidden must be a finite number of at most 1e+15 in size, not 1e+300",
            id="a huge number anywhere",
        ),
        pytest.param(
            _set("scores", _nested(40)),
            ": scores" + ".x" * 32 + " nests more than 32 objects or lists deep",
            id="nested 40 deep",
        ),
        pytest.param(_set("scores.f1", float("nan")), ": not JSON (NaN is not a JSON number)", id="NaN"),
        pytest.param(
            _set("scores", {"a\nb": 1e300}),
            ": scores.'a\\nb' must be a finite number of at most 1e+15 in size, not 1e+300",
            id="a key with a line break",
        ),
    ],
)
def test_every_field_of_model_json_is_checked(tmp_path, capsys, change, message) -> None:
    """They ran (a bogus inference mode as a fixed-step model), took hours or terabytes (10^12 steps, hidden sizes),
    or ended in an internal error (``"inference": [1, 2]``, ``"outputs": {"classes": []}``)."""
    copy = copy_model(tmp_path, change)
    with pytest.raises(ProgramlError) as info:
        pretrained(copy)
    text = str(info.value)
    assert text.startswith(f"{copy / 'model.json'}{message}") and "\n" not in text, text
    code, out, err = predict(capsys, DOT, "--model", copy, "-j", "1")
    assert (code, out, err) == (1, "", f"programl predict dataflow: error: {text}\n")


def test_the_shipped_models_pass_every_check() -> None:
    """The limits are generous for real models: every shipped model.json is read as it is."""
    from programl.pretrained.hub import find_model, pretrained_names

    names = pretrained_names()
    assert "reachability" in names and "classifyapp" in names
    for name in names:
        assert find_model(name).name == name


# ---------------------------------------------------------------------------------------------------------------
# The files: regular files only, of the recorded size


def test_weights_that_are_a_symlink_to_dev_zero_are_refused(tmp_path, capsys) -> None:
    """It was read to the end (a MemoryError traceback)."""
    copy = copy_model(tmp_path, _set("weights.bytes", None))  # a directory exported before sizes were recorded
    (copy / "weights.pt").unlink()
    (copy / "weights.pt").symlink_to("/dev/zero")
    message = f"{copy / 'weights.pt'}: a character device, not a regular file; refusing to read it as a weights file"
    with pytest.raises(ProgramlError) as info:
        pretrained(copy)
    assert str(info.value) == message
    code, out, err = predict(capsys, DOT, "--model", copy, "-j", "1")
    assert (code, out, err) == (1, "", f"programl predict dataflow: error: {message}\n")


def test_a_fifo_vocabulary_ends_at_once_with_one_line(tmp_path) -> None:
    """`predict --timeout 20` blocked forever on a FIFO vocab.csv (read before any limit, in the CLI's process)."""
    copy = copy_model(tmp_path)
    (copy / "vocab.csv").unlink()
    os.mkfifo(copy / "vocab.csv")
    message = f"{copy / 'vocab.csv'}: a FIFO, not a regular file; refusing to read it as a vocabulary"
    result = run_cli("predict", "dataflow", DOT, "--model", copy, "--timeout", "20", "-j", "1")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"programl predict dataflow: error: {message}\n"
    result = run_python(LOAD, copy)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{message}\n", "")


def test_a_fifo_model_json_is_refused(tmp_path) -> None:
    copy = copy_model(tmp_path)
    (copy / "model.json").unlink()
    os.mkfifo(copy / "model.json")
    message = f"{copy / 'model.json'}: a FIFO, not a regular file; refusing to read it as a model.json"
    result = run_cli("predict", "dataflow", DOT, "--model", copy, "--timeout", "20", "-j", "1")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"programl predict dataflow: error: {message}\n"
    result = run_python(LOAD, copy)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{message}\n", "")


def test_a_directory_in_place_of_the_weights_is_refused(tmp_path) -> None:
    copy = copy_model(tmp_path)
    (copy / "weights.pt").unlink()
    (copy / "weights.pt").mkdir()
    with pytest.raises(ProgramlError, match=r"weights.pt: a directory, not a regular file; refusing to read it"):
        pretrained(copy)


def test_a_file_of_another_size_than_recorded_is_not_read(tmp_path) -> None:
    copy = copy_model(tmp_path)
    with open(copy / "weights.pt", "ab") as f:
        f.write(b"\0" * 100)
    recorded = json.loads((copy / "model.json").read_text())["weights"]["bytes"]
    with pytest.raises(ProgramlError) as info:
        pretrained(copy)
    assert str(info.value) == (
        f"{copy / 'weights.pt'}: damaged ({recorded + 100:,} bytes, and model.json records {recorded:,})"
    )


def test_export_records_the_size_of_each_file(tmp_path) -> None:
    """model.json recorded the size of weights.pt only: vocab.csv was read whatever its size."""
    from programl.pretrained.export import export_pretrained

    model = export_pretrained(runs.classifyapp_run(tmp_path), output_dir=tmp_path / "models")
    metadata = json.loads((model / "model.json").read_text())
    for key, file in (("weights", "weights.pt"), ("vocabulary", "vocab.csv")):
        assert metadata[key]["bytes"] == (model / file).stat().st_size
    assert pretrained(model).vocabulary  # and the model loads under the check
    (model / "vocab.csv").write_bytes((model / "vocab.csv").read_bytes() + b"x\n" * 1000)
    with pytest.raises(ProgramlError, match=r"vocab.csv: damaged \(\d[\d,]* bytes, and model.json records "):
        pretrained(model)


def test_export_writes_no_number_json_lacks(tmp_path) -> None:
    """A NaN score (an empty split) was written as NaN, which no JSON reader (nor model.json's, now) takes."""
    from programl.pretrained.export import export_pretrained

    run = runs.classifyapp_run(tmp_path)
    result = json.loads((run / "result.json").read_text())
    result["test"]["loss"] = float("nan")
    (run / "result.json").write_text(json.dumps(result))
    model = export_pretrained(run, output_dir=tmp_path / "models")
    assert "NaN" not in (model / "model.json").read_text()
    assert pretrained(model).metadata["scores"]["test"]["loss"] is None


def test_a_model_json_larger_than_its_cap_is_not_read(tmp_path) -> None:
    from programl.pretrained.metadata import MAX_METADATA_BYTES

    copy = copy_model(tmp_path)
    with open(copy / "model.json", "r+b") as f:
        f.truncate(MAX_METADATA_BYTES + 1)  # sparse: nothing is written, and nothing may be read
    with pytest.raises(ProgramlError) as info:
        pretrained(copy)
    assert str(info.value) == (
        f"{copy / 'model.json'}: {MAX_METADATA_BYTES + 1:,} bytes, more than a model.json may have "
        f"({MAX_METADATA_BYTES:,}); refusing to read it"
    )


def test_the_readers_of_received_files_refuse_what_is_not_a_regular_file(tmp_path) -> None:
    """What ``train --init-from`` (a checkpoint, the vocab.csv beside it) and the data sets read goes through the
    same reader."""
    from programl.data.vocabulary import Vocabulary

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero.pt").symlink_to("/dev/zero")
    with pytest.raises(ProgramlError, match=r"fifo: a FIFO, not a regular file; refusing to read it as a vocabulary"):
        Vocabulary.load(tmp_path / "fifo")
    with pytest.raises(ProgramlError, match=r"zero.pt: a character device, not a regular file; .* as a checkpoint"):
        load_tensors(tmp_path / "zero.pt", what="checkpoint")
    with pytest.raises(ProgramlError, match=r"fifo: a FIFO, not a regular file"):
        read_regular_file(tmp_path / "fifo", 10)
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as f:
        f.truncate(1 << 40)  # 1 TiB that would fill any memory if it were read
    with pytest.raises(ProgramlError, match=r"sparse: 1,099,511,627,776 bytes, more than a vocabulary may have"):
        Vocabulary.load(sparse)
    assert read_regular_file(REACHABILITY / "vocab.csv", 1 << 20) == (REACHABILITY / "vocab.csv").read_bytes()


# ---------------------------------------------------------------------------------------------------------------
# predict: the files are read and the network built in the limited worker


def test_the_network_is_built_under_max_memory(tmp_path, capsys) -> None:
    """A network within the limits that needs more memory than --max-memory: built in the worker, it fails there
    with "out of memory" (in the CLI's own process it was built whatever its size)."""
    copy = copy_model(tmp_path, _set("model.kwargs", {"num_steps": 30, "embedding_dim": 4096, "max_position": 65536}))
    code, out, err = predict(capsys, DOT, "--model", copy, "-j", "1", "--max-memory", "2G")
    assert (code, out) == (1, "")
    assert len(err.splitlines()) == 1 and "out of memory" in err, err
    assert err.startswith("programl predict dataflow: error: "), err


def test_a_model_whose_weights_do_not_load_stops_the_command(tmp_path, capsys) -> None:
    """A damaged weights.pt, found by the worker: one line, exit 1, no input predicted."""
    copy = copy_model(tmp_path)
    data = b"garbage" * 10
    (copy / "weights.pt").write_bytes(data)
    metadata = json.loads((copy / "model.json").read_text())
    metadata["weights"].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (copy / "model.json").write_text(json.dumps(metadata))
    code, out, err = predict(capsys, DOT, DOT, "--model", copy, "-j", "1")
    assert (code, out) == (1, "")
    assert err == (
        f"programl predict dataflow: error: {copy / 'weights.pt'}: not a readable weights file (not a file "
        "torch.save writes)\n"
    )


@pytest.mark.parametrize("option", ["--model", "--model-dir"])
def test_an_empty_model_is_a_usage_error(capsys, option) -> None:
    """`--model ''` ran the package's default models."""
    with pytest.raises(SystemExit) as info:
        main(["predict", "dataflow", str(DOT), option, ""])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"programl predict dataflow: error: argument {option}: an empty name (give a model's name or directory, or "
        "leave the option out)"
    )
