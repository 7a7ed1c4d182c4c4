"""``programl predict`` and ``programl export-pretrained``: the printed structure (text and JSON), the roots, the
inputs each task compiles as its training graphs were, per-file errors (one line, the batch goes on) and exit codes.

The models are exported from real tiny ``programl train dataflow`` runs (reachability, datadep) and from devmap and
classifyapp run directories holding untrained models (tests/models/pretrained_runs.py).
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from programl.cli import main  # noqa: E402
from tests.models import pretrained_runs as runs  # noqa: E402

EXAMPLES = runs.EXAMPLES
DOT = EXAMPLES / "dot_product.ll"


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """A models directory: reachability, datadep (trained a few seconds), devmap-amd and classifyapp (untrained)."""
    from programl.pretrained.export import export_pretrained

    tmp = tmp_path_factory.mktemp("runs")
    out = tmp / "models"
    for analysis in ("reachability", "datadep"):
        export_pretrained(runs.dataflow_run(tmp, analysis), output_dir=out)
    export_pretrained(runs.devmap_run(tmp), output_dir=out)
    export_pretrained(runs.classifyapp_run(tmp), output_dir=out)
    return out


def predict(capsys, *argv) -> tuple[int, str, str]:
    code = main(["predict", *[str(a) for a in argv]])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def with_models(capsys, models, task, *argv, inputs=(DOT,)) -> tuple[int, str, str]:
    """``programl predict TASK INPUTS --model-dir MODELS -j 1 ARGV``."""
    return predict(capsys, task, *inputs, "--model-dir", models, "-j", "1", *argv)


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def graph():
    return runs.graph_of(DOT)


# ---------------------------------------------------------------------------------------------------------------
# dataflow


def test_dataflow_runs_every_installed_analysis(models, graph, capsys) -> None:
    from programl.dataflow.analyze import analyze_arrays

    code, out, err = with_models(capsys, models, "dataflow")
    assert code == 0 and err == ""
    heads = [line for line in out.splitlines() if not line.startswith(" ")]
    pattern = re.compile(
        rf"{re.escape(str(DOT))}: (\w+) \(model \w+, T=30\) root (\d+) \((\w+) (\S+)\): (\d+) of "
        rf"{len(graph.node)} nodes predicted true$"
    )
    found = {}
    for head in heads:
        match = pattern.fullmatch(head)
        assert match, head
        found.setdefault(match[1], []).append(int(match[2]))
    for analysis in ("reachability", "datadep"):  # the roots `programl analyze` samples
        assert found[analysis] == analyze_arrays(graph, analysis, seed=0).roots.tolist()
    rows = [line for line in out.splitlines() if line.startswith("  ") and not line.lstrip().startswith("id")]
    assert rows and all(re.fullmatch(r"\s+\d+  (instruction|variable|constant) +\d\.\d{3}  .+", r) for r in rows)


def test_dataflow_json_with_the_exact_labels(models, graph, capsys) -> None:
    from programl.dataflow.analyze import analyze_arrays

    argv = ("--analysis", "datadep", "--roots", "2", "--seed", "3", "--compare", "--json")
    code, out, _ = with_models(capsys, models, "dataflow", *argv)
    assert code == 0
    [record] = json_lines(out)
    assert record["file"] == str(DOT) and record["task"] == "dataflow" and record["nodes"] == len(graph.node)
    [prediction] = record["predictions"]
    assert prediction["model"] == "datadep" and prediction["analysis"] == "datadep"
    roots = [r["root"]["id"] for r in prediction["roots"]]
    exact = analyze_arrays(graph, "datadep", roots=roots)
    for row, entry in enumerate(prediction["roots"]):
        labelled = {n["id"] for n in entry["nodes"] if n["exact"]}
        assert labelled == set(np.flatnonzero(exact.labels[row]).tolist())
        assert sum(entry["confusion"].values()) == len(graph.node)
        assert all(n["predicted"] or n["exact"] for n in entry["nodes"])


def test_dataflow_compare_marks_every_node(models, capsys) -> None:
    code, out, _ = with_models(capsys, models, "dataflow", "--analysis", "reachability", "--roots", "1", "--compare")
    assert code == 0
    lines = out.splitlines()
    assert re.search(r"; exact \d+ \(true positives \d+, false positives \d+, missed \d+\)$", lines[0])
    assert lines[1].split() == ["id", "type", "p(true)", "exact", "text"]
    assert all(re.match(r"\s+\d+  \w+ +\d\.\d{3}  (yes   |no    |MISSED)  ", line) for line in lines[2:])


def test_a_step_free_variant_runs_by_default_and_steps_picks_the_faithful_model(models, tmp_path, capsys) -> None:
    """Without --model, an analysis's step-free variant (model.json inference mode until_stable, issue 36 item 2)
    runs where one is installed and says so on each root's line; --steps T runs the faithful model at T; an analysis
    without a variant keeps its faithful model."""
    import shutil

    both = tmp_path / "models"
    for name in ("reachability", "datadep"):
        shutil.copytree(models / name, both / name)
    variant = both / "datadep-step-free"
    shutil.copytree(models / "datadep", variant)
    metadata = json.loads((variant / "model.json").read_text())
    metadata["name"] = "datadep-step-free"
    metadata["inference"] = {"mode": "until_stable", "min_steps": 30, "max_steps": 60, "patience": 2}
    (variant / "model.json").write_text(json.dumps(metadata))

    code, out, err = with_models(capsys, both, "dataflow", "--roots", "1")
    assert code == 0 and err == ""
    heads = [line for line in out.splitlines() if not line.startswith(" ")]
    assert any(re.search(r": datadep \(model datadep-step-free, until stable: \d+ steps\) root", h) for h in heads)
    assert any(": reachability (model reachability, T=30) root" in h for h in heads)
    code, out, _ = with_models(capsys, both, "dataflow", "--analysis", "datadep", "--roots", "1", "--steps", "30")
    assert code == 0 and ": datadep (model datadep, T=30) root" in out.splitlines()[0]
    code, out, _ = with_models(capsys, both, "dataflow", "--model", "datadep", "--roots", "1")
    assert code == 0 and ": datadep (model datadep, T=30) root" in out.splitlines()[0]


def test_liveness_runs_its_control_flood_model_by_default(tmp_path, capsys) -> None:
    """The shipped ``liveness-floods`` (model.json inference mode control_floods, issue 36 items 2 and 3) is what
    ``predict`` runs for liveness without --model; --steps T runs the faithful ``liveness``; both label the same
    example's roots with the exact analysis beside them."""
    import shutil

    from programl.pretrained.hub import PRETRAINED_DIR

    both = tmp_path / "models"
    for name in ("liveness", "liveness-floods"):
        shutil.copytree(Path(PRETRAINED_DIR) / name, both / name)
    code, out, err = with_models(capsys, both, "dataflow", "--analysis", "liveness", "--roots", "2", "--compare")
    heads = [line for line in out.splitlines() if not line.startswith(" ")]
    assert code == 0 and err == "" and len(heads) == 2
    assert all(": liveness (model liveness-floods, T=30) root" in h for h in heads), heads
    code, out, _ = with_models(capsys, both, "dataflow", "--analysis", "liveness", "--roots", "1", "--steps", "30")
    assert code == 0 and ": liveness (model liveness, T=30) root" in out.splitlines()[0]


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
def test_predictions_are_deterministic(models, capsys) -> None:
    first = with_models(capsys, models, "dataflow", "--json", "--compare")
    assert first[0] == 0 and with_models(capsys, models, "dataflow", "--json", "--compare") == first


def test_a_chosen_root(models, graph, capsys) -> None:
    from programl.dataflow.analyze import eligible_roots

    root = int(eligible_roots(graph, "reachability")[-1])
    code, out, _ = with_models(capsys, models, "dataflow", "--analysis", "reachability", "--root", root, "--json")
    assert code == 0 and [r["root"]["id"] for r in json_lines(out)[0]["predictions"][0]["roots"]] == [root]
    variable = next(i for i, n in enumerate(graph.node) if n.type == 1)
    # named analysis: a root it cannot take fails the file
    code, out, err = with_models(capsys, models, "dataflow", "--analysis", "reachability", "--root", variable)
    assert code == 1 and out == ""
    assert err.splitlines()[0] == (
        f"{DOT}: error: node {variable} is not an eligible reachability root (graph has "
        f"{len(graph.node)} nodes, {len(eligible_roots(graph, 'reachability'))} eligible)"
    )
    # every installed analysis: those that cannot take it are skipped with a note
    code, out, err = with_models(capsys, models, "dataflow", "--root", variable)
    assert code == 0 and f": datadep (model datadep, T=30) root {variable} (variable" in out
    assert f"{DOT}: reachability: node {variable} is not an eligible reachability root" in err


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
def test_saved_graphs_and_stdin_give_the_same_prediction(models, graph, tmp_path, capsys, monkeypatch) -> None:
    saved = tmp_path / "dot.ProgramGraph.pb"
    saved.write_bytes(graph.SerializeToString())
    argv = ("--analysis", "reachability", "--json")
    code, out, _ = with_models(capsys, models, "dataflow", *argv)
    code2, out2, _ = with_models(capsys, models, "dataflow", *argv, inputs=(saved,))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(DOT.read_bytes())))
    code3, out3, _ = with_models(capsys, models, "dataflow", *argv, inputs=("-",))
    assert code == code2 == code3 == 0
    expected = json_lines(out)[0]["predictions"]
    assert json_lines(out2)[0]["predictions"] == expected and json_lines(out3)[0]["predictions"] == expected


def test_bad_inputs_do_not_stop_the_batch(models, tmp_path, capsys) -> None:
    (tmp_path / "bad.ll").write_text("define i32 @f() {\n  ret i32 %nope\n}\n")
    inputs = (tmp_path / "missing.ll", tmp_path / "bad.ll", DOT)
    code, out, err = with_models(capsys, models, "dataflow", "--analysis", "reachability", "--json", inputs=inputs)
    assert code == 1
    assert [r["file"] for r in json_lines(out)] == [str(DOT)]
    lines = err.splitlines()
    assert lines[0] == f"{tmp_path / 'missing.ll'}: error: no such file"
    assert lines[1].startswith(f"{tmp_path / 'bad.ll'}:2:") and "error:" in lines[1]
    assert re.fullmatch(r"programl predict dataflow: 1 predicted, 2 failed in \d+\.\d\d s", lines[2])


def test_missing_models_are_one_line(models, tmp_path, capsys) -> None:
    code, out, err = predict(capsys, "dataflow", DOT, "--model-dir", tmp_path)
    assert (code, out) == (1, "")
    assert err == (
        "programl predict dataflow: error: no pretrained dataflow model (none is installed; "
        "`programl export-pretrained RUN_DIR` installs one)\n"
    )
    code, _, err = predict(capsys, "dataflow", DOT, "--model-dir", models, "--analysis", "liveness")
    assert code == 1 and err == (
        "programl predict dataflow: error: no pretrained dataflow model for liveness "
        "(installed: classifyapp, datadep, devmap-amd, reachability; `programl "
        "export-pretrained RUN_DIR` installs one)\n"
    )
    code, _, err = predict(capsys, "dataflow", DOT, "--model", models / "devmap-amd")
    assert code == 1 and err.endswith("devmap-amd: a devmap model, not a dataflow one\n")
    code, _, err = predict(capsys, "dataflow", DOT, "--model", models / "datadep", "--analysis", "liveness")
    assert code == 1 and err.endswith("datadep: a datadep model, not a liveness one\n")  # not silently datadep
    code, _, err = predict(capsys, "classifyapp", DOT, "--model", "nope", "--model-dir", models)
    assert code == 1 and len(err.splitlines()) == 1 and "unknown pretrained model 'nope'; known: " in err


def test_a_stdin_nobody_writes_to_times_out(models) -> None:
    """stdin is read by the worker that builds its graph, under --timeout, as `programl build -` reads it."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "programl", "predict", "dataflow", "--model-dir", str(models), "-"]
    process = subprocess.Popen(
        [*command, "--timeout", "2", "-j", "1"],
        stdin=subprocess.PIPE,  # open, and never written to
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        process.wait(timeout=90)
        err = process.stderr.read()
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == 1 and "-: error: timed out after 2 s" in err, err


@pytest.mark.parametrize(
    "argv",
    [
        ("dataflow", "--roots", "0"),
        ("dataflow", "--root", "1", "--roots", "2"),
        ("dataflow", "--analysis", "nonsense"),
        ("dataflow", "--steps", "-1"),
        ("dataflow", "--root", "1000000000000000000000000"),
        ("dataflow", "--seed", "-1"),
        ("devmap", "--transfer", "-5"),
        ("devmap", "--wgsize", "many"),
        ("classifyapp", "--top", "0"),
    ],
)
def test_bad_options_are_usage_errors(models, argv, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        predict(capsys, argv[0], DOT, "--model-dir", models, *argv[1:])
    assert info.value.code == 2
    assert "error:" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------------
# devmap and classifyapp


def test_devmap_text_and_json(models, capsys) -> None:
    code, out, err = with_models(capsys, models, "devmap")
    assert code == 0 and err == ""
    assert re.fullmatch(
        rf"{re.escape(str(DOT))}: amd \(AMD Tahiti 7970\): (CPU|GPU) \(p=\d\.\d{{3}}; transfer "
        r"57,594,120 bytes, wgsize 62: default; model devmap-amd\)\n",
        out,
    )
    argv = ("--platform", "amd", "--transfer", "4096", "--wgsize", "64", "--json")
    code, out, _ = with_models(capsys, models, "devmap", *argv)
    [prediction] = json_lines(out)[0]["predictions"]
    assert code == 0 and prediction["aux_inputs"] == "given"
    assert (prediction["transfer"], prediction["wgsize"]) == (4096, 64)
    assert set(prediction["probabilities"]) == {"CPU", "GPU"}
    assert prediction["probability"] == prediction["probabilities"][prediction["device"]]
    code, _, err = predict(capsys, "devmap", DOT, "--model-dir", models, "--platform", "nvidia")
    assert code == 1 and "no pretrained devmap model for nvidia" in err


def test_classifyapp_top_classes(models, capsys) -> None:
    code, out, _ = with_models(capsys, models, "classifyapp")
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"{DOT}: POJ-104 classes (model classifyapp)"
    assert [int(re.fullmatch(r"  (\d)\. class +\d+  p=\d\.\d{3}", line)[1]) for line in lines[1:]] == [1, 2, 3, 4, 5]
    code, out, _ = with_models(capsys, models, "classifyapp", "--top", "2", "--json")
    top = json_lines(out)[0]["predictions"][0]["top"]
    assert len(top) == 2 and top[0]["probability"] >= top[1]["probability"]


def test_sources_are_compiled_as_the_training_graphs(models, clang22, capsys) -> None:
    """An OpenCL kernel with the DevMap flags, a C program as POJ-104's (C++11 with ProGraML's header)."""
    from programl.data.devmap import CLANG22_BASE_FLAGS
    from programl.data.poj104 import compile_program
    from programl.graph_builder import clang
    from programl.graph_builder.llvm import graph_from_ir

    kernel = EXAMPLES / "vector_add.cl"
    code, out, _ = with_models(capsys, models, "devmap", "--json", inputs=(kernel,))
    ir = clang.compile_source(kernel.read_text(), "cl", (*CLANG22_BASE_FLAGS, "-I", str(EXAMPLES)))
    assert code == 0 and json_lines(out)[0]["nodes"] == len(graph_from_ir(ir).node)
    program = EXAMPLES / "fizzbuzz.c"
    code, out, _ = with_models(capsys, models, "classifyapp", "--json", inputs=(program,))
    ir, _ = compile_program(program.read_text(), ("-O0",))
    assert code == 0 and json_lines(out)[0]["nodes"] == len(graph_from_ir(ir).node)


# ---------------------------------------------------------------------------------------------------------------
# export-pretrained


def test_export_pretrained_command(tmp_path, capsys) -> None:
    run = runs.devmap_run(tmp_path)
    out_dir = tmp_path / "out"
    code = main(["export-pretrained", str(run), "-o", str(out_dir), "--fold", "0", "--commit", "abc123"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert re.fullmatch(
        rf"{re.escape(str(out_dir / 'devmap-amd'))}: [\d,]+ bytes \(MODEL_CARD.md, model.json, "
        r"vocab.csv, weights.pt\)\n",
        out,
    )
    metadata = json.loads((out_dir / "devmap-amd" / "model.json").read_text())
    assert metadata["training"]["fold"] == 0 and metadata["training"]["commit"] == "abc123"
    assert "Commit: abc123." in (out_dir / "devmap-amd" / "MODEL_CARD.md").read_text()
    for argv, message in [
        ([str(run), "-o", str(out_dir)], f"{out_dir / 'devmap-amd'}: exists (--force replaces it)"),
        ([str(run), "-o", str(out_dir), "--fold", "7"], f"{run / 'amd'}: no trained fold 7 (have 0, 1, 2)"),
        ([str(tmp_path / "none"), "-o", str(out_dir)], f"{tmp_path / 'none'}: no such run directory"),
        ([str(run), "x", "-o", str(out_dir), "--platform", "nvidia"], f"{run / 'nvidia'}: no trained fold"),
    ]:
        assert main(["export-pretrained", *argv]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err == f"programl export-pretrained: error: {message}" + (
            " (fold_<k>/best.pt)\n" if message.endswith("no trained fold") else "\n"
        )


def test_the_command_line_parser_does_not_import_torch() -> None:
    """``programl --help`` (and every command's start) stays fast: the predict options need no model code."""
    import subprocess

    code = "import sys; from programl.cli import make_parser; make_parser(); print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=runs.REPO)
    assert result.stdout.strip() == "False"


def test_a_closed_stdout_stops_quietly(models, monkeypatch, capsys) -> None:
    """``programl predict ... | head``: the reader goes away; no traceback, no error line."""

    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["predict", "dataflow", str(DOT), str(DOT), "--model-dir", str(models), "-j", "1"]) == 0
    assert capsys.readouterr().err == ""
