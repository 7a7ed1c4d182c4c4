"""What a finished run directory of ``programl train <task>`` holds, as the model zoo's export reads it
(``programl export-pretrained``): :class:`RunFiles` and the readers of a run's ``log.jsonl``. No torch."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError

__all__ = ["RunFiles", "read_log_records", "read_log_seconds", "read_log_seconds_by_device"]


@dataclass
class RunFiles:
    """What the model zoo's export (``programl export-pretrained``) found of a run to export.

    Attributes:
        task: The task's name (:data:`programl.tasks.registry.TASKS`).
        config: The run's ``config.json``.
        checkpoint, vocabulary: ``best.pt`` and ``vocab.csv`` of the exported model.
        result: Its test results (``result.json``, or the ``--card-from`` file) and where they came from.
        platform, fold: The devmap platform and fold (else None).
        report: The devmap platform's cross-validation ``report.json`` (else None).
        fold_seconds: Training seconds of a devmap fold and of all folds of the platform (from ``log.jsonl``).
        seconds_by_device: dataflow and classifyapp: training seconds by device (from ``log.jsonl``; None where
            its epochs do not record their device).
        facts_from_log: The last epoch of ``log.jsonl`` when the training facts of ``result`` came from the log and
            the checkpoint (a ``--card-from`` file of scores only), else None.
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


def read_log_records(path: Path) -> list[dict[str, Any]] | None:
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


def read_log_seconds(path: Path) -> float | None:
    """The sum of the ``seconds`` of the epochs of a ``log.jsonl`` (None when there is no log)."""
    records = read_log_records(path)
    return None if records is None else sum(float(r.get("seconds", 0.0)) for r in records)


def read_log_seconds_by_device(path: Path) -> dict[str, float] | None:
    """The ``seconds`` of a ``log.jsonl``'s epochs summed by the device each epoch ended on (``cpu``, ``cuda``);
    None when there is no log or an epoch does not say (logs from before epochs recorded their device)."""
    records = read_log_records(path)
    if not records or any(not isinstance(r.get("device"), str) for r in records):
        return None
    out: dict[str, float] = {}
    for record in records:
        out[record["device"]] = out.get(record["device"], 0.0) + float(record.get("seconds", 0.0))
    return dict(sorted(out.items()))
