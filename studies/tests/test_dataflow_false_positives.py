"""studies/dataflow_false_positives.py and studies/false_positive_kinds.py on a small DeepDataFlow data set of
generated IR (no compiler needed) that holds the faithful subexpressions model's failure (studies/history/results-history.md §5): a group
of `store i32 1, ptr @g` beside many loads of `@g`. The shipped faithful model flags the loads with a store root; the
root-context variant does not. Counts that add up, JSON, one-line errors."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")


SCRIPT = Path(__file__).resolve().parents[1] / "dataflow_false_positives.py"


@pytest.fixture(scope="module")
def main():
    return runpy.run_path(str(SCRIPT), run_name="dataflow_false_positives")["main"]


def store_group_beside_loads(k: int) -> str:
    """``@f<k>``: 2-4 stores of 1 to ``@g`` (a subexpressions group), then 12 + k loads of ``@g``, each added to an
    argument (the loads are another group: the same operand, another opcode)."""
    arguments = ", ".join(f"i32 %a{i}" for i in range(12 + k))
    stores = "  store i32 1, ptr @g\n" * (2 + k % 3)
    loads = "".join(f"  %l{i} = load i32, ptr @g\n  %s{i} = add i32 %a{i}, %l{i}\n" for i in range(12 + k))
    return f"@g = global i32 0\n\ndefine void @f{k}({arguments}) {{\nentry:\n{stores}{loads}  ret void\n}}\n"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    from programl.data.deepdataflow import build_dataset, discover_inputs

    sources = tmp_path_factory.mktemp("src")
    for k in range(1, 11):
        (sources / f"g{k}.ll").write_text(store_group_beside_loads(k))
    root = tmp_path_factory.mktemp("ddf") / "ddf"
    build_dataset(discover_inputs([sources]), root, jobs=1)
    return root


def scores(main, dataset: Path, model: str, out: Path) -> dict:
    argv = ["--model", model, "--dataset", str(dataset), "--split", "train", "--max-steps", "all", "--top", "1000"]
    assert main([*argv, "--threads", "1", "-q", "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_the_faithful_models_failure_and_the_variants_fix(main, dataset: Path, tmp_path: Path, capsys) -> None:
    faithful = scores(main, dataset, "subexpressions", tmp_path / "faithful.json")
    text = capsys.readouterr().out
    assert text.startswith("subexpressions on train (") and "| store | load |" in text
    assert faithful["false_positives"] >= 20
    assert faithful["shares_operand_with_root"] == faithful["false_positives"] and faithful["same_text_as_root"] == 0
    assert faithful["pairs"] == [{"root": "store", "false_positive": "load", "count": faithful["false_positives"]}]
    variant = scores(main, dataset, "subexpressions-root-context", tmp_path / "variant.json")
    assert variant["examples"] == faithful["examples"] and variant["false_positives"] == 0 and variant["pairs"] == []
    assert variant["true_positives"] >= faithful["true_positives"]


def test_counts_add_up_and_match_the_labels(main, dataset: Path, tmp_path: Path) -> None:
    import numpy as np

    from programl.pretrained import pretrained

    result = scores(main, dataset, "subexpressions", tmp_path / "fp.json")
    assert result["examples"] == result["examples_available"] > 0 and result["steps"] == 30
    fp = result["false_positives"]
    assert sum(p["count"] for p in result["pairs"]) == fp
    assert 0 <= result["shares_operand_with_root"] <= fp and 0 <= result["same_text_as_root"] <= fp
    assert sum(result["most_in_one_example"]) <= fp and len(result["most_in_one_example"]) <= 10
    # the totals are the model's confusion on these examples, counted directly
    from torch_geometric.data import Batch

    data = runpy.run_path(str(SCRIPT.with_name("dataflow_f1_by_distance.py")), run_name="helpers")["load_examples"]
    model = pretrained("subexpressions")

    class Args:
        pass

    args = Args()
    args.dataset, args.split, args.max_steps, args.max_nodes = str(dataset), "train", None, 40_000
    args.processed_dir, args.max_examples, args.seed, args.quiet = None, 0, 205, True
    examples, _ = data(args, model)
    batch = Batch.from_data_list([examples[i] for i in range(len(examples))])
    predicted = (model.model(batch).argmax(-1) == 1).numpy()
    truth = batch.y.numpy().astype(bool)
    assert fp == int(np.sum(predicted & ~truth))
    assert result["true_positives"] == int(np.sum(predicted & truth))
    assert result["false_negatives"] == int(np.sum(~predicted & truth))


def test_one_line_errors(main, dataset: Path, capsys) -> None:
    assert main(["--model", "devmap-amd", "--dataset", str(dataset), "-q"]) == 1
    assert capsys.readouterr().err.strip().endswith("a devmap model, not a data-flow model")
    assert main(["--model", "subexpressions", "--dataset", str(dataset / "nowhere"), "-q"]) == 1
    assert "no such data set directory" in capsys.readouterr().err
    unwritable = ["--split", "train", "--max-steps", "all", "--json", "/proc/no/such/dir/fp.json"]
    assert main(["--model", "subexpressions", "--dataset", str(dataset), "-q", *unwritable]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "/proc/no" in err and err.count("\n") == 1
    with pytest.raises(SystemExit) as info:
        main(["--model", "subexpressions", "--dataset", str(dataset), "--top", "0"])
    assert info.value.code == 2
