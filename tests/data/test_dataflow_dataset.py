"""The DeepDataFlow builder (programl.data.deepdataflow): layout, labels, split, vocabulary, manifest, failures,
resumption after a real interruption, the dask executor, recipes (SPEC §9.1, DESIGN §5)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from programl.data.deepdataflow import (
    ANALYSES,
    Input,
    Layout,
    build_dataset,
    discover_inputs,
    graph_seed,
    read_manifest,
    split_groups,
)
from programl.data.deepdataflow.labels import read_labels
from programl.data.deepdataflow.layout import append_manifest
from programl.data.vocabulary import Vocabulary, build_vocabulary
from programl.dataflow import analyze_arrays, labels_to_bytes
from programl.exceptions import GraphCreationError
from programl.io.files import read_graph
from tests.data._ddf import write_sources

DATA = Path(__file__).resolve().parent
REPO = DATA.parents[1]

#: Small hand-written modules (LLVM 22 syntax) beside the IR fixtures of tests/data.
EXTRA_IR = {
    "loop.ll": """define i32 @sum(i32 %n) {
entry:
  br label %head
head:
  %i = phi i32 [ 0, %entry ], [ %next, %body ]
  %acc = phi i32 [ 0, %entry ], [ %acc2, %body ]
  %done = icmp sge i32 %i, %n
  br i1 %done, label %exit, label %body
body:
  %acc2 = add i32 %acc, %i
  %next = add i32 %i, 1
  br label %head
exit:
  ret i32 %acc
}
""",
    "diamond.ll": """define i32 @pick(i32 %a, i32 %b) {
entry:
  %c = icmp sgt i32 %a, %b
  br i1 %c, label %then, label %else
then:
  %x = mul i32 %a, 3
  br label %join
else:
  %y = mul i32 %a, 3
  br label %join
join:
  %r = phi i32 [ %x, %then ], [ %y, %else ]
  ret i32 %r
}
""",
    "calls.ll": """declare i32 @ext(i32)
define i32 @twice(i32 %a) {
  %x = call i32 @ext(i32 %a)
  %y = call i32 @ext(i32 %x)
  %s = add i32 %x, %y
  ret i32 %s
}
""",
}
BAD_IR = "define i32 @f() {\n  ret i32 %undefined\n}\n"


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """Seven IR files: the four of tests/data and three small ones."""
    directory = write_sources(tmp_path / "src")
    for name, text in EXTRA_IR.items():
        (directory / name).write_text(text)
    return directory


def files_of(root: Path) -> dict[str, bytes]:
    """Every output file of a data set except the manifest and summary (which hold timings)."""
    out = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative in ("manifest.jsonl", "dataset.json") or relative.startswith("processed"):
            continue
        if path.is_symlink():
            out[relative] = os.readlink(path).encode()
        elif path.is_file():
            out[relative] = path.read_bytes()
    return out


# --------------------------------------------------------------------------------------------------------------
# Inputs and split


def test_discover_inputs_names_groups_and_settings(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "foo.c").write_text("int f(void) { return 1; }\n")
    (tmp_path / "k.cl").write_text("kernel void k(global int* a) { a[0] = 1; }\n")
    (tmp_path / "bar.ll").write_text(EXTRA_IR["loop.ll"])
    (tmp_path / "notes.txt").write_text("ignored")
    inputs = discover_inputs([tmp_path], settings=[("-O0",), ("-O3", "-ffast-math")], extra_flags=("-DN=4",))
    by_name = {i.name: i for i in inputs}
    assert sorted(by_name) == [
        "bar",
        "k.O0.cl",
        "k.O3_ffast-math.cl",
        "sub_foo.O0.c",
        "sub_foo.O3_ffast-math.c",
    ]
    assert by_name["sub_foo.O3_ffast-math.c"].flags == ("-O3", "-ffast-math", "-DN=4")
    assert by_name["sub_foo.O0.c"].group == by_name["sub_foo.O3_ffast-math.c"].group == "sub/foo.c"
    assert by_name["bar"].kind == "ir" and by_name["bar"].flags == ()
    assert by_name["k.O0.cl"].language == "cl"
    # a file given twice would give a name twice
    with pytest.raises(GraphCreationError, match="also gives"):
        discover_inputs([tmp_path / "bar.ll", tmp_path / "bar.ll"])
    with pytest.raises(GraphCreationError, match="unknown input type"):
        discover_inputs([tmp_path / "notes.txt"])
    with pytest.raises(GraphCreationError, match="no such file"):
        discover_inputs([tmp_path / "missing.c"])


def test_digest_covers_content_flags_and_settings(tmp_path: Path) -> None:
    path = tmp_path / "a.ll"
    path.write_text(EXTRA_IR["loop.ll"])
    item = Input("a", "a.ll", "ir", path=str(path))
    assert item.digest({"seed": 1}) == item.digest({"seed": 1})
    assert item.digest({"seed": 1}) != item.digest({"seed": 2})
    assert item.digest() != Input("a", "a.ll", "source", "c", ("-O2",), str(path)).digest()
    assert item.digest() == Input("b", "other", "ir", text=EXTRA_IR["loop.ll"]).digest()  # content, not the path
    path.write_text(EXTRA_IR["diamond.ll"])
    assert item.digest() != Input("b", "other", "ir", text=EXTRA_IR["loop.ll"]).digest()


@given(st.sets(st.text(min_size=1, max_size=8), max_size=60), st.integers(0, 3))
def test_split_is_a_seeded_3_1_1_partition(groups: set[str], seed: int) -> None:
    assignment = split_groups(groups, seed=seed)
    assert set(assignment) == groups
    counts = Counter(assignment.values())
    n = len(groups)
    assert counts["train"] == round(3 * n / 5) and counts["val"] == round(n / 5)
    assert counts["test"] == n - counts["train"] - counts["val"]
    assert split_groups(sorted(groups, reverse=True), seed=seed) == assignment  # order of the input is irrelevant


def test_split_is_stable_when_groups_are_added() -> None:
    small = split_groups([f"p{i}" for i in range(200)], seed=5)
    large = split_groups([f"p{i}" for i in range(220)], seed=5)
    moved = sum(small[g] != large[g] for g in small)
    assert moved <= 10  # only groups near the cut points move
    assert split_groups([f"p{i}" for i in range(200)], seed=6) != small


# --------------------------------------------------------------------------------------------------------------
# Building


@pytest.mark.parametrize("label_format", ["compact", "protobuf"])
def test_build_layout_labels_split_vocabulary(sources: Path, tmp_path: Path, label_format: str) -> None:
    root = tmp_path / "ddf"
    inputs = discover_inputs([sources])
    report = build_dataset(inputs, root, seed=3, jobs=2, label_format=label_format)
    assert (report.built, report.skipped, report.failed) == (7, 0, [])
    layout = Layout(root)
    names = sorted(i.name for i in inputs)
    assert layout.graph_names() == names
    assert sorted(p.stem for p in (root / "ir").glob("*.ll")) == names
    # labels: exactly what the analyses give with the per-graph seed, or none when there is no eligible root; in
    # the protobuf form, the bytes of `programl analyze`; in the compact form, one file per graph (none in the other)
    manifest = read_manifest(layout.manifest)
    for name in names:
        graph = read_graph(layout.graph(name))
        assert len(graph.node) == manifest[name]["nodes"]
        for analysis in ANALYSES:
            path = layout.labels(analysis, name)
            info = manifest[name]["labels"][analysis]
            if info["records"]:
                expected = analyze_arrays(graph, analysis, seed=graph_seed(3, name))
                assert read_labels(layout, analysis, name) == expected
                if label_format == "protobuf":
                    assert path.read_bytes() == labels_to_bytes(expected)
                assert info["steps"] == expected.step_counts.tolist()
            else:
                assert read_labels(layout, analysis, name) is None and "No eligible root" in info["reason"]
            assert path.exists() == (label_format == "protobuf" and bool(info["records"]))
        assert layout.compact_labels(name).exists() == (label_format == "compact")
    # split: every graph in exactly one split, 3:1:1 over the 7 source programs, links relative to graphs/
    splits = {s: layout.split_names(s) for s in ("train", "val", "test")}
    assert sorted(sum(splits.values(), [])) == names
    assert [len(splits[s]) for s in ("train", "val", "test")] == [4, 1, 2] == list(report.splits.values())
    link = layout.split_link("val", splits["val"][0])
    assert os.readlink(link) == f"../graphs/{splits['val'][0]}.ProgramGraph.pb"
    assert read_graph(link) == read_graph(layout.graph(splits["val"][0]))
    # vocabulary: from the training graphs only
    vocabulary = Vocabulary.load(layout.vocabulary)
    assert vocabulary == build_vocabulary(read_graph(layout.graph(n)) for n in splits["train"])
    summary = json.loads(layout.summary.read_text())
    assert summary["graphs"] == {"train": 4, "val": 1, "test": 2}
    assert summary["vocabulary_size"] == len(vocabulary)
    records = {s: sum(len(read_labels(layout, "liveness", n) or ()) for n in splits[s]) for s in splits}
    assert summary["examples"]["liveness"] == records
    # the manifest: one line per input with source, flags, hash, status, timings
    entry = manifest["loop"]
    assert entry["source"] == str(sources / "loop.ll") and entry["flags"] == [] and len(entry["sha256"]) == 64
    assert entry["status"] == "ok" and entry["error"] is None and entry["seconds"]["total"] > 0


def test_same_inputs_same_bytes_and_rerun_skips(sources: Path, tmp_path: Path) -> None:
    inputs = discover_inputs([sources])
    build_dataset(inputs, tmp_path / "one", jobs=2)
    build_dataset(list(reversed(inputs)), tmp_path / "two", jobs=1)
    assert files_of(tmp_path / "one") == files_of(tmp_path / "two")
    mtimes = {p: p.stat().st_mtime_ns for p in (tmp_path / "one" / "graphs").iterdir()}
    report = build_dataset(inputs, tmp_path / "one", jobs=2)
    assert (report.built, report.skipped) == (0, 7)
    assert mtimes == {p: p.stat().st_mtime_ns for p in (tmp_path / "one" / "graphs").iterdir()}
    # another seed relabels everything (the seed is part of every input's hash)
    report = build_dataset(inputs, tmp_path / "one", seed=9, jobs=2)
    assert report.built == 7


def test_failures_are_recorded_counted_and_not_fatal(sources: Path, tmp_path: Path) -> None:
    (sources / "broken.ll").write_text(BAD_IR)
    (sources / "empty.ll").write_text("")
    root = tmp_path / "ddf"
    failures = []
    report = build_dataset(discover_inputs([sources]), root, jobs=2, on_failure=lambda n, e: failures.append(n))
    assert report.built == 7 and sorted(n for n, _ in report.failed) == ["broken", "empty"] == sorted(failures)
    manifest = read_manifest(Layout(root).manifest)
    assert manifest["broken"]["status"] == "failed"
    assert "broken.ll:2:11" in manifest["broken"]["error"] and "undefined value" in manifest["broken"]["error"]
    assert not (root / "graphs" / "broken.ProgramGraph.pb").exists()
    assert sum(len(Layout(root).split_names(s)) for s in ("train", "val", "test")) == 7
    # a rerun keeps the recorded failure without retrying; --retry-failed retries it
    report = build_dataset(discover_inputs([sources]), root, jobs=2)
    assert (report.built, report.skipped, len(report.failed)) == (0, 7, 2)
    (sources / "broken.ll").write_text(EXTRA_IR["loop.ll"].replace("@sum", "@other"))
    report = build_dataset(discover_inputs([sources]), root, jobs=2)  # new content: built again
    assert (report.built, len(report.failed)) == (1, 1)
    report = build_dataset(discover_inputs([sources]), root, jobs=2, retry_failed=True)
    assert (report.built, [n for n, _ in report.failed]) == (0, ["empty"])  # retried, and it fails again
    assert report.skipped == 8


def test_a_failure_removes_stale_outputs(sources: Path, tmp_path: Path) -> None:
    root = tmp_path / "ddf"
    build_dataset(discover_inputs([sources]), root, jobs=2)
    assert (root / "graphs" / "loop.ProgramGraph.pb").exists()
    (sources / "loop.ll").write_text(BAD_IR)
    report = build_dataset(discover_inputs([sources]), root, jobs=2)
    assert [n for n, _ in report.failed] == ["loop"]
    assert not list(root.rglob("loop.*"))  # graph, IR, labels and split link are gone


RESUME_SCRIPT = """
import os, signal, sys
from programl.data.deepdataflow import build_dataset, discover_inputs

count = 0
def on_entry(entry):
    global count
    count += 1
    if count == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)  # an interruption: no clean-up runs

build_dataset(discover_inputs([sys.argv[1]]), sys.argv[2], jobs=1, on_entry=on_entry)
"""


def test_resumes_after_a_real_interruption(sources: Path, tmp_path: Path) -> None:
    root = tmp_path / "ddf"
    script = tmp_path / "interrupted.py"
    script.write_text(RESUME_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.run([sys.executable, str(script), str(sources), str(root), "3"], env=env, timeout=300)
    assert process.returncode == -signal.SIGKILL
    finished = read_manifest(root / "manifest.jsonl")
    assert len(finished) == 3 and all(e["status"] == "ok" for e in finished.values())
    assert not (root / "train").exists()  # killed before the split
    mtimes = {n: (root / "graphs" / f"{n}.ProgramGraph.pb").stat().st_mtime_ns for n in finished}

    report = build_dataset(discover_inputs([sources]), root, jobs=2)
    assert (report.built, report.skipped, report.failed) == (4, 3, [])
    assert mtimes == {n: (root / "graphs" / f"{n}.ProgramGraph.pb").stat().st_mtime_ns for n in finished}
    assert len(read_manifest(root / "manifest.jsonl")) == 7
    assert len((root / "manifest.jsonl").read_text().splitlines()) == 7  # compacted
    # the result is the same as an uninterrupted build
    build_dataset(discover_inputs([sources]), tmp_path / "whole", jobs=2)
    assert files_of(root) == files_of(tmp_path / "whole")


def test_manifest_survives_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "manifest.jsonl"
    append_manifest(path, [{"name": "a", "status": "ok"}])
    with open(path, "a") as f:
        f.write('{"name": "b", "sta')  # a crash in the middle of a line
    append_manifest(path, [{"name": "c", "status": "failed"}, {"name": "a", "status": "failed"}])
    assert read_manifest(path) == {"a": {"name": "a", "status": "failed"}, "c": {"name": "c", "status": "failed"}}


def test_dask_executor(sources: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] not installed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as c:
        with distributed.Client(c) as client:
            report = build_dataset(discover_inputs([sources]), tmp_path / "dask", executor=client.get_executor())
    assert (report.built, report.failed) == (7, [])
    build_dataset(discover_inputs([sources]), tmp_path / "pool", jobs=2)
    assert files_of(tmp_path / "dask") == files_of(tmp_path / "pool")


def test_sources_compile_at_each_setting(clang22, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("loops.c", "recursion.c", "templates.cc"):
        shutil.copy(DATA / "programs" / name, src / name)
    (src / "k.cl").write_text(
        "kernel void add(global int* a, global int* b) { int i = get_global_id(0); a[i] += b[i]; }\n"
    )
    (src / "bad.c").write_text("int f( { return 0; }\n")
    root = tmp_path / "ddf"
    report = build_dataset(discover_inputs([src], settings=[("-O0",), ("-O2",)]), root, jobs=2)
    assert report.built == 8 and [n for n, _ in report.failed] == ["bad.O0.c", "bad.O2.c"]
    manifest = read_manifest(root / "manifest.jsonl")
    assert "bad.c:1:8" in manifest["bad.O0.c"]["error"]
    assert manifest["loops.O2.c"]["flags"] == ["-O2"]
    assert (
        "-O2" in (root / "ir" / "loops.O2.c.ll").read_text()
        or manifest["loops.O2.c"]["nodes"] < manifest["loops.O0.c"]["nodes"]
    )
    # all settings of a program share a split
    split_of = {n: s for s in ("train", "val", "test") for n in Layout(root).split_names(s)}
    for stem in ("loops", "recursion"):
        assert split_of[f"{stem}.O0.c"] == split_of[f"{stem}.O2.c"]
    assert split_of["templates.O0.cc"] == split_of["templates.O2.cc"]


def test_recipe_of_deepdataflow22(shared_data: Path, clang22, tmp_path: Path) -> None:
    pytest.importorskip("programl.data.poj104", reason="the POJ-104 module is not merged yet")
    from programl.data.deepdataflow.recipe import load_recipe, recipe_inputs

    recipe = load_recipe(REPO / "datasets" / "deepdataflow22" / "recipe.json")
    inputs = recipe_inputs(recipe, shared_data, tmp_path / "work", size=2)
    names = [i.name for i in inputs]
    assert len(names) == 8 and len(set(names)) == 8
    poj = [i for i in inputs if i.kind == "poj104"]
    assert {i.name.rsplit(".", 1)[1] for i in poj} == {"0", "2"}  # -O0 and -O2 (ProGraML's setting indices)
    assert len({i.group for i in poj}) == 2 and all(i.name.startswith("poj104_") for i in poj)
    opencl = [i for i in inputs if i.language == "cl"]
    assert len(opencl) == 4 and {i.flags[0] for i in opencl} == {"-O0", "-O2"}
    # a larger size takes a superset of the programs
    larger = {i.name for i in recipe_inputs(recipe, shared_data, tmp_path / "work", size=5)}
    assert set(names) <= larger
    report = build_dataset(inputs, tmp_path / "ddf22", jobs=2, **{k: recipe[k] for k in ("seed", "max_roots")})
    assert report.built + len(report.failed) == 8 and report.built >= 6
