"""The run options of ``programl train|evaluate <task>`` (docs/spec/tasks.md#data-flow-protocol;
docs/spec/design.md#command-line): where and how a run runs, as opposed to what it learns with (the task's options,
:mod:`programl.tasks.options`).

:class:`RunOptions` holds what every command has (``--device``, ``--threads``, ``--workers``, ``--seed``, ``-q``); a
command's own run options are the fields of its subclass in the task's ``spec.py``, made by the functions here where
tasks share them (``--run-dir``, ``--epochs``, ``--restart``, ``--config``, ``--checkpoint-minutes``,
``--time-limit``, ``--data-dir``, ``-j``, ``--out``). Each field carries its range (a wrong number is a
:class:`~programl.exceptions.UsageError` naming the option: the CLI exits 2; importable from here too).
``--config FILE`` reads a run's ``config.json`` back through the parser (:func:`read_config_options`).
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

from programl.exceptions import ProgramlError, UsageError  # noqa: F401 - importable from here too (module docstring)
from programl.tasks.options import SCHEDULE_GROUP, SEED_RANGE
from programl.util.options import Options, option

__all__ = [
    "CONFIG_RECORDS",
    "DATA_GROUP",
    "RUNTIME_GROUP",
    "RUN_GROUP",
    "RunOptions",
    "checkpoint_minutes_option",
    "config_option",
    "data_dir_option",
    "epochs_option",
    "evaluation_output_option",
    "jobs_option",
    "read_config_options",
    "restart_option",
    "run_dir_option",
    "seed_option",
    "time_limit_option",
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
