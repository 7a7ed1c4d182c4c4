"""``--help`` of every command but ``train`` / ``evaluate`` (whose task help tests/cli/test_train.py checks): plain
text, without reStructuredText markup or references to the SPEC and DESIGN, which the package does not ship
(programl/cli/helptext.py; issue 10)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from programl.cli import make_parser
from programl.cli.helptext import description, help_text

#: Commands whose help comes from the task modules, checked by tests/cli/test_train.py.
TASK_COMMANDS = ("train", "evaluate")


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if not path and name in TASK_COMMANDS:
                    continue
                yield from _parsers(sub, (*path, name))


def _parser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = make_parser()
    for name in path:
        parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    return parser


COMMANDS = list(_parsers(make_parser()))


def test_every_command_is_walked() -> None:
    assert {path[0] for path in COMMANDS if path} == {
        "build",
        "analyze",
        "convert",
        "stats",
        "dataset",
        "predict",
        "export-pretrained",
        "view",
        "optimize",
    }
    assert ("dataset", "build") in COMMANDS and ("dataset", "prepare") in COMMANDS


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(("programl", *path)))
def test_help_is_plain_text(path: tuple[str, ...]) -> None:
    text = _parser(path).format_help()
    assert text.startswith("usage: programl")
    for markup in ("`", "SPEC", "DESIGN", "§", ":mod:", ":class:", ":func:", ":data:"):
        assert markup not in text, (markup, text)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(("programl", *path)))
def test_every_argument_says_what_it_is(path: tuple[str, ...]) -> None:
    undocumented = [
        action.option_strings or action.dest
        for action in _parser(path)._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction, argparse._VersionAction))
        and not action.help
    ]
    assert undocumented == []


def test_help_text_drops_markup_and_references() -> None:
    doc = "``programl x``: labels (SPEC §4, §9.1) for :class:`~programl.proto.ProgramGraph` files\n(DESIGN §5)."
    assert help_text(doc) == "programl x: labels for ProgramGraph files."
    assert description(doc + "\n\nMore detail.\n") == "programl x: labels for ProgramGraph files."
    assert description(None) == ""
