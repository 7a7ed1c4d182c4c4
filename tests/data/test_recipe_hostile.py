"""A received data-set recipe (``programl dataset build --recipe R --data D OUT``) writes nothing outside its place,
runs no code of its sender and exhausts neither disk nor memory: every hostile recipe here gets one line and a
non-zero exit, before anything is downloaded. Downloads come from a loopback HTTP server (never the internet)."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

import programl.cli as cli
from programl.data.deepdataflow import sources as archives
from programl.data.deepdataflow.recipe import check_recipe_flags, load_recipe, recipe_inputs
from programl.data.download import download_url
from programl.exceptions import ProgramlError

REPO = Path(__file__).resolve().parents[2]
HAVE_GCC = shutil.which("gcc") is not None
ARCHIVE_FILES = {
    "lib-1.0/include/lib.h": "#define SCALE 3\n",
    "lib-1.0/include/config": "#define CONFIGURED 1\n",  # a header without a suffix
    "lib-1.0/src/sum.c": '#include "lib.h"\nint sum(int a) { return a * SCALE; }\n',
    "lib-1.0/src/common.inc": "int common(void) { return 7; }\n",
    "lib-1.0/docs/manual.txt": "not needed to compile\n",
    "lib-1.0/tests/data.bin": "\0" * 4096,
}


def make_tar(path: Path, files: dict[str, str | bytes]) -> str:
    """A tar.gz of ``files``; returns its sha256."""
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode() if isinstance(text, str) else text
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Server:
    """A loopback HTTP server over a folder that counts the requests it gets; ``/endless`` streams zeros without a
    Content-Length (as ``file:///dev/zero`` would), until the client hangs up."""

    def __init__(self, directory: Path) -> None:
        self.requests: list[str] = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(directory), **kwargs)

            def do_GET(self):  # noqa: N802 - http.server's name
                server.requests.append(self.path)
                if self.path != "/endless":
                    return super().do_GET()
                self.send_response(200)
                self.end_headers()
                with contextlib.suppress(OSError):
                    while True:
                        self.wfile.write(b"\0" * 65536)

            def log_message(self, *args):  # quiet
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def server(tmp_path: Path):
    www = tmp_path / "www"
    www.mkdir()
    with Server(www) as running:
        yield running


@pytest.fixture
def upstream(server: Server, tmp_path: Path) -> dict:
    """An archive source whose archive the loopback server serves."""
    sha256 = make_tar(tmp_path / "www" / "lib-1.0.tar.gz", ARCHIVE_FILES)
    return {
        "kind": "archive",
        "name": "lib",
        "url": f"{server.base}/lib-1.0.tar.gz",
        "sha256": sha256,
        "licence": "MIT",
        "files": ["src/*.c"],
        "includes": ["include"],
        "compilers": ["clang-22"],
    }


def build(tmp_path: Path, recipe: dict | str | bytes, capsys, monkeypatch, *more: str) -> tuple[int, str]:
    """``programl dataset build --recipe`` of ``recipe`` (an object, or the file's text or bytes) into a fresh OUT;
    (exit code, standard error)."""
    monkeypatch.setitem(cli.COMMANDS, "dataset", "programl.cli.dataset")
    path = tmp_path / "recipe.json"
    if isinstance(recipe, bytes):
        path.write_bytes(recipe)
    else:
        path.write_text(recipe if isinstance(recipe, str) else json.dumps(recipe))
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    code = cli.main(["dataset", "build", "--recipe", str(path), "--data", str(data), str(out), "-j", "1", *more])
    return code, capsys.readouterr().err


def assert_one_line_refusal(code: int, err: str, *words: str, file: str = "recipe.json") -> None:
    """A non-zero exit and one line that names ``file`` (the recipe, or the download or archive refused)."""
    assert code != 0, err
    lines = [line for line in err.splitlines() if not line.startswith("programl dataset build: downloading ")]
    assert len(lines) == 1, err  # one line (after the note of a download begun), no traceback
    assert "Traceback" not in err and file in err, err
    for word in words:
        assert word in err, err


def nothing_in(directory: Path) -> bool:
    """``directory`` is missing or empty (OUT, made by the command line before it reads the recipe)."""
    return not directory.exists() or not any(directory.iterdir())


# ----------------------------------------------------------------------------------------------------------------
# Paths: nothing is written outside --data/downloads (nor read outside --data)


def test_a_cache_path_outside_downloads_is_refused_before_any_download(
    upstream: dict, server: Server, tmp_path: Path, capsys, monkeypatch
) -> None:
    """A recipe whose download cache is an absolute path, climbs out with ``..`` or is anywhere but a file in
    ``<data>/downloads/`` would have its own bytes renamed over that file (a shell start-up file): refused, no
    request made, the file unchanged."""
    marker = tmp_path / "profile"
    marker.write_text("the user's own file\n")
    (tmp_path / "www" / "profile").write_bytes((tmp_path / "www" / "lib-1.0.tar.gz").read_bytes())
    for path in (
        str(marker),
        "../profile",
        "downloads/../../profile",
        "downloads/./lib.tar.gz",
        "downloads//lib.tar.gz",
        "downloads/",
        "downloads",
        "lib-1.0.tar.gz",
        "poj104/poj104.tar.xz",
        "downloads\\..\\..\\profile",
        "downloads/lib\n.tar.gz",
    ):
        code, err = build(tmp_path, {"sources": [{**upstream, "path": path}]}, capsys, monkeypatch)
        assert_one_line_refusal(code, err, "'path'")
        assert marker.read_text() == "the user's own file\n"
    assert server.requests == []  # refused before any download
    assert not (tmp_path / "data" / "downloads").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "data",
        "profile",
        "recipe.json",
        "www",
    ]  # no OUT either: the recipe is read first
    assert nothing_in(tmp_path / "out") and nothing_in(tmp_path / "data")


def test_a_url_that_names_no_file_is_refused(upstream: dict, server: Server, tmp_path, capsys, monkeypatch) -> None:
    for url in (f"{server.base}/", f"{server.base}/..", f"{server.base}/a/.", f"{server.base}/.hidden"):
        code, err = build(tmp_path, {"sources": [{**upstream, "url": url}]}, capsys, monkeypatch)
        assert_one_line_refusal(code, err, "give 'path'")
    assert server.requests == []


@pytest.mark.parametrize("kind", ["poj104", "devmap", "files"])
def test_paths_of_the_other_kinds_stay_inside_data(kind: str, tmp_path: Path, capsys, monkeypatch) -> None:
    outside = tmp_path / "outside"
    (outside / "src").mkdir(parents=True)
    (outside / "src" / "a.c").write_text("int f(void) { return 1; }\n")
    for path in (str(outside / "src"), "../outside/src", "src/../../outside/src", "./src", "downloads/evil.tar.xz"):
        code, err = build(tmp_path, {"sources": [{"kind": kind, "path": path}]}, capsys, monkeypatch)
        assert_one_line_refusal(code, err, "'path'")
    assert nothing_in(tmp_path / "out")


def test_includes_and_globs_stay_inside_the_tree(upstream: dict, server: Server, tmp_path, capsys, monkeypatch) -> None:
    for bad in (
        {"includes": ["/etc"]},
        {"includes": ["../../.."]},
        {"includes": ["include/../.."]},
        {"includes": ["./include"]},
        {"files": ["/home/*/*.c"]},
        {"files": ["../*.c"]},
        {"exclude": ["../x"]},
    ):
        code, err = build(tmp_path, {"sources": [{**upstream, **bad}]}, capsys, monkeypatch)
        assert_one_line_refusal(code, err, f"'{next(iter(bad))}'")
    assert server.requests == []


# ----------------------------------------------------------------------------------------------------------------
# Flags: a recipe runs no code of its sender


@pytest.fixture
def plugin(tmp_path: Path) -> tuple[Path, Path]:
    """(a shared object that creates ``marker`` when it is loaded, marker); loading it really creates the marker."""
    if not HAVE_GCC:
        pytest.skip("gcc is not installed (it builds the test's shared object)")
    marker = tmp_path / "plugin-ran"
    source = tmp_path / "plugin.c"
    source.write_text(
        "#include <stdio.h>\n"
        "__attribute__((constructor)) static void loaded(void) {\n"
        f'  FILE *f = fopen("{marker}", "w");\n'
        '  if (f) { fputs("the sender\'s code ran\\n", f); fclose(f); }\n'
        "}\n"
    )
    library = tmp_path / "plugin.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True, capture_output=True)
    ctypes.CDLL(str(library))  # the control: loading it runs its code
    assert marker.is_file()
    marker.unlink()
    return library, marker


def test_plugin_flags_from_a_recipe_never_load(
    plugin: tuple[Path, Path], upstream: dict, server: Server, tmp_path: Path, capsys, monkeypatch
) -> None:
    """``-fplugin=``, ``-Xclang -load``, ``-fpass-plugin=``, ``-mllvm -load`` ... in a recipe's flags, settings or
    defines are refused before anything is compiled: the shared object is never loaded."""
    library, marker = plugin
    (tmp_path / "data" / "src").mkdir(parents=True)
    (tmp_path / "data" / "src" / "a.c").write_text("int f(void) { return 1; }\n")
    so = str(library)
    hostile_flags = [
        [f"-fplugin={so}"],
        ["-Xclang", "-load", "-Xclang", so],
        [f"-Xclang=-load={so}"],
        [f"-fpass-plugin={so}"],
        ["-mllvm", f"-load={so}"],
        [f"-mllvm=-load={so}"],
        ["-Xclang", "-add-plugin", "-Xclang", "x"],
        [f"-B{library.parent}"],
        [f"--config={tmp_path / 'x.cfg'}"],
        [f"-Wp,-load,{so}"],
        [f"-Wl,{so}"],
        [f"@{tmp_path / 'flags.txt'}"],
        [f"-specs={tmp_path / 'x.specs'}"],
    ]
    (tmp_path / "flags.txt").write_text(f"-fplugin={so}\n")
    for flags in hostile_flags:
        for recipe in (
            {"sources": [{"kind": "files", "path": "src", "flags": flags}]},
            {"sources": [{"kind": "files", "path": "src", "settings": [["-O0"], flags]}]},
            {"sources": [{"kind": "devmap", "path": "devmap", "settings": [flags]}]},
            {"sources": [{**upstream, "flags": flags}]},
            {"sources": [{**upstream, "settings": [flags]}]},
        ):
            code, err = build(tmp_path, recipe, capsys, monkeypatch)
            assert_one_line_refusal(code, err)
            assert "load or run other code" in err or "not one a recipe may give" in err, err
    for define in (f"X -fplugin={so}", f"X\n-fplugin={so}", "X=1 -Xclang", "-fplugin=x.so"):
        code, err = build(tmp_path, {"sources": [{**upstream, "defines": [define]}]}, capsys, monkeypatch)
        assert_one_line_refusal(code, err, "'defines'")
    assert not marker.exists()  # nothing loaded the sender's shared object
    assert server.requests == []  # nor was anything downloaded
    assert nothing_in(tmp_path / "out")


@pytest.mark.parametrize(
    "flags",
    [
        ["-o", "/tmp/x"], ["-E"], ["-fsyntax-only"], ["-emit-ast"], ["-save-temps"], ["--save-temps"], ["-MD"],
        ["-ftime-trace=/tmp"], ["-fmodules"], ["-fmodules-cache-path=/tmp/m"], ["-fcrash-diagnostics-dir=/tmp"],
        ["-gen-reproducer=always"], ["-gen-cdb-fragment-path", "/tmp"], ["-serialize-diagnostics", "/tmp/x"],
        ["-fsave-optimization-record"], ["-foptimization-record-file=/tmp/x"], ["-module-dir", "/tmp"],
        ["-J/tmp"], ["-fembed-offload-object=/etc/passwd"], ["-include", "/etc/passwd"], ["-I/etc"], ["-D"],
        ["-x", "c"], ["a.c"], ["-"], ["--"], ["-ccc-gcc-name", "x"], ["--driver-mode=cl"], ["-cc1"],
        ["-fuse-ld=x"], ["-resource-dir=/tmp"], ["--gcc-toolchain=/tmp"], ["-wrapper", "x"], ["-Xpreprocessor", "x"],
        ["-fplugin-arg-x-y"], ["-plugin", "x"], ["-load", "x"], ["-O2 -fplugin=x.so"], ["-O2\n"], [""], [2], "-O2",
    ],
)  # fmt: skip
def test_refused_flags(flags) -> None:
    """What the command line refuses (:func:`check_flags`), what loads code or writes files, and anything but one
    argument of a known family, each one line."""
    with pytest.raises(ProgramlError) as info:
        check_recipe_flags(flags, "'flags'")
    assert "\n" not in str(info.value) and str(info.value).startswith("'flags'")


def test_the_flags_recipes_need_pass() -> None:
    flags = [
        "-O0", "-O2", "-Os", "-Ofast", "-DN=4", "-DZSTD_MULTITHREAD", "-DF(a,b)=a", "-UNDEBUG", "-std=c99",
        "-std=gnu++17", "-ffast-math", "-fno-strict-aliasing", "-ffixed-form", "-Wall", "-Wno-error=int-conversion",
        "-march=x86-64", "-mavx2", "-g", "-gdwarf-4", "-cl-std=CL2.0", "--target=spir64", "--cuda-gpu-arch=sm_80",
        "-w", "-pedantic", "-cpp",
    ]  # fmt: skip
    assert check_recipe_flags(flags, "'flags'") == tuple(flags)
    for recipe in ("deepdataflow22", "deepdataflow22-wide"):
        load_recipe(REPO / "datasets" / recipe / "recipe.json")


# ----------------------------------------------------------------------------------------------------------------
# Limits: no download or unpack fills the disk


def test_only_http_urls_and_no_device_is_read(upstream: dict, server: Server, tmp_path, capsys, monkeypatch) -> None:
    for url in ("file:///dev/zero", "ftp://127.0.0.1/x.tar.gz", "data:,abc", "/etc/passwd", "http:///x.tar.gz"):
        code, err = build(
            tmp_path, {"sources": [{**upstream, "url": url, "path": "downloads/x.tgz"}]}, capsys, monkeypatch
        )
        assert_one_line_refusal(code, err, "'url'", "http")
    assert not (tmp_path / "data" / "downloads").exists()
    # the download helper itself reads a file:// URL only when it names a regular file
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for url in ("file:///dev/zero", fifo.as_uri(), tmp_path.as_uri(), "ftp://127.0.0.1/x", "data:,abc"):
        with pytest.raises(ProgramlError) as info:
            download_url(url, tmp_path / "got" / "x.bin")
        assert "\n" not in str(info.value) and "could not download" in str(info.value)
    assert not (tmp_path / "got").exists() or list((tmp_path / "got").iterdir()) == []


def test_a_download_stops_at_the_stated_size_or_the_cap(
    upstream: dict, server: Server, tmp_path: Path, capsys, monkeypatch
) -> None:
    size = (tmp_path / "www" / "lib-1.0.tar.gz").stat().st_size
    code, err = build(tmp_path, {"sources": [{**upstream, "size": size - 1}]}, capsys, monkeypatch)
    assert_one_line_refusal(code, err, f"more than {size - 1:,} bytes", file=upstream["url"])
    assert list((tmp_path / "data" / "downloads").iterdir()) == []  # nothing kept, no partial file
    # an endless stream without a Content-Length (a server's /dev/zero) stops at the cap
    with pytest.raises(ProgramlError) as info:
        download_url(f"{server.base}/endless", tmp_path / "got" / "zero.bin", max_bytes=3 << 20)
    assert "\n" not in str(info.value) and f"more than {3 << 20:,} bytes" in str(info.value)
    assert list((tmp_path / "got").iterdir()) == []
    source = {**upstream, "url": f"{server.base}/endless", "path": "downloads/zero.tar.gz", "size": 1 << 20}
    code, err = build(tmp_path, {"sources": [source]}, capsys, monkeypatch)
    assert_one_line_refusal(code, err, f"more than {1 << 20:,} bytes", file=source["url"])
    assert list((tmp_path / "data" / "downloads").iterdir()) == []


def test_an_archive_unpacks_only_what_compiling_reads(upstream: dict, tmp_path: Path) -> None:
    inputs = archives.archive_inputs(upstream, tmp_path / "data", tmp_path / "work")
    assert [i.name for i in inputs] == ["lib.src_sum.clang22-O0.c"]
    tree = Path(inputs[0].path).parents[1]
    unpacked = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file())
    # sources, headers and files without a suffix, anywhere; no documents, no data
    assert unpacked == ["include/config", "include/lib.h", "src/common.inc", "src/sum.c"]
    assert tree.name == "lib-1.0"


def test_the_top_folder_is_found_among_all_members(tmp_path: Path) -> None:
    """A README beside ``src/`` (not unpacked) still makes the root the tree the globs are relative to."""
    archive = tmp_path / "a.tar.gz"
    make_tar(archive, {"README": "x\n", "src/a.c": "int a;\n"})
    tree = archives.unpack_archive(archive, tmp_path / "u", archives.keep_member)
    assert tree == tmp_path / "u" and archives.archive_files(tree, ["src/*.c"]) == ["src/a.c"]
    assert archives.unpack_archive(archive, tmp_path / "u", archives.keep_member) == tree  # kept, same tree


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_unpacking_stops_at_the_caps(kind: str, tmp_path: Path) -> None:
    files = {f"lib/src/f{i}.c": "int x;\n" for i in range(30)} | {"lib/src/big.c": "/*" + " " * (2 << 20) + "*/\n"}
    archive = tmp_path / f"a.{'tar.gz' if kind == 'tar' else 'zip'}"
    if kind == "tar":
        make_tar(archive, files)
    else:
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            for name, text in files.items():
                z.writestr(name, text)
    for caps, message in (
        ({"max_bytes": 1 << 20}, f"more than {1 << 20:,} bytes"),
        ({"max_members": 10}, "more than 10 members"),
    ):
        with pytest.raises(ProgramlError) as info:
            archives.unpack_archive(archive, tmp_path / "u", archives.keep_member, **caps)
        assert "\n" not in str(info.value) and message in str(info.value)
        assert sorted(p.name for p in tmp_path.iterdir()) == [archive.name]  # nothing unpacked, no scratch folder


def test_a_bomb_through_the_command_line_is_one_line(
    upstream: dict, server: Server, tmp_path: Path, capsys, monkeypatch
) -> None:
    """Past the cap on unpacked bytes (made small here, as a bomb would pass the real one) the build stops."""
    files = {"lib-1.0/src/sum.c": "int x;\n", "lib-1.0/src/huge.h": "\n" * (3 << 20)}
    sha256 = make_tar(tmp_path / "www" / "bomb.tar.gz", files)
    monkeypatch.setattr(archives, "MAX_UNPACKED_BYTES", 1 << 20)
    source = {**upstream, "url": f"{server.base}/bomb.tar.gz", "sha256": sha256}
    code, err = build(tmp_path, {"sources": [source]}, capsys, monkeypatch)
    assert_one_line_refusal(code, err, f"more than {1 << 20:,} bytes", file="bomb.tar.gz")
    archives_dir = tmp_path / "out" / "sources" / "archives"
    assert not archives_dir.exists() or list(archives_dir.iterdir()) == []


# ----------------------------------------------------------------------------------------------------------------
# Types: every field of the wrong JSON type is one line


@pytest.mark.parametrize(
    "recipe",
    [
        {"name": 3, "sources": [{"kind": "files", "path": "src"}]},
        {"seed": "204", "sources": [{"kind": "files", "path": "src"}]},
        {"seed": True, "sources": [{"kind": "files", "path": "src"}]},
        {"seed": -1, "sources": [{"kind": "files", "path": "src"}]},
        {"max_roots": -1, "sources": [{"kind": "files", "path": "src"}]},
        {"max_roots": 2.5, "sources": [{"kind": "files", "path": "src"}]},
        {"analyses": "reachability", "sources": [{"kind": "files", "path": "src"}]},
        {"analyses": ["reachability", "exfiltrate"], "sources": [{"kind": "files", "path": "src"}]},
        {"colour": 1, "sources": [{"kind": "files", "path": "src"}]},
        {"sources": []},
        {"sources": [1]},
        {"sources": [{"kind": ["files"], "path": "src"}]},
        {"sources": [{"kind": "shell", "path": "src"}]},
        {"sources": [{"kind": "files", "path": 5}]},
        {"sources": [{"kind": "files"}]},
        {"sources": [{"kind": "files", "path": "src", "flags": "-O2"}]},
        {"sources": [{"kind": "files", "path": "src", "settings": ["-O2"]}]},
        {"sources": [{"kind": "files", "path": "src", "settings": "-O2"}]},
        {"sources": [{"kind": "files", "path": "src", "settings": []}]},
        {"sources": [{"kind": "files", "path": "src", "colour": 1}]},
        {"sources": [{"kind": "poj104", "path": "poj104", "sha256": 5}]},
        {"sources": [{"kind": "poj104", "path": "poj104", "url": ["x"]}]},
        {"sources": [{"kind": "devmap", "path": "devmap", "notes": {"a": 1}}]},
    ],
)
def test_wrong_types_in_a_recipe_are_one_line(recipe: dict, tmp_path: Path, capsys, monkeypatch) -> None:
    (tmp_path / "data" / "src").mkdir(parents=True)
    (tmp_path / "data" / "src" / "a.c").write_text("int f(void) { return 1; }\n")
    assert_one_line_refusal(*build(tmp_path, recipe, capsys, monkeypatch))
    assert nothing_in(tmp_path / "out")


@pytest.mark.parametrize(
    "bad",
    [
        {"defines": {"A": 1}}, {"defines": "A"}, {"defines": [1]}, {"flags": "-O2"}, {"flags": {"-O2": 1}},
        {"includes": "include"}, {"includes": [None]}, {"compilers": "clang-22"}, {"compilers": ["gcc"]},
        {"files": "src/*.c"}, {"files": []}, {"exclude": 3}, {"settings": [["-O2"], "-O0"]}, {"group_depth": "2"},
        {"group_depth": -1}, {"max_files": 0}, {"max_files": True}, {"size": "big"}, {"size": 0}, {"licence": 5},
        {"licence": ""}, {"url": 5}, {"sha256": "ABC"}, {"name": "../x"}, {"name": "lib\n"}, {"path": 3},
        {"provenance": []}, {"homepage": 1},
    ],
)  # fmt: skip
def test_wrong_types_in_an_archive_source_are_one_line(
    bad: dict, upstream: dict, server: Server, tmp_path: Path, capsys, monkeypatch
) -> None:
    assert_one_line_refusal(*build(tmp_path, {"sources": [{**upstream, **bad}]}, capsys, monkeypatch))
    assert server.requests == []


@pytest.mark.parametrize(
    "text",
    ["not json", "[1, 2]", '{"sources": 3}', "[" * 100_000 + "]" * 100_000, '{"sources": [], "x": NaN}'],
)
def test_unreadable_recipes_are_one_line(text: str, tmp_path: Path, capsys, monkeypatch) -> None:
    assert_one_line_refusal(*build(tmp_path, text, capsys, monkeypatch))


def test_binary_and_huge_recipes_are_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    for data, message in (
        (b"\xff\xfe\x00{", "not a readable recipe"),
        (b'{"sources": [], "description": "' + b"x" * (2 << 20) + b'"}', "larger than"),
    ):
        assert_one_line_refusal(*build(tmp_path, data, capsys, monkeypatch), message)


def test_a_recipe_given_as_a_dict_is_checked_too(upstream: dict, server: Server, tmp_path: Path) -> None:
    """The library's :func:`recipe_inputs` (a dict, e.g. from ``programl.datasets``) checks the whole recipe before
    its first source is read: a bad second source stops the download of the first."""
    recipe = {"sources": [upstream, {**upstream, "name": "evil", "flags": ["-fplugin=x.so"]}]}
    with pytest.raises(ProgramlError, match="load or run other code"):
        recipe_inputs(recipe, tmp_path / "data", tmp_path / "work", progress=False)
    assert server.requests == [] and not (tmp_path / "data").exists()
