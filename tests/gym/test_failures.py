"""What goes wrong stays in one line and never ends the Python process: a pass that crashes, a pass that hangs (both
through a stand-in for opt-22), and hostile benchmark files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from programl.gym.benchmarks import load_benchmark
from programl.gym.env import LlvmEnv
from programl.gym.errors import BenchmarkError, EpisodeError

FAKE_OPT = """#!/bin/sh
# A stand-in for opt-22: LLVM 22's version, a crash or a hang when the pass pipeline names a chosen pass, and the
# real opt-22 otherwise.
case "$*" in *--version*) echo "LLVM version 22.1.0"; exit 0;; esac
if [ -n "$FAKE_OPT_CRASH" ]; then case "$*" in *"$FAKE_OPT_CRASH"*) kill -SEGV $$;; esac; fi
if [ -n "$FAKE_OPT_HANG" ]; then
  case "$*" in *"$FAKE_OPT_HANG"*)
    sleep 600 &
    echo "$$ $!" > "$FAKE_OPT_PIDS"
    wait;;
  esac
fi
exec {opt} "$@"
"""


@pytest.fixture
def fake_opt(tmp_path, opt22) -> str:
    path = tmp_path / "opt"
    path.write_text(FAKE_OPT.replace("{opt}", opt22))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_crashing_pass_ends_the_episode(loops_c, fake_opt, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_OPT_CRASH", "function(gvn)")
    env = LlvmEnv(str(loops_c), observation_space="IrInstructionCount", reward_space="IrInstructionCount", opt=fake_opt)
    env.reset()
    count_before = env.step(env.action_space.names.index("mem2reg"))[0]
    reward_before = env.episode_reward
    observation, reward, terminated, truncated, info = env.step(env.action_space.names.index("gvn"))
    assert terminated and not truncated
    assert info["error_type"] == "PassError"
    assert info["error_details"] == f"{env.benchmark.uri}: function(gvn): opt crashed (killed by SIGSEGV)"
    assert reward == -reward_before and env.episode_reward == 0.0  # CompilerGym's reward on error
    assert observation == count_before and env.actions == [env.action_space.names.index("mem2reg")]
    with pytest.raises(EpisodeError, match="reset"):
        env.step(0)
    env.reset()  # a new episode works, and other passes still run
    assert not env.step(env.action_space.names.index("instcombine"))[2]


def test_a_hanging_pass_is_killed_at_the_timeout(loops_c, fake_opt, tmp_path, monkeypatch) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("FAKE_OPT_HANG", "function(loop-mssa(licm))")
    monkeypatch.setenv("FAKE_OPT_PIDS", str(pids))
    env = LlvmEnv(str(loops_c), opt=fake_opt, timeout=2)
    env.reset()
    _, _, terminated, _, info = env.step(env.action_space.names.index("licm"))
    assert terminated
    assert info["error_details"] == f"{env.benchmark.uri}: function(loop-mssa(licm)): opt timed out after 2 s"
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2 and not any(_alive(pid) for pid in started)  # the stand-in and the child it started


def test_garbage_ir_names_the_file(tmp_path, opt22) -> None:
    path = tmp_path / "garbage.ll"
    path.write_text("this is not LLVM IR\n")
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(path)
    assert str(caught.value) == f"{path}:1:1: opt-22: error: expected top-level entity"


def test_garbage_bitcode_names_the_file(tmp_path, opt22) -> None:
    path = tmp_path / "garbage.bc"
    path.write_bytes(b"BC\xc0\xde" + os.urandom(256))
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


def test_a_huge_file_is_not_read(tmp_path, opt22) -> None:
    path = tmp_path / "huge.ll"
    with open(path, "wb") as f:  # sparse: no disk space used
        f.truncate(64 * 2**20 + 1)
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(path)
    assert str(caught.value) == (
        f"{path}: 67,108,865 bytes, more than a benchmark file may have (67,108,864); refusing to read it"
    )
    with pytest.raises(BenchmarkError, match=r"more than a benchmark file may have \(1,024\)"):
        LlvmEnv(str(path), max_input_bytes=1024).reset()


def test_devices_fifos_and_folders_are_not_read(tmp_path, opt22) -> None:
    fifo = tmp_path / "pipe.ll"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), (Path("/dev/zero.ll"), None), (Path("/dev/zero"), None)):
        with pytest.raises(BenchmarkError) as caught:
            load_benchmark(f"file://{path}")
        assert str(caught.value).startswith(f"{path}: ")
        if kind:
            assert str(caught.value) == f"{path}: {kind}, not a regular file; refusing to read it as a benchmark file"
    link = tmp_path / "zero.c"
    link.symlink_to("/dev/zero")
    with pytest.raises(BenchmarkError, match="a character device, not a regular file"):
        load_benchmark(link)
    folder = tmp_path / "folder.ll"
    folder.mkdir()
    with pytest.raises(BenchmarkError, match="a directory, not a regular file"):
        load_benchmark(folder)


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("latin1.ll", b"define void @f\xe9() {\n ret void\n}\n", "not UTF-8 text"),
        ("notes.txt", b"hello", "unknown file type"),
        ("broken.c", b"int main( { return 0; }\n", "error:"),
    ],
)
def test_other_bad_files(tmp_path, opt22, clang22, name, data, message) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(BenchmarkError, match=message) as caught:
        load_benchmark(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "uri",
    ["file://otherhost/x.c", "generator://llvm-stress-v0/-1", "generator://llvm-stress-v0/4294967296",
     "generator://nope-v0/1", "benchmark://poj104-v1/one/two", "ftp://example.com/x.c"],
)  # fmt: skip
def test_bad_uris(uri, opt22) -> None:
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(uri)
    assert str(caught.value).startswith(f"{uri}: ") and "\n" not in str(caught.value)


def test_the_memory_limit_applies(loops_c, opt22) -> None:
    from programl.gym.state import Toolchain

    # 16 MiB of address space: opt-22 cannot even map its own libraries, so the limit is in force from its start
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(loops_c, Toolchain(max_memory=16 << 20))
    assert str(caught.value) == f"{loops_c}: opt-22 ran out of memory"
