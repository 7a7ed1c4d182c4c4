"""``programl analyze``: the DeepDataFlow layout, formats, determinism, resumption, bad graphs."""

from __future__ import annotations

from pathlib import Path

import pytest

from programl.cli import main
from programl.dataflow import ANALYSES, load_labels
from programl.io.files import read_features_list
from programl.proto import ProgramGraphFeaturesList

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def dataset(tmp_path: Path, capsys) -> Path:
    sources = [DATA / "example_a.ll", DATA / "example_b.ll", DATA / "example_c.ll"]
    assert main(["build", *map(str, sources), "-o", str(tmp_path / "graphs"), "-q"]) == 0
    capsys.readouterr()
    return tmp_path


def run_cli(args, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_all_analyses_in_the_deepdataflow_layout(dataset, capsys) -> None:
    code, _, err = run_cli(["analyze", "all", dataset, "-o", dataset, "-j", "2"], capsys)
    assert code == 0, err
    for analysis in ANALYSES:
        names = sorted(p.name for p in (dataset / "labels" / analysis).glob("*.ProgramGraphFeaturesList.pb"))
        expected = ["example_a", "example_b", "example_c"]
        if analysis == "subexpressions":  # no two instructions share opcode and operand nodes in B and C
            expected = ["example_a"]
        assert names == [f"{n}.ProgramGraphFeaturesList.pb" for n in expected], analysis
    # the records decode with the label reader, one per root, with the SPEC §2.5 keys
    labels = ProgramGraphFeaturesList.FromString(
        (dataset / "labels" / "liveness" / "example_a.ProgramGraphFeaturesList.pb").read_bytes()
    )
    assert len(labels.graph) >= 1
    record = labels.graph[0]
    assert set(record.node_features.feature_list) == {"data_flow_root_node", "data_flow_value"}
    assert set(record.features.feature) == {"data_flow_step_count", "data_flow_active_node_count"}
    assert "2 without an eligible root" in err


def test_rerun_skips_finished_work_and_same_seed_same_bytes(dataset, capsys) -> None:
    run_cli(["analyze", "all", dataset, "-o", dataset, "-q"], capsys)
    path = dataset / "labels" / "dominance" / "example_c.ProgramGraphFeaturesList.pb"
    first = path.read_bytes()
    code, _, err = run_cli(["analyze", "all", dataset, "-o", dataset], capsys)
    assert code == 0 and "0 label files, 15 up to date" in err  # 13 label files + 2 graphs without a root
    run_cli(["analyze", "dominance", dataset, "-o", dataset, "--force", "-q"], capsys)
    assert path.read_bytes() == first
    run_cli(["analyze", "dominance", dataset, "-o", dataset / "other", "--seed", "1", "-q"], capsys)
    other = (dataset / "other" / "labels" / "dominance" / "example_c.ProgramGraphFeaturesList.pb").read_bytes()
    assert (
        load_labels(path).roots.tolist()
        != load_labels(
            dataset / "other" / "labels" / "dominance" / "example_c.ProgramGraphFeaturesList.pb"
        ).roots.tolist()
    )
    assert other != first


def test_max_roots_and_readable_formats(dataset, capsys) -> None:
    graph = dataset / "graphs" / "example_c.ProgramGraph.pb"
    code, _, _ = run_cli(
        ["analyze", "reachability", graph, "-o", dataset, "--format", "json", "--max-roots", "1"], capsys
    )
    assert code == 0
    labels = read_features_list(dataset / "labels" / "reachability" / "example_c.ProgramGraphFeaturesList.json")
    assert len(labels.graph) == 1
    code, out, _ = run_cli(["analyze", "reachability", graph], capsys)
    assert code == 0 and out.startswith("graph {")


def test_bad_graphs_are_reported_and_the_batch_goes_on(dataset, capsys) -> None:
    (dataset / "graphs" / "broken.ProgramGraph.pb").write_bytes(b"\xff\xfe not a graph")
    code, _, err = run_cli(["analyze", "reachability", dataset, "-o", dataset, "-q"], capsys)
    assert code == 1
    assert "broken.ProgramGraph.pb: error: " in err and "Traceback" not in err
    assert len(list((dataset / "labels" / "reachability").glob("*.pb"))) == 3


def test_usage_errors(dataset, capsys) -> None:
    assert run_cli(["analyze", "all", dataset / "graphs" / "example_a.ProgramGraph.pb"], capsys)[0] == 2
    assert run_cli(["analyze", "liveness", dataset / "nothing"], capsys)[0] in (1, 2)
    with pytest.raises(SystemExit):
        main(["analyze", "nonsense", str(dataset)])
