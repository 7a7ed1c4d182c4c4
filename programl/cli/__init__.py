"""The ``programl`` command line (docs/spec/design.md#conventions): ``programl build | analyze | convert | dataset |
train | evaluate | predict | export-pretrained | view``.

Each subcommand lives in its own module exposing ``add_parser(subparsers)`` and ``run(args) -> int``; ``programl``
imports only the module of the command it runs (``programl --help`` lists the commands from
:data:`programl.cli.helptext.SUMMARIES` and imports none of them). Exit codes: 0 success, 1 some inputs
failed, 2 usage error. The commands of :data:`NEEDS_ML` run only where torch and torch-geometric are installed (the
``ml`` extra); elsewhere they end in one line that says which extra to install (exit 1).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable

from programl.cli.helptext import SUMMARIES

__all__ = ["main"]

# subcommand name -> module (kept in the order `--help` lists them)
COMMANDS = {
    "build": "programl.cli.build",
    "analyze": "programl.cli.analyze",
    "convert": "programl.cli.convert",
    "stats": "programl.cli.stats",
    "dataset": "programl.cli.dataset",
    "train": "programl.cli.train",
    "evaluate": "programl.cli.evaluate",
    "predict": "programl.cli.predict",
    "export-pretrained": "programl.cli.export_pretrained",
    "view": "programl.cli.view",
    "optimize": "programl.cli.optimize",
}
#: Subcommands that need the ``ml`` extra (torch, torch-geometric). Checked (without importing either) before they
#: run, so that an install without the extra gets one line that says what to install, not an import traceback.
NEEDS_ML = frozenset({"train", "evaluate", "predict", "export-pretrained"})


def make_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The ``programl`` parser with the full parsers of ``commands`` (None: all); the others are listed by name and
    summary only (their modules are not imported)."""
    from programl import __version__

    full = set(COMMANDS if commands is None else commands)
    parser = argparse.ArgumentParser(
        prog="programl",
        description="ProGraML program graphs, data-flow labels and graph neural networks.",
    )
    parser.add_argument("--version", action="version", version=f"programl {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        if name in full:
            importlib.import_module(module).add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=SUMMARIES[name])
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (``programl`` has no option with a value)."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:  # everything after `--` goes to the tool the command runs (clang for `build`)
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = make_parser([command] if (command := _command_of(argv)) in COMMANDS else [])
    args = parser.parse_args(argv)
    args.extra_args = extra
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return 2
    from programl.cli.common import stdout_to_devnull

    if args.command in NEEDS_ML:
        from programl import _ml_message, _ml_missing

        missing = _ml_missing()
        if missing:
            print(_ml_message(f"programl {args.command}", missing), file=sys.stderr)
            return 1
    try:
        code = int(args.run(args) or 0)
        sys.stdout.flush()  # here, not at exit: a full disk or a closed pipe is then one line too
        return code
    except KeyboardInterrupt:
        print("programl: interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as error:  # a command reached torch without the ml extra: the same one line
        from programl import _ml_import_error

        replacement = _ml_import_error(f"programl {args.command}", error)
        if replacement is None:
            raise
        print(replacement, file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader of stdout went away (`| head`): stop quietly, as a pipeline expects
        stdout_to_devnull()
        return 1
    except OSError as error:  # what no command catches itself: writing stdout to a full disk, say
        stdout_to_devnull()
        where = f" ({error.filename})" if error.filename else ""
        print(f"programl {args.command}: error: {error.strerror or error}{where}", file=sys.stderr)
        return 1
