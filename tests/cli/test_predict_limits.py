"""``programl predict`` on hostile inputs (issue 39): corrupt and empty graphs fail their file, the model's step runs
under ``--timeout`` and ``--max-memory`` like ``build``'s per-file work, an "out of memory" names the limit actually
in force (a lower ``ulimit -v`` included), and pretrained models are loaded only when their files are checked.

The shipped reachability model (programl/pretrained/weights) is used: no training run is needed here.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import re
import resource
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
from tests.models import pretrained_runs as runs  # noqa: E402

DOT = runs.EXAMPLES / "dot_product.ll"
REACHABILITY = PRETRAINED_DIR / "reachability"


@pytest.fixture(scope="module")
def graph():
    return runs.graph_of(DOT)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory, graph) -> Path:
    """good, dangling (an edge to a node that does not exist), empty (no nodes) and big (about 300k nodes: the model
    step on 10 roots needs well over 2G) saved graphs."""
    from programl.proto import ProgramGraph

    out = tmp_path_factory.mktemp("graphs")
    (out / "good.ProgramGraph.pb").write_bytes(graph.SerializeToString())
    dangling = ProgramGraph()
    dangling.CopyFrom(graph)
    dangling.edge[3].target = 10**6
    (out / "dangling.ProgramGraph.pb").write_bytes(dangling.SerializeToString())
    (out / "empty.ProgramGraph.pb").write_bytes(ProgramGraph().SerializeToString())
    big = ProgramGraph()
    big.function.extend(graph.function)
    n, copies = len(graph.node), 8000
    for _ in range(copies):
        big.node.extend(graph.node)
    for copy in range(copies):
        for e in graph.edge:
            big.edge.add(flow=e.flow, source=e.source + copy * n, target=e.target + copy * n, position=e.position)
    (out / "big.ProgramGraph.pb").write_bytes(big.SerializeToString())
    return out


def predict(capsys, *argv) -> tuple[int, str, str]:
    code = main(["predict", "dataflow", *[str(a) for a in argv]])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def command(*argv) -> list[str]:
    return [sys.executable, "-m", "programl", "predict", "dataflow", *[str(a) for a in argv]]


def run_cli(argv: list[str], preexec_fn=None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(runs.REPO)}
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env=env, preexec_fn=preexec_fn, cwd=runs.REPO
    )


# ---------------------------------------------------------------------------------------------------------------
# Finding 3: corrupt and empty graphs


@pytest.mark.parametrize("analysis", [(), ("--analysis", "reachability")])
def test_corrupt_and_empty_graphs_fail_their_file(graphs, capsys, analysis) -> None:
    """They were "predicted" (every analysis skipped: no eligible root / edge out of range) and, with -q, exit 0."""
    inputs = [graphs / "dangling.ProgramGraph.pb", graphs / "empty.ProgramGraph.pb", graphs / "good.ProgramGraph.pb"]
    code, out, err = predict(capsys, *inputs, *analysis, "-q", "-j", "1", "--json")
    assert code == 1
    assert [record["file"] for record in map(json.loads, out.splitlines())] == [str(inputs[2])]
    assert err.splitlines() == [
        f"{inputs[0]}: error: corrupt graph: edge 3 points at node 1000000, which does not exist (the graph has 38 "
        "nodes)",
        f"{inputs[1]}: error: the graph has no nodes: nothing to predict from",
    ]


def test_the_api_refuses_them_too(graph) -> None:
    from programl.proto import ProgramGraph

    model = pretrained("reachability")
    dangling = ProgramGraph()
    dangling.CopyFrom(graph)
    dangling.edge[0].source = -1
    with pytest.raises(ProgramlError, match=r"^corrupt graph: edge 0 points at node -1, which does not exist"):
        model.predict(dangling)
    with pytest.raises(ProgramlError, match=r"^the graph has no nodes"):
        model.predict(ProgramGraph())


# ---------------------------------------------------------------------------------------------------------------
# Finding 7: the model's step is bounded by --timeout and --max-memory


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
def test_the_model_step_times_out(graphs) -> None:
    """--steps 100000 ran past --timeout (the model ran in the CLI's own process, without a limit)."""
    inputs = [graphs / "good.ProgramGraph.pb", DOT]
    argv = command(*inputs, "--model", "reachability", "--steps", "100000", "--timeout", "3", "-j", "1")
    result = run_cli(argv, timeout=240)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[:2] == [f"{path}: error: timed out after 3 s" for path in inputs]  # the batch went on
    assert re.fullmatch(r"programl predict dataflow: 0 predicted, 2 failed in [\d.]+ s", lines[2])


def test_the_model_step_runs_under_max_memory(graphs, capsys) -> None:
    """A big graph's model step needs more than --max-memory: that file fails with "out of memory" (it was an
    "internal error" after several G, or a success ignoring the limit) and the good file of the batch is predicted."""
    inputs = [graphs / "big.ProgramGraph.pb", graphs / "good.ProgramGraph.pb"]
    code, out, err = predict(capsys, *inputs, "--model", "reachability", "--max-memory", "2G", "-j", "1", "--json")
    assert code == 1
    assert [record["file"] for record in map(json.loads, out.splitlines())] == [str(inputs[1])]
    lines = err.splitlines()
    assert lines[0] == f"{inputs[0]}: error: out of memory (limit 2048M)"
    assert re.fullmatch(r"programl predict dataflow: 1 predicted, 1 failed in [\d.]+ s", lines[1])


def test_successful_predictions_are_unchanged_by_the_worker(graph, capsys) -> None:
    """The model's step in its worker prints what it printed in the CLI's process (the API's numbers)."""
    code, out, err = predict(capsys, DOT, "--model", "reachability", "--compare", "--json", "-j", "1")
    assert code == 0 and err == ""
    [record] = map(json.loads, out.splitlines())
    expected = pretrained("reachability").predict(graph, compare=True).to_dict()
    assert record["predictions"] == [{"model": "reachability", **expected}]


# ---------------------------------------------------------------------------------------------------------------
# Finding 8: the limit an "out of memory" names is the one in force


@pytest.mark.parametrize(
    "hard", [pytest.param(True, id="ulimit -v"), pytest.param(False, id="soft limit only", marks=pytest.mark.slow)]
)
def test_out_of_memory_names_an_inherited_lower_limit(graphs, hard) -> None:
    """Under `ulimit -v` 2.5G the message said "(limit 8192M)", the default --max-memory; with only the soft limit
    lowered the workers even raised it back to 8G."""
    limit = 2560 << 20

    def lower():
        _, current = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit if hard else current))

    from programl.cli.common import default_max_memory

    if default_max_memory() <= limit:
        pytest.skip("the default --max-memory is not above the lowered limit on this machine")
    inputs = [graphs / "big.ProgramGraph.pb", graphs / "good.ProgramGraph.pb"]
    result = run_cli(command(*inputs, "--model", "reachability", "-j", "1", "-q"), preexec_fn=lower)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"{inputs[0]}: error: out of memory (limit 2560M)"], result.stderr
    assert result.stdout.startswith(f"{inputs[1]}: reachability (model reachability, T=30) root ")


# ---------------------------------------------------------------------------------------------------------------
# Finding 6: only checked models, only tensors


def copy_model(tmp_path: Path) -> Path:
    copy = tmp_path / "model"
    shutil.copytree(REACHABILITY, copy)
    return copy


@pytest.mark.parametrize("key", ["weights", "vocabulary"])
@pytest.mark.parametrize("sha256", [None, "", "not-a-hash"])
def test_a_model_without_a_sha256_is_refused(tmp_path, capsys, key, sha256) -> None:
    """A model.json without the sha256 of a file was loaded unchecked."""
    copy = copy_model(tmp_path)
    metadata = json.loads((copy / "model.json").read_text())
    if sha256 is None:
        del metadata[key]["sha256"]
    else:
        metadata[key]["sha256"] = sha256
    (copy / "model.json").write_text(json.dumps(metadata))
    file = copy / metadata[key]["file"]
    message = f"{file}: model.json records no sha256 of it (got {sha256!r}); refusing to load an unchecked {key} file"
    with pytest.raises(ProgramlError) as info:
        pretrained(str(copy))
    assert str(info.value) == message
    code, out, err = predict(capsys, DOT, "--model", copy, "-j", "1")
    assert (code, out, err) == (1, "", f"programl predict dataflow: error: {message}\n")


def test_every_shipped_model_records_its_sha256() -> None:
    for directory in sorted(PRETRAINED_DIR.iterdir()):
        if (directory / "model.json").is_file():
            metadata = json.loads((directory / "model.json").read_text())
            for key in ("weights", "vocabulary"):
                assert re.fullmatch(r"[0-9a-f]{64}", metadata[key].get("sha256", "")), (directory.name, key)
            pretrained(directory.name)  # and they load under the check


class Payload:
    """What a hostile weights file pickles: a call, which the weights-only unpickler refuses."""

    def __reduce__(self):
        return (print, ("pwned",))


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(lambda: pickle.dumps({"w": Payload()}), id="pickled call"),
        pytest.param(lambda: _torch_save({"w": Payload()}), id="torch file with a call"),
        pytest.param(lambda: b"garbage" * 10, id="not a torch file"),
    ],
)
def test_unsafe_or_unreadable_weights_are_not_readable_weights(tmp_path, capsys, content) -> None:
    """The message said "weights that do not fit the model" and quoted torch's advice to set weights_only=False."""
    copy = copy_model(tmp_path)
    data = content()
    (copy / "weights.pt").write_bytes(data)
    metadata = json.loads((copy / "model.json").read_text())
    metadata["weights"].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (copy / "model.json").write_text(json.dumps(metadata))
    with pytest.raises(ProgramlError) as info:
        pretrained(str(copy))
    message = str(info.value)
    assert message.startswith(f"{copy / 'weights.pt'}: not a readable weights file (")
    assert "weights_only" not in message and "do not fit" not in message and "\n" not in message
    code, out, err = predict(capsys, DOT, "--model", copy, "-j", "1")
    assert code == 1 and out == "" and "pwned" not in err
    assert err == f"programl predict dataflow: error: {message}\n"


def test_a_torch_file_with_a_call_is_refused_as_such(tmp_path) -> None:
    copy = copy_model(tmp_path)
    data = _torch_save({"w": Payload()})
    (copy / "weights.pt").write_bytes(data)
    metadata = json.loads((copy / "model.json").read_text())
    metadata["weights"].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (copy / "model.json").write_text(json.dumps(metadata))
    with pytest.raises(ProgramlError) as info:
        pretrained(str(copy))
    message = str(info.value)
    assert message.startswith(f"{copy / 'weights.pt'}: not a readable weights file (it holds ")
    assert message.endswith("; refusing to unpickle it)") and "weights_only" not in message


def _torch_save(obj) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()
