"""Hostile inputs to the batch engine of the CLI (issue 12, items 1, 2, 3, 7, 12 and the file-name part of 8).

Each test reproduces the input of the issue: too few file descriptors to start a worker, bad ``--timeout`` values,
a single input that is too large, a FIFO or a stdin nobody writes to, a C file whose macros expand exponentially, a
Ctrl-C, a ``kill -9`` of the CLI, dask's logging of expected failures, and a file name with a newline. Every
subprocess runs with a timeout; generated inputs are made here, small or killed early.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import programl
from programl.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
GOOD_IR = (DATA / "example_a.ll").read_text()
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args, **kwargs) -> subprocess.CompletedProcess:
    """``python -m programl ARGS`` in a child process, always with a timeout."""
    kwargs.setdefault("timeout", 120)
    kwargs.setdefault("env", ENV)
    return subprocess.run([sys.executable, "-m", "programl", *map(str, args)], capture_output=True, text=True, **kwargs)


def popen(*args, **kwargs) -> subprocess.Popen:
    kwargs.setdefault("env", ENV)
    return subprocess.Popen(
        [sys.executable, "-m", "programl", *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def in_process(args, capsys) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in args])
    except SystemExit as exit:  # argparse usage errors
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def gone(pid: int, within: float = 15.0) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def wait_for(condition, within: float = 60.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def large_ir(path: Path, instructions: int) -> Path:
    lines = ["define i32 @f(i32 %x0) {"]
    lines.extend(f"  %x{i} = add i32 %x{i - 1}, {i}" for i in range(1, instructions))
    lines.append(f"  ret i32 %x{instructions - 1}\n}}\n")
    path.write_text("\n".join(lines))
    return path


@pytest.fixture
def irs(tmp_path: Path) -> list[Path]:
    paths = []
    for name in "abc":
        (tmp_path / f"{name}.ll").write_text(GOOD_IR)
        paths.append(tmp_path / f"{name}.ll")
    return paths


# -- item 1: a worker that cannot start --------------------------------------------------------------------------


def test_too_few_file_descriptors_fail_the_batch_with_one_line(irs, tmp_path) -> None:
    """``ulimit -n 9; programl build a.ll b.ll c.ll -o out -j 2`` printed a thread traceback and hung for ever."""

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (9, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    result = cli("build", *irs, "-o", tmp_path / "out", "-j", "2", preexec_fn=few_files, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "programl build: error: cannot start a worker process: Too many open files" in result.stderr
    assert "stopped" in result.stderr.splitlines()[-1]


# -- item 2: bad --timeout values ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-5", "nan", "inf", "1e300", "0", "soon"])
def test_bad_timeouts_are_usage_errors(irs, tmp_path, capsys, value) -> None:
    for command in (
        ["build", *irs, "-o", tmp_path / "out"],
        ["analyze", "liveness", tmp_path / "g.ProgramGraph.pb"],
        ["dataset", "build", irs[0], tmp_path / "ddf"],
    ):
        code, _, err = in_process([*command, f"--timeout={value}"], capsys)
        assert code == 2, (command, err)
        assert "argument --timeout:" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "ddf").exists()


def test_bad_max_memory_is_a_usage_error(irs, capsys) -> None:
    for value in ("lots", "100", "-1G"):
        code, _, err = in_process(["build", irs[0], f"--max-memory={value}"], capsys)
        assert code == 2 and "argument --max-memory:" in err


@pytest.mark.parametrize("timeout", [-1, float("nan"), 1e300])
def test_bad_timeouts_raise_in_the_api(timeout) -> None:
    with pytest.raises(ValueError, match="timeout"):
        list(programl.from_llvm_ir([GOOD_IR, GOOD_IR], timeout=timeout))


# -- item 3: one input gets the same isolation as many ------------------------------------------------------------


def test_timeout_applies_to_a_single_large_input(tmp_path, capsys) -> None:
    """A single large file with ``--timeout 1`` used to run to completion in the CLI process."""
    big = large_ir(tmp_path / "big.ll", 200_000)
    code, _, err = in_process(["build", big, "-o", tmp_path / "out", "--timeout", "1"], capsys)
    assert code == 1
    assert f"{big}: error: timed out after 1 s" in err
    assert not (tmp_path / "out" / "big.ProgramGraph.pb").exists()


def test_a_moderately_large_input_builds_under_the_default_memory_limit(tmp_path, capsys) -> None:
    code, _, err = in_process(["build", large_ir(tmp_path / "mid.ll", 20_000), "-o", tmp_path / "out"], capsys)
    assert code == 0, err
    assert "1 graphs (60,000 nodes" in err


def test_a_fifo_nobody_writes_to_times_out(tmp_path, capsys) -> None:
    fifo = tmp_path / "stuck.ll"
    os.mkfifo(fifo)
    code, _, err = in_process(["build", fifo, "--timeout", "2"], capsys)
    assert code == 1 and f"{fifo}: error: timed out after 2 s" in err
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    os.mkfifo(graphs / "stuck.ProgramGraph.pb")
    code, _, err = in_process(["analyze", "liveness", graphs / "stuck.ProgramGraph.pb", "--timeout", "2"], capsys)
    assert code == 1 and "stuck.ProgramGraph.pb: error: timed out after 2 s" in err
    code, _, err = in_process(
        ["convert", graphs / "stuck.ProgramGraph.pb", "--format", "json", "--timeout", "2"], capsys
    )
    assert code == 1 and "stuck.ProgramGraph.pb: error: timed out after 2 s" in err


def test_a_stdin_nobody_writes_to_times_out() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "programl", "build", "-", "--timeout", "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        process.wait(timeout=60)  # stdin stays open: the reader must give up by itself
        err = process.stderr.read()
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == 1, err
    assert "-: error: timed out after 2 s" in err


def test_stdin_and_process_substitution_are_read_by_the_worker(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "programl", "build", "-", "--format", "pb"],
        input=GOOD_IR.encode(),
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert programl.ProgramGraph.FromString(result.stdout).module[0].name == "foo.c"
    read, write = os.pipe()  # what bash's <(...) passes: /dev/fd/N
    os.write(write, GOOD_IR.encode())
    os.close(write)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "programl", "build", f"/dev/fd/{read}", "--format", "pb"],
            capture_output=True,
            env=ENV,
            timeout=60,
            pass_fds=(read,),
        )
    finally:
        os.close(read)
    assert result.returncode == 0, result.stderr
    assert len(programl.ProgramGraph.FromString(result.stdout).node) == 19


def test_exponential_macros_fail_with_out_of_memory(tmp_path, clang22) -> None:
    """A C file whose macros expand to 2**40 tokens exhausted a 24 GB machine; a worker's limit binds clang too."""
    lines = ["#define X0 1+"]
    lines.extend(f"#define X{i} X{i - 1} X{i - 1}" for i in range(1, 41))
    lines.append("int f(void) { return X40 1; }")
    bomb = tmp_path / "bomb.c"
    bomb.write_text("\n".join(lines) + "\n")
    result = cli("build", bomb, "-o", tmp_path / "out", "--max-memory", "512M", "--timeout", "100", timeout=150)
    assert result.returncode == 1, result.stderr
    assert f"{bomb}: error: clang ran out of memory" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.glob("bomb-*"))  # no crash reproducer written (-fno-crash-diagnostics)


# -- item 7: interrupts ------------------------------------------------------------------------------------------


def test_ctrl_c_kills_the_running_tasks_and_exits_130_with_the_summary(irs, tmp_path) -> None:
    fifo = tmp_path / "slow.ll"
    os.mkfifo(fifo)  # a task that never finishes by itself
    out = tmp_path / "out"
    process = popen(
        "build",
        irs[0],
        fifo,
        irs[1],
        "-o",
        out,
        "-j",
        "2",
        "--timeout",
        "600",
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert wait_for(lambda: (out / "a.ProgramGraph.pb").exists() and len(children(process.pid)) == 2)
        workers = children(process.pid)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("programl build: 1 graphs") and "interrupted" in last
    assert all(gone(pid) for pid in workers)


def test_kill_9_of_the_cli_leaves_no_worker_and_no_traceback(irs, tmp_path) -> None:
    fifo = tmp_path / "slow.ll"
    os.mkfifo(fifo)
    process = popen("build", fifo, irs[0], irs[1], "-o", tmp_path / "out", "-j", "2", "--timeout", "600")
    try:
        assert wait_for(lambda: (tmp_path / "out" / "a.ProgramGraph.pb").exists())
        workers = children(process.pid)
        assert len(workers) == 2
        process.kill()
        _, err = process.communicate(timeout=60)  # EOF once the workers, which share stderr, are gone too
    finally:
        process.kill()
    assert all(gone(pid) for pid in workers)
    assert "Traceback" not in err and "BrokenPipeError" not in err


# -- item 12: dask ----------------------------------------------------------------------------------------------


def test_dask_reports_expected_failures_as_results(tmp_path) -> None:
    pytest.importorskip("dask.distributed", reason="dask[distributed] not installed")
    sources = tmp_path / "src"
    sources.mkdir()
    (sources / "good.ll").write_text(GOOD_IR)
    (sources / "bad.ll").write_text("define i32 @f() {\n  ret i32 %x\n}\n")
    result = cli("dataset", "build", sources, tmp_path / "ddf", "--dask", "local", "-j", "1", timeout=300)
    assert result.returncode == 1, result.stderr
    assert f"{sources / 'bad.ll'}:2:11: error: use of undefined value '%x'" in result.stderr  # as build says it
    assert "1 built, 0 up to date, 1 failed of 2 inputs" in result.stderr
    assert "Compute Failed" not in result.stderr and "Traceback" not in result.stderr


# -- item 8 (part): names with a newline --------------------------------------------------------------------------


def test_a_file_name_with_a_newline_is_quoted_on_one_line(tmp_path, capsys) -> None:
    bad = tmp_path / "two\nlines.ll"
    bad.write_text("define i32 @f() {\n  ret i32 %x\n}\n")
    missing = tmp_path / "no\nsuch.ll"
    code, _, err = in_process(["build", bad, missing, "-o", tmp_path / "out"], capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 3, err  # two errors and the summary
    assert lines[0] == f"{str(bad)!r}:2:11: error: use of undefined value '%x'"
    assert lines[1].startswith(f"{str(missing)!r}: error: ")


def test_ctrl_c_stops_a_dataset_build_and_a_rerun_resumes(tmp_path, clang22) -> None:
    sources = tmp_path / "src"
    sources.mkdir()
    (sources / "a.ll").write_text(GOOD_IR)
    (sources / "slow.c").write_text("int f(void) { return 1; }\n")
    wrapper = tmp_path / "bin" / "clang-22"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *slow.c*) exec sleep 600;; esac\nexec {clang22} "$@"\n')
    wrapper.chmod(0o755)
    out = tmp_path / "ddf"
    process = popen(
        "dataset",
        "build",
        sources,
        out,
        "-j",
        "2",
        "--timeout",
        "600",
        env={**ENV, "PROGRAML_CLANG": str(wrapper)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        manifest = out / "manifest.jsonl"
        assert wait_for(lambda: manifest.exists() and '"a.ll"' in manifest.read_text())
        assert wait_for(lambda: len(children(process.pid)) == 2)
        workers = children(process.pid)
        sleeper = [p for w in workers for p in children(w)]  # the worker's clang: `sleep 600`
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert "programl dataset build: 1 built, 0 failed, interrupted" in err and "Traceback" not in err
    assert all(gone(pid) for pid in workers + sleeper)
    result = cli("dataset", "build", sources, out, "--timeout", "1", env={**ENV, "PROGRAML_CLANG": str(wrapper)})
    assert result.returncode == 1 and "1 up to date, 1 failed of 2 inputs" in result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("command", [["build", DATA / "example_a.ll"], ["dataset", "info", "{dataset}"]])
def test_a_full_stdout_is_one_line(command, tmp_path) -> None:
    """Standard output on a full disk: what no command catches itself ends in one line and exit 1 (a CLI audit)."""
    if "{dataset}" in command:
        sources = tmp_path / "src"
        sources.mkdir()
        (sources / "a.ll").write_text(GOOD_IR)
        assert cli("dataset", "build", sources, tmp_path / "ddf", "-q").returncode == 0
        command = [*command[:-1], tmp_path / "ddf"]
    with open("/dev/full", "w") as full:
        argv = [sys.executable, "-m", "programl", *map(str, command)]
        result = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True, env=ENV, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith("error: No space left on device"), result.stderr
