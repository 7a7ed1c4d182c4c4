"""The per-epoch log of a run (docs/spec/tasks.md#schedule; the original's ``epochs/NNN.EpochList.pbtxt``,
docs/spec/tasks.md#run-directories): :class:`EpochLog` keeps one JSON line (``log.jsonl``) and one CSV row
(``log.csv``) per epoch, rewritten atomically, truncated to the checkpoint on resumption; :func:`progress` draws a bar
(:mod:`programl.util.progress`).

Library messages go through :mod:`logging` (``programl.training``, ``programl.tasks.<task>``);
:func:`configure_logging`, which the training and evaluation commands call, shows them on stderr as plain lines that
do not break a progress bar, and gives ``-q`` its one meaning: no progress bars and no per-epoch or status lines
(INFO); warnings, errors and the final result still print.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError
from programl.util.fs import jsonable, write_bytes
from programl.util.progress import message as _message
from programl.util.progress import progress as _progress

__all__ = ["EpochLog", "configure_logging", "progress"]


class EpochLog:
    """One record per epoch, kept as JSON lines (``<name>.jsonl``) and as CSV (``<name>.csv``).

    Both files are rewritten atomically after each :meth:`append`, so they always agree and never hold a torn line.
    On resumption, :meth:`truncate` drops the records after the checkpoint's epoch.

    Args:
        directory: Where the files live (created).
        name: File stem (default ``log``).
        enabled: False on non-main DDP processes: records are kept in memory, nothing is written.
        load: Read the records already there (resumption); False starts an empty log (``--restart``).

    Raises:
        ProgramlError: ``<name>.jsonl`` holds a line that is not a per-epoch JSON record (``file:line:col``).
    """

    def __init__(
        self, directory: str | os.PathLike, name: str = "log", enabled: bool = True, load: bool = True
    ) -> None:
        self.directory = Path(directory)
        self.jsonl = self.directory / f"{name}.jsonl"
        self.csv = self.directory / f"{name}.csv"
        self.enabled = enabled
        self.records: list[dict[str, Any]] = []
        if load and self.jsonl.is_file():
            self.records = self._read()

    def _read(self) -> list[dict[str, Any]]:
        """The records of ``<name>.jsonl``; a damaged file is a :class:`ProgramlError` that says where."""
        try:
            text = self.jsonl.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise ProgramlError(
                f"{self.jsonl}: not a log of JSON lines ({error.reason}); start over with --restart"
            ) from None
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ProgramlError(
                    f"{self.jsonl}:{number}:{error.colno}: not a JSON record ({error.msg}); start over with --restart"
                ) from None
            if not isinstance(record, dict) or not isinstance(record.get("epoch"), int):
                raise ProgramlError(
                    f'{self.jsonl}:{number}:1: not a per-epoch record (no integer "epoch"); start over with --restart'
                )
            records.append(record)
        return records

    def truncate(self, epoch: int) -> None:
        """Keep only the records with ``epoch <= epoch`` (resumption from a checkpoint of that epoch)."""
        self.records = [r for r in self.records if r["epoch"] <= epoch]
        self._write()

    def append(self, record: Mapping[str, Any]) -> None:
        """Add an epoch's record and rewrite the log files (atomically)."""
        self.records.append(dict(record))
        self._write()

    def _write(self) -> None:
        if not self.enabled:
            return
        lines = [json.dumps(r, sort_keys=True, default=jsonable) for r in self.records]
        write_bytes(self.jsonl, "".join(line + "\n" for line in lines).encode("utf-8"))
        columns: list[str] = []
        for record in self.records:
            columns.extend(k for k in record if k not in columns and not isinstance(record[k], (list, dict)))
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for record in self.records:
            writer.writerow({k: record.get(k, "") for k in columns})
        write_bytes(self.csv, out.getvalue().encode("utf-8"))


def progress(items, total: int | None = None, description: str = "", enabled: bool = True, unit: str = "batch"):
    """A progress bar over training or evaluation batches (:func:`programl.util.progress.progress`: none when
    ``enabled`` is False, i.e. ``-q`` or a non-main DDP process, and none when stderr is not a terminal)."""
    return _progress(items, total, description, enabled=enabled, unit=unit)


class _LineHandler(logging.Handler):
    """Each record as one line on the current stderr, through :func:`programl.util.progress.message` (a bar being
    drawn is not broken)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _message(self.format(record))
        except Exception:  # noqa: BLE001 - logging's contract: a handler never raises
            self.handleError(record)


#: The loggers whose records the training and evaluation commands show (the engine, the tasks, the data sets they
#: convert). Other ``programl`` loggers (the graph builder's warnings, say) keep Python's defaults, so that a program
#: which trains and then builds graphs in one process does not see those twice or lose them to this handler.
TRAINING_LOGGERS = ("programl.training", "programl.tasks", "programl.datasets", "programl.data")


def configure_logging(quiet: bool = False, main: bool = True) -> list[logging.Logger]:
    """Show the messages of the training loggers (:data:`TRAINING_LOGGERS`) on stderr, one plain line each
    (idempotent: one handler each).

    Args:
        quiet: ``-q``: only warnings and errors (no per-epoch or status lines).
        main: False on a non-main DDP process: only warnings and errors.

    Returns:
        The loggers, at level INFO. Records still propagate to the root logger (an application's own handlers,
        pytest's ``caplog``); the level of the stderr handler is set on every call, so a later run in the same
        process may be louder.
    """
    loggers = [logging.getLogger(name) for name in TRAINING_LOGGERS]
    for logger in loggers:
        handlers = [h for h in logger.handlers if isinstance(h, _LineHandler)]
        if not handlers:
            handlers = [_LineHandler()]
            handlers[0].setFormatter(logging.Formatter("%(message)s"))
            logger.addHandler(handlers[0])
        # the logger passes status lines on (to an application's handlers too); this handler shows what -q allows
        logger.setLevel(logging.INFO)
        handlers[0].setLevel(logging.WARNING if quiet or not main else logging.INFO)
    return loggers
