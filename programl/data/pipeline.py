"""Run the inputs of a data-set build in parallel and record each outcome in the manifest
(docs/spec/design.md#package-layout, docs/spec/datasets.md#builds).

The loop shared by the three builders (:mod:`programl.data.deepdataflow`, :mod:`programl.data.poj104`,
:mod:`programl.data.devmap`): every task runs in a worker (a :class:`~programl.util.executor.TimeoutProcessPool`
by default, or any executor with ``submit``) under a timeout; the main process appends one manifest line per
finished input (:class:`~programl.data.manifest.Manifest`) and counts it in the build's report. A failing input
(compile error, timeout, crash) is recorded with a one-line message and counted, never fatal; an interruption
(Ctrl-C) kills the inputs in flight and re-raises, and what finished is in the manifest, so a rerun resumes.

A worker killed in the middle of an atomic write (``kill -9`` of a dask worker, a timeout of the default pool)
leaves its temporary file (``.<name>.<random>.tmp``; never a partial output). Each build removes, before and after
its inputs run, the temporaries in the data set that no process on this machine holds open and that were last
written over a minute ago (:func:`remove_stale_temporaries`; the age spares a writer on another machine of a
shared file system).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from programl.data.manifest import Manifest

__all__ = ["error_text", "is_transient", "remove_stale_temporaries", "run_tasks"]

#: An atomic write's temporary file (:func:`programl.util.fs.atomic_write_bytes`, split links, the vocabulary).
_TEMPORARY = re.compile(r"^\..+\.tmp[0-9]*$")
#: A compiler's failure that says nothing about its input (:func:`is_transient`).
_INTERRUPTED = re.compile(r"^(?:clang|flang) was killed by SIG(?:INT|TERM|HUP|QUIT)$")
#: Seconds since its last write before a temporary nobody holds open is stale.
STALE_AFTER = 60.0


def error_text(error: BaseException) -> str:
    """One line for the manifest: ``file:line:col: message`` for compile errors, the message for ours and
    timeouts, the type and first line otherwise."""
    from programl.exceptions import ProgramlError
    from programl.util.executor import WorkerCrashedError

    first_line = (str(error).strip().splitlines() or [""])[0]
    if isinstance(error, TimeoutError):
        return first_line or "timed out"
    if isinstance(error, WorkerCrashedError):
        return f"crashed: {first_line}"
    if type(error).__name__ == "KilledWorker":  # dask gave up: every worker that ran it died
        return "crashed: the dask workers that ran it died (killed, or out of memory)"
    if isinstance(error, (ProgramlError, OSError)):
        return first_line
    return f"internal error: {type(error).__name__}: {first_line}"


def is_transient(error: BaseException) -> bool:
    """Whether a failure says nothing about the input (a full disk, a directory that cannot be written)."""
    from programl.exceptions import GraphCreationError, ProgramlError

    if isinstance(error, GraphCreationError) and _INTERRUPTED.search(error.message or ""):
        return True  # a compiler stopped by a Ctrl-C or a shutdown, not by its input
    return isinstance(error, OSError) and not isinstance(error, (ProgramlError, TimeoutError))


def _open_files() -> set[tuple[int, int]] | None:
    """``(device, inode)`` of every file a process on this machine (that we may look at) holds open; None without
    ``/proc``."""
    try:
        pids = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return None
    found = set()
    for pid in pids:
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in descriptors:
            try:
                status = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            found.add((status.st_dev, status.st_ino))
    return found


def remove_stale_temporaries(root: str | os.PathLike, min_age: float = STALE_AFTER) -> int:
    """Remove the atomic writes' temporary files in ``root`` and its folders two levels down (``ir/``, ``graphs/``,
    ``labels/<analysis>/``, ...) that no process here holds open and that were last written over ``min_age`` seconds
    ago: what a killed writer left. Returns how many were removed; errors are ignored (a rerun tries again)."""
    root = Path(root)
    candidates = []
    now = time.time()
    for folder in (root, *root.glob("*/"), *root.glob("*/*/")):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if not _TEMPORARY.match(name):
                continue
            path = folder / name
            try:
                status = os.lstat(path)
            except OSError:
                continue
            if now - status.st_mtime > min_age:
                candidates.append((path, status))
    if not candidates:
        return 0
    open_files = _open_files() or set()
    removed = 0
    for path, status in candidates:
        if (status.st_dev, status.st_ino) in open_files:
            continue
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    return removed


def run_tasks(
    fn: Callable[[Any], dict[str, Any]],
    tasks: Sequence[Any],
    manifest: Manifest,
    describe: Callable[[Any], dict[str, Any]],
    *,
    jobs: int | None = None,
    timeout: float | None = None,
    max_memory: int | None = None,
    executor: Any = None,
    chunksize: int | None = None,
    progress: Callable[[Iterable, int, str], Iterable] | None = None,
    description: str = "building",
    on_failed: Callable[[Any], None] | None = None,
    on_entry: Callable[[dict[str, Any]], None] | None = None,
    on_failure: Callable[[str, BaseException], None] | None = None,
) -> None:
    """Run ``fn`` over ``tasks`` and record each outcome in ``manifest`` (and count it in ``manifest.report``).

    Args:
        fn: Builds one task in a worker; returns the facts for its manifest entry.
        tasks: What to build.
        manifest: The build's manifest; its report counts ``built`` and ``failed``.
        describe: A task's manifest entry before the outcome (``name`` and the facts known up front).
        jobs: Worker processes of the default pool (default: all CPUs).
        timeout: Seconds per task (``None``: no limit).
        max_memory: Address-space limit in bytes of each worker of the default pool.
        executor: Anything with ``submit`` (e.g. dask's ``client.get_executor()``); default: a process pool.
        chunksize: Tasks in flight per worker (:func:`~programl.util.executor.execute_outcomes`).
        progress: Wraps the stream of finished tasks, ``progress(iterable, total, description)``.
        on_failed: Called with a task that failed, before its entry is recorded (e.g. to remove its stale outputs).
        on_entry: Called with each new manifest entry after it is recorded.
        on_failure: Called with ``(name, error)`` for each task that fails.

    Raises:
        PoolError: The default pool could not start its workers (what finished is in the manifest).
        KeyboardInterrupt: Interrupted; the tasks in flight were killed (what finished is in the manifest).
    """
    from programl.util.executor import TimeoutProcessPool, execute_outcomes

    remove_stale_temporaries(manifest.path.parent)
    if not tasks:
        return
    report = manifest.report
    pool = None
    if executor is None:  # one input gets the same isolation (timeout, memory limit) as many
        workers = min(jobs or os.cpu_count() or 1, len(tasks))
        pool = executor = TimeoutProcessPool(max_workers=workers, max_memory=max_memory)
    completed = False
    try:
        outcomes = execute_outcomes(fn, tasks, executor=executor, timeout=timeout, chunksize=chunksize)
        if progress is not None:
            outcomes = progress(outcomes, len(tasks), description)
        for outcome in outcomes:
            entry = describe(outcome.input)
            if outcome.ok:
                entry.update(status="ok", error=None, **outcome.value)
                report.built += 1
            else:
                entry.update(status="failed", error=error_text(outcome.error))
                if is_transient(outcome.error):  # not the input's fault: a rerun retries it
                    entry["transient"] = True
                if on_failed is not None:
                    report._write(manifest.path.parent, on_failed, outcome.input)
                report.failed.append((entry["name"], entry["error"]))
                if on_failure is not None:
                    on_failure(entry["name"], outcome.error)
            manifest.record(entry)
            if on_entry is not None:
                on_entry(entry)
        completed = True
        remove_stale_temporaries(manifest.path.parent)
    finally:
        if pool is not None:
            if completed:
                pool.shutdown(cancel_futures=True)
            else:  # interrupted or broken: kill what runs rather than wait for it
                pool.terminate()
