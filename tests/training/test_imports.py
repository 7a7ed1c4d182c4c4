"""The training package has no import circle and no function-level import of the package (issue 35 item 5):
``UsageError`` lives in :mod:`programl.exceptions`, ``Schedule`` in :mod:`programl.training.schedule`, the file
helpers in :mod:`programl.util.fs`; the old places still export them."""

from __future__ import annotations

import ast
from pathlib import Path

import programl.training
from programl.exceptions import ProgramlError, UsageError

TRAINING = Path(programl.training.__file__).parent


def _imports(path: Path) -> tuple[set[str], list[str]]:
    """The ``programl`` modules (and names, which may be modules) ``path`` imports at its top level, and the modules
    it imports inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("programl"):
            top.add(node.module)
            top.update(f"{node.module}.{alias.name}" for alias in node.names)
    nested = [
        node.module
        for function in ast.walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(function)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("programl")
    ]
    return top, nested


def test_no_function_level_import_of_the_package() -> None:
    nested = {path.name: _imports(path)[1] for path in sorted(TRAINING.glob("*.py"))}
    assert {name: modules for name, modules in nested.items() if modules} == {}


def test_the_modules_of_training_import_each_other_without_a_circle() -> None:
    modules = {f"programl.training.{path.stem}": path for path in TRAINING.glob("*.py") if path.stem != "__init__"}
    edges = {}
    for name, path in modules.items():
        top, nested = _imports(path)
        edges[name] = {m for m in (*top, *nested) if m in modules}  # a lazy import closes a circle too
    done: set[str] = set()

    def visit(name: str, stack: tuple[str, ...]) -> None:
        assert name not in stack, " -> ".join((*stack, name))
        if name not in done:
            for other in sorted(edges[name]):
                visit(other, (*stack, name))
            done.add(name)

    for name in sorted(modules):
        visit(name, ())


def test_moved_names_are_still_exported_where_they_were() -> None:
    from programl.tasks.run_options import UsageError as from_options
    from programl.training import Schedule, lr_factor, write_json
    from programl.training import UsageError as from_training
    from programl.training.checkpoint import write_json as from_checkpoint
    from programl.training.engine import Schedule as from_engine
    from programl.training.schedule import Schedule as from_schedule
    from programl.util.fs import write_json as from_fs

    assert issubclass(UsageError, ProgramlError)
    assert from_training is from_options is UsageError
    assert Schedule is from_engine is from_schedule
    assert write_json is from_checkpoint is from_fs
    assert lr_factor(Schedule(warmup_examples=10), 5, 0.0) == 0.5


def test_task_options_give_their_schedule() -> None:
    from programl.tasks.options import TaskOptions
    from programl.training import Schedule

    options = TaskOptions(warmup_examples=4, lr_decay="cosine", clip_grad_norm=1.0, precision="bf16")
    assert Schedule.of(options) == Schedule(4, "cosine", 1.0, "bf16")


def test_a_tasks_training_module_imports_at_its_top_only() -> None:
    """Issue 35: ``programl/tasks/<task>/train.py`` has no function-level import (``--help`` is served by the
    task's light ``spec.py``, so the training module may import torch at its top)."""
    tasks = TRAINING.parent / "tasks"
    nested = {}
    for path in sorted(tasks.glob("*/train.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nested[path.parent.name] = [
            ast.unparse(node)
            for function in ast.walk(tree)
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(function)
            if isinstance(node, (ast.Import, ast.ImportFrom))
        ]
    assert set(nested) >= {"dataflow", "devmap", "classifyapp"}
    assert {task: found for task, found in nested.items() if found} == {}
