"""The worker process of :class:`programl.util.executor.TimeoutProcessPool`.

Started as ``python -c "from programl.util._worker import main; main()"``. It reads tasks from stdin and writes
results to a private copy of stdout (fd 1 itself is pointed at stderr, so prints from task code cannot corrupt the
protocol). Each message is an 8-byte little-endian length followed by a pickle: a task is ``(fn, args, kwargs)``,
a result ``(ok, value)``.

The parent's ``sys.path`` comes in ``$PROGRAML_WORKER_SYS_PATH`` so that the same modules import here. A task whose
function lives in the parent's ``__main__`` script is unpickled by loading that script as ``__mp_main__`` first,
as multiprocessing's spawn does, but only when a task needs it.

Once a task is unpickled (which may import its module) the worker sends an empty message, "started"; the task's
timeout runs from then. Before the first task the worker says it is ready (a message ``(True, pid)``, or
``(False, reason)`` when it cannot start), after it set its address-space limit (``RLIMIT_AS`` of
``$PROGRAML_WORKER_MAX_MEMORY`` bytes, inherited by the processes a task starts, such as clang). A watchdog thread
kills the worker and everything it started when its parent dies (e.g. ``kill -9`` of the CLI), and a reply that
finds the pipe closed ends the worker quietly: an orphaned worker never prints a ``BrokenPipeError`` traceback
nor goes on burning CPU.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import runpy
import signal
import struct
import sys
import threading
import time

HEADER = struct.Struct("<Q")


def read_message(stream) -> bytes | None:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return data


def write_message(stream, data: bytes) -> None:
    stream.write(HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _load(data: bytes, main_path: str | None, state: dict):
    try:
        return pickle.loads(data)
    except (AttributeError, ModuleNotFoundError):
        if not main_path or state.get("main_loaded"):
            raise
        module = runpy.run_path(main_path, run_name="__mp_main__")
        main = type(sys)("__mp_main__")
        main.__dict__.update(module)
        sys.modules["__mp_main__"] = sys.modules["__main__"] = main
        state["main_loaded"] = True
        return pickle.loads(data)


def _limit_memory(limit: str | None) -> None:
    """Set ``RLIMIT_AS`` to ``limit`` bytes (at most the hard limit; nothing when empty)."""
    if not limit:
        return
    import resource

    try:  # numpy's BLAS reserves its buffers when loaded: do it before the limit, or it aborts under a small one
        import numpy  # noqa: F401
    except ImportError:
        pass

    size = int(limit)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        size = min(size, hard)
    resource.setrlimit(resource.RLIMIT_AS, (size, hard))


def _watch_parent(parent: int, interval: float = 0.5) -> None:
    """Kill this worker's process group (it and what it started) once its parent process is gone."""
    while True:
        time.sleep(interval)
        if os.getppid() != parent:
            try:
                os.killpg(os.getpid(), signal.SIGKILL)  # the worker leads its own process group
            finally:
                os._exit(0)


def _reply(out, payload: bytes) -> None:
    try:
        write_message(out, payload)
    except (BrokenPipeError, OSError, ValueError):  # the parent is gone: nobody wants the reply
        os._exit(0)


def main() -> None:
    out = os.fdopen(os.dup(1), "wb")
    try:
        extra_path = os.environ.get("PROGRAML_WORKER_SYS_PATH")
        if extra_path:
            sys.path[:0] = [p for p in json.loads(extra_path) if p not in sys.path]
        main_path = os.environ.get("PROGRAML_WORKER_MAIN") or None
        memory = os.environ.get("PROGRAML_WORKER_MAX_MEMORY") or None
        threading.Thread(target=_watch_parent, args=(os.getppid(),), name="parent-watchdog", daemon=True).start()
        os.dup2(2, 1)  # task output goes to stderr
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
        _limit_memory(memory)
    except Exception as error:  # noqa: BLE001 - said to the parent, which reports it
        _reply(out, pickle.dumps((False, f"{type(error).__name__}: {error}")))
        return
    _reply(out, pickle.dumps((True, os.getpid())))
    tasks = sys.stdin.buffer
    state: dict = {}
    while True:
        try:
            data = read_message(tasks)
        except OSError:
            data = None
        if data is None:
            return
        try:
            try:
                fn, args, kwargs = _load(data, main_path, state)
            finally:
                _reply(out, b"")  # "started": loading the task's code does not count against its timeout
            reply = (True, fn(*args, **kwargs))
        except MemoryError as error:
            limit = f" (limit {int(memory) >> 20}M)" if memory else ""
            reply = (False, MemoryError(f"out of memory{limit}{': ' + str(error) if str(error) else ''}"))
        except BaseException as error:  # noqa: BLE001 - every failure goes back to the caller
            reply = (False, error)
        try:
            payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # noqa: BLE001 - the result or exception does not pickle
            payload = pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error} (result not picklable)")))
        del reply
        _reply(out, payload)


if __name__ == "__main__":
    main()
