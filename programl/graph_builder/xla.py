"""XLA HLO -> ProGraML ``ProgramGraph``, node for node and edge for edge as ProGraML 0.3.2's ``xla2graph`` builds it.

Implements docs/spec/graph.md#xla-hlo-graphs (the XLA HLO front-end) with the node and edge conventions of
docs/spec/graph.md#node-fields, docs/spec/graph.md#edge-positions and the Function/Module messages of
docs/spec/graph.md#functions-and-modules. The rules are those of the original's ``HloModuleGraphBuilder``
(``programl/ir/xla/hlo_module_graph_builder.cc`` and ``xla_stringifier.cc``):

* node 0 is the ``[external]`` instruction; the module is named after the HLO module;
* every computation becomes a Function (in the order of the module, callees first) whose first node is an
  ``<entry>`` instruction;
* every HLO instruction becomes an INSTRUCTION whose text is ``<param>`` for parameters, the instruction's name for
  constants, and the opcode otherwise; it is followed by a VARIABLE for the value it produces, whose text is the
  shape (``F32 3x4``: element type name, a space, the dimensions joined by ``x``; scalars and tuples have no
  dimensions), joined by a DATA edge at position 0;
* a parameter gets a CONTROL edge from ``<entry>``; a constant gets a CONSTANT node (text: its literal's shape, no
  function) with a DATA edge to the instruction at position = the number of operands;
* operand ``i`` gives a DATA edge from its variable and a CONTROL edge from its instruction, both at position ``i``;
  a control predecessor gives a CONTROL edge at position 0;
* a called computation gives a CALL edge from the instruction to the callee's ``<entry>`` and one from the callee's
  last instruction back; ``[external]`` calls the entry computation the same way.

Ids are looked up module-wide and the first definition of an id wins, as in the original's hash maps; an unknown
element type reads as the empty string, as protobuf's C++ ``PrimitiveType_Name`` gives it. Errors (an operand or a
callee that is not defined before its use, a missing entry computation, an operand from another computation) raise
:class:`~programl.exceptions.GraphCreationError` with the original's message; bytes that are no HLO but a
``ProgramGraph`` or ``ProgramGraphFeaturesList`` of this project say that instead (:func:`other_message_kind`). The
output is deterministic.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError

from programl.exceptions import GraphCreationError
from programl.graph_builder._encode import encode_graph, varint
from programl.proto import Edge, Node, ProgramGraph, ProgramGraphFeaturesList
from programl.third_party.tensorflow import xla_pb2

__all__ = [
    "HloProto",
    "graph_from_hlo",
    "graph_from_hlo_bytes",
    "other_message_kind",
    "parse_hlo_proto",
    "serialize_hlo",
    "shape_text",
]

HloProto = xla_pb2.HloProto

INSTRUCTION, VARIABLE, CONSTANT = Node.INSTRUCTION, Node.VARIABLE, Node.CONSTANT
CONTROL, DATA, CALL = Edge.CONTROL, Edge.DATA, Edge.CALL

EXTERNAL_TEXT = "[external]"
ENTRY_TEXT = "<entry>"
PARAMETER_TEXT = "<param>"

# element type number -> name; numbers the 2020 schema does not know (newer XLA types) read as ""
_TYPE_NAMES = {value.number: value.name for value in xla_pb2.PrimitiveType.DESCRIPTOR.values}


def shape_text(shape: Any) -> str:
    """The text of a shape, as ``ShapeProtoToString``: ``F32 3x4``, ``PRED``, ``TUPLE``."""
    name = _TYPE_NAMES.get(shape.element_type, "")
    if not shape.dimensions:
        return name
    return name + " " + "x".join(map(str, shape.dimensions))


class _Builder:
    """The state of one build: flat node and edge lists, and the module-wide id maps of the original."""

    def __init__(self) -> None:
        self.node_type: list[int] = [INSTRUCTION]
        self.node_text: list[str] = [EXTERNAL_TEXT]
        self.node_function: list[int] = [0]
        self.edges: list[tuple[int, int, int, int]] = []  # (flow, position, source, target)
        self.functions: list[str] = []
        self.computations: dict[int, tuple[int, int]] = {}  # computation id -> (entry node, exit node)
        self.instructions: dict[int, int] = {}  # instruction id -> instruction node
        self.producers: dict[int, int] = {}  # instruction id -> variable node

    def add_node(self, type_: int, text: str, function: int) -> int:
        self.node_type.append(type_)
        self.node_text.append(text)
        self.node_function.append(function)
        return len(self.node_type) - 1

    def add_control_edge(self, position: int, source: int, target: int) -> None:
        if source and self.node_function[source] != self.node_function[target]:
            raise GraphCreationError(
                "Source and target instructions must belong to the same function. Source instruction has function "
                f"`{self.functions[self.node_function[source]]}`, target function "
                f"`{self.functions[self.node_function[target]]}`"
            )
        self.edges.append((CONTROL, position, source, target))

    def add_call_edges(self, caller: int, callee: tuple[int, int]) -> None:
        entry, exit_ = callee
        self.edges.append((CALL, 0, caller, entry))
        self.edges.append((CALL, 0, exit_, caller))

    def visit_module(self, module: Any) -> None:
        for computation in module.computations:
            entry_exit = self.visit_computation(computation)
            self.computations.setdefault(computation.id, entry_exit)
        entry = self.computations.get(module.entry_computation_id)
        if entry is None:
            raise GraphCreationError("Failed to locate entry computation")
        self.add_call_edges(0, entry)

    def visit_computation(self, computation: Any) -> tuple[int, int]:
        function = len(self.functions)
        self.functions.append(computation.name)
        entry = self.add_node(INSTRUCTION, ENTRY_TEXT, function)
        last = entry
        for instruction in computation.instructions:
            last = self.visit_instruction(instruction, function, entry)
        return entry, last

    def visit_instruction(self, instruction: Any, function: int, entry: int) -> int:
        node_function, edges = self.node_function, self.edges
        instructions, producers = self.instructions, self.producers
        opcode = instruction.opcode
        id_ = instruction.id
        node = len(node_function)
        data = node + 1
        text = PARAMETER_TEXT if opcode == "parameter" else instruction.name if opcode == "constant" else opcode
        self.node_type += (INSTRUCTION, VARIABLE)
        self.node_text += (text, shape_text(instruction.shape))
        node_function += (function, function)
        instructions.setdefault(id_, node)
        producers.setdefault(id_, data)
        edges.append((DATA, 0, node, data))

        operand_ids = instruction.operand_ids
        if opcode == "parameter":
            self.add_control_edge(0, entry, node)
        elif opcode == "constant":
            literal = self.add_node(CONSTANT, shape_text(instruction.literal.shape), 0)
            edges.append((DATA, len(operand_ids), literal, node))

        for position, operand in enumerate(operand_ids):
            operand_data = producers.get(operand)
            if operand_data is None:
                raise GraphCreationError(f"Failed to find operand data {id_} <- {operand}")
            edges.append((DATA, position, operand_data, node))
            source = instructions[operand]
            if node_function[source] != function:
                self.add_control_edge(position, source, node)  # raises: another computation's instruction
            edges.append((CONTROL, position, source, node))

        for predecessor in instruction.control_predecessor_ids:
            source = instructions.get(predecessor)
            if source is None:
                raise GraphCreationError("Failed to find control predecessor")
            self.add_control_edge(0, source, node)

        for called in instruction.called_computation_ids:
            callee = self.computations.get(called)
            if callee is None:
                raise GraphCreationError("Failed to locate called computation")
            self.add_call_edges(node, callee)
        return node

    def encode(self, module_name: str) -> bytes:
        count = len(self.node_type)
        # the module message of the original has a name and nothing else (field 5, name = field 1)
        name = module_name.encode("utf-8")
        module = b"\x0a" + varint(len(name)) + name if name else b""
        return encode_graph(
            self.node_type,
            self.node_text,
            self.node_function,
            [0] * count,
            [None] * count,
            {},
            self.edges,
            [(name, []) for name in self.functions],
            [],
        ) + (b"\x2a" + varint(len(module)) + module)


def graph_from_hlo(hlo: Any, path: str | None = None) -> ProgramGraph:
    """Build the graph of an ``HloProto`` (or of a bare ``HloModuleProto``).

    Args:
        hlo: An ``xla.HloProto`` or ``xla.HloModuleProto`` message, of this package's schema
            (:mod:`programl.third_party.tensorflow.xla_pb2`) or of another (e.g. a newer ``hlo.proto`` in a private
            descriptor pool): a message of another class is read through its wire bytes.
        path: The input file, for error messages.

    Raises:
        GraphCreationError: The module is not well formed (see the module docstring).
        TypeError: ``hlo`` is not an HLO message.
    """
    full_name = getattr(getattr(hlo, "DESCRIPTOR", None), "full_name", None)
    if full_name == "xla.HloModuleProto":
        module = hlo if isinstance(hlo, xla_pb2.HloModuleProto) else _parse(xla_pb2.HloModuleProto, hlo, path)
    elif full_name == "xla.HloProto":
        module = (hlo if isinstance(hlo, xla_pb2.HloProto) else _parse(xla_pb2.HloProto, hlo, path)).hlo_module
    else:
        raise TypeError(f"expected an xla.HloProto or xla.HloModuleProto message, not {type(hlo).__name__}")
    builder = _Builder()
    try:
        builder.visit_module(module)
    except GraphCreationError as error:
        raise GraphCreationError(error.message, path) from None
    return ProgramGraph.FromString(builder.encode(module.name))


def _parse(message_class: type, message: Any, path: str | None) -> Any:
    return parse_hlo_proto(message.SerializeToString(), path, message_class)


def parse_hlo_proto(data: bytes, path: str | None = None, message_class: type = xla_pb2.HloProto) -> Any:
    """Parse a serialized ``HloProto`` (wire format, as XLA's ``--xla_dump_hlo_as_proto`` writes it).

    Raises:
        GraphCreationError: The bytes are not a valid message of that type.
    """
    try:
        return message_class.FromString(bytes(data))
    except DecodeError as error:
        reason = str(error).rpartition(": ")[2] or "invalid wire format"
        raise GraphCreationError(f"not a serialized {message_class.DESCRIPTOR.full_name} ({reason})", path) from None


def graph_from_hlo_bytes(data: bytes, path: str | None = None) -> ProgramGraph:
    """Build the graph of a serialized ``HloProto`` (what ``xla2graph --stdin_fmt=pb`` reads).

    Raises:
        GraphCreationError: The bytes are not a valid ``HloProto`` or its module is not well formed; bytes that are
            one of this project's messages instead (a ``ProgramGraph`` already built, labels) say so.
    """
    try:
        return graph_from_hlo(parse_hlo_proto(data, path), path)
    except GraphCreationError:
        kind = other_message_kind(data)  # looked at only when the bytes fail as HLO: a valid HloProto never gets here
        if kind is not None:
            raise GraphCreationError(f"a serialized {kind}, not an XLA HloProto", path) from None
        raise


def _clean(messages: list) -> bool:
    return not any(len(unknown_fields.UnknownFieldSet(message)) for message in messages)


def other_message_kind(data: bytes) -> str | None:
    """``"ProgramGraph"`` or ``"ProgramGraphFeaturesList"`` when ``data`` is that message of this project (``programl
    build -o`` writes ``*.ProgramGraph.pb``, ``programl analyze`` ``*.ProgramGraphFeaturesList.pb``) rather than an
    ``HloProto``; None otherwise.

    All three are protobuf wire bytes whose field 1 is length-delimited (``ProgramGraph.node``,
    ``ProgramGraphFeaturesList.context``, ``HloProto.hlo_module``), so the bytes must parse as the message, its first
    elements without unknown fields, and carry a field no ``HloProto`` has (an ``HloProto`` has fields 1 and 3 only):
    a graph has nodes and edges (field 2), functions (4), modules (5) or features (6); a features list has graphs
    (field 2). A graph of nodes alone reads as neither.
    """
    data = bytes(data)
    try:
        graph = ProgramGraph.FromString(data)
        if (
            graph.node
            and (graph.edge or graph.function or graph.module or graph.HasField("features"))
            and _clean([graph, *graph.node[:1], *graph.edge[:1], *graph.function[:1], *graph.module[:1]])
        ):
            return "ProgramGraph"
        labels = ProgramGraphFeaturesList.FromString(data)
        if labels.graph and _clean([labels, *labels.graph[:1]]):
            return "ProgramGraphFeaturesList"
    except (DecodeError, ValueError, TypeError):
        pass
    return None


def serialize_hlo(hlo: Any) -> bytes:
    """The wire bytes of an ``HloProto`` for :func:`graph_from_hlo_bytes`: a message (an ``HloModuleProto`` is wrapped
    in an ``HloProto``) or bytes, which are taken to be a serialized ``HloProto``.

    Raises:
        TypeError: ``hlo`` is neither bytes nor an HLO message.
    """
    if isinstance(hlo, (bytes, bytearray, memoryview)):
        return bytes(hlo)
    full_name = getattr(getattr(hlo, "DESCRIPTOR", None), "full_name", None)
    if full_name == "xla.HloProto":
        return hlo.SerializeToString()
    if full_name == "xla.HloModuleProto":
        # HloProto.hlo_module is field 1 (length-delimited)
        module = hlo.SerializeToString()
        return b"\x0a" + varint(len(module)) + module
    raise TypeError(f"expected an xla.HloProto, xla.HloModuleProto or bytes, not {type(hlo).__name__}")
