"""Installed without the ``ml`` extra (``pip install .``: graphs and labels work without torch, by design; issue 39):
the commands and functions that need PyTorch and torch-geometric say in one line which extra to install, instead of
a ``ModuleNotFoundError`` traceback, and everything else (``--help``, ``build``, ``programl.from_llvm_ir``) works.

torch stays installed: each check runs Python in a subprocess whose import system cannot find ``torch`` /
``torch_geometric`` (the path finder is replaced by one that reports them absent, as for a package not installed).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
ADVICE = "needs PyTorch and torch-geometric ({}not installed): pip install 'programl[ml]'"

BLOCK = """\
import importlib.machinery, sys
_BLOCKED = {blocked!r}
class _NotInstalled(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            return None
        return super().find_spec(name, path, target)
sys.meta_path[:] = [_NotInstalled if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""
CLI = "import sys\nfrom programl.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def python(code: str, *args: str, blocked=("torch", "torch_geometric")) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK.format(blocked=tuple(blocked)) + code, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def programl(*args: str, blocked=("torch", "torch_geometric")) -> subprocess.CompletedProcess:
    return python(CLI, *args, blocked=blocked)


def test_the_block_works() -> None:
    result = python("import torch")
    assert result.returncode == 1 and "ModuleNotFoundError: No module named 'torch'" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["train", "dataflow", "--analysis", "reachability"],
        ["evaluate", "devmap"],
        ["predict", "classifyapp", str(DATA / "dataflow_loops.c")],
        ["predict", "devmap", str(DATA / "dataflow_loops.c")],
        ["export-pretrained", "no-such-run"],
    ],
    ids=lambda args: args[0],
)
def test_ml_commands_say_which_extra_to_install(args) -> None:
    result = programl(*args)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == f"programl {args[0]} {ADVICE.format('')}\n"


def test_a_missing_torch_geometric_is_named() -> None:
    result = programl("train", "dataflow", "--analysis", "reachability", blocked=("torch_geometric",))
    assert result.returncode == 1
    assert result.stderr == f"programl train {ADVICE.format('torch-geometric is ')}\n"


def test_help_and_graph_commands_work_without_torch(tmp_path) -> None:
    for args in (["--help"], ["train", "--help"], ["train", "dataflow", "--help"], ["predict", "--help"]):
        result = programl(*args)
        assert result.returncode == 0 and result.stdout.startswith("usage: programl"), (args, result.stderr)
    result = programl("build", str(DATA / "example_a.ll"), "-o", str(tmp_path), "-q")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "example_a.ProgramGraph.pb").stat().st_size > 0
    # a usage error still comes first, as argparse finds it
    result = programl("evaluate", "no-such-task")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_help_imports_no_torch() -> None:
    """`programl --help` stays fast: torch is neither imported nor even looked for (torch installed here)."""
    code = (
        "import sys\nfrom programl.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in ('torch', 'torch_geometric')), file=sys.stderr)\n"
    )
    result = python(code, blocked=())
    assert result.stderr.strip() == "[]"


def test_to_pyg_says_which_extra_to_install() -> None:
    code = """\
import programl
graph = programl.from_llvm_ir(open(sys.argv[1]).read())  # graphs work without torch
assert len(graph.node) > 10
for name in ("to_pyg", "to_hetero", "from_pyg"):
    try:
        getattr(programl, name)
    except ImportError as error:
        assert isinstance(error, ModuleNotFoundError), type(error)
        print(error)
try:
    from programl import to_pyg
except ImportError as error:
    print(error)
try:
    import programl.io.pyg
except ImportError as error:
    print(error)
"""
    result = python(code, str(DATA / "example_a.ll"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"programl.{name} {ADVICE.format('')}" for name in ("to_pyg", "to_hetero", "from_pyg", "to_pyg")
    ] + [f"programl.io.pyg {ADVICE.format('')}"]


def test_the_model_zoo_and_the_data_sets_say_which_extra_to_install() -> None:
    """``programl.pretrained.pretrained()`` and ``programl.datasets.DevMap()`` raised a bare ``ModuleNotFoundError``
    (No module named 'torch')."""
    code = """\
for statement in (
    "from programl.pretrained import pretrained",
    "import programl.pretrained.hub",
    "from programl.datasets import DevMap",
    "import programl.datasets.devmap",
):
    try:
        exec(statement)
    except ImportError as error:
        print(type(error).__name__, error)
"""
    result = python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"ModuleNotFoundError programl.{package} {ADVICE.format('')}"
        for package in ("pretrained", "pretrained", "datasets", "datasets")
    ]
