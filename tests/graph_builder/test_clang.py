"""The compiler front ends (programl.graph_builder.clang, .flang): errors in the compiler's own form, C as clang 10
accepted it, flags that would change the output, out-of-memory, CUDA device code and Fortran (issue 9 items 3, 4, 7;
issue 12 findings a and b). CUDA and Fortran graphs must pass the same structural checks as C's."""

from __future__ import annotations

import shutil
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from programl.exceptions import GraphCreationError, UnsupportedCompiler
from programl.graph_builder import clang, flang
from programl.graph_builder.llvm import BuildOptions, graph_from_ir
from programl.proto import Edge, Node

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"
C_PROGRAMS = [PROGRAMS / name for name in ("loops.c", "structs.c", "switch_dense.c", "recursion.c", "classes.cc")]
CUDA_PROGRAMS = sorted((PROGRAMS / "cuda").glob("*.cu"))
FORTRAN_PROGRAMS = sorted((PROGRAMS / "fortran").glob("*.f*"))
KNR = PROGRAMS / "legacy_c" / "knr_legacy.c"


@pytest.fixture(scope="session")
def flang22() -> str:
    path = shutil.which("flang-22")
    if not path:
        pytest.skip("flang-22 not installed: apt-get install flang-22 (make setup installs it where it can)")
    return path


def assert_well_formed(graph) -> None:
    """The structural invariants of a ProGraML graph (SPEC §1): what every front end's graphs must satisfy."""
    nodes = graph.node
    assert nodes[0].type == Node.INSTRUCTION and nodes[0].text == "[external]"
    assert graph.function and len(graph.module) == 1
    has_edge = [False] * len(nodes)
    control_out: Counter = Counter()
    for edge in graph.edge:
        assert 0 <= edge.source < len(nodes) and 0 <= edge.target < len(nodes), edge
        assert edge.position >= 0
        source, target = nodes[edge.source], nodes[edge.target]
        has_edge[edge.source] = has_edge[edge.target] = True
        if edge.flow == Edge.CONTROL:
            assert source.type == target.type == Node.INSTRUCTION
            assert source.function == target.function and edge.source != 0 and edge.target != 0
            control_out[edge.source] += 1
        elif edge.flow == Edge.CALL:
            assert source.type == target.type == Node.INSTRUCTION
        else:
            assert edge.flow == Edge.DATA
            # data flows between an instruction and a variable or constant, never instruction -> instruction
            assert (source.type == Node.INSTRUCTION) != (target.type == Node.INSTRUCTION), (source, target)
            assert source.type != Node.CONSTANT or target.type == Node.INSTRUCTION
    assert all(has_edge[1:]), [i for i, flag in enumerate(has_edge) if not flag][:5]
    for index, node in enumerate(nodes[1:], 1):
        assert 0 <= node.function < len(graph.function), index
        if node.type == Node.INSTRUCTION:
            assert node.features.feature["full_text"].bytes_list.value, index
    # every function with instructions ends somewhere: some instruction has no control successor
    returns = [i for i, n in enumerate(nodes[1:], 1) if n.type == Node.INSTRUCTION and not control_out[i]]
    assert returns


# -- errors ---------------------------------------------------------------------------------------------------------


def test_errors_keep_clangs_form(clang22) -> None:
    with pytest.raises(GraphCreationError) as info:
        clang.compile_source("int main() syntax error!", "c++")
    assert str(info.value) == "-:1:12: error: expected function body after function declarator"
    assert (info.value.path, info.value.line, info.value.column) == ("-", 1, 12)
    assert info.value.message == "expected function body after function declarator"


def test_errors_without_a_location(clang22, tmp_path) -> None:
    with pytest.raises(GraphCreationError) as info:
        clang.compile_args([str(tmp_path / "missing.c")])
    assert str(info.value).startswith(f"{tmp_path / 'missing.c'}: error: no such file or directory")


def test_several_inputs_fail_as_0_3_2_did(clang22, tmp_path) -> None:
    for name in ("a.c", "b.c"):
        (tmp_path / name).write_text("int f(void) { return 0; }\n")
    with pytest.raises(GraphCreationError, match="error: unable to handle compilation, expected exactly one compiler"):
        clang.compile_args([str(tmp_path / "a.c"), "-DX=1", "-I", str(tmp_path), str(tmp_path / "b.c")])
    assert clang.inputs_of(["-I", "inc", "-D", "X", "-x", "c", "a.c", "-O2"]) == ["a.c"]


def test_cli_prints_one_error_prefix(clang22) -> None:
    from programl.cli.common import describe_error

    error = clang.CompilerError("expected ';'", "a.c", 3, 7)
    assert str(error) == "a.c:3:7: error: expected ';'"
    assert describe_error(error, "a.c") == "a.c:3:7: error: expected ';'"
    assert describe_error(clang.CompilerError("no input files"), "a.c") == "a.c: error: no input files"


def test_out_of_memory_is_one_line(clang22, tmp_path, monkeypatch) -> None:
    """clang under a small RLIMIT_AS (ulimit -v in a wrapper; only the compiler is limited) on a program whose
    initialiser expands to 8 million elements: one line, never a stack-dump line (issue 12 finding a)."""
    wrapper = tmp_path / "clang-22"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *--version*) exec {clang22} "$@";; esac\n'
        "ulimit -v 400000\n"  # KiB: clang loads (~300 MB of shared libraries), then runs out
        f'exec {clang22} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PROGRAML_CLANG", str(wrapper))
    source = "#define E0 1\n" + "".join(f"#define E{i} E{i - 1},E{i - 1}\n" for i in range(1, 24))
    source += "int a[] = {E23};\n"
    with pytest.raises(GraphCreationError) as info:
        clang.compile_source(source, "c", timeout=120)
    assert str(info.value) == "-: error: clang ran out of memory"


def test_crash_and_oom_stderr_become_one_line() -> None:
    stack = "LLVM ERROR: out of memory\nAllocation failed\nPLEASE submit a bug report\nStack dump:\n0. clang\n"
    assert clang._error_from_stderr(stack, "x.c", 1).message == "clang ran out of memory"
    crash = "PLEASE submit a bug report to https://...\nStack dump:\n0.\tProgram arguments: clang x.c\n"
    assert clang._error_from_stderr(crash, "x.c", 1).message == "clang crashed (exit status 1)"
    assert clang._error_from_stderr("", "x.c", -9).message == "clang was killed by SIGKILL"


# -- flags ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        ["-o", "out.ll"],
        ["-oout.ll"],
        ["--output=out.ll"],
        ["-E"],
        ["-M"],
        ["-MD"],
        ["-fsyntax-only"],
        ["-emit-ast"],
        ["-Xclang", "-emit-obj"],
        ["-save-temps"],
        ["-###"],
        ["--analyze"],
    ],
)
def test_output_changing_flags_are_rejected(clang22, tmp_path, flags) -> None:
    """They made clang write elsewhere or nothing, and from_cpp returned an empty graph (issue 12 finding b)."""
    rejected = next(flag for flag in reversed(flags) if flag.startswith("-"))
    with pytest.raises(GraphCreationError, match=f"unsupported compiler flag '{rejected}'"):
        clang.compile_source("int f(void) { return 1; }", "c", flags)
    assert not list(tmp_path.iterdir())


def test_harmless_output_flags_are_accepted(clang22) -> None:
    for flags in (["-c"], ["-S"], ["-emit-llvm"], ["-S", "-c", "-emit-llvm"], ["-D", "-o"]):
        if flags == ["-D", "-o"]:
            with pytest.raises(GraphCreationError, match="macro name must be an identifier"):
                clang.compile_source("int f(void) { return 1; }", "c", flags)
            continue
        ir = clang.compile_source("int f(void) { return 1; }", "c", flags)
        assert "define dso_local i32 @f()" in ir


# -- C as clang 10 accepted it --------------------------------------------------------------------------------------


def test_c_is_compiled_as_clang_10_accepted_it(clang22) -> None:
    """implicit function declarations, implicit int, int/pointer conversions and incompatible (function) pointer
    types: errors in clang 16+, warnings in clang 10 (issue 9 item 4)."""
    graph = graph_from_ir(clang.compile_file(str(KNR)), options=BuildOptions(strict=True))
    assert {"main", "helper", "takes_int"} <= {f.name for f in graph.function}
    assert_well_formed(graph)
    assert graph_from_ir(clang.compile_source("void A() { B(); }", "c"))
    with pytest.raises(GraphCreationError, match="use of undeclared identifier 'B'"):
        clang.compile_source("void A() { B(); }", "c++")  # C++ never allowed it


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-Werror"], "type specifier missing"),
        (["-pedantic-errors"], "type specifier missing"),
        (["-Werror=int-conversion"], "incompatible pointer to integer conversion"),
        (["-Werror=implicit-function-declaration"], "call to undeclared library function 'strlen'"),
    ],
)
def test_the_callers_werror_flags_win(clang22, flags, message) -> None:
    with pytest.raises(GraphCreationError, match=message):
        clang.compile_file(str(KNR), flags)


# -- old IR through clang ---------------------------------------------------------------------------------------------


def test_old_byval_ir_through_clang(clang22, tmp_path) -> None:
    """LLVM < 13's `T* byval` is rewritten as from_llvm_ir rewrites it before clang-22 reads it (issue 9 item 5)."""
    path = tmp_path / "old.ll"
    path.write_text(
        textwrap.dedent(
            """\
            ; ModuleID = 'old.c'
            %struct.S = type { i32, [8 x i32] }

            define i32 @first(%struct.S* byval align 8 %s) {
              %p = getelementptr inbounds %struct.S, %struct.S* %s, i32 0, i32 0
              %v = load i32, i32* %p, align 4
              ret i32 %v
            }
            """
        )
    )
    ir = clang.compile_args(["-O1", str(path)])
    assert f'source_filename = "{path}"' in ir and "byval(%struct.S)" in ir
    bad = tmp_path / "bad.ll"
    bad.write_text("define i32 @f() {\n  ret i32 %nope\n}\n")
    with pytest.raises(GraphCreationError) as info:
        clang.compile_args(["-O1", str(bad)])
    assert (info.value.path, info.value.line) == (str(bad), 2)  # the file's own line numbers


# -- CUDA -----------------------------------------------------------------------------------------------------------


def test_there_are_cuda_and_fortran_programs() -> None:
    assert len(CUDA_PROGRAMS) >= 3 and len(FORTRAN_PROGRAMS) >= 3


@pytest.mark.parametrize("program", CUDA_PROGRAMS, ids=[p.name for p in CUDA_PROGRAMS])
def test_cuda_programs(clang22, program) -> None:
    graph = graph_from_ir(clang.compile_file(str(program)), options=BuildOptions(strict=True))
    assert_well_formed(graph)
    assert graph.module[0].name == str(program)
    triple = graph.module[0].features.feature["llvm_target_triple"].bytes_list.value
    assert triple == [b"nvptx64-nvidia-cuda"]
    texts = {n.text for n in graph.node}
    assert texts & {"call", "getelementptr", "load", "store"}


def test_cuda_shared_memory_barriers_and_atomics(clang22) -> None:
    ir = clang.compile_file(str(PROGRAMS / "cuda" / "reduce_shared.cu"), ["--cuda-gpu-arch=sm_80"])
    assert "addrspace(3)" in ir  # __shared__
    assert "llvm.nvvm.barrier" in ir  # __syncthreads()
    assert "atomicrmw fadd" in ir  # atomicAdd from the prelude
    assert '"target-cpu"="sm_80"' in ir
    assert '"target-cpu"="sm_70"' in clang.compile_source("__global__ void k(int *a) { a[threadIdx.x] = 0; }", "cuda")


def test_cuda_errors_have_locations(clang22) -> None:
    with pytest.raises(GraphCreationError) as info:
        clang.compile_source("__global__ void k(int *a) {\n  a[threadIdx.x] = undefined_name;\n}\n", "cuda")
    assert (info.value.line, info.value.column) == (2, 20) and str(info.value).startswith("-:2:20: error: ")


# -- Fortran --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("program", FORTRAN_PROGRAMS, ids=[p.name for p in FORTRAN_PROGRAMS])
def test_fortran_programs(flang22, program) -> None:
    graph = graph_from_ir(flang.compile_file(str(program)), options=BuildOptions(strict=True))
    assert_well_formed(graph)
    assert graph.module[0].name == str(program)  # not flang's "FIRModule"


def test_fortran_module_subroutines_and_loops(flang22) -> None:
    graph = graph_from_ir(flang.compile_file(str(PROGRAMS / "fortran" / "vecops.f90")))
    assert {"_QMvecopsPaxpy", "_QMvecopsPdot", "_QMvecopsPclamp"} <= {f.name for f in graph.function}
    assert {"br", "phi", "fadd", "fmul"} & {n.text for n in graph.node}
    fixed = (PROGRAMS / "fortran" / "gcd.f").read_text()
    assert "igcd" in flang.compile_source(fixed, fixed_form=True)


def test_fortran_errors(flang22, tmp_path) -> None:
    with pytest.raises(GraphCreationError) as info:
        flang.compile_source("program p\n  x = = 1\nend program p\n")
    assert info.value.path == "-" and info.value.line == 2 and ": error: " in str(info.value)
    bad = tmp_path / "bad.f90"
    bad.write_text("bad syntax here\n")
    with pytest.raises(GraphCreationError) as info:
        flang.compile_file(str(bad))
    assert str(info.value).startswith(f"{bad}:1:5: error: ")
    with pytest.raises(GraphCreationError, match="unsupported compiler flag '-o'"):
        flang.compile_source("end\n", ["-o", str(tmp_path / "x.ll")])


def test_fortran_module_files_do_not_leak(flang22, tmp_path, monkeypatch) -> None:
    """flang writes vecops.mod for `module vecops`: into a temporary folder, not the caller's directory."""
    monkeypatch.chdir(tmp_path)
    source = (PROGRAMS / "fortran" / "vecops.f90").read_text()
    flang.compile_source(source)
    flang.compile_file(str(PROGRAMS / "fortran" / "vecops.f90"))
    assert not list(tmp_path.iterdir())
    modules = tmp_path / "mods"
    modules.mkdir()
    flang.compile_source(source, ["-module-dir", str(modules)])  # the caller's folder is used when given
    assert [p.name for p in modules.iterdir()] == ["vecops.mod"]


def test_missing_flang_says_how_to_install(monkeypatch) -> None:
    monkeypatch.setenv("PROGRAML_FLANG", "/nonexistent/flang")
    with pytest.raises(UnsupportedCompiler, match="apt-get install flang-22"):
        flang.find_flang()


@pytest.mark.parametrize("program", C_PROGRAMS, ids=[p.name for p in C_PROGRAMS])
def test_c_programs_pass_the_same_checks(clang22, program) -> None:
    assert_well_formed(graph_from_ir(clang.compile_file(str(program)), options=BuildOptions(strict=True)))


# -- programl build -------------------------------------------------------------------------------------------------


def _build(args, capsys) -> tuple[int, str, str]:
    from programl.cli import main

    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_build_reads_cuda_fortran_and_old_c(clang22, flang22, tmp_path, capsys) -> None:
    from programl.io.files import read_graph

    inputs = [CUDA_PROGRAMS[0], FORTRAN_PROGRAMS[0], KNR]
    code, _, err = _build(["build", *inputs, "-o", tmp_path, "-q"], capsys)
    assert code == 0, err
    for program in inputs:
        graph = read_graph(tmp_path / f"{program.stem}.ProgramGraph.pb")
        assert_well_formed(graph)
        assert graph.module[0].name == str(program)


def test_build_reports_compiler_errors_once(clang22, tmp_path, capsys) -> None:
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(int *a) {\n  a[0] = undefined_name;\n}\n")
    code, _, err = _build(["build", bad, "-o", tmp_path / "out", "-q"], capsys)
    assert code == 1
    assert f"{bad}:2:10: error: use of undeclared identifier 'undefined_name'" in err
    assert "error: error:" not in err


def test_build_rejects_output_flags_as_usage_errors(clang22, tmp_path, capsys) -> None:
    source = tmp_path / "a.c"
    source.write_text("int f(void) { return 1; }\n")
    code, _, err = _build(["build", source, "-o", tmp_path / "out", "--", "-o", tmp_path / "x.ll"], capsys)
    assert code == 2 and "unsupported compiler flag '-o'" in err
    assert not (tmp_path / "x.ll").exists()
