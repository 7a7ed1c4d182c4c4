"""The creation API (SPEC §3.1): one input -> one graph, an iterable -> a lazy generator through any executor."""

from __future__ import annotations

import concurrent.futures
import re
import types
from pathlib import Path

import pytest

import programl
from programl import create
from programl.exceptions import GraphCreationError, UnsupportedCompiler
from programl.util.executor import TimeoutProcessPool

DATA = Path(__file__).resolve().parent / "data"
IR_A = (DATA / "example_a.ll").read_text()
IR_B = (DATA / "example_b.ll").read_text()
IR_C = (DATA / "example_c.ll").read_text()


def test_single_input_gives_a_graph() -> None:
    graph = programl.from_llvm_ir(IR_A)
    assert isinstance(graph, programl.ProgramGraph) and len(graph.node) == 19


def test_iterable_gives_a_lazy_generator_in_order() -> None:
    graphs = programl.from_llvm_ir(iter([IR_A, IR_B, IR_C]))
    assert isinstance(graphs, types.GeneratorType)
    assert [len(g.node) for g in graphs] == [19, 26, 43]


@pytest.mark.parametrize("executor_kind", ["threads", "pool"])
def test_any_executor_works(executor_kind) -> None:
    executor = concurrent.futures.ThreadPoolExecutor(2) if executor_kind == "threads" else TimeoutProcessPool(2)
    with executor:
        graphs = list(programl.from_llvm_ir([IR_A, IR_B, IR_C] * 2, executor=executor, chunksize=2))
    assert [len(g.node) for g in graphs] == [19, 26, 43] * 2
    assert graphs[0] == programl.from_llvm_ir(IR_A)


def test_dask_executor() -> None:
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] not installed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster) as client:
            graphs = list(programl.from_llvm_ir([IR_A, IR_C], executor=client.get_executor()))
    assert [len(g.node) for g in graphs] == [19, 43]


def test_first_bad_input_raises_with_its_location() -> None:
    graphs = programl.from_llvm_ir([IR_A, "define i32 @f() {\n  ret i32 %x\n}\n"])
    assert len(next(graphs).node) == 19
    with pytest.raises(GraphCreationError, match="use of undefined value") as info:
        next(graphs)
    assert (info.value.line, info.value.column) == (2, 11)


def test_options_are_forwarded_to_workers() -> None:
    [graph] = programl.from_llvm_ir([IR_A], instructions_only=True)
    assert all(node.type == 0 for node in graph.node)


def test_unsupported_version() -> None:
    with pytest.raises(UnsupportedCompiler, match="LLVM 22"):
        programl.from_llvm_ir(IR_A, version="9")
    with pytest.raises(UnsupportedCompiler, match="versions: 22, 10"):
        programl.from_cpp("int f(void);", language="c", version="6")  # clang2graph had only "10"


def test_legacy_versions_read_with_llvm22_after_one_warning(monkeypatch) -> None:
    """0.3.2's version values (issue 9 item 2): the same graph as version "22", one warning per version."""
    import warnings

    from programl import create

    monkeypatch.setattr(create, "_warned", set())
    expected = programl.from_llvm_ir(IR_A)
    for version in ("10", "6", "3.8"):
        with pytest.warns(create.LegacyVersionWarning, match=f"LLVM {version} is not available"):
            assert programl.from_llvm_ir(IR_A, version=version) == expected
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the second call of a version is silent
            assert programl.from_llvm_ir(IR_A, version=version) == expected


def test_bitcode() -> None:
    from programl.graph_builder.llvm import parse_ir

    bitcode = parse_ir(IR_C).as_bitcode()
    graph = programl.from_bitcode(bitcode)
    assert graph.node == programl.from_llvm_ir(IR_C).node
    assert [len(g.node) for g in programl.from_bitcode([bitcode, bitcode])] == [43, 43]


def test_from_cpp_c_and_cxx(clang22) -> None:
    graph = programl.from_cpp("int f(int x){ return x > 0 ? x : -x; }", language="c")
    assert graph.module[0].name == "-"  # as 0.3.2 names stdin input
    assert [n.text for n in graph.node[:4]] == ["[external]", "alloca", "store", "ptr"]
    cxx = programl.from_cpp("template <class T> T twice(T x) { return 2 * x; } int g() { return twice(3); }")
    assert "_Z5twiceIiET_S0_" in [f.name for f in cxx.function]
    graphs = list(programl.from_cpp(["int a(void) { return 1; }", "int b(void) { return 2; }"], language="c"))
    assert len(graphs) == 2


def test_from_cpp_errors(clang22) -> None:
    with pytest.raises(GraphCreationError, match="expected") as info:
        programl.from_cpp("int f() {", language="c")
    assert info.value.line == 1
    with pytest.raises(UnsupportedCompiler):
        programl.from_cpp("int f();", language="fortran")


def test_from_opencl(clang22) -> None:
    graph = programl.from_opencl((Path(__file__).resolve().parents[1] / "examples" / "vector_add.cl").read_text())
    assert graph.module[0].features.feature["llvm_target_triple"].bytes_list.value == [b"spir64"]
    assert "vector_add" in [f.name for f in graph.function]


def test_from_clang_with_flags(clang22, tmp_path) -> None:
    source = tmp_path / "f.c"
    source.write_text("int f(int x) { return x * K; }\n")
    graph = programl.from_clang(["-O1", "-DK=5", str(source)])
    assert graph.module[0].name == str(source)
    assert not [n for n in graph.node if n.text == "alloca"]  # -O1 took effect
    [again] = programl.from_clang([["-O1", "-DK=5", str(source)]])
    assert again == graph


def test_missing_clang_says_how_to_install(monkeypatch) -> None:
    monkeypatch.setenv("PROGRAML_CLANG", "/nonexistent/clang")
    with pytest.raises(UnsupportedCompiler, match="apt-get install clang-22"):
        programl.from_cpp("int f();", language="c")


def test_timeout_kills_a_slow_input(monkeypatch, tmp_path, clang22) -> None:
    wrapper = tmp_path / "clang-22"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *--version*) exec {clang22} "$@";; esac\n'
        "source=$(cat)\n"
        'case "$source" in *SLOW*) exec sleep 60;; esac\n'
        f'printf "%s" "$source" | {clang22} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PROGRAML_CLANG", str(wrapper))
    graphs = programl.from_cpp(["int slow(void) { return 1; } // SLOW"], language="c", timeout=2)
    with pytest.raises(TimeoutError):
        list(graphs)


# -- programl 0.3.2's behaviour (issue 9 items 3-5, 7) -----------------------------------------------------------------


def test_errors_read_as_clang_prints_them(clang22, tmp_path) -> None:
    """0.3.2's tests match these texts."""
    with pytest.raises(GraphCreationError, match="error: expected function body after function declarator"):
        programl.from_cpp("int main() syntax error!")
    source = tmp_path / "foo.c"
    source.write_text("int main() syntax error!")
    with pytest.raises(GraphCreationError, match=f"^{source}:1:12: error: expected function body"):
        programl.from_clang([str(source)])
    cxx = tmp_path / "a.cpp"
    cxx.write_text("void A() {\n    B();\n}\n")
    with pytest.raises(GraphCreationError, match="error: use of undeclared identifier"):
        programl.from_clang([str(cxx)])


def test_implicit_declarations_in_c_as_clang_10(clang22, tmp_path) -> None:
    graph = programl.from_cpp("void A() { B(); }", language="c")
    assert "B" in [f.name for f in graph.function] or any(n.text == "call" for n in graph.node)
    source = tmp_path / "a.c"
    source.write_text("void A() {\n    B();\n}\n")
    assert isinstance(programl.from_clang([str(source)]), programl.ProgramGraph)
    with pytest.raises(GraphCreationError, match="call to undeclared function 'B'"):
        programl.from_cpp("void A() { B(); }", language="c", copts=["-Werror=implicit-function-declaration"])


def test_several_files_in_one_from_clang_call(clang22, tmp_path) -> None:
    for name in ("a.c", "b.c"):
        (tmp_path / name).write_text("int A() { return 0; }")
    with pytest.raises(
        GraphCreationError, match="error: unable to handle compilation, expected exactly one compiler job"
    ):
        programl.from_clang([str(tmp_path / "a.c"), str(tmp_path / "b.c")])


def test_output_flags_are_rejected_before_any_input_runs(clang22, tmp_path) -> None:
    target = tmp_path / "out.ll"
    with pytest.raises(GraphCreationError, match="unsupported compiler flag '-o'"):
        programl.from_cpp("int f(void) { return 1; }", copts=["-o", str(target)])
    with pytest.raises(GraphCreationError, match="unsupported compiler flag '-fsyntax-only'"):
        programl.from_cpp(["int f(void) { return 1; }"], copts=["-fsyntax-only"])  # an iterable: raised at once
    with pytest.raises(GraphCreationError, match="unsupported compiler flag '-E'"):
        programl.from_clang(["-E", str(tmp_path / "x.c")])
    assert not target.exists()


def test_from_clang_reads_old_ir_as_from_llvm_ir_does(shared_data, clang22, tmp_path) -> None:
    """legacy-ir/012.ll (clang 3.7: `%struct.student* byval align 8`), which clang-22 itself rejects."""
    import tarfile

    with tarfile.open(shared_data / "legacy-ir" / "llvm_ir.tar.bz2") as tar:
        text = tar.extractfile("012.ll").read()
    assert b"%struct.student* byval align 8 %stu" in text
    path = tmp_path / "012.ll"
    path.write_bytes(text)
    graph = programl.from_clang([str(path)])
    assert graph.node == programl.from_llvm_ir(text.decode()).node
    assert graph.module[0].name == str(path)
    optimised = programl.from_clang(["-O1", str(path)])  # with flags: clang-22 compiles the upgraded text
    assert optimised.module[0].name == str(path) and len(optimised.node) < len(graph.node)
    bitcode = tmp_path / "012.bc"
    from programl.graph_builder.llvm import parse_ir

    bitcode.write_bytes(parse_ir(text).as_bitcode())
    assert programl.from_clang([str(bitcode)]).node == graph.node


def test_from_cuda(clang22) -> None:
    source = (DATA / "programs" / "cuda" / "saxpy.cu").read_text()
    graph = programl.from_cuda(source)
    assert graph.module[0].name == "-" and "_Z5saxpyifPKfPf" in [f.name for f in graph.function]
    sm90 = programl.from_cuda(source, gpu_arch="sm_90")
    assert [f.name for f in sm90.function] == [f.name for f in graph.function]
    with pytest.raises(GraphCreationError, match="unsupported CUDA gpu architecture: sm_1"):
        programl.from_cuda(source, gpu_arch="sm_1")
    assert len(list(programl.from_cuda([source, source]))) == 2


def test_from_fortran(tmp_path) -> None:
    import shutil

    if not shutil.which("flang-22"):
        pytest.skip("flang-22 not installed: apt-get install flang-22")
    graph = programl.from_fortran((DATA / "programs" / "fortran" / "vecops.f90").read_text())
    assert graph.module[0].name == "-" and "_QMvecopsPaxpy" in [f.name for f in graph.function]
    fixed = programl.from_fortran((DATA / "programs" / "fortran" / "gcd.f").read_text(), fixed_form=True)
    assert "igcd_" in [f.name for f in fixed.function]
    with pytest.raises(GraphCreationError, match=r"^-:1:\d+: error: "):
        programl.from_fortran("bad syntax here\n")


# -- input types (issue 12, item 9) -----------------------------------------------------------------------------

BAD_VALUES = [None, 123, 1.5, object()]


@pytest.mark.parametrize("bad", BAD_VALUES, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize(
    "function", [create.from_llvm_ir, create.from_bitcode, create.from_cpp, create.from_opencl, create.from_clang]
)
def test_wrong_types_raise_type_error_at_the_call(function, bad) -> None:
    with pytest.raises(TypeError, match=rf"{function.__name__}\(\) expects .*, got {type(bad).__name__}"):
        function(bad)


def test_ir_bytes_are_text() -> None:
    expected = programl.from_llvm_ir(IR_A)
    for data in (IR_A.encode(), bytearray(IR_A.encode()), memoryview(IR_A.encode())):
        assert programl.from_llvm_ir(data) == expected


def test_a_wrong_item_fails_its_own_input() -> None:
    graphs = programl.from_llvm_ir([IR_A, IR_B.encode(), None], executor=concurrent.futures.ThreadPoolExecutor(1))
    assert [len(next(graphs).node) for _ in range(2)] == [19, 26]
    with pytest.raises(TypeError, match=r"from_llvm_ir\(\) expects LLVM IR as str or bytes in the iterable, got None"):
        next(graphs)


def test_a_wrong_item_fails_in_the_default_process_pool_too() -> None:
    graphs = programl.from_llvm_ir(iter([IR_A, 7]))
    assert len(next(graphs).node) == 19
    with pytest.raises(TypeError, match="got int"):
        next(graphs)


def test_bitcode_is_bytes_and_ir_text_is_refused() -> None:
    from programl.graph_builder.llvm import parse_ir

    bitcode = parse_ir(IR_A).as_bitcode()
    assert create.from_bitcode(bytearray(bitcode)) == create.from_bitcode(bitcode)
    with pytest.raises(TypeError, match="IR text goes to from_llvm_ir"):
        create.from_bitcode(IR_A)
    with pytest.raises(TypeError, match="bitcode as bytes in the iterable, got str"):
        list(create.from_bitcode([IR_A], executor=concurrent.futures.ThreadPoolExecutor(1)))


def test_source_and_argument_types_at_the_call() -> None:
    with pytest.raises(TypeError, match="from_cpp"):
        programl.from_cpp(b"int f(void);")
    with pytest.raises(TypeError, match="copts"):
        programl.from_cpp("int f(void);", copts="-O1")
    with pytest.raises(TypeError, match="from_clang"):
        programl.from_clang("foo.c")  # a str would otherwise be read as one input per character
    with pytest.raises(TypeError, match="from_clang"):
        programl.from_clang([5])


def test_source_and_argument_types_per_item(clang22) -> None:
    with pytest.raises(TypeError, match=r"from_clang\(\) expects a list of clang arguments \(str\) for each input"):
        next(programl.from_clang(iter([5]), executor=concurrent.futures.ThreadPoolExecutor(1)))
    with pytest.raises(TypeError, match="source text as str in the iterable, got bytes"):
        next(programl.from_cpp([b"int f(void);"], executor=concurrent.futures.ThreadPoolExecutor(1)))


# -- limits, checked at the call for one input as for many -----------------------------------------------------


@pytest.mark.parametrize(
    "options, message",
    [
        ({"timeout": "abc"}, "timeout must be a number of seconds or None, not 'abc'"),
        ({"timeout": -1}, "timeout must be more than 0 seconds, not -1"),
        ({"timeout": 0}, "timeout must be more than 0 seconds, not 0"),
        ({"chunksize": 0}, "chunksize must be a positive integer or None, not 0"),
        ({"chunksize": -1}, "chunksize must be a positive integer or None, not -1"),
        ({"chunksize": 2.5}, "chunksize must be a positive integer or None, not 2.5"),
    ],
)
@pytest.mark.parametrize("many", [False, True], ids=["one input", "a list"])
def test_bad_limits_are_a_value_error_at_the_call(options, message, many) -> None:
    """One input accepted timeout="abc" (from_cpp failed inside subprocess, timeout=-1 was a TimeoutError); a list
    raised only at its first next(); chunksize=0 or -1 was taken as some other size."""
    for call in (
        lambda: programl.from_llvm_ir([IR_A] if many else IR_A, **options),
        lambda: programl.from_cpp(["int f;"] if many else "int f;", **options),
        lambda: programl.from_clang([["x.c"]] if many else ["x.c"], **options),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            call()
