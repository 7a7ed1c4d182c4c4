"""What every training loop shares, under its former name: the names of :mod:`programl.training`, re-exported so
that code written against ``programl.tasks.common`` keeps working (SPEC §6.1, §6.5, §6.6; DESIGN §1 ``tasks/``).

New code imports from :mod:`programl.training`. Importing this module does not import torch.
"""

from __future__ import annotations

from programl.training import (
    Distributed,
    EpochLog,
    RunLock,
    UsageError,
    add_data_dir_arguments,
    add_run_arguments,
    add_runtime_arguments,
    check_options,
    check_same_run,
    configure_threads,
    info,
    init_distributed,
    load_checkpoint,
    plan_graph_batches,
    plot_confusion_matrix,
    plot_learning_curves,
    progress,
    read_run_config,
    resolve_device,
    rng_state,
    run_task_module,
    save_checkpoint,
    seed_everything,
    set_rng_state,
    shard,
    shared_data,
    unwrap,
    write_json,
)

__all__ = [
    "Distributed",
    "EpochLog",
    "RunLock",
    "UsageError",
    "add_data_dir_arguments",
    "add_run_arguments",
    "add_runtime_arguments",
    "check_options",
    "check_same_run",
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
    "rng_state",
    "run_task_module",
    "save_checkpoint",
    "seed_everything",
    "set_rng_state",
    "shard",
    "shared_data",
    "unwrap",
    "write_json",
]
