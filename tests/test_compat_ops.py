"""programl 0.3.2's module layout and arguments (issue 9 item 2; docs/compat.md): ``programl.create_ops``,
``serialize_ops``, ``transform_ops`` with their public names and argument lists, the version tables that client code
iterates, ``to_dgl``; and the cases of 0.3.2's own tests (ChrisCummins/ProGraML ``tests/from_clang_test.py``,
``from_cpp_test.py``, ``from_llvm_ir_test.py``, ``to_dgl_test.py``; Apache-2.0), restated here for this package:
the IR texts they expect (``i32*``) differ by SPEC Policy 1 and are not checked.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import tarfile
import types
from pathlib import Path

import pytest

import programl
from programl.exceptions import GraphCreationError, GraphTransformError, UnsupportedCompiler

DATA = Path(__file__).resolve().parent / "data"
IR_A = (DATA / "example_a.ll").read_text()

#: Every public name of programl 0.3.2, per module (read from the 0.3.2 wheel's sources).
NAMES_0_3_2 = {
    "programl": [
        "CLANG_VERSIONS", "GraphCreationError", "GraphTransformError", "LLVM_VERSIONS", "ProgramGraph",
        "UnsupportedCompiler", "from_bytes", "from_clang", "from_cpp", "from_llvm_ir", "from_string",
        "from_xla_hlo_proto", "load_graphs", "save_graphs", "to_bytes", "to_dgl", "to_dot", "to_json", "to_networkx",
        "to_string", "__version__",
    ],
    "programl.create_ops": [
        "CLANG2GRAPH_BINARIES", "CLANG_VERSIONS", "LLVM2GRAPH_BINARIES", "LLVM_VERSIONS", "XLA2GRAPH", "from_clang",
        "from_cpp", "from_llvm_ir", "from_xla_hlo_proto",
    ],
    "programl.serialize_ops": ["from_bytes", "from_string", "load_graphs", "save_graphs", "to_bytes", "to_string"],
    "programl.transform_ops": ["GRAPH2DOT", "GRAPH2JSON", "JsonDict", "to_dgl", "to_dot", "to_json", "to_networkx"],
    "programl.exceptions": ["GraphCreationError", "GraphTransformError", "UnsupportedCompiler"],
}  # fmt: skip

#: 0.3.2's leading parameters (name, default) of each function, which positional callers rely on.
SIGNATURES_0_3_2 = {
    "programl.create_ops.from_cpp": [
        ("srcs", None), ("copts", None), ("system_includes", True), ("language", "c++"), ("version", "10"),
        ("timeout", 300), ("executor", None), ("chunksize", None),
    ],
    "programl.create_ops.from_clang": [
        ("args", None), ("system_includes", True), ("version", "10"), ("timeout", 300), ("executor", None),
        ("chunksize", None),
    ],
    "programl.create_ops.from_llvm_ir": [
        ("irs", None), ("timeout", 300), ("version", "10"), ("executor", None), ("chunksize", None),
    ],
    "programl.serialize_ops.save_graphs": [("path", None), ("graphs", None), ("compression", "gz")],
    "programl.serialize_ops.load_graphs": [("path", None), ("idx_list", None), ("compression", "gz")],
    "programl.serialize_ops.to_bytes": [("graphs", None), ("compression", "gz")],
    "programl.serialize_ops.from_bytes": [("data", None), ("idx_list", None), ("compression", "gz")],
    "programl.serialize_ops.to_string": [("graphs", None)],
    "programl.serialize_ops.from_string": [("string", None), ("idx_list", None)],
    **{
        f"programl.transform_ops.{name}": [("graphs", None), ("timeout", 300), ("executor", None), ("chunksize", None)]
        for name in ("to_json", "to_networkx", "to_dgl", "to_dot")
    },
}  # fmt: skip


@pytest.mark.parametrize(
    ("module", "name"), [(m, n) for m, names in NAMES_0_3_2.items() for n in names], ids=lambda value: str(value)
)
def test_every_0_3_2_name_exists(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is not None


def test_submodules_are_attributes_of_the_package() -> None:
    """0.3.2 imported them with the package: its tests read ``pg.create_ops.LLVM2GRAPH_BINARIES``, ``pg.proto.Node``."""
    import subprocess

    code = (
        "import sys, programl as pg; heavy = 'torch' in sys.modules; "
        "print(list(pg.create_ops.LLVM2GRAPH_BINARIES), pg.proto.Node.INSTRUCTION, pg.transform_ops.to_dgl.__name__, "
        "pg.serialize_ops.to_bytes.__name__, pg.exceptions.GraphCreationError.__name__, heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.split() == [
        "['10',",
        "'6',",
        "'3.8',",
        "'22']",
        "0",
        "to_dgl",
        "to_bytes",
        "GraphCreationError",
        "False",
    ]


def test_exceptions_keep_their_bases() -> None:
    assert issubclass(UnsupportedCompiler, TypeError)
    assert issubclass(GraphCreationError, ValueError) and issubclass(GraphTransformError, ValueError)


@pytest.mark.parametrize("qualified", sorted(SIGNATURES_0_3_2))
def test_0_3_2_arguments_are_accepted(qualified: str) -> None:
    module, _, name = qualified.rpartition(".")
    parameters = list(inspect.signature(getattr(importlib.import_module(module), name)).parameters.values())
    expected = SIGNATURES_0_3_2[qualified]
    assert [p.name for p in parameters[: len(expected)]] == [name for name, _ in expected]
    for parameter, (_, default) in zip(parameters, expected):
        assert parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, parameter
        if default is not None and parameter.name != "version":  # version defaults to "22" here, "10" there
            assert parameter.default == default, parameter


def test_the_ops_modules_are_the_package_functions() -> None:
    from programl import create_ops, serialize_ops, transform_ops

    assert create_ops.from_cpp is programl.from_cpp and create_ops.from_llvm_ir is programl.from_llvm_ir
    assert serialize_ops.to_bytes is programl.to_bytes and transform_ops.to_networkx is programl.to_networkx
    assert transform_ops.to_dgl is programl.to_dgl
    assert create_ops.LLVM_VERSIONS == programl.LLVM_VERSIONS and create_ops.CLANG_VERSIONS == programl.CLANG_VERSIONS


def test_version_tables_iterate_as_in_0_3_2(recwarn) -> None:
    """Client code iterates the tables and passes the keys back (0.3.2's from_llvm_ir_test does)."""
    from programl import create_ops

    assert list(create_ops.LLVM2GRAPH_BINARIES)[:3] == ["10", "6", "3.8"]
    assert "10" in create_ops.CLANG2GRAPH_BINARIES
    expected = programl.from_llvm_ir(IR_A)
    for version in create_ops.LLVM2GRAPH_BINARIES:
        assert create_ops.from_llvm_ir(IR_A, version=version) == expected
    with pytest.raises(UnsupportedCompiler):
        create_ops.from_llvm_ir("", version="invalid")


# -- to_dgl ---------------------------------------------------------------------------------------------------------


def test_to_dgl_without_dgl_says_how_to_get_it(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "dgl", None)  # as if not installed
    graph = programl.from_llvm_ir(IR_A)
    with pytest.raises(ImportError, match="pip install dgl"):
        programl.to_dgl(graph)
    with pytest.raises(ImportError, match="pip install dgl"):
        programl.to_dgl([graph])  # at the call, not when the first graph is drawn


class _RecordingDGLGraph:
    def __init__(self, data, num_nodes):
        self.edges, self.num_nodes, self.ndata, self.edata = data, num_nodes, {}, {}


def test_to_dgl_builds_the_graph_it_is_given(monkeypatch) -> None:
    """The call protocol of dgl.graph(), recorded: edges in order with parallel edges kept, and the tensors."""
    torch = pytest.importorskip("torch", reason="torch not installed: pip install torch")
    monkeypatch.setitem(sys.modules, "dgl", types.SimpleNamespace(graph=_RecordingDGLGraph))
    graph = programl.from_llvm_ir(IR_A)
    result = programl.to_dgl(graph)
    assert result.num_nodes == len(graph.node)
    assert result.edges[0].tolist() == [e.source for e in graph.edge]
    assert result.edges[1].tolist() == [e.target for e in graph.edge]
    assert result.ndata["type"].tolist() == [n.type for n in graph.node]
    assert result.edata["flow"].dtype == torch.int64
    assert result.edata["position"].tolist() == [e.position for e in graph.edge]
    assert [g.num_nodes for g in programl.to_dgl([graph, graph])] == [len(graph.node)] * 2
    broken = programl.ProgramGraph()
    broken.CopyFrom(graph)
    broken.edge[0].target = 10_000
    with pytest.raises(GraphTransformError, match="edge 0 joins"):
        programl.to_dgl(broken)


def test_to_dgl_with_dgl() -> None:
    """0.3.2's to_dgl_test, where dgl is installed."""
    dgl = pytest.importorskip("dgl", reason="dgl not installed: pip install dgl")
    graph = programl.from_llvm_ir(IR_A)
    result = programl.to_dgl(graph)
    assert isinstance(result, dgl.DGLGraph) and result.num_edges() == len(graph.edge)
    assert len(list(programl.to_dgl([graph, graph]))) == 2


# -- the cases of 0.3.2's own tests -----------------------------------------------------------------------------------


def test_from_cpp_cases(clang22) -> None:
    assert isinstance(programl.from_cpp("int A() { return 0; }"), programl.ProgramGraph)
    assert len(list(programl.from_cpp(["int A() { return 0; }"] * 10))) == 10
    hello = '#include <stdio.h>\nvoid A() {\n    printf("Hello, world\\n");\n}\n'
    assert isinstance(programl.from_cpp(hello), programl.ProgramGraph)
    iostream = '#include <iostream>\nvoid A() {\n    std::cout << "Hello, world" << std::endl;\n}\n'
    assert isinstance(programl.from_cpp(iostream), programl.ProgramGraph)
    assert isinstance(programl.from_cpp("void A() {\n    B();\n}\n", language="c"), programl.ProgramGraph)
    with pytest.raises(GraphCreationError, match="error: use of undeclared identifier"):
        programl.from_cpp("void A() {\n    B();\n}\n")
    with pytest.raises(GraphCreationError, match="error: expected function body after function declarator"):
        programl.from_cpp("int main() syntax error!")


def test_from_clang_cases(clang22, tmp_path) -> None:
    files = {
        "a.c": "int A() { return 0; }",
        "b.c": "int B() { return 0; }",
        "hello.c": '#include <stdio.h>\nvoid A() {\n    printf("Hello, world\\n");\n}\n',
        "hello.cpp": '#include <iostream>\nvoid A() {\n    std::cout << "Hello, world" << std::endl;\n}\n',
        "implicit.c": "void A() {\n    B();\n}\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for name in ("a.c", "hello.c", "hello.cpp", "implicit.c"):
        assert isinstance(programl.from_clang([str(tmp_path / name)]), programl.ProgramGraph), name
    with pytest.raises(GraphCreationError, match="error: unable to handle compilation, expected exactly one compiler"):
        programl.from_clang([str(tmp_path / "a.c"), str(tmp_path / "b.c")])


def test_from_llvm_ir_cases() -> None:
    with pytest.raises(GraphCreationError, match="expected top-level entity"):
        programl.from_llvm_ir("foo bar", version="10")
    graph = programl.from_llvm_ir(IR_A, version="22")
    assert len(graph.module) == 1


def test_from_clang_and_from_llvm_ir_smoke_on_legacy_ir(shared_data, tmp_path) -> None:
    """0.3.2's smoke tests over its 1,000 LLVM 3.7 files (every 5th here, and 012.ll, whose old `byval` clang-22
    rejects; the full run is in the report of issue 9)."""
    from programl import create_ops

    with tarfile.open(shared_data / "legacy-ir" / "llvm_ir.tar.bz2") as tar:
        members = sorted((m for m in tar.getmembers() if m.name.endswith(".ll")), key=lambda m: m.name)
        chosen = [m for i, m in enumerate(members) if i % 5 == 0 or m.name == "012.ll"]
        for member in chosen:
            path = tmp_path / Path(member.name).name
            path.write_bytes(tar.extractfile(member).read())
    assert len(members) == 1000
    for member in chosen:
        path = tmp_path / Path(member.name).name
        graph = programl.from_clang([str(path)])
        assert isinstance(graph, programl.ProgramGraph) and len(graph.node) > 1, member.name
        if member.name in ("000.ll", "012.ll"):
            for version in create_ops.LLVM2GRAPH_BINARIES:
                assert programl.from_llvm_ir(path.read_text(), version=version).node == graph.node
