"""Small DeepDataFlow inputs shared by the data-set, CLI and training tests: the IR fixtures of tests/data and
generated straight-line-plus-loop functions of any length (graphs of different sizes and step counts)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

DATA = Path(__file__).resolve().parent
IR_FIXTURES = ("example_a.ll", "example_b.ll", "example_c.ll", "io_parallel.ll")


def chain_ir(n: int) -> str:
    """``@f<n>``: a straight line of ``n`` adds, then a loop (LLVM 22 syntax)."""
    body = "".join(f"  %v{i + 1} = add i32 %v{i}, {i + 1}\n" for i in range(n))
    return (
        f"define i32 @f{n}(i32 %v0, i32 %n) {{\nentry:\n{body}  br label %loop\n"
        f"loop:\n  %i = phi i32 [ 0, %entry ], [ %j, %loop ]\n  %j = add i32 %i, %v{n}\n"
        f"  %c = icmp slt i32 %j, %n\n  br i1 %c, label %loop, label %exit\nexit:\n  ret i32 %j\n}}\n"
    )


def write_sources(directory: Path, chains: Iterable[int] = ()) -> Path:
    """Copy the IR fixtures into ``directory`` and add ``chain<n>.ll`` for each ``n``; returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in IR_FIXTURES:
        shutil.copy(DATA / name, directory / name)
    for n in chains:
        (directory / f"chain{n}.ll").write_text(chain_ir(n))
    return directory


def tiny_dataset(directory: Path, chains: Iterable[int] = (2, 3, 4, 6, 8), label_format: str = "compact") -> Path:
    """``directory/ddf``: a DeepDataFlow data set of the IR fixtures and ``chains`` (built once, in about a second;
    no compiler needed), its sources in ``directory/src``, its labels in ``label_format``."""
    from programl.data.deepdataflow import build_dataset, discover_inputs

    root = directory / "ddf"
    if not root.is_dir():
        inputs = discover_inputs([write_sources(directory / "src", chains=chains)])
        build_dataset(inputs, root, jobs=1, label_format=label_format)
    return root
