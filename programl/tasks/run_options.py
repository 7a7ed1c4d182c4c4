"""Command-line options every training task shares (docs/spec/tasks.md#data-flow-protocol;
docs/spec/design.md#command-line).

:func:`add_runtime_arguments` (``--device``, ``--threads``, ``--seed``, ``-q``), :func:`add_run_arguments`
(``--run-dir``, ``--epochs``, ``--restart``, ``--config``), :func:`add_checkpoint_minutes_argument`,
:func:`add_data_dir_arguments`: the run's options, which every task shares (a task's own options, the schedule's
included, are the fields of its options dataclass: :mod:`programl.tasks.options`); :func:`check_options` refuses
nonsense numbers with a :class:`~programl.exceptions.UsageError` (the CLI exits 2; importable from here too).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import json
import math
import os
from typing import Any

from programl.exceptions import ProgramlError, UsageError
from programl.tasks.options import SCHEDULE_GROUP, SEED_RANGE
from programl.util.options import Options, option

__all__ = [
    "add_checkpoint_minutes_argument",
    "add_data_dir_arguments",
    "add_run_arguments",
    "add_runtime_arguments",
    "check_options",
    "read_config_options",
]

#: The argument groups of the run options in ``--help``.
DATA_GROUP = "data"
RUN_GROUP = "run"
RUNTIME_GROUP = "runtime"


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunOptions(Options):
    """Where and how a ``programl train|evaluate <task>`` run runs, as fields (:func:`~programl.util.options.option`):
    ``--device``, ``--threads``, ``--workers``, ``--seed`` and ``-q``, which every command has. A command's own run
    options (data directories, ``--run-dir``, ``--epochs`` ...) are the fields of its subclass in its task's
    ``spec.py``, made by the functions below where tasks share them."""

    device: str = option(
        "auto",
        group=RUNTIME_GROUP,
        metavar="DEV",
        help="auto (CUDA when available, else CPU), cpu, cuda or cuda:N",
    )
    threads: int = option(
        0,
        group=RUNTIME_GROUP,
        low=0,
        high=4096,
        range_text="in 0..4096 (0: torch's choice)",
        help="CPU threads for torch",
        default_text="torch's choice",
    )
    workers: int = option(
        0,
        group=RUNTIME_GROUP,
        low=0,
        high=256,
        range_text="in 0..256",
        help="processes that read and collate the batches beside training (0: the training process, which on the "
        "2-core development machine reads DeepDataFlow batches 250x faster than the GGNN trains on them: "
        "benchmarks/loader.py); the batches and results are the same whatever N",
    )
    seed: int = option(204, group=RUNTIME_GROUP, metavar="SEED", help="random seed", **SEED_RANGE)
    quiet: bool = option(
        False,
        group=RUNTIME_GROUP,
        short="-q",
        help="no progress bars and no per-epoch or status lines; warnings, errors and the final result still print",
    )


def seed_option(default: int):
    """``--seed`` with another default than :class:`RunOptions`' (a field of a subclass)."""
    return option(default, group=RUNTIME_GROUP, metavar="SEED", help="random seed", **SEED_RANGE)


def run_dir_option(task: str, shown: str | None = None):
    """``--run-dir DIR`` of ``programl train <task>`` (default ``runs/<task>``; ``shown``: how ``--help`` names it when
    the task derives it from other options)."""
    default = os.path.join("runs", task)
    return option(
        default,
        group=RUN_GROUP,
        metavar="DIR",
        help=f"checkpoints, logs and plots (default: {shown or default}); an unfinished run there is resumed",
        default_text="",
    )


def epochs_option(default: int | None, shown: int | None = None):
    """``--epochs N`` (``shown``: the default ``--help`` names when it is None, the task's whole schedule)."""
    return option(
        default,
        group=RUN_GROUP,
        low=1,
        high=10**9,
        range_text="in 1..10^9",
        help="training epochs",
        default_text=None if shown is None else str(shown),
    )


def restart_option():
    """``--restart``."""
    return option(False, group=RUN_GROUP, help="ignore the checkpoints in --run-dir and start over")


def config_option(task: str):
    """``--config FILE``: the options of a run of ``programl train <task>`` from its ``config.json``
    (:func:`read_config_options`), as if given where ``--config`` stands."""
    return option(
        None,
        group=RUN_GROUP,
        metavar="FILE",
        action=functools.partial(_ReadConfig, task=task),
        help="take the options of a run from its config.json (options after --config override them)",
    )


def checkpoint_minutes_option():
    """``--checkpoint-minutes M`` (a run option, not a model option: it does not change what is learned), listed with
    the training engine's schedule options."""
    return option(
        10.0,
        group=SCHEDULE_GROUP,
        metavar="M",
        low=0.0,
        help="also write last.pt every M minutes within an epoch, with a line on how far the epoch is",
    )


def time_limit_option(group: str, help: str):  # noqa: A002 - argparse's word
    """``--time-limit MIN`` (off by default), in the argument group ``group``."""
    return option(None, group=group, metavar="MIN", low=math.ulp(0.0), range_text="positive (minutes)", help=help)


def data_dir_option(task: str):
    """``--data-dir DIR``: derived data (graphs), default ``~/.cache/programl/<task>``."""
    default = os.path.join("~", ".cache", "programl", task)
    return option(default, group=DATA_GROUP, metavar="DIR", help="where graphs are built")


def jobs_option():
    """``-j N``: worker processes for building graphs (0: all CPUs)."""
    return option(
        0,
        group=DATA_GROUP,
        short="-j",
        low=0,
        high=4096,
        range_text="in 0..4096 (0: all CPUs)",
        help="worker processes for building graphs",
        default_text="all CPUs",
    )


def evaluation_output_option():
    """``--out DIR`` of ``programl evaluate``: where the evaluation goes instead of the run directory."""
    return option(
        None,
        metavar="DIR",
        help="write the evaluation (evaluation_*.json, confusion.png) into DIR instead of --run-dir, which is then "
        "only read: a run still training can be evaluated (it replaces its checkpoints atomically)",
    )


def add_runtime_arguments(parser: argparse.ArgumentParser, seed: int = 204) -> None:
    """``--device``, ``--threads``, ``--workers``, ``--seed`` and ``-q``."""
    group = parser.add_argument_group("runtime")
    group.add_argument(
        "--device",
        default="auto",
        metavar="DEV",
        help="auto (CUDA when available, else CPU), cpu, cuda or cuda:N (default: auto)",
    )
    group.add_argument(
        "--threads", type=int, default=0, metavar="N", help="CPU threads for torch (default: torch's choice)"
    )
    group.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="processes that read and collate the batches beside training (0: the training process, which on the "
        "2-core development machine reads DeepDataFlow batches 250x faster than the GGNN trains on them: "
        "benchmarks/loader.py); the batches and results are the same whatever N (default: 0)",
    )
    group.add_argument("--seed", type=int, default=seed, help=f"random seed (default: {seed})")
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bars and no per-epoch or status lines; warnings, errors and the final result still print",
    )


def add_checkpoint_minutes_argument(group) -> None:
    """``--checkpoint-minutes`` (a run option, not a model option: it does not change what is learned)."""
    group.add_argument(
        "--checkpoint-minutes",
        type=float,
        default=10.0,
        metavar="M",
        help="also write last.pt every M minutes within an epoch, with a line on how far the epoch is (default: 10)",
    )


def add_run_arguments(parser: argparse.ArgumentParser, task: str, epochs: int, default_dir: str | None = None) -> None:
    """``--run-dir``, ``--epochs`` and ``--restart`` (``default_dir``: how ``--help`` names the default run directory,
    when the task derives it from other options)."""
    group = parser.add_argument_group("run")
    shown = default_dir or os.path.join("runs", task)
    group.add_argument(
        "--run-dir",
        default=os.path.join("runs", task),
        metavar="DIR",
        help=f"checkpoints, logs and plots (default: {shown}); an unfinished run there is resumed",
    )
    group.add_argument("--epochs", type=int, default=epochs, metavar="N", help=f"training epochs (default: {epochs})")
    group.add_argument("--restart", action="store_true", help="ignore the checkpoints in --run-dir and start over")
    group.add_argument(
        "--config",
        action=_ReadConfig,
        task=task,
        metavar="FILE",
        help="take the options of a run from its config.json (options after --config override them)",
    )


def add_evaluation_output_argument(parser: argparse.ArgumentParser) -> None:
    """``--out DIR`` of ``programl evaluate``: where the evaluation goes instead of the run directory."""
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="write the evaluation (evaluation_*.json, confusion.png) into DIR instead of --run-dir, which is then "
        "only read: a run still training can be evaluated (it replaces its checkpoints atomically)",
    )


class _ReadConfig(argparse.Action):
    """``--config FILE``: set the options that FILE (the ``config.json`` of a run) holds, as if given here."""

    def __init__(self, option_strings, dest, task: str, **kwargs) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.task = task

    def __call__(self, parser, namespace, value, option_string=None) -> None:
        try:
            options = read_config_options(value, self.task, parser)
        except ProgramlError as error:
            parser.error(str(error))
        for key, value_of_key in options.items():
            setattr(namespace, key, value_of_key)
        setattr(namespace, self.dest, value)


def read_config_options(path: str | os.PathLike, task: str, parser: argparse.ArgumentParser) -> dict[str, object]:
    """The options of ``parser`` that the ``config.json`` at ``path`` holds (its ``model`` entry and its data
    directories, such as ``dataset`` or ``data_dir``), by ``argparse`` destination; the run's records
    (:data:`CONFIG_RECORDS`) are not options, and any other entry is an error.

    Raises:
        ProgramlError: One line: the file is missing or not JSON (``file:line:col``), is the run of another task, or
            holds a value that an option does not take, or a key that is no option of the task or is in the wrong
            place (ignored, such a key would leave the run other than the file says).
    """
    try:
        saved = json.loads(open(path, encoding="utf-8").read())  # noqa: SIM115 - a one-shot read
    except OSError as error:
        raise ProgramlError(f"{path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ProgramlError(f"{path}: not JSON ({error.reason})") from None
    except json.JSONDecodeError as error:
        raise ProgramlError(f"{path}:{error.lineno}:{error.colno}: not JSON ({error.msg})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("model"), dict):
        raise ProgramlError(f'{path}: no "model" options (not the config.json of a `programl train {task}` run)')
    if saved.get("task", task) != task:
        raise ProgramlError(f"{path}: the config.json of a `programl train {saved['task']}` run, not of {task}")
    actions = {action.dest: action for action in parser._actions if action.option_strings}
    for key in ("config", "run_dir", "help"):
        actions.pop(key, None)
    _check_config_keys(path, saved, actions, parser._defaults)
    values = {key: value for key, value in saved.items() if key in actions and key not in CONFIG_RECORDS}
    values.update((key, value) for key, value in saved["model"].items() if key in actions)
    options: dict[str, object] = {}
    for key, value in values.items():
        action = actions[key]
        items = value if isinstance(value, list) else [value]
        if action.choices is not None and any(item not in action.choices for item in items):
            raise ProgramlError(f"{path}: {key} = {value!r} is not one of {', '.join(map(str, action.choices))}")
        options[key] = _config_value(path, key, value, action)
    return options


#: The entries of a config.json that ``programl train`` writes and that are not options (``data_sha256``: the digest
#: of the processed files a classifyapp run trained on).
CONFIG_RECORDS = ("task", "model", "scope", "world_size", "data_sha256")


def _check_config_keys(path, saved: dict[str, Any], actions: dict[str, argparse.Action], fixed: dict[str, Any]) -> None:
    """Refuse a key that no option of this task has, or one in the wrong place: ``model`` holds the options; the top
    level holds the run's records (:data:`CONFIG_RECORDS`) and its data directories (options whose value is a path).
    ``fixed``: values the task sets without an option (``parser.set_defaults``), which the file may only repeat.
    A silently ignored key would train with another option than the user wrote."""

    def unknown(key: str, where: str) -> ProgramlError:
        close = difflib.get_close_matches(key, list(actions), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return ProgramlError(f"{path}: {where}{key!r} is not an option of this task{hint}")

    for key, value in saved["model"].items():
        if key in fixed and key not in actions:
            if value != fixed[key]:
                raise ProgramlError(f"{path}: model entry {key!r} = {value!r}: this task has no such option")
        elif key not in actions:
            raise unknown(key, "model entry ")
    for key, value in saved.items():
        if key in CONFIG_RECORDS:
            continue
        if key not in actions:
            raise unknown(key, "entry ")
        if value is not None and not isinstance(value, str):
            raise ProgramlError(
                f'{path}: {key!r} is an option of the model: it belongs in the "model" entry, not at the top level'
            )


def _config_value(path, key: str, value: object, action: argparse.Action) -> object:
    """``value`` as the option ``action`` takes it on the command line (its ``type``, its number of values), so that
    a hand-edited config.json fails here on one line, not as a traceback once the run has started."""
    if value is None:  # an option whose default is None
        return None
    many = action.nargs in ("+", "*") or isinstance(action.nargs, int) or isinstance(action, argparse._AppendAction)
    if action.nargs == 0:  # a flag (store_true / store_false)
        if not isinstance(value, bool):
            raise ProgramlError(f"{path}: {key} = {value!r} is not true or false")
        return value
    if isinstance(value, list) != many:
        raise ProgramlError(f"{path}: {key} = {value!r} is {'not a list' if many else 'a list'}")
    if action.type is None:
        return value

    def convert(item: object) -> object:
        if isinstance(item, (bool, dict, list)) or item is None:
            raise ProgramlError(f"{path}: {key} = {value!r}: {item!r} is not a value of this option")
        try:
            return action.type(str(item))
        except (argparse.ArgumentTypeError, ValueError, TypeError) as error:
            raise ProgramlError(f"{path}: {key} = {value!r}: {error}") from None

    return [convert(item) for item in value] if many else convert(value)


def add_data_dir_arguments(group, task: str) -> None:
    """``--data-dir`` (derived data: graphs, default ``~/.cache/programl/<task>``) and ``-j`` (build workers)."""
    default = os.path.join("~", ".cache", "programl", task)
    group.add_argument(
        "--data-dir", default=default, metavar="DIR", help=f"where graphs are built (default: {default})"
    )
    group.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="worker processes for building graphs (default: all CPUs)",
    )


#: Options that must be within a range, by ``argparse`` destination: (lowest, highest, what the range is called).
_RANGES: dict[str, tuple[float, float | None, str]] = {
    "time_limit": (math.ulp(0.0), None, "positive (minutes)"),
    "checkpoint_minutes": (0.0, None, ">= 0"),
    "threads": (0, 4096, "in 0..4096 (0: torch's choice)"),
    "jobs": (0, 4096, "in 0..4096 (0: all CPUs)"),
    "workers": (0, 256, "in 0..256"),
    "epochs": (1, 10**9, "in 1..10^9"),
}


_SEED_LIMIT = 2**32  # numpy's legacy seeding takes 0..2^32-1; torch and Python take those too


def check_options(args: argparse.Namespace) -> None:
    """Refuse nonsense numbers before anything runs (docs/spec/design.md#conventions: a wrong option exits 2).

    Every float option must be finite; the run options of :data:`_RANGES` (time limit, checkpoint interval, threads,
    jobs, epochs) must be in their range where the task has them (a task's own options carry their ranges in their
    fields: :meth:`programl.util.options.Options.check`); every
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
