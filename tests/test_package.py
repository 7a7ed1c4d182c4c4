"""The top-level package: every public name resolves, and importing it stays cheap (DESIGN §1)."""

from __future__ import annotations

import subprocess
import sys

import programl


def test_every_exported_name_resolves() -> None:
    for name in programl.__all__:
        assert getattr(programl, name) is not None, name


def test_import_is_cheap() -> None:
    code = "import sys, programl; print(sorted(m for m in ('torch', 'networkx', 'llvmlite') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_graph_only_modules_import_without_torch() -> None:
    code = (
        "import sys, programl.graph_builder.llvm, programl.dataflow, programl.io.serialize, "
        "programl.io.networkx_convert, programl.io.json_convert, programl.io.dot, programl.create; "
        "print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_unknown_attribute() -> None:
    try:
        programl.not_a_thing  # noqa: B018
    except AttributeError as error:
        assert "not_a_thing" in str(error)
    else:
        raise AssertionError("expected AttributeError")
