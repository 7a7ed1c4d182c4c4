"""Freshness records: is an output up to date with its input and the options that made it?
(docs/spec/datasets.md#builds, docs/spec/design.md#conventions)

A rerun of ``programl build``, ``analyze`` or ``dataset build`` skips the inputs whose outputs are up to date. An
output is up to date when it was made from the same input *bytes* with the same options by the same program, which
an mtime cannot say (a rerun with ``-- -O2`` or ``--instructions-only`` must rebuild; a ``cp -r`` of the outputs
must not). So each output is checked against a **key**: :func:`freshness_key`, a sha256 over the input's sha256,
the options that change the output (as canonical JSON) and the programl version, which the caller passes
(``programl.__version__``: this module imports nothing of the package above it).

``build`` and ``analyze`` keep the keys of an output directory in one file, ``<DIR>/.programl-fresh.jsonl``
(:class:`FreshnessRecord`): a JSON line per output written, ``{"output": <path relative to DIR>, "key": ...,
"size": <bytes, or null when the options make no file>}``, appended as outputs finish; the latest line of an output
wins and a torn line is ignored. Paths are relative, so the record travels with ``cp -r``/``cp -a`` of the
directory. ``dataset build`` keeps the same key in its ``manifest.jsonl`` (its ``sha256`` field). Outputs without a
record (made by an older programl) are rebuilt once.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["RECORD_NAME", "FreshnessRecord", "file_key", "freshness_key"]

RECORD_NAME = ".programl-fresh.jsonl"


def freshness_key(content: bytes, options: Mapping[str, Any], *, version: str) -> str:
    """sha256 (hex) over the input's bytes, the ``options`` that change the output and the programl ``version``
    (``programl.__version__``: a new version rebuilds everything once).

    ``options`` must be JSON-serialisable (tuples become lists); key order does not matter.
    """
    meta = json.dumps({"options": dict(options), "programl": version}, sort_keys=True, separators=(",", ":"))
    h = hashlib.sha256(hashlib.sha256(content).digest())
    h.update(meta.encode("utf-8"))
    return h.hexdigest()


def file_key(path: str | os.PathLike, options: Mapping[str, Any], *, version: str) -> str | None:
    """:func:`freshness_key` of a file's bytes; None when it cannot be read (then nothing is up to date).

    Only regular files are read: a FIFO, a device or ``/dev/fd/N`` is read once, by its worker, under its timeout
    (it would block here, and its bytes could not be read twice), so its output is always rebuilt.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            return freshness_key(f.read(), options, version=version)
    except OSError:
        return None


class FreshnessRecord:
    """The keys of the outputs under one directory, kept in ``<directory>/.programl-fresh.jsonl``.

    A write that fails (a full disk, a read-only directory) never stops a batch: the first error is kept in
    :attr:`error`, later lines are not written, and the outputs they stood for are rebuilt by the next run.

    Args:
        directory: The output directory (``-o``); need not exist yet.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self.path = self.directory / RECORD_NAME
        self.entries: dict[str, dict[str, Any]] = {}
        self.lines = 0
        self.error: OSError | None = None
        self._torn = False  # the file ends in a line without its newline
        try:
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    self.lines += 1
                    self._torn = not line.endswith("\n")
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # torn by a crash
                    if isinstance(entry, dict) and isinstance(entry.get("output"), str):
                        self.entries[entry["output"]] = entry
        except (OSError, UnicodeDecodeError):
            pass

    def _name(self, output: str | os.PathLike) -> str:
        return Path(os.path.relpath(output, self.directory)).as_posix()

    def is_fresh(self, output: str | os.PathLike, key: str | None) -> bool:
        """Whether ``output`` was made with ``key`` (and is still there, whole; or still absent if none was made)."""
        if key is None:
            return False
        entry = self.entries.get(self._name(output))
        if entry is None or entry.get("key") != key:
            return False
        try:
            size = os.stat(output).st_size
        except FileNotFoundError:
            return entry.get("size") is None
        except OSError:
            return False
        return entry.get("size") == size

    def add(self, output: str | os.PathLike, key: str | None, made: bool = True) -> None:
        """Record that ``output`` was made with ``key`` (``made=False``: these options make no file for it)."""
        if key is None or self.error is not None:
            return
        name = self._name(output)
        try:
            size = os.stat(output).st_size if made else None
        except OSError:
            return
        entry = {"output": name, "key": key, "size": size}
        line = ("\n" if self._torn else "") + json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as error:
            self.error = OSError(error.errno, error.strerror or str(error), str(self.path))
            return
        self._torn = False
        self.entries[name] = entry
        self.lines += 1

    def compact(self) -> None:
        """Rewrite the record with one line per output when old lines make up most of it (atomically)."""
        from programl.util.fs import atomic_write_text

        if self.error is not None or self.lines <= 2 * len(self.entries) + 16:
            return
        lines = (json.dumps(self.entries[name], sort_keys=True, separators=(",", ":")) for name in sorted(self.entries))
        text = "".join(line + "\n" for line in lines)
        try:
            atomic_write_text(self.path, text)
        except OSError as error:
            self.error = OSError(error.errno, error.strerror or str(error), str(self.path))
            return
        self.lines = len(self.entries)
