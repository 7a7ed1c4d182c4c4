"""The data-flow task as the package sees it (docs/spec/tasks.md#data-flow-protocol,
docs/spec/tasks.md#deepdataflow-table): the network of a run's options, what its pretrained models' ``model.json`` and
cards say, and how ``programl predict dataflow`` uses them. No torch."""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from programl.dataflow.names import ANALYSES
from programl.exceptions import AnalysisError, ProgramlError
from programl.tasks.base import MAX_STEPS, TaskSpec, count_argument, require_options
from programl.tasks.dataflow.predict import STEP_FREE_MODES, DataflowPredictor, check_inference
from programl.tasks.options import SEED_RANGE, TaskOptions, add_options, option
from programl.tasks.run_files import RunFiles
from programl.tasks.run_options import (
    DATA_GROUP,
    RunOptions,
    checkpoint_minutes_option,
    config_option,
    epochs_option,
    evaluation_output_option,
    restart_option,
    run_dir_option,
    time_limit_option,
)
from programl.util.text import fmt, markdown_table

__all__ = [
    "ANALYSIS_MEANING",
    "EVAL_BATCH_NODES",
    "PROTOCOL_GROUP",
    "SCORING_GROUP",
    "STEP_FREE_GROUP",
    "STEP_FREE_MODES",
    "STEP_POLICIES",
    "TRAIN_SCHEDULE",
    "DataflowEvaluateOptions",
    "DataflowOptions",
    "DataflowRunOptions",
    "DataflowSpec",
    "EVAL_OVERRIDES",
    "PAPER_TABLE_HEADING",
    "SIZE_TABLE_HEADING",
    "paper_table_lines",
    "size_table_lines",
]

#: The heading of a card's fifteen-cell table (``scores.paper_table``; ``scripts/dataflow_cards.py`` finds it by this).
PAPER_TABLE_HEADING = "### The paper's table (docs/spec/tasks.md#deepdataflow-table)"


def paper_table_lines(table: Mapping[str, Any]) -> list[str]:
    """A card's lines for ``model.json``'s ``scores.paper_table``: the cells of
    docs/spec/tasks.md#deepdataflow-table that ``docs/results.json`` holds for this model (DDF-30 at T=30, DDF-60 at
    T=60, DDF at T=200, or until stable for a step-free variant), per 10,000-node batch and pooled, with the paper's
    numbers and where each cell comes from."""
    rows, sources = [], []
    for cell in ("DDF-30", "DDF-60", "DDF"):
        c = table.get(cell)
        if not c:
            continue
        steps = c.get("steps")
        latched = ", latched" if c.get("latch") else ""
        if steps == "fixed point":
            inference = "to its fixed point"
        elif steps == "stable":
            inference = f"until stable (patience {c.get('patience')}{latched})"
        else:
            inference = f"T={steps}"
        paper = c.get("paper") or {}
        published = " / ".join(fmt(paper.get(k), ".3f") for k in ("precision", "recall", "f1")) if paper else ""
        rows.append(
            (
                cell,
                inference,
                fmt(c.get("examples")),
                *(fmt(c.get(k), ".3f") for k in ("precision", "recall", "f1", "pooled_f1")),
                published,
            )
        )
        if c.get("source") and c["source"] not in sources:
            sources.append(c["source"])
    header = ("cell", "inference", "test examples", "precision", "recall", "F1", "pooled F1", "paper P / R / F1")
    return [
        "",
        PAPER_TABLE_HEADING,
        "",
        "The paper's cells on the DeepDataFlow-22 test split (`docs/results.json`, `docs/results.md` §5; DDF-30: "
        "examples of at most 30 data-flow steps, DDF-60: at most 60, DDF: every example):",
        "",
        *markdown_table(header, rows),
        *(["", "Where the cells come from: " + "; ".join(sources) + "."] if sources else []),
    ]


#: The heading of a card's large-graph table (``scores.sizes``).
SIZE_TABLE_HEADING = "### Large graphs, by size"


def size_table_lines(sizes: Mapping[str, Any]) -> list[str]:
    """A card's lines for ``model.json``'s ``scores.sizes``: the model's row of ``benchmarks/dataflow_sizes.py``
    per size bucket (``docs/results.json``'s ``dataflow_sizes``, ``docs/results.md`` §5): pooled precision, recall
    and F1, the steps it took against the analysis's own, seconds per root against the exact analysis."""

    def low(bucket: str) -> float:  # "2k-5k" -> 2000: model.json keeps its keys sorted as text
        first = bucket.split("-")[0]
        return float(first[:-1]) * 1000 if first.endswith("k") else float(first)

    rows = []
    for bucket, c in sorted(sizes.get("buckets", {}).items(), key=lambda item: low(item[0])):
        ratio = (
            f"{c['steps_ratio_median']:.2f} / {c['steps_ratio_max']:.2f}" if "steps_ratio_median" in c else "fixed T"
        )
        rows.append(
            (
                bucket,
                fmt(c.get("graphs")),
                fmt(c.get("roots")),
                fmt(c.get("precision"), ".3f"),
                fmt(c.get("recall"), ".3f"),
                fmt(c.get("f1"), ".3f"),
                ratio,
                fmt(c.get("model_seconds_per_root"), ".3f"),
                fmt(c.get("exact_seconds_per_root"), ".4f"),
            )
        )
    header = ("nodes", "graphs", "roots", "precision", "recall", "F1", "steps / analysis's (median / max)",
              "s / root", "s / root, exact")  # fmt: skip
    return [
        "",
        SIZE_TABLE_HEADING,
        "",
        f"{sizes.get('protocol', '')} (`{sizes.get('command', 'benchmarks/dataflow_sizes.py')}`): precision, recall "
        "and F1 pooled over every node of every root; the steps each root took against the analysis's own synchronous "
        "rounds; seconds per root, the model's against the exact analysis's, on one thread:",
        "",
        *markdown_table(header, rows),
    ]


#: Cumulative training examples at the end of each epoch (the paper's ``train_graph_counts``;
#: docs/spec/tasks.md#data-flow-protocol).
TRAIN_SCHEDULE = (10_000, 20_000, 30_000, 40_000, 50_000, *range(100_000, 1_000_001, 100_000))
#: Nodes per validation and test batch, whatever the training batches (docs/spec/tasks.md#data-flow-protocol: the paper
#: scored 10,000-node batches); the per-batch F1 depends on it, the pooled F1 does not.
EVAL_BATCH_NODES = 10_000

#: The argument groups of ``programl train dataflow --help``.
PROTOCOL_GROUP = "protocol (the paper's runs)"
SCORING_GROUP = "validation and test scoring"
STEP_FREE_GROUP = "step count (not in the paper)"
#: The values of ``--step-policy`` (:class:`DataflowOptions`).
STEP_POLICIES = ("fixed", "cover")


def _choose_model(names: list[str], metadata: Mapping[str, Mapping[str, Any]], steps: int | None) -> str:
    """:meth:`DataflowSpec.predict_default` for a call with ``--steps steps`` (None: without it): a fixed-point model,
    else another variant that needs no step count, else the first name (the faithful model)."""
    if steps is None:
        for wanted in ("fixpoint", *(mode for mode in STEP_FREE_MODES if mode != "fixpoint")):
            for name in names:
                if (metadata[name].get("inference") or {}).get("mode") == wanted:
                    return name
    return names[0]


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataflowOptions(TaskOptions):
    """The options of ``programl train dataflow`` (``config.json``'s ``model`` entry; ``--config`` reads them back).
    ``seed`` is the training engine's ``--seed``."""

    GROUPS = (PROTOCOL_GROUP, STEP_FREE_GROUP)

    analysis: str | None = option(None, choices=ANALYSES, help="the analysis to learn (required, or from --config)")
    model: str = option(
        "ggnn",
        group=PROTOCOL_GROUP,
        choices=("ggnn", "rgcn", "fixpoint"),
        help="typed GGNN or R-GCN; or (not in the paper) the fixed-point model, one bit per node that runs until no "
        "bit changes (DataflowFixpoint, --fixpoint-meet)",
    )
    fixpoint_meet: str = option(
        "any",
        group=PROTOCOL_GROUP,
        choices=("any", "all", "mixed"),
        help="the fixed-point model's meet: a node takes the fact when any selected neighbour holds it "
        "(reachability, datadep), when all of them do (dominance), or all at an instruction and any elsewhere "
        "(subexpressions)",
    )
    fixpoint_gate_by_type: bool = option(
        False,
        group=PROTOCOL_GROUP,
        help="the fixed-point model's edge gates: one per edge kind and node type of the edge's target, not one per "
        "edge kind",
    )
    fixpoint_embedding_dim: int = option(
        16,
        group=PROTOCOL_GROUP,
        metavar="N",
        low=0,
        help="the fixed-point model's text embedding width; 0: its gates read no text but the node type, the root "
        "flag and (--fixpoint-root-text) whether the text is the root's",
    )
    fixpoint_gate_cost: float = option(
        0.0,
        group=PROTOCOL_GROUP,
        low=0.0,
        help="the fixed-point model's loss also costs this times the edge gates' mean open probability, so that a "
        "gate no label needs closes",
    )
    fixpoint_root_text: bool = option(
        False,
        group=PROTOCOL_GROUP,
        help="the fixed-point model's gates also read whether the node's text is the root's (subexpressions)",
    )
    steps: int = option(30, group=PROTOCOL_GROUP, metavar="T", low=1, help="message-passing steps")
    root_context: bool = option(
        False,
        group=PROTOCOL_GROUP,
        help="not in the paper: the GGNN's readout also reads the root's states (DataflowGGNN, root_context); "
        "--init-from a faithful run starts from its logits",
    )
    control_floods: bool = option(
        False,
        group=PROTOCOL_GROUP,
        help="not in the paper: the GGNN also reads, per node, whether it lies after / before the "
        "root along control flow, with and without the loops' back edges (reachability forward and reversed, "
        "computed exactly; DataflowGGNN, control_floods); --init-from a faithful run starts from its logits",
    )
    meet: bool = option(
        False,
        group=PROTOCOL_GROUP,
        help="not in the paper: each GGNN step also reads a meet, the per-channel minimum over a "
        "node's control predecessors, as dominance intersects over them (DataflowGGNN, meet; not fused); "
        "--init-from a run without it starts from its logits",
    )
    dead_branches: float = option(
        0.0,
        group=PROTOCOL_GROUP,
        metavar="P",
        low=0.0,
        high=1.0,
        help="not in the paper: append 1-3 isolated br nodes, the dead blocks of clang-10/14 IR "
        "that clang-22 never emits, to this share of the training examples (label 0; AddDeadBranches, the same "
        "ones for an example in every pass and after a resume)",
    )
    max_steps: int = option(
        30,
        group=PROTOCOL_GROUP,
        metavar="N",
        low=0,
        help="train/validate on examples with at most N data-flow steps",
        default_text="30, DDF-30",
    )
    step_policy: str = option(
        "fixed",
        group=STEP_FREE_GROUP,
        choices=STEP_POLICIES,
        help="fixed: every training batch runs T steps and scoring runs T (the paper); cover (not in the paper): "
        "a training batch runs as many steps as its longest example needs (at least T) plus a seeded "
        "margin of 0..--step-margin, so the model learns to reach its fixed point and stay there, and validation "
        "and --test-steps stable run each graph until its predictions stop changing",
    )
    step_margin: int = option(
        60,
        group=STEP_FREE_GROUP,
        metavar="N",
        low=0,
        help="cover: the largest number of steps a batch runs past its longest example's need",
    )
    stable_patience: int = option(
        5,
        group=STEP_FREE_GROUP,
        metavar="N",
        low=1,
        help="until stable: a graph halts when no node's predicted class changed for N steps (after at least T)",
    )
    stable_max_steps: int = option(
        1000,
        group=STEP_FREE_GROUP,
        metavar="N",
        low=1,
        help="until stable: the most steps a graph runs",
    )
    max_nodes: int = option(40_000, group=PROTOCOL_GROUP, metavar="N", low=1, help="largest graph")
    min_nodes: int = option(
        0,
        group=PROTOCOL_GROUP,
        metavar="N",
        low=0,
        help="not in the paper: train and validate on graphs of at least N nodes only, e.g. to "
        "fine-tune on large functions; testing keeps every graph",
    )
    batch_nodes: int = option(10_000, group=PROTOCOL_GROUP, metavar="N", low=1, help="nodes per batch")
    batch_policy: str = option(
        "carry",
        group=PROTOCOL_GROUP,
        choices=("carry", "drop"),
        help="an example that overflows a batch starts the next (carry) or is dropped as in the original code",
    )
    lr: float = option(
        2.5e-4, group=PROTOCOL_GROUP, low=math.ulp(0.0), help="AdamW learning rate", default_text="2.5e-4"
    )
    weight_decay: float = option(0.01, group=PROTOCOL_GROUP, low=0.0, help="AdamW weight decay")
    train_examples: list[int] = option(
        list(TRAIN_SCHEDULE),
        group=PROTOCOL_GROUP,
        metavar="N",
        low=1,
        help="cumulative training examples at the end of each epoch",
        default_text="the paper's 10k, 20k, 30k, 40k, 50k, 100k, ..., 1M",
    )
    val_examples: int = option(
        10_000, group=PROTOCOL_GROUP, metavar="N", low=1, help="size of the fixed validation sample"
    )
    val_seed: int = option(205, group=PROTOCOL_GROUP, help="seed of the validation sample", **SEED_RANGE)
    eval_batch_nodes: int = option(
        EVAL_BATCH_NODES,
        group=SCORING_GROUP,
        metavar="N",
        low=1,
        help="nodes per validation and test batch, whatever --batch-nodes; the per-batch F1 depends on it, the "
        "pooled F1 does not",
        default_text=f"{EVAL_BATCH_NODES:,}, as the paper scored",
    )
    eval_batch_policy: str = option(
        "carry",
        group=SCORING_GROUP,
        choices=("carry", "drop"),
        help="carry: every example is scored; drop: the original code's batches, which left out the example that "
        "overflowed a batch and examples over N nodes",
    )
    seed: int


#: What each data-flow model labels (docs/spec/analyses.md).
ANALYSIS_MEANING = {
    "reachability": "the instructions reachable from the root instruction along control flow (the root included)",
    "dominance": "the nodes of the root's function that the root instruction dominates (the root included)",
    "datadep": "the instructions the root variable depends on through data flow (its producers, transitively)",
    "liveness": "the variables and constants live out of the root instruction",
    "subexpressions": "the instructions that compute the same expression as the root instruction (the root included)",
}
#: The network class of each ``--model``.
_CLASSES = {"ggnn": "DataflowGGNN", "rgcn": "DataflowRGCN", "fixpoint": "DataflowFixpoint"}


#: (T, step filter) of the test runs: DDF-30 at T=30, DDF-60 at T=60, every example at T=200.
DEFAULT_TESTS = ((30, 30), (60, 60), (200, None))
TRAIN_EXAMPLES = """\
examples:
  programl train dataflow --analysis reachability --dataset ddf22 --run-dir runs/reachability
  programl train dataflow --analysis liveness --dataset ddf22 --train-examples 5000 10000 20000 --val-examples 1000 \\
      --threads 1                                                      a CPU-sized run
  torchrun --nproc_per_node 2 -m programl.tasks.dataflow train --analysis datadep --dataset ddf22 --device cpu
"""
EVALUATE_EXAMPLES = """\
examples:
  programl evaluate dataflow --run-dir runs/reachability                 best.pt at T=30, 60, 200 on the test split
  programl evaluate dataflow --run-dir runs/reachability --test-steps 30 --split val --checkpoint last
  programl evaluate dataflow --run-dir runs/reachability --out eval      a run still training (only read)
"""


# ---------------------------------------------------------------------------------------------------------------
# Command line


def test_steps_argument(text: str) -> int | str:
    """A ``--test-steps`` value: a positive T, or ``stable``."""
    if text == "stable":
        return text
    try:
        return count_argument(1)(text)
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(f"{error} (or 'stable')") from None


def _dataset_option():
    return option(None, group=DATA_GROUP, metavar="DIR", help="a DeepDataFlow data set directory")


def _processed_dir_option():
    return option(None, group=DATA_GROUP, metavar="DIR", help="where its PyG form goes", default_text="DIR/processed")


def _jobs_option():
    return option(
        1,
        group=DATA_GROUP,
        short="-j",
        low=0,
        high=4096,
        range_text="in 0..4096",
        help="workers for the one-time conversion",
        default_text="",
    )


def _test_steps_option():
    return option(
        [t for t, _ in DEFAULT_TESTS],
        group=SCORING_GROUP,
        metavar="T",
        type=test_steps_argument,
        help="message-passing steps of the test runs; T=30 and T=60 test DDF-30 and DDF-60, other T every "
        "example; 'stable' runs each graph until its predictions stop changing (--stable-patience, "
        "--stable-max-steps), on every example",
        default_text="30 60 200, and stable for --step-policy cover",
    )


def _test_examples_option():
    return option(
        None,
        group=SCORING_GROUP,
        metavar="N",
        help="test on a fixed sample of N examples (0: all); one value for every T, or one per --test-steps",
        default_text="all",
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataflowRunOptions(RunOptions):
    """The run options of ``programl train dataflow``: where the data and the run are, the time budget and the
    tests after training (not recorded as the model's options, except ``seed``)."""

    GROUPS = (DATA_GROUP,)

    dataset: str | None = _dataset_option()
    processed_dir: str | None = _processed_dir_option()
    jobs: int = _jobs_option()
    vocabulary: str | None = option(
        None,
        group=DATA_GROUP,
        metavar="FILE",
        help="the texts' ids (a vocab.csv or programl.csv; default: the data set's vocab/programl.csv), e.g. an "
        "exported model's to --init-from it on another data set",
    )
    time_limit: float | None = time_limit_option(
        PROTOCOL_GROUP, "stop training after the first epoch that ends past MIN minutes, then test"
    )
    checkpoint_minutes: float = checkpoint_minutes_option()
    test_steps: list[int | str] = _test_steps_option()
    test_examples: list[int] | None = _test_examples_option()
    run_dir: str = run_dir_option("dataflow", shown="runs/dataflow/ANALYSIS")
    epochs: int | None = epochs_option(None, shown=len(TRAIN_SCHEDULE))
    restart: bool = restart_option()
    config: str | None = config_option("dataflow")


#: The options of a trained run that ``programl evaluate dataflow`` may replace (None: the run's).
EVAL_OVERRIDES = ("eval_batch_nodes", "eval_batch_policy", "stable_patience", "stable_max_steps")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataflowEvaluateOptions(RunOptions):
    """The options of ``programl evaluate dataflow``: which checkpoint on which split, the data, the tests; the
    fields of :data:`EVAL_OVERRIDES` (declared by :class:`DataflowOptions`) replace the run's where given."""

    run_dir: str = option(required=True, metavar="DIR", help="a run of 'programl train dataflow'")
    checkpoint: str = option("best", choices=("best", "last"), help="which model")
    split: str = option("test", choices=("test", "val", "train"), help="")
    dataset: str | None = _dataset_option()
    processed_dir: str | None = _processed_dir_option()
    jobs: int = _jobs_option()
    test_steps: list[int | str] = _test_steps_option()
    test_examples: list[int] | None = _test_examples_option()
    out: str | None = evaluation_output_option()
    eval_batch_nodes: int | None = None
    eval_batch_policy: str | None = None
    stable_patience: int | None = None
    stable_max_steps: int | None = None

    def overrides(self) -> dict[str, Any]:
        """The options of the trained run that this evaluation replaces: those of :data:`EVAL_OVERRIDES` given."""
        return {key: getattr(self, key) for key in EVAL_OVERRIDES if getattr(self, key) is not None}


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``programl train dataflow``: :class:`~programl.tasks.dataflow.spec.DataflowOptions` and
    :class:`DataflowRunOptions`, in the order ``--help`` lists them."""
    groups = add_options(parser, DataflowRunOptions, only=("dataset", "processed_dir", "jobs", "vocabulary"))
    add_options(parser, DataflowOptions, groups=groups)
    tests = ("time_limit", "checkpoint_minutes", "test_steps", "test_examples")
    add_options(parser, DataflowRunOptions, only=tests, groups=groups)
    add_options(parser, DataflowRunOptions, only=RunOptions.keys(), groups=groups)
    add_options(parser, DataflowRunOptions, only=("run_dir", "epochs", "restart", "config"), groups=groups)


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``programl evaluate dataflow``: :class:`DataflowEvaluateOptions`, and the options of
    :data:`EVAL_OVERRIDES` as :class:`DataflowOptions` declares them, default the run's."""
    first = ("run_dir", "checkpoint", "split", "dataset", "processed_dir", "jobs")
    groups = add_options(parser, DataflowEvaluateOptions, only=first)
    add_options(parser, DataflowOptions, only=EVAL_OVERRIDES, overrides="the run's", groups=groups)
    add_options(parser, DataflowEvaluateOptions, only=("test_steps", "test_examples", "out"), groups=groups)
    add_options(parser, DataflowEvaluateOptions, only=RunOptions.keys(), groups=groups)


class DataflowSpec(TaskSpec):
    """Data-flow analyses (docs/spec/tasks.md#data-flow-protocol): one node-level model per analysis, labels per
    root."""

    name = "dataflow"
    summary = "learn a data-flow analysis (node labels per root) on a DeepDataFlow data set"
    title = "ProGraML data-flow GGNN"
    train_module = "programl.tasks.dataflow.train"
    train_epilog = TRAIN_EXAMPLES
    evaluate_epilog = EVALUATE_EXAMPLES
    add_train_arguments = staticmethod(add_train_arguments)
    add_evaluate_arguments = staticmethod(add_evaluate_arguments)
    options = DataflowOptions
    predictor = DataflowPredictor
    best_metric = "best_val_f1"
    level = "node"
    metadata_fields = ("analysis", "steps", "inference")
    predict_help = "the nodes a data-flow analysis labels, per root"
    predict_examples = """\
examples:
  programl predict dataflow examples/dot_product.ll                        every installed analysis, sampled roots
  programl predict dataflow --analysis liveness --root 12 --compare f.c    one root, beside the exact labels
  programl predict dataflow --analysis reachability --roots 3 --json *.ll
"""
    predict_order = 1

    def model_spec(self, config: Mapping[str, Any], vocabulary_size: int, where: str = "config.json") -> dict:
        o = require_options(config, ("model", "steps"), where)
        if o["model"] not in _CLASSES:
            raise ProgramlError(f"{where}: unknown data-flow model {o['model']!r}")
        kwargs: dict[str, Any] = {"num_steps": o["steps"]}
        if o["model"] == "fixpoint":
            kwargs["meet"] = config.get("fixpoint_meet", "any")
            if config.get("fixpoint_gate_by_type"):
                kwargs["gate_by_type"] = True
            if config.get("fixpoint_root_text"):
                kwargs["root_text"] = True
            if config.get("fixpoint_gate_cost"):
                kwargs["gate_cost"] = config["fixpoint_gate_cost"]
            if config.get("fixpoint_embedding_dim", 16) != 16:
                kwargs["embedding_dim"] = config["fixpoint_embedding_dim"]
            return {"class": _CLASSES[o["model"]], "args": [vocabulary_size], "kwargs": kwargs}
        if config.get("root_context"):  # the variant's key only where it is on: the faithful models' specs stay
            kwargs["root_context"] = True
        if config.get("control_floods"):
            kwargs["control_floods"] = True
        if config.get("meet"):
            kwargs["meet"] = True
        return {"class": _CLASSES[o["model"]], "args": [vocabulary_size], "kwargs": kwargs}

    # ---------------------------------------------------------------------------------------------------- export
    def default_name(self, files: RunFiles) -> str:
        return str(files.config["model"].get("analysis", "dataflow"))

    def metadata_entries(self, files: RunFiles) -> dict[str, Any]:
        config = files.config["model"]
        entries = {"analysis": config.get("analysis"), "steps": config.get("steps")}
        if config.get("model") == "fixpoint":  # no bound to choose: it runs until no bit changes
            entries["inference"] = {"mode": "fixpoint"}
        elif config.get("step_policy") == "cover":  # a step-free variant: predict runs it until stable
            # the bounds the card's scores were measured with: an evaluation's (`programl evaluate dataflow
            # --stable-patience N`, chosen on validation, exported with --card-from) where it records them
            chosen = files.result.get("until_stable") or {}
            entries["inference"] = {
                "mode": "until_stable",
                "min_steps": config.get("steps"),
                "max_steps": chosen.get("max_steps", config.get("stable_max_steps", 1000)),
                "patience": chosen.get("patience", config.get("stable_patience", 5)),
            }
        elif config.get("control_floods"):  # no step count to choose either: T steps over exact control floods
            entries["inference"] = {"mode": "control_floods", "steps": config.get("steps"), "floods": "exact"}
        return entries

    def outputs(self, files: RunFiles) -> dict[str, Any]:
        analysis = files.config["model"].get("analysis")
        return {
            "level": "node",
            "classes": ["false", "true"],
            "meaning": f"per node, whether it is among {ANALYSIS_MEANING.get(analysis, 'the labelled nodes')}",
        }

    def scores(self, files: RunFiles) -> dict[str, Any]:
        result = files.result
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
        drop = ("confusion_matrix", "per_class_accuracy", "rows", "predictions")
        out = {k: result[k] for k in keep if k in result}
        out["tests"] = {
            name: {k: v for k, v in test.items() if k not in drop} for name, test in (result.get("tests") or {}).items()
        }
        return out

    def check_metadata(self, metadata: Mapping[str, Any], check) -> None:
        """``analysis`` (one of the analyses), ``steps`` (T, at most :data:`~programl.tasks.base.MAX_STEPS`) and a
        step-free model's ``inference`` (:func:`~programl.tasks.dataflow.predict.check_inference`)."""
        check.choice("analysis", metadata.get("analysis"), ANALYSES)
        if metadata.get("steps") is not None:
            check.integer("steps", metadata["steps"], 0, MAX_STEPS)
        if metadata.get("inference") is not None:
            check_inference(check, metadata)

    # ---------------------------------------------------------------------------------------------------- card
    def card_task_line(self, m: Mapping[str, Any]) -> str:
        return f"dataflow ({m.get('analysis')})"

    def card_data(self, m: Mapping[str, Any]) -> list[str]:
        config = m["training"]["config"]
        options, scope = config.get("model", {}), config.get("scope", {})
        return [
            f"DeepDataFlow data set `{fmt(config.get('dataset'))}`, analysis {options.get('analysis')}: "
            f"{fmt(scope.get('train_examples_available'))} training examples, a fixed validation sample of "
            f"{fmt(scope.get('val_examples'))} (of {fmt(scope.get('val_examples_available'))}); examples with more "
            f"than {fmt(options.get('max_steps'))} data-flow steps (DDF-{options.get('max_steps')}) and graphs of "
            f"more than {fmt(options.get('max_nodes'))} nodes"
            + (f" or fewer than {fmt(options['min_nodes'])}" if options.get("min_nodes") else "")
            + " are left out of training and validation. The "
            + (
                f"vocabulary is `{config['vocabulary']}` ({fmt(scope.get('vocabulary'))} texts; `--vocabulary`)."
                if config.get("vocabulary")
                else f"vocabulary is the data set's ({fmt(scope.get('vocabulary'))} texts)."
            )
        ]

    def card_scores(self, s: Mapping[str, Any]) -> list[str]:
        rows = []
        for name, t in s.get("tests", {}).items():
            limit = t.get("max_data_flow_steps")
            rows.append(
                (
                    name,
                    fmt(t.get("steps")),
                    f"DDF-{limit}" if limit else "all",
                    fmt(t.get("examples")),
                    fmt(t.get("precision"), ".3f"),
                    fmt(t.get("recall"), ".3f"),
                    fmt(t.get("f1"), ".3f"),
                    fmt(t.get("pooled_f1"), ".3f"),
                )
            )
        lines = [
            f"Split `{s.get('split', 'test')}`, checkpoint of epoch {fmt(s.get('checkpoint_epoch'))} (best "
            f"validation F1 {fmt(s.get('best_val_f1'), '.4f')}); precision, recall and F1 of the true class, "
            "averaged over batches weighted by nodes (the paper's numbers) and pooled over all nodes:",
            "",
        ]
        lines += markdown_table(("test", "T", "filter", "examples", "precision", "recall", "F1", "pooled F1"), rows)
        paper = s.get("paper_ddf30")
        if paper:
            lines += [
                "",
                f"Published (ProGraML, DDF-30): precision {paper.get('precision')}, recall "
                f"{paper.get('recall')}, F1 {paper.get('f1')}.",
            ]
        if s.get("paper_table"):
            lines += paper_table_lines(s["paper_table"])
        if s.get("sizes"):
            lines += size_table_lines(s["sizes"])
        return lines

    def card_network(self, m: Mapping[str, Any]) -> str:
        """T, or the until-stable bounds of a step-free variant, and the variants' inputs and readout that are not
        the paper's (``root_context``, ``control_floods``)."""
        inference = m.get("inference") or {}
        kwargs = m["model"].get("kwargs", {})
        if inference.get("mode") == "fixpoint":
            return (
                f"; not the paper's model: one bit per node, `{kwargs.get('meet', 'any')}` as the meet, learned gates "
                "of which nodes start, pass and are labelled with the fact and of which edge kinds carry it; each "
                'root runs until no bit changes (docs/spec/models.md, "Fixpoint model")'
            )
        if inference.get("mode") == "until_stable":
            text = (
                f"; not the paper's model: step-free, each root runs until no prediction changed for "
                f"{inference.get('patience')} steps (at least {inference.get('min_steps')}, at most "
                f"{inference.get('max_steps')})"
            )
            if inference.get("latch"):
                text += ", a node once predicted true staying true (latched)"
        else:
            text = super().card_network(m)
        if kwargs.get("root_context"):
            text += "; not the paper's model: its readout also reads the root's states (`root_context`)"
        if kwargs.get("control_floods"):
            text += (
                "; not the paper's model: it also reads whether each node lies after / before the root along control "
                "flow, with and without the loops' back edges, computed exactly (`control_floods`)"
            )
        if kwargs.get("meet"):
            text += (
                "; not the paper's model: each step also reads the per-channel minimum of a learned map over the "
                "node's control predecessors, a meet as dominance intersects over them (`meet`)"
            )
        return text

    def card_limitations(self, m: Mapping[str, Any]) -> list[str]:
        options = m["training"]["config"].get("model", {})
        tested = m.get("scores", {}).get("tests", {})
        if options.get("model") == "fixpoint":
            return [
                "Not the paper's model: its form and its meet are those of the analysis (docs/spec/models.md, "
                '"Fixpoint model"); what it learned are the gates, from graphs of at most '
                f"{fmt(options.get('max_nodes'))} nodes. `programl predict` runs each root until no bit changes "
                "(at most N + 1 steps on a graph of N nodes), so the steps it takes grow with the longest path the "
                "fact travels, as the analysis's rounds do. `programl predict dataflow --compare FILE` shows the "
                "exact labels beside the predicted ones."
            ]
        if options.get("step_policy") == "cover":
            inference = m.get("inference") or {}  # what predict runs: the bounds export recorded, not the run's
            return [
                f"A step-free variant (not in the paper): trained on examples of at most "
                f"{options.get('max_steps')} data-flow steps, each batch run for as many steps as its longest example "
                f"needs (at least {options.get('steps')}) plus up to {options.get('step_margin')}; `programl predict` "
                f"runs each root until no prediction changed for {inference.get('patience')} steps (at most "
                f"{inference.get('max_steps')}{', latched' if inference.get('latch') else ''}), `--steps T` at a "
                "fixed T. Roots that need more steps than it was trained on are scored in the `stable` row above "
                "(every example). `programl predict dataflow --compare FILE` shows the exact labels beside the "
                "predicted ones."
            ]
        if options.get("control_floods"):
            steps, most, largest = options.get("steps"), options.get("max_steps"), options.get("max_nodes")
            return [
                "Not the paper's model: besides the graph it reads, per node, whether the "
                "node lies after / before the root along control flow, with and without the loops' back edges, "
                "computed exactly (two reachability analyses and a depth-first search). Trained at "
                f"T={steps} on examples of up to {most} data-flow steps and graphs of up to {largest} nodes; "
                f"`programl predict` runs it at T={steps} whatever a root's step count, since the floods carry the "
                "reach. `programl predict dataflow --compare FILE` shows the exact labels beside the predicted ones."
            ]
        fixed = [t.get("steps") for t in tested.values() if isinstance(t.get("steps"), int)]
        compare = (
            f"compare the rows of T > {options.get('max_steps')} above"
            if any(t > (options.get("max_steps") or 0) for t in fixed)
            else "not measured for this model beyond T=" + str(options.get("steps"))
        )
        return [
            f"Trained and validated on examples of at most {options.get('max_steps')} data-flow steps; "
            f"roots whose analysis needs more steps than the model runs are predicted less well ({compare}). "
            "`programl predict dataflow --compare FILE` shows the exact labels beside the predicted ones."
        ]

    def predict_command(self, m: Mapping[str, Any]) -> str:
        return (
            f"programl predict dataflow --analysis {m.get('analysis')}"
            + (f" --model {m['name']}" if m["name"] != m.get("analysis") else "")
            + " FILE.ll --roots 3 --compare"
        )

    # ---------------------------------------------------------------------------------------------------- predict
    def add_predict_arguments(self, parser: argparse.ArgumentParser) -> None:

        parser.add_argument(
            "--analysis",
            action="append",
            choices=ANALYSES,
            metavar="A",
            help=f"one of {', '.join(ANALYSES)} (repeatable; default: every analysis with a model)",
        )
        roots = parser.add_mutually_exclusive_group()
        roots.add_argument(
            "--root",
            type=count_argument(0),
            action="append",
            metavar="N",
            help="predict for root node N (repeatable); it must be an eligible root of the analysis",
        )
        roots.add_argument(
            "--roots",
            type=count_argument(1),
            metavar="K",
            help="K roots, the first of a seeded shuffle of the eligible ones (default: the analyses' "
            "own sample, min(ceil(eligible / 10), 10) roots)",
        )
        parser.add_argument(
            "--seed",
            type=count_argument(0, 2**63 - 1),
            default=0,
            help="seed of the root sample (default: 0, as analyze)",
        )
        parser.add_argument(
            "--steps",
            type=count_argument(0),
            metavar="T",
            help="message-passing steps (default: the model's: until the predictions stop changing for a step-free "
            "model, 30 for a faithful one). Without --model, an analysis's step-free variant (NAME-step-free, or "
            "liveness-floods) runs where one is installed, else its faithful model; with --steps, the faithful model",
        )
        parser.add_argument(
            "--compare", action="store_true", help="show the exact labels of the analysis beside the predicted ones"
        )

    def predict_wanted(self, args: argparse.Namespace) -> tuple[list[dict[str, str]], bool]:
        """An installed model per analysis (``--analysis``, default: every analysis that has one)."""

        return [{"analysis": a} for a in (args.analysis or ANALYSES)], bool(args.analysis)

    def predict_default(self, names: list[str], metadata: Mapping[str, Mapping[str, Any]], args) -> str:
        """The step-free variant of the analysis where one is installed (``model.json`` ``inference`` mode
        ``until_stable``, or ``control_floods`` for liveness: it holds at every step count), else
        the faithful model; with ``--steps T`` the faithful model, which the paper ran at a fixed T (a step-free
        model diverges far past the steps it was trained to hold)."""
        return _choose_model(names, metadata, args.steps if args is not None else None)

    def check_predict_model(self, model, args: argparse.Namespace) -> None:
        if args.analysis and model.analysis not in args.analysis:
            raise ProgramlError(f"{args.model}: a {model.analysis} model, not a {' or '.join(args.analysis)} one")

    def predict_options(self, args: argparse.Namespace) -> dict[str, Any]:
        return {
            "roots": list(args.root) if args.root else None,
            "num_roots": args.roots,
            "seed": args.seed,
            "steps": args.steps,
            "compare": bool(args.compare),
        }

    def predict_entries(self, path: str, graph, models, request, out) -> list[dict]:
        """Each analysis's prediction; ``--root`` that is an eligible root of none of them fails the input."""

        entries = [self._predict_entry(path, graph, model, request, out) for model in models]
        roots = request.options["roots"]
        if roots and all("skipped" in e for e in entries):
            raise AnalysisError(f"node {roots[0]} is an eligible root of none of the analyses")
        return entries

    def _predict_entry(self, path: str, graph, model, request, out) -> dict:
        """One data-flow model's prediction; an analysis without an eligible root (or, when the analyses were not
        named, for which ``--root`` is not eligible) is skipped with a note, not failed."""

        try:
            prediction = model.predict(graph, **request.options)
        except AnalysisError as error:
            no_root = str(error).startswith("No eligible root")
            if not no_root and request.explicit:
                raise
            if no_root:
                out.notes["without a root"] = out.notes.get("without a root", 0) + 1
            if request.notes:
                out.messages.append(f"{path}: {model.analysis}: {error}")
            return {"model": model.name, "analysis": model.analysis, "skipped": str(error)}
        return {"model": model.name, **prediction.to_dict()}

    def predict_text(self, path: str, name: str, nodes: int, result: Mapping[str, Any]) -> list[str]:
        """Per root: a line with the root and the count of nodes predicted true (and, with ``--compare``, the exact
        count and the confusion), then a table of the nodes."""
        lines = []
        compared = "exact_true" in (result["roots"][0] if result["roots"] else {})
        for entry in result["roots"]:
            root = entry["root"]
            taken = entry.get("steps_taken")
            steps = f"{result['steps']}: {taken} steps" if taken is not None else f"T={result['steps']}"
            head = (
                f"{path}: {result['analysis']} (model {name}, {steps}) root {root['id']} "
                f"({root['type']} {root['text']}): {entry['predicted_true']} of {nodes} nodes predicted true"
            )
            if compared:
                c = entry["confusion"]
                head += (
                    f"; exact {entry['exact_true']} (true positives {c['true_positives']}, false positives "
                    f"{c['false_positives']}, missed {c['false_negatives']})"
                )
            lines.append(head)
            lines.append(f"  {'id':>6}  {'type':<11}  {'p(true)':>7}" + ("  exact " if compared else "") + "  text")
            for node in entry["nodes"]:
                mark = ""
                if compared:
                    mark = "  " + (
                        "yes   " if node["exact"] and node["predicted"] else "no    " if node["predicted"] else "MISSED"
                    )
                lines.append(
                    f"  {node['id']:>6}  {node['type']:<11}  {node['probability']:>7.3f}{mark}  {node['text']}"
                )
        return lines
