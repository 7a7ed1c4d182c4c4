"""Outputs under hostile conditions (issue 12 items 5, 6 and 8; issue 10 item 4): a bad ``-o``, a full disk,
stale outputs after other options, copied output directories, the same error location from ``build`` and ``dataset
build``, and file modes that follow the umask.

A full disk is a child process under ``RLIMIT_FSIZE`` with ``SIGXFSZ`` ignored: every write past the limit fails
with ``OSError(EFBIG)`` in the command and its worker processes, as writes fail with ``ENOSPC`` on a full disk, and
the real command runs (no patched code).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import programl.cli as cli
from programl.cli.analyze import NO_ROOT_FILE as NO_ROOT
from programl.util.freshness import RECORD_NAME

DATA = Path(__file__).resolve().parents[1] / "data"
REPO = Path(__file__).resolve().parents[2]
IR = [DATA / "example_a.ll", DATA / "example_b.ll", DATA / "example_c.ll"]


def run_cli(args, capsys) -> tuple[int, str, str]:
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exit:  # argparse usage errors
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_with_full_disk(args, limit: int, timeout: float = 240) -> subprocess.CompletedProcess:
    """``programl ARGS`` in a child process where no file can grow past ``limit`` bytes (a disk that fills up)."""
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
        "from programl.cli import main\n"
        f"sys.exit(main({[str(a) for a in args]!r}))\n"
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO
    )


def tree(directory: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every regular file under ``directory`` (relative path -> bytes), without ``skip`` names and the record."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.is_symlink() and p.name not in (*skip, RECORD_NAME)
    }


@pytest.fixture
def graphs(tmp_path: Path, capsys) -> Path:
    assert run_cli(["build", *IR, "-o", tmp_path / "graphs", "-q"], capsys)[0] == 0
    return tmp_path / "graphs"


# ------------------------------------------------------------------------------------------------- item 5: -o
def _command(name: str, graphs: Path, output: Path) -> list:
    graph = graphs / "example_a.ProgramGraph.pb"
    return {
        "build": ["build", *IR, "-o", output],
        "analyze": ["analyze", "all", graphs, "-o", output],
        "convert": ["convert", graph, "--format", "json", "-o", output],
        "dataset build": ["dataset", "build", *IR, output],
    }[name]


@pytest.mark.parametrize("command", ["build", "analyze", "convert", "dataset build"])
def test_output_naming_a_file_or_an_uncreatable_directory_is_one_line(command, graphs, tmp_path, capsys) -> None:
    taken = tmp_path / "taken.txt"
    taken.write_text("keep me\n")
    for output, reason in ((taken, "not a directory"), (taken / "sub", "cannot create the directory")):
        code, out, err = run_cli(_command(command, graphs, output), capsys)
        assert code == 2, err
        assert "Traceback" not in err and out == ""
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"programl {command}: error: ") and str(output) in last and reason in last, last
    assert taken.read_text() == "keep me\n"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into any directory")
def test_output_in_a_read_only_directory_is_one_line(graphs, tmp_path, capsys) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        code, _, err = run_cli(_command("build", graphs, locked / "out"), capsys)
    finally:
        locked.chmod(0o700)
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith("cannot create the directory: Permission denied")


# ------------------------------------------------------------------------------------------ item 5: a full disk
@pytest.mark.parametrize(
    ("analysis", "limit"),
    [("all", 0), ("all", 1500), ("subexpressions", 0)],  # two graphs have no subexpressions root: no write for them
)
def test_analyze_on_a_full_disk_reports_and_loses_nothing(analysis, limit, graphs, tmp_path, capsys) -> None:
    out = tmp_path / "labels"
    result = run_with_full_disk(["analyze", analysis, graphs, "-o", out, "-j", "2"], limit)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("programl analyze: ") and "failed" in lines[-1]
    errors = [line for line in lines if ": error: " in line]
    assert errors and all("File too large" in line for line in errors), lines
    reported = {line.split(": error: ")[0] for line in errors}
    if analysis == "all" and limit == 0:  # nothing can be written: every graph is reported
        assert reported == {str(p) for p in graphs.glob("*.ProgramGraph.pb")}
    if analysis == "subexpressions":  # the one label file, the list of graphs without a root, the record
        no_root = out / "labels" / analysis / NO_ROOT
        assert reported == {str(graphs / "example_a.ProgramGraph.pb"), str(no_root), str(out / RECORD_NAME)}

    # with space again, a rerun finishes the job: the same labels as a run that never ran out of space
    code, _, err = run_cli(["analyze", analysis, graphs, "-o", out, "-j", "2", "-q"], capsys)
    assert code == 0, err
    clean = tmp_path / "clean"
    assert run_cli(["analyze", analysis, graphs, "-o", clean, "-j", "2", "-q"], capsys)[0] == 0
    assert tree(out) == tree(clean)
    code, _, err = run_cli(["analyze", analysis, graphs, "-o", out], capsys)
    outputs = 15 if analysis == "all" else 3  # label files and graph/analysis pairs without a root
    assert code == 0 and f"0 label files, {outputs} up to date" in err


@pytest.mark.parametrize("limit", [0, 2000])
def test_dataset_build_on_a_full_disk_reports_and_loses_nothing(limit, tmp_path, capsys) -> None:
    out = tmp_path / "ddf"
    result = run_with_full_disk(["dataset", "build", *IR, out, "-j", "2"], limit)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("programl dataset build: ") and "of 3 inputs" in lines[-1], lines
    assert all("File too large" in line for line in lines[:-1]), lines
    if limit == 0:
        assert "3 failed of 3 inputs" in lines[-1]
        assert any(line.startswith(f"{out / 'manifest.jsonl'}: error: ") for line in lines), lines

    # with space again, a rerun (no --retry-failed) builds what the full disk stopped: the same data set
    code, _, err = run_cli(["dataset", "build", *IR, out, "-j", "2", "-q"], capsys)
    assert code == 0, err
    clean = tmp_path / "clean"
    assert run_cli(["dataset", "build", *IR, clean, "-j", "2", "-q"], capsys)[0] == 0
    skip = ("dataset.json", "manifest.jsonl")  # timings
    assert tree(out, skip) == tree(clean, skip)
    code, _, err = run_cli(["dataset", "build", *IR, out], capsys)
    assert code == 0 and "0 built, 3 up to date, 0 failed of 3 inputs" in err


def test_recipe_sources_on_a_full_disk_are_one_line(shared_data, clang22, tmp_path, capsys) -> None:
    recipe = tmp_path / "devmap.json"
    recipe.write_text('{"seed": 204, "max_roots": 2, "sources": [{"kind": "devmap", "path": "devmap"}]}')
    args = ["dataset", "build", "--recipe", recipe, "--data", shared_data, "--size", "2", tmp_path / "ddf"]
    result = run_with_full_disk(args, 0)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"programl dataset build: {tmp_path / 'ddf'}/sources: error: File too large"
    ]
    code, _, err = run_cli(args, capsys)
    assert code == 0 and "2 built, 0 up to date, 0 failed of 2 inputs" in err, err


def test_build_on_a_full_disk_reports_each_input(tmp_path) -> None:
    result = run_with_full_disk(["build", *IR, "-o", tmp_path / "out", "-j", "2"], 0)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert sorted(lines[:-1]) == [f"{p}: error: File too large" for p in IR]
    assert lines[-1].startswith("programl build: 0 graphs, 3 failed")


# ------------------------------------------------------------------------------------- item 6: stale outputs
def test_build_rebuilds_after_other_options_and_not_after_a_copy(tmp_path, capsys) -> None:
    source = tmp_path / "x.ll"
    shutil.copy(IR[0], source)
    out = tmp_path / "out"
    graph = out / "x.ProgramGraph.pb"
    assert "1 graphs" in run_cli(["build", source, "-o", out], capsys)[2]
    full = graph.read_bytes()
    assert "1 up to date" in run_cli(["build", source, "-o", out], capsys)[2]
    assert "1 graphs" in run_cli(["build", source, "-o", out, "--instructions-only"], capsys)[2]
    assert graph.read_bytes() != full
    assert "1 up to date" in run_cli(["build", source, "-o", out, "--instructions-only"], capsys)[2]
    assert "1 graphs" in run_cli(["build", source, "-o", out], capsys)[2]
    assert graph.read_bytes() == full

    # cp -r (new mtimes) and cp -a (old mtimes) of the output directory are up to date
    shutil.copytree(out, tmp_path / "copy_r", copy_function=shutil.copy)
    shutil.copytree(out, tmp_path / "copy_a", symlinks=True)
    for copy in ("copy_r", "copy_a"):
        assert "0 graphs, 1 up to date" in run_cli(["build", source, "-o", tmp_path / copy], capsys)[2]

    # other bytes with the old mtime: rebuilt (the content counts, not the time)
    stat_before = source.stat()
    source.write_text(source.read_text() + "\n; a comment\n")
    os.utime(source, ns=(stat_before.st_atime_ns, stat_before.st_mtime_ns - 10**9))
    assert "1 graphs" in run_cli(["build", source, "-o", out], capsys)[2]

    # a damaged output is rebuilt; outputs without a record (an older programl) are rebuilt once
    graph.write_bytes(graph.read_bytes()[:10])
    assert "1 graphs" in run_cli(["build", source, "-o", out], capsys)[2]
    (out / RECORD_NAME).unlink()
    assert "1 graphs" in run_cli(["build", source, "-o", out], capsys)[2]
    assert "1 up to date" in run_cli(["build", source, "-o", out], capsys)[2]


def test_build_rebuilds_after_other_clang_flags(clang22, tmp_path, capsys) -> None:
    source = tmp_path / "f.c"
    source.write_text("int f(int n) { int s = 0; for (int i = 0; i < n; ++i) s += i; return s; }\n")
    out = tmp_path / "out"
    assert "1 graphs" in run_cli(["build", source, "-o", out], capsys)[2]
    o0 = (out / "f.ProgramGraph.pb").read_bytes()
    assert "1 graphs" in run_cli(["build", source, "-o", out, "--", "-O2"], capsys)[2]
    assert (out / "f.ProgramGraph.pb").read_bytes() != o0
    assert "1 up to date" in run_cli(["build", source, "-o", out, "--", "-O2"], capsys)[2]


def test_analyze_relabels_after_other_options_and_not_after_a_copy(graphs, tmp_path, capsys) -> None:
    out = tmp_path / "labels"
    label = out / "labels" / "reachability" / "example_c.ProgramGraphFeaturesList.pb"
    assert run_cli(["analyze", "reachability", graphs, "-o", out, "--max-roots", "1"], capsys)[0] == 0
    one = label.read_bytes()
    assert "3 up to date" in run_cli(["analyze", "reachability", graphs, "-o", out, "--max-roots", "1"], capsys)[2]
    assert "3 label files" in run_cli(["analyze", "reachability", graphs, "-o", out, "--max-roots", "2"], capsys)[2]
    assert label.read_bytes() != one
    assert "3 label files" in run_cli(["analyze", "reachability", graphs, "-o", out, "--max-roots", "1"], capsys)[2]
    assert label.read_bytes() == one
    shutil.copytree(out, tmp_path / "copy", copy_function=shutil.copy)
    args = ["analyze", "reachability", graphs, "-o", tmp_path / "copy", "--max-roots", "1"]
    assert "0 label files, 3 up to date" in run_cli(args, capsys)[2]
    # a graph with other bytes and an old mtime is relabelled
    graph = graphs / "example_a.ProgramGraph.pb"
    shutil.copy(graphs / "example_b.ProgramGraph.pb", graph)
    os.utime(graph, ns=(0, 0))
    assert "1 label files" in run_cli(args, capsys)[2]


def test_analyze_removes_a_label_file_the_new_options_do_not_make(graphs, tmp_path, capsys) -> None:
    out = tmp_path / "labels"
    assert run_cli(["analyze", "subexpressions", graphs, "-o", out, "-q"], capsys)[0] == 0
    label = out / "labels" / "subexpressions" / "example_b.ProgramGraphFeaturesList.pb"
    assert not label.exists()  # example_b has no eligible root for subexpressions
    label.write_bytes(b"stale")
    (out / RECORD_NAME).unlink()
    assert run_cli(["analyze", "subexpressions", graphs, "-o", out, "-q"], capsys)[0] == 0
    assert not label.exists()
    assert "3 up to date" in run_cli(["analyze", "subexpressions", graphs, "-o", out], capsys)[2]


def test_a_copied_devmap_data_set_is_up_to_date(shared_data, clang22, tmp_path, capsys) -> None:
    """The devmap inputs' ``-I <OUT>/sources/devmap/kernels_cl`` made a copy rebuild them (40 of 78)."""
    recipe = tmp_path / "devmap.json"
    recipe.write_text('{"seed": 204, "max_roots": 2, "sources": [{"kind": "devmap", "path": "devmap"}]}')
    args = ["dataset", "build", "--recipe", recipe, "--data", shared_data, "--size", "2", "-j", "2"]
    code, _, err = run_cli([*args, tmp_path / "ddf"], capsys)
    assert code == 0 and "2 built, 0 up to date" in err, err
    shutil.copytree(tmp_path / "ddf", tmp_path / "copy", symlinks=True, copy_function=shutil.copy)
    code, _, err = run_cli([*args, tmp_path / "copy"], capsys)
    assert code == 0 and "0 built, 2 up to date" in err, err


def test_dataset_digest_counts_paths_inside_the_data_set_by_their_place(tmp_path) -> None:
    from programl.data.deepdataflow.inputs import Input

    source = tmp_path / "k.cl"
    source.write_text("kernel void k() {}\n")

    def item(include: Path) -> Input:
        return Input("k", "k.cl", "source", "cl", ("-O0", "-I", str(include), f"-I{include}"), str(source))

    a, b = tmp_path / "a", tmp_path / "b"
    assert item(a / "sources").digest({}, root=a) == item(b / "sources").digest({}, root=b)
    assert item(a / "sources").digest({}, root=a) != item(tmp_path / "elsewhere").digest({}, root=a)
    assert item(a / "sources").digest({"seed": 1}, root=a) != item(a / "sources").digest({"seed": 2}, root=a)


# ---------------------------------------------------------------------------------------- item 8: locations
@pytest.mark.parametrize(
    "data",
    [
        b"; ModuleID = 'x'\n; emoji \xf0\x9f\x98\x80 then \x00 a NUL\ndefine void @f() {\n  ret void\n}\n",
        b"; ModuleID = 'x'\ndefine void @f() {\n  ret void ; caf\xc3\xa9 \xe2\x82\xac %q\n  ret i32 %undefined\n}\n",
        b"; ModuleID = 'x'\n; latin-1 caf\xe9\ndefine void @f() {\n  ret void\n}\n",
    ],
    ids=["nul-after-multibyte", "parse-error-after-multibyte", "not-utf8"],
)
def test_build_and_dataset_build_report_the_same_location(data, tmp_path, capsys) -> None:
    path = tmp_path / "bad.ll"
    path.write_bytes(data)
    code, _, err = run_cli(["build", path, "-o", tmp_path / "graphs"], capsys)
    assert code == 1
    from_build = err.strip().splitlines()[0]
    code, _, err = run_cli(["dataset", "build", path, tmp_path / "ddf"], capsys)
    assert code == 1
    assert err.strip().splitlines()[0] == from_build
    assert from_build.startswith(f"{path}:") and ": error: " in from_build
    if b"\x00" in data:  # the NUL is the 19th byte (the 16th character) of line 2: columns count bytes, as LLVM's
        assert from_build.startswith(f"{path}:2:19: error: binary data")


# ------------------------------------------------------------------------------------- issue 10: file modes
@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664)])
def test_outputs_follow_the_umask(umask, mode, tmp_path, capsys) -> None:
    old = os.umask(umask)
    try:
        assert run_cli(["build", IR[0], "-o", tmp_path / "graphs", "-q"], capsys)[0] == 0
        assert run_cli(["analyze", "all", tmp_path / "graphs", "-o", tmp_path / "labels", "-q"], capsys)[0] == 0
        assert run_cli(["dataset", "build", IR[0], tmp_path / "ddf", "-q"], capsys)[0] == 0
    finally:
        os.umask(old)
    files = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()]
    assert len(files) > 10
    assert {p.relative_to(tmp_path).as_posix(): oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {
        p.relative_to(tmp_path).as_posix(): oct(mode) for p in files
    }
