"""The documentation site builds, offline, with warnings as errors (issue 37 item 1), and holds what it promises: the
getting-started page with the README's two commands, the graph page, the API reference of the public packages, the
CLI reference generated from the parsers (every command), the executed tutorials with their real output, the data
sets, training, the model cards, results, compatibility, security, and the embedded ``programl view`` page.

One build (``python -m sphinx -W --keep-going``, as ``make docs`` runs it) into a temporary directory; skips where the
``docs`` extra is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("myst_parser", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("sphinx_gallery", reason="the docs extra is not installed (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def site(tmp_path_factory, clang22) -> Path:
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):  # offline: nothing may be fetched
        env[proxy] = "http://127.0.0.1:9"
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "docs",
               str(out / "html"), "-d", str(out / "doctrees")]  # fmt: skip
    result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout[-4000:], result.stderr[-8000:])
    assert "WARNING" not in result.stderr, result.stderr[-8000:]
    return out / "html"


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _plain(page: Path) -> str:
    """The page's text without its tags (highlighted code is split into spans)."""
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", _text(page)))


def test_pages(site: Path) -> None:
    for page in ("index", "getting-started", "graph", "view", "cli", "datasets", "training", "pretrained", "results",
                 "compat", "llvm22", "security", "reliability", "auto_tutorials/index", "api/index"):  # fmt: skip
        assert (site / f"{page}.html").is_file(), page
    assert "make demo" in _plain(site / "getting-started.html") and "make test" in _plain(site / "getting-started.html")
    assert (site / "searchindex.js").is_file() and (site / "search.html").is_file()


def test_api_reference(site: Path) -> None:
    import programl

    api = _text(site / "api" / "programl.html")
    for name in programl.__all__:
        if name in ("AnalysisError", "GraphCreationError", "GraphTransformError", "UnsupportedCompiler",
                    "ProgramGraph", "ProgramGraphFeaturesList", "ProgramGraphOptions"):  # fmt: skip
            continue
        assert f'id="programl.{name}"' in api or (name == "__version__" and 'id="__version__"' in api), name
    from programl import dataflow, view

    for module, page in ((dataflow, "dataflow"), (view, "view")):
        text = _text(site / "api" / f"{page}.html")
        for name in module.__all__:
            if name != "AnalysisError":
                assert f'id="{module.__name__}.{name}"' in text, name
    tasks, training = _text(site / "api" / "tasks.html"), _text(site / "api" / "training.html")
    for name in ("tasks.TaskSpec", "tasks.registry.TASKS", "tasks.registry.get_task", "util.options.option", "tasks.options.TaskOptions",
                 "tasks.dataflow.spec.DataflowOptions", "tasks.devmap.spec.DevmapSpec"):  # fmt: skip
        assert f'id="programl.{name}"' in tasks, name
    for name in ("Trainer", "TrainingTask", "Schedule"):
        assert f'id="programl.training.{name}"' in training, name


def test_cli_reference(site: Path) -> None:
    from programl.cli import COMMANDS

    text = _text(site / "cli.html")
    for command in COMMANDS:
        assert f"programl {command}" in text, command
    assert "usage: programl view" in text and "--analysis" in text


def test_tutorials_ran(site: Path) -> None:
    text = _text(site / "auto_tutorials" / "tutorial_3_pretrained.html")
    assert "false positives" in text and "sphx-glr-script-out" in text
    assert "MultiDiGraph with" in _text(site / "auto_tutorials" / "tutorial_1_build.html")


def test_embedded_view_page(site: Path) -> None:
    page = site / "view" / "fizzbuzz.html"
    assert page.is_file()
    text = _text(page)
    assert "cytoscape" in text.lower() and '"analysis":{"name":"reachability"' in text
    assert 'src="view/fizzbuzz.html"' in _text(site / "view.html")
    for url in ("http://", "https://"):  # nothing fetched when opened: no script, style or font from the network
        for tag in ("<script src=", "<link href=", '<link rel="stylesheet" href="'):
            assert f"{tag}{url}" not in text and f'{tag}"{url}' not in text


def test_model_cards(site: Path) -> None:
    text = _text(site / "pretrained.html")
    for card in sorted((REPO_ROOT / "programl" / "pretrained" / "weights").glob("*/MODEL_CARD.md")):
        assert card.parent.name in text, card
