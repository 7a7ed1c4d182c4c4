"""The lazy ordered executor and the process pool with per-task timeouts (programl.util.executor)."""

from __future__ import annotations

import concurrent.futures
import os
import time
from pathlib import Path

import pytest

from programl.util.executor import TimeoutProcessPool, WorkerCrashedError, execute, execute_outcomes


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
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                            cwd=str(tmp_path), env={**__import__("os").environ, "PYTHONPATH": str(Path.cwd())})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[0, 3, 6]"


def test_task_output_does_not_corrupt_results() -> None:
    with TimeoutProcessPool(1) as pool:
        assert pool.submit(print, "noise").result() is None
        assert pool.submit(square, 5).result() == 25
