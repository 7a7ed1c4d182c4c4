"""The ``>>>`` examples of the package run as doctests in ``make test``, and none is skipped whole.

``pyproject.toml`` collects ``programl/`` with ``--doctest-modules``; ``programl/conftest.py`` gives each docstring a
fresh directory linking the bundled inputs and the ``needs`` helper, which skips an example, with the reason, where
an optional tool or package is missing. What is checked here, without running the examples (they run as items of
their own): that the configuration stays so, that the conftest collects every module with examples, and that no
``# doctest: +SKIP`` hides an example: a skipped line must say why (it downloads from the internet), and no
docstring may skip all its examples.
"""

from __future__ import annotations

import ast
import doctest
import re
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "programl"
#: What a skipped example's line must say: why it cannot run in the tests.
SKIP_REASON = re.compile(r"internet|download|https?://", re.IGNORECASE)


def docstrings(path: Path) -> list[tuple[int, str, str]]:
    """``(line, name, docstring)`` of the module, each class and each function of ``path`` that has one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in [tree, *ast.walk(tree)]:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                line = node.body[0].lineno
                found.append((line, getattr(node, "name", "<module>"), text))
    return list(dict.fromkeys(found))  # the module node is visited twice


def modules_with_examples() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if ">>>" in p.read_text(encoding="utf-8"))


def skip_problems(path: Path) -> list[str]:
    """What is wrong with the ``+SKIP`` directives of ``path``: one line each (file:line and why)."""
    problems = []
    parser = doctest.DocTestParser()
    relative = path.relative_to(REPO_ROOT).as_posix() if path.is_relative_to(REPO_ROOT) else path.name
    for line, name, text in docstrings(path):
        examples = parser.get_examples(text)
        skipped = [e for e in examples if e.options.get(doctest.SKIP)]
        for example in skipped:
            if not SKIP_REASON.search(example.source):
                where = f"{relative}:{line + example.lineno}"
                problems.append(f"{where}: +SKIP without a reason on its line (only lines that need the internet)")
        if examples and len(skipped) == len(examples):
            problems.append(f"{relative}:{line}: every example of {name} is skipped")
        elif examples and all(e.options.get(doctest.SKIP) or _only_imports(e.source) for e in examples):
            problems.append(f"{relative}:{line}: {name} runs nothing but imports (the rest is skipped)")
    return problems


def _only_imports(source: str) -> bool:
    return all(isinstance(node, (ast.Import, ast.ImportFrom)) for node in ast.parse(source).body)


def test_pyproject_collects_the_package_examples() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    options = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]
    options = options["ini_options"]
    assert "programl" in options["testpaths"]
    assert "--doctest-modules" in options["addopts"].split()
    assert {"NORMALIZE_WHITESPACE", "ELLIPSIS"} <= set(options["doctest_optionflags"].split())


def test_the_package_has_examples_and_the_conftest_collects_each() -> None:
    from programl.conftest import pytest_ignore_collect

    found = modules_with_examples()
    assert len(found) >= 14, found
    for path in found:
        # every module with examples imports what `make setup` installs, so none is left out
        assert pytest_ignore_collect(path, None) is None, path
    assert pytest_ignore_collect(PACKAGE / "exceptions.py", None) is True  # no examples: not imported for them


def test_a_module_whose_imports_are_missing_is_left_out(tmp_path: Path) -> None:
    from programl.conftest import pytest_ignore_collect

    module = tmp_path / "optional.py"
    module.write_text('"""An example.\n\n>>> 1 + 1\n2\n"""\n\nimport no_such_package_for_doctests\n')
    assert pytest_ignore_collect(module, None) is True
    module.write_text('"""An example.\n\n>>> 1 + 1\n2\n"""\n\n\ndef f():\n    import no_such_package_for_doctests\n')
    assert pytest_ignore_collect(module, None) is None  # imported when f runs, not at collection


def test_needs_skips_with_the_reason_and_passes_what_is_there() -> None:
    from programl.conftest import needs

    assert needs("numpy") is None
    with pytest.raises(pytest.skip.Exception, match="needs no_such_package_for_doctests"):
        needs("numpy", "no_such_package_for_doctests")


def test_no_skip_directive_hides_an_example() -> None:
    problems = [p for path in modules_with_examples() for p in skip_problems(path)]
    assert not problems, "\n".join(problems)


def test_the_check_finds_a_block_skipped_whole(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        'def f():\n    """Doc.\n\n    >>> import os\n    >>> os.listdir("x")  # doctest: +SKIP\n    """\n\n\n'
        'def g():\n    """Doc.\n\n    >>> fetch("https://example.org/x")  # downloads  # doctest: +SKIP\n'
        '    >>> 1 + 1\n    2\n    """\n'
    )
    problems = skip_problems(module)
    assert len(problems) == 2 and "+SKIP without a reason" in problems[0] and "runs nothing but imports" in problems[1]
