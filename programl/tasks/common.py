"""What every training loop shares (SPEC §6.1 protocol, §6.5, §6.6; DESIGN §1 ``tasks/``, §6 CLI conventions).

* command-line options: :func:`add_runtime_arguments` (``--device``, ``--threads``, ``--seed``, ``-q``) and
  :func:`add_run_arguments` (``--run-dir``, ``--epochs``, ``--restart``); :func:`check_options` refuses nonsense
  numbers (usage error, exit 2);
* run directories: :func:`read_run_config` (a checked ``config.json``), :class:`RunLock` (one process at a time;
  removes what an interrupted atomic write left);
* devices and seeding: :func:`resolve_device` (CUDA when available, else CPU), :func:`seed_everything`,
  :func:`rng_state` / :func:`set_rng_state`;
* checkpoints: :func:`save_checkpoint` (atomic: model, optimizer, epoch, best metric, RNG states, anything else) and
  :func:`load_checkpoint` (resumption);
* logs: :class:`EpochLog` (one JSON line and one CSV row per epoch; truncated to the checkpoint on resumption),
  :func:`write_json`;
* pictures (matplotlib, Agg backend): :func:`plot_learning_curves`, :func:`plot_confusion_matrix`;
* progress: :func:`progress` (tqdm on stderr, main process only), :func:`info`;
* distributed data parallel for ``torchrun``: :func:`init_distributed` -> :class:`Distributed` (gloo on CPU, nccl on
  GPU; rank, world size, barrier, all-reduce, model wrapping) and :func:`shard` (``DistributedSampler``-style).

Importing this module does not import torch (``programl --help`` must stay fast); the functions import it.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import random
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError
from programl.util.fs import atomic_write_bytes
from programl.util.progress import message as _message
from programl.util.progress import progress as _progress

__all__ = [
    "Distributed",
    "EpochLog",
    "RunLock",
    "UsageError",
    "add_data_dir_arguments",
    "add_run_arguments",
    "add_runtime_arguments",
    "check_options",
    "configure_threads",
    "info",
    "init_distributed",
    "load_checkpoint",
    "plan_graph_batches",
    "plot_confusion_matrix",
    "plot_learning_curves",
    "progress",
    "read_run_config",
    "resolve_device",
    "run_task_module",
    "rng_state",
    "save_checkpoint",
    "seed_everything",
    "set_rng_state",
    "shard",
    "shared_data",
    "unwrap",
    "write_json",
]


class UsageError(ProgramlError):
    """A command-line option is wrong (the CLI prints usage and exits 2)."""


# ---------------------------------------------------------------------------------------------------------------
# Options


def add_runtime_arguments(parser: argparse.ArgumentParser, seed: int = 204) -> None:
    """``--device``, ``--threads``, ``--seed`` and ``-q``."""
    group = parser.add_argument_group("runtime")
    group.add_argument("--device", default="auto", metavar="DEV",
                       help="auto (CUDA when available, else CPU), cpu, cuda or cuda:N (default: auto)")
    group.add_argument("--threads", type=int, default=0, metavar="N",
                       help="CPU threads for torch (default: torch's choice)")
    group.add_argument("--seed", type=int, default=seed, help=f"random seed (default: {seed})")
    group.add_argument("-q", "--quiet", action="store_true", help="no progress bars")


def add_run_arguments(parser: argparse.ArgumentParser, task: str, epochs: int, default_dir: str | None = None) -> None:
    """``--run-dir``, ``--epochs`` and ``--restart`` (``default_dir``: how ``--help`` names the default run directory,
    when the task derives it from other options)."""
    group = parser.add_argument_group("run")
    shown = default_dir or os.path.join("runs", task)
    group.add_argument("--run-dir", default=os.path.join("runs", task), metavar="DIR",
                       help=f"checkpoints, logs and plots (default: {shown}); an unfinished run there is resumed")
    group.add_argument("--epochs", type=int, default=epochs, metavar="N", help=f"training epochs (default: {epochs})")
    group.add_argument("--restart", action="store_true", help="ignore the checkpoints in --run-dir and start over")


def add_data_dir_arguments(group, task: str) -> None:
    """``--data-dir`` (derived data: graphs, default ``~/.cache/programl/<task>``) and ``-j`` (build workers)."""
    default = os.path.join("~", ".cache", "programl", task)
    group.add_argument("--data-dir", default=default, metavar="DIR",
                       help=f"where graphs are built (default: {default})")
    group.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                       help="worker processes for building graphs (default: all CPUs)")


#: Options that must be within a range, by ``argparse`` destination: (lowest, highest, what the range is called).
_RANGES: dict[str, tuple[float, float | None, str]] = {
    "lr": (math.ulp(0.0), None, "positive"),
    "weight_decay": (0.0, None, ">= 0"),
    "time_limit": (math.ulp(0.0), None, "positive (minutes)"),
    "checkpoint_minutes": (0.0, None, ">= 0"),
    "dropout": (0.0, 1.0 - 1e-9, "in [0, 1)"),
    "message_dropout": (0.0, 1.0 - 1e-9, "in [0, 1)"),
    "state_dropout": (0.0, 1.0 - 1e-9, "in [0, 1)"),
    "aux_dropout": (0.0, 1.0 - 1e-9, "in [0, 1)"),
    "intermediate_loss_weight": (0.0, None, ">= 0"),
    "threads": (0, 4096, "in 0..4096 (0: torch's choice)"),
    "jobs": (0, 4096, "in 0..4096 (0: all CPUs)"),
    "epochs": (1, 10**9, "in 1..10^9"),
}
_SEED_LIMIT = 2**32  # numpy's legacy seeding takes 0..2^32-1; torch and Python take those too


def check_options(args: argparse.Namespace) -> None:
    """Refuse nonsense numbers before anything runs (DESIGN §6: a wrong option exits 2).

    Every float option must be finite; the options of :data:`_RANGES` (learning rate, weight decay, time limit,
    checkpoint interval, dropouts, threads, jobs, epochs) must be in their range where the task has them; every
    ``*seed`` option must be in 0..2^32-1.

    Raises:
        UsageError: The first option out of range, named as on the command line.
    """
    for name, value in sorted(vars(args).items()):
        option = "--" + name.replace("_", "-")
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{option} must be a finite number, not {value}")
        if name.endswith("seed") and isinstance(value, int) and not 0 <= value < _SEED_LIMIT:
            raise UsageError(f"{option} must be in 0..{_SEED_LIMIT - 1}")
        if name in _RANGES and isinstance(value, (int, float)) and not isinstance(value, bool):
            low, high, words = _RANGES[name]
            if value < low or (high is not None and value > high):
                raise UsageError(f"{option} must be {words}, not {value:g}")


def read_run_config(run_dir: str | os.PathLike, task: str, required: Sequence[str] = ()) -> dict[str, Any]:
    """The ``config.json`` of a run of ``programl train <task>``, checked (``{"model": {...}, ...}``).

    Raises:
        ProgramlError: One line: the file is missing, is not JSON (with its line and column), or is the run of
            another task (its ``task`` entry, or a ``model`` without the ``required`` keys).
    """
    path = Path(run_dir) / "config.json"
    what = f"not a `programl train {task}` run"
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProgramlError(f"{run_dir}: no config.json ({what})") from None
    except IsADirectoryError:
        raise ProgramlError(f"{path}: a directory, not a file ({what})") from None
    except UnicodeDecodeError as error:
        raise ProgramlError(f"{path}: not JSON ({error.reason}); {what}?") from None
    except json.JSONDecodeError as error:
        raise ProgramlError(
            f"{path}:{error.lineno}:{error.colno}: not JSON ({error.msg}); damaged, or {what}"
        ) from None
    if not isinstance(saved, dict) or not isinstance(saved.get("model"), dict):
        raise ProgramlError(f"{path}: no \"model\" options ({what})")
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
            raise ProgramlError(f"{self.run_dir}: in use by another programl train or evaluate (wait for it, or "
                                "choose another --run-dir)") from None
        self._file = handle
        for stale in self.run_dir.rglob(".*.tmp"):
            if stale.is_file():
                stale.unlink(missing_ok=True)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._file is not None:
            self._file.close()  # releases the lock
            self._file = None


def shared_data(name: str) -> Path | None:
    """``$PROGRAML_SHARED_DATA/<name>`` or ``../shared/data/<name>`` (the research data beside a checkout), if there."""
    shared = os.environ.get("PROGRAML_SHARED_DATA")
    for candidate in ([Path(shared) / name] if shared else []) + [Path("..") / "shared" / "data" / name]:
        if candidate.exists():
            return candidate.resolve()
    return None


# ---------------------------------------------------------------------------------------------------------------
# Devices, threads, seeds


def resolve_device(spec: str = "auto", local_rank: int | None = None):
    """The ``torch.device`` for ``--device``: ``auto`` = ``cuda:<local_rank or 0>`` when CUDA is available, else CPU.

    Raises:
        UsageError: CUDA was asked for but is not available, or the name is not a device.
    """
    import torch

    spec = (spec or "auto").strip().lower()
    if spec == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", local_rank or 0)
        return torch.device("cpu")
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError):
        raise UsageError(f"--device {spec!r} is not a device (auto, cpu, cuda, cuda:N)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError("--device cuda: CUDA is not available on this machine (use --device cpu)")
        if device.index is None:
            device = torch.device("cuda", local_rank or 0)
    return device


def configure_threads(threads: int) -> None:
    """``torch.set_num_threads(threads)`` when ``threads`` > 0, and flush denormal floats to zero on CPUs.

    Denormals (GRU states and gradients that decay towards zero) make CPU arithmetic an order of magnitude slower;
    flushing them changes results by less than the smallest normal float. On a CPU shared with other work, one
    thread per process is often faster than several.
    """
    import torch

    if threads and threads > 0:
        torch.set_num_threads(threads)
    torch.set_flush_denormal(True)


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy and torch (CPU and CUDA)."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    """The states of Python's ``random``, numpy's global generator and torch's CPU (and CUDA) generators."""
    import numpy as np
    import torch

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore what :func:`rng_state` returned."""
    import numpy as np
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


# ---------------------------------------------------------------------------------------------------------------
# Checkpoints


def unwrap(model):
    """The module inside a ``DistributedDataParallel`` wrapper (or the model itself)."""
    return getattr(model, "module", model)


def save_checkpoint(
    path: str | os.PathLike,
    *,
    model,
    optimizer=None,
    epoch: int,
    best_metric: float | None = None,
    best_epoch: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write a checkpoint atomically (a crash never leaves a half-written file).

    Holds the model's ``state_dict`` (unwrapped from DDP), the optimizer's, ``epoch`` (the last finished epoch),
    the best validation metric so far and its epoch, the RNG states (:func:`rng_state`) and ``extra``.
    """
    import torch

    payload = {
        "model": unwrap(model).state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "epoch": epoch,
        "best_metric": best_metric,
        "best_epoch": best_epoch,
        "rng": rng_state(),
        "extra": dict(extra or {}),
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return _write_bytes(path, buffer.getvalue())


def _write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """:func:`atomic_write_bytes`, whose ``OSError`` names the file (a write to a full disk does not say which)."""
    try:
        return atomic_write_bytes(path, data)
    except OSError as error:
        if error.filename is None and error.errno is not None:
            raise OSError(error.errno, error.strerror or str(error), str(path)) from None
        raise


def load_checkpoint(
    path: str | os.PathLike,
    *,
    model=None,
    optimizer=None,
    map_location: Any = "cpu",
    restore_rng: bool = True,
) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` into ``model`` / ``optimizer`` (when given).

    Returns:
        The checkpoint's dictionary (``epoch``, ``best_metric``, ``best_epoch``, ``extra`` ...).

    Raises:
        ProgramlError: The file is missing, is not a readable checkpoint, or holds a model of other options (one
            line each; the file is not changed).
    """
    import torch

    path = Path(path)
    if not path.is_file():
        raise ProgramlError(f"{path}: no checkpoint (train first, or choose another --checkpoint)")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=False)
    except OSError:
        raise
    except Exception as error:  # noqa: BLE001 - unpickling garbage raises anything
        raise ProgramlError(f"{path}: not a readable checkpoint ({_first_sentence(error)})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("model"), Mapping) \
            or not isinstance(payload.get("epoch"), int) or not isinstance(payload.get("extra", {}), Mapping):
        raise ProgramlError(f"{path}: not a programl checkpoint")
    payload.setdefault("extra", {})
    try:
        if model is not None:
            unwrap(model).load_state_dict(payload["model"])
        if optimizer is not None and payload.get("optimizer") is not None:
            optimizer.load_state_dict(payload["optimizer"])
        if restore_rng and payload.get("rng"):
            set_rng_state(payload["rng"])
    except (RuntimeError, KeyError, ValueError, TypeError, IndexError) as error:
        raise ProgramlError(f"{path}: a checkpoint of another model or options ({_first_sentence(error)}); use "
                            "another --run-dir, or --restart") from None
    return payload


def _first_sentence(error: BaseException) -> str:
    """The first line of an error message, cut at its first sentence (torch's messages run on)."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    head, dot, _ = text.partition(". ")
    return (head + dot).strip()[:200]


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented JSON, atomically."""
    return _write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n").encode("utf-8"))


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# ---------------------------------------------------------------------------------------------------------------
# Per-epoch log


class EpochLog:
    """One record per epoch, kept as JSON lines (``<name>.jsonl``) and as CSV (``<name>.csv``).

    Both files are rewritten atomically after each :meth:`append`, so they always agree and never hold a torn line.
    On resumption, :meth:`truncate` drops the records after the checkpoint's epoch.

    Args:
        directory: Where the files live (created).
        name: File stem (default ``log``).
        enabled: False on non-main DDP processes: records are kept in memory, nothing is written.
        load: Read the records already there (resumption); False starts an empty log (``--restart``).

    Raises:
        ProgramlError: ``<name>.jsonl`` holds a line that is not a per-epoch JSON record (``file:line:col``).
    """

    def __init__(
        self, directory: str | os.PathLike, name: str = "log", enabled: bool = True, load: bool = True
    ) -> None:
        self.directory = Path(directory)
        self.jsonl = self.directory / f"{name}.jsonl"
        self.csv = self.directory / f"{name}.csv"
        self.enabled = enabled
        self.records: list[dict[str, Any]] = []
        if load and self.jsonl.is_file():
            self.records = self._read()

    def _read(self) -> list[dict[str, Any]]:
        """The records of ``<name>.jsonl``; a damaged file is a :class:`ProgramlError` that says where."""
        try:
            text = self.jsonl.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise ProgramlError(
                f"{self.jsonl}: not a log of JSON lines ({error.reason}); start over with --restart"
            ) from None
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ProgramlError(f"{self.jsonl}:{number}:{error.colno}: not a JSON record ({error.msg}); start over "
                                    "with --restart") from None
            if not isinstance(record, dict) or not isinstance(record.get("epoch"), int):
                raise ProgramlError(f"{self.jsonl}:{number}:1: not a per-epoch record (no integer \"epoch\"); start "
                                    "over with --restart")
            records.append(record)
        return records

    def truncate(self, epoch: int) -> None:
        """Keep only the records with ``epoch <= epoch`` (resumption from a checkpoint of that epoch)."""
        self.records = [r for r in self.records if r["epoch"] <= epoch]
        self._write()

    def append(self, record: Mapping[str, Any]) -> None:
        self.records.append(dict(record))
        self._write()

    def _write(self) -> None:
        if not self.enabled:
            return
        lines = [json.dumps(r, sort_keys=True, default=_jsonable) for r in self.records]
        _write_bytes(self.jsonl, "".join(line + "\n" for line in lines).encode("utf-8"))
        columns: list[str] = []
        for record in self.records:
            columns.extend(k for k in record if k not in columns and not isinstance(record[k], (list, dict)))
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for record in self.records:
            writer.writerow({k: record.get(k, "") for k in columns})
        _write_bytes(self.csv, out.getvalue().encode("utf-8"))


# ---------------------------------------------------------------------------------------------------------------
# Batches


def plan_graph_batches(
    sizes: Sequence[int],
    order: Sequence[int],
    max_nodes: int,
    max_graphs: int | None = None,
    min_graphs: int = 1,
) -> list[list[int]]:
    """Group the examples ``order`` (indices into ``sizes``) into batches, keeping their order.

    A batch closes when the next example would take it over ``max_nodes`` nodes or past ``max_graphs`` graphs; an
    example larger than ``max_nodes`` is a batch of its own. With ``min_graphs=2`` (training with BatchNorm, whose
    batch statistics need two samples) a batch of one example is merged into the batch before it (or after it, for
    the first).
    """
    batches: list[list[int]] = []
    current: list[int] = []
    nodes = 0
    for i in order:
        size = int(sizes[i])
        if current and (nodes + size > max_nodes or (max_graphs is not None and len(current) >= max_graphs)):
            batches.append(current)
            current, nodes = [], 0
        current.append(int(i))
        nodes += size
    if current:
        batches.append(current)
    if min_graphs > 1 and len(batches) > 1:
        merged: list[list[int]] = []
        for batch in batches:
            if merged and (len(batch) < min_graphs or len(merged[-1]) < min_graphs):
                merged[-1].extend(batch)
            else:
                merged.append(batch)
        batches = merged
    return batches


# ---------------------------------------------------------------------------------------------------------------
# Plots


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_learning_curves(
    records: Sequence[Mapping[str, Any]],
    path: str | os.PathLike,
    *,
    title: str = "",
    metrics: Sequence[str] | None = None,
    splits: Sequence[str] = ("train", "val", "test"),
    mark_epoch: int | None = None,
) -> Path:
    """A PNG with one panel per metric and one line per split, from per-epoch records.

    Records hold ``epoch`` and keys ``<split>_<metric>`` (``train_loss``, ``val_accuracy`` ...).

    Args:
        records: The per-epoch log (:attr:`EpochLog.records`).
        path: The PNG to write (atomically).
        title: Figure title.
        metrics: Metrics to draw (default: every ``<split>_<metric>`` found, ``loss`` first).
        splits: Prefixes to look for.
        mark_epoch: Draw a dashed vertical line at this epoch (e.g. the epoch chosen on validation).
    """
    plt = _pyplot()
    if metrics is None:
        found: list[str] = []
        for record in records:
            for key, value in record.items():
                split, _, metric = key.partition("_")
                if split in splits and metric and metric not in found and isinstance(value, (int, float)):
                    found.append(metric)
        metrics = sorted(found, key=lambda m: (m != "loss", found.index(m)))
    metrics = list(metrics) or ["loss"]
    columns = min(3, len(metrics))
    rows = math.ceil(len(metrics) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.4 * rows), squeeze=False)
    epochs = [r.get("epoch") for r in records]
    for ax, metric in zip(axes.flat, metrics):
        for split in splits:
            key = f"{split}_{metric}"
            points = [(e, r[key]) for e, r in zip(epochs, records)
                      if key in r and isinstance(r[key], (int, float)) and math.isfinite(r[key])]
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, marker="." if len(xs) < 40 else None, label=split)
        if mark_epoch is not None:
            ax.axvline(mark_epoch, color="grey", linestyle="--", linewidth=1)
        ax.set_title(metric)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return _save_figure(plt, fig, path)


def plot_confusion_matrix(
    matrix: Sequence[Sequence[int]],
    path: str | os.PathLike,
    *,
    labels: Sequence[str] | None = None,
    title: str = "",
) -> Path:
    """A PNG of a confusion matrix (rows = true class, columns = predicted), coloured by row-normalised rate.

    Counts are printed in the cells of matrices up to 12 x 12; larger ones (POJ-104's 104 classes) are drawn as a
    heat map with sparse tick labels.
    """
    import numpy as np

    plt = _pyplot()
    cm = np.asarray(matrix, dtype=np.int64)
    n = cm.shape[0]
    rates = cm / np.maximum(cm.sum(axis=1, keepdims=True), 1)
    size = 4.2 if n <= 12 else 9.0
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    image = ax.imshow(rates, cmap="Blues", vmin=0.0, vmax=1.0)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="fraction of the true class")
    names = list(labels) if labels is not None else [str(i) for i in range(n)]
    if n <= 12:
        ticks = list(range(n))
        for i in range(n):
            for j in range(n):
                ax.text(j, i, f"{cm[i, j]}", ha="center", va="center",
                        color="white" if rates[i, j] > 0.5 else "black")
    else:
        step = max(1, n // 13)
        ticks = list(range(0, n, step))
    ax.set_xticks(ticks, [names[t] for t in ticks])
    ax.set_yticks(ticks, [names[t] for t in ticks])
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(title or f"confusion matrix ({int(cm.sum())} examples)")
    fig.tight_layout()
    return _save_figure(plt, fig, path)


def _save_figure(plt, fig, path: str | os.PathLike) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return _write_bytes(path, buffer.getvalue())


# ---------------------------------------------------------------------------------------------------------------
# Progress and messages


def progress(items: Iterable, total: int | None = None, description: str = "", enabled: bool = True,
             unit: str = "batch") -> Iterator:
    """A tqdm progress bar on stderr (:func:`programl.util.progress.progress`: none when ``enabled`` is False, e.g.
    ``-q`` or a non-main DDP process, and none when stderr is not a terminal)."""
    return _progress(items, total, description, enabled=enabled, unit=unit)


def info(message: str, enabled: bool = True) -> None:
    """Print a line on stderr without breaking a progress bar (main process only)."""
    _message(message, enabled)


# ---------------------------------------------------------------------------------------------------------------
# Distributed data parallel (torchrun)


@dataclass
class Distributed:
    """This process's place in a ``torchrun`` job (a single process when not launched by torchrun).

    Attributes:
        rank, world_size, local_rank: From torchrun's environment (0, 1, 0 without it).
        device: The device of this process (``cuda:<local_rank>`` on GPUs).
        backend: ``"nccl"`` on GPUs, ``"gloo"`` on CPUs, None for a single process.
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: Any = None
    backend: str | None = None

    @property
    def is_main(self) -> bool:
        """True on rank 0 (the process that logs, plots and writes checkpoints)."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def barrier(self) -> None:
        if self.enabled:
            import torch.distributed as dist

            dist.barrier()

    def all_reduce_sum(self, tensor):
        """Sum ``tensor`` over all processes, in place (no-op for one process); returns it."""
        if self.enabled:
            import torch.distributed as dist

            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is true in any process (every process gets the same answer; a decision all must share,
        such as stopping at a time limit that each process measures on its own clock)."""
        if not self.enabled:
            return bool(flag)
        import torch

        return float(self.all_reduce_sum(torch.tensor([float(flag)]))[0]) > 0

    def wrap(self, model):
        """``DistributedDataParallel(model)`` in a torchrun job, else ``model``."""
        if not self.enabled:
            return model
        from torch.nn.parallel import DistributedDataParallel

        if self.device is not None and self.device.type == "cuda":
            return DistributedDataParallel(model, device_ids=[self.device.index])
        return DistributedDataParallel(model)

    def shutdown(self) -> None:
        """Leave the torchrun job. Called from a ``finally:``; on the normal path every process first waits for the
        others, because gloo can hang in ``destroy_process_group`` when a peer has already exited (pytorch#75097).
        While an exception propagates nothing collective is attempted: torchrun stops the other processes."""
        if self.enabled:
            import torch.distributed as dist

            if dist.is_initialized() and sys.exc_info()[0] is None:
                dist.barrier()
                dist.destroy_process_group()


def init_distributed(device: str = "auto") -> Distributed:
    """Join the ``torchrun`` job described by ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK`` (if any).

    The backend is nccl when the process's device is a GPU, gloo otherwise. Without torchrun (``WORLD_SIZE`` unset
    or 1) nothing is initialised and a single-process :class:`Distributed` is returned.
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    resolved = resolve_device(device, local_rank if world_size > 1 else None)
    if world_size <= 1:
        return Distributed(device=resolved)
    import torch
    import torch.distributed as dist

    backend = "nccl" if resolved.type == "cuda" else "gloo"
    if resolved.type == "cuda":
        torch.cuda.set_device(resolved)
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, rank=rank, world_size=world_size)
    return Distributed(rank, world_size, local_rank, resolved, backend)


def shard(items: Sequence[Any], rank: int, world_size: int) -> list[Any]:
    """This rank's share of ``items``, as ``DistributedSampler`` (without shuffling) takes it.

    The list is padded by repeating its first items until its length is a multiple of ``world_size``; rank ``r``
    takes items ``r, r + world_size, ...``. Every rank gets the same number of items (so DDP steps stay in lock
    step), and the shares together cover every item.
    """
    items = list(items)
    if world_size <= 1 or not items:
        return items
    total = math.ceil(len(items) / world_size) * world_size
    padded = items + [items[i % len(items)] for i in range(total - len(items))]
    return padded[rank::world_size]


# ---------------------------------------------------------------------------------------------------------------
# ``python -m programl.tasks.<task>`` (what ``torchrun -m`` runs)


def run_task_module(module, argv: list[str] | None = None) -> int:
    """``python -m <module> {train,evaluate} ...`` for a task module with the entry points of
    :data:`programl.cli.train.TASKS`; usage errors exit 2, library and file errors print one line and exit 1."""
    qualified = module.__spec__.name if module.__spec__ else module.__name__  # not "__main__" under ``-m``
    name = qualified.rsplit(".", 1)[-1]
    parser = argparse.ArgumentParser(prog=f"python -m {qualified}", description=module.__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    module.add_train_arguments(sub.add_parser("train"))
    module.add_evaluate_arguments(sub.add_parser("evaluate"))
    args = parser.parse_args(argv)
    try:
        return module.train_main(args) if args.command == "train" else module.evaluate_main(args)
    except UsageError as error:
        parser.error(str(error))
    except (ProgramlError, OSError) as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        return 1
    return 0
