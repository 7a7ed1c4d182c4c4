"""Fortran through flang-22 under the hostile inputs C gets (issue 39, item 3 A; docs/reliability.md, "Fortran").

Syntax errors in both source forms, a file that is not Fortran, binary garbage, an empty file, ``include`` of
/etc/passwd and of the file itself, an expression nested past flang's stack, a preprocessor bomb under
``--max-memory``, a large file under ``--timeout`` (the CLI and the API), awkward file names and a mixed batch.
Every CLI run is a child process under a timeout, with its own ``$TMPDIR`` so that files flang leaves behind are
seen; the heavy inputs are generated here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORTRAN = ROOT / "tests" / "data" / "programs" / "fortran"
GOOD = sorted(FORTRAN.glob("*.f*"))


@pytest.fixture(scope="module", autouse=True)
def flang22() -> str:
    path = shutil.which("flang-22")
    if not path:
        pytest.skip("flang-22 not installed: apt-get install flang-22 (make setup installs it where it can)")
    return path


@pytest.fixture
def tmpdir_env(tmp_path) -> tuple[dict, Path]:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch)}, scratch


def build(env: dict, *args, timeout: float = 240) -> subprocess.CompletedProcess:
    """``python -m programl build ARGS -q`` in a child process, always with a timeout."""
    command = [sys.executable, "-m", "programl", "build", *map(str, args), "-q"]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def one_line_each(stderr: str) -> list[str]:
    assert "Traceback" not in stderr and "PLEASE submit" not in stderr and "Stack dump" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.strip()]


def big_program(path: Path, lines: int) -> Path:
    """A straight-line program of ``lines`` assignments (flang takes about 0.6 ms a line)."""
    body = "\n".join(f"  x = x + {i}.0 * y" for i in range(lines))
    path.write_text(f"program p\n  real :: x, y\n  x = 0\n  y = 1\n{body}\n  print *, x\nend program p\n")
    return path


def macro_bomb(path: Path) -> Path:
    """A preprocessed (.F90) program whose macro expands to 2^40 tokens."""
    lines = ["#define A0 x", *(f"#define A{i} A{i - 1}+A{i - 1}" for i in range(1, 41))]
    lines += ["program p", "  real :: x, y", "  x = 1.0", "  y = A40", "  print *, y", "end program p"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bad_fortran_files_are_one_line_each_with_a_location(tmpdir_env, tmp_path) -> None:
    env, scratch = tmpdir_env
    files = {
        "syntax.f90": "program p\n  x = = 1\nend program p\n",
        "fixed.f": "      program p\n      x = = 1\n      end\n",
        "c_code.f90": "#include <stdio.h>\nint main(void) { return 0; }\n",
        "passwd.f90": 'program p\n  include "/etc/passwd"\nend program p\n',
        "self.f90": 'program p\n  include "self.f90"\nend program p\n',
        "deep.f90": "program p\n  real :: x\n  x = " + "(" * 5000 + "1.0" + ")" * 5000 + "\nend program p\n",
        "empty.f90": "",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "garbage.f90").write_bytes(bytes(range(256)) * 8)
    inputs = [*files, "garbage.f90"]
    result = build(env, *(tmp_path / name for name in inputs), "-o", tmp_path / "out", "-j", "2")
    assert result.returncode == 1, result.stderr
    lines = one_line_each(result.stderr)
    assert len(lines) == len(inputs), lines
    expected = {
        "syntax.f90": f"{tmp_path}/syntax.f90:2:5: error: expected '('",
        "fixed.f": f"{tmp_path}/fixed.f:2:9: error: expected '('",
        "c_code.f90": f"{tmp_path}/c_code.f90:1:10: error: #include: Source file 'stdio.h' was not found",
        "passwd.f90": "/etc/passwd:1:",  # where the error is, as clang reports an error in an included file
        "self.f90": f"{tmp_path}/self.f90:2:1: error: too many nested INCLUDE",  # at the include line, as clang
        "deep.f90": f"{tmp_path}/deep.f90: error: flang crashed (SIGSEGV)",  # flang's stack; one line
        "empty.f90": f"{tmp_path}/empty.f90: error: empty file",
        "garbage.f90": f"{tmp_path}/garbage.f90:1:1: error: bad character",
    }
    for name, start in expected.items():
        assert any(line.startswith(start) for line in lines), (name, lines)
    assert not list((tmp_path / "out").glob("*.pb"))
    assert not list(scratch.iterdir()), "flang left files in $TMPDIR (crash reproducers or module folders)"


def test_a_memory_bomb_is_stopped_by_max_memory_and_the_batch_goes_on(tmpdir_env, tmp_path) -> None:
    env, scratch = tmpdir_env
    bomb = macro_bomb(tmp_path / "bomb.F90")
    start = time.monotonic()
    result = build(env, bomb, GOOD[0], "-o", tmp_path / "out", "--max-memory", "512M", "--timeout", "120")
    assert result.returncode == 1, result.stderr
    assert one_line_each(result.stderr) == [f"{bomb}: error: flang ran out of memory"]
    assert (tmp_path / "out" / f"{GOOD[0].stem}.ProgramGraph.pb").stat().st_size > 0
    assert time.monotonic() - start < 100
    assert not list(scratch.iterdir())


def test_a_long_compile_is_stopped_by_timeout_and_the_batch_goes_on(tmpdir_env, tmp_path) -> None:
    env, scratch = tmpdir_env
    big = big_program(tmp_path / "big.f90", 200_000)  # minutes of flang
    start = time.monotonic()
    result = build(env, big, *GOOD, "-o", tmp_path / "out", "--timeout", "3", "--max-memory", "2G", "-j", "2")
    elapsed = time.monotonic() - start
    assert result.returncode == 1, result.stderr
    assert one_line_each(result.stderr) == [f"{big}: error: timed out after 3 s"]
    assert sorted(p.name for p in (tmp_path / "out").glob("*.pb")) == sorted(f"{p.stem}.ProgramGraph.pb" for p in GOOD)
    assert elapsed < 90
    assert not flang_processes_reading(big)
    # the killed worker's module folder is removed by the next process that compiles Fortran
    from_dead = [p for p in scratch.iterdir() if p.name.startswith("programl-flang-")]
    subprocess.run(
        [sys.executable, "-c", f"from programl.graph_builder import flang; flang.compile_file({str(GOOD[0])!r})"],
        env=env,
        check=True,
        timeout=120,
    )
    assert not [p for p in from_dead if p.exists()]


def flang_processes_reading(path: Path, within: float = 10.0) -> list[int]:
    """The pids of live processes whose command line names ``path``, waited for to go within ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    command = (entry / "cmdline").read_bytes()
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                if os.fsencode(str(path)) in command.split(b"\0") and state not in ("Z", "X"):
                    found.append(int(entry.name))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_the_api_timeout_kills_the_compiler_itself(tmp_path) -> None:
    """flang's driver runs ``flang -fc1`` as its child: killing the driver alone left the compiler running."""
    from programl.graph_builder import flang

    big = big_program(tmp_path / "big_api.f90", 200_000)
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="flang timed out after 2 s"):
        flang.compile_file(str(big), timeout=2)
    assert time.monotonic() - start < 30
    assert not flang_processes_reading(big)
    with pytest.raises(TimeoutError, match="flang timed out after 2 s"):
        flang.compile_source(big.read_text(), timeout=2)


def test_a_crash_is_one_line_and_leaves_nothing_in_tmp(tmp_path, monkeypatch) -> None:
    from programl.graph_builder import flang
    from programl.graph_builder.clang import CompilerError

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)
    deep = "program p\n  real :: x\n  x = " + "(" * 5000 + "1.0" + ")" * 5000 + "\nend program p\n"
    with pytest.raises(CompilerError) as info:
        flang.compile_source(deep, timeout=120)
    assert str(info.value) == "-: error: flang crashed (SIGSEGV)"
    assert not list(scratch.iterdir())


@pytest.mark.parametrize("name", ["my file é.f90", 'we$ird "q" \\x.f90', "new\nline.f90", "-starts-with-dash.f90"])
def test_awkward_file_names(tmp_path, monkeypatch, name) -> None:
    from programl.graph_builder import flang
    from programl.graph_builder.clang import CompilerError

    monkeypatch.chdir(tmp_path)
    Path(name).write_text((FORTRAN / "vecops.f90").read_text())
    assert "_QMvecopsPaxpy" in flang.compile_file(name)
    bad = "bad " + name
    Path(bad).write_text("program p\n  x = = 1\nend program p\n")
    with pytest.raises(CompilerError) as info:
        flang.compile_file(bad)
    assert (info.value.path, info.value.line, info.value.column) == (bad, 2, 5)


def test_awkward_names_through_the_cli(tmpdir_env, tmp_path) -> None:
    env, _ = tmpdir_env
    (tmp_path / "my file é.f90").write_text((FORTRAN / "vecops.f90").read_text())
    (tmp_path / "gcd é.f").write_text((FORTRAN / "gcd.f").read_text())
    bad = tmp_path / "bad\nname.f90"
    bad.write_text("program p\n  x = = 1\nend program p\n")
    result = build(env, tmp_path / "my file é.f90", tmp_path / "gcd é.f", bad, "-o", tmp_path / "out")
    assert result.returncode == 1
    assert one_line_each(result.stderr) == [f"{str(bad)!r}:2:5: error: expected '('"]
    assert (tmp_path / "out" / "my file é.ProgramGraph.pb").stat().st_size > 0
    assert (tmp_path / "out" / "gcd é.ProgramGraph.pb").stat().st_size > 0


def test_a_mixed_batch_builds_the_good_files_and_a_rerun_skips_them(tmpdir_env, tmp_path) -> None:
    env, scratch = tmpdir_env
    (tmp_path / "bad.f90").write_text("program p\n  call\nend program p\n")
    (tmp_path / "binary.f").write_bytes(os.urandom(2048))
    bomb = macro_bomb(tmp_path / "bomb.F90")
    inputs = [*GOOD, tmp_path / "bad.f90", tmp_path / "binary.f", bomb]
    out = tmp_path / "out"
    first = build(env, *inputs, "-o", out, "-j", "2", "--max-memory", "512M", "--timeout", "120")
    assert first.returncode == 1
    assert len(one_line_each(first.stderr)) == 3
    built = {p.name: p.read_bytes() for p in out.glob("*.pb")}
    assert len(built) == len(GOOD)
    second = build(env, *inputs, "-o", out, "-j", "2", "--max-memory", "512M", "--timeout", "120")
    assert second.returncode == 1 and one_line_each(second.stderr) == one_line_each(first.stderr)
    assert {p.name: p.read_bytes() for p in out.glob("*.pb")} == built
    assert not list(scratch.iterdir())


def test_stale_module_folders_of_dead_processes_are_removed(tmp_path, monkeypatch) -> None:
    from programl.graph_builder import flang

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setattr(flang, "_swept", False)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"programl-flang-{dead.pid}-abcd1234"
    stale.mkdir()
    (stale / "m.mod").write_text("x")
    alive = tmp_path / f"programl-flang-{os.getppid()}-abcd1234"
    alive.mkdir()
    flang.compile_file(str(GOOD[0]))
    assert not stale.exists() and alive.exists()
