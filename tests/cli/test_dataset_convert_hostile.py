"""``programl dataset convert`` on hostile label files and data sets it cannot write: each bad file is one line naming
it (the others are converted; exit code 1), nothing is allocated by what a file merely declares, no FIFO is waited on,
a run killed with ``kill -9`` leaves nothing its rerun does not clean, and a data set that cannot be written is said
to be so, with the path and the operating system's reason (docs/security.md)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import programl.cli as cli
from programl.data.deepdataflow import Layout
from programl.data.deepdataflow.labels import decode_compact, encode_compact, read_labels
from programl.dataflow import AnalysisResult, labels_to_bytes
from tests.data._ddf import tiny_dataset
from tests.data.test_dataflow_labels import billions_of_nodes

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "dataset", "programl.cli.dataset")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The same small data set built in either form: what a conversion must give, byte for byte."""
    return {form: tiny_dataset(tmp_path_factory.mktemp(form), label_format=form) for form in ("compact", "protobuf")}


def copy_of(built: dict[str, Path], form: str, tmp_path: Path) -> Path:
    root = tmp_path / "ddf"
    shutil.copytree(built[form], root, symlinks=True)
    return root


def convert(root: Path, form: str, capsys, *extra) -> tuple[int, list[str]]:
    code = cli.main(["dataset", "convert", str(root), "--label-format", form, *extra])
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    return code, captured.err.splitlines()


def labels(root: Path) -> dict[str, bytes]:
    """Every file under labels/, by path, and what is not a regular file by kind."""
    out = {}
    for path in sorted((root / "labels").rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink() or not path.is_file():
            out[name] = b"<symlink>" if path.is_symlink() else b"<dir>" if path.is_dir() else b"<special>"
        else:
            out[name] = path.read_bytes()
    return out


def converted_except(root: Path, reference: Path, victims: set[str]) -> None:
    """Every graph but ``victims`` has exactly the label files of the ``reference`` build."""

    def others(files: dict[str, bytes]) -> dict[str, bytes]:
        return {k: v for k, v in files.items() if Path(k).name.split(".")[0] not in victims and "." in Path(k).name}

    assert others(labels(root)) == others(labels(reference))


def with_nodes(result: AnalysisResult, extra: int) -> AnalysisResult:
    """``result`` with ``extra`` more nodes (all 0)."""
    pad = np.zeros((len(result), extra), dtype=result.labels.dtype)
    return AnalysisResult(
        result.analysis, result.roots, np.hstack([result.labels, pad]), result.step_counts, result.active_node_counts
    )


# --------------------------------------------------------------------------------------------------------------
# Sizes: bounded against the graph and the file before anything is allocated


def test_a_file_declaring_billions_of_nodes_is_one_line(built, tmp_path: Path) -> None:
    """1 MB declaring 2 x (2**32 - 1) nodes made the conversion inflate 1 GiB, then fail to allocate 8 GiB with a
    traceback. Run with 1.5 GB of address space (a regression fails with MemoryError instead of swapping): one line,
    the other graphs converted."""
    resource = pytest.importorskip("resource")
    root = copy_of(built, "compact", tmp_path)
    victim = Layout(root).compact_labels("chain2")
    victim.write_bytes(billions_of_nodes())
    hostile = victim.read_bytes()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))

    run = subprocess.run(
        [sys.executable, "-m", "programl", "dataset", "convert", str(root), "--label-format", "protobuf", "-j", "1"],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        cwd=REPO,
    )
    lines = run.stderr.splitlines()
    assert run.returncode == 1 and "Traceback" not in run.stderr and len(lines) == 2, run.stderr
    graph_nodes = len(read_labels(Layout(built["compact"]), "liveness", "chain2").labels[0])
    assert lines[0] == (
        f"chain2: error: LabelFileError: {victim}: not a readable label file (labels of 4,294,967,295 nodes; its "
        f"graph has {graph_nodes})"
    )
    assert lines[1].endswith("; 1 graphs could not be read and were left as they were")
    assert victim.read_bytes() == hostile
    converted_except(root, built["protobuf"], {"chain2"})


@pytest.mark.parametrize("form", ["compact", "protobuf"])
def test_labels_for_more_nodes_than_the_graph_are_one_line(built, tmp_path: Path, capsys, form: str) -> None:
    """Labels of one node more than the graph were converted as they were; now each such file is an error."""
    root = copy_of(built, form, tmp_path)
    layout = Layout(root)
    nodes = read_labels(layout, "liveness", "chain3").num_nodes
    if form == "compact":
        victim = layout.compact_labels("chain3")
        results = decode_compact(victim.read_bytes())
        victim.write_bytes(encode_compact({a: with_nodes(r, 1) for a, r in results.items()}))
    else:
        victim = layout.labels("liveness", "chain3")
        victim.write_bytes(labels_to_bytes(with_nodes(read_labels(layout, "liveness", "chain3"), 1)))
    before = labels(root)
    other = "protobuf" if form == "compact" else "compact"
    code, lines = convert(root, other, capsys)
    assert code == 1 and len(lines) == 2
    assert lines[0] == (
        f"chain3: error: LabelFileError: {victim}: not a readable label file (labels of {nodes + 1} nodes; its graph "
        f"has {nodes})"
    )
    assert lines[1].endswith("; 1 graphs could not be read and were left as they were")
    assert {k: v for k, v in labels(root).items() if "chain3" in k} == {
        k: v for k, v in before.items() if "chain3" in k
    }
    converted_except(root, built[other], {"chain3"})


def test_a_nul_in_a_section_name_or_an_unknown_section_is_one_line(built, tmp_path: Path, capsys) -> None:
    """A section named ``datadep\\0`` was dropped by the conversion without a word; so was one of an analysis it
    does not convert. Both are now errors, and their files are left as they are."""
    root = copy_of(built, "compact", tmp_path)
    layout = Layout(root)
    nul, extra = layout.compact_labels("chain4"), layout.compact_labels("chain6")
    results = decode_compact(nul.read_bytes())
    renamed = {("datadepX" if a == "datadep" else a): r for a, r in results.items()}
    nul.write_bytes(encode_compact(renamed).replace(b"datadepX", b"datadep\0"))
    results = decode_compact(extra.read_bytes())
    extra.write_bytes(encode_compact({**results, "foo": results["liveness"]}))
    before = labels(root)
    code, lines = convert(root, "protobuf", capsys)
    assert code == 1 and len(lines) == 3
    assert lines[0] == (
        f"chain4: error: LabelFileError: {nul}: not a readable label file (section name 'datadep\\x00' is not "
        "printable ASCII)"
    )
    assert lines[1] == (
        f"chain6: error: LabelFileError: {extra}: a section of 'foo', not one of the analyses converted (reachability, "
        "dominance, datadep, liveness, subexpressions); converting would drop it"
    )
    assert lines[2].endswith("; 2 graphs could not be read and were left as they were")
    assert nul.read_bytes() == before[str(nul.relative_to(root))]
    assert extra.read_bytes() == before[str(extra.relative_to(root))]
    converted_except(root, built["protobuf"], {"chain4", "chain6"})


# --------------------------------------------------------------------------------------------------------------
# Files that are not regular files


@pytest.mark.timeout(120)  # (a conversion that waits on the FIFO would hang: this ends it)
def test_a_fifo_a_device_and_a_directory_are_one_line_each(built, tmp_path: Path, capsys) -> None:
    """A FIFO was waited on for ever, ``/dev/zero`` read without end, and a directory taken for a graph with nothing
    to convert (success reported). Each is now an error naming it; the other graphs are converted."""
    root = copy_of(built, "compact", tmp_path)
    layout = Layout(root)
    fifo, device, directory = (layout.compact_labels(n) for n in ("chain2", "chain3", "chain4"))
    for path in (fifo, device, directory):
        path.unlink()
    os.mkfifo(fifo)
    device.symlink_to("/dev/zero")
    directory.mkdir()
    code, lines = convert(root, "protobuf", capsys)
    assert code == 1 and len(lines) == 4
    assert lines[:3] == [
        f"chain2: error: LabelFileError: {fifo}: not a readable label file (a FIFO, not a regular file)",
        f"chain3: error: LabelFileError: {device}: not a readable label file (a character device, not a regular file)",
        f"chain4: error: LabelFileError: {directory}: not a readable label file (a directory, not a regular file)",
    ]
    assert lines[3].endswith("; 3 graphs could not be read and were left as they were")
    assert fifo.is_fifo() and os.readlink(device) == "/dev/zero" and directory.is_dir()
    converted_except(root, built["protobuf"], {"chain2", "chain3", "chain4"})


# --------------------------------------------------------------------------------------------------------------
# kill -9


KILLED = """\
import os, signal, sys
from programl.cli import main
root, form, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
replace, renames = os.replace, []
def killing_replace(src, dst, *args, **kwargs):
    if str(src).endswith(".tmp"):
        renames.append(dst)
        if len(renames) == at:  # the temporary file is written; it is not renamed into place yet
            os.kill(os.getpid(), signal.SIGKILL)
    return replace(src, dst, *args, **kwargs)
os.replace = killing_replace
sys.exit(main(["dataset", "convert", root, "--label-format", form, "-q"]))
"""


@pytest.mark.parametrize("form", ["protobuf", "compact"])
def test_a_rerun_after_kill_9_cleans_up_and_finishes(built, tmp_path: Path, capsys, form: str) -> None:
    """A real ``kill -9`` between writing a label file's temporary file and renaming it: the temporary file stayed
    for ever. The rerun removes it and the data set is what an uninterrupted conversion makes, byte for byte."""
    other = "compact" if form == "protobuf" else "protobuf"
    root = copy_of(built, other, tmp_path)
    run = subprocess.run(
        [sys.executable, "-c", KILLED, str(root), form, "6"], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    left = sorted(p.name for p in (root / "labels").rglob("*.tmp"))
    assert len(left) == 1 and left[0].startswith("."), left
    code, lines = convert(root, form, capsys)
    assert code == 0 and lines == [f"programl dataset convert: labels of {root} are {form}"]
    assert not list((root / "labels").rglob("*.tmp"))
    assert labels(root) == labels(built[form])


# --------------------------------------------------------------------------------------------------------------
# A data set that cannot be written


@pytest.mark.parametrize("form", ["protobuf", "compact"])
def test_a_data_set_that_cannot_be_written_says_so(built, tmp_path: Path, capsys, form: str) -> None:
    """The summary said the graphs "could not be read". A file where a label directory belongs (which stops root
    too): each graph's line names the file and the reason, the summary says they could not be written, and nothing
    is lost: fixed, a rerun converts them all."""
    other = "compact" if form == "protobuf" else "protobuf"
    root = copy_of(built, other, tmp_path)
    blocked = root / "labels" / ("datadep" if form == "protobuf" else "all")
    blocked.write_bytes(b"")
    before = labels(root)
    code, lines = convert(root, form, capsys)
    names = Layout(built[other]).graph_names()
    assert code == 1 and len(lines) == len(names) + 1
    for name, line in zip(names, lines):
        target = Layout(root).labels("datadep", name) if form == "protobuf" else Layout(root).compact_labels(name)
        assert line.startswith(f"{name}: error: LabelWriteError: {target}: cannot be "), line
        assert line.endswith(f"({blocked}: Not a directory)") or line.endswith("(Not a directory)"), line
    assert lines[-1].startswith(
        f"programl dataset convert: labels of {root} are {form}; {len(names)} graphs could not be written and were "
        f"left as they were (the first: {root}/labels/"
    )
    assert "could not be read" not in lines[-1]
    if form == "compact":  # (to protobuf, the analyses before datadep are written before it fails)
        assert labels(root) == before
    for name in names:  # the labels read are still those of the build
        for analysis in ("liveness", "reachability"):
            assert read_labels(Layout(root), analysis, name) == read_labels(Layout(built[other]), analysis, name)
    blocked.unlink()
    code, lines = convert(root, form, capsys)
    assert code == 0
    assert labels(root) == labels(built[form])


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes a read-only directory")
def test_a_read_only_data_set_says_permission_denied(built, tmp_path: Path, capsys) -> None:
    root = copy_of(built, "protobuf", tmp_path)
    (root / "labels" / "all").mkdir()
    (root / "labels" / "all").chmod(0o555)
    try:
        code, lines = convert(root, "compact", capsys)
    finally:
        (root / "labels" / "all").chmod(0o755)
    assert code == 1 and "Permission denied" in lines[0] and "could not be written" in lines[-1]
    assert "could not be read" not in lines[-1]
