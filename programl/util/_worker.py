"""The worker process of :class:`programl.util.executor.TimeoutProcessPool`.

Started as ``python -c "from programl.util._worker import main; main()"``. It reads tasks from stdin and writes
results to a private copy of stdout (fd 1 itself is pointed at stderr, so prints from task code cannot corrupt the
protocol). Each message is an 8-byte little-endian length followed by a pickle: a task is ``(fn, args, kwargs)``,
a result ``(ok, value)``.

The parent's ``sys.path`` comes in ``$PROGRAML_WORKER_SYS_PATH`` so that the same modules import here. A task whose
function lives in the parent's ``__main__`` script is unpickled by loading that script as ``__mp_main__`` first,
as multiprocessing's spawn does, but only when a task needs it.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import runpy
import struct
import sys

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


def main() -> None:
    extra_path = os.environ.get("PROGRAML_WORKER_SYS_PATH")
    if extra_path:
        sys.path[:0] = [p for p in json.loads(extra_path) if p not in sys.path]
    main_path = os.environ.get("PROGRAML_WORKER_MAIN") or None
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # task output goes to stderr
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
    tasks = sys.stdin.buffer
    state: dict = {}
    while True:
        data = read_message(tasks)
        if data is None:
            return
        try:
            fn, args, kwargs = _load(data, main_path, state)
            reply = (True, fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - every failure goes back to the caller
            reply = (False, error)
        try:
            payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # noqa: BLE001 - the result or exception does not pickle
            payload = pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error} (result not picklable)")))
        write_message(out, payload)


if __name__ == "__main__":
    main()
