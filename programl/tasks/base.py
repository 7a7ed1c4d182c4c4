"""The interface of a task (docs/spec/tasks.md): :class:`TaskSpec`, the light half of a task that the command
line, the export of pretrained models, their cards and ``programl predict`` look up in
:data:`programl.tasks.registry.TASKS`, instead of comparing task names.

A task is one package ``programl/tasks/<name>/``: ``spec.py`` (a :class:`TaskSpec` subclass: no torch, imported for
``--help``, by the export and by the cards) and ``train.py`` (training and evaluation: the entry points that
:attr:`TaskSpec.train_module` names), plus one line in ``registry.py``. The methods below have the defaults most
tasks want; a task overrides what differs. Every method reads plain data (``config.json``, ``model.json``,
:class:`~programl.tasks.run_files.RunFiles`) and returns plain data or Markdown lines.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, ClassVar

from programl.exceptions import ProgramlError
from programl.tasks.run_files import RunFiles, read_log_seconds_by_device

__all__ = ["TaskSpec", "count_argument", "require_options"]


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


class TaskSpec:
    """A task, as the package outside ``programl/tasks/`` sees it.

    Attributes:
        name: ``programl train <name>``; the ``task`` of ``config.json`` and ``model.json``.
        summary: One line for ``--help``.
        title: The title of its models' cards.
        description: The first paragraph of ``programl train <name> --help`` (default: ``summary``).
        train_module: The module with ``train_main(args)`` and ``evaluate_main(args)`` (imported when the command
            runs, not for ``--help``: it may import torch at its top).
        train_epilog, evaluate_epilog: Examples that ``programl train|evaluate <name> --help`` end with.
        best_metric: The ``result.json`` key of the best validation score.
        fills_training_facts: Whether an export completes a scores-only results file (``--card-from``) with the
            training facts of ``log.jsonl`` and the checkpoint.
        counts_init_from: Whether a card counts the epochs of the checkpoint a run started from (``--init-from``).
        predict_help: What ``programl predict <name>`` predicts, as the end of "Predict ... with a pretrained model."
            (its line in ``programl predict --help``).
        predict_examples: The epilog of ``programl predict <name> --help``.
        predict_order: Where ``programl predict --help`` lists the task (lower first; ties: the registry's order).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    title: ClassVar[str]
    train_module: ClassVar[str]
    train_epilog: ClassVar[str] = ""
    evaluate_epilog: ClassVar[str] = ""
    best_metric: ClassVar[str] = "best_val_accuracy"
    fills_training_facts: ClassVar[bool] = True
    counts_init_from: ClassVar[bool] = True
    predict_help: ClassVar[str]
    predict_examples: ClassVar[str] = ""
    predict_order: ClassVar[int] = 100

    @property
    def description(self) -> str:
        """The first paragraph of ``programl train <name> --help``: :attr:`summary` as a sentence."""
        return self.summary[0].upper() + self.summary[1:] + "."

    # ---------------------------------------------------------------------------------------------------------
    # The command line: ``programl train|evaluate <name>`` (options from the task's options dataclass)

    @staticmethod
    def add_train_arguments(parser: argparse.ArgumentParser) -> None:
        """Add the options of ``programl train <name>`` to ``parser`` (no torch: ``--help`` lists them)."""
        raise NotImplementedError

    @staticmethod
    def add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
        """Add the options of ``programl evaluate <name>`` to ``parser``."""
        raise NotImplementedError

    # ---------------------------------------------------------------------------------------------------------
    # The network

    def model_spec(self, config: Mapping[str, Any], vocabulary_size: int, where: str = "config.json") -> dict:
        """The ``model`` entry of ``model.json`` (:func:`programl.pretrained.hub.build_model`) for a run with
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
        """``model.json`` ``outputs``: ``level`` (node or graph), ``classes`` and their ``meaning``."""
        raise NotImplementedError

    def inputs(self, files: RunFiles) -> dict[str, Any]:
        """``model.json`` ``inputs``: how sources are compiled for the model."""
        return {"sources": "anything `programl build` reads (.ll, .bc, .c, .cc, .cl, ...)"}

    def scores(self, files: RunFiles) -> dict[str, Any]:
        """``model.json`` ``scores``: the test scores of ``files.result``."""
        raise NotImplementedError

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
    # The model card (MODEL_CARD.md, from model.json alone)

    def card_task_line(self, m: Mapping[str, Any]) -> str:
        """The card's "task" cell."""
        return self.name

    def card_network(self, m: Mapping[str, Any]) -> str:
        """What the card's "network" cell says after the class and the parameter count (default: the steps T)."""
        return f", T = {m['steps']} message-passing steps" if m.get("steps") is not None else ""

    def card_data(self, m: Mapping[str, Any]) -> list[str]:
        """The paragraph of the card's "Data" section."""
        raise NotImplementedError

    def card_scores(self, scores: Mapping[str, Any]) -> list[str]:
        """The lines of the card's "Scores" section (from ``model.json`` ``scores``)."""
        raise NotImplementedError

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
        """What ``model`` (a :class:`~programl.pretrained.hub.PretrainedModel` of this task) predicts on ``graph``
        (a ``ProgramGraph``): a result whose ``to_dict()`` is an entry of ``programl predict --json``."""
        raise NotImplementedError

    def add_predict_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the task's own options of ``programl predict <name>`` (default: none)."""

    def predict_wanted(self, args: argparse.Namespace) -> tuple[list[dict[str, str]], bool]:
        """The models ``programl predict`` runs when no ``--model`` is given: one
        :func:`~programl.pretrained.hub.find_pretrained` filter per model (e.g. ``{"platform": "amd"}``; the first
        model found for each is run), and whether the user named them (then each needs a model, and a model that
        cannot predict for an input fails it) rather than asked for all there are. Default: the task's one model,
        ``([{}], True)``."""
        return [{}], True

    def predict_default(self, names: list[str], metadata: Mapping[str, Mapping[str, Any]], args) -> str:
        """Which of the installed models that match one :meth:`predict_wanted` filter ``programl predict`` runs
        when no ``--model`` is given: ``names`` sorted (the faithful model, named after its analysis or platform,
        first), ``metadata`` each one's ``model.json``. Default: the first."""
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
            models: The loaded :class:`~programl.pretrained.hub.PretrainedModel` objects.
            request: ``options`` (:meth:`predict_options`), ``explicit`` (:meth:`predict_wanted`), ``notes``
                (whether to say why a model was skipped).
            out: Where to add lines for stderr (``out.messages``) and counts for the summary line (``out.notes``).

        Raises:
            ProgramlError: The input fails (one line).
        """
        return [{"model": model.name, **model.predict(graph, **request.options).to_dict()} for model in models]

    def predict_text(self, path: str, name: str, nodes: int, result: Mapping[str, Any]) -> list[str]:
        """The lines ``programl predict`` prints of ``result``, an entry of :meth:`predict_entries` (model ``name`` on
        the graph of ``path``, with ``nodes`` nodes; an entry with ``skipped`` is not printed)."""
        raise NotImplementedError
