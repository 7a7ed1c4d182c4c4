"""The ``archive`` source kind of recipes (DeepDataFlow-22 wide, issue 36 item 4): a local tar.gz made here stands in
for a PyPI sdist or a Debian ``.orig.tar`` (served on a loopback HTTP server; nothing is downloaded from the
internet). C files go through clang-22 and clang-14, Fortran through flang-22; a file that does not compile is a
recorded failure."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import json
import shutil
import tarfile
import threading
from pathlib import Path

import pytest

import programl.cli as cli
from programl.data.deepdataflow import Layout, build_dataset, read_manifest
from programl.data.deepdataflow.recipe import load_recipe, recipe_inputs
from programl.data.deepdataflow.sources import archive_files, archive_inputs, unpack_archive
from programl.exceptions import ProgramlError

REPO = Path(__file__).resolve().parents[2]
HAVE_CLANG14 = shutil.which("clang-14") is not None
HAVE_FLANG = shutil.which("flang-22") is not None
needs_clang14 = pytest.mark.skipif(not HAVE_CLANG14, reason="clang-14 is not installed (apt-get install clang-14)")
needs_flang = pytest.mark.skipif(not HAVE_FLANG, reason="flang-22 is not installed (apt-get install flang-22)")

FILES = {
    "lib-1.0/include/lib.h": "#define SCALE 3\nint lib_sum(const int *a, int n);\n",
    "lib-1.0/src/sum.c": (
        '#include "lib.h"\n'
        "int lib_sum(const int *a, int n) {\n  int s = 0;\n  for (int i = 0; i < n; i++)\n    s += a[i] * SCALE * OFFSET;\n"
        "  return s;\n}\n"
    ),
    "lib-1.0/src/sub/max.c": (
        "int lib_max(const int *a, int n) {\n  int m = a[0];\n  for (int i = 1; i < n; i++)\n    if (a[i] > m) m = a[i];\n"
        "  return m;\n}\n"
    ),
    "lib-1.0/src/bad.c": "int broken(void) { return undeclared_variable; }\n",
    "lib-1.0/fortran/axpy.f": (
        "      SUBROUTINE AXPY(N, A, X, Y)\n      INTEGER N, I\n      REAL A, X(N), Y(N)\n"
        "      DO 10 I = 1, N\n         Y(I) = Y(I) + A * X(I)\n   10 CONTINUE\n      END\n"
    ),
    "lib-1.0/fortran/scale.f90": (
        "subroutine scale(n, a, x)\n  integer :: n, i\n  real :: a, x(n)\n  do i = 1, n\n    x(i) = a * x(i)\n"
        "  end do\nend subroutine scale\n"
    ),
    "lib-1.0/README": "not code\n",
}


def make_archive(path: Path, files: dict[str, str] = FILES) -> str:
    """A tar.gz of ``files``; returns its sha256."""
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def upstream(tmp_path: Path):
    """(http:// URL on a loopback server, sha256) of the archive as its publisher serves it (a recipe's URL is
    http(s): a file:// URL in a shared recipe would name a file of the machine that builds it)."""
    path = tmp_path / "upstream" / "lib-1.0.tar.gz"
    path.parent.mkdir()
    sha256 = make_archive(path)
    with serve(path.parent) as base:
        yield f"{base}/{path.name}", sha256


@contextlib.contextmanager
def serve(directory: Path):
    """A loopback HTTP server over ``directory``; yields its base URL."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(directory), **kwargs)

        def log_message(self, *args):  # quiet
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def source(upstream, **more) -> dict:
    url, sha256 = upstream
    return {
        "kind": "archive",
        "name": "lib",
        "url": url,
        "sha256": sha256,
        "licence": "MIT",
        "files": ["src/**/*.c", "fortran/*"],
        "includes": ["include"],
        "defines": ["OFFSET=2"],
        "compilers": ["clang-22", "clang-14", "flang-22"],
        "settings": [["-O0"], ["-O2"]],
        **more,
    }


def test_inputs_names_groups_languages_flags(upstream, tmp_path: Path) -> None:
    data, work = tmp_path / "data", tmp_path / "work"
    inputs = archive_inputs(source(upstream), data, work)
    assert (data / "downloads" / "lib-1.0.tar.gz").is_file()  # the cache, under the data directory
    names = {i.name for i in inputs}
    assert len(names) == len(inputs) == 3 * 4 + 2 * 2  # C files: 2 compilers x 2 settings; Fortran: 1 x 2
    assert "lib.src_sum.clang22-O0.c" in names and "lib.src_sum.clang14-O2.c" in names
    assert "lib.fortran_axpy.flang22-O2.f" in names and "lib.fortran_scale.flang22-O0.f90" in names
    by_name = {i.name: i for i in inputs}
    assert by_name["lib.src_sum.clang22-O0.c"].language == "c"
    assert by_name["lib.src_sum.clang14-O0.c"].language == "c@clang-14"
    assert by_name["lib.fortran_axpy.flang22-O0.f"].language == "fortran"
    flags = by_name["lib.src_sum.clang14-O2.c"].flags
    assert flags[0] == "-O2" and "-DOFFSET=2" in flags
    assert any(f.startswith("-I") and f.endswith("lib-1.0/include") for f in flags)
    assert {i.group for i in inputs} == {"lib"}  # group_depth 0: the library is one split unit
    assert by_name["lib.src_sum.clang22-O0.c"].source == "downloads/lib-1.0.tar.gz:src/sum.c"
    deep = archive_inputs(source(upstream, group_depth=2), data, work)
    assert {i.group for i in deep} == {"lib/src", "lib/src/sub", "lib/fortran"}


def test_size_and_max_files_take_a_seeded_subset(upstream, tmp_path: Path) -> None:
    def files(size=None, **more):
        return {i.path for i in archive_inputs(source(upstream, **more), tmp_path / "d", tmp_path / "w", size=size)}

    every = files()
    assert len(every) == 5
    capped = files(max_files=3)
    smaller = files(2, max_files=3)
    assert len(capped) == 3 and len(smaller) == 2 and smaller < capped < every


def test_checksum_malformed_sources_and_unsafe_archives(upstream, tmp_path: Path) -> None:
    url, sha256 = upstream
    with pytest.raises(ProgramlError, match="sha256"):
        archive_inputs(source(upstream, sha256="0" * 64), tmp_path / "d", tmp_path / "w")
    assert not list((tmp_path / "d").rglob("*.tar.gz"))  # nothing left in the cache
    for bad, message in (
        ({"licence": ""}, "licence"),
        ({"compilers": ["gcc"]}, "unknown compiler"),
        ({"includes": ["../x"]}, "inside the tree"),
        ({"colour": 1}, "unknown keys"),
        ({"files": ["nothing/*.c"]}, "no file"),
    ):
        with pytest.raises(ProgramlError, match=message):
            archive_inputs(source(upstream, **bad), tmp_path / "d", tmp_path / "w")
    evil = tmp_path / "evil.tar.gz"
    make_archive(evil, {"../escape.c": "int x;\n"})
    with pytest.raises(ProgramlError, match="cannot unpack"):
        unpack_archive(evil, tmp_path / "unpacked")
    assert not (tmp_path / "escape.c").exists() and not (tmp_path / "unpacked").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".unpacked")]  # no half-unpacked folder


def test_unpack_is_atomic_and_globs(upstream, tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    make_archive(archive)
    tree = unpack_archive(archive, tmp_path / "u")
    assert tree == tmp_path / "u" / "lib-1.0"
    assert unpack_archive(archive, tmp_path / "u") == tree  # kept
    assert archive_files(tree, ["src/**/*.c"]) == ["src/bad.c", "src/sub/max.c", "src/sum.c"]
    assert archive_files(tree, ["src/*.c"], exclude=["src/bad*"]) == ["src/sum.c"]


def test_recipe_kind_archive(upstream, tmp_path: Path) -> None:
    recipe = {"seed": 1, "sources": [source(upstream, compilers=["clang-22"])]}
    inputs = recipe_inputs(recipe, tmp_path / "d", tmp_path / "w", progress=False)
    assert len(inputs) == 3 * 2


def test_the_wide_recipe_is_well_formed() -> None:
    from programl.data.deepdataflow import sources as archives

    recipe = load_recipe(REPO / "datasets" / "deepdataflow22-wide" / "recipe.json")
    archive_sources = [s for s in recipe["sources"] if s["kind"] == "archive"]
    assert len({s["name"] for s in archive_sources}) >= 6
    languages = set()
    for s in archive_sources:
        archives.check_archive_source(s)
        assert s["url"].startswith(("https://files.pythonhosted.org/", "http://deb.debian.org/debian/pool/"))
        assert s["provenance"]
        languages |= set(s["compilers"])
    assert {"clang-22", "clang-14", "flang-22"} <= languages
    assert {s["kind"] for s in recipe["sources"]} >= {"poj104", "devmap", "archive"}


@needs_clang14
@needs_flang
def test_build_records_failures_keeps_groups_together_and_resumes(upstream, tmp_path: Path) -> None:
    inputs = archive_inputs(source(upstream, group_depth=2), tmp_path / "d", tmp_path / "w")
    out = tmp_path / "ddf"
    report = build_dataset(inputs, out, jobs=1, analyses=("reachability", "liveness"))
    assert report.exit_code == 1  # bad.c does not compile, at each of its 4 settings
    failed = sorted(name for name, _ in report.failed)
    assert failed == sorted(i.name for i in inputs if "src_bad" in i.name) and len(failed) == 4
    manifest = read_manifest(Layout(out).manifest)
    assert manifest["lib.src_bad.clang14-O0.c"]["status"] == "failed"
    assert "undeclared_variable" in manifest["lib.src_bad.clang14-O0.c"]["error"]
    assert manifest["lib.src_sum.clang14-O2.c"]["language"] == "c@clang-14"
    assert report.built == len(inputs) - 4
    # the clang-14 IR, read from its bitcode, is as LLVM 22 prints it (opaque pointers)
    ir = Layout(out).ir("lib.src_sum.clang14-O0.c").read_text()
    assert "ptr" in ir and "i32*" not in ir
    split = {}
    for name in ("train", "val", "test"):
        for graph in Layout(out).split_names(name):
            split[graph] = name
    for group in ("lib/src", "lib/src/sub", "lib/fortran"):
        assert len({split[i.name] for i in inputs if i.group == group and i.name in split}) == 1
    again = build_dataset(inputs, out, jobs=1, analyses=("reachability", "liveness"))
    assert again.built == 0 and again.skipped == len(inputs) - 4 and again.exit_code == 1


@needs_clang14
@needs_flang
def test_one_command_from_the_cli(upstream, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "dataset", "programl.cli.dataset")
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"seed": 3, "analyses": ["reachability"], "sources": [source(upstream)]}))
    data, out = tmp_path / "data", tmp_path / "out"
    code = cli.main(["dataset", "build", "--recipe", str(recipe), "--data", str(data), str(out), "-j", "1"])
    err = capsys.readouterr().err
    assert code == 1, err  # one file of the archive does not compile
    assert "12 built" in err and "4 failed of 16 inputs" in err
    assert (data / "downloads" / "lib-1.0.tar.gz").is_file()
    code = cli.main(["dataset", "build", "--recipe", str(recipe), "--data", str(data), str(out), "-j", "1"])
    assert code == 1 and "0 built, 12 up to date, 4 failed" in capsys.readouterr().err


@needs_clang14
def test_compile_file_with_clang14(tmp_path: Path) -> None:
    from programl.graph_builder import clang

    path = tmp_path / "f.c"
    path.write_text("struct s { int a; struct s *next; };\nint f(struct s *p) { return p->next->a; }\n")
    ir = clang.compile_file(str(path), ["-O0"], language="c@clang-14")
    assert "define" in ir and "ptr" in ir and "%struct.s*" not in ir
    with pytest.raises(Exception, match="clang-13 is not a supported compiler"):
        clang.compile_file(str(path), ["-O0"], language="c@clang-13")
    assert clang.split_language("c++@clang-14") == ("c++", "clang-14")
    assert clang.split_language("c") == ("c", None)


@needs_flang
def test_compile_file_routes_fortran_to_flang(tmp_path: Path) -> None:
    from programl.exceptions import GraphCreationError
    from programl.graph_builder import clang, compilers

    path = tmp_path / "s.f90"
    path.write_text(FILES["lib-1.0/fortran/scale.f90"])
    ir = compilers.compile_file(str(path), ["-O2"], language="fortran")
    assert "define" in ir and "scale" in ir
    with pytest.raises(GraphCreationError, match="Fortran is compiled by flang-22, not clang"):
        clang.compile_file(str(path), ["-O2"], language="fortran")
