"""The manifest of a data-set build, and the rule that says whether an input is up to date
(docs/spec/design.md#package-layout, docs/spec/datasets.md#builds).

Every builder (:mod:`programl.data.deepdataflow`, :mod:`programl.data.poj104`, :mod:`programl.data.devmap`) keeps a
``manifest.jsonl``: one JSON object per line, with at least ``name``, ``status`` (``"ok"`` or ``"failed"``) and
``error``, and, where the builder has one, ``sha256``: the key of the input it was built from. A line is appended
(:func:`append_manifest`) as each input finishes, so an interrupted build loses at most the inputs in flight; when
read (:func:`read_manifest`) the latest line of a name wins and a line torn by a crash is skipped. At the end of a
build the manifest is rewritten atomically with one line per name (:func:`write_manifest`, compaction).

An input is up to date (:func:`freshness`) when its latest line has the same key, says ``ok`` and its outputs exist.
A recorded failure with the same key is kept, not retried, unless asked or unless it was ``transient`` (a reason
outside the input, such as a full disk); a builder with no key before it builds retries failures every time, since
it cannot tell whether the input changed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from programl.data.report import BuildReport

__all__ = [
    "BUILD",
    "FAILED",
    "UP_TO_DATE",
    "Manifest",
    "append_manifest",
    "freshness",
    "read_manifest",
    "write_manifest",
]

#: What :func:`freshness` says of an input.
BUILD, UP_TO_DATE, FAILED = "build", "up to date", "failed"
#: Seconds between two ``fsync`` s of the appended manifest lines.
SYNC_INTERVAL = 2.0


def _line(entry: Mapping[str, Any]) -> str:
    return json.dumps(dict(entry), sort_keys=True, separators=(",", ":")) + "\n"


def read_manifest(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The latest entry of every name in a manifest (JSON lines; torn or invalid lines are skipped).

    Returns:
        ``{name: entry}`` in first-seen order; an empty dict when the file does not exist.
    """
    entries: dict[str, dict[str, Any]] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line torn by a crash
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    entries[entry["name"]] = entry
    except FileNotFoundError:
        pass
    return entries


def append_manifest(path: str | os.PathLike, entries: Iterable[Mapping[str, Any]], sync: bool = True) -> None:
    """Append entries to a manifest, one JSON line each, in one ``write`` (then ``fsync`` when ``sync``).

    A crash can tear at most the last line, which :func:`read_manifest` skips.
    """
    text = "".join(_line(e) for e in entries)
    if not text:
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)  # less the umask, as any new file
    try:
        # a torn previous line (no newline at the end) must not swallow this one
        if os.fstat(fd).st_size and not _ends_with_newline(path):
            text = "\n" + text
        os.write(fd, text.encode("utf-8"))
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _ends_with_newline(path: str | os.PathLike) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def write_manifest(path: str | os.PathLike, entries: Iterable[Mapping[str, Any]]) -> None:
    """Rewrite a manifest atomically with exactly ``entries`` (compaction: one line per name)."""
    from programl.util.fs import atomic_write_text

    atomic_write_text(path, "".join(_line(e) for e in entries))


def freshness(
    previous: Mapping[str, Any] | None,
    key: str | None,
    outputs_exist: Callable[[Mapping[str, Any]], bool],
    *,
    force: bool = False,
    retry_failed: bool = False,
) -> str:
    """Whether to build an input: :data:`BUILD`, :data:`UP_TO_DATE` or :data:`FAILED` (failed before; not retried).

    Args:
        previous: Its latest manifest entry, if any.
        key: Its key (compared with the entry's ``sha256``); ``None`` when the builder has none before it builds:
            then an ``ok`` entry with outputs is up to date and a failure is always retried.
        outputs_exist: Called with ``previous`` when it says ``ok``: whether its outputs are all there.
        force: Build whatever the manifest says.
        retry_failed: Build inputs whose recorded build failed.
    """
    if force or not previous or (key is not None and previous.get("sha256") != key):
        return BUILD
    status = previous.get("status")
    if status == "ok" and outputs_exist(previous):
        return UP_TO_DATE
    if status == "failed" and key is not None and not retry_failed and not previous.get("transient"):
        return FAILED
    return BUILD


class Manifest:
    """The manifest of one build: its entries as read, lines appended as inputs finish, compaction at the end.

    A write that fails (a full disk) never stops the build: it is kept in ``report.errors``, later lines are not
    appended, and :meth:`compact` (the manifest's last chance) still tries; a rerun redoes what it did not record.

    Args:
        path: The ``manifest.jsonl``.
        report: Where skipped inputs, kept failures and write errors are counted.
    """

    def __init__(self, path: str | os.PathLike, report: BuildReport) -> None:
        self.path = Path(path)
        self.report = report
        self.entries = read_manifest(self.path)
        #: Whether :meth:`record` added an entry (a build that had nothing to do leaves the file as it was).
        self.changed = False
        self._appending = True
        self._last_sync = time.monotonic()

    def check(
        self,
        name: str,
        key: str | None,
        outputs_exist: Callable[[Mapping[str, Any]], bool],
        *,
        force: bool = False,
        retry_failed: bool = False,
    ) -> bool:
        """Whether ``name`` needs building (:func:`freshness`); an input up to date is counted in
        ``report.skipped``, a failure that is kept in ``report.failed``."""
        previous = self.entries.get(name)
        decision = freshness(previous, key, outputs_exist, force=force, retry_failed=retry_failed)
        if decision == UP_TO_DATE:
            self.report.skipped += 1
        elif decision == FAILED:
            self.report.failed.append((name, previous.get("error") or ""))
        return decision == BUILD

    def record(self, entry: dict[str, Any], sync: bool | None = None) -> None:
        """Append ``entry`` (and keep it as its name's latest); ``sync=None`` syncs at most every few seconds."""
        if sync is None:
            sync = time.monotonic() - self._last_sync > SYNC_INTERVAL
        if self._appending:
            self._appending = self.report._write(self.path, append_manifest, self.path, [entry], sync=sync)
            if sync:
                self._last_sync = time.monotonic()
        self.entries[entry["name"]] = entry
        self.changed = True

    def compact(self, entries: Iterable[Mapping[str, Any]]) -> bool:
        """Rewrite the manifest with exactly ``entries`` (in the builder's order); False when the write failed."""
        return self.report._write(self.path, write_manifest, self.path, list(entries))
