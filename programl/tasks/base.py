"""The interface of a task (docs/spec/tasks.md): :class:`TaskSpec`, the light half of a task that the command
line, the export of pretrained models, their cards and ``programl predict`` look up in
:data:`programl.tasks.registry.TASKS`, instead of comparing task names.

A task is one package ``programl/tasks/<name>/``: ``spec.py`` (a :class:`TaskSpec` subclass: no torch, imported for
``--help``, by the export and by the cards), ``predict.py`` (its :class:`~programl.tasks.predict.Predictor`) and
``train.py`` (training and evaluation: the entry points that :attr:`TaskSpec.train_module` names), plus one line in
``registry.py``. Every method reads plain data (``config.json``, ``model.json``,
:class:`~programl.tasks.run_files.RunFiles`) and returns plain data or Markdown lines.

What a task must say is short: its :attr:`~TaskSpec.name` and :attr:`~TaskSpec.summary`, its options dataclass
(:attr:`~TaskSpec.options`), its predictor (:attr:`~TaskSpec.predictor`), the network of a run's options
(:meth:`~TaskSpec.model_spec`) and what the network's outputs mean (:meth:`~TaskSpec.outputs`). Everything else has
a default a task overrides where it differs: the command-line options come from the options dataclasses, the
scores and the card's sections from ``result.json`` and ``model.json``, the printed prediction from its ``to_dict()``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any, ClassVar

from programl.exceptions import ProgramlError
from programl.tasks.options import TaskOptions, add_options
from programl.tasks.run_files import RunFiles, read_log_seconds_by_device
from programl.tasks.run_options import CONFIG_RECORDS, RunOptions
from programl.util.options import Options
from programl.util.text import fmt, markdown_table

__all__ = ["MAX_STEPS", "TaskSpec", "count_argument", "require_options", "shown"]

#: The most message-passing steps anywhere in a model's ``model.json`` (its T, the bounds of its inference; the
#: shipped models run at most 4,000): a received model asks for no more.
MAX_STEPS = 10_000

#: Entries of a results file too large for ``model.json`` (one value per class, example or test row).
_BULKY = ("confusion_matrix", "per_class_accuracy", "confused_pairs", "rows", "predictions")
#: Entries of ``result.json`` that are training facts (:meth:`TaskSpec.compute`), not scores.
_FACTS = ("train_seconds", "world_size", "threads", "device", "machine")


def shown(value: Any) -> str:
    """``repr(value)``, cut to 60 characters (a hostile value may be megabytes long)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def require_options(config: Mapping[str, Any], keys: tuple[str, ...], where: str) -> dict[str, Any]:
    """``{key: config[key]}`` for ``keys``; a missing one is one line naming ``where``."""
    missing = [k for k in keys if k not in config]
    if missing:
        raise ProgramlError(f"{where}: no {', '.join(missing)} among the model options (a run of another programl?)")
    return {k: config[k] for k in keys}


def count_argument(minimum: int, maximum: int = 2**31 - 1):
    """An argparse type: an integer in [minimum, maximum] (node indices, steps and counts fit an int32)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}: {text!r}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}: {text!r}")
        return value

    return parse


def _scalars(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """The numbers, strings and booleans of a results object, by dotted key, sorted (a card written at export and
    one written from the saved ``model.json``, whose keys are sorted, are the same)."""
    if isinstance(value, Mapping):
        return [pair for key in sorted(value) for pair in _scalars(value[key], f"{prefix}{key}.")]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return [(prefix[:-1], value)]
    return []


class TaskSpec:
    """A task, as the package outside ``programl/tasks/`` sees it.

    What a task must say:

    Attributes:
        name: ``programl train <name>``; the ``task`` of ``config.json`` and ``model.json``.
        summary: One line for ``--help``.
        options: Its options dataclass (a :class:`~programl.tasks.options.TaskOptions`): ``programl train <name>``'s
            options, ``config.json``'s ``model`` entry.
        predictor: Its :class:`~programl.tasks.predict.Predictor` (``programl/tasks/<name>/predict.py``), which
            :meth:`predict` runs with a loaded model.

    and :meth:`model_spec` and :meth:`outputs`. What has a default:

    Attributes:
        title: The title of its models' cards (default: "ProGraML <name>").
        description: The first paragraph of ``programl train <name> --help`` (default: ``summary``).
        train_module: The module with ``train_main(args)`` and ``evaluate_main(args)`` (imported when the command
            runs, not for ``--help``: it may import torch at its top; default: ``train`` beside the spec's module).
        run_options: The run options of ``programl train <name>`` beside :attr:`options` (a
            :class:`~programl.tasks.run_options.RunOptions`; default: the runtime options every command has).
        evaluate_options: The options of ``programl evaluate <name>`` (default: the runtime options).
        train_epilog, evaluate_epilog: Examples that ``programl train|evaluate <name> --help`` end with.
        best_metric: The ``result.json`` key of the best validation score.
        fills_training_facts: Whether an export completes a scores-only results file (``--card-from``) with the
            training facts of ``log.jsonl`` and the checkpoint.
        counts_init_from: Whether a card counts the epochs of the checkpoint a run started from (``--init-from``).
        level: ``node`` for a model that labels each node (two classes), ``graph`` for one that classifies the
            graph: ``model.json`` ``outputs.level``.
        metadata_fields: The entries of ``model.json`` that only this task's models have (e.g. ``analysis``); a
            model of another task must not set them, and :meth:`check_metadata` checks them.
        predict_help: What ``programl predict <name>`` predicts, as the end of "Predict ... with a pretrained model."
            (its line in ``programl predict --help``).
        predict_examples: The epilog of ``programl predict <name> --help``.
        predict_order: Where ``programl predict --help`` lists the task (lower first; ties: the registry's order).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    options: ClassVar[type[TaskOptions]]
    predictor: ClassVar[type]
    run_options: ClassVar[type[Options]] = RunOptions
    evaluate_options: ClassVar[type[Options]] = RunOptions
    train_epilog: ClassVar[str] = ""
    evaluate_epilog: ClassVar[str] = ""
    best_metric: ClassVar[str] = "best_val_accuracy"
    fills_training_facts: ClassVar[bool] = True
    counts_init_from: ClassVar[bool] = True
    level: ClassVar[str] = "graph"
    metadata_fields: ClassVar[tuple[str, ...]] = ()
    predict_examples: ClassVar[str] = ""
    predict_order: ClassVar[int] = 100

    @property
    def title(self) -> str:
        """The title of the task's model cards."""
        return f"ProGraML {self.name}"

    @property
    def description(self) -> str:
        """The first paragraph of ``programl train <name> --help``: :attr:`summary` as a sentence."""
        return self.summary[0].upper() + self.summary[1:] + "."

    @property
    def train_module(self) -> str:
        """The training module: ``train`` in the package of the spec's module."""
        return type(self).__module__.rpartition(".")[0] + ".train"

    @property
    def predict_help(self) -> str:
        """What ``programl predict <name>`` predicts."""
        return f"what a {self.name} model says about programs"

    # ---------------------------------------------------------------------------------------------------------
    # The command line: ``programl train|evaluate <name>`` (options from the task's options dataclasses)

    def add_train_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the options of ``programl train <name>`` to ``parser`` (no torch: ``--help`` lists them): the fields
        of :attr:`options`, then those of :attr:`run_options`, by argument group."""
        groups = add_options(parser, self.options)
        add_options(parser, self.run_options, groups=groups)

    def add_evaluate_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the options of ``programl evaluate <name>`` to ``parser``: the fields of :attr:`evaluate_options`."""
        add_options(parser, self.evaluate_options)

    # ---------------------------------------------------------------------------------------------------------
    # The network

    def model_spec(self, config: Mapping[str, Any], vocabulary_size: int, where: str = "config.json") -> dict:
        """The ``model`` entry of ``model.json`` (:func:`programl.models.build.build_model`) for a run with
        options ``config`` (the ``model`` entry of its ``config.json``): the same network training builds.

        Raises:
            ProgramlError: An option the network needs is missing, or has a value no network is built for.
        """
        raise NotImplementedError

    # ---------------------------------------------------------------------------------------------------------
    # Export: a finished run -> model.json

    def locate_model(self, files: RunFiles, platform: str | None, fold: int | None) -> None:
        """Point ``files`` at the exported model's checkpoint, vocabulary and results (default: the run directory's
        ``best.pt``, ``vocab.csv`` and ``result.json``, as ``files`` has them) and read what the card needs of the
        run (default: the training seconds by device of ``log.jsonl``). ``platform`` and ``fold`` are the
        ``export-pretrained`` options of tasks with several models per run (default: refused)."""
        if platform is not None or fold is not None:
            raise ProgramlError(
                f"{files.run_dir}: --platform and --fold are for runs with a model per platform and fold; this is a "
                f"{self.name} run"
            )
        files.seconds_by_device = read_log_seconds_by_device(files.run_dir / "log.jsonl")

    def default_name(self, files: RunFiles) -> str:
        """The exported model's name when none is given."""
        return self.name

    def metadata_entries(self, files: RunFiles) -> dict[str, Any]:
        """Entries of ``model.json`` beside ``task`` that name the model's kind (``analysis``, ``platform`` ...)."""
        return {}

    def outputs(self, files: RunFiles) -> dict[str, Any]:
        """``model.json`` ``outputs``: ``level`` (:attr:`level`), ``classes`` and their ``meaning``."""
        raise NotImplementedError

    def inputs(self, files: RunFiles) -> dict[str, Any]:
        """``model.json`` ``inputs``: how sources are compiled for the model."""
        return {"sources": "anything `programl build` reads (.ll, .bc, .c, .cc, .cl, ...)"}

    def scores(self, files: RunFiles) -> dict[str, Any]:
        """``model.json`` ``scores``: the test scores of ``files.result`` (default: its entries, without the training
        facts of :meth:`compute` and those of one value per class, example or row)."""
        return {
            key: {k: v for k, v in value.items() if k not in _BULKY} if isinstance(value, Mapping) else value
            for key, value in files.result.items()
            if key not in _BULKY and key not in _FACTS
        }

    def compute(self, files: RunFiles) -> dict[str, Any]:
        """``model.json`` ``compute``: training time as the run recorded it (None where it did not)."""
        result = files.result
        return {
            "train_seconds": result.get("train_seconds"),
            "processes": result.get("world_size"),
            "threads": result.get("threads"),
            "device": result.get("device"),
            "machine": result.get("machine"),
            "seconds_by_device": files.seconds_by_device,
            "facts_from_log_epoch": files.facts_from_log,
        }

    def command_options(self, files: RunFiles) -> str:
        """What the equivalent training command adds to ``--config ... --run-dir ...`` (e.g. the fold)."""
        return ""

    # ---------------------------------------------------------------------------------------------------------
    # A received model.json

    def check_metadata(self, metadata: Mapping[str, Any], check) -> None:
        """Check the entries of a received ``model.json`` that are the task's own (:attr:`metadata_fields`) before
        anything is built (default: none).

        Args:
            metadata: The parsed file.
            check: The checker of the model zoo's ``check_metadata``: its ``integer``, ``number``,
                ``boolean``, ``text``, ``choice`` and ``mapping`` methods take the field's name and value (and the
                range or the choices) and raise one line naming the file and the field; ``fail(field, problem)``
                makes such an error; ``path`` is the file.

        Raises:
            ProgramlError: One line naming the file and the first wrong field.
        """

    # ---------------------------------------------------------------------------------------------------------
    # The model card (MODEL_CARD.md, from model.json alone)

    def card_task_line(self, m: Mapping[str, Any]) -> str:
        """The card's "task" cell."""
        return self.name

    def card_network(self, m: Mapping[str, Any]) -> str:
        """What the card's "network" cell says after the class and the parameter count (default: the steps T)."""
        return f", T = {m['steps']} message-passing steps" if m.get("steps") is not None else ""

    def card_data(self, m: Mapping[str, Any]) -> list[str]:
        """The paragraph of the card's "Data" section (default: the data directories and the scope of the run's
        ``config.json``)."""
        config = m["training"]["config"]
        places = [f"{key} `{config[key]}`" for key in sorted(config) if key not in CONFIG_RECORDS and config[key]]
        scope = [f"{key} {fmt(value)}" for key, value in _scalars(config.get("scope") or {})]
        return [
            "From the run's `config.json`: "
            + ("; ".join(places) if places else "no data directory recorded")
            + (f"; scope: {', '.join(scope)}" if scope else "")
            + "."
        ]

    def card_scores(self, scores: Mapping[str, Any]) -> list[str]:
        """The lines of the card's "Scores" section (from ``model.json`` ``scores``; default: a table of its
        numbers)."""
        rows = [(f"`{key}`", fmt(value, ".4f")) for key, value in _scalars(scores)]
        return markdown_table(("score", "value"), rows) if rows else ["No scores recorded."]

    def card_compute(self, m: Mapping[str, Any], line: str) -> str:
        """The card's training-time sentence (default: ``line``, made from ``model.json`` ``compute``)."""
        return line

    def card_limitations(self, m: Mapping[str, Any]) -> list[str]:
        """The task's items of the card's "Limitations" list (after the one every model has)."""
        return []

    def predict_command(self, m: Mapping[str, Any]) -> str:
        """The ``programl predict`` command line of the card's "Use" section."""
        return f"programl predict {self.name} FILE"

    # ---------------------------------------------------------------------------------------------------------
    # Prediction: ``PretrainedModel.predict`` and ``programl predict <name>``

    def predict(self, model, graph, **options):
        """What ``model`` (a loaded pretrained model of this task, a ``PretrainedModel``) predicts on
        ``graph`` (a ``ProgramGraph``): the task's :attr:`predictor` run with ``options``, a result whose
        ``to_dict()`` is an entry of ``programl predict --json``."""
        return self.predictor(model)(graph, **options)

    def add_predict_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the task's own options of ``programl predict <name>`` (default: none)."""

    def predict_wanted(self, args: argparse.Namespace) -> tuple[list[dict[str, str]], bool]:
        """The models ``programl predict`` runs when no ``--model`` is given: one
        ``find_pretrained`` filter of the model zoo per model (e.g. ``{"platform": "amd"}``; the first
        model found for each is run), and whether the user named them (then each needs a model, and a model that
        cannot predict for an input fails it) rather than asked for all there are. Default: the task's one model,
        ``([{}], True)``."""
        return [{}], True

    def predict_default(
        self, names: list[str], metadata: Mapping[str, Mapping[str, Any]], args: argparse.Namespace | None
    ) -> str:
        """Which of the installed models that match one :meth:`predict_wanted` filter ``programl predict`` runs
        when no ``--model`` is given: ``names`` sorted (the faithful model, named after its analysis or platform,
        first), ``metadata`` each one's ``model.json``, ``args`` the command line (None: no option given).
        Default: the first."""
        return names[0]

    def check_predict_model(self, model, args: argparse.Namespace) -> None:
        """Refuse a ``programl predict --model`` of this task that the task's options rule out (default: none).

        Raises:
            ProgramlError: One line naming ``args.model``.
        """

    def source_graph(
        self, path: str, suffix: str, compile_flags: tuple[str, ...], flags: tuple[str, ...], timeout: float
    ):
        """The ``ProgramGraph`` of the source file ``path`` (``suffix``: its extension, lower case) compiled as the
        task's training graphs were, or None to build it as ``programl build`` does (the default). Runs in a worker
        process of ``programl predict``.

        Args:
            compile_flags: The model's compiler flags (``model.json`` ``inputs.flags``).
            flags: The user's, after ``--``.
            timeout: Seconds the compiler may take.

        Raises:
            GraphCreationError: The file does not compile.
        """
        return None

    def predict_options(self, args: argparse.Namespace) -> dict[str, Any]:
        """The keyword arguments of :meth:`predict` that the task's ``programl predict`` options ask for (plain
        data: a prediction worker gets them pickled). Default: none."""
        return {}

    def predict_entries(self, path: str, graph, models, request, out) -> list[dict]:
        """The ``predictions`` of ``programl predict --json`` for one input: one entry per model, ``{"model": its
        name, **prediction.to_dict()}``. Runs in a prediction worker.

        Args:
            path: The input, as given.
            graph: Its ``ProgramGraph`` (checked: it has nodes and no dangling edge).
            models: The loaded pretrained models (``PretrainedModel``).
            request: ``options`` (:meth:`predict_options`), ``explicit`` (:meth:`predict_wanted`), ``notes``
                (whether to say why a model was skipped).
            out: Where to add lines for stderr (``out.messages``) and counts for the summary line (``out.notes``).

        Raises:
            ProgramlError: The input fails (one line).
        """
        return [{"model": model.name, **self.predict(model, graph, **request.options).to_dict()} for model in models]

    def predict_text(self, path: str, name: str, nodes: int, result: Mapping[str, Any]) -> list[str]:
        """The lines ``programl predict`` prints of ``result``, an entry of :meth:`predict_entries` (model ``name`` on
        the graph of ``path``, with ``nodes`` nodes; an entry with ``skipped`` is not printed). Default: one line,
        each entry of the prediction as ``key value`` (a list or an object as JSON)."""
        shown_entries = [
            f"{key} {value if isinstance(value, (str, int, float)) else json.dumps(value, sort_keys=True)}"
            for key, value in result.items()
            if key != "model"
        ]
        return [f"{path}: {self.name} (model {name}): {'; '.join(shown_entries)}"]
