"""Build a DeepDataFlow data set: compile, build graphs, label them with the five analyses, split, make the vocabulary.

Implements the data-set side of docs/spec/datasets.md#deepdataflow-layout / docs/spec/datasets.md#builds for our own
inputs (``programl dataset build``):

1. every :class:`~programl.data.deepdataflow.inputs.Input` runs in a worker (a
   :class:`~programl.util.executor.TimeoutProcessPool` by default, or any executor with ``submit``, e.g. dask's
   ``client.get_executor()``) with a timeout (and, in the default pool, a memory limit): compile with clang-22 (or
   read IR), build the graph, run the analyses (docs/spec/analyses.md) and write ``ir/``, ``graphs/`` and
   ``labels/<analysis>/`` atomically;
2. the main process appends one line per input to ``manifest.jsonl`` (source, flags, content hash, status, error,
   timings, node/edge counts, and per analysis the number of records and their step counts) as inputs finish, so an
   interrupted build loses at most the inputs in flight; a rerun skips every input whose manifest line has the same
   content hash (the freshness key of :mod:`programl.util.freshness`: over the input, its flags with paths inside
   the data set taken relative to it, the build settings and the programl version, so a copy of the data set is up
   to date) and whose outputs exist, and does not retry inputs that failed unless asked (or unless they failed for
   a reason outside the input, such as a full disk);
3. when all inputs are done: the seeded 3:1:1 split by source program
   (:func:`~programl.data.deepdataflow.split.split_groups`) as ``train|val|test/`` symlinks, the vocabulary of the
   *training* graphs only (``vocab/programl.csv``, the paper's statement; ProGraML's generator counted all graphs,
   docs/spec/models.md#vocabulary), a compacted manifest and a summary ``dataset.json``.

A failing input (compile error, timeout, crash) is recorded and counted, never fatal; with any executor it comes
back as a value (dask logs no "Compute Failed" traceback for it). An interrupted build (Ctrl-C) kills the inputs in
flight and re-raises; what finished is in the manifest, so a rerun resumes. Label files follow
``programl analyze``: a graph with no eligible root for an analysis (or on which the analysis gives up) gets no
label file, and its manifest line says why. Roots are sampled as by :func:`programl.dataflow.analyze_arrays` with
a per-graph seed derived from the build seed and the graph's name (:func:`graph_seed`), so labels do not depend on
the order or the number of inputs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from programl.data.deepdataflow.inputs import Input
from programl.data.deepdataflow.layout import SPLITS, Layout
from programl.data.deepdataflow.split import split_groups, write_split_links
from programl.data.manifest import Manifest
from programl.data.pipeline import error_text, run_tasks
from programl.data.report import BuildReport as _BuildReport
from programl.dataflow.names import ANALYSES, check_analysis

__all__ = [
    "FORMAT_VERSION",
    "BuildReport",
    "BuildTask",
    "build_dataset",
    "build_input",
    "finalize",
    "graph_seed",
    "load_summary",
]

#: Bumped when a change of this builder changes its outputs (part of every input's content hash).
FORMAT_VERSION = 1
_BITCODE_MAGIC = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")
#: Step-count limits summarised in ``dataset.json`` (DDF-30, DDF-60, DDF-200; docs/spec/tasks.md#deepdataflow-sizes).
STEP_LIMITS = (30, 60, 200)


def graph_seed(seed: int, name: str) -> int:
    """The root-sampling seed of one graph: 63 bits of ``sha256(f"{seed}:{name}")``."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "little") >> 1


@dataclass(frozen=True)
class BuildTask:
    """What a worker needs for one input."""

    input: Input
    root: str
    analyses: tuple[str, ...]
    max_roots: int
    seed: int
    timeout: float | None
    label_format: str = "compact"


def _compile(item: Input, timeout: float | None) -> tuple[str | bytes, dict[str, Any]]:
    """The IR of an input (text, or the bytes of an IR file as read), and facts for the manifest.

    An IR file's bytes go to the parser as they are, as ``programl build`` does: decoding them here would give
    another error (a character rather than a byte column, U+FFFD for bytes that are not UTF-8) for the same file.
    """
    from programl.exceptions import GraphCreationError
    from programl.graph_builder import clang, compilers

    if item.kind == "ir":
        data = item.content()
        if not data.strip():
            raise GraphCreationError("empty file", item.path or item.source or item.name)
        if data.startswith(_BITCODE_MAGIC):
            from programl.graph_builder.llvm import parse_bitcode

            module = parse_bitcode(data, item.path)
            try:
                return str(module), {}
            finally:
                module.close()
        return data, {}
    if item.kind == "source":
        if item.text is not None:
            return clang.compile_source(item.text, item.language or "c++", item.flags, timeout=timeout), {}
        return compilers.compile_file(item.path, item.flags, language=item.language, timeout=timeout), {}
    if item.kind == "poj104":
        from programl.data import poj104

        ir, recipe = poj104.compile_program(item.text or "", item.flags, pch=dict(item.extra) or None, timeout=timeout)
        return ir, {"recipe": recipe.name}
    raise GraphCreationError(f"unknown input kind {item.kind!r}", item.source or item.name)


def build_input(task: BuildTask) -> dict[str, Any]:
    """Compile, build, label and write one input (runs in a worker); returns the manifest facts.

    Raises:
        GraphCreationError: The input does not compile or its IR does not parse.
        TimeoutError: clang ran past the timeout.
    """
    from programl.data.deepdataflow.labels import write_labels
    from programl.dataflow import GraphView, analyze_arrays
    from programl.exceptions import AnalysisError
    from programl.graph_builder.llvm import graph_from_ir

    layout = Layout(task.root)
    item = task.input
    start = time.perf_counter()
    ir, facts = _compile(item, task.timeout)
    compiled = time.perf_counter()
    module_name = item.path if item.text is None and item.path else "-"
    graph = graph_from_ir(ir, path=item.path or item.source or None, module_name=module_name)
    built = time.perf_counter()
    writes = _Writes()
    try:
        # each file is written, fsync'ed and renamed in a thread while the analyses run (the worker returns once
        # all are on disk, so a manifest line never names a file that is not)
        writes.write(layout.ir(item.name), ir if isinstance(ir, bytes) else ir.encode("utf-8"))
        writes.write(layout.graph(item.name), graph.SerializeToString(deterministic=True))
        view = GraphView.from_graph(graph)
        labels: dict[str, Any] = {}
        results = {}
        analysis_seconds: dict[str, float] = {}
        seed = graph_seed(task.seed, item.name)
        for analysis in task.analyses:
            t0 = time.perf_counter()
            try:
                result = analyze_arrays(view, analysis, max_roots=task.max_roots, seed=seed)
            except AnalysisError as error:
                labels[analysis] = {"records": 0, "reason": str(error)}
            else:
                results[analysis] = result
                labels[analysis] = {"records": len(result), "steps": [int(s) for s in result.step_counts]}
            analysis_seconds[analysis] = round(time.perf_counter() - t0, 4)
        t0 = time.perf_counter()
        write_labels(layout, item.name, results, task.analyses, task.label_format, write=writes.write)
    except BaseException:
        writes.wait(raise_error=False)  # no write may land after the failure's clean-up
        raise
    writes.wait()
    written = time.perf_counter() - t0
    return {
        **facts,
        "nodes": len(graph.node),
        "edges": len(graph.edge),
        "labels": labels,
        "seconds": {
            "compile": round(compiled - start, 4),
            "build": round(built - compiled, 4),
            "analyses": analysis_seconds,
            "labels": round(written, 4),
            "total": round(time.perf_counter() - start, 4),
        },
    }


_WRITERS: tuple[int, Any] | None = None  # (pid, thread pool) of this worker process


class _Writes:
    """The atomic writes of one input, run in threads of a per-process pool so that their ``fsync`` s wait beside
    each other and beside the analyses (three files written one after another waited for three journal commits
    in a row). :meth:`wait` returns when all are done and raises the first write's error."""

    def __init__(self) -> None:
        global _WRITERS
        if _WRITERS is None or _WRITERS[0] != os.getpid():  # a forked child does not inherit the threads
            from concurrent.futures import ThreadPoolExecutor

            _WRITERS = (os.getpid(), ThreadPoolExecutor(max_workers=8, thread_name_prefix="programl-write"))
        self._pool = _WRITERS[1]
        self._futures: list = []

    def write(self, path: Path, data: bytes) -> None:
        """:func:`programl.util.fs.atomic_write_bytes` in a thread."""
        from programl.util.fs import atomic_write_bytes

        self._futures.append(self._pool.submit(atomic_write_bytes, path, data))

    def wait(self, raise_error: bool = True) -> None:
        errors = [f.exception() for f in self._futures]  # waits for every one
        self._futures = []
        first = next((e for e in errors if e is not None), None)
        if first is not None and raise_error:
            raise first


@dataclass
class BuildReport(_BuildReport):
    """What :func:`build_dataset` did: the counts of :class:`programl.data.report.BuildReport` (``built``,
    ``skipped``, ``failed``, ``errors`` - here the writes of ``manifest.jsonl``, the splits, the vocabulary and
    ``dataset.json`` - and ``seconds``), and the data set after the build.

    Attributes:
        splits: Graphs per split after the build.
        examples: Label records per analysis and split (``{analysis: {split: count}}``).
        within_steps: Label records with a step count up to 30, 60 and 200, ``{analysis: {split: {"30": n}}}``.
        vocabulary_size: Entries of the training vocabulary.
    """

    splits: dict[str, int] = field(default_factory=dict)
    examples: dict[str, dict[str, int]] = field(default_factory=dict)
    within_steps: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    vocabulary_size: int | None = None


def _describe(item: Input, digest: str) -> dict[str, Any]:
    return {
        "name": item.name,
        "group": item.group,
        "source": item.source or item.path or item.name,
        "kind": item.kind,
        "language": item.language,
        "flags": list(item.flags),
        "sha256": digest,
    }


def _remove_outputs(layout: Layout, name: str, analyses: Iterable[str]) -> None:
    labels = (layout.compact_labels(name), *(layout.labels(a, name) for a in analyses))
    for path in (layout.graph(name), layout.ir(name), *labels):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _outputs_exist(layout: Layout, entry: dict[str, Any]) -> bool:
    """Whether the graph and a label file (in either form) for every analysis with records are there."""
    name = entry["name"]
    if not layout.graph(name).is_file():
        return False
    compact: bool | None = None
    for analysis, info in (entry.get("labels") or {}).items():
        if info.get("records") and not layout.labels(analysis, name).is_file():
            if compact is None:
                compact = layout.compact_labels(name).is_file()
            if not compact:
                return False
    return True


def build_dataset(
    inputs: Sequence[Input],
    root: str | os.PathLike,
    *,
    analyses: Sequence[str] = ANALYSES,
    seed: int = 204,
    max_roots: int = 10,
    jobs: int | None = None,
    timeout: float | None = 300,
    max_memory: int | None = None,
    executor: Any = None,
    retry_failed: bool = False,
    force: bool = False,
    label_format: str = "compact",
    progress: Callable[[Iterable, int, str], Iterable] | None = None,
    on_entry: Callable[[dict[str, Any]], None] | None = None,
    on_failure: Callable[[str, BaseException], None] | None = None,
) -> BuildReport:
    """Build (or bring up to date) the data set at ``root`` from ``inputs``; see the module docstring.

    Args:
        inputs: What to build (names must be unique).
        root: The data set directory (created).
        analyses: Analyses to label with (default: all five).
        seed: Seed of the root samples (per graph, :func:`graph_seed`) and of the split.
        max_roots: Most label records per graph and analysis (docs/spec/analyses.md#common-rules: 10).
        jobs: Worker processes of the default pool (default: all CPUs).
        timeout: Seconds per input (the default pool kills a worker that runs past it; other executors only stop
            waiting). ``None`` or ``math.inf``: no limit.
        max_memory: Address-space limit in bytes of each worker of the default pool (and of the clang it starts);
            ``None``: no limit. Other executors manage their own memory (dask: ``memory_limit`` of its workers).
        executor: Anything with ``submit`` (e.g. dask's ``client.get_executor()``); default: a process pool.
        retry_failed: Rebuild inputs whose last build failed (default: keep the recorded failure).
        force: Rebuild every input.
        label_format: ``compact`` (one small file per graph, the default) or ``protobuf`` (the original's file per
            graph and analysis, byte-identical to earlier builds); :mod:`~programl.data.deepdataflow.labels`. Not
            part of an input's content hash: the label files of inputs that are up to date but in the other form
            are converted (nothing is compiled again).
        progress: Wraps the stream of finished inputs, ``progress(iterable, total, description)`` (a progress bar).
        on_entry: Called with each new manifest entry after it is written.
        on_failure: Called with ``(name, error)`` for each input that fails now.

    Returns:
        A :class:`BuildReport`.

    Raises:
        ValueError: Two inputs share a name, an analysis or the label format is unknown, or ``timeout`` or
            ``max_memory`` is invalid.
        PoolError: The default pool could not start its workers (what finished is in the manifest).
        KeyboardInterrupt: Interrupted; the inputs in flight were killed (what finished is in the manifest).
    """
    from programl.data.deepdataflow.labels import check_label_format
    from programl.graph_builder.llvm import LLVM_VERSION
    from programl.util.executor import check_max_memory, check_timeout

    start = time.perf_counter()
    check_label_format(label_format)
    timeout = check_timeout(timeout)
    max_memory = check_max_memory(max_memory)
    for analysis in analyses:
        check_analysis(analysis)
    names = [item.name for item in inputs]
    if len(set(names)) != len(names):
        duplicate = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"two inputs are named {duplicate!r}")
    layout = Layout(root)
    layout.root.mkdir(parents=True, exist_ok=True)
    analyses = tuple(analyses)
    config = {
        "format": FORMAT_VERSION,
        "seed": seed,
        "max_roots": max_roots,
        "analyses": list(analyses),
        "llvm": LLVM_VERSION,
    }
    report = BuildReport()
    manifest = Manifest(layout.manifest, report)
    entries = manifest.entries

    outputs_exist = functools.partial(_outputs_exist, layout)
    tasks: list[BuildTask] = []
    digests: dict[str, str] = {}
    for item in inputs:
        try:
            digest = item.digest(config, root=layout.root)
        except Exception as error:  # noqa: BLE001 - an unreadable input is a failure like any other
            entry = {**_describe(item, ""), "status": "failed", "error": error_text(error)}
            manifest.record(entry, sync=True)
            report.failed.append((item.name, entry["error"]))
            if on_failure:
                on_failure(item.name, error)
            continue
        digests[item.name] = digest
        if manifest.check(item.name, digest, outputs_exist, force=force, retry_failed=retry_failed):
            tasks.append(BuildTask(item, str(layout.root), analyses, max_roots, seed, timeout, label_format))

    # inputs that are up to date, their labels in the other form: converted (one that cannot be is built again)
    building = {task.input.name for task in tasks}
    done = [i for i in inputs if i.name not in building and (entries.get(i.name) or {}).get("status") == "ok"]
    if done:
        other = _in_other_format(layout, [i.name for i in done], analyses, label_format)
        if other:
            from programl.data.deepdataflow.labels import convert_labels

            workers = jobs or os.cpu_count() or 1
            failed = convert_labels(layout.root, label_format, other, analyses, jobs=workers, progress=progress)
            again = [i for i in done if i.name in failed]
            report.skipped -= len(again)
            tasks += [BuildTask(i, str(layout.root), analyses, max_roots, seed, timeout, label_format) for i in again]

    run_tasks(
        build_input,
        tasks,
        manifest,
        lambda task: _describe(task.input, digests[task.input.name]),
        jobs=jobs,
        timeout=timeout,
        max_memory=max_memory,
        executor=executor,
        progress=progress,
        on_failed=lambda task: _remove_outputs(layout, task.input.name, analyses),
        on_entry=on_entry,
        on_failure=on_failure,
    )

    current = {item.name for item in inputs}
    # each of these is a write of the data set's own files: one that fails (a full disk) is kept in report.errors
    # and the others are still tried, so that the command can say so on one line and a rerun can redo it
    report._write(
        layout.root,
        finalize,
        layout,
        [entries[n] for n in names if n in entries],
        seed=seed,
        analyses=analyses,
        report=report,
    )
    # compacted manifest: the current inputs in input order, then older entries by name
    manifest.compact(
        [entries[n] for n in names if n in entries] + [entries[n] for n in sorted(entries) if n not in current]
    )
    report.seconds = time.perf_counter() - start
    report._write(layout.summary, _write_summary, layout, report, {**config, "label_format": label_format}, len(inputs))
    return report


def _in_other_format(layout: Layout, names: Sequence[str], analyses: Sequence[str], label_format: str) -> list[str]:
    """Those of ``names`` with label files in the form that is not ``label_format`` (from directory listings)."""
    if label_format == "compact":
        other: set[str] = set()
        for analysis in analyses:
            other.update(layout.label_names(analysis, "protobuf"))
    else:
        other = set(layout.label_names(None, "compact"))
    return [name for name in names if name in other]


def finalize(
    layout: Layout,
    entries: Sequence[dict[str, Any]],
    *,
    seed: int = 204,
    analyses: Sequence[str] = ANALYSES,
    report: BuildReport | None = None,
) -> dict[str, str]:
    """Split the successfully built entries by group, write the split links and the training vocabulary.

    Returns:
        ``{name: split}``.
    """
    from programl.data.vocabulary import build_vocabulary
    from programl.io.files import read_graph
    from programl.util.fs import atomic_write_text

    ok = [e for e in entries if e.get("status") == "ok" and layout.graph(e["name"]).is_file()]
    by_group = split_groups((e["group"] for e in ok), seed=seed)
    assignment = {e["name"]: by_group[e["group"]] for e in ok}
    counts = write_split_links(layout, assignment)
    train = sorted(name for name, split in assignment.items() if split == "train")
    vocabulary = build_vocabulary(read_graph(layout.graph(name)) for name in train)
    # atomic_write_text rather than Vocabulary.save, which leaves its temporary file behind when a write fails
    atomic_write_text(layout.vocabulary, vocabulary.to_tsv())
    if report is not None:
        report.splits = counts
        report.examples = {a: dict.fromkeys(SPLITS, 0) for a in analyses}
        report.within_steps = {a: {s: dict.fromkeys(map(str, STEP_LIMITS), 0) for s in SPLITS} for a in analyses}
        for e in ok:
            split = assignment[e["name"]]
            for analysis in analyses:
                info = (e.get("labels") or {}).get(analysis) or {}
                report.examples[analysis][split] += int(info.get("records", 0))
                steps = info.get("steps", ())
                for limit in STEP_LIMITS:
                    report.within_steps[analysis][split][str(limit)] += sum(1 for s in steps if s <= limit)
        report.vocabulary_size = len(vocabulary)
    return assignment


def _write_summary(layout: Layout, report: BuildReport, config: dict[str, Any], inputs: int) -> None:
    from programl import __version__
    from programl.util.fs import atomic_write_text

    summary = {
        "format": "deepdataflow",
        "programl_version": __version__,
        "config": config,
        "inputs": inputs,
        "built_now": report.built,
        "up_to_date": report.skipped,
        "failed": len(report.failed),
        "graphs": report.splits,
        "examples": report.examples,
        "examples_within_steps": report.within_steps,
        "vocabulary_size": report.vocabulary_size,
        "seconds": round(report.seconds, 2),
    }
    atomic_write_text(layout.summary, json.dumps(summary, indent=2, sort_keys=True) + "\n")


def load_summary(root: str | os.PathLike) -> dict[str, Any]:
    """The ``dataset.json`` of a data set built here (an empty dict for other data sets)."""
    try:
        return json.loads(Path(Layout(root).summary).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
