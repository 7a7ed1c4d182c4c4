"""Run the inputs of a data-set build in parallel and record each outcome in the manifest (DESIGN §1 ``data/``, §5).

The loop shared by the three builders (:mod:`programl.data.deepdataflow`, :mod:`programl.data.poj104`,
:mod:`programl.data.devmap`): every task runs in a worker (a :class:`~programl.util.executor.TimeoutProcessPool`
by default, or any executor with ``submit``) under a timeout; the main process appends one manifest line per
finished input (:class:`~programl.data.manifest.Manifest`) and counts it in the build's report. A failing input
(compile error, timeout, crash) is recorded with a one-line message and counted, never fatal; an interruption
(Ctrl-C) kills the inputs in flight and re-raises, and what finished is in the manifest, so a rerun resumes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from programl.data.manifest import Manifest

__all__ = ["error_text", "is_transient", "run_tasks"]


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
    if isinstance(error, (ProgramlError, OSError)):
        return first_line
    return f"internal error: {type(error).__name__}: {first_line}"


def is_transient(error: BaseException) -> bool:
    """Whether a failure says nothing about the input (a full disk, a directory that cannot be written)."""
    from programl.exceptions import ProgramlError

    return isinstance(error, OSError) and not isinstance(error, (ProgramlError, TimeoutError))


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
    finally:
        if pool is not None:
            if completed:
                pool.shutdown(cancel_futures=True)
            else:  # interrupted or broken: kill what runs rather than wait for it
                pool.terminate()
