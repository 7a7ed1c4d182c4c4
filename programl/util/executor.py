"""Running one function over many inputs: lazily, in order, in worker processes, each input with a timeout.

This is the engine behind every multi-input operation (docs/spec/python-api.md#creation,
docs/spec/python-api.md#transforms: programl 0.3.2's ``programl.util.py.executor.execute``) and behind the batch
commands of the CLI.

* :func:`execute` consumes its inputs lazily, keeps at most ``chunksize`` of them in flight, and yields the results
  in input order. It works with any object that has ``submit(fn, *args)`` returning a future with ``result()``:
  :class:`TimeoutProcessPool` (the default for many inputs), :class:`concurrent.futures.ThreadPoolExecutor`, or
  dask's ``client.get_executor()``. With an executor other than our pool, ``fn`` runs wrapped so that an exception
  comes back as a value (dask then logs no "Compute Failed" traceback for an input that merely fails).
* :class:`TimeoutProcessPool` is a :class:`concurrent.futures.Executor` whose workers are plain processes. A task
  that runs past its timeout has its worker killed (so a hung LLVM parse cannot stall a batch) and fails with
  :class:`TimeoutError`; a worker that dies (a crash in native code) fails its task with :class:`WorkerCrashedError`.
  Either way the worker is replaced and the other tasks go on. A worker may be given an address-space limit
  (``max_memory``, ``RLIMIT_AS``; inherited by what it starts, e.g. clang). When a worker cannot be started or
  talked to at all, the pool is broken: every task fails with :class:`PoolError` and :func:`execute_outcomes`
  raises it, so a batch stops with one message instead of hanging. :meth:`TimeoutProcessPool.terminate` kills the
  running tasks (what a Ctrl-C does).

Timeouts are validated in every public entry point (:func:`check_timeout`): a number of seconds > 0, at most
:data:`MAX_TIMEOUT`; ``None`` or ``math.inf`` mean no limit. Anything else (negative, zero, NaN, 1e300, a string)
raises :class:`ValueError` at once.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import math
import numbers
import os
import pickle
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from programl.util import _worker
from programl.util.checks import is_integer

__all__ = [
    "MAX_TIMEOUT",
    "Outcome",
    "PoolError",
    "TimeoutProcessPool",
    "WorkerCrashedError",
    "check_chunksize",
    "check_limits",
    "check_max_memory",
    "check_timeout",
    "default_workers",
    "effective_max_memory",
    "execute",
    "execute_outcomes",
    "format_size",
]

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_CHUNKSIZE = 1024
#: The longest timeout accepted, in seconds (about 31 years; ``math.inf`` or ``None`` mean no limit).
MAX_TIMEOUT = 1e9
#: The smallest address-space limit accepted for a worker (a Python process needs more than this to do anything).
MIN_MEMORY = 16 << 20
#: Seconds a fresh worker may take to start and say it is ready.
STARTUP_TIMEOUT = 120.0


class WorkerCrashedError(RuntimeError):
    """A worker process died while running a task (e.g. a segmentation fault in native code)."""


class PoolError(RuntimeError):
    """The pool cannot run tasks: a worker process could not be started or talked to (the batch stops)."""


def default_workers() -> int:
    """The number of CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_chunksize(chunksize: Any) -> int | None:
    """``chunksize`` when it is None or a positive integer.

    Raises:
        ValueError: Anything else (0 and -1 were silently another size).
    """
    if chunksize is not None and (not is_integer(chunksize) or chunksize < 1):
        raise ValueError(f"chunksize must be a positive integer or None, not {chunksize!r}")
    return chunksize


def check_limits(timeout: Any, chunksize: Any) -> None:
    """:func:`check_timeout` and :func:`check_chunksize` together: what every one-or-many entry point checks at the
    call, before any input runs (the API's ``from_*`` and transform ops)."""
    check_timeout(timeout)
    check_chunksize(chunksize)


def check_timeout(timeout: float | None) -> float | None:
    """A validated timeout in seconds: ``None`` (no limit) or a finite number in ``(0, MAX_TIMEOUT]``.

    ``None`` and ``math.inf`` mean no limit (both give ``None``).

    Raises:
        ValueError: ``timeout`` is not a number, is NaN, zero or negative, or is finite and above
            :data:`MAX_TIMEOUT`.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise ValueError(f"timeout must be a number of seconds or None, not {timeout!r}")
    value = float(timeout)
    if math.isnan(value) or value <= 0:
        raise ValueError(f"timeout must be more than 0 seconds, not {timeout!r}")
    if math.isinf(value):
        return None
    if value > MAX_TIMEOUT:
        raise ValueError(f"timeout must be at most {MAX_TIMEOUT:g} seconds (or inf for no limit), not {timeout!r}")
    return value


def check_max_memory(max_memory: int | None) -> int | None:
    """A validated per-worker address-space limit in bytes: ``None`` (no limit) or an int of at least 16 MiB.

    Raises:
        ValueError: Not an integer, or below :data:`MIN_MEMORY`.
    """
    if max_memory is None:
        return None
    if not is_integer(max_memory):
        raise ValueError(f"max_memory must be a number of bytes or None, not {max_memory!r}")
    if max_memory < MIN_MEMORY:
        raise ValueError(f"max_memory must be at least {MIN_MEMORY >> 20} MiB, not {max_memory!r} bytes")
    return int(max_memory)


def effective_max_memory(max_memory: int | None) -> int | None:
    """The address-space limit a worker started now actually runs under: the lower of ``max_memory`` and this
    process's own soft ``RLIMIT_AS`` (e.g. the shell's ``ulimit -v``), which every worker inherits and must not
    exceed; ``None`` when neither limits it. This is the limit an "out of memory" error names.
    """
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):  # not POSIX
        return max_memory
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return max_memory
    return int(soft) if max_memory is None else min(int(max_memory), int(soft))


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
            :class:`TimeoutProcessPool`; other executors only stop waiting; ignored without an executor).
            ``None`` or ``math.inf``: no limit.

    Raises:
        ValueError: ``timeout`` is not a valid timeout (:func:`check_timeout`); raised on the first ``next()``.
        TimeoutError: An input took longer than ``timeout``.
        PoolError: The pool's workers could not be started or talked to.
        Exception: Whatever ``fn`` raised for the first failing input.
    """
    for outcome in execute_outcomes(fn, inputs, executor=executor, chunksize=chunksize, timeout=timeout):
        if outcome.error is not None:
            raise outcome.error
        yield outcome.value


class _ErrorsAsValues:
    """``fn`` wrapped to return ``(True, value)`` or ``(False, exception)``: a failing input is a result, not a
    task failure, for executors that log failed tasks (dask's "Compute Failed" with a traceback)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        try:
            return True, self.fn(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - handed back to execute_outcomes
            return False, error


def execute_outcomes(
    fn: Callable[[T], R],
    inputs: Iterable[T],
    executor: Any = None,
    chunksize: int | None = None,
    timeout: float | None = None,
) -> Iterator[Outcome]:
    """Like :func:`execute`, but never raises for an input: yields an :class:`Outcome` per input, in order.

    This is what batch commands use: a failing input is reported and the batch goes on. A broken pool is not an
    input's failure: :class:`PoolError` is raised.

    Raises:
        ValueError: ``timeout`` is not a valid timeout (:func:`check_timeout`).
        PoolError: A :class:`TimeoutProcessPool` could not start or talk to its workers.
    """
    timeout = check_timeout(timeout)
    return _outcomes(fn, inputs, executor, chunksize, timeout)


def _outcomes(fn, inputs, executor, chunksize, timeout) -> Iterator[Outcome]:
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
    wrapped = fn if enforced else _ErrorsAsValues(fn)

    def submit(item):
        if enforced:
            return executor.submit_with_timeout(fn, timeout, item)
        return executor.submit(wrapped, item)

    def collect(entry) -> Outcome:
        index, item, future = entry
        try:
            value = future.result(timeout=wait)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return Outcome(index, item, None, TimeoutError(f"timed out after {timeout:g} s"))
        except PoolError:
            raise
        except Exception as error:  # noqa: BLE001
            return Outcome(index, item, None, error)
        if enforced:
            return Outcome(index, item, value, None)
        ok, value = value
        return Outcome(index, item, value, None) if ok else Outcome(index, item, None, value)

    try:
        for index, item in enumerate(inputs):
            pending.append((index, item, submit(item)))
            if len(pending) >= window:
                yield collect(pending.popleft())
        while pending:
            yield collect(pending.popleft())
    finally:
        for _, _, future in pending:  # an abandoned or failed iteration leaves nothing queued behind it
            future.cancel()


# --------------------------------------------------------------------------------------------------------------
# A process pool with per-task timeouts.

# The parent's sys.path comes first, so that the worker runs the same programl as its parent (not another copy
# installed in site-packages, or none, when the working directory differs).
_WORKER_CODE = """\
import json, os, sys
sys.path[:0] = [p for p in json.loads(os.environ.get("PROGRAML_WORKER_SYS_PATH") or "[]") if p not in sys.path]
try:
    from programl.util._worker import main
except BaseException as error:
    import pickle, struct
    data = pickle.dumps((False, f"cannot import programl in the worker: {type(error).__name__}: {error}"))
    sys.stdout.buffer.write(struct.pack("<Q", len(data)) + data)
    sys.stdout.buffer.flush()
    raise SystemExit(3)
main()
"""


class _Worker:
    """One worker process (``python -c ... _worker.main()``) and the pipes to it.

    Raises:
        PoolError: The process could not be started, or did not say it is ready.
    """

    def __init__(self, max_memory: int | None = None, pass_fds: Sequence[int] = ()) -> None:
        main = sys.modules.get("__main__")
        main_file = getattr(main, "__file__", None)
        env = dict(os.environ)
        env["PROGRAML_WORKER_SYS_PATH"] = json.dumps([p or os.getcwd() for p in sys.path])
        env["PROGRAML_WORKER_MAIN"] = main_file if main_file and os.path.isfile(main_file) else ""
        # the limit in force: an inherited lower `ulimit -v` wins (and is the one an "out of memory" error names)
        env["PROGRAML_WORKER_MAX_MEMORY"] = str(effective_max_memory(max_memory) or "")
        # one BLAS thread per worker (there is a worker per CPU already); OpenBLAS also reserves memory per thread,
        # which would count against max_memory
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,  # unbuffered replies: poll() on the pipe must see every message not yet read
                env=env,
                pass_fds=tuple(pass_fds),
                start_new_session=True,  # its own process group: killing it also kills what it started (clang)
            )
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise PoolError(f"cannot start a worker process: {reason}") from error
        try:
            if not self.wait(STARTUP_TIMEOUT):
                raise PoolError(f"a worker process did not start within {STARTUP_TIMEOUT:g} s")
            ok, detail = self.receive()
        except EOFError:
            code = self._exit_code()
            self.kill()
            raise PoolError(f"a worker process exited as it started ({_how(code)})") from None
        except PoolError:
            self.kill()
            raise
        except (OSError, pickle.UnpicklingError, ValueError) as error:
            self.kill()
            raise PoolError(f"cannot talk to a worker process: {error}") from error
        if not ok:
            self.kill()
            raise PoolError(f"a worker process could not start: {detail}")

    def send(self, fn, args, kwargs) -> None:
        data = pickle.dumps((fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        _worker.write_message(self.process.stdin, data)

    def wait(self, timeout: float | None) -> bool:
        """Whether a reply (or the end of the pipe) arrived within ``timeout`` seconds (None: wait for ever)."""
        poller = select.poll()  # not select(): it fails on descriptors above 1023
        poller.register(self.process.stdout, select.POLLIN | select.POLLPRI)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if deadline is None:
                milliseconds = 86_400_000
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                milliseconds = min(86_400_000, max(1, math.ceil(remaining * 1000)))
            if poller.poll(milliseconds):
                return True

    def receive(self):
        """The next message: unpickled, or ``b""`` for the worker's "started" notice."""
        header = _read_exactly(self.process.stdout, _worker.HEADER.size)
        data = None if header is None else _read_exactly(self.process.stdout, _worker.HEADER.unpack(header)[0])
        if data is None:
            raise EOFError
        return pickle.loads(data) if data else b""

    def signal(self) -> None:
        """Kill the worker and every process it started, without waiting (safe from any thread)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        """Kill the worker and every process it started, and wait for it."""
        self.signal()
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

    def _exit_code(self) -> int | None:
        try:
            return self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return None

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except (OSError, ValueError):
                pass


def _read_exactly(stream, size: int) -> bytes | None:
    """``size`` bytes from an unbuffered pipe (None at its end)."""
    buffer = bytearray(size)
    view = memoryview(buffer)
    done = 0
    while done < size:
        count = stream.readinto(view[done:])
        if not count:
            return None
        done += count
    return bytes(buffer)


def format_size(n: int) -> str:
    """Bytes as a short size with a binary unit: ``8G``, ``512M``."""
    for unit, factor in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.3g}{unit}"
    return f"{n}"


def _how(code: int | None) -> str:
    return f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"


class TimeoutProcessPool(concurrent.futures.Executor):
    """A pool of worker processes where every task has a timeout.

    Workers are fresh ``python`` processes (not forked, so threads in this process do not matter, and not
    multiprocessing's spawn, so this works from a notebook or a script read from stdin). Functions and arguments
    must be picklable; a function defined in your ``__main__`` script works (the worker loads the script as
    ``__mp_main__`` when it needs to, as spawn does). A worker whose parent dies kills itself and what it started.

    Args:
        max_workers: Number of worker processes (default: the CPUs this process may use).
        timeout: Default seconds a task may run before its worker is killed (``None`` or ``math.inf``: no limit);
            :meth:`submit_with_timeout` sets it per task.
        max_memory: Address-space limit of each worker in bytes (``RLIMIT_AS``, inherited by the processes it
            starts, each on its own; ``None``: no limit). A lower soft ``RLIMIT_AS`` of this process (``ulimit -v``)
            is kept instead (:func:`effective_max_memory`). A task that exceeds it fails with :class:`MemoryError`
            (or, for a clang it started, a compile error saying so).
        pass_fds: File descriptors the workers inherit (e.g. a duplicate of stdin for a task that reads it).

    Raises:
        ValueError: ``max_workers``, ``timeout`` or ``max_memory`` is invalid.
    """

    def __init__(
        self,
        max_workers: int | None = None,
        timeout: float | None = None,
        max_memory: int | None = None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        if max_workers is not None and (not is_integer(max_workers) or max_workers < 1):
            raise ValueError(f"max_workers must be a positive integer, not {max_workers!r}")
        self._max_workers = int(max_workers or default_workers())
        self._timeout = check_timeout(timeout)
        self._max_memory = check_max_memory(max_memory)
        self._pass_fds = tuple(pass_fds)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._workers: set[_Worker] = set()
        self._shutdown = False
        self._terminated = False
        self._broken: PoolError | None = None
        self._lock = threading.RLock()  # re-entrant: terminate() may run in a signal handler of a submitting thread

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        return self.submit_with_timeout(fn, self._timeout, *args, **kwargs)

    def submit_with_timeout(
        self, fn: Callable[..., R], timeout: float | None, /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future:
        """Submit ``fn(*args, **kwargs)`` with its own timeout in seconds (``None`` or ``math.inf``: no limit).

        Raises:
            ValueError: ``timeout`` is invalid (:func:`check_timeout`).
            RuntimeError: The pool was shut down.
            PoolError: The pool is broken (a worker could not be started), or no thread could be started.
        """
        timeout = check_timeout(timeout)
        with self._lock:
            if self._broken is not None:
                raise self._broken
            if self._shutdown:
                raise RuntimeError("cannot submit to a pool that was shut down")
            future: concurrent.futures.Future = concurrent.futures.Future()
            self._queue.put((future, fn, args, kwargs, timeout))
            if len(self._threads) < self._max_workers:
                thread = threading.Thread(target=self._slot, name=f"programl-worker-{len(self._threads)}", daemon=True)
                try:
                    thread.start()
                except RuntimeError as error:  # "can't start new thread"
                    self._break(PoolError(f"cannot start a thread for a worker: {error}"))
                    if not self._threads:
                        raise self._broken from error
                else:
                    self._threads.append(thread)
            return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                self._cancel_queued()
            for _ in self._threads:
                self._queue.put(None)
        if wait:
            for thread in self._threads:
                thread.join()

    def __exit__(self, exc_type, exc_value, traceback) -> bool:
        """Leaving a ``with`` block normally waits for the tasks; leaving it by an exception (Ctrl-C, an abandoned
        generator) terminates them instead."""
        if exc_type is None:
            self.shutdown(wait=True)
        else:
            self.terminate()
        return False

    def terminate(self) -> None:
        """Stop now: cancel the queued tasks, kill the running ones (and what they started), wait for the threads.

        The futures of killed tasks fail with :class:`concurrent.futures.CancelledError`. This is what a batch
        does on Ctrl-C, so that it does not wait for the tasks in flight.
        """
        with self._lock:
            self._shutdown = self._terminated = True
            self._cancel_queued()
            for _ in self._threads:
                self._queue.put(None)
            workers = list(self._workers)
        for worker in workers:
            worker.signal()
        for thread in self._threads:
            thread.join(timeout=30)

    def _cancel_queued(self, error: BaseException | None = None) -> None:
        """Cancel (or fail with ``error``) every queued task; the slots' stop signals stay in the queue."""
        stops = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                stops += 1
                continue
            future = item[0]
            if error is not None and future.set_running_or_notify_cancel():
                future.set_exception(error)
            else:
                future.cancel()
        for _ in range(stops):
            self._queue.put(None)

    def _break(self, error: PoolError) -> None:
        """Mark the pool broken: every queued and later task fails with ``error``."""
        with self._lock:
            if self._broken is None:
                self._broken = error
            self._cancel_queued(self._broken)

    def _start_worker(self) -> _Worker:
        worker = _Worker(self._max_memory, self._pass_fds)
        with self._lock:
            self._workers.add(worker)
            terminated = self._terminated
        if terminated:
            worker.signal()
        return worker

    def _drop(self, worker: _Worker | None, *, kill: bool) -> None:
        if worker is None:
            return
        with self._lock:
            self._workers.discard(worker)
        if kill:
            worker.kill()
        else:
            worker.stop()

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
                if self._broken is not None:
                    future.set_exception(self._broken)
                    continue
                try:
                    if worker is None:
                        worker = self._start_worker()
                    worker = self._run(worker, future, fn, args, kwargs, timeout)
                except PoolError as error:
                    self._drop(worker, kill=True)
                    worker = None
                    self._break(error)
                    if not future.done():
                        future.set_exception(error)
                except BaseException as error:  # noqa: BLE001 - a slot must never die with its future pending
                    self._drop(worker, kill=True)
                    worker = None
                    broken = PoolError(f"internal error in the worker pool: {type(error).__name__}: {error}")
                    self._break(broken)
                    if not future.done():
                        future.set_exception(broken)
        finally:
            self._drop(worker, kill=self._terminated)

    def _run(self, worker: _Worker, future, fn, args, kwargs, timeout) -> _Worker | None:
        """Run one task on ``worker``; the worker to use next (``None``: it was killed)."""
        try:
            worker.send(fn, args, kwargs)
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            future.set_exception(error)
            return worker
        except (BrokenPipeError, OSError, ValueError):
            self._drop(worker, kill=True)
            future.set_exception(self._stopped() or WorkerCrashedError("worker process died before the task started"))
            return None
        # the worker says "started" once it has loaded the task's code (imports on a busy machine are not the task)
        loaded = worker.wait(STARTUP_TIMEOUT)
        try:
            started = worker.receive() if loaded else None
        except (EOFError, OSError, ValueError):
            started = None
        if started != b"":
            code = worker._exit_code() if loaded else None
            self._drop(worker, kill=True)
            what = f"died ({_how(code)})" if loaded else f"did not load the task within {STARTUP_TIMEOUT:g} s"
            future.set_exception(self._stopped() or WorkerCrashedError(f"worker process {what}"))
            return None
        if not worker.wait(timeout):
            self._drop(worker, kill=True)
            future.set_exception(self._stopped() or TimeoutError(f"timed out after {timeout:g} s"))
            return None
        try:
            ok, value = worker.receive()
        except (EOFError, OSError, ValueError):
            code = worker._exit_code()
            self._drop(worker, kill=True)
            memory = effective_max_memory(self._max_memory)
            limit = f"; out of memory? its limit is {format_size(memory)}" if memory else ""
            future.set_exception(self._stopped() or WorkerCrashedError(f"worker process died ({_how(code)}{limit})"))
            return None
        except Exception as error:  # noqa: BLE001 - a reply that does not unpickle here
            self._drop(worker, kill=True)
            future.set_exception(RuntimeError(f"the worker's reply could not be read: {type(error).__name__}: {error}"))
            return None
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)
        return worker

    def _stopped(self) -> BaseException | None:
        return concurrent.futures.CancelledError("the pool was terminated") if self._terminated else None
