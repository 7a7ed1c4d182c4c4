"""Small argument checks the API shares (docs/spec/design.md#conventions: bad input is a clear error, not a value taken
for another)."""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["is_integer"]


def is_integer(value: Any) -> bool:
    """An ``int`` or a numpy integer, not a bool: ``True`` is an ``int`` to Python, but never a count or an index
    here, and ``1.0``, ``"1"`` and ``np.bool_`` are not integers either."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
