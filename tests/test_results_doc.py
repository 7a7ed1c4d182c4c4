"""``docs/results.md`` states what the shipped models score, and ``docs/results.json`` holds the same numbers: every
number of the headline and of the tables behind it is the JSON's, so that neither can change without the other. The
headline's models are the ones ``programl predict`` runs by default (checked against the installed models'
``model.json``), one line per result with its anchor, a verdict that follows from the two numbers, a short protocol,
the command that reproduces it (given in full in the section it links to) and a link into that section. The page
stays short: the history of each number lives in ``studies/``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from programl.dataflow.names import ANALYSES

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
RESULTS = json.loads((DOCS / "results.json").read_text(encoding="utf-8"))
MARKDOWN = (DOCS / "results.md").read_text(encoding="utf-8")

#: The cells of the paper's data-flow table (SPEC §7.1).
TABLE_CELLS = ("DDF-30", "DDF-60", "DDF")
HEADLINE_COLUMNS = ["result", "ours", "anchor", "at the anchor?", "protocol", "command", "details"]
DEVMAP_PLATFORMS = {"amd": "AMD", "nvidia": "NVIDIA"}
#: The sections, in order: the product's speed and equality, then the three learned tasks.
SECTIONS = {
    1: "Building graphs: speed",
    2: "Building graphs: equality with the original",
    3: "Labelling graphs and building data sets: speed",
    4: "Training and inference speed",
    5: "Learning data-flow analyses",
    6: "OpenCL device mapping (devmap)",
    7: "POJ-104 algorithm classification",
}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("|")[1:-1]]


def _section(number: int) -> str:
    start = MARKDOWN.index(f"\n## {number}. ")
    end = MARKDOWN.find("\n## ", start + 1)
    return MARKDOWN[start : end if end >= 0 else None]


def _subsection(title: str) -> str:
    start = MARKDOWN.index(f"\n### {title}\n")
    ends = [i for i in (MARKDOWN.find("\n### ", start + 1), MARKDOWN.find("\n## ", start + 1)) if i >= 0]
    return MARKDOWN[start : min(ends) if ends else None]


def _rows(text: str, first_cell: str) -> list[list[str]]:
    return [_cells(line) for line in text.splitlines() if line.startswith(f"| {first_cell} |")]


def _slug(heading: str) -> str:
    """GitHub's anchor of a markdown heading (MyST's too): lower case, punctuation other than - and _ dropped, spaces
    to -."""
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


def test_the_page_is_short_and_its_sections_are_the_tasks() -> None:
    assert len(MARKDOWN.splitlines()) <= 500
    top = [line[3:] for line in MARKDOWN.splitlines() if line.startswith("## ")]
    assert top[0] == "Headline: the shipped models against the paper"
    assert top[1:8] == [f"{n}. {title}" for n, title in SECTIONS.items()]
    slugs = [slug for _, slug, _ in _headings()]
    assert len(slugs) == len(set(slugs)), "two headings with one anchor"


def test_no_dated_narrative() -> None:
    """The page is in the present tense: no session dates and no issue numbers (they are the history's)."""
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", MARKDOWN)
    assert not re.search(r"\bissue \d+", MARKDOWN, re.IGNORECASE)


def test_every_analysis_has_its_numbers() -> None:
    assert set(RESULTS["dataflow"]) == set(ANALYSES) == set(RESULTS["dataflow_real_code"]) - {"protocol"}
    for numbers in RESULTS["dataflow"].values():
        assert {"f1", "pooled_f1", "examples", "cpu_hours", "table", "step_free_table"} <= set(numbers)
        assert set(numbers["table"]) == set(numbers["step_free_table"]) == set(TABLE_CELLS)


@pytest.mark.parametrize("analysis", ANALYSES)
def test_the_headline_models_are_what_predict_runs(analysis: str) -> None:
    """The default model of each analysis (``programl predict dataflow`` without ``--model`` or ``--steps``) is the
    one whose cells and real-code scores the JSON holds."""
    from programl.pretrained.hub import default_pretrained

    name = default_pretrained("dataflow", analysis=analysis)
    assert {cell["model"] for cell in RESULTS["dataflow"][analysis]["step_free_table"].values()} == {name}
    assert RESULTS["dataflow_real_code"][analysis]["model"] == name


@pytest.mark.parametrize("platform", DEVMAP_PLATFORMS)
def test_the_devmap_row_is_the_shipped_models(platform: str) -> None:
    """The shipped devmap model's cross-validation (its ``model.json``) is the JSON's, and §6's table prints it."""
    from programl.pretrained.hub import find_pretrained_metadata

    shipped = RESULTS["devmap"][platform]["shipped"]
    (name,) = find_pretrained_metadata("devmap", platform=platform)
    assert name == shipped["model"]
    scores = find_pretrained_metadata("devmap", platform=platform)[name]["scores"]
    cv = scores["cross_validation"]
    assert f"{100 * cv['mean']['accuracy']:.1f}" == f"{shipped['accuracy']:.1f}"
    assert f"{100 * cv['std']['accuracy']:.1f}" == f"{shipped['accuracy_std']:.1f}"
    assert f"{cv['mean']['f1']:.2f}" == f"{shipped['f1']:.2f}" and scores["fold"] == shipped["shipped_fold"]
    assert sum(shipped["accuracy_by_fold"]) / 5 == pytest.approx(shipped["accuracy"], abs=0.1)  # each rounded
    [row] = [_cells(line) for line in _section(6).splitlines() if line.startswith("| ") and f"(`{name}`)" in line]
    assert row[2] == f"**{shipped['accuracy']:.1f} ± {shipped['accuracy_std']:.1f}**"
    assert row[3] == f"{shipped['f1']:.2f} ± {shipped['f1_std']:.2f}"
    assert row[4] == ", ".join(f"{a:.1f}" for a in shipped["accuracy_by_fold"])


def test_the_poj104_row_is_the_shipped_model() -> None:
    """The shipped classifyapp model's test and legacy errors (its ``model.json``) are the JSON's, and §7 prints them
    beside the paper's classifier that came before it."""
    from programl.pretrained.hub import find_pretrained_metadata

    [(name, metadata)] = find_pretrained_metadata("classifyapp").items()
    [(variant, numbers)] = [(k, v) for k, v in RESULTS["classifyapp_variants"].items() if v.get("shipped_as") == name]
    scores = metadata["scores"]
    assert f"{100 * scores['test']['error']:.2f}" == f"{numbers['error']:.2f}"
    assert f"{100 * scores['legacy']['error']:.2f}" == f"{numbers['legacy_error']:.2f}"
    assert f"{100 - 100 * scores['best_val_accuracy']:.2f}" == f"{numbers['val_error']:.2f}"
    [row] = [_cells(line) for line in _section(7).splitlines() if line.startswith("| **then one 4-epoch decay")]
    assert row[1:] == [f"**{numbers['val_error']:.2f} %**", f"**{numbers['error']:.2f} %** (331 errors)",
                       f"**{numbers['legacy_error']:.2f} %**"]  # fmt: skip
    paper = RESULTS["classifyapp"]
    [row] = [_cells(line) for line in _section(7).splitlines() if line.startswith("| the paper's classifier")]
    assert row[1:] == [f"{paper['val_error']:.2f} %", f"{paper['error']:.2f} %", f"{paper['legacy_error']:.2f} %"]
    assert f"{paper['cpu_hours']:.2f} CPU-hours" in _section(7) and f"{numbers['cpu_hours']:.2f}" in _section(7)


def _fifteen_cells() -> list[list[str]]:
    """The rows of §5's "The paper's table, cell by cell" (five analyses x three cells)."""
    section = _subsection("The paper's table, cell by cell")
    return [_cells(line) for line in section.splitlines() if line.startswith("| ") and "paper P / R / F1" not in line]


def _verdict(ours: float, paper: float) -> str:
    difference = round(ours - paper, 3)
    return "above" if difference > 0 else "yes" if difference == 0 else "**no**"


def test_the_fifteen_cells_are_the_json_beside_the_papers() -> None:
    """One table of §5 holds every cell of SPEC §7.1 for the faithful model and the default: the paper's precision,
    recall and F1 (``PAPER_TABLE``), ours from docs/results.json, and the verdict that follows."""
    from programl.tasks.dataflow.train import PAPER_TABLE

    rows = _fifteen_cells()
    assert len(rows) == len(ANALYSES) * len(TABLE_CELLS)
    for k, row in enumerate(rows):
        analysis, cell = list(PAPER_TABLE)[k // 3], TABLE_CELLS[k % 3]
        numbers = RESULTS["dataflow"][analysis]
        faithful, default = numbers["table"][cell], numbers["step_free_table"][cell]
        if k % 3 == 0:
            assert row[0] == f"{analysis} (`{default['model']}`)"
        assert row[1] == cell
        paper = PAPER_TABLE[analysis][cell]
        assert row[2] == " / ".join(f"{value:.3f}" for value in paper)
        for (ours, verdict), result in zip(((row[3], row[4]), (row[5], row[6])), (faithful, default)):
            assert ours.startswith(f"{result['f1']:.3f} ({result['pooled_f1']:.3f}); {result['examples']:,}; ")
            assert verdict == _verdict(result["f1"], paper[2])


def test_the_real_code_table_is_the_json() -> None:
    real = RESULTS["dataflow_real_code"]
    section = _subsection("Real code it never trained on")
    for analysis in ANALYSES:
        numbers = real[analysis]
        [row] = _rows(section, f"{analysis} (`{numbers['model']}`)")
        assert row[1:] == [f"{numbers['examples']:,}", f"**{numbers['f1']:.4f}**", f"{numbers['original_f1']:.4f}",
                           f"{numbers['ddf30_examples']:,}", f"{numbers['ddf30_f1']:.4f}"]  # fmt: skip


def _headline_rows() -> dict[str, list[str]]:
    """The headline table, by its first cell; the header checked, one line per row."""
    start = MARKDOWN.index("\n## Headline")
    section = MARKDOWN[start : MARKDOWN.index("\n## ", start + 1)]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    assert _cells(lines[0]) == HEADLINE_COLUMNS and set(lines[1]) <= set("|-")
    rows = {}
    for line in lines[2:]:
        cells = _cells(line)
        assert len(cells) == len(HEADLINE_COLUMNS), line
        assert cells[0] not in rows, cells[0]
        rows[cells[0]] = cells
    return rows


def _expected_rows() -> dict[str, dict]:
    """Every row the headline must have, from docs/results.json: its 'ours' and 'anchor' cells, whether a lower
    number is better, its section and a number its protocol names; the data-flow anchors are the paper's F1
    (``PAPER_TABLE``)."""
    from programl.tasks.dataflow.train import PAPER_TABLE

    expected = {}
    for analysis in ANALYSES:
        cells = RESULTS["dataflow"][analysis]["step_free_table"]
        for cell, name in (("DDF-30", f"{analysis} DDF-30 F1"), ("DDF", f"{analysis} F1, every test example")):
            expected[name] = {
                "ours": f"{cells[cell]['f1']:.3f} (pooled {cells[cell]['pooled_f1']:.3f})",
                "anchor": f"{PAPER_TABLE[analysis][cell][2]:.3f}",
                "section": 5,
                "protocol": f"{cells[cell]['examples']:,}",
            }
    for analysis in ANALYSES:
        numbers = RESULTS["dataflow_real_code"][analysis]
        name = f"{analysis} pooled F1 on real code" + ("" if numbers.get("libraries_seen") else " it never saw")
        expected[name] = {
            "ours": f"{numbers['f1']:.4f}",
            "anchor": "–",
            "section": 5,
            "protocol": f"{numbers['examples']:,} roots",
        }
    for platform, label in DEVMAP_PLATFORMS.items():
        numbers = RESULTS["devmap"][platform]
        expected[f"devmap {label} accuracy"] = {
            "ours": f"{numbers['shipped']['accuracy']:.1f} %",
            "anchor": f"{numbers['paper_accuracy']:.1f} %",
            "section": 6,
            "protocol": f"`{numbers['shipped']['model']}`",
        }
    [shipped] = [v for v in RESULTS["classifyapp_variants"].values() if v.get("shipped_as")]
    expected["POJ-104 test error"] = {
        "ours": f"{shipped['error']:.2f} %",
        "anchor": f"{shipped['paper_error']:.2f} %",
        "lower_is_better": True,
        "section": 7,
        "protocol": f"`{shipped['shipped_as']}`",
    }
    building = RESULTS["building"]
    expected["graph building, µs per node"] = {
        "ours": f"{building['us_per_node']:.1f}",
        "anchor": f"{building['original_us_per_node']:.1f}",
        "lower_is_better": True,
        "section": 1,
        "protocol": f"{building['files']:,} files",
    }
    expected["graphs identical to ProGraML 0.3.2's"] = {
        "ours": f"{building['differential_identical']:,} of {building['differential_files']:,} files",
        "anchor": f"{building['differential_files']:,}",
        "section": 2,
        "protocol": "the named LLVM 10 -> 22 upgrade effects",
    }
    return expected


def _number(cell: str) -> float:
    return float(cell.split()[0].replace(",", ""))


def test_the_headline_has_one_row_per_result_of_the_json() -> None:
    assert list(_headline_rows()) == list(_expected_rows())


@pytest.mark.parametrize("name", list(_expected_rows()))
def test_headline_row_is_the_json(name: str) -> None:
    """ours and anchor are the JSON's; the verdict follows from the two numbers at the anchor's printed precision."""
    expected = _expected_rows()[name]
    _, ours, anchor, verdict, protocol, command, details = _headline_rows()[name]
    assert ours == expected["ours"] and anchor == expected["anchor"]
    if anchor == "–":
        assert verdict == "–"
    else:
        difference = _number(ours) - _number(anchor)
        if expected.get("lower_is_better"):
            difference = -difference
        digits = len(anchor.split()[0].split(".")[1]) if "." in anchor else 0
        difference = round(difference, digits)
        assert verdict == ("above" if difference > 0 else "yes" if difference == 0 else "no"), (ours, anchor)
    assert 0 < len(protocol) <= 80 and expected["protocol"] in protocol, protocol  # a few words; the section has more
    assert details.startswith(f"[§{expected['section']}](#") and details.endswith(")")
    assert command.startswith("`") and command.endswith("`")


@pytest.mark.parametrize("name", list(_expected_rows()))
def test_headline_links_go_to_the_rows_section(name: str) -> None:
    """The link names a heading inside the row's section; that part of the page states the row's number and holds
    the row's command in full (each piece between the "…" of the cell)."""
    expected = _expected_rows()[name]
    row = _headline_rows()[name]
    anchor = row[-1].split("](#", 1)[1][:-1]
    headings = _headings()
    [(level, offset)] = [(level, offset) for level, slug, offset in headings if slug == anchor]
    section = MARKDOWN.index(f"\n## {expected['section']}. ")
    following = [o for lvl, _, o in headings if lvl <= 2 and o > section + 1]
    assert section < offset < (following[0] if following else len(MARKDOWN))
    later = [o for lvl, _, o in headings if lvl <= level and o > offset]
    text = MARKDOWN[offset : later[0] if later else None]
    assert expected["ours"].split(" (")[0].replace(" %", "").split(" of ")[0] in text
    for piece in row[5].strip("`").split("…"):
        assert " ".join(piece.split()) in " ".join(text.replace("\\\n", " ").split()), piece


def test_the_images_it_shows_are_in_docs_img_and_no_other_is() -> None:
    """The page's images live in docs/img; the plots it does not show live with the studies."""
    shown = set(re.findall(r"!\[[^\]]*\]\(img/([^)]+)\)", MARKDOWN))
    assert shown and shown == {p.name for p in (DOCS / "img").iterdir()}


def test_every_product_benchmark_is_named() -> None:
    """benchmarks/ holds the product's own speed and memory checks only, and the page names each of them."""
    for path in sorted((REPO / "benchmarks").iterdir()):
        if path.suffix not in (".py", ".sh"):
            continue
        assert f"benchmarks/{path.name}" in MARKDOWN, path.name


def test_the_size_table_is_the_json_and_names_the_defaults() -> None:
    """§5's large-graph table holds every analysis and bucket of ``dataflow_sizes`` in docs/results.json, each row
    as ``benchmarks/dataflow_sizes.py`` prints it, for the model ``programl predict`` runs by default."""
    from programl.pretrained.hub import default_pretrained

    sizes = RESULTS["dataflow_sizes"]
    section = _subsection("Large graphs, by size")
    assert " ".join(sizes["command"].split()) in " ".join(section.replace("\\\n", " ").split())
    for analysis in ANALYSES:
        model = sizes[analysis]["model"]
        assert model == default_pretrained("dataflow", analysis=analysis)
        rows = _rows(section, f"{analysis} (`{model}`)")
        assert [row[1] for row in rows] == list(sizes[analysis]["buckets"])
        for row, cell in zip(rows, sizes[analysis]["buckets"].values()):
            assert row[2:4] == [f"{cell['graphs']:,}", f"{cell['roots']:,}"]
            assert row[4:7] == [f"{cell[k]:.3f}" for k in ("precision", "recall", "f1")]
            ratio = (f"{cell['steps_ratio_median']:.2f} / {cell['steps_ratio_max']:.2f}"
                     if "steps_ratio_median" in cell else "fixed T")  # fmt: skip
            assert row[7] == ratio
            assert row[8:10] == [f"{cell['model_seconds_per_root']:.3f}", f"{cell['exact_seconds_per_root']:.4f}"]
