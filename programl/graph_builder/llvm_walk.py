"""The walk of :mod:`programl.graph_builder.llvm`: a parsed module's handles (through llvmlite's C functions,
:mod:`programl.graph_builder._ffi`) and printed text, numbered into node and edge columns in the order ProGraML's
builder emits them (docs/spec/graph.md#construction-order), then encoded as a ``ProgramGraph``."""

from __future__ import annotations

import re
import types
from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from programl.exceptions import GraphCreationError
from programl.graph_builder import _ffi as ffi
from programl.graph_builder._encode import encode_graph_columns
from programl.graph_builder.ir_text import ModuleText, llvm_identifier, opcode_of, opcodes_of, result_names_of
from programl.graph_builder.llvm_parse import LLVM_VERSION
from programl.graph_builder.llvm_profile import (
    _metadata_fields,
    _metadata_int,
    _module_profile_summary,
    _profile_features,
)
from programl.proto import Edge, Node, ProgramGraph

if TYPE_CHECKING:
    from programl.graph_builder.build_options import BuildOptions

INSTRUCTION, VARIABLE, CONSTANT = Node.INSTRUCTION, Node.VARIABLE, Node.CONSTANT
CONTROL, DATA, CALL = Edge.CONTROL, Edge.DATA, Edge.CALL

EXTERNAL_TEXT = "[external]"
UNDEFINED_FUNCTION_TEXT = "; undefined function"


class _Walk(types.SimpleNamespace):
    """The columns of one module's walk: each step of :meth:`_Builder.build` reads those of the steps before it and
    adds its own (the names are the steps' own)."""


class _Builder:
    """Walks a parsed module into node and edge columns, in the reference's emission order
    (docs/spec/graph.md#construction-order).

    LLVM is asked for what the printed text cannot give: the handles of functions, blocks, instructions, arguments
    and operands (read in C, one list per object), the types of used values and the printed form of constants.
    Everything per node and per edge is then numpy over those columns: operands are classified by a sorted search
    over the handles of the module's instructions, blocks, arguments and functions, and nodes and edges are numbered
    in exactly the order of the reference's one-pass walk (per function: each instruction and the variables of its
    operands; the used arguments; then the edges of each instruction, of the arguments, from the producers, and
    between blocks breadth-first). Python loops are left per block (successors, breadth-first search), per call
    site, per switch, per used value or argument and per distinct constant, never per operand.
    """

    def __init__(self, text: ModuleText, options: BuildOptions) -> None:
        self.text = text
        self.options = options
        self.functions: list[tuple[str, list[tuple[str, int]]]] = []  # (name, int features)
        self.call_sites: list[tuple[int, int]] = []  # (call node, callee function index)
        self.node_int_features: dict[int, list[tuple[str, int]]] = {}
        # constants: the key is the constant's printed text (LLVM uniques constants by value)
        self.constant_text: dict[str, str] = {}
        self.constant_key_of: dict[int, str] = {}  # constant handle -> key
        self.type_text: dict[int, str] = {}  # type handle -> text, structs collapsed (docs/spec/graph.md#type-texts)
        self.function_index: dict[int, int] = {}  # function handle -> index
        self.function_signature: dict[int, tuple] = {}
        self.heads: dict[tuple[int, str], int] = {}  # (node type, node text) -> head id
        self.value_type: dict[int, int] = {}  # value handle -> type handle
        self.printed_type: dict[int, str] = {}  # type handle -> LLVM's printing

    # -- types and constants ----------------------------------------------------------------------------------

    def type_text_of(self, type_: int) -> str:
        text = self.type_text.get(type_)
        if text is None:
            # docs/spec/graph.md#type-texts: a struct (after stripping pointer levels; with opaque pointers there are
            # none) is `struct`
            text = "struct" if ffi.type_kind(type_) == ffi.TYPE_STRUCT else self.print_type(type_)
            self.type_text[type_] = text
        return text

    def type_of(self, value: int) -> int:
        type_ = self.value_type.get(value)
        if type_ is None:
            type_ = self.value_type[value] = ffi.type_of(value)
        return type_

    def print_type(self, type_: int) -> str:
        text = self.printed_type.get(type_)
        if text is None:
            text = self.printed_type[type_] = ffi.print_type(type_)
        return text

    def constant_key(self, value: int, kind: int) -> str:
        key = self.constant_key_of.get(value)
        if key is None:
            if kind in ffi.GLOBAL_KINDS:
                name = ffi.value_name(value)
                key = self.text.globals.get(llvm_identifier(name, "@")) if name else None
                if key is None:  # unnamed (@0) or an unusual spelling: ask LLVM
                    key = ffi.print_value(value).strip()
            else:
                key = ffi.print_value(value)
            self.constant_key_of[value] = key
            if key not in self.constant_text:
                self.constant_text[key] = self.type_text_of(self.type_of(value))
        return key

    def head(self, type_: int, text: str) -> int:
        head = self.heads.get((type_, text))
        if head is None:
            head = self.heads[(type_, text)] = len(self.heads)
        return head

    # -- the walk ---------------------------------------------------------------------------------------------

    def build(self, module: int) -> None:
        """Read the module's handles from LLVM, then number its nodes and edges (see the class docstring), in steps
        that each fill in the walk's columns; their order is the reference's."""
        w = _Walk()
        self._read_handles(w, module)
        self._index_instructions(w)
        self._classify_operands(w)
        self._number_nodes(w)
        self._function_edges(w)
        self._function_ends(w)
        self._read_used_types(w)
        self._call_edges_and_profiles(w)
        self._node_columns(w)
        self._constants_last(w)

    def _read_handles(self, w: _Walk, module: int) -> None:
        """The module's functions, and the handles of each definition's blocks, instructions and arguments (from LLVM)
        with the instruction texts (from the printed module); each function's name and profile."""
        data_nodes = not self.options.instructions_only
        functions = ffi.functions(module)
        self.function_index = {function: index for index, function in enumerate(functions)}
        definitions = iter(self.text.functions)

        instructions: list[int] = []  # every instruction of every definition, in module order
        texts: list[str] = []
        blocks: list[int] = []
        block_ends: list[int] = []  # per block: the flat index just past its last instruction
        arguments: list[int] = []
        defined: list[int] = []  # per definition: its function index
        declared: list[int] = []
        definition_blocks = [0]  # per definition: where its blocks start (and the last one ends)
        definition_arguments = [0]
        for index, function in enumerate(functions):
            name = ffi.value_name(function)
            if ffi.is_declaration(function):
                self.functions.append((name, []))
                declared.append(index)
                continue
            function_text = next(definitions, None)
            self.functions.append((name, self.function_profile(function_text.header if function_text else "")))
            start = len(instructions)
            function_blocks = ffi.blocks(function)
            for block in function_blocks:
                ffi.extend_instructions(instructions, block)
                block_ends.append(len(instructions))
            function_texts = function_text.instructions if function_text else None
            if function_texts is None or len(function_texts) != len(instructions) - start:
                # The printed text did not cut cleanly (an unusual printing): print instructions one by one.
                function_texts = [ffi.print_value(i).lstrip() for i in instructions[start:]]
            texts.extend(function_texts)
            blocks.extend(function_blocks)
            arguments.extend(ffi.arguments(function))
            defined.append(index)
            definition_blocks.append(len(blocks))
            definition_arguments.append(len(arguments))
        w.data_nodes, w.functions, w.instructions, w.texts = data_nodes, functions, instructions, texts
        w.blocks, w.block_ends, w.arguments, w.defined, w.declared = blocks, block_ends, arguments, defined, declared
        w.definition_blocks, w.definition_arguments = definition_blocks, definition_arguments

    def _index_instructions(self, w: _Walk) -> None:
        """Counts, each instruction's block and definition, each block's and definition's range, and the opcodes."""
        functions, defined, instructions, blocks = w.functions, w.defined, w.instructions, w.blocks
        arguments, block_ends, definition_blocks = w.arguments, w.block_ends, w.definition_blocks
        definition_arguments, texts = w.definition_arguments, w.texts
        n_functions, n_definitions = len(functions), len(defined)
        n_instructions, n_blocks, n_arguments = len(instructions), len(blocks), len(arguments)
        arange = np.arange
        block_end = np.array(block_ends, dtype=np.int64)
        block_start = np.zeros(n_blocks, dtype=np.int64)
        block_start[1:] = block_end[:-1]
        if (block_end <= block_start).any():
            raise GraphCreationError("a basic block without instructions")
        definition_block = np.array(definition_blocks, dtype=np.int64)
        inst_block = np.repeat(arange(n_blocks), block_end - block_start)
        block_def = np.repeat(arange(n_definitions), np.diff(definition_block))
        inst_def = block_def[inst_block]
        def_inst_start = block_start[definition_block[:-1]] if n_definitions else np.zeros(0, dtype=np.int64)
        def_inst_end = block_end[definition_block[1:] - 1] if n_definitions else np.zeros(0, dtype=np.int64)
        arg_def = np.repeat(arange(n_definitions), np.diff(np.array(definition_arguments, dtype=np.int64)))
        defined_index = np.array(defined, dtype=np.int64)

        opcodes = opcodes_of(texts)
        opcode_ids = {name: k for k, name in enumerate(dict.fromkeys(opcodes))}
        opcode = np.fromiter(map(opcode_ids.__getitem__, opcodes), dtype=np.int64, count=n_instructions)

        def is_opcode(name: str) -> np.ndarray:
            return opcode == opcode_ids.get(name, -1)

        w.n_functions, w.n_definitions, w.n_instructions = n_functions, n_definitions, n_instructions
        w.n_blocks, w.n_arguments, w.block_end, w.block_start = n_blocks, n_arguments, block_end, block_start
        w.inst_block, w.block_def, w.inst_def, w.def_inst_start = inst_block, block_def, inst_def, def_inst_start
        w.def_inst_end, w.arg_def, w.defined_index, w.opcode_ids = def_inst_end, arg_def, defined_index, opcode_ids
        w.opcode, w.is_opcode = opcode, is_opcode

    def _classify_operands(self, w: _Walk) -> None:
        """The operands, flat, with their user instruction and index, classified by what they are in the module."""
        arg_def, arguments, block_def, blocks, functions = w.arg_def, w.arguments, w.block_def, w.blocks, w.functions
        inst_def, instructions, is_opcode, n_arguments = w.inst_def, w.instructions, w.is_opcode, w.n_arguments
        n_blocks, n_functions, n_instructions = w.n_blocks, w.n_functions, w.n_instructions
        arange = np.arange
        # operands: flat, with their user instruction and index; classified by what they are in the module
        flat = np.array(ffi.operands_flat(instructions), dtype=np.uint64)
        ends = np.flatnonzero(flat == 0)
        counts = ends - np.concatenate(([-1], ends[:-1])) - 1
        handles = flat[flat != 0]
        n_operands = len(handles)
        op_user = np.repeat(arange(n_instructions), counts)
        op_first = np.cumsum(counts) - counts
        op_index = arange(n_operands) - op_first[op_user]
        instruction_handles = np.array(instructions, dtype=np.uint64)
        keys = np.concatenate((instruction_handles, np.array(blocks + arguments + functions, dtype=np.uint64)))
        kinds = np.repeat(np.array([1, 2, 3, 4], dtype=np.int8), [n_instructions, n_blocks, n_arguments, n_functions])
        ids = np.concatenate((arange(n_instructions), arange(n_blocks), arange(n_arguments), arange(n_functions)))
        owner = np.concatenate((inst_def, block_def, arg_def, np.full(n_functions, -1)))
        order = np.argsort(keys)  # (handles are distinct)
        keys, kinds, ids, owner = keys[order], kinds[order], ids[order], owner[order]
        found = np.minimum(np.searchsorted(keys, handles), max(len(keys) - 1, 0))
        op_kind = np.where(keys[found] == handles, kinds[found], 0) if len(keys) else np.zeros(0, dtype=np.int8)
        op_id = ids[found] if len(keys) else np.zeros(0, dtype=np.int64)
        # an instruction, block or argument of another function is nothing here (cannot happen in valid IR)
        op_kind[(op_kind >= 1) & (op_kind <= 3) & (owner[found] != inst_def[op_user])] = 5
        position = op_index.copy()
        switch = is_opcode("switch")
        # LLVM 22 keeps case values out of a switch's operands; LLVM 10 listed them at 2, 4, ...
        # (docs/spec/policy.md#switch-case-positions)
        position[switch[op_user] & (op_index > 0)] = -1
        w.counts, w.handles, w.instruction_handles, w.op_first = counts, handles, instruction_handles, op_first
        w.op_id, w.op_kind, w.op_user, w.position, w.switch = op_id, op_kind, op_user, position, switch

    def _number_nodes(self, w: _Walk) -> None:
        """The variables and used arguments, and every node's number (constants aside)."""
        data_nodes, arg_def, def_inst_end, def_inst_start = w.data_nodes, w.arg_def, w.def_inst_end, w.def_inst_start
        defined_index, inst_def, n_arguments = w.defined_index, w.inst_def, w.n_arguments
        n_definitions, n_functions, n_instructions, op_id = w.n_definitions, w.n_functions, w.n_instructions, w.op_id
        op_kind, op_user, position = w.op_kind, w.op_user, w.position
        arange = np.arange
        # variables: one per use of an instruction's result; used arguments
        if data_nodes:
            is_variable = op_kind == 1
            var_user, var_position, var_producer = op_user[is_variable], position[is_variable], op_id[is_variable]
            argument_ops = np.flatnonzero(op_kind == 3)
        else:
            var_user = var_position = var_producer = argument_ops = np.zeros(0, dtype=np.int64)
        n_variables = np.bincount(var_user, minlength=n_instructions)
        argument_used = np.zeros(n_arguments, dtype=bool)
        argument_used[op_id[argument_ops]] = True
        used_arguments = np.flatnonzero(argument_used)

        # node numbers: per function, each instruction then its variables, then its used arguments
        # (docs/spec/graph.md#construction-order)
        items = np.concatenate(([0], np.cumsum(1 + n_variables)))
        def_items = items[def_inst_end] - items[def_inst_start]
        def_used = np.bincount(arg_def[used_arguments], minlength=n_definitions)
        per_function = np.ones(n_functions, dtype=np.int64)
        per_function[defined_index] = def_items + def_used
        function_base = 1 + np.cumsum(per_function) - per_function
        def_base = function_base[defined_index]
        inst_node = def_base[inst_def] + items[:-1] - items[def_inst_start][inst_def]
        var_rank = arange(len(var_user)) - (np.cumsum(n_variables) - n_variables)[var_user]
        var_node = inst_node[var_user] + 1 + var_rank
        used_def = arg_def[used_arguments]
        argument_node = np.zeros(n_arguments, dtype=np.int64)
        argument_node[used_arguments] = (
            def_base[used_def]
            + def_items[used_def]
            + arange(len(used_arguments))
            - (np.cumsum(def_used) - def_used)[used_def]
        )
        n_before_constants = 1 + int(per_function.sum())
        w.argument_node, w.argument_ops, w.function_base = argument_node, argument_ops, function_base
        w.inst_node, w.n_before_constants, w.n_variables = inst_node, n_before_constants, n_variables
        w.used_arguments, w.var_node, w.var_position = used_arguments, var_node, var_position
        w.var_producer, w.var_rank, w.var_user = var_producer, var_rank, var_user

    def _function_edges(self, w: _Walk) -> None:
        """The edges of each definition, in the reference's order; each definition's entry and exits."""
        arg_def, argument_node, argument_ops, block_end = w.arg_def, w.argument_node, w.argument_ops, w.block_end
        block_start, definition_blocks, inst_block = w.block_start, w.definition_blocks, w.inst_block
        inst_def, inst_node, is_opcode, n_definitions = w.inst_def, w.inst_node, w.is_opcode, w.n_definitions
        n_instructions, n_variables, op_id, op_kind = w.n_instructions, w.n_variables, w.op_id, w.op_kind
        op_user, position, var_node, var_position = w.op_user, w.position, w.var_node, w.var_position
        var_producer, var_rank, var_user = w.var_producer, w.var_rank, w.var_user
        # edges of each definition, in four runs: instructions (control within the block, then the variables of
        # the operands), arguments to their uses, producers to their variables, control between blocks
        not_first = np.ones(n_instructions, dtype=bool)
        not_first[block_start] = False
        per_instruction = not_first + n_variables
        run_start = np.cumsum(per_instruction) - per_instruction
        instruction_edges = np.empty((int(per_instruction.sum()), 4), dtype=np.int64)
        follows = np.flatnonzero(not_first)
        instruction_edges[run_start[follows]] = np.stack(
            (
                np.full(len(follows), CONTROL),
                np.zeros(len(follows), dtype=np.int64),
                inst_node[follows - 1],
                inst_node[follows],
            ),
            axis=1,
        )
        instruction_edges[run_start[var_user] + not_first[var_user] + var_rank] = np.stack(
            (np.full(len(var_user), DATA), var_position, var_node, inst_node[var_user]), axis=1
        )
        by_argument = argument_ops[np.argsort(op_id[argument_ops], kind="stable")]
        argument_edges = np.stack(
            (
                np.full(len(by_argument), DATA),
                position[by_argument],
                argument_node[op_id[by_argument]],
                inst_node[op_user[by_argument]],
            ),
            axis=1,
        )
        producer_edges = np.stack(
            (np.full(len(var_user), DATA), np.zeros(len(var_user), dtype=np.int64), inst_node[var_producer], var_node),
            axis=1,
        )
        block_edges, block_edge_def, entries, exits = self.control_between_blocks(
            op_kind, op_id, op_user, inst_block, inst_node, block_start, block_end, is_opcode("br"), definition_blocks
        )
        edges = _interleave_runs(
            (instruction_edges, argument_edges, producer_edges, block_edges.reshape(-1, 4)),
            (np.repeat(inst_def, per_instruction), arg_def[op_id[by_argument]], inst_def[var_user], block_edge_def),
            n_definitions,
        )
        w.edges, w.entries, w.exits = edges, entries, exits

    def _function_ends(self, w: _Walk) -> None:
        """Each function's entry node and exit nodes (a declaration's one node is both)."""
        declared, defined, entries, exits, function_base = w.declared, w.defined, w.entries, w.exits, w.function_base
        n_functions = w.n_functions
        # declarations: one node each, entry and exit
        function_entry = [0] * n_functions
        function_exits: list[list[int]] = [[] for _ in range(n_functions)]
        for d, index in enumerate(defined):
            function_entry[index] = entries[d]
            function_exits[index] = exits[d]
        for index in declared:
            node = int(function_base[index])
            function_entry[index] = node
            function_exits[index] = [node]
        w.function_entry, w.function_exits = function_entry, function_exits

    def _read_used_types(self, w: _Walk) -> None:
        """The types of the used values, read from LLVM once."""
        instruction_handles, is_opcode, n_instructions = w.instruction_handles, w.is_opcode, w.n_instructions
        op_id, op_kind, op_user, var_producer, var_user = w.op_id, w.op_kind, w.op_user, w.var_producer, w.var_user
        producers = producer_rank = producer_types = None  # (no used values)
        # the types of used values, read once (call sites compare them too)
        if len(var_user):
            is_producer = np.zeros(n_instructions, dtype=bool)
            is_producer[var_producer] = True
            producers = np.flatnonzero(is_producer)
            producer_rank = (np.cumsum(is_producer) - 1)[var_producer]
            producer_types = list(map(ffi.type_of, instruction_handles[producers].tolist()))
            # call sites compare the types of their arguments: share those already read
            call_arguments = np.unique(op_id[(op_kind == 1) & is_opcode("call")[op_user]])
            if len(call_arguments):
                at = np.searchsorted(producers, call_arguments).tolist()
                self.value_type.update(
                    zip(instruction_handles[call_arguments].tolist(), map(producer_types.__getitem__, at))
                )
        w.producer_rank, w.producer_types, w.producers = producer_rank, producer_types, producers

    def _call_edges_and_profiles(self, w: _Walk) -> None:
        """The call sites and CALL edges, and the profile features of instructions."""
        counts, function_entry, function_exits, handles = w.counts, w.function_entry, w.function_exits, w.handles
        inst_node, instructions, is_opcode, op_first = w.inst_node, w.instructions, w.is_opcode, w.op_first
        op_kind, texts = w.op_kind, w.texts
        # call sites: a call whose callee operand is a function (docs/spec/graph.md#construction-order)
        calls = np.flatnonzero(is_opcode("call") & (counts > 0))
        calls = calls[op_kind[op_first[calls] + counts[calls] - 1] == 4]
        inst_node_list = inst_node.tolist()
        for i in calls.tolist():
            callee_operands = handles[op_first[i] : op_first[i] + counts[i]].tolist()
            self.maybe_call_site(inst_node_list[i], texts[i], callee_operands, instructions[i])
        call_edges = self.call_edges(function_entry, function_exits)

        if any("!prof " in t for t in texts):
            self.instruction_profiles(texts, inst_node_list)
        w.call_edges = call_edges

    def _node_columns(self, w: _Walk) -> None:
        """Every node's head, function, block and full text (constants aside)."""
        arg_def, argument_node, arguments, declared = w.arg_def, w.argument_node, w.arguments, w.declared
        defined, defined_index, definition_arguments = w.defined, w.defined_index, w.definition_arguments
        definition_blocks, function_base, functions = w.definition_blocks, w.function_base, w.functions
        inst_block, inst_def, inst_node = w.inst_block, w.inst_def, w.inst_node
        n_before_constants, n_instructions, opcode = w.n_before_constants, w.n_instructions, w.opcode
        opcode_ids, producer_rank, producer_types = w.opcode_ids, w.producer_rank, w.producer_types
        producers, texts, used_arguments, var_node = w.producers, w.texts, w.used_arguments, w.var_node
        var_user = w.var_user
        arange = np.arange
        # nodes, as columns; full texts as indices into `sources` (the instruction texts, then the others)
        head = np.zeros(n_before_constants, dtype=np.int64)
        function_of = np.zeros(n_before_constants, dtype=np.int64)
        block_of = np.zeros(n_before_constants, dtype=np.int64)
        sources = texts + [""]
        source_of = np.full(n_before_constants, n_instructions, dtype=np.int64)  # "" unless set below
        head[0] = self.head(INSTRUCTION, EXTERNAL_TEXT)
        opcode_head = np.array([self.head(INSTRUCTION, name) for name in opcode_ids], dtype=np.int64)
        head[inst_node] = opcode_head[opcode] if n_instructions else 0
        function_of[inst_node] = defined_index[inst_def]
        block_of[inst_node] = inst_block
        source_of[inst_node] = arange(n_instructions)
        if len(var_user):
            types, type_rank = np.unique(np.array(producer_types, dtype=np.uint64), return_inverse=True)
            type_rank = type_rank.reshape(-1)
            type_text = [self.type_text_of(t) for t in types.tolist()]
            type_head = np.array([self.head(VARIABLE, text) for text in type_text], dtype=np.int64)
            head[var_node] = type_head[type_rank][producer_rank]
            function_of[var_node] = function_of[inst_node[var_user]]
            block_of[var_node] = inst_block[var_user]
            source_of[var_node] = len(sources) + producer_rank
            # "<type> <name>" per producer, concatenated in C
            names = result_names_of(list(map(texts.__getitem__, producers.tolist())))
            spaced = [text + " " for text in type_text]
            sources += map(str.__add__, map(spaced.__getitem__, type_rank.tolist()), names)
        unnamed_slots: dict[int, list[int]] = {}  # definition -> slot number of each unnamed argument
        for a in used_arguments.tolist():
            d = int(arg_def[a])
            node = int(argument_node[a])
            argument = arguments[a]
            type_ = self.type_of(argument)
            printed_type = self.print_type(type_)
            name = ffi.value_name(argument)
            if name:
                identifier = llvm_identifier(name, "%")
            else:
                slots = unnamed_slots.get(d)
                if slots is None:
                    slots = unnamed_slots[d] = _unnamed_argument_slots(functions[defined[d]])
                identifier = f"%{slots[a - definition_arguments[d]]}"
            head[node] = self.head(VARIABLE, self.type_text_of(type_))
            function_of[node] = defined[d]
            # one past the function's last block (docs/spec/graph.md#construction-order)
            block_of[node] = definition_blocks[d + 1]
            source_of[node] = len(sources)
            sources.append(f"{printed_type} {identifier}")
        undefined_head = self.head(INSTRUCTION, UNDEFINED_FUNCTION_TEXT)
        for index in declared:
            node = int(function_base[index])
            head[node] = undefined_head
            function_of[node] = index
        w.head, w.function_of, w.block_of, w.sources, w.source_of = head, function_of, block_of, sources, source_of

    def _constants_last(self, w: _Walk) -> None:
        """The constants' nodes and edges, then the builder's node and edge columns."""
        block_of, call_edges, data_nodes, edges = w.block_of, w.call_edges, w.data_nodes, w.edges
        function_of, handles, head, inst_node = w.function_of, w.handles, w.head, w.inst_node
        n_before_constants, n_blocks, op_kind, op_user = w.n_before_constants, w.n_blocks, w.op_kind, w.op_user
        position, source_of, sources, switch, texts = w.position, w.source_of, w.sources, w.switch, w.texts
        # constants last (docs/spec/graph.md#construction-order step 5): function unset, block = total number of blocks
        constant_keys, constant_edges = (
            self.constants(op_kind, op_user, position, handles, switch, texts, inst_node, n_before_constants)
            if data_nodes
            else ([], np.zeros((0, 4), dtype=np.int64))
        )
        self.node_head = np.concatenate(
            (head, np.array([self.head(CONSTANT, self.constant_text[key]) for key in constant_keys], dtype=np.int64))
        )
        self.node_function = np.concatenate((function_of, np.zeros(len(constant_keys), dtype=np.int64)))
        self.node_block = np.concatenate((block_of, np.full(len(constant_keys), n_blocks, dtype=np.int64)))
        # full texts by index: the encoder copies each distinct text's bytes once per node, without a str per node
        self.node_full_text = (
            sources + constant_keys,
            np.concatenate((source_of, len(sources) + np.arange(len(constant_keys), dtype=np.int64))),
        )
        self.edges = np.concatenate((edges, call_edges, constant_edges))

    def control_between_blocks(
        self, op_kind, op_id, op_user, inst_block, inst_node, block_start, block_end, is_br, definition_blocks
    ):
        """CONTROL edges between blocks, breadth-first from each function's entry block
        (docs/spec/graph.md#construction-order), and each function's entry and exits. Successors are the block operands
        in operand order, except a two-way ``br`` (operands cond, false, true): successors true, false."""
        n_blocks = len(block_start)
        successors: list[list[int]] = [[] for _ in range(n_blocks)]
        block_ops = np.flatnonzero(op_kind == 2)
        for source, target in zip(inst_block[op_user[block_ops]].tolist(), op_id[block_ops].tolist()):
            successors[source].append(target)
        for block in np.flatnonzero(is_br[block_end - 1]).tolist() if n_blocks else ():
            if len(successors[block]) == 2:
                successors[block].reverse()
        first_node = inst_node[block_start].tolist() if n_blocks else []
        last_node = inst_node[block_end - 1].tolist() if n_blocks else []
        edges: list[int] = []
        edge_def: list[int] = []
        entries: list[int] = []
        exits_of: list[list[int]] = []
        visited = bytearray(n_blocks)
        for d in range(len(definition_blocks) - 1):
            entry = definition_blocks[d]
            before = len(edges)
            exits: list[int] = []
            visited[entry] = 1
            queue = deque([entry])
            while queue:
                current = queue.popleft()
                block_successors = successors[current]
                if not block_successors:
                    exits.append(last_node[current])
                for position, successor in enumerate(block_successors):
                    edges += (CONTROL, position, last_node[current], first_node[successor])
                    if not visited[successor]:
                        visited[successor] = 1
                        queue.append(successor)
            edge_def += [d] * ((len(edges) - before) // 4)
            entries.append(first_node[entry])
            exits_of.append(exits)
        return np.array(edges, dtype=np.int64), np.array(edge_def, dtype=np.int64), entries, exits_of

    def constants(self, op_kind, op_user, position, handles, switch, texts, inst_node, first_node):
        """The constants in order of first use (keys), and their DATA edges (one per use, grouped by constant).

        A use is a constant operand (a printed value; a global: its definition line) or a switch case value
        (before the switch's operands, at positions 2, 4, ...: docs/spec/graph.md#edge-positions,
        docs/spec/policy.md#switch-case-positions)."""
        key_id: dict[str, int] = {}
        keys: list[str] = []

        def register(key: str) -> int:
            kid = key_id.get(key)
            if kid is None:
                kid = key_id[key] = len(keys)
                keys.append(key)
            return kid

        constant_ops = np.flatnonzero(op_kind == 0)
        unique, first, inverse = np.unique(handles[constant_ops], return_index=True, return_inverse=True)
        unique_kid = np.full(len(unique), -1, dtype=np.int64)
        for u in np.argsort(first, kind="stable").tolist():
            value = int(unique[u])
            key = self.constant_key_of.get(value)
            if key is None:
                kind = ffi.value_kind(value)
                if kind not in ffi.CONSTANT_KINDS:
                    # functions, metadata, inline asm: no node, but the position still advances
                    # (docs/spec/graph.md#operands)
                    continue
                key = self.constant_key(value, kind)
            unique_kid[u] = register(key)
        op_kid = unique_kid[inverse.reshape(-1)]
        used = op_kid >= 0
        constant_ops = constant_ops[used]
        major = [op_user[constant_ops] * 2 + 1]
        minor = [constant_ops]
        kid = [op_kid[used]]
        user = [op_user[constant_ops]]
        where = [position[constant_ops]]
        cases: list[tuple[int, int, int]] = []
        for s in np.flatnonzero(switch).tolist():
            for k, line in enumerate(texts[s].split("\n")[1:-1]):
                value = line.strip().rsplit(", label ", 1)[0]
                if value not in self.constant_text:
                    self.constant_text[value] = value.split(" ", 1)[0]  # integer type: never a struct
                cases.append((s, k, register(value)))
        if cases:
            case = np.array(cases, dtype=np.int64)
            major.append(case[:, 0] * 2)
            minor.append(case[:, 1])
            kid.append(case[:, 2])
            user.append(case[:, 0])
            where.append(2 + 2 * case[:, 1])
        major, minor, kid, user, where = (np.concatenate(x) for x in (major, minor, kid, user, where))
        order = np.lexsort((minor, major))
        kid, user, where = kid[order], user[order], where[order]
        first_use = np.full(len(keys), len(kid), dtype=np.int64)
        np.minimum.at(first_use, kid, np.arange(len(kid)))
        key_order = np.argsort(first_use, kind="stable")
        rank = np.empty(len(keys), dtype=np.int64)
        rank[key_order] = np.arange(len(keys))
        by_constant = np.argsort(rank[kid], kind="stable")
        edges = np.stack(
            (
                np.full(len(kid), DATA),
                where[by_constant],
                first_node + rank[kid[by_constant]],
                inst_node[user[by_constant]],
            ),
            axis=1,
        )
        return [keys[k] for k in key_order.tolist()], edges

    def function_profile(self, header: str) -> list[tuple[str, int]]:
        """``llvm_profile_entry_count`` from a ``!prof`` attachment on the ``define`` line
        (docs/spec/graph.md#functions-and-modules)."""
        match = re.search(r"!prof (![0-9]+)", header)
        if not match:
            return []
        fields = _metadata_fields(self.text.metadata.get(match.group(1), ""))
        if len(fields) >= 2 and fields[0] == '!"function_entry_count"':
            count = _metadata_int(fields[1])
            if count is not None:
                return [("llvm_profile_entry_count", count)]
        return []

    def maybe_call_site(self, node: int, text: str, operands: list[int], instruction: int) -> None:
        """Record a CALL edge when LLVM's ``CallInst::getCalledFunction()`` is non-null
        (docs/spec/graph.md#construction-order).

        In LLVM 22 that needs the callee operand to be a function whose type equals the call's function type.
        The call's function type is vararg exactly when it is printed before the callee (``call i32 (ptr, ...)
        @printf(``); otherwise its parameters are the argument types.
        """
        callee = operands[-1]
        index = self.function_index.get(callee)
        if index is None:
            return
        signature = self.function_signature.get(callee)
        if signature is None:
            function_type = ffi.function_value_type(callee)
            vararg = ffi.function_type_is_vararg(function_type)
            signature = (
                ffi.function_type_return(function_type),
                ffi.function_type_params(function_type),
                vararg,
                ffi.print_type(function_type) if vararg else "",
                llvm_identifier(ffi.value_name(callee), "@"),
            )
            self.function_signature[callee] = signature
        return_type, params, vararg, printed, callee_name = signature
        if vararg:
            matches = f" {printed} {callee_name}(" in text
        else:
            arguments = operands[:-1]
            matches = (
                f"...) {callee_name}(" not in text
                and len(arguments) == len(params)
                and self.type_of(instruction) == return_type
                and all(self.type_of(a) == p for a, p in zip(arguments, params))
            )
        if matches:
            self.call_sites.append((node, index))

    def instruction_profiles(self, texts: list[str], inst_node: list[int]) -> None:
        """Profile features of instructions with ``!prof`` metadata (docs/spec/graph.md#node-fields)."""
        for index, text in enumerate(texts):
            if "!prof " not in text:
                continue
            match = re.search(r"!prof (![0-9]+)", text)
            if not match:
                continue
            fields = _metadata_fields(self.text.metadata.get(match.group(1), ""))
            features = _profile_features(fields, opcode_of(text), text)
            if features:
                self.node_int_features[inst_node[index]] = features

    def call_edges(self, function_entry: list[int], function_exits: list[list[int]]) -> np.ndarray:
        """CALL edges: external <-> every function, then call sites <-> callees (docs/spec/graph.md#construction-order
        step 4, docs/spec/policy.md#deterministic-order)."""
        edges: list[int] = []
        returns = not self.options.ignore_call_returns
        for entry, exits in zip(function_entry, function_exits):
            edges += (CALL, 0, 0, entry)
            if returns:
                for exit_ in exits:
                    edges += (CALL, 0, exit_, 0)
        for site, callee in self.call_sites:
            edges += (CALL, 0, site, function_entry[callee])
            if returns:
                for exit_ in function_exits[callee]:
                    edges += (CALL, 0, exit_, site)
        return np.array(edges, dtype=np.int64).reshape(-1, 4)

    # -- output -----------------------------------------------------------------------------------------------

    def to_proto(self, module_name: str, triple: str, data_layout: str) -> ProgramGraph:
        module_features = [
            ("llvm_target_triple", triple.encode("utf-8")),
            ("llvm_data_layout", data_layout.encode("utf-8")),
            ("llvm_version", LLVM_VERSION.encode("utf-8")),
        ]
        has_features = np.ones(len(self.node_head), dtype=bool)
        has_features[0] = False  # the external node has no features message
        data = encode_graph_columns(
            self.node_head,
            list(self.heads),
            self.node_function,
            self.node_block,
            self.node_full_text,
            has_features,
            self.node_int_features,
            self.edges,
            self.functions,
            [(module_name, module_features, _module_profile_summary(self.text))],
        )
        return ProgramGraph.FromString(data)


def _interleave_runs(runs: tuple[np.ndarray, ...], owners: tuple[np.ndarray, ...], n_owners: int) -> np.ndarray:
    """The rows of several runs, owner by owner: for each owner, its rows of the first run, then of the second ...

    The same order as a stable sort of all rows by ``(owner, run)``. When each run's owners are non-decreasing (as
    the builder makes them) every row's place is counted out in linear time; otherwise rows are sorted.
    """
    if all(len(owner) < 2 or bool((owner[1:] >= owner[:-1]).all()) for owner in owners):
        counts = np.stack([np.bincount(owner, minlength=n_owners) for owner in owners], axis=1)  # owner x run
        starts = (np.cumsum(counts.ravel()) - counts.ravel()).reshape(counts.shape)
        out = np.empty((int(counts.sum()), runs[0].shape[1]), dtype=runs[0].dtype)
        for run, (rows, owner) in enumerate(zip(runs, owners)):
            if len(owner):
                first_in_run = np.cumsum(counts[:, run]) - counts[:, run]
                out[(starts[:, run] - first_in_run)[owner] + np.arange(len(owner))] = rows
        return out
    keys = np.concatenate([owner * len(runs) + run for run, owner in enumerate(owners)])
    return np.concatenate(runs)[np.argsort(keys, kind="stable")]


def _unnamed_argument_slots(function: int) -> list[int]:
    """For each argument position, the slot number an unnamed argument there has: unnamed arguments are numbered
    0, 1, ... first (the number of unnamed arguments before it)."""
    slots = []
    count = 0
    for argument in ffi.arguments(function):
        slots.append(count)
        if not ffi.value_name(argument):
            count += 1
    return slots
