"""The examples of the package's docstrings run as doctests in ``make test`` (``--doctest-modules`` over ``programl/``
in ``pyproject.toml``), as networkx's do: this file gives them their directory and their namespace.

* Each docstring's examples run in a fresh temporary directory that links the repository's ``examples/`` and
  ``tests/data/``, so ``open("examples/fizzbuzz.c")`` reads the bundled inputs, and what an example writes
  (``data/ddf`` ...) is thrown away. ``$PROGRAML_SHARED_DATA`` points at the shared research data when it is there
  (``../shared/data`` of the checkout, or ``$PROGRAML_SHARED_DATA``: ``tests/conftest.py``'s ``SHARED_DATA``).
* ``needs`` is in their namespace: ``needs("clang-22")`` skips the rest of a docstring's examples, saying what is
  missing, where an optional tool, the shared data or a package is absent (``"clang-22"``, ``"shared data"``, or a
  module name such as ``"torch_geometric"``); where it is there, the examples run.
* Only modules with examples are imported, and only when the packages they import at the top are installed (a
  missing optional package is not a collection error; networkx's ``collect_ignore`` does the same).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, SHARED_DATA

#: What each docstring's directory links, relative to the repository (and to that directory).
LINKED = ("examples", "tests/data")
_PROMPT = ">" * 3  # not written out: this file has no examples of its own


def _top_level_imports(path: Path) -> set[str]:
    """The top-level packages ``path`` imports at module level (not inside functions or ``TYPE_CHECKING``)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    """Leave out modules without examples, and modules with examples whose top-level imports are not installed."""
    if collection_path.suffix != ".py":
        return None
    if _PROMPT not in collection_path.read_text(encoding="utf-8"):
        return True
    if any(importlib.util.find_spec(name) is None for name in _top_level_imports(collection_path)):
        return True
    return None


def _available(what: str) -> bool:
    if what == "clang-22":
        from programl.exceptions import UnsupportedCompiler
        from programl.graph_builder.clang import find_clang

        try:
            find_clang()
        except UnsupportedCompiler:
            return False
        return True
    if what == "shared data":
        return SHARED_DATA.is_dir()
    return importlib.util.find_spec(what) is not None


def needs(*what: str) -> None:
    """Skip the rest of the docstring's examples unless each of ``what`` is there (``"clang-22"``, ``"shared data"``,
    or a module name)."""
    missing = [w for w in what if not _available(w)]
    if missing:
        pytest.skip(f"the example needs {' and '.join(missing)} (not found)")


@pytest.fixture(autouse=True)
def _doctest_directory(doctest_namespace: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run each docstring's examples in a fresh directory linking the bundled inputs, with ``needs`` at hand."""
    for name in LINKED:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).symlink_to(REPO_ROOT / name, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    if SHARED_DATA.is_dir():
        monkeypatch.setenv("PROGRAML_SHARED_DATA", str(SHARED_DATA))
    doctest_namespace["needs"] = needs
