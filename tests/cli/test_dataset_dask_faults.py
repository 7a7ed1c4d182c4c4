"""``programl dataset build --dask local`` on a real multi-process dask cluster under faults (issue 39, item 3 B;
docs/reliability.md, "dask faults").

A ``kill -9`` of one dask worker process in the middle of the build, and a Ctrl-C (SIGINT to the driver, and to its
whole process group as a terminal sends it) in the middle: nothing finished is lost (every manifest line parses,
every graph it names reads, no temporary file is left), the run says what happened on one line with its summary
last, and a rerun resumes (skips what is done) to outputs identical to those of an uninterrupted build.

The inputs are the C programs of ``tests/data/programs`` at three settings (93 inputs, read in place); each build
is a child process under a generous timeout, and the faults wait for progress in the manifest, not for a clock.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("dask.distributed", reason="needs dask[distributed] (pip install 'programl[cluster]')")

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "tests" / "data" / "programs").glob("*.c"))
SETTINGS = ("-O0", "-O2", "-Os")
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
TIMEOUT = 400  # seconds for one build on a busy 2-core machine (an undisturbed one takes about 15 s)


@pytest.fixture(scope="module", autouse=True)
def clang22() -> None:
    if not shutil.which("clang-22"):
        pytest.skip("clang-22 not installed: apt-get install clang-22")


def command(out: Path, *more: str) -> list[str]:
    return [
        sys.executable, "-m", "programl", "dataset", "build", *map(str, PROGRAMS), str(out), *SETTINGS, "-j", "2",
        *more,
    ]  # fmt: skip


def run_build(out: Path, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run(command(out, *more), capture_output=True, text=True, env=ENV, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """An uninterrupted build with the default process pool."""
    out = tmp_path_factory.mktemp("reference") / "ddf"
    result = run_build(out, "-q")
    assert result.returncode == 0, result.stderr
    return out


def snapshot(root: Path) -> dict:
    """Every file of a data set: bytes (digest), link targets, and the manifest and summary less their timings."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if path.is_symlink():
            found[relative] = "-> " + os.readlink(path)
        elif path.name == "manifest.jsonl":
            lines = path.read_text(encoding="utf-8").splitlines()
            found[relative] = [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in lines]
        elif path.name == "dataset.json":
            summary = json.loads(path.read_text(encoding="utf-8"))
            found[relative] = {k: v for k, v in summary.items() if k not in ("seconds", "built_now", "up_to_date")}
        elif path.is_file():
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def manifest_lines(out: Path) -> int:
    try:
        return (out / "manifest.jsonl").read_bytes().count(b"\n")
    except OSError:
        return 0


def wait_for_progress(process: subprocess.Popen, out: Path, lines: int, within: float = TIMEOUT) -> int:
    """Wait until the manifest has ``lines`` lines (the build is in its middle); the count then."""
    deadline = time.monotonic() + within
    while manifest_lines(out) < lines:
        assert process.poll() is None, f"the build ended before the fault: {process.stderr.read()}"
        assert time.monotonic() < deadline, "no progress in the manifest"
        time.sleep(0.05)
    return manifest_lines(out)


def children(pid: int) -> list[tuple[int, bytes]]:
    """The live child processes of ``pid`` and their command lines."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            found.append((int(entry.name), cmdline))
    return found


def dask_workers(pid: int, within: float = 60) -> list[int]:
    """The dask worker processes of the driver ``pid`` (multiprocessing children of its nannies)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        workers = [child for child, cmdline in children(pid) if b"spawn_main" in cmdline]
        if workers:
            return workers
        time.sleep(0.1)
    raise AssertionError("no dask worker process found")


def temporaries(out: Path) -> list[Path]:
    return [p for p in out.rglob(".*") if ".tmp" in p.name]


def age(paths: list[Path], seconds: float) -> None:
    """Make files look last written ``seconds`` ago (a stale temporary is over a minute old)."""
    for path in paths:
        then = time.time() - seconds
        os.utime(path, (then, then), follow_symlinks=False)


def assert_intact(out: Path) -> dict:
    """Every manifest line parses, every graph it calls built reads, and any temporary file left is a killed
    writer's, held open by nobody."""
    from programl.data.pipeline import _open_files
    from programl.io.files import read_graph

    entries = {}
    for line in (out / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        entries[entry["name"]] = entry
    for name, entry in entries.items():
        if entry["status"] == "ok":
            assert len(read_graph(out / "graphs" / f"{name}.ProgramGraph.pb").node) == entry["nodes"]
    held = _open_files() or set()
    for path in temporaries(out):
        status = path.lstat()
        assert (status.st_dev, status.st_ino) not in held, path
    return entries


def finish(process: subprocess.Popen) -> tuple[int, str]:
    try:
        _, stderr = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
        raise AssertionError(f"the build did not end: {stderr}") from None
    return process.returncode, stderr


def assert_one_line_each(stderr: str) -> list[str]:
    assert "Traceback" not in stderr and "distributed." not in stderr, stderr
    return [line for line in stderr.splitlines() if line.strip()]


def test_kill_9_of_a_dask_worker_loses_nothing(tmp_path, reference) -> None:
    out = tmp_path / "ddf"
    process = subprocess.Popen(
        command(out, "--dask", "local"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV
    )
    try:
        wait_for_progress(process, out, 10)
        victim = dask_workers(process.pid)[0]
        os.kill(victim, signal.SIGKILL)
        code, stderr = finish(process)
    finally:
        if process.poll() is None:
            process.kill()
    lines = assert_one_line_each(stderr)
    assert code == 0, stderr
    assert any("warning: dask worker" in line and "died" in line for line in lines), stderr
    assert lines[-1].startswith("programl dataset build: 93 built, 0 up to date, 0 failed of 93 inputs"), stderr
    entries = assert_intact(out)
    assert len(entries) == 93 and all(e["status"] == "ok" for e in entries.values())
    left = temporaries(out)  # a worker killed in the middle of an atomic write leaves its temporary file
    assert {k: v for k, v in snapshot(out).items() if out / k not in left} == snapshot(reference)
    age(left, 120)  # stale: the next build removes it
    again = run_build(out, "--dask", "local")
    assert again.returncode == 0, again.stderr
    assert "0 built, 93 up to date" in again.stderr
    assert snapshot(out) == snapshot(reference)


@pytest.mark.parametrize(
    "to_the_group",
    [pytest.param(False, id="driver", marks=pytest.mark.slow), pytest.param(True, id="process-group")],
)
def test_ctrl_c_of_a_dask_build_resumes_to_the_same_outputs(tmp_path, reference, to_the_group) -> None:
    out = tmp_path / "ddf"
    process = subprocess.Popen(
        command(out, "--dask", "local"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,  # its own process group, as a shell job
        # a shell's default Ctrl-C, whatever this process inherited (pytest-xdist workers ignore SIGINT)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        done = wait_for_progress(process, out, 10)
        workers = dask_workers(process.pid)
        if to_the_group:  # what a terminal's Ctrl-C does: the driver, its dask workers and their clang
            os.killpg(process.pid, signal.SIGINT)
        else:
            os.kill(process.pid, signal.SIGINT)
        start = time.monotonic()
        code, stderr = finish(process)
        stopped_in = time.monotonic() - start
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    lines = assert_one_line_each(stderr)
    assert code == 130, stderr
    assert "interrupted (a rerun resumes" in lines[-1], stderr
    assert stopped_in < 60
    for worker in workers:  # the cluster is gone with the driver
        assert not Path(f"/proc/{worker}").exists() or "Z" in Path(f"/proc/{worker}/stat").read_text().split()[2]
    entries = assert_intact(out)
    assert done <= len(entries) < 93
    age(temporaries(out), 120)
    again = run_build(out, "--dask", "local")
    assert again.returncode == 0, again.stderr
    resumed = assert_one_line_each(again.stderr)[-1]
    assert f"{93 - len(entries)} built, {len(entries)} up to date, 0 failed of 93 inputs" in resumed, again.stderr
    assert snapshot(out) == snapshot(reference)
