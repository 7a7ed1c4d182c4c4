"""The layers of the package (docs/architecture.md): the import-linter contracts of ``pyproject.toml`` hold, list no
exception, catch an import that points up and a circle, and the architecture page draws the same layers."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytest.importorskip("importlinter", reason="import-linter (the dev extra) checks the layers")
tomllib = pytest.importorskip("tomllib")

#: Runs import-linter's command (``lint-imports``) with this interpreter; no cache is written.
LINT_IMPORTS = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())",
]


def _config() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]


def _contract(kind: str) -> dict:
    (contract,) = [c for c in _config()["contracts"] if c["type"] == kind]
    return contract


def _lint(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)} if pythonpath else None
    return subprocess.run(
        [*LINT_IMPORTS, "--no-cache", "--no-logo"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_contracts_hold() -> None:
    result = _lint(REPO)
    assert result.returncode == 0, "lint-imports:\n" + result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


def test_the_contracts_list_no_exception() -> None:
    """No import is let through: no ``ignore_imports`` anywhere; every top-level module has its layer; the packages
    are all looked into for circles (no ``skip_descendants``)."""
    for contract in _config()["contracts"]:
        assert not contract.get("ignore_imports"), contract["name"]
    layers = _contract("layers")
    assert layers["exhaustive"] is True and not layers.get("exhaustive_ignores")
    assert not _contract("acyclic_siblings").get("skip_descendants")


@pytest.fixture
def package_copy(tmp_path) -> Path:
    """A copy of the package's source and of pyproject.toml, to break on purpose."""
    shutil.copytree(
        REPO / "programl",
        tmp_path / "programl",
        ignore=shutil.ignore_patterns("__pycache__", "weights", "vendor", "assets", "*.pyc"),
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_an_import_that_points_up_fails_naming_its_line(package_copy) -> None:
    models = package_copy / "programl" / "models" / "build.py"
    models.write_text(models.read_text() + "\n\ndef _zoo():\n    from programl.pretrained import hub  # noqa\n")
    result = _lint(package_copy, pythonpath=package_copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "programl.models is not allowed to import programl.pretrained" in result.stdout
    assert re.search(r"programl\.models\.build -> programl\.pretrained\.hub \(l\.\d+\)", result.stdout)


def test_a_circle_inside_a_package_fails(package_copy) -> None:
    util = package_copy / "programl" / "util"
    (util / "first.py").write_text("from programl.util import second  # noqa\n")
    (util / "second.py").write_text("def f():\n    from programl.util import first  # noqa\n")
    result = _lint(package_copy, pythonpath=package_copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "No cycles are allowed in programl.util" in result.stdout


def test_a_new_top_level_module_must_be_given_its_layer(package_copy) -> None:
    (package_copy / "programl" / "newcomer.py").write_text("import programl.util\n")
    result = _lint(package_copy, pythonpath=package_copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "programl.newcomer" in result.stdout


def test_the_architecture_page_draws_the_contracts_layers() -> None:
    """Each row of the picture (``│ a | b │``) is a layer of the contract, top to bottom."""
    page = (REPO / "docs" / "architecture.md").read_text()
    picture = page.split("```text\n", 1)[1].split("```", 1)[0]
    rows = [m.group(1).strip() for m in re.finditer(r"^│ ([^│]+)│", picture, flags=re.MULTILINE)]
    assert rows == [re.sub(r"\s*\|\s*", " | ", layer) for layer in _contract("layers")["layers"]]
    described = {name for bold in re.findall(r"\*\*`([^`]+)`\*\*", page) for name in re.split(r"\s*\|\s*", bold)}
    for layer in _contract("layers")["layers"]:  # each package has its paragraph
        for name in re.split(r"\s*\|\s*", layer):
            assert name in described, name
