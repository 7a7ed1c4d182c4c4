"""InstCount and Autophase: CompilerGym's names and order, and hand-counted values on tests/gym/data/features.ll."""

from __future__ import annotations

import numpy as np
import pytest

from programl.gym.benchmarks import load_benchmark
from programl.gym.features import AUTOPHASE_FEATURE_NAMES, INST_COUNT_FEATURE_NAMES
from programl.gym.observations import Observer
from programl.gym.state import Toolchain

from .conftest import GYM_DATA


def test_feature_names_are_compiler_gyms() -> None:
    # CompilerGym: compiler_gym/third_party/llvm/instcount.py and compiler_gym/third_party/autophase/__init__.py
    assert len(INST_COUNT_FEATURE_NAMES) == 70 and len(set(INST_COUNT_FEATURE_NAMES)) == 70
    assert INST_COUNT_FEATURE_NAMES[:6] == ("TotalInsts", "TotalBlocks", "TotalFuncs", "Ret", "Br", "Switch")
    assert INST_COUNT_FEATURE_NAMES[33:37] == ("Alloca", "Load", "Store", "GetElementPtr")
    assert INST_COUNT_FEATURE_NAMES[-3:] == ("InsertValue", "LandingPad", "Freeze")
    assert len(AUTOPHASE_FEATURE_NAMES) == 56 and len(set(AUTOPHASE_FEATURE_NAMES)) == 56
    assert AUTOPHASE_FEATURE_NAMES[:3] == ("BBNumArgsHi", "BBNumArgsLo", "onePred")
    assert AUTOPHASE_FEATURE_NAMES[17:19] == ("CriticalCount", "NumEdges")
    assert AUTOPHASE_FEATURE_NAMES[-6:] == ("TotalBlocks", "TotalInsts", "TotalMemInst", "TotalFuncs", "ArgsPhi",
                                            "testUnary")  # fmt: skip


@pytest.fixture(scope="module")
def features(opt22):
    benchmark = load_benchmark(GYM_DATA / "features.ll")
    observer = Observer(Toolchain())
    state = observer.initial_state(benchmark)
    inst_count = observer.observe("InstCount", state, benchmark)
    autophase = observer.observe("Autophase", state, benchmark)
    return dict(zip(INST_COUNT_FEATURE_NAMES, inst_count.tolist())), dict(
        zip(AUTOPHASE_FEATURE_NAMES, autophase.tolist())
    )


def test_inst_count_by_hand(features) -> None:
    inst_count, _ = features
    expected = {"TotalInsts": 17, "TotalBlocks": 5, "TotalFuncs": 2, "Ret": 2, "Br": 2, "Switch": 1, "Add": 1,
                "Mul": 1, "Alloca": 1, "Load": 1, "Store": 1, "Trunc": 1, "ICmp": 2, "PHI": 3, "Call": 1}  # fmt: skip
    assert inst_count == {name: expected.get(name, 0) for name in INST_COUNT_FEATURE_NAMES}


def test_autophase_by_hand(features) -> None:
    # constants: i32 0 (icmp), i32 0 and i64 1 (phis), i32 1 (add), i64 0 (phi), i32 1 (ret), the alloca's i32 1;
    # the switch's case values are no operands in LLVM 22, so they do not count (docs/gym.md#observations)
    _, autophase = features
    expected = {
        "BBNumArgsLo": 2, "onePred": 1, "twoPred": 3, "twoEach": 1, "twoSuccessor": 2, "BB03Phi": 2, "BBNoPhi": 3,
        "BeginPhi": 2, "BranchCount": 2, "returnInt": 1, "CriticalCount": 6, "NumEdges": 7, "const32Bit": 5,
        "const64Bit": 2, "numConstZeroes": 3, "numConstOnes": 4, "binaryConstArg": 1, "NumAddInst": 1,
        "NumAllocaInst": 1, "BlockLow": 5, "NumBrInst": 2, "NumCallInst": 1, "NumICmpInst": 2, "NumLoadInst": 1,
        "NumMulInst": 1, "NumPHIInst": 3, "NumRetInst": 2, "NumStoreInst": 1, "NumTruncInst": 1, "TotalBlocks": 5,
        "TotalInsts": 17, "TotalMemInst": 4, "TotalFuncs": 2, "ArgsPhi": 6, "testUnary": 3,
    }  # fmt: skip
    assert autophase == {name: expected.get(name, 0) for name in AUTOPHASE_FEATURE_NAMES}


def test_cached_vectors_are_read_only(opt22) -> None:
    benchmark = load_benchmark(GYM_DATA / "features.ll")
    observer = Observer(Toolchain())
    state = observer.initial_state(benchmark)
    vector = observer.observe("Autophase", state, benchmark)
    assert vector.dtype == np.int64 and vector.shape == (56,)
    with pytest.raises(ValueError):
        vector[0] = 1
    assert observer.observe("Autophase", state, benchmark) is vector  # computed once per state
