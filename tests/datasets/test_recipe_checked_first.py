"""A recipe is checked whole before anything is made from it: ``programl dataset build --recipe`` leaves no OUT
behind for a refused recipe, and ``DeepDataFlow(recipe=...)`` refuses a recipe whose paths leave ``raw/`` before its
``download()`` joins them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import programl.cli as cli
from programl.exceptions import ProgramlError

ESCAPING = {"name": "x", "sources": [{"kind": "files", "path": "../../outside", "settings": [["-O0"]]}]}


def test_a_refused_recipe_leaves_no_output_directory(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "dataset", "programl.cli.dataset")
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps(ESCAPING))
    (tmp_path / "data").mkdir()
    out = tmp_path / "out"
    code = cli.main(["dataset", "build", "--recipe", str(recipe), "--data", str(tmp_path / "data"), str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(err) == 1 and "../../outside" in err[0] and err[0].startswith("programl dataset build: error:")
    assert not out.exists()


def test_deepdataflow_checks_a_given_recipe_before_download(tmp_path: Path) -> None:
    pytest.importorskip("torch_geometric")
    from programl.datasets import DeepDataFlow

    with pytest.raises(ProgramlError, match=r"\.\./\.\./outside"):
        DeepDataFlow(tmp_path / "root", "reachability", recipe=ESCAPING, mirrors=[])
    assert not (tmp_path / "outside").exists()
    assert not (tmp_path / "root" / "raw").exists()
