"""``MODEL_CARD.md`` of a pretrained model, written from its ``model.json`` alone (issue 11 item 6; the protocols
of SPEC §6.1, §6.5, §6.6 and the published numbers of §7).

Sections: what the model predicts, data, protocol (the training options), scores, compute, limitations, provenance
and use. Every number is one that ``model.json`` holds (copied there from the run's files by
:mod:`programl.models.export`); a number the run did not record is written "not recorded".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["model_card"]

NOT_RECORDED = "not recorded"
TITLES = {
    "dataflow": "ProGraML data-flow GGNN",
    "devmap": "ProGraML OpenCL device mapping",
    "classifyapp": "ProGraML POJ-104 algorithm classification",
}


def _fmt(value: Any, spec: str = "") -> str:
    if value is None:
        return NOT_RECORDED
    if isinstance(value, float) and spec:
        return format(value, spec)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def _task_line(m: Mapping[str, Any]) -> str:
    if m["task"] == "dataflow":
        return f"dataflow ({m.get('analysis')})"
    if m["task"] == "devmap":
        return f"devmap ({m.get('platform')})"
    return "classifyapp (POJ-104)"


def _overview(m: Mapping[str, Any]) -> list[str]:
    network = f"`{m['model']['class']}`, {_fmt(m.get('parameters'))} parameters"
    if m.get("steps") is not None:
        network += f", T = {m['steps']} message-passing steps"
    if m["model"].get("kwargs", {}).get("root_context"):
        network += "; not the paper's model: its readout also reads the root's states (`root_context`)"
    w, v = m["weights"], m["vocabulary"]
    classes = m["outputs"]["classes"]
    shown = ", ".join(classes) if len(classes) <= 4 else f"{len(classes)} classes ({classes[0]} .. {classes[-1]})"
    return [
        f"# {m['name']}: {TITLES[m['task']]}",
        "",
        f"Predicts {m['outputs']['meaning']}.",
        "",
        *_table(
            ("", ""),
            [
                ("task", _task_line(m)),
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
    config = m["training"]["config"]
    options = config.get("model", {})
    scope = config.get("scope", {})
    lines = ["", "## Data", ""]
    if m["task"] == "dataflow":
        lines.append(
            f"DeepDataFlow data set `{_fmt(config.get('dataset'))}`, analysis {options.get('analysis')}: "
            f"{_fmt(scope.get('train_examples_available'))} training examples, a fixed validation sample of "
            f"{_fmt(scope.get('val_examples'))} (of {_fmt(scope.get('val_examples_available'))}); examples with more "
            f"than {_fmt(options.get('max_steps'))} data-flow steps (DDF-{options.get('max_steps')}) and graphs of "
            f"more than {_fmt(options.get('max_nodes'))} nodes are left out of training and validation. The "
            f"vocabulary is the data set's ({_fmt(scope.get('vocabulary'))} texts)."
        )
    elif m["task"] == "devmap":
        folds = options.get("folds")
        subset = options.get("subset")
        lines.append(
            f"OpenCL DevMap, platform {m.get('platform')}: "
            + (
                f"a stratified sample of {subset} of the 680 kernels-with-inputs"
                if subset
                else "the 680 kernels-with-inputs"
            )
            + f", graphs of the `{options.get('variant')}` variant; {_fmt(folds)}-fold stratified cross-validation "
            f"(seed {_fmt(options.get('fold_seed'))}). This is the model of fold {m['training'].get('fold')}: "
            f"trained on {_fmt(folds - 2 if isinstance(folds, int) else None)} fold(s), its epoch chosen on one more "
            f"(validation), tested on fold {m['training'].get('fold')}. Sources: `{_fmt(config.get('source_dir'))}`."
        )
    else:
        graphs = scope.get("graphs", {})
        per_class = options.get("per_class")
        lines.append(
            f"POJ-104 programs compiled by clang-22 at optimisation settings {options.get('settings')}, split 3:1:1 "
            f"per class by program (seed {_fmt(options.get('split_seed'))})"
            + (f", {per_class} programs per class" if per_class else ", all programs")
            + f": {_fmt(graphs.get('train'))} training, {_fmt(graphs.get('val'))} validation and "
            f"{_fmt(graphs.get('test'))} test graphs. Graphs: `{_fmt(config.get('data_dir'))}`."
        )
    return lines


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


def _dataflow_scores(s: Mapping[str, Any]) -> list[str]:
    rows = []
    for name, t in s.get("tests", {}).items():
        limit = t.get("max_data_flow_steps")
        rows.append(
            (
                name,
                _fmt(t.get("steps")),
                f"DDF-{limit}" if limit else "all",
                _fmt(t.get("examples")),
                _fmt(t.get("precision"), ".3f"),
                _fmt(t.get("recall"), ".3f"),
                _fmt(t.get("f1"), ".3f"),
                _fmt(t.get("pooled_f1"), ".3f"),
            )
        )
    lines = [
        f"Split `{s.get('split', 'test')}`, checkpoint of epoch {_fmt(s.get('checkpoint_epoch'))} (best "
        f"validation F1 {_fmt(s.get('best_val_f1'), '.4f')}); precision, recall and F1 of the true class, "
        "averaged over batches weighted by nodes (the paper's numbers) and pooled over all nodes:",
        "",
    ]
    lines += _table(("test", "T", "filter", "examples", "precision", "recall", "F1", "pooled F1"), rows)
    paper = s.get("paper_ddf30")
    if paper:
        lines += [
            "",
            f"Published (ProGraML, DDF-30): precision {paper.get('precision')}, recall "
            f"{paper.get('recall')}, F1 {paper.get('f1')}.",
        ]
    return lines


def _devmap_scores(s: Mapping[str, Any]) -> list[str]:
    t = s.get("test", {})
    lines = [
        f"Fold {_fmt(s.get('fold'))} (epoch {_fmt(s.get('best_epoch'))} of {_fmt(s.get('epochs'))}, "
        f"validation accuracy {_fmt(s.get('val_accuracy'), '.3f')}), on its test kernels:",
        "",
    ]
    keys = ("accuracy", "precision", "recall", "f1", "f1_gpu", "speedup_geomean", "oracle_speedup_geomean")
    lines += _table(keys, [tuple(_fmt(t.get(k), ".3f") for k in keys)])
    cv = s.get("cross_validation")
    if cv:
        mean, std = cv.get("mean", {}), cv.get("std", {})
        lines += [
            "",
            f"Cross-validation over {_fmt(cv.get('folds'))} folds ({_fmt(cv.get('examples'))} test "
            "predictions), mean ± standard deviation over folds:",
            "",
        ]
        lines += _table(keys, [tuple(f"{_fmt(mean.get(k), '.3f')} ± {_fmt(std.get(k), '.3f')}" for k in keys)])
        lines += ["", f"Static mapping accuracy: {_fmt(cv.get('static_mapping_accuracy'), '.3f')}."]
    return lines


def _classifyapp_scores(s: Mapping[str, Any]) -> list[str]:
    rows = [
        (
            split,
            _fmt(s[split].get("count")),
            _fmt(100 * s[split]["error"] if "error" in s[split] else None, ".2f"),
            _fmt(s[split].get("accuracy"), ".4f"),
        )
        for split in ("test", "val", "legacy")
        if split in s
    ]
    lines = [
        f"Checkpoint of epoch {_fmt(s.get('checkpoint_epoch'))} (best validation accuracy "
        f"{_fmt(s.get('best_val_accuracy'), '.4f')}); top-1:",
        "",
    ]
    return lines + _table(("split", "graphs", "error %", "accuracy"), rows)


def _scores(m: Mapping[str, Any]) -> list[str]:
    scorer = {"dataflow": _dataflow_scores, "devmap": _devmap_scores, "classifyapp": _classifyapp_scores}[m["task"]]
    return ["", "## Scores", "", f"From `{m['training'].get('results')}`.", "", *scorer(m.get("scores", {}))]


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
    if m["task"] == "devmap":
        lines[-1] = (
            f"Training this fold: {_fmt(seconds, '.1f')} s (the sum of its epochs in `log.jsonl`); all "
            f"folds of the platform: {_fmt(c.get('all_folds_seconds'), '.1f')} s; one process, device "
            f"{_fmt(device)}."
        )
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
    if init_from and m["task"] != "devmap":
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
    options = m["training"]["config"].get("model", {})
    items = [
        "Node texts outside the vocabulary all share one embedding; graphs from other front ends or LLVM "
        "versions than the training graphs' (LLVM 22, opaque pointers) are off the training distribution."
    ]
    if m["task"] == "dataflow":
        tested = m.get("scores", {}).get("tests", {})
        compare = (
            f"compare the rows of T > {options.get('max_steps')} above"
            if any((t.get("steps") or 0) > (options.get("max_steps") or 0) for t in tested.values())
            else "not measured for this model beyond T=" + str(options.get("steps"))
        )
        items.append(
            f"Trained and validated on examples of at most {options.get('max_steps')} data-flow steps; "
            f"roots whose analysis needs more steps than the model runs are predicted less well ({compare}). "
            "`programl predict dataflow --compare FILE` shows the exact labels beside the predicted ones."
        )
    elif m["task"] == "devmap":
        items.append(
            "One prediction per graph, i.e. per .cl file, as in training. The auxiliary inputs (bytes "
            "transferred, work-group size) change the prediction: without them, `programl predict` uses the "
            "DevMap medians of the platform."
        )
        items.append(
            f"Trained on fold {m['training'].get('fold')}'s training kernels only: most DevMap kernels "
            "were seen in training; the scores above are on the held-out fold."
        )
        if m.get("inputs", {}).get("variant") == "ncc":
            items.append(
                "Trained on graphs of NCC's released IR (LLVM 3.8), not clang-22's: graphs of sources "
                "compiled here are off the training distribution."
            )
    else:
        items.append(
            "The classes are POJ-104's 104 programming problems (student solutions); any other program "
            "still gets five classes. Sources are compiled as in training (C++11, ProGraML's header, "
            f"flags {m.get('inputs', {}).get('flags')}); IR made otherwise is off the training "
            "distribution."
        )
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
    command = {
        "dataflow": f"programl predict dataflow --analysis {m.get('analysis')}"
        + (f" --model {m['name']}" if m["name"] != m.get("analysis") else "")
        + " FILE.ll --roots 3 --compare",
        "devmap": f"programl predict devmap --platform {m.get('platform')} KERNEL.cl --transfer BYTES --wgsize N",
        "classifyapp": "programl predict classifyapp PROGRAM.cc",
    }[m["task"]]
    return [
        "",
        "## Use",
        "",
        "```",
        command,
        "```",
        "",
        "```python",
        "from programl.models import pretrained",
        "",
        f"model = pretrained({m['name']!r})   # .model (eval mode), .vocabulary, .metadata, .card",
        "prediction = model.predict(graph)   # graph: a programl.ProgramGraph",
        "```",
    ]


def model_card(metadata: Mapping[str, Any]) -> str:
    """The text of ``MODEL_CARD.md`` for a model's ``metadata`` (``model.json``)."""
    parts = [_overview, _data, _protocol, _scores, _compute, _limitations, _provenance, _use]
    return "\n".join(line for part in parts for line in part(metadata)) + "\n"
