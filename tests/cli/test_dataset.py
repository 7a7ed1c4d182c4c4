"""``programl dataset build|info|prepare``: the DeepDataFlow layout from the command line, exit codes, flags after
``--``, resumption, the summary lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import programl.cli as cli
from programl.data.deepdataflow import Layout, read_manifest
from programl.dataflow import ANALYSES
from tests.data._ddf import write_sources

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    """``programl dataset`` is registered in programl.cli.COMMANDS by the lead; make sure it is for these tests."""
    monkeypatch.setitem(cli.COMMANDS, "dataset", "programl.cli.dataset")


def run_cli(args, capsys) -> tuple[int, str, str]:
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exit:  # argparse usage errors
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    return write_sources(tmp_path / "src")


def test_build_info_prepare(sources: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "ddf"
    code, _, err = run_cli(["dataset", "build", sources, out, "-j", "2"], capsys)
    assert code == 0, err
    assert "4 built, 0 up to date, 0 failed of 4 inputs" in err and "graphs train/val/test 2/1/1" in err
    assert sorted(Layout(out).graph_names()) == ["example_a", "example_b", "example_c", "io_parallel"]
    assert (out / "vocab" / "programl.csv").is_file() and (out / "dataset.json").is_file()
    code, _, err = run_cli(["dataset", "build", sources, out], capsys)
    assert code == 0 and "0 built, 4 up to date" in err
    code, text, _ = run_cli(["dataset", "info", out], capsys)
    assert code == 0 and "4 graphs" in text and "reachability" in text and "0 failed" in text
    pytest.importorskip("torch")
    code, _, err = run_cli(["dataset", "prepare", out, "--analysis", "liveness", "--split", "train", "test"], capsys)
    assert code == 0, err
    assert len(list((out / "processed").rglob("liveness/meta.json"))) == 2


def test_prepare_reports_what_it_leaves_out_and_bad_data_in_one_line(sources: Path, tmp_path: Path, capsys) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "ddf"
    assert run_cli(["dataset", "build", sources, out, "-q"], capsys)[0] == 0
    victim = Layout(out).split_names("train")[0]
    label = Layout(out).compact_labels(victim)
    label.write_bytes(b"\x12\x05garbage")
    for _ in range(2):  # converted, then current: the file is still left out, and said so
        code, _, err = run_cli(["dataset", "prepare", out, "--analysis", "liveness", "--split", "train"], capsys)
        assert code == 1 and f"{label}: error: " in err and "Traceback" not in err
        assert "not a readable label file (no PGLABELS header)" in err and len(err.strip().splitlines()) == 2
    code, _, err = run_cli(["dataset", "prepare", out, "--analysis", "liveness", "--split", "train", "-q"], capsys)
    assert code == 1 and err == ""
    (out / "vocab" / "programl.csv").write_bytes(b"\xff\xfe not a vocabulary")
    code, _, err = run_cli(["dataset", "prepare", out], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "not a vocabulary" in err
    for bad in (["-j", "0"], ["--split", "../elsewhere"]):
        assert run_cli(["dataset", "prepare", out, *bad], capsys)[0] == 2


@pytest.mark.parametrize(
    ("damage", "file"),
    [
        (b"\xff\xfe\x00garbage\n", "manifest.jsonl"),
        (b'{"name": "example_a", "status": "ok", "labels": [1, 2]}\n', "manifest.jsonl"),
        (b"\xff\xfe not a vocabulary", "vocab/programl.csv"),
    ],
)
def test_info_on_a_damaged_data_set_is_one_line(sources: Path, tmp_path: Path, capsys, damage, file) -> None:
    out = tmp_path / "ddf"
    assert run_cli(["dataset", "build", sources, out, "-q"], capsys)[0] == 0
    with open(out / file, "ab" if file == "manifest.jsonl" and damage.startswith(b"{") else "wb") as f:
        f.write(damage)
    code, _, err = run_cli(["dataset", "info", out], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "a damaged data set" in err and "Traceback" not in err


def test_failures_exit_1_and_are_reported(sources: Path, tmp_path: Path, capsys) -> None:
    (sources / "bad.ll").write_text("define i32 @f() {\n  ret i32 %x\n}\n")
    code, _, err = run_cli(["dataset", "build", sources, tmp_path / "ddf", "-j", "2"], capsys)
    assert code == 1
    assert "bad.ll:2:11: error: use of undefined value" in err and "1 failed of 5 inputs" in err  # as `build` says
    code, text, _ = run_cli(["dataset", "info", tmp_path / "ddf"], capsys)
    assert "1 failed" in text and "use of undefined value" in text
    code, _, err = run_cli(["dataset", "build", sources, tmp_path / "ddf", "-q"], capsys)
    assert code == 1 and err == ""  # quiet, and the recorded failure still counts


def test_settings_and_flags_after_double_dash(clang22, tmp_path: Path, capsys) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "n.c").write_text("int f(int x) { return x * N; }\n")
    (src / "m.c").write_text("int g(int x) { return x + 1; }\n")
    out = tmp_path / "ddf"
    code, _, err = run_cli(["dataset", "build", src, out, "-O0", "-O", "2 -ffast-math", "--", "-DN=7"], capsys)
    assert code == 0, err
    manifest = read_manifest(out / "manifest.jsonl")
    assert sorted(manifest) == ["m.O0.c", "m.O2_ffast-math.c", "n.O0.c", "n.O2_ffast-math.c"]
    assert manifest["n.O2_ffast-math.c"]["flags"] == ["-O2", "-ffast-math", "-DN=7"]
    assert "7" in (out / "ir" / "n.O2_ffast-math.c.ll").read_text()


def test_usage_errors(sources: Path, tmp_path: Path, capsys) -> None:
    assert run_cli(["dataset", "build", tmp_path / "out"], capsys)[0] == 2  # no sources
    code, _, err = run_cli(["dataset", "build", sources, tmp_path / "out", "--recipe", "r.json"], capsys)
    assert code == 2 and "not both" in err
    assert run_cli(["dataset", "build", sources, tmp_path / "out", "--size", "0"], capsys)[0] == 2
    assert run_cli(["dataset", "info", tmp_path], capsys)[0] == 2  # not a data set
    code, _, err = run_cli(["dataset", "build", tmp_path / "missing.c", tmp_path / "out"], capsys)
    assert code == 1 and "no such file" in err


def test_recipe_needs_data(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("PROGRAML_SHARED_DATA", raising=False)
    monkeypatch.chdir(tmp_path)  # no ../shared/data beside the working directory either
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"sources": [{"kind": "files", "path": "src"}]}))
    code, _, err = run_cli(["dataset", "build", "--recipe", recipe, tmp_path / "out"], capsys)
    assert code == 2 and "--data" in err
    (tmp_path / "src").mkdir()
    shutil.copy(DATA / "example_a.ll", tmp_path / "src" / "a.ll")
    shutil.copy(DATA / "example_c.ll", tmp_path / "src" / "c.ll")
    code, _, err = run_cli(["dataset", "build", "--recipe", recipe, "--data", tmp_path, tmp_path / "out"], capsys)
    assert code == 0 and "2 built" in err
    code, _, err = run_cli(["dataset", "build", "--recipe", tmp_path / "nope.json", "--data", tmp_path, "x"], capsys)
    assert code == 1 and "not a readable recipe" in err


def test_label_formats_and_convert(sources: Path, tmp_path: Path, capsys) -> None:
    """``--label-format protobuf`` writes the original's files, ``convert`` turns either form into the other in
    place (the protobuf files byte for byte), and ``info`` counts the labelled graphs of either form."""
    compact, protobuf = tmp_path / "compact", tmp_path / "protobuf"
    assert run_cli(["dataset", "build", sources, compact, "-q"], capsys)[0] == 0
    assert run_cli(["dataset", "build", sources, protobuf, "-q", "--label-format", "protobuf"], capsys)[0] == 0
    assert json.loads((compact / "dataset.json").read_text())["config"]["label_format"] == "compact"
    assert sorted(p.name for p in (protobuf / "labels").iterdir()) == sorted(ANALYSES)
    assert [p.name for p in (compact / "labels").iterdir()] == ["all"]
    for root in (compact, protobuf):
        (root / "manifest.jsonl").unlink()  # info counts the label files then
    infos = [run_cli(["dataset", "info", root], capsys)[1].splitlines()[3:-1] for root in (compact, protobuf)]
    assert infos[0] == infos[1] and "graphs with labels" in infos[0][0]
    code, _, err = run_cli(["dataset", "convert", compact, "--label-format", "protobuf", "-j", "2"], capsys)
    assert code == 0 and "labels of" in err and "are protobuf" in err
    files = {p.relative_to(protobuf): p.read_bytes() for p in (protobuf / "labels").rglob("*.pb")}
    assert files and {p.relative_to(compact): p.read_bytes() for p in (compact / "labels").rglob("*.*")} == files
    assert run_cli(["dataset", "convert", compact, "--label-format", "compact", "-q"], capsys) == (0, "", "")
    assert [p.name for p in (compact / "labels").iterdir()] == ["all"]
    victim = Layout(compact).graph_names()[0]
    Layout(compact).compact_labels(victim).write_bytes(b"garbage")
    code, _, err = run_cli(["dataset", "convert", compact, "--label-format", "protobuf"], capsys)
    assert code == 1 and f"{victim}: error: LabelFileError: " in err and "1 graphs could not be read" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 2
    assert run_cli(["dataset", "convert", tmp_path / "nowhere", "--label-format", "compact"], capsys)[0] == 2
    assert run_cli(["dataset", "convert", compact, "--label-format", "json"], capsys)[0] == 2


def test_the_cli_offers_the_label_formats_of_the_layout() -> None:
    """The command line names them without importing the builder (start-up time); they must stay the same."""
    from programl.cli.dataset import LABEL_FORMATS
    from programl.data.deepdataflow.layout import LABEL_FORMATS as LAYOUT_FORMATS

    assert LABEL_FORMATS == LAYOUT_FORMATS
