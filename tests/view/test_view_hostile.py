"""``programl view`` on hostile inputs: the page is made to be shared, so a received ``.ll`` (or a ``#line "..."`` in
a C file) whose debug information names a file elsewhere on the machine must not copy that file's lines into it; a
received model directory must not hang the command; hand-numbered debug metadata shows the right lines; without
torch, a model asked of the API says which extra to install.

Each hostile file holds :data:`MARKER`: the page must not.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from programl.cli import main
from tests.conftest import REPO_ROOT

MARKER = "PROGRAML-SECRET-7f3a9c"
#: The lines of ``src.c`` that the instructions of :data:`IR` point at (2, 3, 4).
SOURCE = "int f(int x) {\n  int y = x + 1;\n  return y * 2;\n}\n"
SECRET = f"first line\nsecret = {MARKER}\nagain {MARKER}\n{MARKER} last\n"

#: A function of three instructions at lines 2, 3 and 4 of one file; its metadata numbered by hand (not as LLVM
#: prints the module: LLVM numbers them !0 ... !8).
IR = """\
source_filename = "src.c"

define i32 @f(i32 %x) !dbg !40 {
  %y = add i32 %x, 1, !dbg !31
  %z = mul i32 %y, 2, !dbg !32
  ret i32 %z, !dbg !33
}

!llvm.dbg.cu = !{!50}
!llvm.module.flags = !{!60}

!60 = !{i32 2, !"Debug Info Version", i32 3}
!50 = distinct !DICompileUnit(language: DW_LANG_C11, file: !45, producer: "by hand", isOptimized: false, \
runtimeVersion: 0, emissionKind: FullDebug)
!45 = !DIFile(filename: "FILENAME", directory: "DIRECTORY")
!40 = distinct !DISubprogram(name: "f", scope: !45, file: !45, line: 1, type: !41, scopeLine: 1, \
spFlags: DISPFlagDefinition, unit: !50)
!41 = !DISubroutineType(types: !{})
!31 = !DILocation(line: 2, column: 3, scope: !40)
!32 = !DILocation(line: 3, column: 3, scope: !40)
!33 = !DILocation(line: 4, column: 3, scope: !40)
"""


def write_ir(directory: Path, filename: str, file_directory: str = "", stem: str = "prog") -> Path:
    """``directory/<stem>.ll``: :data:`IR` whose debug information names ``filename`` (in ``file_directory``)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem}.ll"
    path.write_text(IR.replace("FILENAME", filename).replace("DIRECTORY", file_directory))
    return path


@pytest.fixture
def secret(tmp_path) -> Path:
    """A private file outside the input's directory."""
    path = tmp_path / "private" / "key.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def page_of(path: Path, **options) -> str:
    from programl.view import read_input, to_html

    graph, locations = read_input(str(path), **options)
    return to_html(graph, locations=locations)


def test_hand_numbered_metadata_shows_the_right_lines(tmp_path) -> None:
    """The lookup used the input's metadata numbers, the graph has LLVM's (!6, !7, !8 here): no source line at all
    (or, numbered otherwise, wrong ones)."""
    from programl.view import read_input

    (tmp_path / "src.c").write_text(SOURCE)
    graph, locations = read_input(str(write_ir(tmp_path, "src.c")))
    lines = {graph.node[i].text: line for i, (_, line, _) in locations.nodes.items()}
    assert lines == {"add": 2, "mul": 3, "ret": 4}
    assert locations.files == ["src.c"] and locations.not_embedded == {}
    assert locations.lines == [{2: "  int y = x + 1;", 3: "  return y * 2;", 4: "}"}]


def test_a_file_outside_the_input_directory_is_not_embedded(tmp_path, secret) -> None:
    from programl.view import read_input

    path = write_ir(tmp_path / "input", str(secret))
    graph, locations = read_input(str(path))
    assert locations.files == [str(secret)] and len(locations.nodes) == 3  # where it is, without its lines
    assert locations.lines == [{}]
    assert locations.not_embedded == {str(secret): "outside the input's directory"}
    assert MARKER not in page_of(path)
    # a source root the caller names allows it
    _, allowed = read_input(str(path), source_root=secret.parent)
    assert allowed.lines == [{2: f"secret = {MARKER}", 3: f"again {MARKER}", 4: f"{MARKER} last"}]
    assert allowed.not_embedded == {}
    assert MARKER in page_of(path, source_root=[str(secret.parent)])


def _fifo(root: Path) -> str:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    os.mkfifo(root / "fifo.c")
    return "fifo.c"


def _link_out(root: Path) -> str:
    (root / "link.c").symlink_to(root.parent / "private" / "key.txt")
    return "link.c"


def _link_to_a_directory_out(root: Path) -> str:
    (root / "sub").symlink_to(root.parent / "private", target_is_directory=True)
    return "sub/key.txt"


def _hidden(root: Path) -> str:
    (root / ".ssh").mkdir()
    (root / ".ssh" / "id_rsa").write_text(SECRET)
    return ".ssh/id_rsa"


def _big(root: Path) -> str:
    from programl.view.debuginfo import MAX_SOURCE_BYTES

    with open(root / "big.c", "w") as file:
        file.write(SECRET)
        file.truncate(MAX_SOURCE_BYTES + 1)  # sparse: no disk space taken
    return "big.c"


def _up(root: Path) -> str:
    return "../private/key.txt"


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (_fifo, "not a regular file"),
        (_link_out, "a symbolic link out of the allowed directories"),
        (_link_to_a_directory_out, "a symbolic link out of the allowed directories"),
        (_hidden, "a hidden file or directory"),
        (_big, "larger than 16 MiB"),
        (_up, "outside the input's directory"),
    ],
    ids=["fifo", "symlink", "symlinked directory", "hidden", "over the size cap", "dot-dot"],
)
def test_files_beside_the_input_that_are_not_source_files_are_not_read(tmp_path, secret, make, why) -> None:
    """A FIFO was opened for reading (and blocked for ever); a link was followed out of the directory; a hidden
    file, a huge file and a ``..`` path were read."""
    from programl.view import read_input

    root = tmp_path / "input"
    root.mkdir()
    name = make(root)
    path = write_ir(root, name, str(root))
    _, locations = read_input(str(path))
    assert locations.not_embedded == {str(root / name): why} and locations.lines == [{}]
    assert MARKER not in page_of(path)


def test_a_link_within_the_directory_is_followed(tmp_path) -> None:
    from programl.view import read_input

    root = tmp_path / "input"
    root.mkdir()
    (root / "src.c").write_text(SOURCE)
    (root / "alias.c").symlink_to(root / "src.c")
    _, locations = read_input(str(write_ir(root, "alias.c", str(root))))
    assert locations.lines == [{2: "  int y = x + 1;", 3: "  return y * 2;", 4: "}"}]


@pytest.mark.parametrize("name", ["/proc/self/environ", "/sys/kernel/mm/transparent_hugepage/enabled", "/dev/zero"])
def test_system_files_are_never_read(tmp_path, name) -> None:
    """Not even below a source root that holds them (``/``)."""
    from programl.view import read_input

    if not os.path.exists(name):
        pytest.skip(f"{name} does not exist here")
    _, locations = read_input(str(write_ir(tmp_path, name)), source_root="/")
    assert locations.not_embedded == {name: f"under /{name.split('/')[1]}"} and locations.lines == [{}]


def test_the_api_reads_nothing_without_a_directory_to_read_from(tmp_path) -> None:
    """``source_locations`` without the input's path reads only below the source roots it is given."""
    import programl
    from programl.view import source_locations

    (tmp_path / "src.c").write_text(SOURCE)
    ir = IR.replace("FILENAME", "src.c").replace("DIRECTORY", str(tmp_path))
    graph = programl.from_llvm_ir(ir)
    locations = source_locations(ir, graph)
    assert locations.lines == [{}] and locations.not_embedded == {str(tmp_path / "src.c"): "no source root is allowed"}
    assert source_locations(ir, graph, source_root=tmp_path).lines[0][3] == "  return y * 2;"


def test_cli_names_the_files_not_embedded_on_one_line(tmp_path, secret, capsys, monkeypatch) -> None:
    """The command embeds neither the private file nor its worker's environment, says so on one line of stderr (a
    file name with a line break included), and embeds the private file under ``--source-root``."""
    monkeypatch.setenv("PROGRAML_TEST_SECRET", MARKER)  # in the environment of the worker that reads the files
    root = tmp_path / "input"
    named = {"a": str(secret), "b": "/proc/self/environ", "c": "line\\0Abreak.c"}
    inputs = [write_ir(root, filename, stem=stem) for stem, filename in named.items()]
    out = tmp_path / "pages"
    assert main(["view", *map(str, inputs), "-o", str(out), "-q", "-j", "1"]) == 0
    advice = "--source-root DIR allows the files below DIR"
    assert sorted(capsys.readouterr().err.splitlines()) == [
        f"programl view: {inputs[0]}: source lines not embedded from {secret} (outside the input's directory); {advice}",
        f"programl view: {inputs[1]}: source lines not embedded from /proc/self/environ (under /proc); {advice}",
        f"programl view: {inputs[2]}: source lines not embedded from 'line\\nbreak.c' (not found); {advice}",
    ]
    assert sorted(page.name for page in out.iterdir()) == ["a.html", "b.html", "c.html"]
    for page in out.iterdir():
        assert MARKER not in page.read_text()
    allowed = tmp_path / "allowed"
    assert main(["view", str(inputs[0]), "-o", str(allowed), "-q", "--source-root", str(secret.parent)]) == 0
    assert capsys.readouterr().err == ""
    assert MARKER in (allowed / "a.html").read_text()
    assert main(["view", str(inputs[0]), "-o", str(allowed), "--source-root", str(secret)]) == 2
    assert f"--source-root {secret}: not a directory" in capsys.readouterr().err


def test_line_directive_in_a_c_file_names_a_private_file(tmp_path, secret, clang22) -> None:
    """``#line 1 "/elsewhere/key.txt"`` makes the debug information of a C file name any file."""
    from programl.view import read_input

    source = tmp_path / "input" / "prog.c"
    source.parent.mkdir()
    source.write_text(f'#line 1 "{secret}"\n{SOURCE}')
    graph, locations = read_input(str(source))
    assert locations.not_embedded == {str(secret): "outside the input's directory"}
    assert MARKER not in page_of(source)
    assert MARKER in page_of(source, source_root=secret.parent)


def tiled_graph(path: Path, copies: int) -> Path:
    """``copies`` copies of examples/dot_product.ll's graph side by side, saved at ``path``."""
    import programl
    from programl.io import write_graph
    from programl.proto import ProgramGraph

    graph = programl.from_llvm_ir((REPO_ROOT / "examples" / "dot_product.ll").read_text())
    big = ProgramGraph()
    big.CopyFrom(graph)
    n = len(graph.node)
    for copy in range(1, copies):
        big.node.extend(graph.node)
        for e in graph.edge:
            big.edge.add(flow=e.flow, source=e.source + copy * n, target=e.target + copy * n, position=e.position)
    write_graph(str(path), big)
    return path


@pytest.mark.parametrize("steps", [10_000, 10**12])
def test_a_model_that_runs_for_ever_times_out(tmp_path, capsys, steps) -> None:
    """A received model directory whose model.json asks for an enormous number of steps hung ``programl view
    --analysis``: its model ran in the command's own process, without ``--timeout``. Now the input fails on one
    line within the timeout and gets no page (or the model is refused when it is loaded, on one line: model.json
    caps its steps)."""
    pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    from programl.pretrained.hub import PRETRAINED_DIR

    model = tmp_path / "model"
    shutil.copytree(PRETRAINED_DIR / "reachability-step-free", model)
    metadata = json.loads((model / "model.json").read_text())
    metadata["inference"].update(min_steps=steps, max_steps=steps)
    (model / "model.json").write_text(json.dumps(metadata))
    graph = tiled_graph(tmp_path / "big.ProgramGraph.pb", 100)  # 3,800 nodes, 26 roots: hours of 10,000 steps
    out = tmp_path / "pages"
    args = ["view", str(graph), "--analysis", "reachability", "--model", str(model), "--timeout", "5", "-o", str(out)]
    assert main([*args, "-q", "-j", "1"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert not (out / "big.html").exists()
    if steps > 10_000 and err[0].startswith("programl view: error: "):  # refused as it is loaded
        assert len(err) == 1 and re.fullmatch(r"programl view: error: .*model\.json.*\b10,000\b.*", err[0]), err
        return
    assert err[0] == f"{graph}: error: timed out after 5 s"
    assert re.fullmatch(r"programl view: 0 pages, 1 failed in [\d.]+ s", err[1]) and len(err) == 2


def test_the_model_step_runs_under_max_memory(tmp_path, capsys) -> None:
    """The model's step runs in ``programl predict``'s worker, under ``--max-memory`` (it ran in the command's own
    process, unlimited): a limit that reading a saved graph fits in, and loading torch does not, fails the input on
    one line and writes no page."""
    pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    import programl
    from programl.io import write_graph

    saved = tmp_path / "dot.ProgramGraph.pb"
    write_graph(str(saved), programl.from_llvm_ir((REPO_ROOT / "examples" / "dot_product.ll").read_text()))
    out = tmp_path / "pages"
    args = ["view", str(saved), "--analysis", "reachability", "--model", "reachability", "-o", str(out), "-j", "1"]
    assert main([*args, "--max-memory", "200M", "-q"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith(f"{saved}: error: ") and not (out / "dot.html").exists()
    assert re.search(r"out of memory|failed to map segment", err[0]), err[0]  # as torch's loader says it
    # the same limit reads the graph: without a model, the page is written
    assert (
        main(
            [
                "view",
                str(saved),
                "--analysis",
                "reachability",
                "--no-model",
                "-o",
                str(out),
                "-j",
                "1",
                "--max-memory",
                "200M",
                "-q",
            ]
        )
        == 0
    )
    assert (out / "dot.html").is_file()


def test_a_model_without_torch_says_which_extra_to_install(tmp_path) -> None:
    """``programl.view.to_html(model=...)`` raised a bare ``No module named 'torch'``."""
    from tests.cli.test_without_torch import ADVICE, python

    code = """\
import programl
from programl.view import to_html
graph = programl.from_llvm_ir(open(sys.argv[1]).read())
assert "<!DOCTYPE html>" in to_html(graph, analysis="reachability")  # the exact labels need no torch
try:
    to_html(graph, analysis="reachability", model="reachability")
except ModuleNotFoundError as error:
    print(error)
"""
    result = python(code, str(REPO_ROOT / "examples" / "dot_product.ll"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"programl.view with a model {ADVICE.format('')}\n"
