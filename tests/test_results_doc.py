"""``docs/results.json`` holds the headline numbers of ``docs/results.md`` (issue 11): every number in the JSON is the
one the markdown tables print, so that neither can change without the other."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from programl.dataflow.names import ANALYSES

DOCS = Path(__file__).resolve().parents[1] / "docs"
RESULTS = json.loads((DOCS / "results.json").read_text(encoding="utf-8"))
MARKDOWN = (DOCS / "results.md").read_text(encoding="utf-8")


def _section(number: int) -> str:
    start = MARKDOWN.index(f"\n## {number}. ")
    end = MARKDOWN.find("\n## ", start + 1)
    return MARKDOWN[start : end if end >= 0 else None]


def _row(section: str, first_cell: str) -> str:
    rows = [line for line in section.splitlines() if line.startswith(f"| {first_cell} |")]
    assert len(rows) == 1, (first_cell, rows)
    return rows[0]


def test_every_analysis_has_its_headline_numbers() -> None:
    assert set(RESULTS["dataflow"]) == set(ANALYSES)
    for numbers in RESULTS["dataflow"].values():
        assert set(numbers) == {"f1", "pooled_f1", "examples", "cpu_hours"}
        assert 0.0 <= numbers["pooled_f1"] <= 1.0 and 0.0 <= numbers["f1"] <= 1.0 and numbers["cpu_hours"] > 0


@pytest.mark.parametrize("analysis", ANALYSES)
def test_dataflow_numbers_are_the_tables(analysis: str) -> None:
    numbers = RESULTS["dataflow"][analysis]
    cells = [cell.strip() for cell in _row(_section(5), analysis).split("|")[1:-1]]
    assert cells[7] == f"**{numbers['f1']:.3f}**"  # F1, the paper's per-batch mean
    assert cells[8] == f"{numbers['pooled_f1']:.3f}"
    assert cells[1].startswith(f"{numbers['examples']:,} (")


def test_devmap_numbers_are_the_tables() -> None:
    cells = [cell.strip() for cell in _row(_section(6), "**programl GGNN (this run)**").split("|")[1:-1]]
    assert cells[1].startswith(f"**{RESULTS['devmap']['amd']['accuracy']:.1f} ±")
    assert cells[3].startswith(f"**{RESULTS['devmap']['nvidia']['accuracy']:.1f} ±")


def test_classifyapp_number_is_the_tables() -> None:
    rows = [line for line in _section(7).splitlines() if line.startswith("| **programl GGNN, this run")]
    assert len(rows) == 1
    assert f"**{RESULTS['classifyapp']['error']:.2f} %**" in rows[0]


def _headline(first_cell: str) -> list[str]:
    start = MARKDOWN.index("\n## Headline")
    section = MARKDOWN[start : MARKDOWN.index("\n## ", start + 1)]
    return [cell.strip() for cell in _row(section, first_cell).split("|")[1:-1]]


@pytest.mark.parametrize("analysis", ANALYSES)
def test_headline_dataflow_rows_are_the_json(analysis: str) -> None:
    numbers = RESULTS["dataflow"][analysis]
    assert _headline(f"{analysis}, test F1 T=30")[1] == f"{numbers['f1']:.3f} (pooled {numbers['pooled_f1']:.3f})"


def test_headline_devmap_and_classifyapp_rows_are_the_json() -> None:
    assert _headline("devmap AMD, accuracy")[1:3] == [
        f"{RESULTS['devmap']['amd']['accuracy']:.1f} %",
        f"{RESULTS['devmap']['amd']['paper_accuracy']:.1f} %",
    ]
    assert _headline("devmap NVIDIA, accuracy")[1] == f"{RESULTS['devmap']['nvidia']['accuracy']:.1f} %"
    assert _headline("POJ-104, test error")[1:3] == [
        f"{RESULTS['classifyapp']['error']:.2f} %",
        f"{RESULTS['classifyapp']['paper_error']:.2f} %",
    ]


def test_headline_variant_rows_are_the_json() -> None:
    """Models that are not the paper's (reported beside the faithful ones, never instead of them)."""
    for name, numbers in RESULTS.get("dataflow_variants", {}).items():
        assert set(numbers) == {"analysis", "f1", "pooled_f1", "examples", "cpu_hours"}
        assert numbers["analysis"] in ANALYSES
        cells = _headline(f"{name} (not in the paper), test F1 T=30")
        assert cells[1] == f"{numbers['f1']:.4f} (pooled {numbers['pooled_f1']:.4f})"


def test_headline_devmap_variant_rows_are_the_json() -> None:
    """devmap models that are not the paper's (beside the GGNN's rows): at or above the paper and the baseline."""
    names = {"amd": "AMD", "nvidia": "NVIDIA"}
    for name, numbers in RESULTS.get("devmap_variants", {}).items():
        assert numbers["cpu_hours"] > 0
        for platform, label in names.items():
            row = numbers[platform]
            cells = _headline(f"devmap {label}, {' '.join(name.rsplit('-', 1))} (not in the paper), accuracy")
            assert cells[1:3] == [f"{row['accuracy']:.1f} %", f"{row['paper_accuracy']:.1f} %"]
            assert row["accuracy"] >= row["paper_accuracy"] and row["accuracy"] >= row["baseline_accuracy"]
