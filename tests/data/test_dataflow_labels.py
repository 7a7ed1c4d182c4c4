"""The compact label files of a DeepDataFlow data set (programl.data.deepdataflow.labels): the format round-trips,
damaged files are one-line errors, either form is read, conversion both ways is lossless (the protobuf files come back
byte for byte), and builds in either form resume and convert instead of building again."""

from __future__ import annotations

import os
import struct
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from programl.data.deepdataflow import Layout, build_dataset, discover_inputs
from programl.data.deepdataflow.labels import (
    MAX_LABEL_FILE_BYTES,
    MAX_LABEL_VALUES,
    LabelFileError,
    compact_analyses,
    convert_labels,
    decode_compact,
    encode_compact,
    label_file,
    labelled_names,
    read_labels,
)
from programl.dataflow import ANALYSES, AnalysisResult, labels_to_bytes
from programl.exceptions import ProgramlError
from tests.data._ddf import write_sources


def _result(analysis: str, rng: np.random.Generator, records: int, nodes: int) -> AnalysisResult:
    return AnalysisResult(
        analysis=analysis,
        roots=rng.integers(0, nodes, size=records).astype(np.int64),
        labels=(rng.random((records, nodes)) < 0.3).astype(np.uint8),
        step_counts=rng.integers(0, 2**40, size=records).astype(np.int64),
        active_node_counts=rng.integers(0, nodes + 1, size=records).astype(np.int64),
    )


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.integers(1, 300),
    records=st.lists(st.integers(0, 12), min_size=1, max_size=5),
    seed=st.integers(0, 2**32 - 1),
)
def test_round_trip(nodes: int, records: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    results = {a: _result(a, rng, r, nodes) for a, r in zip(ANALYSES, records)}
    data = encode_compact(results)
    assert decode_compact(data) == results
    assert compact_analyses(data) == {a: len(r) for a, r in results.items()}
    first = next(iter(results))
    assert decode_compact(data, [first, "no-such-analysis"]) == {first: results[first]}
    assert encode_compact(decode_compact(data)) == data  # deterministic


def test_small_and_independent_of_the_analysis_order() -> None:
    rng = np.random.default_rng(0)
    results = {a: _result(a, rng, 10, 323) for a in ANALYSES}
    data = encode_compact(results)
    assert len(data) < sum(len(labels_to_bytes(r)) for r in results.values()) / 40  # ~45 KB each in protobuf
    reordered = dict(reversed(results.items()))
    assert decode_compact(encode_compact(reordered)) == results


@pytest.mark.parametrize(
    ("results", "match"),
    [
        ({}, "no analyses"),
        (
            {"liveness": AnalysisResult("liveness", np.array([0]), np.array([[2, 0]]), np.ones(1), np.ones(1))},
            "0 and 1",
        ),
        ({"liveness": AnalysisResult("liveness", np.array([5]), np.zeros((1, 2)), np.ones(1), np.ones(1))}, "root"),
        (
            {
                "liveness": AnalysisResult("liveness", np.array([0]), np.zeros((1, 2)), np.ones(1), np.ones(1)),
                "datadep": AnalysisResult("datadep", np.array([0]), np.zeros((1, 3)), np.ones(1), np.ones(1)),
            },
            "different sizes",
        ),
    ],
)
def test_what_cannot_be_written(results, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        encode_compact(results)


def _damaged() -> list[tuple[str, bytes, str]]:
    rng = np.random.default_rng(1)
    good = encode_compact({"reachability": _result("reachability", rng, 3, 40), "liveness": _result("x", rng, 2, 40)})
    header = struct.calcsize("<8sHHI")
    payload = zlib.compress(b"\0" * 7)  # a valid stream of the wrong length for the section
    crafted = (
        struct.pack("<8sHHI", b"PGLABELS", 1, 1, 40)
        + bytes((8,))
        + b"liveness"
        + struct.pack("<III", 1, len(payload), zlib.crc32(payload))
        + payload
    )
    return [
        ("empty", b"", "empty"),
        ("not ours", b"\x12\x05garbage", "no PGLABELS header"),
        ("header only", good[:6], "truncated"),
        ("section table cut", good[: header + 5], "truncated section table"),
        ("payload cut", good[:-1], "sections take"),
        ("trailing bytes", good + b"\0", "sections take"),
        ("newer format", good[:8] + b"\x02" + good[9:], "format version 2"),
        ("flipped byte", good[:-2] + bytes((good[-2] ^ 1,)) + good[-1:], "checksum mismatch"),
        ("wrong length", crafted, "1 records of 40 nodes take 25"),
        ("no sections but a payload", struct.pack("<8sHHI", b"PGLABELS", 1, 0, 40) + b"x", "sections take"),
        ("repeated section", good[:header] + good[header : header + 25] * 2 + good[header + 50 :], "repeated"),
    ]


@pytest.mark.parametrize(("case", "data", "said"), _damaged(), ids=[c[0] for c in _damaged()])
def test_damaged_files_are_one_line_errors(tmp_path: Path, case: str, data: bytes, said: str) -> None:
    layout = Layout(tmp_path)
    path = layout.compact_labels("victim")
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    with pytest.raises(LabelFileError) as error:
        read_labels(layout, "liveness", "victim")
    message = str(error.value)
    assert isinstance(error.value, ProgramlError) and "\n" not in message
    assert message.startswith(f"{path}: not a readable label file (") and said in message, message
    assert "victim" in labelled_names(layout, "liveness")  # counted, so that its reader says what is wrong


def test_which_file_is_read(tmp_path: Path) -> None:
    """The protobuf file of an analysis when there is one (the original's layout, a derived root's override), else
    the compact file's section; None when neither has the analysis."""
    layout = Layout(tmp_path)
    rng = np.random.default_rng(2)
    compact = {"reachability": _result("reachability", rng, 2, 9), "liveness": _result("liveness", rng, 3, 9)}
    layout.compact_labels("g").parent.mkdir(parents=True)
    layout.compact_labels("g").write_bytes(encode_compact(compact))
    assert read_labels(layout, "liveness", "g") == compact["liveness"]
    assert read_labels(layout, "datadep", "g") is None and read_labels(layout, "liveness", "h") is None
    override = _result("liveness", rng, 5, 9)
    layout.labels("liveness", "g").parent.mkdir(parents=True)
    layout.labels("liveness", "g").write_bytes(labels_to_bytes(override))
    assert read_labels(layout, "liveness", "g") == override
    assert read_labels(layout, "reachability", "g") == compact["reachability"]
    assert label_file(layout, "liveness", "g") == layout.labels("liveness", "g")
    assert label_file(layout, "reachability", "g") == layout.compact_labels("g")
    assert labelled_names(layout, "liveness") == labelled_names(layout, "reachability") == {"g"}
    assert labelled_names(layout, "datadep") == set()


# --------------------------------------------------------------------------------------------------------------
# Builds and conversion


def _files(root: Path, sub: str) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / sub).rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> tuple[list, Path, Path]:
    tmp = tmp_path_factory.mktemp("builds")
    inputs = discover_inputs([write_sources(tmp / "src", chains=(2, 3, 8, 20))])
    build_dataset(inputs, tmp / "compact", jobs=1)
    build_dataset(inputs, tmp / "protobuf", jobs=1, label_format="protobuf")
    return inputs, tmp / "compact", tmp / "protobuf"


def test_both_forms_hold_the_same_graphs_and_records(builds) -> None:
    _, compact, protobuf = builds
    for sub in ("graphs", "ir", "vocab", "train", "val", "test"):
        assert _files(compact, sub) == _files(protobuf, sub), sub
    layout, other = Layout(compact), Layout(protobuf)
    assert not (compact / "labels" / "liveness").exists() and not (protobuf / "labels" / "all").exists()
    for name in layout.graph_names():
        for analysis in ANALYSES:
            assert read_labels(layout, analysis, name) == read_labels(other, analysis, name)


def test_conversion_both_ways_is_lossless(builds, tmp_path: Path) -> None:
    import shutil

    _, compact, protobuf = builds
    root = tmp_path / "copy"
    shutil.copytree(compact, root, symlinks=True)
    assert convert_labels(root, "protobuf", jobs=2) == {}
    assert _files(root, "labels") == _files(protobuf, "labels")  # byte for byte what a protobuf build writes
    assert convert_labels(root, "protobuf") == {}  # nothing left to do
    assert convert_labels(root, "compact") == {}
    assert _files(root, "labels") == _files(compact, "labels")
    assert [p.name for p in (root / "labels").iterdir()] == ["all"]  # the emptied directories are gone


def test_a_damaged_file_is_left_and_reported_by_conversion(builds, tmp_path: Path) -> None:
    import shutil

    _, compact, _ = builds
    root = tmp_path / "copy"
    shutil.copytree(compact, root, symlinks=True)
    victim = Layout(root).graph_names()[0]
    Layout(root).compact_labels(victim).write_bytes(b"garbage")
    failed = convert_labels(root, "protobuf")
    assert list(failed) == [victim] and "not a readable label file" in str(failed[victim])
    assert Layout(root).compact_labels(victim).read_bytes() == b"garbage"


@pytest.mark.parametrize("first", ["compact", "protobuf"])
def test_a_rerun_skips_finished_inputs_and_converts_other_forms(builds, tmp_path: Path, first: str) -> None:
    inputs, compact, protobuf = builds
    root = tmp_path / "ddf"
    build_dataset(inputs, root, jobs=1, label_format=first)
    graphs = {p.name: p.stat().st_mtime_ns for p in (root / "graphs").iterdir()}
    report = build_dataset(inputs, root, jobs=1, label_format=first)
    assert (report.built, report.skipped) == (0, len(inputs))
    second = "protobuf" if first == "compact" else "compact"
    report = build_dataset(inputs, root, jobs=1, label_format=second)
    assert (report.built, report.skipped) == (0, len(inputs))  # converted, not built again
    assert {p.name: p.stat().st_mtime_ns for p in (root / "graphs").iterdir()} == graphs
    assert _files(root, "labels") == _files(compact if second == "compact" else protobuf, "labels")


def test_a_missing_label_file_is_built_again(builds, tmp_path: Path) -> None:
    import shutil

    inputs, compact, _ = builds
    root = tmp_path / "copy"
    shutil.copytree(compact, root, symlinks=True)
    victim = Layout(root).graph_names()[0]
    Layout(root).compact_labels(victim).unlink()
    report = build_dataset(inputs, root, jobs=1)
    assert (report.built, report.skipped) == (1, len(inputs) - 1)
    assert _files(root, "labels") == _files(compact, "labels")


def test_a_file_that_cannot_be_converted_is_built_again(builds, tmp_path: Path) -> None:
    import shutil

    inputs, compact, protobuf = builds
    root = tmp_path / "copy"
    shutil.copytree(protobuf, root, symlinks=True)
    victim = Layout(root).graph_names()[0]
    Layout(root).labels("reachability", victim).write_bytes(b"\x12\x05garbage")
    report = build_dataset(inputs, root, jobs=1)  # compact: the others converted, the victim built again
    assert (report.built, report.skipped) == (1, len(inputs) - 1)
    assert _files(root, "labels") == _files(compact, "labels")


def test_a_pickle_is_not_a_label_file(tmp_path: Path) -> None:
    """A received compact label file is read with struct, zlib and numpy.frombuffer: a pickle is refused in one line
    and never runs (docs/security.md)."""
    from tests.payload import payload_runs, write_payload

    marker = tmp_path / "MARKER"
    assert payload_runs(marker)
    layout = Layout(tmp_path / "ddf")
    write_payload(layout.compact_labels("victim"), marker, "pickle")
    with pytest.raises(LabelFileError, match="not a readable label file"):
        read_labels(layout, "liveness", "victim")
    assert not marker.exists()


# --------------------------------------------------------------------------------------------------------------
# Hostile files: sizes bounded before anything is decoded, only regular files read


def inflating_zeros(size: int) -> bytes:
    """A zlib stream of ``size`` zero bytes, made without holding them: ~1 KB per MB (deflate's most)."""
    chunk = 1 << 24
    deflate = zlib.compressobj(9)
    head = deflate.compress(bytes(chunk)) + deflate.flush(zlib.Z_FULL_FLUSH)
    middle = deflate.compress(bytes(chunk)) + deflate.flush(zlib.Z_FULL_FLUSH)  # the same bytes for every chunk
    count, rest = divmod(size, chunk)
    tail = deflate.compress(bytes(rest)) + deflate.flush()
    adler = (size % 65521) << 16 | 1  # adler32 of zeros
    return head + middle * (count - 1) + tail[:-4] + struct.pack(">I", adler)


def compact_file(nodes: int, sections: list[tuple[bytes, int, bytes]]) -> bytes:
    """A compact label file of ``nodes`` nodes and sections ``(name, records, zlib payload)``, checksums right."""
    heads = [bytes((len(n),)) + n + struct.pack("<III", r, len(p), zlib.crc32(p)) for n, r, p in sections]
    return struct.pack("<8sHHI", b"PGLABELS", 1, len(sections), nodes) + b"".join(heads + [p for *_, p in sections])


def billions_of_nodes(analysis: str = "liveness") -> bytes:
    """~1 MB that declares 2 records of 2**32 - 1 nodes: its payload inflates to 1 GiB, and unpacked to 8 GiB."""
    records, nodes = 2, 2**32 - 1
    return compact_file(
        nodes, [(analysis.encode(), records, inflating_zeros(20 * records + (records * nodes + 7) // 8))]
    )


def test_declared_sizes_are_bounded_before_anything_is_decoded(tmp_path: Path) -> None:
    """A file of 1 MB that declares 2 x (2**32 - 1) nodes made the reader inflate 1 GiB and unpack 8 GiB: now it is
    refused from its section table, against the graph's size when known, else against what its payload can hold and
    :data:`MAX_LABEL_VALUES`, allocating nothing of that size."""
    data = billions_of_nodes()
    assert len(data) < 1_100_000
    tracemalloc.start()
    try:
        with pytest.raises(LabelFileError, match="2 records of 4,294,967,295 nodes, more than the 268,435,456 label"):
            decode_compact(data)
        with pytest.raises(LabelFileError, match="2 records of 4,294,967,295 nodes, more than the 268,435,456 label"):
            compact_analyses(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # (the payload is never inflated: no allocation of its size)
    layout = Layout(tmp_path)
    path = layout.compact_labels("victim")
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    with pytest.raises(LabelFileError) as error:
        read_labels(layout, "liveness", "victim", num_nodes=21)
    assert str(error.value) == f"{path}: not a readable label file (labels of 4,294,967,295 nodes; its graph has 21)"
    # within MAX_LABEL_VALUES, but more than 12 compressed bytes can inflate to
    small = compact_file(1 << 20, [(b"liveness", 8, zlib.compress(b""))])
    with pytest.raises(LabelFileError, match=r"8 records of 1,048,576 nodes take 1,048,736 bytes, more than 8 compr"):
        decode_compact(small)
    assert MAX_LABEL_VALUES == 1 << 28


def test_labels_of_another_size_than_the_graph_are_refused(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    rng = np.random.default_rng(3)
    results = {"liveness": _result("liveness", rng, 2, 9), "datadep": _result("datadep", rng, 1, 9)}
    layout.compact_labels("g").parent.mkdir(parents=True)
    layout.compact_labels("g").write_bytes(encode_compact(results))
    assert read_labels(layout, "liveness", "g", num_nodes=9) == results["liveness"]
    with pytest.raises(LabelFileError, match=r"DataFlowLabels.bin: not a readable label file \(labels of 9 nodes; its"):
        read_labels(layout, "liveness", "g", num_nodes=8)
    layout.labels("datadep", "g").parent.mkdir(parents=True)
    layout.labels("datadep", "g").write_bytes(labels_to_bytes(_result("datadep", rng, 1, 10)))
    with pytest.raises(LabelFileError, match=r"ProgramGraphFeaturesList.pb: not a readable label file \(labels of 10"):
        read_labels(layout, "datadep", "g", num_nodes=9)


def test_a_section_name_must_be_printable(tmp_path: Path) -> None:
    """``datadep\\0`` passed for no analysis, so a conversion dropped its records without a word."""
    rng = np.random.default_rng(4)
    good = encode_compact({"liveness": _result("liveness", rng, 1, 5), "datadepX": _result("datadepX", rng, 1, 5)})
    data = good.replace(b"datadepX", b"datadep\0")
    with pytest.raises(LabelFileError, match=r"section name 'datadep\\x00' is not printable ASCII"):
        decode_compact(data)
    with pytest.raises(ValueError, match="printable ASCII"):
        encode_compact({"datadep\0": _result("datadep", rng, 1, 5)})


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _device(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _directory(path: Path) -> None:
    path.mkdir()
    (path / "inside").write_bytes(b"x")


def _too_large(path: Path) -> None:
    with open(path, "wb") as f:
        f.truncate(MAX_LABEL_FILE_BYTES + 1)  # sparse: takes no space


@pytest.mark.timeout(120)  # (a reader that waits on the FIFO would hang: this ends it)
@pytest.mark.parametrize(
    ("make", "said"),
    [
        (_fifo, "a FIFO, not a regular file"),
        (_device, "a character device, not a regular file"),
        (_directory, "a directory, not a regular file"),
        (_too_large, "268,435,457 bytes, more than the 268,435,456 it may have"),
    ],
    ids=["fifo", "dev-zero", "directory", "too-large"],
)
@pytest.mark.parametrize("form", ["compact", "protobuf"])
def test_only_regular_files_of_bounded_size_are_read(tmp_path: Path, make, said: str, form: str) -> None:
    """A FIFO is not waited on, ``/dev/zero`` not read without end, a directory not taken for no labels."""
    if make is _fifo and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    layout = Layout(tmp_path)
    path = layout.compact_labels("victim") if form == "compact" else layout.labels("liveness", "victim")
    path.parent.mkdir(parents=True)
    make(path)
    with pytest.raises(LabelFileError) as error:
        read_labels(layout, "liveness", "victim")
    assert str(error.value) == f"{path}: not a readable label file ({said})"
    if form == "compact":
        assert "victim" in labelled_names(layout, "liveness")  # counted, so that its reader says what is wrong
