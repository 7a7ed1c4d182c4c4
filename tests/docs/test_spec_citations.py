"""The package cites its specification where a clone can follow it: ``docs/spec/<page>.md#<anchor>``.

Every citation in ``programl/`` must name a page of ``docs/spec/`` and, when it has one, an anchor of that page (a
heading's GitHub/MyST slug, or an explicit MyST target ``(name)=``); the pages' own links to each other must resolve
the same way; and no citation of the old form is left (``SPEC §4.5``, ``DESIGN §6``, ``SPEC Policy 1``, a bare
``§1.7``), since those name documents that the repository does not hold. ``--help`` shows none of them.

No Sphinx needed: the anchors are computed from the Markdown as MyST computes them (``myst_heading_anchors = 4``).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

SPEC_DIR = REPO_ROOT / "docs" / "spec"
PACKAGE = REPO_ROOT / "programl"
#: Files of the package that hold prose (docstrings, comments, model cards, .proto comments).
TEXT_SUFFIXES = {".py", ".pyi", ".md", ".proto", ".h", ".txt", ".rst"}
#: A citation: the page under docs/spec/ and an optional anchor.
CITATION = re.compile(r"docs/spec/(?P<page>[\w./-]+?\.md)(?:#(?P<anchor>[\w-]+))?(?![\w#-])")
#: Citations of SPEC.md / DESIGN.md, which are not in the repository.
OLD_STYLE = re.compile(
    r"\b(?:SPEC|DESIGN)\s+§"  # SPEC §4.5, DESIGN §6 (also split over a line break)
    r'|\bSPEC\s+"?Policy'  # SPEC Policy 1, SPEC "Policy"
    r"|(?<![\w.])Policy\s+\d\b"  # Policy 4
    r"|(?<![\w`§])§\d"  # a bare §1.7 (checked below: a section of another page, docs/results.md §5, is fine)
)
#: Text right before a bare § that makes it a section of another document of the repository (``docs/results.md`` §5).
OTHER_DOCUMENT = re.compile(r"\.md`{0,2}\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
TARGET = re.compile(r"^\(([\w-]+)\)=\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
#: Links between the spec's pages, and from them to the other pages of the site: [text](page.md#anchor).
LINK = re.compile(r"\]\((?P<page>[\w./-]+\.md)?(?:#(?P<anchor>[\w-]+))?\)")


def github_slug(title: str) -> str:
    """A heading's anchor as GitHub and MyST (``myst_parser.slugs.github_slugify``) make it."""
    text = re.sub(r"[`*]", "", title)  # inline markup is not part of the rendered title
    return re.sub(r"[^\w\u4e00-\u9fff\- ]", "", text.lower().replace(" ", "-"))


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page: heading slugs (levels 1-4, duplicates numbered) and explicit targets."""
    return set(anchor_titles(page))


def anchor_titles(page: Path) -> dict[str, str]:
    """Each anchor of a Markdown page with the title of its heading (an explicit target: its own name)."""
    found: dict[str, str] = {}
    seen: Counter[str] = Counter()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        target = TARGET.match(line)
        if target:
            found[target.group(1)] = target.group(1)
        heading = HEADING.match(line)
        if heading and len(heading.group(1)) <= 4:
            slug = github_slug(heading.group(2))
            found[slug if not seen[slug] else f"{slug}-{seen[slug]}"] = heading.group(2)
            seen[slug] += 1
    return found


def package_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)


def citations() -> list[tuple[str, int, str, str | None]]:
    """(file, line, page, anchor) of every citation in the package."""
    found = []
    for path in package_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in CITATION.finditer(line):
                found.append((str(path.relative_to(REPO_ROOT)), number, m.group("page"), m.group("anchor")))
    return found


def old_style_citations() -> list[str]:
    """``file:line: text`` of every citation of the old form left in the package."""
    left = []
    for path in package_files():
        text = path.read_text(encoding="utf-8")
        for m in OLD_STYLE.finditer(text):
            if m.group(0).startswith("§") and OTHER_DOCUMENT.search(text[: m.start()]):
                continue
            number = text.count("\n", 0, m.start()) + 1
            entry = f"{path.relative_to(REPO_ROOT)}:{number}: {text.splitlines()[number - 1].strip()}"
            if entry not in left:  # one line per line, however many citations it holds
                left.append(entry)
    return left


def test_the_slugs_are_mysts() -> None:
    assert github_slug("Node fields") == "node-fields"
    assert github_slug("Functions and modules") == "functions-and-modules"
    assert github_slug("POJ-104 table") == "poj-104-table"
    assert github_slug("Policy: deliberate differences from ProGraML 0.3.2") == (
        "policy-deliberate-differences-from-programl-032"
    )
    assert github_slug("The `programl` view") == "the-programl-view"
    myst_slugs = pytest.importorskip("myst_parser.slugs", reason="the docs extra is not installed")
    for title in ("Node fields", "POJ-104 table", "Policy: deliberate differences from ProGraML 0.3.2", "A, b & c"):
        assert github_slug(title) == myst_slugs.github_slugify(title)


def test_the_package_cites_the_specification() -> None:
    pages = {page for _, _, page, _ in citations()}
    assert {"graph.md", "analyses.md", "models.md", "tasks.md", "datasets.md", "design.md"} <= pages


def test_every_cited_page_and_anchor_exists() -> None:
    missing = []
    cache: dict[str, dict[str, str] | None] = {}
    for where, number, page, anchor in citations():
        if page not in cache:
            path = SPEC_DIR / page
            cache[page] = anchor_titles(path) if path.is_file() else None
        if cache[page] is None:
            missing.append(f"{where}:{number}: docs/spec/{page} does not exist")
        elif anchor is not None and anchor not in cache[page]:
            missing.append(f"{where}:{number}: docs/spec/{page} has no anchor #{anchor}")
        elif anchor is not None and not re.fullmatch(r"[A-Za-z0-9]+(?:[ -][A-Za-z0-9]+)*", cache[page][anchor]):
            # a heading of words, spaces and single hyphens gets the same anchor on GitHub, from MyST and as the HTML
            # id Sphinx gives its section; punctuation ("0.3.2") makes them differ
            missing.append(f"{where}:{number}: the heading of #{anchor} is not plain words: cite a plainer one")
    assert not missing, "citations that lead nowhere:\n" + "\n".join(missing)


def test_the_spec_pages_link_to_existing_anchors() -> None:
    missing = []
    for page in sorted(SPEC_DIR.glob("*.md")):
        fenced = False
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if FENCE.match(line):
                fenced = not fenced
            if fenced:
                continue
            for m in LINK.finditer(line):
                target = (page.parent / m.group("page")).resolve() if m.group("page") else page
                if not target.is_file():
                    missing.append(f"{page.name}:{number}: {m.group(0)}: no such page")
                elif m.group("anchor") and m.group("anchor") not in anchors(target):
                    missing.append(f"{page.name}:{number}: {m.group(0)}: no such anchor")
    assert not missing, "\n".join(missing)


def test_no_page_repeats_a_heading() -> None:
    """A repeated heading gets a numbered anchor (``-1``), which changes when a heading above it is added."""
    repeated = []
    for page in sorted(SPEC_DIR.glob("*.md")):
        fenced = False
        slugs: Counter[str] = Counter()
        for line in page.read_text(encoding="utf-8").splitlines():
            if FENCE.match(line):
                fenced = not fenced
            heading = HEADING.match(line) if not fenced else None
            if heading:
                slugs[github_slug(heading.group(2))] += 1
        repeated += [f"{page.name}: #{slug}" for slug, count in slugs.items() if count > 1]
    assert not repeated, repeated


def test_no_old_style_citation_is_left() -> None:
    """Files still citing SPEC.md / DESIGN.md: rewrite them with the mapping of the spec index page."""
    left = old_style_citations()
    files = sorted({entry.split(":", 1)[0] for entry in left})
    assert not left, (
        f"{len(left)} old-style citation(s) in {len(files)} file(s) "
        "(cite docs/spec/<page>.md#<anchor> instead):\n" + "\n".join(left)
    )


def test_old_style_citations_are_found() -> None:
    """The detector of the test above, on the forms the package used."""
    for text in ("(SPEC §4.5)", "(DESIGN §6 CLI conventions)", "SPEC\n    §6.1", "SPEC Policy 1", "(Policy 4)",
                 "(§1.7 collapsed)", 'SPEC "Policy"'):  # fmt: skip
        assert OLD_STYLE.search(text), text
    for text in ("``docs/results.md`` §7", "docs/results.md §5", "docs/spec/policy.md#labels", "Policy = Literal"):
        m = OLD_STYLE.search(text)
        assert m is None or (m.group(0).startswith("§") and OTHER_DOCUMENT.search(text[: m.start()])), text


def test_help_text_leaves_the_citations_out() -> None:
    from programl.cli.helptext import description, help_text

    doc = (
        "``programl x``: labels (docs/spec/analyses.md, docs/spec/datasets.md#deepdataflow-layout) for\n"
        ":class:`~programl.proto.ProgramGraph` files (docs/spec/design.md#command-line)."
    )
    assert help_text(doc) == "programl x: labels for\nProgramGraph files."
    assert description(doc + "\n\nMore.") == "programl x: labels for\nProgramGraph files."


def test_help_of_the_commands_holds_no_citation() -> None:
    from programl.cli import make_parser

    parser = make_parser()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in subparsers.choices.items():
        if name in ("train", "evaluate"):  # their help comes from the task modules (tests/cli/test_train.py)
            continue
        text = sub.format_help()
        assert "docs/spec" not in text and "§" not in text, (name, text)
