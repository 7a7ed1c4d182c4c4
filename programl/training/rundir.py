"""Run directories (the original's ``logs/<model>/<analysis>/<run_id>/``, docs/spec/tasks.md#run-directories): a
checked ``config.json`` (:func:`read_run_config`), one process at a time (:class:`RunLock`, which also removes what an
interrupted atomic write left), and the research data beside a checkout (:func:`shared_data`, from
:mod:`programl.data.download`); :func:`check_same_run` refuses to resume a run with other options."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from programl.data.download import shared_data
from programl.exceptions import ProgramlError, UsageError
from programl.util.fs import read_json

__all__ = ["RunLock", "check_same_run", "read_run_config", "shared_data"]


def read_run_config(run_dir: str | os.PathLike, task: str, required: Sequence[str] = ()) -> dict[str, Any]:
    """The ``config.json`` of a run of ``programl train <task>``, checked (``{"model": {...}, ...}``).

    Raises:
        ProgramlError: One line: the file is missing, is not JSON (with its line and column), or is the run of
            another task (its ``task`` entry, or a ``model`` without the ``required`` keys).
    """
    path = Path(run_dir) / "config.json"
    what = f"not a `programl train {task}` run"
    if not path.exists():
        raise ProgramlError(f"{run_dir}: no config.json ({what})")
    try:
        saved = read_json(path)
    except ProgramlError as error:  # a directory, or not JSON (with its line and column)
        raise ProgramlError(f"{error}; damaged, or {what}") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("model"), dict):
        raise ProgramlError(f'{path}: no "model" options ({what})')
    other = saved.get("task")
    if other is not None and other != task:
        raise ProgramlError(f"{run_dir}: a `programl train {other}` run, {what}")
    missing = [key for key in required if key not in saved["model"]]
    if missing:
        raise ProgramlError(f"{path}: no {', '.join(missing)} among the options ({what})")
    return saved


class RunLock:
    """An exclusive lock on a run directory, held while a process trains or evaluates in it.

    Taken with ``flock`` on ``<run_dir>/.lock`` (released by the kernel when the process dies, even by ``kill -9``).
    Whoever holds it removes the temporary files that an interrupted atomic write left behind (``.<name>.*.tmp``,
    :mod:`programl.util.fs`), which no other process can be writing.

    Raises (on entering):
        ProgramlError: Another process works in the directory.
        OSError: The directory cannot be created or written (read-only, a file in the way ...).
    """

    def __init__(self, run_dir: str | os.PathLike, enabled: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.enabled = enabled
        self._file = None

    def __enter__(self) -> RunLock:
        if not self.enabled:
            return self
        import fcntl

        self.run_dir.mkdir(parents=True, exist_ok=True)
        handle = open(self.run_dir / ".lock", "a+")  # noqa: SIM115 - held until __exit__
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise ProgramlError(
                f"{self.run_dir}: in use by another programl train or evaluate (wait for it, or "
                "choose another --run-dir; `programl evaluate --out DIR` only reads a run in use)"
            ) from None
        self._file = handle
        for stale in self.run_dir.rglob(".*.tmp"):
            if stale.is_file():
                stale.unlink(missing_ok=True)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._file is not None:
            self._file.close()  # releases the lock
            self._file = None


def check_same_run(
    run_dir: str | os.PathLike,
    task: str,
    config: Mapping[str, Any],
    *,
    paths: Mapping[str, str | os.PathLike] | None = None,
    ignore: Sequence[str] = (),
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Refuse to resume a run in ``run_dir`` whose ``config.json`` holds other options than ``config``.

    Args:
        run_dir: A run directory of ``programl train <task>`` (its ``config.json`` is read with
            :func:`read_run_config`).
        task: The task name.
        config: This run's options (the ``model`` entry of ``config.json``).
        paths: Data directories of this run by ``config.json`` key (``dataset``, ``data_dir`` ...), compared once
            resolved.
        ignore: Options that may change on resumption (the epoch budget).
        defaults: The value of an option that runs written before it existed are taken to have.

    Returns:
        The saved ``config.json``.

    Raises:
        ProgramlError: ``config.json`` is missing, damaged or of another task.
        UsageError: Some options differ (all of them named): the CLI exits 2.
    """
    saved = read_run_config(run_dir, task)
    defaults = defaults or {}
    changed = sorted(
        key for key in config if key not in ignore and saved["model"].get(key, defaults.get(key)) != config[key]
    )
    for name, path in (paths or {}).items():
        if Path(str(saved.get(name))).resolve() != Path(path).resolve():
            changed.append(name)
    if changed:
        raise UsageError(
            f"{run_dir} holds a run with other options ({', '.join(changed)}): use another --run-dir, or --restart"
        )
    return saved
