"""The training engine the three tasks share (docs/spec/tasks.md#schedule, docs/spec/tasks.md#run-directories; DDP,
which the specification does not cover: docs/spec/design.md#package-layout).

One concept per module:

* :mod:`~programl.training.schedule` - :class:`Schedule` (warm-up, decay, clipping, precision) and :func:`lr_factor`;
* :mod:`~programl.training.rundir` - a checked ``config.json``, :func:`check_same_run` (resume only the same run),
  :class:`RunLock`, :func:`shared_data`;
* :mod:`~programl.training.runtime` - devices, threads, seeds and RNG states;
* :mod:`~programl.training.checkpoint` - atomic checkpoints and resumption (JSON results:
  :func:`programl.util.fs.write_json`, re-exported here);
* :mod:`~programl.training.engine` - the one training loop (:class:`Trainer`; budgets, resumption, best checkpoint,
  DDP, the optional schedule) and the one evaluation loop (:func:`evaluate`);
* :mod:`~programl.training.logs` - the per-epoch log, :func:`configure_logging` (messages through :mod:`logging`,
  ``-q``) and progress bars;
* :mod:`~programl.training.plots` - learning curves and confusion matrices;
* :mod:`programl.loader` (not a training module: it sits beside the data sets, as PyG's own loaders do) -
  ``torch_geometric``'s ``DataLoader`` over the planned node-budget batches, with the state of each training step
  handed back as its batch is trained;
* :mod:`~programl.training.distributed` - DDP under ``torchrun``.

The command-line options of a run are the tasks' (:mod:`programl.tasks.run_options`; a task's own options:
:mod:`programl.tasks.options`): the engine takes values, not an ``argparse`` namespace.

Metrics and their reduction over DDP processes are :class:`programl.models.MetricsAccumulator`'s public API
(``all_reduce``). Importing this package does not import torch (``programl --help`` stays fast).
"""

from __future__ import annotations

from programl.exceptions import UsageError
from programl.training.checkpoint import load_checkpoint, save_checkpoint, unwrap
from programl.training.distributed import Distributed, init_distributed, shard
from programl.training.engine import Budget, Fit, Trainer, TrainingTask, evaluate
from programl.training.logs import EpochLog, configure_logging, progress
from programl.training.plots import plot_confusion_matrix, plot_learning_curves
from programl.training.rundir import RunLock, check_same_run, read_run_config, shared_data
from programl.training.runtime import (
    compute_threads,
    configure_threads,
    resolve_device,
    rng_state,
    seed_everything,
    set_rng_state,
)
from programl.training.schedule import Schedule, lr_factor
from programl.util.fs import write_json

__all__ = [
    "Budget",
    "Distributed",
    "EpochLog",
    "Fit",
    "RunLock",
    "Schedule",
    "Trainer",
    "TrainingTask",
    "UsageError",
    "check_same_run",
    "compute_threads",
    "configure_logging",
    "configure_threads",
    "evaluate",
    "init_distributed",
    "load_checkpoint",
    "lr_factor",
    "plot_confusion_matrix",
    "plot_learning_curves",
    "progress",
    "read_run_config",
    "resolve_device",
    "rng_state",
    "save_checkpoint",
    "seed_everything",
    "set_rng_state",
    "shard",
    "shared_data",
    "unwrap",
    "write_json",
]
