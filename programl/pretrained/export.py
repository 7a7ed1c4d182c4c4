"""Make a pretrained-model directory (:mod:`programl.pretrained.hub` format) from a finished training run (the runs of
docs/spec/tasks.md#data-flow-protocol, docs/spec/tasks.md#device-mapping, docs/spec/tasks.md#algorithm-classification).

What is read of a run directory (and nothing else; the training code is not imported):

* ``config.json`` - ``task`` and the ``model`` options, from which the network is rebuilt (:func:`model_spec`: the
  same constructor calls as the tasks make; loading the checkpoint with ``strict=True`` proves they agree);
* the model of ``best.pt`` (the best-validation checkpoint), its ``vocab.csv`` and ``result.json`` (test scores),
  each in the run directory (dataflow, classifyapp) or in ``<platform>/fold_<k>/`` (devmap; by default the fold
  with the best validation accuracy), with ``<platform>/report.json`` (the cross-validation summary) and the
  per-epoch ``log.jsonl`` (the training time of a devmap fold).

Every number of ``model.json`` and ``MODEL_CARD.md`` comes from these files; what they do not record is written as
"not recorded". The same run exported twice gives byte-identical files.

A model directory is shipped to other machines, so it names no place on the exporting one: every path it records
(the run directory, the scores file, the paths in ``config.json`` and in the command) is written as the user gave
it when relative, relative to the current directory when inside it, and otherwise as its last two components
(``runs/<name>``) (:func:`portable_path`).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError
from programl.pretrained.hub import CARD_FILE, FORMAT, METADATA_FILE, PRETRAINED_DIR, build_model, sha256_bytes
from programl.pretrained.metadata import NAME, check_metadata
from programl.tasks.registry import TASKS, get_task
from programl.tasks.run_files import RunFiles, read_log_records
from programl.util.fs import read_json
from programl.util.safe_torch import load_tensors

__all__ = ["RunFiles", "default_name", "export_pretrained", "model_spec", "portable_path", "read_run"]

WEIGHTS_FILE = "weights.pt"
VOCAB_FILE = "vocab.csv"

# ---------------------------------------------------------------------------------------------------------------
# The network of a run


def model_spec(task: str, config: Mapping[str, Any], vocabulary_size: int, where: str = "config.json") -> dict:
    """The ``model`` entry of ``model.json`` (:func:`programl.pretrained.hub.build_model`) for a run of ``task`` with
    options ``config`` (the ``model`` entry of its ``config.json``): :meth:`TaskSpec.model_spec
    <programl.tasks.base.TaskSpec.model_spec>` of the task.

    Raises:
        ProgramlError: An unknown task, an option the network needs is missing, or has a value no network is built
            for.
    """
    return get_task(task, where).model_spec(config, vocabulary_size, where)


# ---------------------------------------------------------------------------------------------------------------
# Reading a run


def read_run(
    run_dir: str | os.PathLike,
    *,
    platform: str | None = None,
    fold: int | None = None,
    card_from: str | os.PathLike | None = None,
) -> RunFiles:
    """Find the files of a finished run to export (module docstring).

    Args:
        run_dir: A run directory of ``programl train dataflow|devmap|classifyapp``.
        platform: devmap: ``amd`` or ``nvidia`` (default: the only platform the run has).
        fold: devmap: the fold (default: the fold with the best validation accuracy; ties: the lower fold).
        card_from: A results file to take the scores from instead of ``result.json`` (e.g. the
            ``evaluation_best_test.json`` of ``programl evaluate dataflow``).

    Raises:
        ProgramlError: A file is missing or damaged, or the run is not finished (one line).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ProgramlError(f"{run_dir}: no such run directory")
    config = read_json(run_dir / "config.json")
    task = config.get("task") if isinstance(config, dict) else None
    if task not in TASKS or not isinstance(config.get("model"), dict):
        raise ProgramlError(f"{run_dir / 'config.json'}: not the config.json of a `programl train` run")
    files = RunFiles(run_dir, task, config, run_dir / "best.pt", run_dir / VOCAB_FILE, {}, run_dir / "result.json")
    TASKS[task].locate_model(files, platform, fold)
    if card_from is not None:
        files.result_path = Path(card_from)
    for path in (files.checkpoint, files.vocabulary, files.result_path):
        if not path.is_file():
            raise ProgramlError(f"{path}: no such file (not a finished run?)")
    files.result = read_json(files.result_path)
    if not isinstance(files.result, dict):
        raise ProgramlError(f"{files.result_path}: not a result file (expected an object)")
    return files


def check_scores_are_of(files: RunFiles, checkpoint: Mapping[str, Any]) -> None:
    """Refuse scores of another checkpoint than the exported ``best.pt``: an evaluation of ``last.pt``, or of a
    ``best.pt`` that a run still training has replaced since (its ``checkpoint_epoch`` is not the file's epoch)."""
    which, epoch = files.result.get("checkpoint"), files.result.get("checkpoint_epoch")
    if which not in (None, "best"):
        raise ProgramlError(f"{files.result_path}: scores of {which}.pt, and the export is of {files.checkpoint.name}")
    if isinstance(epoch, int) and isinstance(checkpoint.get("epoch"), int) and epoch != checkpoint["epoch"]:
        raise ProgramlError(
            f"{files.result_path}: scores of the checkpoint of epoch {epoch}, and {files.checkpoint} is now epoch "
            f"{checkpoint['epoch']}'s (the run went on): evaluate it again"
        )


#: The facts of training that ``programl train`` writes into ``result.json`` and an evaluation's file lacks.
TRAINING_FACTS = ("train_seconds", "device", "threads", "world_size", "best_epoch")


def fill_training_facts(files: RunFiles, checkpoint: Mapping[str, Any]) -> None:
    """Complete the training facts of a dataflow or classifyapp run's scores from the run itself, where the scores
    file (``--card-from``: e.g. ``programl evaluate``'s, of a run still training) has none of them.

    From the last epoch of ``log.jsonl``: the training time so far (``elapsed_seconds``), its device and threads
    (runs from before epochs recorded their threads: not recorded); from ``config.json``: the processes; from the
    checkpoint: the best epoch and its validation score. A file that holds any of them is left as it is.
    """
    task = TASKS[files.task]
    if not task.fills_training_facts or any(key in files.result for key in TRAINING_FACTS):
        return
    records = read_log_records(files.run_dir / "log.jsonl") or []
    facts: dict[str, Any] = {"world_size": files.config.get("world_size")}
    if records:
        last = records[-1]
        seconds = last.get("elapsed_seconds")
        facts.update(
            train_seconds=float(seconds) if seconds is not None else sum(float(r.get("seconds", 0.0)) for r in records),
            device=last.get("device"),
            threads=last.get("threads"),
        )
        files.facts_from_log = last.get("epoch")
    facts.update(best_epoch=checkpoint.get("best_epoch"), **{task.best_metric: checkpoint.get("best_metric")})
    files.result = {**{k: v for k, v in facts.items() if v is not None}, **files.result}


def _load_weights(path: Path) -> Mapping[str, Any]:
    """A checkpoint (``programl.training.save_checkpoint``), read without running code
    (:func:`~programl.util.safe_torch.load_tensors`)."""
    payload = load_tensors(path, what="checkpoint")
    if not isinstance(payload, dict) or not isinstance(payload.get("model"), Mapping):
        raise ProgramlError(f"{path}: not a programl checkpoint (no model state)")
    return payload


# ---------------------------------------------------------------------------------------------------------------
# model.json


def default_name(files: RunFiles) -> str:
    """The exported model's name when none is given (:meth:`TaskSpec.default_name
    <programl.tasks.base.TaskSpec.default_name>`: ``<analysis>``, ``devmap-<platform>``, ``classifyapp``)."""
    return TASKS[files.task].default_name(files)


def _equivalent_command(files: RunFiles) -> str:
    extra = TASKS[files.task].command_options(files)
    run_dir = files.run_dir
    return f"programl train {files.task} --config {run_dir / 'config.json'} --run-dir {run_dir}{extra}"


def _metadata(
    files: RunFiles,
    name: str,
    spec: dict,
    parameters: int,
    weights: bytes,
    vocab: bytes,
    vocabulary_size: int,
    epoch: Any,
    command: str | None,
    commit: str | None,
) -> dict[str, Any]:
    from programl import __version__

    task = TASKS[files.task]
    metadata: dict[str, Any] = {"format": FORMAT, "name": name, "task": files.task, **task.metadata_entries(files)}
    metadata.update(
        model=spec,
        parameters=parameters,
        weights={"file": WEIGHTS_FILE, "sha256": sha256_bytes(weights), "bytes": len(weights)},
        vocabulary={
            "file": VOCAB_FILE,
            "sha256": sha256_bytes(vocab),
            "bytes": len(vocab),
            "entries": vocabulary_size,
        },
        outputs=task.outputs(files),
        inputs=task.inputs(files),
        scores=task.scores(files),
        compute=task.compute(files),
        training={
            "run_dir": str(files.run_dir),
            "checkpoint": str(files.checkpoint.relative_to(files.run_dir)),
            "checkpoint_epoch": epoch,
            "init_from_epoch": _init_from_epoch(files.config),
            "results": str(files.result_path),
            "fold": files.fold,
            "config": files.config,
            "command": command or _equivalent_command(files),
            "command_recorded": command is not None,
            "commit": commit,
        },
        exported_with={"programl": __version__},
    )
    return metadata


def _without_non_finite(value: Any) -> Any:
    """``value`` with each NaN or infinite number (a score of an empty split) as None: JSON has no such numbers,
    and ``model.json`` readers refuse them (the card says "not recorded")."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _without_non_finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_non_finite(v) for v in value]
    return value


def _init_from_epoch(config: Mapping[str, Any]) -> int | None:
    """The epoch of the checkpoint a run started from (``--init-from``), where that file is still a readable run
    checkpoint; else None (an exported ``weights.pt``, a directory, a file gone since). The card counts the run's
    epochs from it, so a model of a second stage can be named by its epoch over both."""
    path = config.get("model", {}).get("init_from")
    if not path or not Path(path).is_file():
        return None
    try:
        epoch = _load_weights(Path(path)).get("epoch")
    except ProgramlError:
        return None
    return epoch if isinstance(epoch, int) else None


# ---------------------------------------------------------------------------------------------------------------
# Paths that mean the same on every machine

#: An absolute path inside a text (a command line): not a component of a longer path, a URL or a word.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~$/:-])/[^\s'\"`;,)\]]+")
#: Absolute paths that name the same place on every machine (devices, the system's programs), kept as they are.
_SYSTEM_PATHS = ("/dev/", "/proc/", "/sys/", "/usr/", "/etc/", "/bin/", "/sbin/", "/lib/")
#: How many trailing components of a path outside the current directory are kept (``runs/<name>``).
_KEPT_COMPONENTS = 2


def portable_path(path: str | os.PathLike, cwd: str | os.PathLike | None = None) -> str:
    """``path`` as a model directory records it: as given when relative, relative to ``cwd`` (default: the current
    directory) when inside it, a system location as it is, otherwise its last two components (``/x/runs/a`` ->
    ``runs/a``); never an absolute path of the exporting machine.

    >>> portable_path("runs/reach")
    'runs/reach'
    >>> portable_path("/scratch/alice/runs/reach/", cwd="/scratch/alice")
    'runs/reach'
    >>> portable_path("/data/sets/ddf22-3000", cwd="/elsewhere")
    'sets/ddf22-3000'
    """
    text = os.fspath(path)
    if not os.path.isabs(text) or text.startswith(_SYSTEM_PATHS):
        return text
    absolute = Path(os.path.normpath(text))
    here = Path(os.path.normpath(os.path.abspath(cwd if cwd is not None else os.getcwd())))
    try:
        return absolute.relative_to(here).as_posix()
    except ValueError:
        return "/".join(absolute.parts[1:][-_KEPT_COMPONENTS:])


def _portable(value: Any, cwd: str | os.PathLike | None = None) -> Any:
    """``value`` (JSON data) with every absolute path in its strings written by :func:`portable_path`."""
    if isinstance(value, str):
        return _ABSOLUTE_PATH.sub(lambda match: portable_path(match.group(0), cwd), value)
    if isinstance(value, dict):
        return {k: _portable(v, cwd) for k, v in value.items()}
    if isinstance(value, list):
        return [_portable(v, cwd) for v in value]
    return value


# ---------------------------------------------------------------------------------------------------------------
# Writing


def export_pretrained(
    run_dir: str | os.PathLike,
    name: str | None = None,
    *,
    output_dir: str | os.PathLike | None = None,
    platform: str | None = None,
    fold: int | None = None,
    card_from: str | os.PathLike | None = None,
    command: str | None = None,
    commit: str | None = None,
    compute_note: str | None = None,
    force: bool = False,
) -> Path:
    """Write ``<output_dir>/<name>/`` (``weights.pt``, ``vocab.csv``, ``model.json``, ``MODEL_CARD.md``) from a
    finished run.

    Args:
        run_dir: The run directory.
        name: The model's name (default: :func:`default_name`).
        output_dir: Where to write (default: the package's ``programl/pretrained/weights``).
        platform, fold, card_from: See :func:`read_run`.
        command, commit: The command and commit that trained the run, when known (the run directory does not
            record them; without ``command`` an equivalent one made from ``config.json`` is written). The paths in
            the command, as every path ``model.json`` records, are written by :func:`portable_path`.
        compute_note: What the card's compute section should add to the recorded time, e.g. for a run that moved
            between devices (``result.json`` records the device of its last process only).
        force: Replace an existing model of that name.

    Returns:
        The model directory.

    Raises:
        ProgramlError: One line: a missing or damaged file, a checkpoint that does not fit the network its
            ``config.json`` describes, a bad name, or an existing model without ``force``.
    """
    import torch

    from programl.data.vocabulary import Vocabulary
    from programl.pretrained.card import model_card

    files = read_run(run_dir, platform=platform, fold=fold, card_from=card_from)
    name = name or default_name(files)
    if not NAME.fullmatch(name):
        raise ProgramlError(f"{name!r}: a model name is letters, digits, '.', '_' and '-' (not first; at most 128)")
    target = Path(output_dir) if output_dir is not None else PRETRAINED_DIR
    if (target / name).exists() and not force:
        raise ProgramlError(f"{target / name}: exists (--force replaces it)")
    vocab_bytes = files.vocabulary.read_bytes()
    try:
        vocabulary_size = len(Vocabulary.from_tsv(vocab_bytes.decode("utf-8")))
    except (UnicodeDecodeError, ValueError) as error:
        raise ProgramlError(f"{files.vocabulary}: not a vocabulary ({error})") from None
    spec = model_spec(files.task, files.config["model"], vocabulary_size, str(files.run_dir / "config.json"))
    model = build_model(spec)
    payload = _load_weights(files.checkpoint)
    check_scores_are_of(files, payload)
    fill_training_facts(files, payload)
    try:
        model.load_state_dict(payload["model"])
    except (RuntimeError, KeyError, ValueError) as error:
        first = str(error).strip().splitlines()[0][:200]
        raise ProgramlError(
            f"{files.checkpoint}: does not fit the network {files.run_dir / 'config.json'} describes ({first})"
        ) from None
    buffer = io.BytesIO()
    torch.save({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, buffer)
    weights = buffer.getvalue()
    parameters = sum(p.numel() for p in model.parameters())
    metadata = _metadata(
        files, name, spec, parameters, weights, vocab_bytes, vocabulary_size, payload.get("epoch"), command, commit
    )
    if compute_note:
        metadata["compute"]["note"] = compute_note
    metadata = _portable(_without_non_finite(metadata))
    # what predict and pretrained() will accept: a run whose model.json they would refuse is not exported
    check_metadata(json.loads(json.dumps(metadata)), target / name / METADATA_FILE)
    contents = {
        WEIGHTS_FILE: weights,
        VOCAB_FILE: vocab_bytes,
        METADATA_FILE: (json.dumps(metadata, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        CARD_FILE: model_card(metadata).encode("utf-8"),
    }
    return _write_directory(target, name, contents)


def _write_directory(parent: Path, name: str, contents: Mapping[str, bytes]) -> Path:
    """Write the files into ``parent/name`` as a whole: into a staging directory first, then renamed (an existing
    directory is moved aside and removed once the new one is in place)."""
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f".{name}.tmp{os.getpid()}"
    old = parent / f".{name}.old{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        for file, data in contents.items():
            (staging / file).write_bytes(data)
        target = parent / name
        if target.exists():
            os.replace(target, old)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return target
