"""Deeply nested IR (issue 12, item 4) and a broken module with debug info must end in a GraphCreationError or a
graph, never a crash of the caller.

LLVM parses and prints nested constant expressions recursively (~1.3 KB of stack per level): 10,000 levels overflow
an 8 MB stack. Every case that could crash runs in a child process with a timeout, so that a regression fails the
test instead of killing pytest.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from programl.exceptions import GraphCreationError
from programl.graph_builder.ir_text import nesting_depth
from programl.graph_builder.llvm import MAX_NESTING, graph_from_ir
from tests.conftest import REPO_ROOT


def nested_gep(depth: int) -> str:
    """A global initialised with ``depth`` nested constant GEPs (LLVM does not fold them)."""
    return "@x = global i8 0\n@g = global ptr " + "getelementptr (i8, ptr " * depth + "@x" + ", i64 1)" * depth + "\n"


def nested_in_function(depth: int) -> str:
    inner = "getelementptr (i8, ptr " * depth + "@f" + ", i64 1)" * depth
    return f"define ptr @f() {{\n  ret ptr {inner}\n}}\n"


def run_child(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (repository on sys.path); a segfault shows as returncode -11."""
    prelude = f"import sys\nsys.path.insert(0, {str(REPO_ROOT)!r})\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout
    )


# -- the pre-scan -----------------------------------------------------------------------------------------------


def test_nesting_depth_ignores_strings_and_comments() -> None:
    text = '@s = constant [3 x i8] c"(((" ; ((((((((\n@t = global { [2 x i32] } zeroinitializer\n'
    assert nesting_depth(text) == (2, None)  # { [ ... ] }: the string and the comment do not count
    assert nesting_depth("))))) ((") == (2, None)  # an unmatched closer does not hide the nesting after it


def test_nesting_depth_locates_the_first_bracket_past_the_limit() -> None:
    text = 'x "é" ((((((('
    depth, offset = nesting_depth(text, 5)
    assert depth == 7
    assert text.encode("utf-8")[offset:] == b"(("  # the 6th bracket, as a UTF-8 byte offset


def test_small_texts_are_not_scanned() -> None:
    assert nesting_depth("((((", limit=10) == (4, None)  # four openers in all: cannot nest deeper than 4


# -- textual IR -------------------------------------------------------------------------------------------------


def test_nesting_past_the_limit_is_an_error_at_the_bracket() -> None:
    with pytest.raises(GraphCreationError, match=f"nest deeper than {MAX_NESTING} levels") as info:
        graph_from_ir(nested_gep(MAX_NESTING + 10), path="deep.ll")
    error = info.value
    assert (error.path, error.line) == ("deep.ll", 2)
    prefix = "@g = global ptr " + "getelementptr (i8, ptr " * MAX_NESTING + "getelementptr "
    assert error.column == len(prefix) + 1  # the bracket that opens level MAX_NESTING + 1
    assert str(error) == f"deep.ll:2:{error.column}: {error.message}"


def test_ten_thousand_levels_do_not_kill_the_caller() -> None:
    result = run_child(
        """
        import programl
        from programl.exceptions import GraphCreationError
        from tests.graph_builder.test_deep_nesting import nested_gep, nested_in_function
        for text in (nested_gep(10_000), nested_in_function(10_000)):
            try:
                programl.from_llvm_ir(text)
            except GraphCreationError as error:
                print(error.line, error.column, error.message)
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all("nest deeper than" in line for line in lines)
    assert lines[1].startswith("2 ")  # the `ret` line of the function


def test_deep_but_accepted_nesting_builds_on_a_big_stack_even_from_a_small_thread() -> None:
    # 4,000 levels need ~5 MB of stack; the caller's thread has 512 KB, so the parse must not run on it
    result = run_child(
        """
        import threading
        from programl.graph_builder.llvm import graph_from_ir
        from tests.graph_builder.test_deep_nesting import nested_in_function
        out = []
        threading.stack_size(512 * 1024)
        thread = threading.Thread(target=lambda: out.append(graph_from_ir(nested_in_function(4000))))
        thread.start()
        thread.join()
        [constant] = [n for n in out[0].node if n.type == 2]
        print(constant.features.feature["full_text"].bytes_list.value[0].decode().count("getelementptr ("))
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["4000"]


def test_cli_reports_deep_nesting_in_one_line(tmp_path) -> None:
    source = tmp_path / "deep.ll"
    source.write_text(nested_gep(10_000))
    result = subprocess.run(
        [sys.executable, "-m", "programl", "build", str(source), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 1
    [line] = [line for line in result.stderr.splitlines() if "error:" in line]
    assert line.startswith(f"{source}:2:") and "nest deeper than" in line
    assert "Traceback" not in result.stderr


# -- bitcode ----------------------------------------------------------------------------------------------------


def test_deep_bitcode_is_built_without_crashing() -> None:
    # 100,000 levels (0.9 MB of bitcode): the bitcode reader copes, but printing them on the main thread's 8 MB
    # stack crashes
    result = run_child(
        """
        import threading
        import llvmlite.binding as llvm
        import programl
        from tests.graph_builder.test_deep_nesting import nested_gep
        text = nested_gep(100_000) + "define ptr @f() {\\n  ret ptr @g\\n}\\n"
        out = []
        threading.stack_size(512 << 20)  # only to write the test input
        writer = threading.Thread(target=lambda: out.append(llvm.parse_assembly(text).as_bitcode()))
        writer.start()
        writer.join()
        threading.stack_size(0)
        graph = programl.from_bitcode(out[0])
        print(len(graph.node), [n.text for n in graph.node])
        """,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split(maxsplit=1)[0] == "3"  # [external], ret, the @g constant


def test_a_broken_module_with_debug_info_is_an_error_not_an_abort() -> None:
    # LLVM verifies modules that declare debug info while parsing and aborts ("Broken module found") when the rest
    # is invalid; in a child process, so that a regression fails the test instead of killing pytest
    result = run_child(
        """
        import programl
        from programl.exceptions import GraphCreationError
        text = (
            "define i32 @f() {\\n  %a = add i32 %b, 1\\n  %b = add i32 1, 1\\n  ret i32 %a\\n}\\n"
            '!llvm.module.flags = !{!0}\\n!0 = !{i32 2, !"Debug Info Version", i32 3}\\n'
        )
        try:
            programl.from_llvm_ir(text)
        except GraphCreationError as error:
            print(error)
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "invalid module: Instruction does not dominate all uses! (LLVM would abort on it)"
    assert result.stderr == ""


def test_a_parse_error_on_the_big_stack_reaches_the_caller() -> None:
    text = nested_gep(1000).replace("@x, i64 1)", "@nope, i64 1)", 1)  # 1,000 levels: parsed on the big stack
    with pytest.raises(GraphCreationError, match="use of undefined value '@nope'") as info:
        graph_from_ir(text, path="p.ll")
    assert (info.value.path, info.value.line, info.value.column) == ("p.ll", 2, text.split("\n")[1].index("@nope") + 1)
