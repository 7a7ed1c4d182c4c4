"""The lazy ordered executor and the process pool with per-task timeouts (programl.util.executor)."""

from __future__ import annotations

import concurrent.futures
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from programl.util.executor import (
    PoolError,
    TimeoutProcessPool,
    WorkerCrashedError,
    check_max_memory,
    check_timeout,
    execute,
    execute_outcomes,
)


def square(x: int) -> int:
    return x * x


def fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


def sleep_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def crash(_: int) -> None:
    os._exit(7)


def pid(_: int) -> int:
    return os.getpid()


def test_sequential_in_order() -> None:
    assert list(execute(square, range(5))) == [0, 1, 4, 9, 16]


def test_lazy_consumption() -> None:
    consumed = []

    def inputs():
        for i in range(100):
            consumed.append(i)
            yield i

    results = execute(square, inputs())
    assert next(results) == 0
    assert consumed == [0]


def test_window_bounds_outstanding_inputs() -> None:
    consumed = []

    def inputs():
        for i in range(100):
            consumed.append(i)
            yield i

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = execute(square, inputs(), executor=pool, chunksize=4)
        assert next(results) == 0
        assert len(consumed) == 4


def test_first_error_is_raised() -> None:
    results = execute(fail_on_three, range(5))
    assert [next(results) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="three"):
        next(results)


def test_outcomes_report_errors_and_go_on() -> None:
    outcomes = list(execute_outcomes(fail_on_three, range(5)))
    assert [o.index for o in outcomes] == [0, 1, 2, 3, 4]
    assert [o.ok for o in outcomes] == [True, True, True, False, True]
    assert isinstance(outcomes[3].error, ValueError)
    assert outcomes[4].value == 4


def test_thread_pool_executor_works() -> None:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert list(execute(square, range(20), executor=pool)) == [x * x for x in range(20)]


def test_process_pool_in_order() -> None:
    with TimeoutProcessPool(2) as pool:
        assert list(execute(square, range(30), executor=pool, chunksize=5)) == [x * x for x in range(30)]


def test_process_pool_kills_timed_out_task_and_goes_on() -> None:
    with TimeoutProcessPool(1) as pool:
        outcomes = list(execute_outcomes(sleep_for, [0.0, 30.0, 0.0], executor=pool, timeout=1.0))
    assert [o.ok for o in outcomes] == [True, False, True]
    assert isinstance(outcomes[1].error, TimeoutError)


def test_process_pool_survives_a_crashing_worker() -> None:
    with TimeoutProcessPool(1) as pool:
        crashed = pool.submit(crash, 0)
        with pytest.raises(WorkerCrashedError, match="exit code 7"):
            crashed.result()
        assert pool.submit(square, 3).result() == 9


def test_process_pool_runs_in_other_processes() -> None:
    with TimeoutProcessPool(2) as pool:
        pids = set(execute(pid, range(8), executor=pool))
    assert os.getpid() not in pids


def test_process_pool_propagates_exceptions() -> None:
    with TimeoutProcessPool(1) as pool:
        with pytest.raises(ValueError, match="three"):
            pool.submit(fail_on_three, 3).result()


def test_submit_after_shutdown_fails() -> None:
    pool = TimeoutProcessPool(1)
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(square, 1)


def test_pool_works_from_a_script_read_from_stdin() -> None:
    """The default pool must not depend on re-importing __main__ (notebooks, `python - < script`)."""
    import subprocess
    import sys

    script = (
        "from programl.util.executor import TimeoutProcessPool, execute\n"
        "import operator, functools\n"
        "with TimeoutProcessPool(2) as pool:\n"
        "    print(list(execute(functools.partial(operator.mul, 3), range(4), executor=pool)))\n"
    )
    result = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[0, 3, 6, 9]"


def test_pool_runs_functions_from_a_main_script(tmp_path) -> None:
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(
        "from programl.util.executor import TimeoutProcessPool, execute\n"
        "def triple(x):\n    return 3 * x\n"
        "if __name__ == '__main__':\n"
        "    with TimeoutProcessPool(1) as pool:\n"
        "        print(list(execute(triple, range(3), executor=pool)))\n"
    )
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
        env={**__import__("os").environ, "PYTHONPATH": str(Path.cwd())},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[0, 3, 6]"


def test_task_output_does_not_corrupt_results() -> None:
    with TimeoutProcessPool(1) as pool:
        assert pool.submit(print, "noise").result() is None
        assert pool.submit(square, 5).result() == 25


# --------------------------------------------------------------------------------------------------------------
# Hostile use (issue 12): bad timeouts, workers that cannot start, memory limits, Ctrl-C, orphaned workers.


@pytest.mark.parametrize("timeout", [-5, -1, 0, float("nan"), 1e300, "3", True])
def test_bad_timeouts_raise_value_error_at_every_entry_point(timeout) -> None:
    with pytest.raises(ValueError, match="timeout"):
        TimeoutProcessPool(1, timeout=timeout)
    with pytest.raises(ValueError, match="timeout"):
        execute_outcomes(square, [1, 2], timeout=timeout)
    with pytest.raises(ValueError, match="timeout"):
        list(execute(square, [1, 2], executor=concurrent.futures.ThreadPoolExecutor(1), timeout=timeout))
    with TimeoutProcessPool(1) as pool:
        with pytest.raises(ValueError, match="timeout"):
            pool.submit_with_timeout(square, timeout, 3)


def test_infinite_timeout_means_no_limit() -> None:
    assert check_timeout(math.inf) is None and check_timeout(None) is None and check_timeout(2) == 2.0
    with TimeoutProcessPool(1, timeout=math.inf) as pool:
        assert list(execute(square, range(3), executor=pool, timeout=math.inf)) == [0, 1, 4]


def test_bad_pool_arguments() -> None:
    for workers in (0, -2, 1.5, True, "2"):
        with pytest.raises(ValueError, match="max_workers"):
            TimeoutProcessPool(workers)
    for memory in (1000, True, 1.5e9, "1073741824"):
        with pytest.raises(ValueError, match="max_memory"):
            TimeoutProcessPool(1, max_memory=memory)
    assert check_max_memory(None) is None and check_max_memory(1 << 30) == 1 << 30


def allocate(megabytes: int) -> int:
    return len(bytearray(megabytes << 20))


def test_memory_limit_fails_the_task_not_the_pool() -> None:
    with TimeoutProcessPool(1, max_memory=1 << 30) as pool:
        outcomes = list(execute_outcomes(allocate, [1, 4096, 2], executor=pool, timeout=60))
    assert [o.ok for o in outcomes] == [True, False, True]
    assert isinstance(outcomes[1].error, MemoryError) and "out of memory (limit 1024M)" in str(outcomes[1].error)


_EMFILE_SCRIPT = """
import resource, sys
from programl.util.executor import PoolError, TimeoutProcessPool, execute_outcomes
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
pool = TimeoutProcessPool(2)
try:
    print(sum(o.value for o in execute_outcomes(abs, range(-6, 0), executor=pool)))
except PoolError as error:
    print("PoolError:", error)
finally:
    pool.terminate()
"""


@pytest.mark.parametrize("limit", [6, 9, 12])
def test_a_worker_that_cannot_start_fails_the_batch_instead_of_hanging(limit) -> None:
    """Issue 12 item 1: with too few file descriptors Popen fails in a slot thread; this used to hang for ever."""
    result = subprocess.run(
        [sys.executable, "-c", _EMFILE_SCRIPT, str(limit)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    # a few descriptors may be enough for one worker (then the batch is done), never for a hang
    assert result.stdout.strip() in ("21", "PoolError: cannot start a worker process: Too many open files")


def test_a_worker_that_exits_as_it_starts_is_a_pool_error(monkeypatch) -> None:
    false = shutil.which("false")
    if false is None:
        pytest.skip("false not installed")
    monkeypatch.setattr(sys, "executable", false)  # a "python" that exits at once, saying nothing
    with TimeoutProcessPool(1) as pool:
        with pytest.raises(PoolError, match=r"exited as it started \(exit code 1\)"):
            list(execute_outcomes(square, range(3), executor=pool))
        with pytest.raises(PoolError):  # broken for good: later submissions fail at once
            pool.submit(square, 1)


def test_terminate_kills_running_tasks_at_once() -> None:
    pool = TimeoutProcessPool(2)
    futures = [pool.submit(sleep_for, 60.0) for _ in range(3)]
    deadline = time.monotonic() + 30
    while not all(f.running() for f in futures[:2]) and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [w.process.pid for w in pool._workers]
    pool.terminate()
    assert all(f.done() for f in futures) and futures[2].cancelled()
    for future in futures[:2]:
        with pytest.raises(concurrent.futures.CancelledError):
            future.result()
    for worker_pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(worker_pid, 0)


def test_errors_come_back_as_values_through_other_executors() -> None:
    """What keeps dask from logging "Compute Failed" with a traceback for an input that merely fails."""
    seen = []

    class Recording(concurrent.futures.ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            future = super().submit(fn, *args, **kwargs)
            seen.append(future)
            return future

    with Recording(2) as pool:
        outcomes = list(execute_outcomes(fail_on_three, range(5), executor=pool))
    assert [o.ok for o in outcomes] == [True, True, True, False, True]
    assert isinstance(outcomes[3].error, ValueError)
    assert all(f.exception() is None for f in seen)  # no task failed as far as the executor knows


def test_leaving_the_pool_by_an_exception_kills_its_tasks() -> None:
    with pytest.raises(KeyboardInterrupt):
        with TimeoutProcessPool(1) as pool:
            future = pool.submit(sleep_for, 60.0)
            assert pool.submit(square, 2) is not None
            deadline = time.monotonic() + 30
            while not future.running() and time.monotonic() < deadline:
                time.sleep(0.05)
            raise KeyboardInterrupt
    with pytest.raises(concurrent.futures.CancelledError):  # killed, not waited for (it would return 60.0)
        future.result(timeout=0)
