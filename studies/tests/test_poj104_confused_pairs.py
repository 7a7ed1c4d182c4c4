"""studies/poj104_confused_pairs.py: the most confused POJ-104 class pairs, and whether the literals the graph drops
tell them apart, on the data set's own training and validation programs."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

SCRIPT = runpy.run_path(str(Path(__file__).resolve().parents[1] / "poj104_confused_pairs.py"))

# the same program in three classes: 1 and 2 differ only in a printf format, 1 and 3 in nothing at all
PROGRAM = """int main() {{
  int n, i, a[{size}];
  scanf("%d", &n);
  for (i = 0; i < n; i++) a[i] = i * {k};
  printf("{format}", a[n - 1]);
  return 0;
}}
// variant {label}.{i}: no two files are the same text (the reader drops copies)
"""
FORMATS = {1: "%d\\n", 2: "%d,\\n", 3: "%d\\n"}


def codexglue(root: Path, per_class: int = 20) -> Path:
    rng = np.random.default_rng(0)
    for label, fmt in FORMATS.items():
        for i in range(per_class):
            path = root / "codexglue" / str(label) / f"{100 * label + i}.cpp"
            path.parent.mkdir(parents=True, exist_ok=True)
            size, k = int(rng.choice([100, 200, 1000])), int(rng.integers(1, 9))
            path.write_text(PROGRAM.format(size=size, k=k, format=fmt, label=label, i=i))
    return root / "codexglue"


def test_literals_are_split_into_strings_and_numbers() -> None:
    text = 'int a1[100]; char c = \'7\'; printf("%d 5 // 3", x + 0x1F, 2.5e-3, .5); // "q" 8\n/* 9 */ puts("\\"");'
    found = SCRIPT["literals"](text)
    assert found == {"strings": ["%d 5 // 3", '\\"'], "numbers": ["100", "0x1F", "2.5e-3", ".5"]}


def test_a_pair_that_differs_in_a_string_is_separable_a_duplicate_is_not(tmp_path: Path, capsys) -> None:
    source = codexglue(tmp_path)
    evaluation = {
        "val": {
            "error": 0.25,
            "count": 12,
            "confused_pairs": [
                {"classes": [1, 3], "count": 2, "share": 0.6667},
                {"classes": [1, 2], "count": 1, "share": 0.3333},
            ],
        }
    }
    (tmp_path / "evaluation_best.json").write_text(json.dumps(evaluation))
    out = tmp_path / "pairs.json"
    argv = [str(tmp_path / "evaluation_best.json"), "--source", str(source), "--no-verify", "--json", str(out)]
    assert SCRIPT["main"](argv) == 0
    result = json.loads(out.read_text())
    assert result["errors"] == 3 and result["graphs"] == 12
    duplicate, formats = result["pairs"]
    # 20 programs a class, split 12 / 4 / 4: each pair has 8 validation programs, half of each class
    assert duplicate["val_programs"] == formats["val_programs"] == 8
    assert duplicate["majority"] == formats["majority"] == 0.5
    assert formats["strings"] == 1.0  # the format string alone tells 1 from 2
    assert duplicate["strings"] == 0.5  # 1 and 3 have the same literals: no better than a coin
    assert "| 1 / 2 | 1 | 33.3 % | 0.12 | 50.0 % | 100.0 % |" in capsys.readouterr().out


def test_an_evaluation_without_pairs_is_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "old.json").write_text(json.dumps({"test": {"error": 0.05, "count": 10}}))
    assert SCRIPT["main"]([str(tmp_path / "old.json"), "--source", str(tmp_path), "--split", "test"]) == 1
    err = capsys.readouterr().err
    assert "no confused_pairs for the 'test' split" in err and len(err.strip().splitlines()) == 1
