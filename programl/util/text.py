"""Small text helpers of the Markdown the package writes (model cards, summaries): a value or "not recorded", and a
Markdown table."""

from __future__ import annotations

from typing import Any

__all__ = ["NOT_RECORDED", "fmt", "markdown_table"]

#: What a card says of a number its run did not record.
NOT_RECORDED = "not recorded"


def fmt(value: Any, spec: str = "") -> str:
    """``value`` for a card: :data:`NOT_RECORDED` for None, floats by ``spec``, ints with thousands separators."""
    if value is None:
        return NOT_RECORDED
    if isinstance(value, float) and spec:
        return format(value, spec)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def markdown_table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[str]:
    """The lines of a Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines
