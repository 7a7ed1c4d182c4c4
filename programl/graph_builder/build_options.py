"""The options of the graph builder (docs/spec/graph.md#builder-options): what :func:`programl.graph_builder.llvm.build`
and its walk (:mod:`programl.graph_builder.llvm_walk`) read."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BuildOptions"]


@dataclass(frozen=True)
class BuildOptions:
    """Builder options (docs/spec/graph.md#builder-options, ``ProgramGraphOptions``).

    Attributes:
        instructions_only: No VARIABLE/CONSTANT nodes and no DATA edges.
        ignore_call_returns: Only forward CALL edges (external -> entry, call site -> callee entry).
        strict: Fail when the module has no functions or some node has no edge (docs/spec/graph.md#construction-order
            step 7).
        numbers_and_types: Not in ProGraML (``docs/numbers_types.md``): add the node features
            ``number_digits`` (the value of numeric constants) and ``type_shape`` (vector, array and struct types)
            and the module feature ``numbers_and_types`` (:mod:`programl.graph_builder.numbers_types`). Off: the
            faithful graph, byte for byte.
        string_bytes: Not in ProGraML (``docs/numbers_types.md``): add the node feature
            ``string_bytes`` (the bytes of string constants) and its module feature
            (:mod:`programl.graph_builder.string_bytes`). Off: the faithful graph, byte for byte.
    """

    instructions_only: bool = False
    ignore_call_returns: bool = False
    strict: bool = False
    numbers_and_types: bool = False
    string_bytes: bool = False
