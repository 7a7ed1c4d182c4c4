"""``MODEL_CARD.md`` of a pretrained model, written from its ``model.json`` alone (the protocols
of docs/spec/tasks.md and the published numbers of docs/spec/tasks.md#published-numbers).

Sections: what the model predicts, data, protocol (the training options), scores, compute, limitations, provenance
and use. Every number is one that ``model.json`` holds (copied there from the run's files by
:mod:`programl.pretrained.export`); a number the run did not record is written "not recorded".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from programl.tasks.registry import get_task
from programl.util.text import fmt as _fmt
from programl.util.text import markdown_table as _table

__all__ = ["model_card"]


def _overview(m: Mapping[str, Any]) -> list[str]:
    network = f"`{m['model']['class']}`, {_fmt(m.get('parameters'))} parameters" + get_task(m["task"]).card_network(m)
    w, v = m["weights"], m["vocabulary"]
    classes = m["outputs"]["classes"]
    shown = ", ".join(classes) if len(classes) <= 4 else f"{len(classes)} classes ({classes[0]} .. {classes[-1]})"
    return [
        f"# {m['name']}: {get_task(m['task']).title}",
        "",
        f"Predicts {m['outputs']['meaning']}.",
        "",
        *_table(
            ("", ""),
            [
                ("task", get_task(m["task"]).card_task_line(m)),
                ("network", network),
                (
                    "vocabulary",
                    f"{_fmt(v.get('entries'))} node texts (`{v['file']}`; any other text gets one shared id)",
                ),
                ("outputs", f"{m['outputs']['level']}-level: {shown}"),
                ("weights", f"`{w['file']}`, {_fmt(w.get('bytes'))} bytes, sha256 `{w.get('sha256')}`"),
            ],
        ),
    ]


def _data(m: Mapping[str, Any]) -> list[str]:
    return ["", "## Data", "", *get_task(m["task"]).card_data(m)]


def _protocol(m: Mapping[str, Any]) -> list[str]:
    options = m["training"]["config"].get("model", {})
    rows = [(f"`{k}`", f"`{options[k]}`") for k in sorted(options)]
    return [
        "",
        "## Protocol",
        "",
        "The options of the training run (its `config.json`); the model kept is the "
        "checkpoint with the best validation score (`best.pt`).",
        "",
        *_table(("option", "value"), rows),
    ]


def _scores(m: Mapping[str, Any]) -> list[str]:
    scores = get_task(m["task"]).card_scores(m.get("scores", {}))
    return ["", "## Scores", "", f"From `{m['training'].get('results')}`.", "", *scores]


def _machine(compute: Mapping[str, Any]) -> str:
    """The machine a run trained on, or that it was not recorded (said of the machine, beside a device name)."""
    machine = compute.get("machine")
    return "machine not recorded" if machine is None else _fmt(machine)


def _compute(m: Mapping[str, Any]) -> list[str]:
    c = m.get("compute", {})
    seconds, processes = c.get("train_seconds"), c.get("processes")
    device = c.get("device")
    kind = "GPU" if isinstance(device, str) and device.startswith("cuda") else "CPU"
    threads = c.get("threads") or 1  # runs from before results recorded threads: one per process
    hours = seconds * processes * threads / 3600 if seconds is not None and processes else None
    per_process = f" of {threads} thread(s)" if c.get("threads") else ""
    lines = [
        "",
        "## Compute",
        "",
        f"Training: {_fmt(seconds, '.1f')} s wall-clock on {_fmt(processes)} process(es){per_process}, device "
        f"{_fmt(device)} ({_machine(c)}): {_fmt(hours, '.3f')} {kind}-hours (wall-clock x "
        f"processes{' x threads' if per_process else ''}; testing not included).",
    ]
    by_device = c.get("seconds_by_device") or {}
    if len(by_device) > 1:  # a run that moved between devices: each device's share in its own unit
        shares = ", ".join(
            f"{_fmt(float(secs), ',.1f')} s on {name}: "
            f"{_fmt(secs * (processes or 1) * (threads if name == 'cpu' else 1) / 3600, '.3f')} "
            f"{'CPU' if name == 'cpu' else 'GPU'}-hours"
            for name, secs in by_device.items()
        )
        lines[-1] = (
            f"Training: {_fmt(seconds, '.1f')} s wall-clock on {_fmt(processes)} process(es){per_process} and "
            f"{len(by_device)} kinds of device (the last process's: {_fmt(device)}, {_machine(c)}); by "
            f"the device each epoch of `log.jsonl` ended on: {shares} (CPU-hours: wall-clock x processes x threads; "
            "GPU-hours: x processes; testing not included)."
        )
    lines[-1] = get_task(m["task"]).card_compute(m, lines[-1])
    if c.get("facts_from_log_epoch") is not None:
        lines += [
            "",
            f"The scores file holds no training facts: the time, device and threads above are those of the run's "
            f"`log.jsonl` at its epoch {c['facts_from_log_epoch']} (the processes: `config.json`; the best epoch: the "
            "checkpoint).",
        ]
    if c.get("note"):
        lines += ["", c["note"]]
    init_from = m["training"]["config"].get("model", {}).get("init_from")
    if init_from and get_task(m["task"]).counts_init_from:
        before, epoch = m["training"].get("init_from_epoch"), m["training"].get("checkpoint_epoch")
        counted = (
            f"; a checkpoint of epoch {before}, so this model's epoch {epoch} is epoch {before + epoch} counting "
            "the epochs before it"
            if isinstance(before, int) and isinstance(epoch, int)
            else ""
        )
        lines.append("")
        lines.append(
            f"This run started from the weights of `{init_from}` (fine-tuning{counted}): the hours above are this "
            "run's only; `docs/runs.md` logs the runs before it."
        )
    return lines


def _limitations(m: Mapping[str, Any]) -> list[str]:
    items = [
        "Node texts outside the vocabulary all share one embedding; graphs from other front ends or LLVM "
        "versions than the training graphs' (LLVM 22, opaque pointers) are off the training distribution.",
        *get_task(m["task"]).card_limitations(m),
    ]
    return ["", "## Limitations", "", *[f"* {item}" for item in items]]


def _provenance(m: Mapping[str, Any]) -> list[str]:
    t = m["training"]
    command = t.get("command")
    how = "as recorded" if t.get("command_recorded") else "an equivalent command, made from the run's config.json"
    return [
        "",
        "## Provenance",
        "",
        f"* Run directory: `{t.get('run_dir')}`, checkpoint `{t.get('checkpoint')}` (epoch "
        f"{_fmt(t.get('checkpoint_epoch'))}).",
        f"* Command ({how}): `{command}`.",
        f"* Commit: {_fmt(t.get('commit'))}.",
        f"* Exported with programl {m.get('exported_with', {}).get('programl')}.",
    ]


def _use(m: Mapping[str, Any]) -> list[str]:
    command = get_task(m["task"]).predict_command(m)
    return [
        "",
        "## Use",
        "",
        "```",
        command,
        "```",
        "",
        "```python",
        "from programl.pretrained import pretrained",
        "",
        f"model = pretrained({m['name']!r})   # .model (eval mode), .vocabulary, .metadata, .card",
        "prediction = model.predict(graph)   # graph: a programl.ProgramGraph",
        "```",
    ]


def model_card(metadata: Mapping[str, Any]) -> str:
    """The text of ``MODEL_CARD.md`` for a model's ``metadata`` (``model.json``)."""
    parts = [_overview, _data, _protocol, _scores, _compute, _limitations, _provenance, _use]
    return "\n".join(line for part in parts for line in part(metadata)) + "\n"
