"""What every batch command shares (docs/spec/design.md#conventions): one-line errors, a progress bar, a summary line,
exit codes, and the worker pool with its limits.

A batch never stops at a bad input: each input's outcome is reported on its own line (``file:line:col: error:
message`` where the location is known; a file name with a newline or another unprintable character is quoted, as
Python's ``repr`` does, so the line stays one line) and counted; the command exits 1 when some inputs failed.

Every input, one or many, runs in a worker process (:func:`worker_outcomes`) under the same limits: ``--timeout``
seconds (validated: a finite number > 0, else a usage error) and ``--max-memory`` bytes of address space. A pool
whose workers cannot be started stops the batch with one line (exit 1); Ctrl-C kills the running tasks and exits
130 after the summary line so far.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from programl.exceptions import GraphCreationError, ProgramlError
from programl.util.progress import message
from programl.util.progress import progress as _progress

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Summary",
    "add_graph_outcomes",
    "add_limit_options",
    "default_max_memory",
    "describe_error",
    "finish_batch",
    "one_line",
    "parse_memory",
    "parse_timeout",
    "progress",
    "quote_path",
    "stdout_to_devnull",
    "usage_error",
    "worker_outcomes",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C

_MEMORY_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def quote_path(path: str) -> str:
    """``path`` as is when it is printable, else quoted like Python's ``repr`` (``'a\\nb.ll'``)."""
    return path if path.isprintable() else repr(path)


def one_line(text: str) -> str:
    """``text`` with its line breaks escaped (``\\n``), so that a message is one line whatever it quotes."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def describe_error(error: BaseException, path: str | None = None) -> str:
    """One line saying what went wrong with an input, led by its location."""
    return one_line(_describe_error(error, path))


def _describe_error(error: BaseException, path: str | None) -> str:
    from programl.util.executor import WorkerCrashedError

    if isinstance(error, GraphCreationError):
        # As the base class prints it (a compiler's error prints its own "error: ", which is added below).
        error = GraphCreationError(error.message, path if error.path is None else error.path, error.line, error.column)
        if error.path is not None and not error.path.isprintable():
            error = GraphCreationError(
                error.message.replace(error.path, quote_path(error.path)),
                quote_path(error.path),
                error.line,
                error.column,
            )
        text = str(error)
        where, _, message = text.partition(": ") if error.path else ("", "", text)
        return f"{where}: error: {message}" if where else f"error: {message}"
    prefix = f"{quote_path(path)}: " if path else ""
    if isinstance(error, MemoryError):
        return f"{prefix}error: {error or 'out of memory'}"
    if isinstance(error, TimeoutError):
        return f"{prefix}error: {error or 'timed out'}"
    if isinstance(error, WorkerCrashedError):
        return f"{prefix}error: crashed: {error}"
    if isinstance(error, (ProgramlError, OSError)):
        message = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        if path and message.startswith(f"{path}: "):  # the message already says where
            message = message[len(path) + 2 :]
        if path and path != quote_path(path):
            message = message.replace(path, quote_path(path))
        return f"{prefix}error: {message}"
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{prefix}error: internal error: {type(error).__name__}: {first_line}"


def parse_output_dir(text: str) -> str | None:
    """``-o DIR``: a directory, or ``-`` for standard output (as with most Unix tools), which is also the default."""
    return None if text == "-" else text


def add_output_option(parser: argparse.ArgumentParser) -> None:
    """``-o DIR`` of ``build`` and ``convert``."""
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        type=parse_output_dir,
        help="write <DIR>/<name><suffix> per input (default, or '-': standard output)",
    )


def parse_timeout(text: str) -> float:
    """``--timeout``: seconds, a finite number above 0 and at most ``MAX_TIMEOUT`` (argparse makes a bad one a
    usage error, exit 2)."""
    from programl.util.executor import MAX_TIMEOUT

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}: {text!r}")
    return value


def parse_memory(text: str) -> int | None:
    """``--max-memory``: bytes with an optional K/M/G/T suffix (powers of 1024), or ``none`` / ``0``: no limit."""
    from programl.util.executor import MIN_MEMORY

    cleaned = text.strip().lower().removesuffix("ib").removesuffix("b")
    if cleaned in ("none", "0", "unlimited"):
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)", cleaned)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size (e.g. 4G, 512M, or none): {text!r}")
    value = float(match.group(1)) * _MEMORY_UNITS[match.group(2)]
    if not math.isfinite(value) or value < MIN_MEMORY or value >= 1 << 62:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_MEMORY >> 20}M (or none): {text!r}")
    return int(value)


def default_max_memory() -> int:
    """The default ``--max-memory``: 8 GiB, or half the physical memory when that is less."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # not POSIX
        physical = 0
    limit = 8 << 30
    return min(limit, physical // 2) if physical > 0 else limit


def add_limit_options(parser: argparse.ArgumentParser, per: str = "input") -> None:
    """Add ``--timeout`` and ``--max-memory``: the limits every input runs under, in its own worker process."""
    parser.add_argument(
        "--timeout",
        type=parse_timeout,
        default=300.0,
        metavar="S",
        help=f"seconds per {per}, after which its worker (and clang) is killed (default: 300)",
    )
    from programl.util.executor import format_size as size

    default = default_max_memory()
    parser.add_argument(
        "--max-memory",
        type=parse_memory,
        default=default,
        metavar="SIZE",
        help=f"address-space limit (RLIMIT_AS) of each worker, e.g. 4G, 512M or none (default: {size(default)}: "
        "8G, or half the physical memory if less). It also applies to each clang a worker starts, so a source "
        "whose macros explode fails with 'out of memory' instead of exhausting the machine. It counts reserved "
        "virtual memory, not only what is used, hence the headroom: building the 160k-node graph of lz4.c peaks "
        "at about 0.5G. A lower limit inherited from the shell (ulimit -v) stays in force, and is the one an 'out of "
        "memory' error names.",
    )


def worker_outcomes(
    fn: Callable,
    tasks: Sequence,
    args: argparse.Namespace,
    pass_fds: Sequence[int] = (),
) -> contextlib.AbstractContextManager[Iterator]:
    """The outcomes of ``fn`` over ``tasks``, each in a worker process under ``args.timeout`` and
    ``args.max_memory``, with ``args.jobs`` workers (0: all CPUs). One input gets the same isolation as many.

    On leaving the ``with`` block normally the pool shuts down; on an exception (Ctrl-C, a broken pool) its running
    tasks are killed first, so nothing is left running and nothing waits for them.
    """
    return _worker_outcomes(fn, tasks, args, pass_fds)


@contextlib.contextmanager
def _worker_outcomes(fn, tasks, args, pass_fds):
    from programl.util.executor import TimeoutProcessPool, default_workers, execute_outcomes

    pool = None
    if tasks:
        workers = min(args.jobs or default_workers(), len(tasks))
        pool = TimeoutProcessPool(max_workers=workers, max_memory=args.max_memory, pass_fds=pass_fds)
    completed = False
    try:
        yield execute_outcomes(fn, tasks, executor=pool, timeout=args.timeout)
        completed = True
    finally:
        if pool is not None:
            if completed:
                pool.shutdown(cancel_futures=True)
            else:
                pool.terminate()


def usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def progress(items: Iterable, total: int, description: str, enabled: bool = True) -> Iterator:
    """A progress bar on stderr for batches of more than one input file (:func:`programl.util.progress.progress`:
    none when stderr is not a terminal)."""
    return _progress(items, total, description, enabled=enabled, unit="file", min_total=2)


def print_line(line: str) -> None:
    """Print to stderr without breaking a progress bar (:func:`programl.util.progress.message`)."""
    message(line)


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
    interrupted: bool = False  # Ctrl-C: the summary is of what was done so far
    aborted: bool = False  # the batch could not go on (its workers could not be started)

    def add(self, **counts: int) -> None:
        self.done += 1
        for key, value in counts.items():
            self.totals[key] = self.totals.get(key, 0) + value

    def fail(self, error: BaseException, path: str | None) -> None:
        self.failed += 1
        print_line(describe_error(error, path))

    def abort(self, error: BaseException) -> None:
        """The batch cannot go on (e.g. :class:`~programl.util.executor.PoolError`): say why, on one line."""
        self.aborted = True
        print_line(one_line(f"programl {self.command}: error: {error}"))

    @property
    def stopped(self) -> bool:
        """Whether the batch ended early (interrupted or aborted): its summary line is always worth printing."""
        return self.interrupted or self.aborted

    def line(self, noun: str) -> str:
        parts = [f"{self.done:,} {noun}"]
        if self.totals:
            parts[0] += " (" + ", ".join(f"{v:,} {k}" for k, v in self.totals.items()) + ")"
        if self.skipped:
            parts.append(f"{self.skipped:,} up to date")
        parts.extend(f"{count:,} {what}" for what, count in self.notes.items())
        if self.failed:
            parts.append(f"{self.failed:,} failed")
        if self.interrupted:
            parts.append("interrupted")
        elif self.aborted:
            parts.append("stopped")
        return f"programl {self.command}: " + ", ".join(parts) + f" in {time.perf_counter() - self.start:.2f} s"

    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        return EXIT_FAILED if self.failed or self.aborted else EXIT_OK


def finish_batch(summary: Summary, record, args: argparse.Namespace, noun: str) -> int:
    """End a batch command (``build``, ``analyze``, ``convert``): compact its freshness record ``record`` (a
    :class:`~programl.util.freshness.FreshnessRecord`, or None without ``-o``) and report on one line if it could not be
    written (the outputs are; the next run redoes those it does not list), print the summary line (with ``-o``, or
    when something failed or the batch stopped, unless ``-q``), and return the exit code."""
    if record is not None:
        record.compact()
        if record.error is not None:
            summary.fail(record.error, record.error.filename)
    if not args.quiet and (args.output or summary.failed or summary.stopped):
        print(summary.line(noun), file=sys.stderr)
    return summary.exit_code()


def stdout_to_devnull() -> None:
    """Point stdout at /dev/null after a write to it failed (a closed pipe, a full disk), so that the interpreter's
    final flush does not fail again and print a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's capture): nothing to flush
        pass


def add_graph_outcomes(outcomes: Iterable, summary: Summary, record, keys: dict) -> None:
    """The loop of ``build`` and ``convert``: per outcome ``(nodes, edges, bytes for stdout or None)``, count the
    graph, record its output as made from the freshness key ``keys[output]`` (``record``: the directory's
    :class:`~programl.util.freshness.FreshnessRecord`, or None without ``-o``) and write its bytes to stdout; a
    failed input is its one line."""
    for outcome in outcomes:
        if not outcome.ok:
            summary.fail(outcome.error, outcome.input.path)
            continue
        nodes, edges, data = outcome.value
        summary.add(nodes=nodes, edges=edges)
        if record is not None and outcome.input.output is not None:
            record.add(outcome.input.output, keys.get(outcome.input.output))
        if data is not None:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
