"""Tests of programl.data.poj104: reading and deduplicating, compiling, building, splitting (SPEC §6.6)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from collections import Counter

import pytest

from programl.data import poj104
from programl.data.poj104.legacy import _build_legacy_one, _LegacyTask
from programl.exceptions import GraphCreationError, ProgramlError
from programl.proto import ProgramGraph

HELLO = 'int main() {\n  int n;\n  scanf("%d", &n);\n  printf("%d\\n", n * LEN);\n  return 0;\n}\n'
BROKEN = "int main() {\n  return undefined_name;\n}\n"


@pytest.fixture(scope="module")
def programs(shared_data):
    return poj104.read_programs(shared_data / "poj104")


@pytest.fixture(scope="module")
def pch(tmp_path_factory, clang22):
    return poj104.precompile_headers(tmp_path_factory.mktemp("pch"), ("-O0",))


def write_codexglue(root, files: dict[str, str]):
    for name, text in files.items():
        path = root / "codexglue" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "codexglue"


def test_read_programs_deduplicates_the_archive(programs) -> None:
    # 53,000 files; 1,000 are second copies in classes 65 and 81; 5 texts appear under two labels (left out)
    assert len(programs) == 51_990
    counts = Counter(p.label for p in programs)
    assert sorted(counts) == list(range(1, 105))
    assert 490 <= min(counts.values()) and max(counts.values()) == 500
    assert len({p.sha256 for p in programs}) == len(programs)
    assert programs == sorted(programs, key=lambda p: (p.label, p.index))


def test_read_programs_rules_on_a_small_directory(tmp_path) -> None:
    root = write_codexglue(
        tmp_path,
        {
            "1/7.cpp": "int main(){return 1;}",
            "1/3.cpp": "int main(){return 1;}",  # duplicate: keeps the lower index
            "2/4.cpp": "int main(){return 2;}",
            "2/5.cpp": "int main(){return 3;}",
            "3/1.cpp": "int main(){return 3;}",  # same text as 2/5 under another label: ambiguous, dropped
            "3/notes.txt": "ignored",
        },
    )
    found = poj104.read_programs(root, verify=False)
    assert [p.id for p in found] == ["1.3", "2.4"]
    with pytest.raises(ProgramlError, match="contents differ"):
        poj104.read_programs(root)
    with pytest.raises(ProgramlError, match="missing"):
        poj104.read_programs(tmp_path / "nowhere")


def test_archive_checksum(tmp_path) -> None:
    bad = tmp_path / poj104.ARCHIVE
    with tarfile.open(bad, "w:xz"):
        pass
    with pytest.raises(ProgramlError, match="sha256"):
        poj104.read_programs(bad)


def test_prepare_source() -> None:
    text = poj104.prepare_source("void main ( ) {}\n")
    assert text.startswith(poj104.HEADER) and text.endswith("int main( ) {}\n")
    assert poj104.prepare_source("main()\n{}", with_header=False) == "int main()\n{}"
    assert poj104.prepare_source("int remain(){}", with_header=False) == "int remain(){}"


def test_compile_with_precompiled_header_gives_the_same_ir(programs, pch) -> None:
    assert set(pch) == {r.name for r in poj104.RECIPES}
    for program in programs[:: len(programs) // 2][:2]:
        plain, recipe = poj104.compile_program(program.text)
        fast, fast_recipe = poj104.compile_program(program.text, pch=pch)
        assert plain == fast and recipe == fast_recipe


def test_compile_fallback_recipes(pch) -> None:
    ir, recipe = poj104.compile_program(HELLO, pch=pch)
    assert recipe.name == "programl" and "define" in ir
    needs_iomanip = "int main() { cout << setw(3) << 1; return 0; }\n"  # only the fallback header has <iomanip>
    assert poj104.compile_program(needs_iomanip, pch=pch)[1].name == "more-headers"
    with pytest.raises(GraphCreationError, match="undefined_name"):
        poj104.compile_program(BROKEN, pch=pch)


def test_split_per_class_3_1_1(programs) -> None:
    split = poj104.split_programs(programs, seed=204)
    assert sum(len(v) for v in split.values()) == len(programs)
    ids = [set(split[k]) for k in ("train", "val", "test")]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    by_label = Counter(p.label for p in programs)
    for name, share in (("train", 3 / 5), ("val", 1 / 5), ("test", 1 / 5)):
        counts = Counter(int(pid.split(".")[0]) for pid in split[name])
        for label, n in by_label.items():
            assert abs(counts[label] - share * n) <= 1
    assert poj104.split_programs(programs, seed=204) == split
    assert poj104.split_programs(programs, seed=205)["test"] != split["test"]


def test_split_of_one_class_does_not_depend_on_the_others(programs) -> None:
    full = poj104.split_programs(programs)
    only_7 = poj104.split_programs([p for p in programs if p.label == 7])
    assert only_7["test"] == [pid for pid in full["test"] if pid.startswith("7.")]


def test_subset_split(programs) -> None:
    split = poj104.split_programs(programs)
    subset = poj104.subset_split(split, 10)
    assert [len(subset[k]) for k in ("train", "val", "test")] == [104 * 6, 104 * 2, 104 * 2]
    for name in subset:
        assert set(subset[name]) <= set(split[name])
        assert subset[name] == [pid for pid in split[name] if pid in set(subset[name])]  # order kept
    assert poj104.subset_split(split, None) == split


def test_load_split_is_written_once(programs, tmp_path) -> None:
    first = poj104.load_split(tmp_path, programs[:300], seed=3)
    assert (tmp_path / "splits" / "seed3" / "test.txt").read_text().split() == first["test"]
    assert poj104.load_split(tmp_path, [], seed=3) == first  # read back, not recomputed


def test_build_resumable_with_failures(tmp_path, clang22) -> None:
    root = write_codexglue(tmp_path, {"1/1.cpp": HELLO, "1/2.cpp": BROKEN, "2/1.cpp": "void main() { }\n"})
    programs = poj104.read_programs(root, verify=False)
    out = tmp_path / "out"
    report = poj104.build_poj104(root, out, [0], programs=programs, jobs=2, keep_ir=True)
    assert (report.built, report.skipped, len(report.failed)) == (2, 0, 1)
    assert {name for name, _ in report.failed} == {"1.2.0"}
    graph = ProgramGraph.FromString((out / "graphs" / "2.1.0.ProgramGraph.pb").read_bytes())
    assert graph.features.feature["poj104_label"].int64_list.value == [2]
    assert (out / "ir" / "1.1.0.ll").read_text().startswith("; ModuleID = '-'")
    entries = {e["name"]: e for e in map(json.loads, (out / "manifest.jsonl").read_text().splitlines())}
    assert entries["1.1.0"]["status"] == "ok" and entries["1.1.0"]["recipe"] == "programl"
    assert entries["1.2.0"]["status"] == "failed" and "undefined_name" in entries["1.2.0"]["error"]
    assert entries["2.1.0"]["setting"] == "-O0"
    before = (out / "graphs" / "1.1.0.ProgramGraph.pb").read_bytes()
    again = poj104.build_poj104(root, out, [0], programs=programs)
    assert (again.built, again.skipped, len(again.failed)) == (0, 2, 1)  # failures are not retried by default
    retried = poj104.build_poj104(root, out, [0], programs=programs, retry_failed=True)
    assert (retried.built, retried.skipped, len(retried.failed)) == (0, 2, 1)
    assert poj104.graph_name(programs[0], 5) == "1.1.5"
    assert poj104.OPT_SETTINGS[5] == ("-O1", "-ffast-math")
    fresh = poj104.build_poj104(root, tmp_path / "fresh", [0], programs=programs[:1])
    assert fresh.built == 1
    assert (tmp_path / "fresh" / "graphs" / "1.1.0.ProgramGraph.pb").read_bytes() == before  # deterministic
    found, missing = poj104.poj104_examples(out, ["1.1", "1.2", "2.1"], [0])
    assert [p.name for p in found] == ["1.1.0.ProgramGraph.pb", "2.1.0.ProgramGraph.pb"] and missing == ["1.2.0"]


def test_legacy_ir(shared_data, tmp_path) -> None:
    legacy = poj104.read_legacy_ir(shared_data / "legacy-ir")
    assert len(legacy) == 1000
    assert legacy[0][0] == "000.ll" and legacy[0][1] == 71
    assert {label for _, label, _ in legacy} <= set(range(1, 105))
    name, label, text = legacy[0]
    result = _build_legacy_one(_LegacyTask(name, label, text, str(tmp_path / "000.ProgramGraph.pb")))
    graph = ProgramGraph.FromString((tmp_path / "000.ProgramGraph.pb").read_bytes())
    assert graph.features.feature["poj104_label"].int64_list.value == [71]
    assert result["nodes"] == len(graph.node) > 50


# ---------------------------------------------------------------------------------------------------------------
# Hostile inputs (issue 39): crafted archives, damaged archives, and a PCH writer killed with kill -9


def _tar(path, members) -> str:
    """A .tar.gz of ``(name, kind)`` members (kind: "file", "dir", "symlink"); returns its file:// URL."""
    with tarfile.open(path, "w:gz") as tar:
        for name, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            else:
                data = b"int main() { return 0; }\n"
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path.as_uri()


def _leftovers(directory) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")) if directory.exists() else []


REPO = "dataset-poj-104-28790c70"


@pytest.mark.parametrize(
    "members, bad, what",
    [
        # a file named "." / ".." inside a class folder: opened as the folder itself (was a bare IsADirectoryError)
        ([(f"{REPO}/codexglue/1/1.cpp", "file"), (f"{REPO}/codexglue/1/.", "file")], f"{REPO}/codexglue/1/.", "plain"),
        (
            [(f"{REPO}/codexglue/1/1.cpp", "file"), (f"{REPO}/codexglue/1/..", "file")],
            f"{REPO}/codexglue/1/..",
            "plain",
        ),
        # an empty folder name makes a file where a class folder is, after or before that folder (IsADirectoryError,
        # FileExistsError)
        ([(f"{REPO}/codexglue/1/1.cpp", "file"), (f"{REPO}/codexglue//1", "file")], f"{REPO}/codexglue//1", "plain"),
        ([(f"{REPO}/codexglue//1", "file"), (f"{REPO}/codexglue/1/1.cpp", "file")], f"{REPO}/codexglue//1", "plain"),
        # the same program twice (here from two roots): the second would silently replace the first
        (
            [(f"{REPO}/codexglue/1/1.cpp", "file"), ("other/codexglue/1/1.cpp", "file")],
            "other/codexglue/1/1.cpp",
            "second",
        ),
        # a directory or a link where a program file is expected
        ([(f"{REPO}/codexglue/1/1.cpp", "dir")], f"{REPO}/codexglue/1/1.cpp", "a directory where a program file"),
        ([(f"{REPO}/codexglue/1/1.cpp", "symlink")], f"{REPO}/codexglue/1/1.cpp", "a link where a program file"),
    ],
)
def test_fetch_refuses_a_crafted_repository_archive_in_one_line(tmp_path, members, bad, what) -> None:
    url = _tar(tmp_path / "repo.tar.gz", members)
    out = tmp_path / "raw"
    with pytest.raises(ProgramlError) as info:
        poj104.fetch_poj104(out, url=url)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{url}: member {bad!r} ") and what in message
    assert _leftovers(out) == []  # the staging directory is gone, nothing was extracted anywhere
    assert _leftovers(tmp_path) == ["raw", "repo.tar.gz"]


def test_fetch_of_a_well_formed_archive_gets_to_the_content_check(tmp_path) -> None:
    """Directory members at every level (as GitHub's archives have them) and files that are not programs are fine."""
    members = [
        (REPO, "dir"),
        (f"{REPO}/codexglue", "dir"),
        (f"{REPO}/codexglue/README.md", "file"),
        (f"{REPO}/codexglue/1", "dir"),
        (f"{REPO}/codexglue/1/1.cpp", "file"),
        (f"{REPO}/codexglue/1/notes", "dir"),
        (f"{REPO}/codexglue/2/7.cpp", "file"),
    ]
    url = _tar(tmp_path / "repo.tar.gz", members)
    with pytest.raises(ProgramlError, match="differ from the published POJ-104"):
        poj104.fetch_poj104(tmp_path / "raw", url=url)


def test_damaged_archives_are_one_line_errors(tmp_path) -> None:
    not_tar = tmp_path / "repo.tar.gz"
    not_tar.write_bytes(b"<html>rate limited</html>\n")
    with pytest.raises(ProgramlError, match="not a readable tar archive") as info:
        poj104.fetch_poj104(tmp_path / "raw", url=not_tar.as_uri())
    assert str(info.value).startswith(not_tar.as_uri()) and "\n" not in str(info.value)
    assert _leftovers(tmp_path / "raw") == []

    good = tmp_path / "programs.tar.xz"
    with tarfile.open(good, "w:xz") as tar:
        for i in range(40):
            data = f"int main() {{ return {i}; }}\n".encode() * 200
            info = tarfile.TarInfo(f"codexglue/1/{i}.cpp")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    truncated = tmp_path / poj104.ARCHIVE
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ProgramlError, match="not a readable tar archive") as info:
        poj104.read_programs(truncated, verify=False)
    assert str(info.value).startswith(str(truncated)) and "\n" not in str(info.value)
    legacy = tmp_path / poj104.LEGACY_ARCHIVE
    legacy.write_bytes(b"not bzip2")
    with pytest.raises(ProgramlError, match="not a readable tar archive"):
        poj104.read_legacy_ir(legacy, verify=False)


def test_read_programs_refuses_a_directory_named_like_a_program(tmp_path) -> None:
    root = write_codexglue(tmp_path, {"1/1.cpp": "int main(){return 1;}"})
    (root / "1" / "2.cpp").mkdir()  # was a bare IsADirectoryError
    with pytest.raises(ProgramlError) as info:
        poj104.read_programs(root, verify=False)
    assert str(info.value) == f"{root}: '1/2.cpp' is not a regular file (a program file is expected there)"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_precompile_headers_removes_the_temporary_files_of_killed_writers(tmp_path, clang22) -> None:
    """`kill -9` of a dataset build while it precompiles headers leaves `.<name>.pch.<pid>.tmp` (and clang's own
    temporary when clang was killed): the next run removes them, and the PCHs are made as before."""
    directory = tmp_path / "pch"
    directory.mkdir()
    dead = _dead_pid()
    stale = [
        directory / f".programl.0123456789abcdef.pch.{dead}.tmp",
        directory / f".gnu++98.0123456789abcdef.pch.{dead}-c9f079c7.tmp.tmp",
        # a live PID (this test's) that is no writer: nobody holds the directory's lock, so it is stale too
        directory / f".more-headers.0123456789abcdef.pch.{os.getpid()}.tmp",
    ]
    for path in stale:
        path.write_bytes(b"\0" * 4096)
    other = directory / "notes.tmp"
    other.write_text("not ours")
    found = poj104.precompile_headers(directory, ("-O0",), recipes=poj104.RECIPES[:1])
    assert list(found) == ["programl"] and os.path.getsize(found["programl"]) > 1_000_000
    assert not any(path.exists() for path in stale)
    assert other.exists()
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [".pch.lock", "notes.tmp", os.path.basename(found["programl"])]
    )


def test_precompile_headers_leaves_a_live_writers_temporary_file_alone(tmp_path, clang22) -> None:
    """While another process writes a PCH (it holds the directory's lock shared), only the files of dead PIDs go."""
    directory = tmp_path / "pch"
    directory.mkdir()
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(directory / '.pch.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_SH)\n"
            f"open({str(directory)!r} + f'/.programl.0123456789abcdef.pch.{{os.getpid()}}.tmp', 'wb').write(b'x')\n"
            "print('ready', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout.readline() == "ready\n"
        live = directory / f".programl.0123456789abcdef.pch.{writer.pid}.tmp"
        dead = directory / f".programl.0123456789abcdef.pch.{_dead_pid()}.tmp"
        dead.write_bytes(b"x")
        found = poj104.precompile_headers(directory, ("-O0",), recipes=poj104.RECIPES[:1])
        assert live.exists() and not dead.exists()
        assert os.path.getsize(found["programl"]) > 1_000_000
    finally:
        writer.communicate("")
    # the writer is gone (its lock with it): the next run removes what it left
    poj104.precompile_headers(directory, ("-O0",), recipes=poj104.RECIPES[:1])
    assert not live.exists()
