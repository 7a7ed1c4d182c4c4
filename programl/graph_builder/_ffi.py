"""Direct calls into llvmlite's C library, for walking a parsed module quickly
(docs/spec/design.md#building-graphs-fast).

llvmlite's Python objects (``ValueRef``, ``TypeRef``) cost 3-30 µs per property access: each creates wrapper
objects, takes a global lock and converts pointers. The graph builder makes a few calls per operand, so it calls
the same exported ``LLVMPY_*`` functions through its own ctypes prototypes instead, with plain integers as handles
(~0.2 µs per call). Only functions that llvmlite itself exports and uses are called, with llvmlite's own argument
conventions, so this stays within llvmlite's supported C surface.

The library is loaded as a ``ctypes.PyDLL``: these calls return in well under a microsecond and never call back into
Python, so releasing and retaking the GIL around each (what ``CDLL`` does) would cost more than the call. Lists of
handles are read with ``iter(partial(next, iterator), None)``, which loops in C until LLVM's iterator returns NULL.

Handles are integers (addresses). They are valid while the module (and its context) that owns them is alive.
"""

from __future__ import annotations

import ctypes
from functools import partial

from llvmlite.binding import ffi

__all__ = [
    "KIND_ARGUMENT",
    "KIND_BASIC_BLOCK",
    "KIND_FUNCTION",
    "KIND_INLINE_ASM",
    "KIND_INSTRUCTION",
    "KIND_METADATA",
    "CONSTANT_KINDS",
    "GLOBAL_KINDS",
    "TYPE_STRUCT",
    "arguments",
    "blocks",
    "extend_instructions",
    "functions",
    "instructions",
    "is_declaration",
    "module_handle",
    "operands",
    "operands_flat",
    "print_type",
    "print_value",
    "type_kind",
    "type_of",
    "value_kind",
    "value_name",
    "function_value_type",
    "function_type_params",
    "function_type_return",
    "function_type_is_vararg",
]

# llvmlite.binding.ValueKind values (LLVMPY_GetValueKind)
KIND_ARGUMENT = 0
KIND_BASIC_BLOCK = 1
KIND_FUNCTION = 5
KIND_GLOBAL_ALIAS = 6
KIND_GLOBAL_IFUNC = 7
KIND_GLOBAL_VARIABLE = 8
KIND_METADATA = 22
KIND_INLINE_ASM = 23
KIND_INSTRUCTION = 24
# every llvm::Constant except functions: global variables/aliases/ifuncs, block addresses, constant expressions,
# aggregates, data arrays/vectors, ints, floats, null, token none, undef, poison (docs/spec/graph.md#operands)
CONSTANT_KINDS = frozenset({6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 25})
GLOBAL_KINDS = frozenset({KIND_GLOBAL_ALIAS, KIND_GLOBAL_IFUNC, KIND_GLOBAL_VARIABLE})

# llvmlite.binding.TypeKind values (LLVMPY_GetTypeKind)
TYPE_STRUCT = 10

_vp = ctypes.c_void_p
_lib = ctypes.PyDLL(ffi.lib._lib_handle._name if ffi.lib._lib_handle else ffi.lib._name)


def _proto(name: str, restype, *argtypes):
    fn = getattr(_lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_ModuleFunctionsIter = _proto("LLVMPY_ModuleFunctionsIter", _vp, _vp)
_FunctionsIterNext = _proto("LLVMPY_FunctionsIterNext", _vp, _vp)
_DisposeFunctionsIter = _proto("LLVMPY_DisposeFunctionsIter", None, _vp)
_FunctionBlocksIter = _proto("LLVMPY_FunctionBlocksIter", _vp, _vp)
_BlocksIterNext = _proto("LLVMPY_BlocksIterNext", _vp, _vp)
_DisposeBlocksIter = _proto("LLVMPY_DisposeBlocksIter", None, _vp)
_BlockInstructionsIter = _proto("LLVMPY_BlockInstructionsIter", _vp, _vp)
_InstructionsIterNext = _proto("LLVMPY_InstructionsIterNext", _vp, _vp)
_DisposeInstructionsIter = _proto("LLVMPY_DisposeInstructionsIter", None, _vp)
_InstructionOperandsIter = _proto("LLVMPY_InstructionOperandsIter", _vp, _vp)
_OperandsIterNext = _proto("LLVMPY_OperandsIterNext", _vp, _vp)
_DisposeOperandsIter = _proto("LLVMPY_DisposeOperandsIter", None, _vp)
_FunctionArgumentsIter = _proto("LLVMPY_FunctionArgumentsIter", _vp, _vp)
_ArgumentsIterNext = _proto("LLVMPY_ArgumentsIterNext", _vp, _vp)
_DisposeArgumentsIter = _proto("LLVMPY_DisposeArgumentsIter", None, _vp)

value_kind = _proto("LLVMPY_GetValueKind", ctypes.c_int, _vp)
type_of = _proto("LLVMPY_TypeOf", _vp, _vp)
type_kind = _proto("LLVMPY_GetTypeKind", ctypes.c_int, _vp)
is_declaration = _proto("LLVMPY_IsDeclaration", ctypes.c_int, _vp)
_GetValueName = _proto("LLVMPY_GetValueName", ctypes.c_char_p, _vp)
_PrintType = _proto("LLVMPY_PrintType", _vp, _vp)
_PrintValueToString = _proto("LLVMPY_PrintValueToString", None, _vp, ctypes.POINTER(_vp))
_DisposeString = _proto("LLVMPY_DisposeString", None, _vp)
function_value_type = _proto("LLVMPY_GlobalGetValueType", _vp, _vp)
function_type_return = _proto("LLVMPY_GetReturnType", _vp, _vp)
_CountParamTypes = _proto("LLVMPY_CountParamTypes", ctypes.c_uint, _vp)
_GetParamTypes = _proto("LLVMPY_GetParamTypes", None, _vp, ctypes.POINTER(_vp))
_IsFunctionVararg = _proto("LLVMPY_IsFunctionVararg", ctypes.c_bool, _vp)


def module_handle(module) -> int:
    """The address of an llvmlite ``ModuleRef``."""
    return ctypes.cast(module._ptr, _vp).value


def _list(start, advance, dispose, handle: int) -> list[int]:
    it = start(handle)
    try:
        return list(iter(partial(advance, it), None))
    finally:
        dispose(it)


def functions(module: int) -> list[int]:
    """The functions of a module, in module order."""
    return _list(_ModuleFunctionsIter, _FunctionsIterNext, _DisposeFunctionsIter, module)


def blocks(function: int) -> list[int]:
    """The basic blocks of a function (as values), in layout order."""
    return _list(_FunctionBlocksIter, _BlocksIterNext, _DisposeBlocksIter, function)


def instructions(block: int) -> list[int]:
    """The instructions of a basic block, in order."""
    return _list(_BlockInstructionsIter, _InstructionsIterNext, _DisposeInstructionsIter, block)


def extend_instructions(out: list[int], block: int) -> None:
    """Append the instructions of a basic block to ``out``, in order."""
    it = _BlockInstructionsIter(block)
    out.extend(iter(partial(_InstructionsIterNext, it), None))
    _DisposeInstructionsIter(it)


def operands(instruction: int) -> list[int]:
    """The operands of an instruction, in LLVM's operand order."""
    return _list(_InstructionOperandsIter, _OperandsIterNext, _DisposeOperandsIter, instruction)


def operands_flat(instructions: list[int]) -> list[int]:
    """The operands of many instructions in one list: each instruction's operands in LLVM's order, then a 0."""
    out: list[int] = []
    extend, append = out.extend, out.append
    start, advance, dispose = _InstructionOperandsIter, _OperandsIterNext, _DisposeOperandsIter
    for instruction in instructions:
        it = start(instruction)
        extend(iter(partial(advance, it), None))
        dispose(it)
        append(0)
    return out


def arguments(function: int) -> list[int]:
    """The formal arguments of a function, in parameter order."""
    return _list(_FunctionArgumentsIter, _ArgumentsIterNext, _DisposeArgumentsIter, function)


def value_name(value: int) -> str:
    """The value's name ("" when unnamed), decoded leniently."""
    name = _GetValueName(value)
    return name.decode("utf-8", "backslashreplace") if name else ""


def _owned_string(pointer: int | None) -> str:
    if not pointer:
        return ""
    try:
        return ctypes.string_at(pointer).decode("utf-8", "backslashreplace")
    finally:
        _DisposeString(pointer)


def print_type(type_: int) -> str:
    """LLVM's printed form of a type (``i32``, ``ptr``, ``%struct.S``, ``[4 x i8]`` ...)."""
    return _owned_string(_PrintType(type_))


def print_value(value: int) -> str:
    """LLVM's printed form of a value (for a constant: ``<type> <value>``)."""
    out = _vp()
    _PrintValueToString(value, ctypes.byref(out))
    return _owned_string(out.value)


def function_type_params(function_type: int) -> list[int]:
    """The parameter types of a function type."""
    count = _CountParamTypes(function_type)
    if not count:
        return []
    array = (_vp * count)()
    _GetParamTypes(function_type, array)
    return list(array)


def function_type_is_vararg(function_type: int) -> bool:
    return bool(_IsFunctionVararg(function_type))
