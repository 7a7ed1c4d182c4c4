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


@pytest.fixture(autouse=True)
def _restore_denormals():
    """Training entry points flush denormal floats to zero for speed (programl.training.configure_threads); that is
    process-wide CPU state, so undo it after each test (hypothesis refuses to generate floats under it)."""
    yield
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_flush_denormal(False)
