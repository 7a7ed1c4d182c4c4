"""Tests of programl.data.poj104: reading and deduplicating, compiling, building, splitting (SPEC §6.6)."""

from __future__ import annotations

import json
import tarfile
from collections import Counter

import pytest

from programl.data import poj104
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
    result = poj104._build_legacy_one(poj104._LegacyTask(name, label, text, str(tmp_path / "000.ProgramGraph.pb")))
    graph = ProgramGraph.FromString((tmp_path / "000.ProgramGraph.pb").read_bytes())
    assert graph.features.feature["poj104_label"].int64_list.value == [71]
    assert result["nodes"] == len(graph.node) > 50
