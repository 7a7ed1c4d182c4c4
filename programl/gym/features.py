"""CompilerGym's ``InstCount`` and ``Autophase`` feature vectors, from one walk over a parsed module
(docs/gym.md#observations).

* ``InstCount`` (70 values, :data:`INST_COUNT_FEATURE_NAMES`): ``TotalInsts``, ``TotalBlocks``, ``TotalFuncs`` and
  one count per LLVM 10 opcode, in the order of LLVM 10's ``Instruction.def`` (CompilerGym's
  ``compiler_gym/third_party/llvm/InstCount.h``). An LLVM 22 opcode that LLVM 10 did not have (``ptrtoaddr``) counts
  in ``TotalInsts`` only.
* ``Autophase`` (56 values, :data:`AUTOPHASE_FEATURE_NAMES`): the features of Huang et al., "AutoPhase" (FCCM 2019),
  as CompilerGym computes them (``compiler_gym/third_party/autophase/InstCount.cc``): block shapes by predecessor and
  successor counts, phi nodes and their arguments, critical edges, integer constants by width and value, and some
  opcode counts. As there, ``TotalFuncs`` counts every function, declarations included; predecessors and critical
  edges count each terminator operand (a ``switch`` with two cases to one block gives it two predecessors); the
  implicit ``i32 1`` size operand of an ``alloca`` is a 32-bit constant one. One difference comes from LLVM itself:
  LLVM 22 keeps a ``switch``'s case values beside its operands, no longer among them, so they are not counted as
  constants (``const32Bit``, ``numConstOnes`` ...), where LLVM 10 counted them.

The walk goes over handles (:mod:`programl.graph_builder._ffi`), never printing a value: linear in the size of the
module.
"""

from __future__ import annotations

import ctypes
from collections import Counter

import numpy as np

from programl.graph_builder import _ffi

__all__ = [
    "AUTOPHASE_FEATURE_NAMES",
    "INST_COUNT_FEATURE_NAMES",
    "autophase",
    "inst_count",
    "instruction_count",
    "module_features",
]

#: ``InstCount``'s names, in order (CompilerGym's ``INST_COUNT_FEATURE_NAMES``).
INST_COUNT_FEATURE_NAMES: tuple[str, ...] = (
    "TotalInsts", "TotalBlocks", "TotalFuncs",
    "Ret", "Br", "Switch", "IndirectBr", "Invoke", "Resume", "Unreachable", "CleanupRet", "CatchRet", "CatchSwitch",
    "CallBr", "FNeg", "Add", "FAdd", "Sub", "FSub", "Mul", "FMul", "UDiv", "SDiv", "FDiv", "URem", "SRem", "FRem",
    "Shl", "LShr", "AShr", "And", "Or", "Xor", "Alloca", "Load", "Store", "GetElementPtr", "Fence", "AtomicCmpXchg",
    "AtomicRMW", "Trunc", "ZExt", "SExt", "FPToUI", "FPToSI", "UIToFP", "SIToFP", "FPTrunc", "FPExt", "PtrToInt",
    "IntToPtr", "BitCast", "AddrSpaceCast", "CleanupPad", "CatchPad", "ICmp", "FCmp", "PHI", "Call", "Select",
    "UserOp1", "UserOp2", "VAArg", "ExtractElement", "InsertElement", "ShuffleVector", "ExtractValue", "InsertValue",
    "LandingPad", "Freeze",
)  # fmt: skip

#: ``Autophase``'s names, in order (CompilerGym's ``AUTOPHASE_FEATURE_NAMES``).
AUTOPHASE_FEATURE_NAMES: tuple[str, ...] = (
    "BBNumArgsHi", "BBNumArgsLo", "onePred", "onePredOneSuc", "onePredTwoSuc", "oneSuccessor", "twoPred",
    "twoPredOneSuc", "twoEach", "twoSuccessor", "morePreds", "BB03Phi", "BBHiPhi", "BBNoPhi", "BeginPhi",
    "BranchCount", "returnInt", "CriticalCount", "NumEdges", "const32Bit", "const64Bit", "numConstZeroes",
    "numConstOnes", "UncondBranches", "binaryConstArg", "NumAShrInst", "NumAddInst", "NumAllocaInst", "NumAndInst",
    "BlockMid", "BlockLow", "NumBitCastInst", "NumBrInst", "NumCallInst", "NumGetElementPtrInst", "NumICmpInst",
    "NumLShrInst", "NumLoadInst", "NumMulInst", "NumOrInst", "NumPHIInst", "NumRetInst", "NumSExtInst",
    "NumSelectInst", "NumShlInst", "NumStoreInst", "NumSubInst", "NumTruncInst", "NumXorInst", "NumZExtInst",
    "TotalBlocks", "TotalInsts", "TotalMemInst", "TotalFuncs", "ArgsPhi", "testUnary",
)  # fmt: skip

# LLVM's opcode name (Instruction::getOpcodeName) -> the InstCount name of its counter
_OPCODES = {
    "ret": "Ret", "br": "Br", "switch": "Switch", "indirectbr": "IndirectBr", "invoke": "Invoke", "resume": "Resume",
    "unreachable": "Unreachable", "cleanupret": "CleanupRet", "catchret": "CatchRet", "catchswitch": "CatchSwitch",
    "callbr": "CallBr", "fneg": "FNeg", "add": "Add", "fadd": "FAdd", "sub": "Sub", "fsub": "FSub", "mul": "Mul",
    "fmul": "FMul", "udiv": "UDiv", "sdiv": "SDiv", "fdiv": "FDiv", "urem": "URem", "srem": "SRem", "frem": "FRem",
    "shl": "Shl", "lshr": "LShr", "ashr": "AShr", "and": "And", "or": "Or", "xor": "Xor", "alloca": "Alloca",
    "load": "Load", "store": "Store", "getelementptr": "GetElementPtr", "fence": "Fence", "cmpxchg": "AtomicCmpXchg",
    "atomicrmw": "AtomicRMW", "trunc": "Trunc", "zext": "ZExt", "sext": "SExt", "fptoui": "FPToUI",
    "fptosi": "FPToSI", "uitofp": "UIToFP", "sitofp": "SIToFP", "fptrunc": "FPTrunc", "fpext": "FPExt",
    "ptrtoint": "PtrToInt", "inttoptr": "IntToPtr", "bitcast": "BitCast", "addrspacecast": "AddrSpaceCast",
    "cleanuppad": "CleanupPad", "catchpad": "CatchPad", "icmp": "ICmp", "fcmp": "FCmp", "phi": "PHI", "call": "Call",
    "select": "Select", "va_arg": "VAArg", "extractelement": "ExtractElement", "insertelement": "InsertElement",
    "shufflevector": "ShuffleVector", "extractvalue": "ExtractValue", "insertvalue": "InsertValue",
    "landingpad": "LandingPad", "freeze": "Freeze",
}  # fmt: skip
_BINARY = frozenset(
    "add fadd sub fsub mul fmul udiv sdiv fdiv urem srem frem shl lshr ashr and or xor".split()
)  # llvm::BinaryOperator
_UNARY = frozenset(  # llvm::UnaryInstruction: casts, alloca, load, extractvalue, freeze, fneg, va_arg
    "alloca load trunc zext sext fptoui fptosi uitofp sitofp fptrunc fpext ptrtoint ptrtoaddr inttoptr bitcast "
    "addrspacecast extractvalue freeze fneg va_arg".split()
)
_MEMORY = ("GetElementPtr", "Load", "Store", "Call", "Invoke", "Alloca")
_CONSTANT = _ffi.CONSTANT_KINDS | {_ffi.KIND_FUNCTION}  # isa<Constant>
_KIND_CONSTANT_INT = 18
_TYPE_INTEGER = 8

_vp = ctypes.c_void_p
_proto = _ffi._proto  # the graph builder's prototypes of llvmlite's own C functions (one library handle)


_GetOpcodeName = _proto("LLVMPY_GetOpcodeName", _vp, _vp)
_DisposeString = _proto("LLVMPY_DisposeString", None, _vp)
_TypeBitWidth = _proto("LLVMPY_GetTypeBitWidth", ctypes.c_uint64, _vp)
_ConstantIntNumWords = _proto("LLVMPY_GetConstantIntNumWords", ctypes.c_uint, _vp)
_ConstantIntRawValue = _proto("LLVMPY_GetConstantIntRawValue", ctypes.POINTER(ctypes.c_uint64), _vp,
                              ctypes.POINTER(ctypes.c_bool))  # fmt: skip


def _opcode(instruction: int) -> str:
    pointer = _GetOpcodeName(instruction)
    try:
        return ctypes.string_at(pointer).decode("ascii", "replace")
    finally:
        _DisposeString(pointer)


def _int_value_class(constant: int) -> int:
    """0 or 1 for a ``ConstantInt`` equal to 0 or 1, else -1."""
    words = _ConstantIntNumWords(constant)
    little = ctypes.c_bool(False)
    raw = _ConstantIntRawValue(constant, ctypes.byref(little))
    values = [raw[i] for i in range(words)]
    if any(values[1:] if little.value else values[:-1]):
        return -1
    low = values[0] if little.value else values[-1]
    return int(low) if low in (0, 1) else -1


def module_features(module) -> tuple[np.ndarray, np.ndarray]:
    """``(InstCount, Autophase)`` of a parsed module (an llvmlite ``ModuleRef``), as int64 arrays.

    Args:
        module: The module; it must stay alive during the call.

    Returns:
        The 70 ``InstCount`` values and the 56 ``Autophase`` values, in the orders of
        :data:`INST_COUNT_FEATURE_NAMES` and :data:`AUTOPHASE_FEATURE_NAMES`.
    """
    counts: Counter[str] = Counter()  # opcode name -> count
    ap: Counter[str] = Counter()  # autophase counters
    total_funcs = total_blocks = total_insts = 0
    width_cache: dict[int, int] = {}
    return_int_cache: dict[int, bool] = {}
    for function in _ffi.functions(_ffi.module_handle(module)):
        total_funcs += 1
        if _ffi.is_declaration(function):
            continue
        blocks = _ffi.blocks(function)
        block_set = set(blocks)
        per_block = []
        predecessors: Counter[int] = Counter()
        for block in blocks:
            instructions = _ffi.instructions(block)
            opcodes = [_opcode(i) for i in instructions]
            operands = _split(_ffi.operands_flat(instructions))
            per_block.append((block, instructions, opcodes, operands))
            if operands:  # the terminator's block operands are the successors
                predecessors.update(op for op in operands[-1] if op in block_set)
        for block, instructions, opcodes, operands in per_block:
            total_blocks += 1
            total_insts += len(instructions)
            counts.update(opcodes)
            _autophase_block(ap, opcodes, operands, block_set, predecessors, block, width_cache, return_int_cache)
    inst_count = [total_insts, total_blocks, total_funcs]
    inst_count += [0] * (len(INST_COUNT_FEATURE_NAMES) - 3)
    index = {name: i for i, name in enumerate(INST_COUNT_FEATURE_NAMES)}
    for opcode, n in counts.items():
        name = _OPCODES.get(opcode)
        if name is not None:
            inst_count[index[name]] += n
    by_name = dict(zip(INST_COUNT_FEATURE_NAMES, inst_count))
    ap["TotalBlocks"], ap["TotalInsts"], ap["TotalFuncs"] = total_blocks, total_insts, total_funcs
    ap["TotalMemInst"] = sum(by_name[name] for name in _MEMORY)
    for name in AUTOPHASE_FEATURE_NAMES:
        if name.startswith("Num") and name.endswith("Inst"):
            ap[name] = by_name[name[3:-4]]
    return np.asarray(inst_count, dtype=np.int64), np.asarray([ap[n] for n in AUTOPHASE_FEATURE_NAMES], np.int64)


def _split(flat: list[int]) -> list[list[int]]:
    """Each instruction's operands, from :func:`programl.graph_builder._ffi.operands_flat` (0 ends each list)."""
    out, start = [], 0
    for position, value in enumerate(flat):
        if value == 0:
            out.append(flat[start:position])
            start = position + 1
    return out


def _autophase_block(ap, opcodes, per_instruction, block_set, predecessors, block, width_cache, return_int_cache):
    """Add one basic block's Autophase counters to ``ap`` (CompilerGym's ``InstCount::visitBasicBlock``)."""
    terminator = per_instruction[-1] if per_instruction else []
    successors = [op for op in terminator if op in block_set]
    n_succ, n_pred = len(successors), predecessors[block]
    ap["NumEdges"] += n_succ
    if n_succ > 1:
        ap["CriticalCount"] += sum(1 for s in successors if predecessors[s] > 1)
    if n_succ == 1:
        ap["oneSuccessor"] += 1
    elif n_succ == 2:
        ap["twoSuccessor"] += 1
    elif n_succ > 2:
        ap["moreSuccessors"] += 1
    if n_pred == 1:
        ap["onePred"] += 1
    elif n_pred == 2:
        ap["twoPred"] += 1
    elif n_pred > 2:
        ap["morePreds"] += 1
    if n_pred == 1 and n_succ == 1:
        ap["onePredOneSuc"] += 1
    elif n_pred == 2 and n_succ == 1:
        ap["twoPredOneSuc"] += 1
    elif n_pred == 1 and n_succ == 2:
        ap["onePredTwoSuc"] += 1
    elif n_pred == 2 and n_succ == 2:
        ap["twoEach"] += 1
    elif n_pred > 2 and n_succ > 2:
        ap["moreEach"] += 1
    phis = phi_args = 0
    for position, (opcode, operands) in enumerate(zip(opcodes, per_instruction)):
        if opcode == "br":
            ap["BranchCount"] += 1
            if len(operands) == 1:
                ap["UncondBranches"] += 1
        kinds = [_ffi.value_kind(op) for op in operands]
        for op, kind in zip(operands, kinds):
            if kind != _KIND_CONSTANT_INT:
                continue
            type_ = _ffi.type_of(op)
            width = width_cache.get(type_)
            if width is None:
                width = width_cache[type_] = _TypeBitWidth(type_)
            if width == 32:
                ap["const32Bit"] += 1
            elif width == 64:
                ap["const64Bit"] += 1
            value = _int_value_class(op)
            if value == 1:
                ap["numConstOnes"] += 1
            elif value == 0:
                ap["numConstZeroes"] += 1
        if opcode == "call" and operands:
            callee, kind = operands[-1], kinds[-1]
            if kind == _ffi.KIND_FUNCTION:
                returns_int = return_int_cache.get(callee)
                if returns_int is None:
                    returned = _ffi.function_type_return(_ffi.function_value_type(callee))
                    returns_int = return_int_cache[callee] = _ffi.type_kind(returned) == _TYPE_INTEGER
                ap["returnInt"] += returns_int
        if opcode in _UNARY:
            ap["testUnary"] += 1
        if opcode in _BINARY and (kinds[0] in _CONSTANT or kinds[1] in _CONSTANT):
            ap["binaryConstArg"] += 1
        if opcode == "phi":
            if position == 0:
                ap["BeginPhi"] += 1
            phis += 1
            phi_args += len(operands)
    ap["ArgsPhi"] += phi_args
    if phis == 0:
        ap["BBNoPhi"] += 1
    elif phis <= 3:
        ap["BB03Phi"] += 1
    else:
        ap["BBHiPhi"] += 1
    if phi_args > 5:
        ap["BBNumArgsHi"] += 1
    elif phi_args >= 1:
        ap["BBNumArgsLo"] += 1
    if len(opcodes) < 15:
        ap["BlockLow"] += 1
    elif len(opcodes) <= 500:
        ap["BlockMid"] += 1
    else:
        ap["BlockHigh"] += 1


def instruction_count(module) -> int:
    """The number of instructions of a parsed module (``Module::getInstructionCount``; ``TotalInsts``), without the
    rest of the walk."""
    total = 0
    for function in _ffi.functions(_ffi.module_handle(module)):
        for block in _ffi.blocks(function):
            total += len(_ffi.instructions(block))
    return total


def inst_count(module) -> np.ndarray:
    """The ``InstCount`` vector of a parsed module (:func:`module_features`)."""
    return module_features(module)[0]


def autophase(module) -> np.ndarray:
    """The ``Autophase`` vector of a parsed module (:func:`module_features`)."""
    return module_features(module)[1]
