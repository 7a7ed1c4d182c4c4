"""``programl build``: formats, stdin, batches, resumption, and every kind of bad input (one line, right exit)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from programl.cli import main
from programl.proto import ProgramGraph

DATA = Path(__file__).resolve().parents[1] / "data"
GOOD_IR = (DATA / "example_a.ll").read_text()


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "good.ll").write_text(GOOD_IR)
    (tmp_path / "empty.ll").write_text("")
    (tmp_path / "garbage.ll").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "truncated.ll").write_text(GOOD_IR[: len(GOOD_IR) // 2])
    (tmp_path / "invalid.ll").write_text("define i32 @f() {\n  ret i32 %nope\n}\n")
    (tmp_path / "latin1.ll").write_bytes(b"; caf\xe9\n" + GOOD_IR.encode())
    (tmp_path / "broken.c").write_text("int main() {\n  return undefined_name;\n}\n")
    (tmp_path / "adir.ll").mkdir()
    return tmp_path


def run_cli(args, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_single_file_to_stdout_is_pbtxt(inputs, capsys) -> None:
    code, out, err = run_cli(["build", inputs / "good.ll"], capsys)
    assert code == 0 and err == ""
    from google.protobuf import text_format

    graph = text_format.Parse(out, ProgramGraph())
    assert len(graph.node) == 19


def test_dash_output_is_stdout_not_a_directory(inputs, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["build", inputs / "good.ll", "-o", "-"], capsys)
    assert code == 0 and err == "" and out.startswith("node {")
    pb = tmp_path / "good.pb"
    assert run_cli(["build", inputs / "good.ll", "-o", tmp_path / "out"], capsys)[0] == 0
    (tmp_path / "out" / "good.ProgramGraph.pb").rename(pb)
    code, out, _ = run_cli(["convert", pb, "--format", "json", "-o", "-"], capsys)
    assert code == 0 and json.loads(out)["directed"] is True
    assert not (tmp_path / "-").exists()


def test_output_directory_pb_is_the_graph(inputs, tmp_path, capsys) -> None:
    code, _, err = run_cli(["build", inputs / "good.ll", "-o", tmp_path / "out"], capsys)
    assert code == 0
    graph = ProgramGraph.FromString((tmp_path / "out" / "good.ProgramGraph.pb").read_bytes())
    assert len(graph.node) == 19 and len(graph.edge) == 27
    assert "1 graphs (19 nodes, 27 edges)" in err


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("empty.ll", "empty.ll: error: empty file"),
        ("garbage.ll", "garbage.ll:1:1: error: binary data"),
        ("truncated.ll", "truncated.ll:"),
        ("invalid.ll", "invalid.ll:2:11: error: use of undefined value '%nope'"),
        ("latin1.ll", "latin1.ll:1:6: error: not UTF-8 text"),
        ("adir.ll", "adir.ll: error: is a directory"),
        ("missing.ll", "missing.ll: error: no such file"),
    ],
)
def test_bad_input_gives_one_line_and_exit_1(inputs, tmp_path, capsys, name, message) -> None:
    code, _, err = run_cli(["build", inputs / name, "-o", tmp_path / "out", "-q"], capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert message in lines[0]
    assert "Traceback" not in err


def test_c_file_that_does_not_compile(inputs, tmp_path, capsys, clang22) -> None:
    code, _, err = run_cli(["build", inputs / "broken.c", "-o", tmp_path / "out", "-q"], capsys)
    assert code == 1
    assert err.strip().endswith("broken.c:2:10: error: use of undeclared identifier 'undefined_name'")


def test_missing_clang(inputs, tmp_path, capsys, monkeypatch) -> None:
    (inputs / "ok.c").write_text("int f(void) { return 1; }\n")
    monkeypatch.setenv("PROGRAML_CLANG", "/nonexistent/clang-22")
    code, _, err = run_cli(["build", inputs / "ok.c", "-o", tmp_path / "out", "-q"], capsys)
    assert code == 1
    assert "error: $PROGRAML_CLANG=/nonexistent/clang-22 is not an executable" in err
    assert "apt-get install clang-22" in err


def test_batch_goes_on_past_bad_files(inputs, tmp_path, capsys) -> None:
    names = ["good.ll", "empty.ll", "garbage.ll", "truncated.ll", "invalid.ll", "latin1.ll", "adir.ll"]
    (inputs / "good2.ll").write_text(GOOD_IR)
    code, _, err = run_cli(
        ["build", *[inputs / n for n in names], inputs / "good2.ll", "-o", tmp_path / "out", "-j", "2"], capsys
    )
    assert code == 1
    outputs = sorted(p.name for p in (tmp_path / "out").iterdir() if p.name != ".programl-fresh.jsonl")
    assert outputs == ["good.ProgramGraph.pb", "good2.ProgramGraph.pb"]
    assert "2 graphs (38 nodes, 54 edges), 6 failed" in err
    assert len([line for line in err.splitlines() if ": error: " in line]) == 6


def test_rerun_skips_finished_work(inputs, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert run_cli(["build", inputs / "good.ll", "-o", out], capsys)[0] == 0
    before = (out / "good.ProgramGraph.pb").stat().st_mtime_ns
    code, _, err = run_cli(["build", inputs / "good.ll", "-o", out], capsys)
    assert code == 0 and "1 up to date" in err
    assert (out / "good.ProgramGraph.pb").stat().st_mtime_ns == before
    assert "1 graphs" in run_cli(["build", inputs / "good.ll", "-o", out, "--force"], capsys)[2]


def test_deterministic_output(inputs, tmp_path, capsys) -> None:
    run_cli(["build", inputs / "good.ll", "-o", tmp_path / "a"], capsys)
    run_cli(["build", inputs / "good.ll", "-o", tmp_path / "b"], capsys)
    assert (tmp_path / "a" / "good.ProgramGraph.pb").read_bytes() == (
        tmp_path / "b" / "good.ProgramGraph.pb"
    ).read_bytes()


def test_stdin_and_python_dash_m(inputs) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "programl", "build", "-", "--format", "pb"], input=GOOD_IR.encode(), capture_output=True
    )
    assert result.returncode == 0, result.stderr
    graph = ProgramGraph.FromString(result.stdout)
    assert graph.module[0].name == "foo.c" and len(graph.node) == 19


def test_c_source_with_clang_flags(tmp_path, capsys, clang22) -> None:
    (tmp_path / "f.c").write_text("int f(int x) { return x * N; }\n")
    code, _, err = run_cli(["build", tmp_path / "f.c", "-o", tmp_path / "out", "--", "-DN=3", "-O1"], capsys)
    assert code == 0, err
    graph = ProgramGraph.FromString((tmp_path / "out" / "f.ProgramGraph.pb").read_bytes())
    texts = [n.features.feature["full_text"].bytes_list.value[0].decode() for n in graph.node[1:]]
    assert any("mul nsw i32 %0, 3" in t for t in texts)  # -O1: no alloca, N=3 folded in
    assert graph.module[0].name == str(tmp_path / "f.c")


def test_opencl_kernel(tmp_path, capsys, clang22) -> None:
    (tmp_path / "k.cl").write_text("kernel void k(global float *a) { a[get_global_id(0)] *= 2.0f; }\n")
    code, _, err = run_cli(["build", tmp_path / "k.cl", "-o", tmp_path / "out"], capsys)
    assert code == 0, err
    graph = ProgramGraph.FromString((tmp_path / "out" / "k.ProgramGraph.pb").read_bytes())
    assert graph.module[0].features.feature["llvm_target_triple"].bytes_list.value == [b"spir64"]


def test_usage_errors_exit_2(inputs, capsys) -> None:
    assert run_cli(["build", inputs / "good.ll", inputs / "good.ll"], capsys)[0] == 2  # several inputs, no -o
    with pytest.raises(SystemExit) as info:
        main(["build", "--format", "nope", str(inputs / "good.ll")])
    assert info.value.code == 2
    assert main([]) == 2


def test_timeout_is_per_file(tmp_path, capsys, monkeypatch) -> None:
    """A file that takes too long is killed and reported; the rest of the batch is built."""
    slow = tmp_path / "slow.c"
    slow.write_text("int f(void) { return 1; }\n")
    real = shutil.which("clang-22")
    if real is None:
        pytest.skip("clang-22 not installed")
    wrapper = tmp_path / "bin" / "clang-22"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *slow.c*) exec sleep 61.7;; esac\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PROGRAML_CLANG", str(wrapper))
    (tmp_path / "good.ll").write_text(GOOD_IR)
    code, _, err = run_cli(
        ["build", slow, tmp_path / "good.ll", "-o", tmp_path / "out", "--timeout", "2", "-j", "2"], capsys
    )
    assert code == 1
    assert "slow.c: error: " in err and "timed out" in err
    assert (tmp_path / "out" / "good.ProgramGraph.pb").exists()
    # the killed worker's clang (here: `sleep 61.7`, a length no other process on the machine is likely to sleep) was
    # killed with it
    leftovers = subprocess.run(["pgrep", "-f", "exec sleep 61.7|^sleep 61.7$"], capture_output=True, text=True).stdout
    assert not leftovers.strip()


def test_json_output(inputs, tmp_path, capsys) -> None:
    pytest.importorskip("programl.io.json_convert")
    code, _, _ = run_cli(["build", inputs / "good.ll", "-o", tmp_path, "--format", "json"], capsys)
    assert code == 0
    data = json.loads((tmp_path / "good.ProgramGraph.json").read_text())
    assert "links" in data and len(data["nodes"]) == 19


def test_convert_between_formats(inputs, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    run_cli(["build", inputs / "good.ll", "-o", out, "-q"], capsys)
    pb = out / "good.ProgramGraph.pb"
    assert run_cli(["convert", pb, "--format", "json", "-o", tmp_path / "j", "-q"], capsys)[0] == 0
    assert (
        run_cli(
            ["convert", tmp_path / "j" / "good.ProgramGraph.json", "--format", "pbtxt", "-o", tmp_path / "t", "-q"],
            capsys,
        )[0]
        == 0
    )
    assert (
        run_cli(
            ["convert", tmp_path / "t" / "good.ProgramGraph.pbtxt", "--format", "pb", "-o", tmp_path / "p", "-q"],
            capsys,
        )[0]
        == 0
    )
    assert (tmp_path / "p" / "good.ProgramGraph.pb").read_bytes() == pb.read_bytes()  # lossless round trip
    code, out_text, _ = run_cli(["convert", pb, "--format", "dot"], capsys)
    assert code == 0 and out_text.startswith("digraph")


def test_convert_rerun_skips_finished_work(inputs, tmp_path, capsys) -> None:
    (inputs / "other.ll").write_text((DATA / "example_b.ll").read_text())
    run_cli(["build", inputs / "good.ll", inputs / "other.ll", "-o", tmp_path / "g", "-q"], capsys)
    graphs = [tmp_path / "g" / "good.ProgramGraph.pb", tmp_path / "g" / "other.ProgramGraph.pb"]
    out = tmp_path / "j"
    assert run_cli(["convert", *graphs, "--format", "json", "-o", out, "-j", "2"], capsys)[0] == 0
    before = (out / "good.ProgramGraph.json").stat().st_mtime_ns
    code, _, err = run_cli(["convert", *graphs, "--format", "json", "-o", out], capsys)
    assert code == 0 and "0 graphs, 2 up to date" in err
    assert (out / "good.ProgramGraph.json").stat().st_mtime_ns == before
    graphs[1].write_bytes(graphs[0].read_bytes())  # new bytes under the same name: converted again
    code, _, err = run_cli(["convert", *graphs, "--format", "json", "-o", out], capsys)
    assert code == 0 and "1 graphs (19 nodes" in err and "1 up to date" in err
    assert (out / "other.ProgramGraph.json").read_bytes() == (out / "good.ProgramGraph.json").read_bytes()
    assert "2 graphs" in run_cli(["convert", *graphs, "--format", "json", "-o", out, "--force"], capsys)[2]
    code, _, err = run_cli(["convert", *graphs, "--format", "pbtxt", "-o", out], capsys)  # another format
    assert code == 0 and "2 graphs" in err and (out / "good.ProgramGraph.pbtxt").exists()


def test_convert_to_svg(inputs, tmp_path, capsys) -> None:
    if not shutil.which("dot"):
        pytest.skip("graphviz not installed (apt-get install graphviz)")
    run_cli(["build", inputs / "good.ll", "-o", tmp_path, "-q"], capsys)
    assert (
        run_cli(["convert", tmp_path / "good.ProgramGraph.pb", "--format", "svg", "-o", tmp_path, "-q"], capsys)[0] == 0
    )
    assert "<svg" in (tmp_path / "good.svg").read_text()


def test_convert_bad_files(inputs, tmp_path, capsys) -> None:
    (tmp_path / "bad.ProgramGraph.pb").write_bytes(b"\xff\xff not a graph")
    code, _, err = run_cli(
        [
            "convert",
            tmp_path / "bad.ProgramGraph.pb",
            tmp_path / "x.svg",
            tmp_path / "none.pb",
            "--format",
            "json",
            "-o",
            tmp_path / "o",
            "-q",
        ],
        capsys,
    )
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 3 and all(": error: " in line for line in lines)
    assert "Traceback" not in err
