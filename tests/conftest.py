"""Shared fixtures: where the shared research data lives, and the optional tools tests may need.

Tests that need something optional (clang-22, the reference ``llvm2graph-10``, torch, a GPU, dask) skip with a
reason when it is absent (DESIGN §6).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS_DATA = REPO_ROOT / "tests" / "data"
SHARED_DATA = Path(os.environ.get("PROGRAML_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (or ``$PROGRAML_SHARED_DATA``); skips when it is not there."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared research data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def clang22() -> str:
    """Path of clang-22 (``$PROGRAML_CLANG`` or PATH); skips when absent."""
    path = os.environ.get("PROGRAML_CLANG") or shutil.which("clang-22")
    if not path:
        pytest.skip("clang-22 not installed (apt-get install clang-22)")
    return path
