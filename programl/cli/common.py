"""What every batch command shares (DESIGN §6): one-line errors, a progress bar, a summary line, exit codes.

A batch never stops at a bad input: each input's outcome is reported on its own line (``file:line:col: error:
message`` where the location is known) and counted; the command exits 1 when some inputs failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from programl.exceptions import GraphCreationError, ProgramlError

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "Summary", "describe_error", "progress", "usage_error"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def describe_error(error: BaseException, path: str | None = None) -> str:
    """One line saying what went wrong with an input, led by its location."""
    from programl.util.executor import WorkerCrashedError

    if isinstance(error, GraphCreationError):
        # As the base class prints it (a compiler's error prints its own "error: ", which is added below).
        error = GraphCreationError(error.message, path if error.path is None else error.path, error.line, error.column)
        text = str(error)
        where, _, message = text.partition(": ") if error.path else ("", "", text)
        return f"{where}: error: {message}" if where else f"error: {message}"
    prefix = f"{path}: " if path else ""
    if isinstance(error, TimeoutError):
        return f"{prefix}error: {error or 'timed out'}"
    if isinstance(error, WorkerCrashedError):
        return f"{prefix}error: crashed: {error}"
    if isinstance(error, (ProgramlError, OSError)):
        message = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        if path and message.startswith(f"{path}: "):  # the message already says where
            message = message[len(path) + 2 :]
        return f"{prefix}error: {message}"
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{prefix}error: internal error: {type(error).__name__}: {first_line}"


def usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def progress(items: Iterable, total: int, description: str, enabled: bool = True) -> Iterator:
    """A tqdm progress bar on stderr for batches of more than one input (hidden when stderr is not a terminal)."""
    if not enabled or total < 2:
        yield from items
        return
    from tqdm import tqdm

    with tqdm(items, total=total, desc=description, unit="file", file=sys.stderr, disable=None, leave=False) as bar:
        yield from bar


def print_line(line: str) -> None:
    """Print to stderr without breaking a progress bar."""
    try:
        from tqdm import tqdm

        tqdm.write(line, file=sys.stderr)
    except ImportError:  # pragma: no cover - tqdm is a dependency
        print(line, file=sys.stderr)


@dataclass
class Summary:
    """Counts of a batch, printed as one line at the end."""

    command: str
    done: int = 0
    skipped: int = 0
    failed: int = 0
    totals: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)  # other counts worth a mention, e.g. "without a root"
    start: float = field(default_factory=time.perf_counter)

    def add(self, **counts: int) -> None:
        self.done += 1
        for key, value in counts.items():
            self.totals[key] = self.totals.get(key, 0) + value

    def fail(self, error: BaseException, path: str | None) -> None:
        self.failed += 1
        print_line(describe_error(error, path))

    def line(self, noun: str) -> str:
        parts = [f"{self.done:,} {noun}"]
        if self.totals:
            parts[0] += " (" + ", ".join(f"{v:,} {k}" for k, v in self.totals.items()) + ")"
        if self.skipped:
            parts.append(f"{self.skipped:,} up to date")
        parts.extend(f"{count:,} {what}" for what, count in self.notes.items())
        if self.failed:
            parts.append(f"{self.failed:,} failed")
        return f"programl {self.command}: " + ", ".join(parts) + f" in {time.perf_counter() - self.start:.2f} s"

    def exit_code(self) -> int:
        return EXIT_FAILED if self.failed else EXIT_OK
