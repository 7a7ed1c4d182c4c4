"""Exceptions of the public API (docs/spec/python-api.md#errors; three of them are programl 0.3.2's).

Every error the library raises on bad input is one of these, so that callers (and the CLI) can report it in one
line. A :class:`GraphCreationError` raised for a parse error carries the file, line and column.
"""

from __future__ import annotations

__all__ = [
    "AnalysisError",
    "GraphCreationError",
    "GraphTransformError",
    "ProgramlError",
    "UnsupportedCompiler",
    "UsageError",
]


class ProgramlError(Exception):
    """Base class of every error this library raises on purpose."""


class UsageError(ProgramlError):
    """A command-line option is wrong (the CLI prints usage and exits 2; docs/spec/design.md#conventions).

    A :class:`ProgramlError`, so code that reports library errors in one line reports this one too; the CLI catches
    it first, to exit 2 instead of 1.
    """


class UnsupportedCompiler(ProgramlError, TypeError):
    """The requested compiler (or compiler version) is not available or not supported."""


class GraphCreationError(ProgramlError, ValueError):
    """A program graph could not be built from the given input.

    Args:
        message: What went wrong, in one line.
        path: The input file, when there is one (``"-"`` or ``None`` for in-memory input).
        line: 1-based line of the error in the input, when known.
        column: 1-based column of the error in the input, when known.
    """

    def __init__(
        self,
        message: str,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = ":".join(str(part) for part in (self.path, self.line, self.column) if part is not None)
        return f"{where}: {self.message}" if where else self.message

    def __reduce__(self):  # keep path/line/column when crossing process boundaries
        return (type(self), (self.message, self.path, self.line, self.column))


class GraphTransformError(ProgramlError, ValueError):
    """A graph could not be converted to or from another representation."""


class AnalysisError(ProgramlError, ValueError):
    """A data-flow analysis cannot label a graph (e.g. no eligible root node; docs/spec/analyses.md#common-rules)."""
