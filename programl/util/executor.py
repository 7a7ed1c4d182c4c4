"""Running one function over many inputs: lazily, in order, in worker processes, each input with a timeout.

This is the engine behind every multi-input operation (SPEC §3.1-§3.2: programl 0.3.2's
``programl.util.py.executor.execute``) and behind the batch commands of the CLI.

* :func:`execute` consumes its inputs lazily, keeps at most ``chunksize`` of them in flight, and yields the results
  in input order. It works with any object that has ``submit(fn, *args)`` returning a future with ``result()``:
  :class:`TimeoutProcessPool` (the default for many inputs), :class:`concurrent.futures.ThreadPoolExecutor`, or
  dask's ``client.get_executor()``.
* :class:`TimeoutProcessPool` is a :class:`concurrent.futures.Executor` whose workers are plain processes. A task
  that runs past its timeout has its worker killed (so a hung LLVM parse cannot stall a batch) and fails with
  :class:`TimeoutError`; a worker that dies (a crash in native code) fails its task with :class:`WorkerCrashedError`.
  Either way the worker is replaced and the other tasks go on.
"""

from __future__ import annotations

import collections
import concurrent.futures
import multiprocessing
import os
import pickle
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = [
    "Outcome",
    "TimeoutProcessPool",
    "WorkerCrashedError",
    "default_workers",
    "execute",
    "execute_outcomes",
]

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_CHUNKSIZE = 1024


class WorkerCrashedError(RuntimeError):
    """A worker process died while running a task (e.g. a segmentation fault in native code)."""


def default_workers() -> int:
    """The number of CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class Outcome(collections.namedtuple("Outcome", ["index", "input", "value", "error"])):
    """The result of one input: ``value`` when it succeeded, else ``error`` (an exception)."""

    __slots__ = ()

    @property
    def ok(self) -> bool:
        return self.error is None


def execute(
    fn: Callable[[T], R],
    inputs: Iterable[T],
    executor: Any = None,
    chunksize: int | None = None,
    timeout: float | None = None,
) -> Iterator[R]:
    """Yield ``fn(x)`` for each ``x`` in ``inputs``, in input order; the first failure is raised.

    Args:
        fn: A picklable function of one argument (when an executor with processes is used).
        inputs: Any iterable; it is consumed lazily.
        executor: Anything with ``submit(fn, x)``; ``None`` runs ``fn`` in this process.
        chunksize: The most inputs submitted ahead of the one being yielded (default 1024).
        timeout: Seconds to wait for each result (enforced by killing the worker with a
            :class:`TimeoutProcessPool`; other executors only stop waiting).

    Raises:
        TimeoutError: An input took longer than ``timeout``.
        Exception: Whatever ``fn`` raised for the first failing input.
    """
    for outcome in execute_outcomes(fn, inputs, executor=executor, chunksize=chunksize, timeout=timeout):
        if outcome.error is not None:
            raise outcome.error
        yield outcome.value


def execute_outcomes(
    fn: Callable[[T], R],
    inputs: Iterable[T],
    executor: Any = None,
    chunksize: int | None = None,
    timeout: float | None = None,
) -> Iterator[Outcome]:
    """Like :func:`execute`, but never raises for an input: yields an :class:`Outcome` per input, in order.

    This is what batch commands use: a failing input is reported and the batch goes on.
    """
    if executor is None:
        for index, item in enumerate(inputs):
            try:
                yield Outcome(index, item, fn(item), None)
            except Exception as error:  # noqa: BLE001 - reported per input
                yield Outcome(index, item, None, error)
        return

    window = max(1, chunksize or DEFAULT_CHUNKSIZE)
    pending: collections.deque = collections.deque()
    # Our pool enforces the timeout per task (from when the task starts); other executors can only stop waiting.
    enforced = isinstance(executor, TimeoutProcessPool)
    wait = None if enforced else timeout

    def submit(item):
        if enforced:
            return executor.submit_with_timeout(fn, timeout, item)
        return executor.submit(fn, item)

    def collect(entry) -> Outcome:
        index, item, future = entry
        try:
            return Outcome(index, item, future.result(timeout=wait), None)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return Outcome(index, item, None, TimeoutError(f"timed out after {timeout:g} s"))
        except Exception as error:  # noqa: BLE001
            return Outcome(index, item, None, error)

    for index, item in enumerate(inputs):
        pending.append((index, item, submit(item)))
        if len(pending) >= window:
            yield collect(pending.popleft())
    while pending:
        yield collect(pending.popleft())


# --------------------------------------------------------------------------------------------------------------
# A process pool with per-task timeouts.


def _worker_main(conn) -> None:
    """Run tasks received on ``conn`` until it is closed."""
    while True:
        try:
            fn, args, kwargs = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = (True, fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - every failure goes back to the caller
            reply = (False, error)
        try:
            conn.send(reply)
        except Exception as error:  # noqa: BLE001 - the result or exception does not pickle
            conn.send((False, RuntimeError(f"{type(error).__name__} while sending the result back: {error}")))


class _Worker:
    """One worker process and the pipe to it."""

    def __init__(self, context, initializer, initargs) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_bootstrap, args=(child, initializer, initargs), daemon=True)
        self.process.start()
        child.close()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()

    def stop(self) -> None:
        self.conn.close()  # the worker sees EOF and returns
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.kill()


def _bootstrap(conn, initializer, initargs) -> None:
    if initializer is not None:
        initializer(*initargs)
    _worker_main(conn)


class TimeoutProcessPool(concurrent.futures.Executor):
    """A pool of worker processes where every task has a timeout.

    Args:
        max_workers: Number of worker processes (default: the CPUs this process may use).
        timeout: Default seconds a task may run before its worker is killed (``None``: no limit).
        mp_context: A :mod:`multiprocessing` context (default ``forkserver`` where available, else ``spawn``;
            ``fork`` is avoided because the parent may hold threads).
        initializer: Called with ``initargs`` in each new worker.

    Functions and their arguments must be picklable. ``submit(fn, *args, **kwargs)`` accepts a per-call
    ``timeout=`` keyword only through :meth:`submit_with_timeout`.
    """

    def __init__(
        self,
        max_workers: int | None = None,
        timeout: float | None = None,
        mp_context: Any = None,
        initializer: Callable[..., None] | None = None,
        initargs: tuple = (),
    ) -> None:
        self._max_workers = max_workers or default_workers()
        self._timeout = timeout
        if mp_context is None:
            methods = multiprocessing.get_all_start_methods()
            mp_context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        self._context = mp_context
        self._initializer = initializer
        self._initargs = initargs
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._shutdown = False
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        return self.submit_with_timeout(fn, self._timeout, *args, **kwargs)

    def submit_with_timeout(
        self, fn: Callable[..., R], timeout: float | None, /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future:
        """Submit ``fn(*args, **kwargs)`` with its own timeout in seconds (``None``: no limit)."""
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit to a pool that was shut down")
            future: concurrent.futures.Future = concurrent.futures.Future()
            self._queue.put((future, fn, args, kwargs, timeout))
            if len(self._threads) < self._max_workers:
                thread = threading.Thread(target=self._slot, name=f"programl-worker-{len(self._threads)}", daemon=True)
                thread.start()
                self._threads.append(thread)
            return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            for _ in self._threads:
                self._queue.put(None)
        if wait:
            for thread in self._threads:
                thread.join()

    def _slot(self) -> None:
        """One slot: takes tasks from the queue and runs them in its own worker process."""
        worker: _Worker | None = None
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                future, fn, args, kwargs, timeout = item
                if not future.set_running_or_notify_cancel():
                    continue
                if worker is None:
                    worker = _Worker(self._context, self._initializer, self._initargs)
                try:
                    worker.conn.send((fn, args, kwargs))
                except (pickle.PicklingError, TypeError, AttributeError) as error:
                    future.set_exception(error)
                    continue
                except (BrokenPipeError, OSError):
                    worker.kill()
                    worker = None
                    future.set_exception(WorkerCrashedError("worker process died before the task started"))
                    continue
                if not worker.conn.poll(timeout):
                    worker.kill()
                    worker = None
                    future.set_exception(TimeoutError(f"timed out after {timeout:g} s"))
                    continue
                try:
                    ok, value = worker.conn.recv()
                except (EOFError, OSError):
                    worker.process.join(timeout=1)
                    code = worker.process.exitcode
                    worker.kill()
                    worker = None
                    future.set_exception(WorkerCrashedError(f"worker process died (exit code {code})"))
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
        finally:
            if worker is not None:
                worker.stop()
