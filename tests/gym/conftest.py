"""Fixtures of the environment's tests: they skip without gymnasium (the ``gym`` extra) or LLVM 22's tools."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gymnasium", reason="the gym extra is not installed (pip install 'programl[gym]')")

from programl.exceptions import UnsupportedCompiler  # noqa: E402
from programl.gym.tools import find_llvm_tool  # noqa: E402

GYM_DATA = Path(__file__).resolve().parent / "data"


def _tool(name: str) -> str:
    try:
        return find_llvm_tool(name)
    except UnsupportedCompiler as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def opt22() -> str:
    """Path of opt-22; skips when absent."""
    return _tool("opt")


@pytest.fixture(scope="session")
def llc22() -> str:
    """Path of llc-22; skips when absent."""
    return _tool("llc")


@pytest.fixture(scope="session")
def loops_c(opt22, clang22) -> Path:
    """A small C program with loops, a switch and calls (needs clang-22 and opt-22)."""
    return GYM_DATA / "loops.c"
