"""Make a pretrained-model directory (:mod:`programl.models.hub` format) from a finished training run (issue 11
item 6; the runs of SPEC §6.1 dataflow, §6.5 devmap, §6.6 classifyapp).

What is read of a run directory (and nothing else; the training code is not imported):

* ``config.json`` - ``task`` and the ``model`` options, from which the network is rebuilt (:func:`model_spec`: the
  same constructor calls as the tasks make; loading the checkpoint with ``strict=True`` proves they agree);
* the model of ``best.pt`` (the best-validation checkpoint), its ``vocab.csv`` and ``result.json`` (test scores),
  each in the run directory (dataflow, classifyapp) or in ``<platform>/fold_<k>/`` (devmap; by default the fold
  with the best validation accuracy), with ``<platform>/report.json`` (the cross-validation summary) and the
  per-epoch ``log.jsonl`` (the training time of a devmap fold).

Every number of ``model.json`` and ``MODEL_CARD.md`` comes from these files; what they do not record is written as
"not recorded". The same run exported twice gives byte-identical files.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from programl.data.devmap import PLATFORM_NAMES
from programl.exceptions import ProgramlError
from programl.models.hub import CARD_FILE, FORMAT, METADATA_FILE, PRETRAINED_DIR, TASKS, build_model, sha256_bytes
from programl.util.fs import read_json
from programl.util.safe_torch import load_tensors

__all__ = ["RunFiles", "default_name", "export_pretrained", "model_spec", "read_run"]

WEIGHTS_FILE = "weights.pt"
VOCAB_FILE = "vocab.csv"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

#: What each data-flow model labels (SPEC §4.2-§4.6).
ANALYSIS_MEANING = {
    "reachability": "the instructions reachable from the root instruction along control flow (the root included)",
    "dominance": "the nodes of the root's function that the root instruction dominates (the root included)",
    "datadep": "the instructions the root variable depends on through data flow (its producers, transitively)",
    "liveness": "the variables and constants live out of the root instruction",
    "subexpressions": "the instructions that compute the same expression as the root instruction (the root included)",
}


# ---------------------------------------------------------------------------------------------------------------
# The network of a run


def _options(config: Mapping[str, Any], keys: tuple[str, ...], where: str) -> dict[str, Any]:
    missing = [k for k in keys if k not in config]
    if missing:
        raise ProgramlError(f"{where}: no {', '.join(missing)} among the model options (a run of another programl?)")
    return {k: config[k] for k in keys}


def model_spec(task: str, config: Mapping[str, Any], vocabulary_size: int, where: str = "config.json") -> dict:
    """The ``model`` entry of ``model.json`` (:func:`programl.models.hub.build_model`) for a run of ``task`` with
    options ``config`` (the ``model`` entry of its ``config.json``).

    Raises:
        ProgramlError: An option the network needs is missing, or has a value no network is built for.
    """
    if task == "dataflow":
        o = _options(config, ("model", "steps"), where)
        classes = {"ggnn": "DataflowGGNN", "rgcn": "DataflowRGCN"}
        if o["model"] not in classes:
            raise ProgramlError(f"{where}: unknown data-flow model {o['model']!r}")
        kwargs = {"num_steps": o["steps"]}
        if config.get("root_context"):  # the variant's key only where it is on: the faithful models' specs stay
            kwargs["root_context"] = True
        return {"class": classes[o["model"]], "args": [vocabulary_size], "kwargs": kwargs}
    if task == "devmap":
        o = _options(
            config,
            (
                "hidden",
                "steps",
                "layers",
                "positions",
                "node_type_gru",
                "message_dropout",
                "state_dropout",
                "aux_dropout",
                "aux_hidden",
            ),
            where,
        )
        channels, pooling = config.get("readout_channels", 2), config.get("pooling", "sum")
        from programl.models.pooled_readout import is_paper_head

        # the thermometer thresholds and the text-count scales are buffers of the saved weights
        aux_bins, text_counts = config.get("aux_bins", 0), config.get("text_counts", False)
        paper = is_paper_head(channels, pooling, aux_bins, text_counts)
        graph_model = {
            "class": "GGNNGraphClassifier",
            "args": [vocabulary_size, channels],
            "kwargs": {
                "hidden_channels": o["hidden"],
                "layer_schedule": [step % o["layers"] for step in range(o["steps"])],
                "use_positions": o["positions"],
                "node_type_gru": o["node_type_gru"],
                "dropout": o["state_dropout"],
                "message_dropout": o["message_dropout"],
                "aux_channels": 2 if paper else 0,
                "aux_hidden": o["aux_hidden"],
                "aux_dropout": o["aux_dropout"],
                "intermediate_loss_weight": config.get("intermediate_loss_weight", 0.2),
            },
        }
        if paper:
            return graph_model
        return {
            "class": "PooledReadoutClassifier",
            "args": [graph_model],
            "kwargs": {
                "pooling": pooling,
                "aux_hidden": o["aux_hidden"],
                "aux_dropout": o["aux_dropout"],
                **({"aux_bins": aux_bins} if aux_bins else {}),
                **({"text_counts": vocabulary_size + 1} if text_counts else {}),
            },
        }
    if task == "classifyapp":
        from programl.data.poj104 import NUM_CLASSES

        o = _options(config, ("model", "hidden", "layer_timesteps", "dropout"), where)
        common = {
            "hidden_channels": o["hidden"],
            "layer_timesteps": list(o["layer_timesteps"]),
            "dropout": o["dropout"],
        }
        if o["model"] == "rgcn":
            return {"class": "RGCNGraphClassifier", "args": [vocabulary_size, NUM_CLASSES], "kwargs": common}
        if o["model"] != "ggnn":
            raise ProgramlError(f"{where}: unknown classifyapp model {o['model']!r}")
        extra = _options(config, ("no_positions", "node_type_gru"), where)
        return {
            "class": "GGNNGraphClassifier",
            "args": [vocabulary_size, NUM_CLASSES],
            "kwargs": {**common, "use_positions": not extra["no_positions"], "node_type_gru": extra["node_type_gru"]},
        }
    raise ProgramlError(f"{where}: unknown task {task!r} (expected one of {', '.join(TASKS)})")


# ---------------------------------------------------------------------------------------------------------------
# Reading a run


def _read_log_records(path: Path) -> list[dict[str, Any]] | None:
    """The epoch records of a ``log.jsonl`` (None when there is no log)."""
    if not path.is_file():
        return None
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                record = json.loads(line)
                float(record.get("seconds", 0.0))
            except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
                raise ProgramlError(f"{path}: not a log of JSON lines") from None
            records.append(record)
    return records


def _read_log_seconds(path: Path) -> float | None:
    """The sum of the ``seconds`` of the epochs of a ``log.jsonl`` (None when there is no log)."""
    records = _read_log_records(path)
    return None if records is None else sum(float(r.get("seconds", 0.0)) for r in records)


def _read_log_seconds_by_device(path: Path) -> dict[str, float] | None:
    """The ``seconds`` of a ``log.jsonl``'s epochs summed by the device each epoch ended on (``cpu``, ``cuda``);
    None when there is no log or an epoch does not say (logs from before epochs recorded their device)."""
    records = _read_log_records(path)
    if not records or any(not isinstance(r.get("device"), str) for r in records):
        return None
    out: dict[str, float] = {}
    for record in records:
        out[record["device"]] = out.get(record["device"], 0.0) + float(record.get("seconds", 0.0))
    return dict(sorted(out.items()))


@dataclass
class RunFiles:
    """What :func:`read_run` found of a run to export.

    Attributes:
        task: ``dataflow``, ``devmap`` or ``classifyapp``.
        config: The run's ``config.json``.
        checkpoint, vocabulary: ``best.pt`` and ``vocab.csv`` of the exported model.
        result: Its test results (``result.json``, or the ``--card-from`` file) and where they came from.
        platform, fold: The devmap platform and fold (else None).
        report: The devmap platform's cross-validation ``report.json`` (else None).
        fold_seconds: Training seconds of a devmap fold and of all folds of the platform (from ``log.jsonl``).
        seconds_by_device: dataflow and classifyapp: training seconds by device (from ``log.jsonl``; None where
            its epochs do not record their device).
        facts_from_log: The last epoch of ``log.jsonl`` when the training facts of ``result`` came from the log and
            the checkpoint (:func:`fill_training_facts`; a ``--card-from`` file of scores only), else None.
    """

    run_dir: Path
    task: str
    config: dict[str, Any]
    checkpoint: Path
    vocabulary: Path
    result: dict[str, Any]
    result_path: Path
    platform: str | None = None
    fold: int | None = None
    report: dict[str, Any] | None = None
    fold_seconds: float | None = None
    platform_seconds: float | None = None
    seconds_by_device: dict[str, float] | None = None
    facts_from_log: int | None = None


def _fold_dirs(platform_dir: Path) -> dict[int, Path]:
    out = {}
    for d in platform_dir.glob("fold_*"):
        suffix = d.name.removeprefix("fold_")
        if suffix.isdigit() and (d / "best.pt").is_file():
            out[int(suffix)] = d
    return dict(sorted(out.items()))


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
    if task != "devmap" and (platform is not None or fold is not None):
        raise ProgramlError(f"{run_dir}: --platform and --fold are for devmap runs; this is a {task} run")
    files = RunFiles(run_dir, task, config, run_dir / "best.pt", run_dir / VOCAB_FILE, {}, run_dir / "result.json")
    model_dir = run_dir
    if task == "devmap" and config["model"].get("average_last", 0):
        raise ProgramlError(
            f"{run_dir}: tested by the mean of each fold's last {config['model']['average_last']} epochs' models "
            "(--average-last), which one set of pretrained weights cannot hold; export a run without it"
        )
    if task == "devmap":
        present = [p for p in PLATFORM_NAMES if _fold_dirs(run_dir / p)]
        if platform is None:
            if len(present) != 1:
                raise ProgramlError(
                    f"{run_dir}: "
                    + (
                        "no trained fold (<platform>/fold_<k>/best.pt)"
                        if not present
                        else "a run of both platforms: choose one with --platform amd|nvidia"
                    )
                )
            platform = present[0]
        folds = _fold_dirs(run_dir / platform)
        if not folds:
            raise ProgramlError(f"{run_dir / platform}: no trained fold (fold_<k>/best.pt)")
        if fold is None:
            scored = {k: read_json(d / "result.json") for k, d in folds.items() if (d / "result.json").is_file()}
            if not scored:
                raise ProgramlError(f"{run_dir / platform}: no finished fold (fold_<k>/result.json)")
            fold = max(scored, key=lambda k: (scored[k].get("val_accuracy") or 0.0, -k))
        elif fold not in folds:
            raise ProgramlError(f"{run_dir / platform}: no trained fold {fold} (have {', '.join(map(str, folds))})")
        model_dir = folds[fold]
        files.platform, files.fold = platform, fold
        report = run_dir / platform / "report.json"
        files.report = read_json(report) if report.is_file() else None
        files.fold_seconds = _read_log_seconds(model_dir / "log.jsonl")
        seconds = [_read_log_seconds(d / "log.jsonl") for d in folds.values()]
        files.platform_seconds = sum(seconds) if None not in seconds else None
        files.checkpoint, files.vocabulary = model_dir / "best.pt", model_dir / VOCAB_FILE
    else:
        files.seconds_by_device = _read_log_seconds_by_device(run_dir / "log.jsonl")
    files.result_path = Path(card_from) if card_from is not None else model_dir / "result.json"
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
    if files.task == "devmap" or any(key in files.result for key in TRAINING_FACTS):
        return
    records = _read_log_records(files.run_dir / "log.jsonl") or []
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
    best = "best_val_f1" if files.task == "dataflow" else "best_val_accuracy"
    facts.update(best_epoch=checkpoint.get("best_epoch"), **{best: checkpoint.get("best_metric")})
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
    """``<analysis>`` for a data-flow run, ``devmap-<platform>``, ``classifyapp``."""
    if files.task == "dataflow":
        return str(files.config["model"].get("analysis", "dataflow"))
    if files.task == "devmap":
        return f"devmap-{files.platform}"
    return "classifyapp"


def _outputs(files: RunFiles) -> dict[str, Any]:
    if files.task == "dataflow":
        analysis = files.config["model"].get("analysis")
        return {
            "level": "node",
            "classes": ["false", "true"],
            "meaning": f"per node, whether it is among {ANALYSIS_MEANING.get(analysis, 'the labelled nodes')}",
        }
    if files.task == "devmap":
        return {
            "level": "graph",
            "classes": ["CPU", "GPU"],
            "meaning": f"the faster device for the kernel on {PLATFORM_NAMES[files.platform]} (with its CPU, an "
            "Intel i7-3820), given the bytes transferred and the work-group size",
        }
    from programl.data.poj104 import NUM_CLASSES

    return {
        "level": "graph",
        "classes": [str(c) for c in range(1, NUM_CLASSES + 1)],
        "meaning": "the POJ-104 problem (1..104) the program solves",
    }


def _inputs(files: RunFiles) -> dict[str, Any]:
    config = files.config["model"]
    if files.task == "devmap":
        from programl.data.devmap import CLANG22_BASE_FLAGS

        return {
            "sources": "OpenCL C, compiled by clang-22 as the DevMap graphs were (-x cl -cl-std=CL1.2 "
            "-finclude-default-header -target spir64, the flags below, -I <the kernel's directory>)",
            "flags": list(CLANG22_BASE_FLAGS),
            "variant": config.get("variant"),
            "aux": ["transfer_bytes", "wgsize"],
        }
    if files.task == "classifyapp":
        from programl.data.poj104 import OPT_SETTINGS

        settings = config.get("settings") or [0]
        return {
            "sources": "C/C++ programs, compiled as the POJ-104 graphs were (C++11, ProGraML's header of "
            "includes, void main -> int main; fallback recipes), with the flags below",
            "flags": list(OPT_SETTINGS[settings[0]]),
            "settings": list(settings),
        }
    return {"sources": "anything `programl build` reads (.ll, .bc, .c, .cc, .cl, ...)"}


def _scores(files: RunFiles) -> dict[str, Any]:
    """The test scores of ``result.json`` (the confusion matrices and per-class lists left out)."""
    result = files.result
    drop = ("confusion_matrix", "per_class_accuracy", "rows", "predictions")
    if files.task == "dataflow":
        keep = (
            "split",
            "checkpoint",
            "checkpoint_epoch",
            "best_epoch",
            "best_val_f1",
            "paper_ddf30",
            "train_examples_seen",
            "train_examples_available",
            "val_examples",
        )
        out = {k: result[k] for k in keep if k in result}
        out["tests"] = {
            name: {k: v for k, v in test.items() if k not in drop} for name, test in (result.get("tests") or {}).items()
        }
        return out
    if files.task == "devmap":
        out = {k: result[k] for k in ("fold", "best_epoch", "val_accuracy", "epochs", "static_device") if k in result}
        out["test"] = dict(result.get("test") or {})
        if files.report:
            out["cross_validation"] = {
                k: files.report[k]
                for k in ("folds", "examples", "mean", "std", "static_mapping_accuracy")
                if k in files.report
            }
        return out
    out = {k: result[k] for k in ("checkpoint", "checkpoint_epoch", "best_epoch", "best_val_accuracy") if k in result}
    for split in ("test", "val", "legacy"):
        if isinstance(result.get(split), dict):
            out[split] = {k: v for k, v in result[split].items() if k not in drop}
    return out


def _compute(files: RunFiles) -> dict[str, Any]:
    """Training time as the run recorded it (None where it did not)."""
    result = files.result
    if files.task == "devmap":
        return {
            "train_seconds": files.fold_seconds,
            "processes": 1,
            "device": None,
            "machine": None,
            "all_folds_seconds": files.platform_seconds,
        }
    return {
        "train_seconds": result.get("train_seconds"),
        "processes": result.get("world_size"),
        "threads": result.get("threads"),
        "device": result.get("device"),
        "machine": result.get("machine"),
        "seconds_by_device": files.seconds_by_device,
        "facts_from_log_epoch": files.facts_from_log,
    }


def _equivalent_command(files: RunFiles) -> str:
    extra = f" --platform {files.platform} --only-folds {files.fold}" if files.task == "devmap" else ""
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

    config = files.config["model"]
    metadata: dict[str, Any] = {"format": FORMAT, "name": name, "task": files.task}
    if files.task == "dataflow":
        metadata["analysis"] = config.get("analysis")
        metadata["steps"] = config.get("steps")
    if files.task == "devmap":
        metadata["platform"] = files.platform
    metadata.update(
        model=spec,
        parameters=parameters,
        weights={"file": WEIGHTS_FILE, "sha256": sha256_bytes(weights), "bytes": len(weights)},
        vocabulary={"file": VOCAB_FILE, "sha256": sha256_bytes(vocab), "entries": vocabulary_size},
        outputs=_outputs(files),
        inputs=_inputs(files),
        scores=_scores(files),
        compute=_compute(files),
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
        output_dir: Where to write (default: the package's ``programl/models/weights``).
        platform, fold, card_from: See :func:`read_run`.
        command, commit: The command and commit that trained the run, when known (the run directory does not
            record them; without ``command`` an equivalent one made from ``config.json`` is written).
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
    from programl.models.card import model_card

    files = read_run(run_dir, platform=platform, fold=fold, card_from=card_from)
    name = name or default_name(files)
    if not _NAME.fullmatch(name):
        raise ProgramlError(f"{name!r}: a model name is letters, digits, '.', '_' and '-' (not first)")
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
