"""``programl view`` pages in a real browser (issue 37 item 3): headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium) opens the page of a bundled example and checks what it shows: the graph is
drawn, the node and edge counts match the graph, a node shows its source line, search finds nodes, functions fold
and unfold, picking a root shows its exact labels beside the model's, and no console error appears.

Skips with a reason where Selenium, Chromium or its driver is missing (``make toolchain`` installs them).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

CHROMIUM = os.environ.get("PROGRAML_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = os.environ.get("PROGRAML_CHROMEDRIVER") or shutil.which("chromedriver")


def _skip_reason() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if not CHROMIUM or not DRIVER:
        return "no headless browser: apt-get install chromium chromium-driver (make toolchain does)"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,900",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    except Exception as error:  # noqa: BLE001 - a browser that cannot start here: say why and skip
        pytest.skip(f"headless Chromium did not start: {str(error).strip().splitlines()[0][:200]}")
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(30)
    yield driver
    driver.quit()


def _open(driver, page: Path) -> None:
    driver.get(page.resolve().as_uri())
    deadline = time.monotonic() + 30
    while driver.execute_script("return document.body && document.body.dataset.ready") != "true":
        assert time.monotonic() < deadline, "the page never finished drawing"
        errors = _errors(driver)
        assert not errors, errors
        time.sleep(0.1)


def _errors(driver) -> list[str]:
    """The console's errors and warnings since the last call (Cytoscape warns about styles it cannot apply)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "ERROR", "WARNING")]


@pytest.fixture(scope="module")
def fizzbuzz(tmp_path_factory, clang22):
    """The page of examples/fizzbuzz.c with reachability's exact labels and the bundled model, as the CLI writes it."""
    pytest.importorskip("torch")
    from programl.cli import main

    out = tmp_path_factory.mktemp("view")
    os.chdir(REPO_ROOT)
    assert main(["view", "examples/fizzbuzz.c", "--analysis", "reachability", "-o", str(out), "-q"]) == 0
    return out / "fizzbuzz.html"


def test_fizzbuzz_page(browser, fizzbuzz) -> None:
    import numpy as np
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from programl.dataflow.analyze import analyze_arrays, eligible_roots
    from programl.view import read_input

    graph, locations = read_input(str(REPO_ROOT / "examples" / "fizzbuzz.c"))
    n, e = len(graph.node), len(graph.edge)
    _open(browser, fizzbuzz)
    js = browser.execute_script

    # the graph is drawn, every node and edge of it
    assert browser.find_elements(By.CSS_SELECTOR, "#cy canvas"), "no canvas in the page"
    assert js("return programlView.nodeCount()") == n
    assert js("return programlView.edgeCount()") == e
    assert browser.find_element(By.ID, "counts").get_attribute("data-nodes") == str(n)
    assert browser.find_element(By.ID, "counts").text.startswith(f"{n} nodes")
    box = js("var b = programlView.cy.elements().boundingBox(); return [b.w, b.h];")
    assert box[0] > 100 and box[1] > 100

    # a node's text, full text and source line
    node = min(locations.nodes)
    file, line, _ = locations.nodes[node]
    js("programlView.focusNode(arguments[0])", node)
    details = browser.find_element(By.ID, "details").text
    assert graph.node[node].text in details and f"fizzbuzz.c:{line}" in details
    assert locations.lines[file][line].strip() in browser.find_element(By.ID, "source-line").text

    # search by text
    search = browser.find_element(By.ID, "search")
    search.send_keys("icmp")
    deadline = time.monotonic() + 5
    while js("return programlView.state.matches.size") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    icmps = [i for i, x in enumerate(graph.node) if x.text == "icmp"]
    matches = js("return Array.from(programlView.state.matches)")
    assert set(icmps) <= set(matches)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#results div[data-i]")) == len(matches)

    # fold every function, then unfold one with its checkbox
    browser.find_element(By.ID, "collapse-all").click()
    assert js("return programlView.nodeCount()") == 0
    assert js("return programlView.cy.nodes('.folded').length") == len(graph.function) + 1
    browser.find_element(By.CSS_SELECTOR, "#functions-box summary").click()
    browser.find_element(By.CSS_SELECTOR, "#functions input[data-g='0']").click()
    in_main = js("return programlView.data.nodes.group.filter(function (g) { return g === 0; }).length")
    assert 0 < in_main < n and js("return programlView.nodeCount()") == in_main
    browser.find_element(By.ID, "expand-all").click()
    assert js("return programlView.nodeCount()") == n

    # pick a root: its exact labels beside the model's
    roots = js("return programlView.data.analysis.roots")
    assert roots == eligible_roots(graph, "reachability").tolist()
    root = roots[len(roots) // 2]
    Select(browser.find_element(By.ID, "root")).select_by_value(str(root))
    exact = analyze_arrays(graph, "reachability", roots=[root]).labels[0].astype(bool)
    summary = browser.find_element(By.ID, "summary")
    assert summary.get_attribute("data-exact") == str(int(exact.sum()))
    assert f"root {root} " in summary.text and f"exact {int(exact.sum())} true" in summary.text
    rows = browser.find_elements(By.CSS_SELECTOR, "#label-table tbody tr")
    shown = {int(r.get_attribute("data-i")) for r in rows}
    assert set(np.flatnonzero(exact).tolist()) <= shown
    for r in rows:
        cells = [c.text for c in r.find_elements(By.TAG_NAME, "td")]
        assert cells[3] == ("true" if exact[int(cells[0])] else "false")
        assert cells[4] in ("true", "false") and 0 <= float(cells[5]) <= 1
        mistake = cells[3] != cells[4]
        assert (r.get_attribute("class") in ("fp", "fn")) == mistake
    assert js("return programlView.cy.getElementById('n' + arguments[0]).hasClass('lab-root')", root)
    classes = js(
        "return programlView.cy.nodes('.instruction, .variable, .constant').map(function (x) {"
        " return [x.data('i'), x.classes().filter(function (c) { return c.indexOf('lab-') === 0 && c !== 'lab-root'; })[0]]; })"
    )
    for i, label in classes:
        assert (label in ("lab-tp", "lab-fn")) == bool(exact[i]), (i, label)

    assert _errors(browser) == []


def test_folded_page(browser, tmp_path) -> None:
    """A page that opens folded (as graphs of more than 1,500 nodes do): functions are single nodes joined by dashed
    edges that count the edges they stand for; unfolding all draws every node."""
    import programl
    from programl.view import to_html

    graph = programl.from_llvm_ir((REPO_ROOT / "examples" / "dot_product.ll").read_text())
    page = tmp_path / "dot_product.html"
    page.write_text(to_html(graph, expand="none", analysis="dominance"), encoding="utf-8")
    _open(browser, page)
    js = browser.execute_script
    assert js("return programlView.nodeCount()") == 0
    meta = js("return programlView.cy.edges('.meta').map(function (e) { return e.data('count'); })")
    assert meta and sum(meta) <= len(graph.edge)
    js("programlView.expandAll()")
    assert js("return programlView.nodeCount()") == len(graph.node)
    assert js("return programlView.cy.edges('.meta').length") == 0
    assert js("return programlView.data.analysis.model") is None
    assert _errors(browser) == []
