"""What ``--help`` shows of a docstring (docs/spec/design.md#command-line): plain text, without reStructuredText
markup and without citations of the specification (``docs/spec/``), which the installed package does not ship."""

from __future__ import annotations

import re

__all__ = ["SUMMARIES", "description", "help_text"]

#: command -> its line in ``programl --help`` (here, so that listing the commands imports none of them).
SUMMARIES = {
    "build": "build program graphs from .ll/.bc/.c/.cc/.cpp/.cl/.cu/.f/.f90 files",
    "analyze": "label graphs with data-flow analyses",
    "convert": "convert saved graphs to another format",
    "stats": "print node and edge counts of saved graphs",
    "dataset": "build and inspect DeepDataFlow data sets",
    "train": "train a model for a task (programl train --help lists them)",
    "evaluate": "evaluate a trained model on held-out data",
    "predict": "predict with a pretrained model",
    "export-pretrained": "install a finished training run as a pretrained model",
    "view": "write an interactive HTML page per input: the graph, source lines, labels and predictions",
    "optimize": "optimise a program for size with the learned pass policy; print the passes and sizes",
}


def help_text(text: str) -> str:
    """``text`` as ``--help`` shows it: no reStructuredText markup (````x````, ``:mod:`x```) and no parenthesis that
    cites the specification (``(docs/spec/analyses.md, docs/spec/datasets.md#deepdataflow-layout)``, or a section of
    the SPEC or DESIGN documents that it cited before)."""
    text = re.sub(r"\s*\((?:docs/spec/|(?:SPEC|DESIGN) §)[^)]*\)", "", text)
    text = re.sub(r":\w+:`~?([^`]*)`", lambda m: m.group(1).rsplit(".", 1)[-1], text)
    return text.replace("``", "")


def description(doc: str | None) -> str:
    """The first paragraph of a module docstring ``doc`` as :func:`help_text` gives it: a command's description."""
    return help_text((doc or "").strip().split("\n\n")[0])
