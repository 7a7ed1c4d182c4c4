"""XLA HLO -> graphs (SPEC §1.14, issue 9): the vendored schema, the builder's rules, its errors, the API and the CLI,
and node-for-node agreement with the original ``xla2graph`` of programl 0.3.2.

The committed fixtures (tests/data/xla/*.hlo.pb) are real HLO made by jax, so everything but the fresh-jax tests
runs without jax. The differential tests run the reference binary (``make reference``) and skip without it; the
original builder iterates no hash map, so its output is compared byte for byte.
"""

from __future__ import annotations

import ast
import concurrent.futures
import glob
import importlib.util
import random
import re
import subprocess
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, unknown_fields
from hypothesis import given, settings
from hypothesis import strategies as st

import programl
from programl.cli import main
from programl.exceptions import GraphCreationError
from programl.graph_builder._encode import varint
from programl.graph_builder.compare import compare_graphs
from programl.graph_builder.xla import graph_from_hlo, graph_from_hlo_bytes, serialize_hlo, shape_text
from programl.proto import Edge, Node, ProgramGraph
from programl.third_party.tensorflow import xla_pb2
from tests.graph_builder.reference import find_reference_tool

REPO = Path(__file__).resolve().parents[2]
FIXTURES = sorted((REPO / "tests" / "data" / "xla").glob("*.hlo.pb"))
XLA2GRAPH = find_reference_tool("xla2graph")
needs_reference = pytest.mark.skipif(
    XLA2GRAPH is None, reason="xla2graph (programl 0.3.2) not installed (make reference)"
)

INST, V, C = Node.INSTRUCTION, Node.VARIABLE, Node.CONSTANT
CONTROL, DATA, CALL = Edge.CONTROL, Edge.DATA, Edge.CALL
F32, S32 = xla_pb2.F32, xla_pb2.S32


# ---------------------------------------------------------------------------------------------------------------
# helpers: HLO made by hand, and the reference binary


def instruction(id_, opcode, operands=(), element_type=F32, dims=(), name=None, called=(), preds=(), literal=None):
    inst = xla_pb2.HloInstructionProto(
        id=id_,
        opcode=opcode,
        name=name or f"{opcode}.{id_}",
        operand_ids=list(operands),
        called_computation_ids=list(called),
        control_predecessor_ids=list(preds),
    )
    inst.shape.element_type = element_type
    inst.shape.dimensions.extend(dims)
    if literal is not None:
        inst.literal.shape.element_type, dimensions = literal
        inst.literal.shape.dimensions.extend(dimensions)
    return inst


def hlo(computations, entry, name="m") -> xla_pb2.HloProto:
    module = xla_pb2.HloModuleProto(name=name, entry_computation_id=entry)
    for id_, computation_name, instructions in computations:
        module.computations.add(id=id_, name=computation_name).instructions.extend(instructions)
    return xla_pb2.HloProto(hlo_module=module)


def reference_run(data: bytes) -> tuple[bytes | None, str]:
    """(graph bytes, "") from the original xla2graph, or (None, its error message)."""
    result = subprocess.run(
        [XLA2GRAPH, "--stdin_fmt=pb", "--stdout_fmt=pb"], input=data, capture_output=True, timeout=60
    )
    if result.returncode:
        return None, result.stderr.decode("utf-8", "replace").strip()
    return result.stdout, ""


def assert_matches_reference(data: bytes) -> ProgramGraph:
    expected, error = reference_run(data)
    assert expected is not None, f"xla2graph failed: {error}"
    ours = graph_from_hlo_bytes(data)
    if ours.SerializeToString() != expected:
        difference = compare_graphs(ProgramGraph.FromString(expected), ours, normalize=False)
        pytest.fail(f"differs from xla2graph: {difference.summary() if difference else 'same multisets, other order'}")
    return ours


def listing(graph: ProgramGraph) -> tuple[list, list]:
    nodes = [(n.type, n.text, n.function) for n in graph.node]
    edges = [(e.flow, e.position, e.source, e.target) for e in graph.edge]
    return nodes, edges


# ---------------------------------------------------------------------------------------------------------------
# the schema


def _serialized_descriptor_of_the_wheel() -> bytes | None:
    paths = sorted(
        glob.glob(str(REPO / ".venv-ref/lib/python3*/site-packages/programl/third_party/tensorflow/xla_pb2.py"))
    )
    if not paths:
        return None
    for node in ast.walk(ast.parse(Path(paths[0]).read_text())):  # read, never imported (protobuf 3 gencode)
        if isinstance(node, ast.keyword) and node.arg == "serialized_pb":
            return ast.literal_eval(node.value)
    return None


def test_schema_is_byte_identical_to_the_original() -> None:
    original = _serialized_descriptor_of_the_wheel()
    if original is None:
        pytest.skip("programl 0.3.2 not installed in .venv-ref (make reference)")
    assert xla_pb2.DESCRIPTOR.serialized_pb == original


def test_fields_the_builder_reads_keep_the_numbers_xla_uses() -> None:
    """The numbers of today's XLA hlo.proto / xla_data.proto (jax's HLO is read through them)."""
    expected = {
        "HloProto": {"hlo_module": 1},
        "HloModuleProto": {"name": 1, "computations": 3, "entry_computation_id": 6},
        "HloComputationProto": {"name": 1, "instructions": 2, "id": 5},
        "HloInstructionProto": {
            "name": 1,
            "opcode": 2,
            "shape": 3,
            "literal": 8,
            "id": 35,
            "operand_ids": 36,
            "control_predecessor_ids": 37,
            "called_computation_ids": 38,
        },
        "ShapeProto": {"element_type": 2, "dimensions": 3},
        "LiteralProto": {"shape": 1},
    }
    for message, fields in expected.items():
        descriptor = getattr(xla_pb2, message).DESCRIPTOR
        assert {name: descriptor.fields_by_name[name].number for name in fields} == fields, message
    assert xla_pb2.PrimitiveType.Value("F32") == 11 and xla_pb2.PrimitiveType.Value("BF16") == 16


def test_the_vendored_files_carry_licence_and_provenance() -> None:
    directory = REPO / "programl" / "third_party" / "tensorflow"
    assert "Apache License" in (directory / "LICENSE").read_text()
    assert "Licensed under the Apache License, Version 2.0" in (directory / "xla.proto").read_text()[:1000]
    readme = (directory / "README.md").read_text()
    assert "ChrisCummins/ProGraML" in readme and "089c80197eae1341c345f1ef85bc5edcd983e0ab" in readme


# ---------------------------------------------------------------------------------------------------------------
# the builder's rules on a module made by hand


def test_rules_on_a_hand_made_module() -> None:
    add = [instruction(1, "parameter"), instruction(2, "parameter"), instruction(3, "add", [1, 2])]
    main_ = [
        instruction(10, "parameter", dims=(4,)),
        instruction(11, "constant", element_type=F32, literal=(F32, ())),
        instruction(12, "broadcast", [11], dims=(4,)),
        instruction(13, "reduce", [10, 11], called=[1]),
        instruction(14, "negate", [13], preds=[12]),
    ]
    graph = graph_from_hlo(hlo([(1, "add", add), (2, "main", main_)], entry=2, name="hand"))
    nodes, edges = listing(graph)
    assert nodes == [
        (INST, "[external]", 0),
        (INST, "<entry>", 0),  # 1: computation "add"
        (INST, "<param>", 0),
        (V, "F32", 0),
        (INST, "<param>", 0),
        (V, "F32", 0),
        (INST, "add", 0),
        (V, "F32", 0),
        (INST, "<entry>", 1),  # 8: computation "main"
        (INST, "<param>", 1),
        (V, "F32 4", 1),
        (INST, "constant.11", 1),  # a constant's text is its name
        (V, "F32", 1),
        (C, "F32", 0),  # its literal: the literal's shape, no function
        (INST, "broadcast", 1),
        (V, "F32 4", 1),
        (INST, "reduce", 1),
        (V, "F32", 1),
        (INST, "negate", 1),
        (V, "F32", 1),
    ]
    assert edges == [
        (DATA, 0, 2, 3),
        (CONTROL, 0, 1, 2),  # <entry> -> parameter
        (DATA, 0, 4, 5),
        (CONTROL, 0, 1, 4),
        (DATA, 0, 6, 7),
        (DATA, 0, 3, 6),  # operand 0: its variable and its instruction, position 0
        (CONTROL, 0, 2, 6),
        (DATA, 1, 5, 6),
        (CONTROL, 1, 4, 6),
        (DATA, 0, 9, 10),
        (CONTROL, 0, 8, 9),
        (DATA, 0, 11, 12),
        (DATA, 0, 13, 11),  # literal -> constant at position = operand count
        (DATA, 0, 14, 15),
        (DATA, 0, 12, 14),
        (CONTROL, 0, 11, 14),
        (DATA, 0, 16, 17),
        (DATA, 0, 10, 16),
        (CONTROL, 0, 9, 16),
        (DATA, 1, 12, 16),
        (CONTROL, 1, 11, 16),
        (CALL, 0, 16, 1),  # the call to "add": its <entry>, and back from its last instruction
        (CALL, 0, 6, 16),
        (DATA, 0, 18, 19),
        (DATA, 0, 17, 18),
        (CONTROL, 0, 16, 18),
        (CONTROL, 0, 14, 18),  # control predecessor, position 0
        (CALL, 0, 0, 8),  # [external] calls the entry computation
        (CALL, 0, 18, 0),
    ]
    assert [f.name for f in graph.function] == ["add", "main"] and [f.module for f in graph.function] == [0, 0]
    assert [m.name for m in graph.module] == ["hand"]
    assert not any(n.HasField("features") for n in graph.node)


@pytest.mark.parametrize(
    ("element_type", "dims", "text"),
    [(F32, (), "F32"), (F32, (3,), "F32 3"), (S32, (2, 3, 4), "S32 2x3x4"), (xla_pb2.TUPLE, (), "TUPLE")],
)
def test_shape_text(element_type, dims, text) -> None:
    assert shape_text(xla_pb2.ShapeProto(element_type=element_type, dimensions=dims)) == text


def test_element_types_newer_than_the_schema_read_as_an_empty_name() -> None:
    """As protobuf's C++ PrimitiveType_Name gives them in the original (20 is today's F8E4M3FN)."""
    graph = graph_from_hlo(hlo([(1, "main", [instruction(1, "parameter", element_type=20, dims=(3,))])], entry=1))
    assert graph.node[3].text == " 3"


def test_first_definition_of_an_id_wins_and_an_empty_computation_is_its_own_exit() -> None:
    module = hlo(
        [
            (1, "empty", []),
            (
                2,
                "main",
                [instruction(5, "parameter"), instruction(5, "negate", [5]), instruction(6, "call", [5], called=[1])],
            ),
        ],
        entry=2,
    )
    nodes, edges = listing(graph_from_hlo(module))
    assert (DATA, 0, 4, 5) in edges and (CONTROL, 0, 3, 5) in edges  # operand 5 is the parameter, not the negate
    assert (CALL, 0, 7, 1) in edges and (CALL, 0, 1, 7) in edges  # the empty computation: <entry> in and out


@pytest.mark.parametrize(
    ("module", "message"),
    [
        (hlo([(1, "main", [instruction(1, "parameter")])], entry=7), "Failed to locate entry computation"),
        (xla_pb2.HloProto(), "Failed to locate entry computation"),
        (hlo([(1, "main", [instruction(1, "negate", [2]), instruction(2, "parameter")])], 1), "operand data 1 <- 2"),
        (
            hlo([(1, "a", [instruction(1, "parameter")]), (2, "main", [instruction(2, "negate", [1])])], 2),
            "Source and target instructions must belong to the same function. Source instruction has function `a`, "
            "target function `main`",
        ),
        (hlo([(2, "main", [instruction(2, "call", called=[5])])], 2), "Failed to locate called computation"),
        (hlo([(2, "main", [instruction(2, "call", called=[2])])], 2), "Failed to locate called computation"),
        (hlo([(1, "main", [instruction(1, "exp", preds=[9])])], 1), "Failed to find control predecessor"),
    ],
    ids=["no-entry", "no-module", "forward-operand", "foreign-operand", "no-callee", "recursion", "no-predecessor"],
)
def test_malformed_modules_raise_the_originals_messages(module, message) -> None:
    with pytest.raises(GraphCreationError, match=re.escape(message)):
        graph_from_hlo(module)


@pytest.mark.parametrize(
    "data", [b"\xff\xff\xff\xff", b"\x0a\x05\x0a\x03\xff\xfe\xfd", b"\x0a" * 300], ids=["corrupt", "utf8", "truncated"]
)
def test_bytes_that_are_not_an_hlo_proto(data) -> None:
    with pytest.raises(GraphCreationError, match=r"^in\.pb: not a serialized xla\.HloProto \("):
        graph_from_hlo_bytes(data, path="in.pb")


def test_a_program_graph_or_labels_is_not_taken_for_hlo() -> None:
    """A ``.pb`` this project wrote fails as HLO ("Failed to locate entry computation" before); the error says what it
    is. Real HLO is never taken for one of them (the check runs only when the bytes fail as HLO)."""
    from programl.dataflow import analyze
    from programl.graph_builder.xla import other_message_kind
    from programl.proto import ProgramGraphFeaturesList

    graph = programl.from_llvm_ir((REPO / "tests" / "data" / "example_a.ll").read_text())
    data = graph.SerializeToString()
    assert other_message_kind(data) == "ProgramGraph"
    with pytest.raises(GraphCreationError) as info:
        graph_from_hlo_bytes(data, path="a.ProgramGraph.pb")
    assert str(info.value) == "a.ProgramGraph.pb: a serialized ProgramGraph, not an XLA HloProto"
    assert other_message_kind((REPO / "tests" / "data" / "io_parallel.ProgramGraph.pb").read_bytes()) == "ProgramGraph"

    labels = analyze(graph, "reachability", max_roots=2)
    assert isinstance(labels, ProgramGraphFeaturesList) and labels.graph
    labels.context.feature["x"].int64_list.value[:] = [1]  # field 1, as HloProto.hlo_module: still labels
    assert other_message_kind(labels.SerializeToString()) == "ProgramGraphFeaturesList"
    with pytest.raises(
        GraphCreationError, match=r"^l\.pb: a serialized ProgramGraphFeaturesList, not an XLA HloProto$"
    ):
        graph_from_hlo_bytes(labels.SerializeToString(), path="l.pb")

    for path in FIXTURES:
        assert other_message_kind(path.read_bytes()) is None
    assert other_message_kind(serialize_hlo(hlo([(1, "main", [instruction(1, "parameter")])], entry=7))) is None
    with pytest.raises(GraphCreationError, match="^Failed to locate entry computation$"):
        graph_from_hlo_bytes(serialize_hlo(hlo([(1, "main", [instruction(1, "parameter")])], entry=7)))
    for data in (b"", b"\xff\xff", ProgramGraph(node=[Node(text="[external]")]).SerializeToString()):
        assert other_message_kind(data) is None  # a graph of one node and nothing else reads as neither


def test_deeply_nested_shapes_are_an_error_not_a_crash() -> None:
    def field(tag: int, payload: bytes) -> bytes:
        return bytes([tag]) + varint(len(payload)) + payload

    shape = b"\x10\x0d"  # ShapeProto{element_type: TUPLE}
    for _ in range(500):
        shape = b"\x10\x0d" + field(0x22, shape)  # tuple_shapes (4)
    inst = instruction(1, "parameter").SerializeToString() + field(0x1A, shape)  # shape (3)
    computation = field(0x0A, b"m") + field(0x12, inst) + b"\x28\x01"  # name, instructions, id = 1
    module = field(0x0A, b"m") + field(0x1A, computation) + b"\x30\x01"  # name, computations, entry id = 1
    with pytest.raises(GraphCreationError, match="not a serialized xla.HloProto"):
        graph_from_hlo_bytes(field(0x0A, module))


def test_other_messages_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="HloProto"):
        graph_from_hlo(ProgramGraph())
    with pytest.raises(TypeError, match="HloProto"):
        serialize_hlo("not bytes")


# ---------------------------------------------------------------------------------------------------------------
# real HLO (the jax fixtures)


def test_there_are_fixtures() -> None:
    assert {p.name for p in FIXTURES} >= {f"{n}.hlo.pb" for n in ("elementwise", "dot", "while_loop", "conditional")}


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_graph_has_one_function_per_computation_and_two_nodes_per_instruction(path: Path) -> None:
    proto = xla_pb2.HloProto.FromString(path.read_bytes())
    module = proto.hlo_module
    graph = graph_from_hlo(proto)
    assert [f.name for f in graph.function] == [c.name for c in module.computations]
    assert graph.module[0].name == module.name
    instructions = sum(len(c.instructions) for c in module.computations)
    constants = sum(i.opcode == "constant" for c in module.computations for i in c.instructions)
    assert len(graph.node) == 1 + len(module.computations) + 2 * instructions + constants
    calls = sum(len(i.called_computation_ids) for c in module.computations for i in c.instructions)
    assert sum(e.flow == CALL for e in graph.edge) == 2 * (calls + 1)
    assert graph_from_hlo_bytes(path.read_bytes()).SerializeToString() == graph.SerializeToString()  # deterministic


def test_fixtures_carry_fields_newer_than_the_schema() -> None:
    """Today's XLA writes fields the 2020 schema lacks (e.g. the module's stack frames); they are kept, unread."""
    module = xla_pb2.HloProto.FromString((REPO / "tests/data/xla/while_loop.hlo.pb").read_bytes()).hlo_module
    assert len(unknown_fields.UnknownFieldSet(module)) > 0
    assert graph_from_hlo_bytes(xla_pb2.HloProto(hlo_module=module).SerializeToString()).node


def test_while_loop_calls_its_condition_and_body() -> None:
    graph = graph_from_hlo_bytes((REPO / "tests/data/xla/while_loop.hlo.pb").read_bytes())
    (loop,) = [i for i, n in enumerate(graph.node) if n.text == "while"]
    callees = {
        graph.function[graph.node[e.target].function].name for e in graph.edge if e.flow == CALL and e.source == loop
    }
    assert len(callees) == 2 and all(
        graph.node[e.target].text == "<entry>" for e in graph.edge if e.source == loop and e.flow == CALL
    )


def test_xla_graphs_go_through_the_transforms_and_analyses() -> None:
    """What CompilerGym does with them: networkx / JSON round trips, and the data-flow labels."""
    from programl.dataflow import analyze

    graph = graph_from_hlo_bytes((REPO / "tests/data/xla/while_loop.hlo.pb").read_bytes())
    assert programl.from_networkx(programl.to_networkx(graph)) == graph
    assert programl.from_json(programl.to_json(graph)) == graph
    assert len(analyze(graph, "reachability", max_roots=1).graph) == 1  # one root, one labelled copy


# ---------------------------------------------------------------------------------------------------------------
# the public API and the CLI


def test_from_xla_hlo_proto_takes_messages_modules_and_bytes() -> None:
    data = FIXTURES[0].read_bytes()
    proto = xla_pb2.HloProto.FromString(data)
    graph = programl.from_xla_hlo_proto(proto)
    assert isinstance(graph, ProgramGraph) and graph.node[0].text == "[external]"
    assert programl.from_xla_hlo_proto(proto.hlo_module) == graph
    assert programl.from_xla_hlo_proto(data) == graph
    # another class of the same message (another descriptor pool), as a newer hlo.proto would give
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(xla_pb2.DESCRIPTOR.serialized_pb))
    foreign = message_factory.GetMessageClass(pool.FindMessageTypeByName("xla.HloProto"))
    assert foreign is not xla_pb2.HloProto
    assert programl.from_xla_hlo_proto(foreign.FromString(data)) == graph
    assert graph_from_hlo(foreign.FromString(data).hlo_module) == graph


def test_from_xla_hlo_proto_many_keeps_order_with_any_executor() -> None:
    protos = [xla_pb2.HloProto.FromString(p.read_bytes()) for p in FIXTURES]
    expected = [graph_from_hlo(p) for p in protos]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert list(programl.from_xla_hlo_proto(iter(protos), executor=pool, chunksize=2)) == expected
    assert list(programl.from_xla_hlo_proto(protos[:2], timeout=60)) == expected[:2]  # the default process pool


def test_cli_builds_hlo_files_goes_on_after_a_bad_one_and_resumes(tmp_path: Path, capsys) -> None:
    inputs = [str(p) for p in FIXTURES[:2]]
    (tmp_path / "bad.pb").write_bytes(b"\xff" * 8)
    out = tmp_path / "out"
    code = main(["build", *inputs, str(tmp_path / "bad.pb"), "-o", str(out), "-q", "-j", "1"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip() == f"{tmp_path / 'bad.pb'}: error: not a serialized xla.HloProto (Wire format was corrupt)"
    written = [out / path.name.replace(".hlo.pb", ".hlo.ProgramGraph.pb") for path in FIXTURES[:2]]
    for path, output in zip(FIXTURES[:2], written):
        assert output.read_bytes() == graph_from_hlo_bytes(path.read_bytes()).SerializeToString()
    stamps = [output.stat().st_mtime_ns for output in written]
    assert main(["build", *inputs, "-o", str(out), "-q"]) == 0
    assert [output.stat().st_mtime_ns for output in written] == stamps  # up to date: not rebuilt


def test_cli_build_of_a_program_graph_says_what_it_is(tmp_path: Path, capsys) -> None:
    """`programl build x.ProgramGraph.pb` (a graph this project wrote) is one line saying so, and HLO still builds."""
    out = tmp_path / "graphs"
    assert main(["build", str(REPO / "tests" / "data" / "example_a.ll"), "-o", str(out), "-q"]) == 0
    built = out / "example_a.ProgramGraph.pb"
    capsys.readouterr()
    code = main(["build", str(built), str(FIXTURES[0]), "-o", str(tmp_path / "again"), "-q", "-j", "1"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.splitlines() == [
        f"{built}: error: already a ProgramGraph, not an XLA HloProto (use `programl convert` or `programl stats`)"
    ]
    hlo_out = tmp_path / "again" / FIXTURES[0].name.replace(".hlo.pb", ".hlo.ProgramGraph.pb")
    assert hlo_out.read_bytes() == graph_from_hlo_bytes(FIXTURES[0].read_bytes()).SerializeToString()


# ---------------------------------------------------------------------------------------------------------------
# the original xla2graph


@needs_reference
@pytest.mark.reference
@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_matches_reference(path: Path) -> None:
    assert_matches_reference(path.read_bytes())


EDGE_CASES = {
    "unknown-element-type": hlo(
        [
            (
                1,
                "m",
                [
                    instruction(1, "parameter", element_type=20, dims=(3,)),
                    instruction(2, "negate", [1], element_type=99),
                ],
            )
        ],
        1,
    ),
    "negative-dims": hlo([(1, "m", [instruction(1, "parameter", dims=(-1, 5, 0))])], 1),
    "duplicate-ids": hlo(
        [(1, "m", [instruction(1, "parameter"), instruction(1, "negate", [1]), instruction(3, "add", [1, 1])])], 1
    ),
    "self-operand": hlo([(1, "m", [instruction(1, "negate", [1])])], 1),
    "empty-computation": hlo([(1, "e", []), (2, "m", [instruction(2, "call", called=[1])])], 2),
    "duplicate-computation-ids": hlo(
        [
            (1, "a", [instruction(1, "parameter")]),
            (1, "b", [instruction(2, "parameter")]),
            (3, "m", [instruction(3, "call", called=[1])]),
        ],
        3,
    ),
    "constant-with-operands": hlo(
        [(1, "m", [instruction(1, "parameter"), instruction(2, "constant", [1], literal=(S32, (2, 2)))])], 1
    ),
    "constant-without-literal": hlo([(1, "m", [instruction(2, "constant")])], 1),
    "control-predecessors": hlo(
        [
            (
                1,
                "m",
                [instruction(1, "parameter"), instruction(2, "negate", [1]), instruction(3, "exp", [1], preds=[2, 1])],
            )
        ],
        1,
    ),
    "empty-opcode": hlo([(1, "m", [instruction(1, "")])], 1),
    "entry-id-0": hlo([(0, "m", [instruction(0, "parameter")])], 0),
    "unicode-names": hlo([(1, "mäin", [instruction(1, "constant", name="π")])], 1, name="módule"),
}


@needs_reference
@pytest.mark.reference
@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_edge_case_matches_reference(name: str) -> None:
    assert_matches_reference(EDGE_CASES[name].SerializeToString())


@needs_reference
@pytest.mark.reference
def test_errors_match_reference() -> None:
    for module, message in [
        (
            hlo([(1, "m", [instruction(1, "negate", [2]), instruction(2, "parameter")])], 1),
            "Failed to find operand data 1 <- 2",
        ),
        (hlo([(1, "a", [instruction(1, "parameter")]), (2, "m", [instruction(2, "parameter", preds=[1])])], 2), None),
        (hlo([(2, "m", [instruction(2, "call", called=[2])])], 2), "Failed to locate called computation"),
        (xla_pb2.HloProto(), "Failed to locate entry computation"),
    ]:
        data = module.SerializeToString()
        expected, reference_message = reference_run(data)
        assert expected is None
        with pytest.raises(GraphCreationError) as error:
            graph_from_hlo_bytes(data)
        assert error.value.message == reference_message
        assert message is None or reference_message == message


def random_hlo(seed: int) -> xla_pb2.HloProto:
    """A small random module: ids from a small range (duplicates, forward and foreign references happen), random
    opcodes, shapes (element types past the schema's too), calls, control predecessors and entry id."""
    rng = random.Random(seed)
    opcodes = ["parameter", "constant", "add", "call", "while", "tuple", "get-tuple-element", ""]
    module = xla_pb2.HloModuleProto(name=rng.choice(["m", "jit_f", "módule", ""]))
    computation_ids: list[int] = []
    for _ in range(rng.randint(1, 4)):
        computation = module.computations.add(id=rng.randint(0, 6), name=rng.choice(["main", "body", "cond", "ü", ""]))
        defined: list[int] = []
        for _ in range(rng.randint(0, 6)):
            opcode = rng.choice(opcodes)
            operands = [rng.choice(defined) for _ in range(rng.randint(0, 3))] if defined else []
            if rng.random() < 0.02:
                operands.append(rng.randint(0, 40))  # most likely undefined here
            inst = instruction(
                rng.randint(0, 40) if rng.random() < 0.3 else len(module.computations) * 100 + len(defined),
                opcode,
                operands if opcode != "parameter" or rng.random() < 0.2 else (),
                element_type=rng.randint(0, 25),
                dims=[rng.randint(-2, 10) for _ in range(rng.randint(0, 3))],
                called=[
                    rng.choice(computation_ids) if rng.random() < 0.97 else 9  # 9: no such computation
                    for _ in range(rng.randint(0, 2) if opcode in ("call", "while") and computation_ids else 0)
                ],
                preds=[rng.choice(defined) for _ in range(rng.randint(0, 1))] if defined else (),
                literal=(rng.randint(0, 25), [rng.randint(0, 4)])
                if opcode == "constant" and rng.random() < 0.8
                else None,
            )
            computation.instructions.append(inst)
            defined.append(inst.id)
        computation_ids.append(computation.id)
    module.entry_computation_id = computation_ids[-1] if rng.random() < 0.9 else 99
    return xla_pb2.HloProto(hlo_module=module)


@needs_reference
@pytest.mark.reference
@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(0, 2**32 - 1))
def test_random_modules_match_reference(seed: int) -> None:
    data = random_hlo(seed).SerializeToString()
    expected, message = reference_run(data)
    if expected is None:
        with pytest.raises(GraphCreationError) as error:
            graph_from_hlo_bytes(data)
        assert error.value.message == message
    else:
        assert graph_from_hlo_bytes(data).SerializeToString() == expected


# ---------------------------------------------------------------------------------------------------------------
# HLO made afresh with jax (optional)


def _jax_functions() -> dict:
    pytest.importorskip("jax", reason="jax not installed (pip install 'programl[xla]')")
    spec = importlib.util.spec_from_file_location("make_fixtures", REPO / "tests/data/xla/make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import jax
    import jax.numpy as jnp

    def nested_calls(x):
        inner = jax.jit(lambda v: jnp.exp(v) - 1.0)
        return jax.jit(lambda v: inner(v) * inner(v + 1.0))(x)

    def scan(xs):
        return jax.lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)

    functions = module.functions()
    functions["nested_calls"] = (nested_calls, (jnp.ones((2, 2), jnp.float32),))
    functions["scan"] = (scan, (jnp.arange(5, dtype=jnp.float32),))
    functions["int8"] = (lambda x: (x + 1).astype(jnp.int8), (jnp.ones((3,), jnp.int32),))
    return {name: (module.hlo_proto_bytes, function, args) for name, (function, args) in functions.items()}


_HLO_TEXT_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?(\S+) = .*?(?:^|\s)([a-z][\w-]*)\(", re.MULTILINE)


@pytest.mark.parametrize(
    "name", ["elementwise", "dot", "while_loop", "conditional", "reduce", "nested_calls", "scan", "int8"]
)
def test_fresh_jax_hlo_reads_as_jax_prints_it(name: str) -> None:
    """Our (2020) schema reads today's HLO: names and opcodes agree with the HLO text jax prints."""
    make_bytes, function, args = _jax_functions()[name]
    import jax

    data = make_bytes(function, args)
    module = xla_pb2.HloProto.FromString(data).hlo_module
    text = jax.jit(function).lower(*args).compiler_ir("hlo").as_hlo_text()
    assert sorted(_HLO_TEXT_INSTRUCTION.findall(text)) == sorted(
        (i.name, i.opcode) for c in module.computations for i in c.instructions
    )
    graph = graph_from_hlo_bytes(data)
    assert len(graph.function) == len(module.computations) and graph.module[0].name == module.name
    if XLA2GRAPH is not None:
        assert_matches_reference(data)
