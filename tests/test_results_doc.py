"""``docs/results.json`` holds the headline numbers of ``docs/results.md`` (issue 11): every number in the JSON is the
one the markdown tables print, so that neither can change without the other. The page opens with a headline table of
one line per result (issue 35, item 6): each row's numbers are the JSON's, its verdict follows from them, and its link
goes to the subsection of its task's section that holds the protocol and the reasons."""

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
        assert {"f1", "pooled_f1", "examples", "cpu_hours"} <= set(numbers)
        assert set(numbers) <= {"f1", "pooled_f1", "examples", "cpu_hours", "table", "step_free_table"}
        assert 0.0 <= numbers["pooled_f1"] <= 1.0 and 0.0 <= numbers["f1"] <= 1.0 and numbers["cpu_hours"] > 0


#: The cells of the paper's data-flow table (SPEC §7.1; issue 36 item 1).
TABLE_CELLS = ("DDF-30", "DDF-60", "DDF")


@pytest.mark.parametrize("analysis", ANALYSES)
def test_the_papers_table_is_the_documents(analysis: str) -> None:
    """docs/results.json's ``table`` of each analysis (the faithful model) is §5's table of the three cells, each with
    precision, recall, F1 and pooled F1; a ``step_free_table`` has the same shape and is in §5's step-free table."""
    numbers = RESULTS["dataflow"][analysis]
    section = _section(5)
    row = [cell.strip() for cell in _row(section, f"`{analysis}`").split("|")[1:-1]]
    assert set(numbers.get("table", {})) <= set(TABLE_CELLS)
    for i, name in enumerate(TABLE_CELLS, start=1):
        cell = numbers.get("table", {}).get(name)
        if cell is None:
            continue
        assert {"precision", "recall", "f1", "pooled_f1", "examples"} <= set(cell)
        assert row[i].startswith(
            f"{cell['precision']:.3f} / {cell['recall']:.3f} / **{cell['f1']:.3f}** ({cell['pooled_f1']:.3f})"
        ), (name, row[i])
    step_free = numbers.get("step_free_table")
    if step_free:
        assert set(step_free) <= set(TABLE_CELLS)
        model = {cell["model"] for cell in step_free.values()}.pop()
        steps = {cell["steps"] for cell in step_free.values()}.pop()
        inference = "until stable" if steps == "stable" else f"T={steps} over the control floods"
        line = [c.strip() for c in _row(section, f"**`{model}`, {inference}**").split("|")[1:-1]]
        for i, name in enumerate(TABLE_CELLS, start=1):
            cell = step_free[name]
            assert line[i] == (
                f"{cell['precision']:.3f} / {cell['recall']:.3f} / **{cell['f1']:.3f}** ({cell['pooled_f1']:.3f})"
            ), (name, line[i])


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
    for numbers in RESULTS.get("classifyapp_variants", {}).values():  # the shipped model since 2026-12-04
        variants = [line for line in _section(7).splitlines() if line.startswith("| **programl GGNN + ")]
        assert len(variants) == 1 and f"**{numbers['error']:.2f} %**" in variants[0]


HEADLINE_COLUMNS = ["result", "ours", "paper", "at the paper?", "protocol", "details"]
DEVMAP_PLATFORMS = {"amd": "AMD", "nvidia": "NVIDIA"}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("|")[1:-1]]


def _headline_section() -> str:
    start = MARKDOWN.index("\n## Headline")
    return MARKDOWN[start : MARKDOWN.index("\n## ", start + 1)]


def _headline_rows() -> dict[str, list[str]]:
    """The headline table, by its first cell; the header checked, one line per row."""
    lines = [line for line in _headline_section().splitlines() if line.startswith("|")]
    assert _cells(lines[0]) == HEADLINE_COLUMNS and set(lines[1]) <= set("|-")
    rows = {}
    for line in lines[2:]:
        cells = _cells(line)
        assert len(cells) == len(HEADLINE_COLUMNS), line
        assert cells[0] not in rows, cells[0]
        rows[cells[0]] = cells
    return rows


def _expected_rows() -> dict[str, dict]:
    """Every row the headline must have, from docs/results.json: the row's name, its 'ours' and 'paper' cells and
    whether a lower number is better; the data-flow papers' F1 come from the §5 table (the JSON does not hold them)."""
    long_runs = _section(5)
    expected = {}

    def paper_f1(analysis: str) -> float:
        return float(_row(long_runs, analysis).split("|")[11].split("/")[-1])

    for analysis in ANALYSES:
        numbers = RESULTS["dataflow"][analysis]
        expected[f"{analysis} DDF-30 F1"] = {
            "ours": f"{numbers['f1']:.3f} (pooled {numbers['pooled_f1']:.3f})",
            "paper": f"{paper_f1(analysis):.3f}",
            "lower_is_better": False,
            "section": 5,
            "test_examples": int(_cells(_row(long_runs, analysis))[4].replace(",", "")),
        }
    for name, numbers in RESULTS.get("dataflow_variants", {}).items():
        expected[f"{name} DDF-30 F1 (not the paper's model)"] = {
            "ours": f"{numbers['f1']:.4f} (pooled {numbers['pooled_f1']:.4f})",
            "paper": f"{paper_f1(numbers['analysis']):.3f}",
            "lower_is_better": False,
            "section": 5,
        }
    for platform, label in DEVMAP_PLATFORMS.items():
        numbers = RESULTS["devmap"][platform]
        expected[f"devmap {label} accuracy"] = {
            "ours": f"{numbers['accuracy']:.1f} %",
            "paper": f"{numbers['paper_accuracy']:.1f} %",
            "lower_is_better": False,
            "section": 6,
        }
    for name, variant in RESULTS.get("devmap_variants", {}).items():
        for platform, label in DEVMAP_PLATFORMS.items():
            numbers = variant[platform]
            expected[f"devmap {label} accuracy, {' '.join(name.rsplit('-', 1))} (not the paper's model)"] = {
                "ours": f"{numbers['accuracy']:.1f} %",
                "paper": f"{numbers['paper_accuracy']:.1f} %",
                "lower_is_better": False,
                "section": 6,
            }
    expected["POJ-104 test error"] = {
        "ours": f"{RESULTS['classifyapp']['error']:.2f} %",
        "paper": f"{RESULTS['classifyapp']['paper_error']:.2f} %",
        "lower_is_better": True,
        "section": 7,
    }
    for name, numbers in RESULTS.get("classifyapp_variants", {}).items():
        expected[f"POJ-104 test error, {' '.join(name.split('-'))} (not the paper's model)"] = {
            "ours": f"{numbers['error']:.2f} %",
            "paper": f"{numbers['paper_error']:.2f} %",
            "lower_is_better": True,
            "section": 7,
        }
    return expected


def _number(cell: str) -> float:
    return float(cell.split()[0])


def _slug(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation other than - and _ dropped, spaces to -."""
    text = heading.strip().lower()
    return "".join(c for c in text if c.isalnum() or c in "-_ ").replace(" ", "-")


def _headings() -> list[tuple[int, str, int]]:
    """(level, anchor, offset) of every heading outside code blocks."""
    found, offset, fenced = [], 0, False
    for line in MARKDOWN.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            hashes = len(line) - len(line.lstrip("#"))
            found.append((hashes, _slug(line[hashes:]), offset))
        offset += len(line)
    return found


def test_the_page_opens_with_the_headline_then_one_section_per_task() -> None:
    top = [(anchor, offset) for level, anchor, offset in _headings() if level == 2]
    assert top[0][0] == "headline-the-learned-results-against-the-paper"
    assert [anchor.split("-")[0] for anchor, _ in top[1:]] == [str(n) for n in range(1, len(top))]
    assert MARKDOWN.index("\n## 1. ") > MARKDOWN.index("\n## Headline")


def test_the_headline_has_one_row_per_result_of_the_json() -> None:
    assert list(_headline_rows()) == list(_expected_rows())


@pytest.mark.parametrize("name", list(_expected_rows()))
def test_headline_row_is_the_json(name: str) -> None:
    """ours and paper are the JSON's (data-flow papers: §5's table); the verdict follows from the two numbers."""
    expected = _expected_rows()[name]
    _, ours, paper, verdict, protocol, details = _headline_rows()[name]
    assert ours == expected["ours"]
    assert paper == expected["paper"]
    difference = _number(ours) - _number(paper)
    if expected["lower_is_better"]:
        difference = -difference
    difference = round(difference, len(paper.split()[0].split(".")[1]))  # at the paper's printed precision
    assert verdict == ("above" if difference > 0 else "yes" if difference == 0 else "no"), (ours, paper)
    assert 0 < len(protocol) <= 80, protocol  # a few words; the section has the rest
    if "test_examples" in expected:
        assert f"{expected['test_examples']:,} DDF-30 test examples" in protocol
    assert details.startswith(f"[§{expected['section']}](#") and details.endswith(")")


@pytest.mark.parametrize("name", list(_expected_rows()))
def test_headline_links_go_to_the_rows_section(name: str) -> None:
    """The link names a heading of the page inside the row's section, and that subsection states the row's number."""
    expected = _expected_rows()[name]
    anchor = _headline_rows()[name][-1].split("](#", 1)[1][:-1]
    headings = _headings()
    [(level, offset)] = [(level, offset) for level, slug, offset in headings if slug == anchor]
    section = MARKDOWN.index(f"\n## {expected['section']}. ")
    following = [o for lvl, _, o in headings if lvl <= 2 and o > section + 1]
    assert section < offset < (following[0] if following else len(MARKDOWN))
    later = [o for lvl, _, o in headings if lvl <= level and o > offset]
    subsection = MARKDOWN[offset : later[0] if later else None]
    assert expected["ours"].split(" (")[0].replace(" %", "") in subsection


def _fifteen_cells() -> list[list[str]]:
    """The rows of §5's "The paper's table, cell by cell" (five analyses x three cells)."""
    start = MARKDOWN.index("\n### The paper's table, cell by cell")
    section = MARKDOWN[start : MARKDOWN.index("\n### ", start + 1)]
    return [_cells(line) for line in section.splitlines() if line.startswith("| ") and "paper P / R / F1" not in line]


def _verdict(ours: float, paper: float) -> str:
    difference = round(ours - paper, 3)
    return "above" if difference > 0 else "yes" if difference == 0 else "**no**"


def test_the_fifteen_cells_are_the_json_beside_the_papers() -> None:
    """One table of §5 holds every cell of SPEC §7.1 for the faithful model and the step-free variant: the paper's
    precision, recall and F1 (``PAPER_TABLE``), ours from docs/results.json, and the verdict that follows."""
    from programl.tasks.dataflow.train import PAPER_TABLE

    rows = _fifteen_cells()
    assert len(rows) == len(ANALYSES) * len(TABLE_CELLS)
    for k, row in enumerate(rows):
        analysis, cell = list(PAPER_TABLE)[k // 3], TABLE_CELLS[k % 3]
        numbers = RESULTS["dataflow"][analysis]
        faithful, step_free = numbers["table"][cell], numbers["step_free_table"][cell]
        if k % 3 == 0:
            assert row[0] == f"{analysis} (`{step_free['model']}`)"
        assert row[1] == cell
        paper = PAPER_TABLE[analysis][cell]
        assert row[2] == " / ".join(f"{value:.3f}" for value in paper)
        for (ours, verdict), result in zip(((row[3], row[4]), (row[5], row[6])), (faithful, step_free)):
            assert ours.startswith(f"{result['f1']:.3f} ({result['pooled_f1']:.3f}); {result['examples']:,}; ")
            assert verdict == _verdict(result["f1"], paper[2])
