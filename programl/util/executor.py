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
import json
import os
import pickle
import queue
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from programl.util import _worker

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


class _Worker:
    """One worker process (``python -c ... _worker.main()``) and the pipes to it."""

    def __init__(self) -> None:
        main = sys.modules.get("__main__")
        main_file = getattr(main, "__file__", None)
        env = dict(os.environ)
        env["PROGRAML_WORKER_SYS_PATH"] = json.dumps([p or os.getcwd() for p in sys.path])
        env["PROGRAML_WORKER_MAIN"] = main_file if main_file and os.path.isfile(main_file) else ""
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from programl.util._worker import main; main()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own process group: killing it also kills what it started (clang)
        )

    def send(self, fn, args, kwargs) -> None:
        data = pickle.dumps((fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        _worker.write_message(self.process.stdin, data)

    def wait(self, timeout: float | None) -> bool:
        """Whether a reply arrived within ``timeout`` seconds (None: wait for ever)."""
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        return bool(ready)

    def receive(self):
        data = _worker.read_message(self.process.stdout)
        if data is None:
            raise EOFError
        return pickle.loads(data)

    def kill(self) -> None:
        """Kill the worker and every process it started."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._close_pipes()

    def stop(self) -> None:
        try:
            self.process.stdin.close()  # the worker sees EOF and returns
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except OSError:
                pass


class TimeoutProcessPool(concurrent.futures.Executor):
    """A pool of worker processes where every task has a timeout.

    Workers are fresh ``python`` processes (not forked, so threads in this process do not matter, and not
    multiprocessing's spawn, so this works from a notebook or a script read from stdin). Functions and arguments
    must be picklable; a function defined in your ``__main__`` script works (the worker loads the script as
    ``__mp_main__`` when it needs to, as spawn does).

    Args:
        max_workers: Number of worker processes (default: the CPUs this process may use).
        timeout: Default seconds a task may run before its worker is killed (``None``: no limit);
            :meth:`submit_with_timeout` sets it per task.
    """

    def __init__(self, max_workers: int | None = None, timeout: float | None = None) -> None:
        self._max_workers = max_workers or default_workers()
        self._timeout = timeout
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
                    worker = _Worker()
                try:
                    worker.send(fn, args, kwargs)
                except (pickle.PicklingError, TypeError, AttributeError) as error:
                    future.set_exception(error)
                    continue
                except (BrokenPipeError, OSError):
                    worker.kill()
                    worker = None
                    future.set_exception(WorkerCrashedError("worker process died before the task started"))
                    continue
                if not worker.wait(timeout):
                    worker.kill()
                    worker = None
                    future.set_exception(TimeoutError(f"timed out after {timeout:g} s"))
                    continue
                try:
                    ok, value = worker.receive()
                except (EOFError, OSError):
                    try:
                        code = worker.process.wait(timeout=1)
                    except subprocess.TimeoutExpired:
                        code = None
                    worker.kill()
                    worker = None
                    how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                    future.set_exception(WorkerCrashedError(f"worker process died ({how})"))
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
        finally:
            if worker is not None:
                worker.stop()
