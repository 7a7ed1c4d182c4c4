"""``.. programl-cli::``: the command-line reference, generated from the parsers ``programl`` itself uses.

One section per command and subcommand (``programl build``, ``programl predict dataflow`` ...): the first paragraph of
its description and its ``--help`` exactly as the terminal shows it (80 columns), so the reference cannot drift from
the code.
"""

from __future__ import annotations

import argparse
import os

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

__all__ = ["setup"]

UNDERLINES = '=-~^"'


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


class ProgramlCli(SphinxDirective):
    """Sections for every ``programl`` command, each with its ``--help``."""

    has_content = False
    option_spec = {"level": int}

    def run(self) -> list[nodes.Node]:
        from programl.cli import make_parser

        level = self.options.get("level", 1)
        old = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "100"
        try:
            lines: list[str] = []
            for path, parser in _commands(make_parser()):
                if not path:
                    continue
                title = " ".join(("programl", *path))
                underline = UNDERLINES[min(level + len(path) - 1, len(UNDERLINES) - 1)]
                lines += [title, underline * len(title), ""]
                lines += [".. code-block:: text", ""]
                lines += ["   " + line if line else "" for line in parser.format_help().rstrip().splitlines()]
                lines.append("")
        finally:
            if old is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = old
        container = nodes.container()
        nested_parse_with_titles(self.state, StringList(lines, source="programl --help"), container)
        return container.children


def setup(app):
    app.add_directive("programl-cli", ProgramlCli)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
