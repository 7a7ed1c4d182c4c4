"""Tests of programl.data.vocabulary (SPEC §5.1, §5.2)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from programl.data.vocabulary import (
    HEADER,
    Vocabulary,
    build_vocabulary,
    load_vocabulary,
    save_vocabulary,
    vocabulary_coverage,
)
from programl.proto import ProgramGraph


def graph(*nodes: tuple[int, str]) -> ProgramGraph:
    g = ProgramGraph()
    for t, text in nodes:
        g.node.add(type=t, text=text)
    return g


GRAPHS = [
    graph((0, "[external]"), (0, "alloca"), (0, "store"), (1, "i32"), (2, "i32"), (0, "ret")),
    graph((0, "[external]"), (0, "load"), (0, "store"), (1, "i32"), (1, "i32*"), (0, "ret")),
    graph((0, "[external]"), (0, "; undefined function"), (2, "i32"), (0, "store")),
]


def test_build_orders_by_count_then_text():
    vocab = build_vocabulary(GRAPHS)
    # counts: i32 4, store 3, [external] 3, ret 2, alloca/load/i32*/; undefined function 1
    assert vocab.texts == (
        "i32",
        "[external]",
        "store",
        "ret",
        "; undefined function",
        "alloca",
        "i32*",
        "load",
    )
    assert vocab.counts == (4, 3, 3, 2, 1, 1, 1, 1)
    assert vocab["i32"] == 0 and vocab["load"] == 7
    assert len(vocab) == 8 and vocab.oov_id == 8
    # Unlike the original generator, texts with equal counts are all kept.
    assert len(vocab) == len({n.text for g in GRAPHS for n in g.node})


def test_oov_and_encoding():
    vocab = build_vocabulary(GRAPHS)
    assert vocab.get("fadd", vocab.oov_id) == 8
    assert "fadd" not in vocab and "i32" in vocab
    assert vocab.encode(["i32", "fadd", "load"]).tolist() == [0, 8, 7]
    assert vocab.encode_graph(GRAPHS[2]).tolist() == [1, 4, 0, 2]
    assert vocab.decode([0, 8, 7]) == ["i32", None, "load"]
    with pytest.raises(KeyError):
        vocab["fadd"]


def test_tsv_format_exact():
    vocab = build_vocabulary(GRAPHS)
    lines = vocab.to_tsv().splitlines()
    assert lines[0] == "\t".join(HEADER)
    # total 16 nodes: cumulative counts 4, 7, 10, 12, 13, 14, 15, 16
    assert lines[1:] == [
        "0.25\t0.25\t4\ti32",
        "0.4375\t0.4375\t3\t[external]",
        "0.625\t0.625\t3\tstore",
        "0.75\t0.75\t2\tret",
        "0.8125\t0.8125\t1\t; undefined function",
        "0.875\t0.875\t1\talloca",
        "0.9375\t0.9375\t1\ti32*",
        "1\t1\t1\tload",
    ]


def test_cumulative_columns_round_down_to_4_significant_digits():
    # 1/3 -> 0.3333, 2/3 -> 0.6666 (not 0.6667), 29999/30000 -> 0.9999 (not 1), 1 -> 1
    vocab = Vocabulary(["a", "b", "c"], [10000, 10000, 10000])
    rows = [line.split("\t") for line in vocab.to_tsv().splitlines()[1:]]
    assert [r[0] for r in rows] == ["0.3333", "0.6666", "1"]
    vocab = Vocabulary(["a", "b"], [29999, 1])
    rows = [line.split("\t") for line in vocab.to_tsv().splitlines()[1:]]
    assert [r[0] for r in rows] == ["0.9999", "1"]
    vocab = Vocabulary(["a", "b"], [1, 99999])  # tiny first value keeps 4 significant digits
    assert vocab.to_tsv().splitlines()[1].split("\t")[0] == "1e-05"


def test_node_frequency_column_counts_all_nodes():
    # CDFG-style vocabulary: only instructions counted, node frequency relative to all 16 nodes.
    vocab = build_vocabulary(GRAPHS, node_types=[0])
    assert "i32" not in vocab and vocab.texts[0] in ("[external]", "store")
    rows = [line.split("\t") for line in vocab.to_tsv().splitlines()[1:]]
    assert rows[-1][0] == "1"
    assert rows[-1][1] == "0.6875"  # 11 instruction nodes of 16


def test_save_load_round_trip(tmp_path):
    vocab = build_vocabulary(GRAPHS)
    path = tmp_path / "programl.csv"
    save_vocabulary(vocab, path)
    loaded = load_vocabulary(path)
    assert loaded == vocab
    assert loaded.counts == vocab.counts
    assert loaded.to_tsv() == vocab.to_tsv()


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.text(alphabet="abcdefgh*[] ;%", min_size=1, max_size=6), st.integers(1, 10**6), max_size=40))
def test_round_trip_property(counts):
    vocab = Vocabulary.from_counts(counts)
    text = vocab.to_tsv()
    loaded = Vocabulary.from_tsv(text)  # default target_cumfreq=1.0 must keep every row
    assert loaded.texts == vocab.texts and loaded.counts == vocab.counts
    cum = [float(line.split("\t")[0]) for line in text.splitlines()[1:]]
    assert cum == sorted(cum)
    assert all(c < 1 for c in cum[:-1]) and (not cum or cum[-1] == 1)
    # the printed value never exceeds the true cumulative frequency and is within 4 significant digits of it
    total = sum(counts.values())
    running = 0
    for c, n in zip(cum, vocab.counts, strict=True):
        running += n
        true = running / total
        assert c <= true * (1 + 1e-12) and true - c <= true * 1e-3


ORIGINAL_STYLE = (
    "cumulative_frequency\tcumulative_node_frequency\tcount\ttext\n"
    "0.5\t0.5\t5000\ti32\n"
    "0.9\t0.9\t4000\tstore\n"
    "1\t1\t999\tload\n"  # the original rounds 0.9999 up to 1 ...
    "1\t1\t1\tfadd\n"  # ... so this row is never loaded with target_cumfreq=1.0
)


def test_loading_rules_of_the_original(tmp_path):
    path = tmp_path / "programl.csv"
    path.write_text(ORIGINAL_STYLE)
    assert load_vocabulary(path).texts == ("i32", "store", "load")
    assert load_vocabulary(path, target_cumfreq=0.9).texts == ("i32", "store")
    assert load_vocabulary(path, target_cumfreq=0.85).texts == ("i32", "store")
    assert load_vocabulary(path, target_cumfreq=0.2).texts == ("i32",)
    assert load_vocabulary(path, max_items=2).texts == ("i32", "store")
    assert load_vocabulary(path, max_items=10).texts == ("i32", "store", "load")
    assert load_vocabulary(path, target_cumfreq=2.0).texts == ("i32", "store", "load", "fadd")
    vocab = load_vocabulary(path)
    assert vocab["load"] == 2 and vocab.oov_id == 3 and vocab.get("fadd", vocab.oov_id) == 3


def test_max_items_and_min_count():
    assert build_vocabulary(GRAPHS, max_items=3).texts == ("i32", "[external]", "store")
    assert build_vocabulary(GRAPHS, min_count=2).texts == ("i32", "[external]", "store", "ret")


def test_bad_input():
    with pytest.raises(ValueError, match="duplicate"):
        Vocabulary(["a", "a"])
    with pytest.raises(ValueError, match="tab"):
        Vocabulary(["a\tb"], [1]).to_tsv()
    with pytest.raises(ValueError, match="without counts"):
        Vocabulary(["a"]).to_tsv()
    with pytest.raises(ValueError, match="line 2"):
        Vocabulary.from_tsv("header\n0.5\tx\n")
    with pytest.raises(TypeError, match="build_vocabulary\\(\\) expects ProgramGraphs, got NoneType"):
        build_vocabulary([None])  # was an AttributeError from inside


def test_coverage():
    vocab = Vocabulary(["i32", "store", "[external]"])
    report = vocabulary_coverage(vocab, GRAPHS)
    assert report.nodes == 16
    # covered: [external] x3, store x3, i32 x4 -> 10
    assert report.covered == 10 and math.isclose(report.coverage, 10 / 16)
    assert report.per_type == {"instruction": (6, 11), "variable": (2, 3), "constant": (2, 2)}
    assert math.isclose(report.type_coverage("variable"), 2 / 3)
    assert math.isnan(report.type_coverage("type"))
    assert report.as_dict()["per_type"]["constant"]["coverage"] == 1.0
    # independent count
    texts = Counter(n.text for g in GRAPHS for n in g.node)
    assert report.covered == sum(c for t, c in texts.items() if t in vocab)


def test_coverage_of_full_vocabulary_is_one():
    report = vocabulary_coverage(build_vocabulary(GRAPHS), GRAPHS)
    assert report.coverage == 1.0
    assert math.isnan(vocabulary_coverage(Vocabulary([]), []).coverage)


def test_is_a_mapping_usable_by_to_pyg():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    from programl.io.pyg import to_pyg

    vocab = build_vocabulary(GRAPHS)
    data = to_pyg(GRAPHS[2], vocab)
    assert data.x.tolist() == vocab.encode_graph(GRAPHS[2]).tolist()
    assert data.x.dtype == torch.long
