"""``programl export-pretrained RUN_DIR [NAME]``: install a finished training run as a pretrained model
(:mod:`programl.pretrained.export`).

Writes ``NAME/`` (``weights.pt``, ``vocab.csv``, ``model.json``, ``MODEL_CARD.md``) into the package's
``programl/pretrained/weights`` (or ``-o DIR``), where ``programl predict`` and ``programl.pretrained.pretrained(NAME)``
find it. The network is rebuilt from the run's ``config.json`` and loaded from ``best.pt``; the card's scores come
from ``result.json`` (or ``--card-from``; where that file holds scores only, the training time, device and threads
come from the run's ``log.jsonl`` and the best epoch from the checkpoint). NAME defaults to the analysis
(dataflow), ``devmap-<platform>`` or ``classifyapp``.
"""

from __future__ import annotations

import argparse
import sys

from programl.cli.helptext import SUMMARIES

__all__ = ["add_parser", "run"]

EXAMPLES = """\
examples:
  programl export-pretrained runs/dataflow/reachability                  installs 'reachability'
  programl export-pretrained runs/devmap --platform amd                  'devmap-amd', the best-validated fold
  programl export-pretrained runs/classifyapp --commit 1a2b3c --train-command "programl train classifyapp ..."
  programl export-pretrained runs/dataflow/liveness --force \
      --card-from runs/dataflow/liveness/evaluation_best_test.json    scores of programl evaluate dataflow
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "export-pretrained",
        help=SUMMARIES["export-pretrained"],
        description="Install a finished training run as a pretrained model: NAME/ with weights.pt, vocab.csv, "
        "model.json and MODEL_CARD.md, where programl predict and programl.pretrained.pretrained(NAME) find it.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory of programl train TASK")
    parser.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="the model's name (default: the analysis, devmap-<platform> or classifyapp)",
    )
    parser.add_argument(
        "-o", "--output-dir", metavar="DIR", help="write DIR/NAME (default: the package's programl/pretrained/weights)"
    )
    parser.add_argument("--platform", choices=("amd", "nvidia"), help="devmap: the platform (default: the only one)")
    parser.add_argument(
        "--fold",
        type=int,
        metavar="K",
        help="devmap: the fold (default: the best validation accuracy; ties: the lower fold)",
    )
    parser.add_argument(
        "--card-from",
        metavar="FILE",
        help="take the scores from FILE instead of the run's result.json (e.g. an evaluation_*.json; training facts "
        "it lacks come from the run's log.jsonl)",
    )
    parser.add_argument(
        "--train-command",
        metavar="COMMAND",
        help="the command that trained the run, for the card (default: an equivalent one made from config.json)",
    )
    parser.add_argument("--commit", help="the programl commit that trained the run, for the card")
    parser.add_argument(
        "--compute-note",
        metavar="TEXT",
        help="a sentence for the card's compute section beside the recorded time (e.g. a run that moved between "
        "a GPU and CPUs: result.json records the device of its end only)",
    )
    parser.add_argument("--force", action="store_true", help="replace a model of that name")
    parser.set_defaults(run=run, parser=parser)


def run(args: argparse.Namespace) -> int:
    from programl.cli.common import EXIT_FAILED, EXIT_OK, one_line
    from programl.cli.train import describe
    from programl.exceptions import ProgramlError
    from programl.pretrained.export import export_pretrained

    try:
        directory = export_pretrained(
            args.run_dir,
            args.name,
            output_dir=args.output_dir,
            platform=args.platform,
            fold=args.fold,
            card_from=args.card_from,
            command=args.train_command,
            commit=args.commit,
            compute_note=args.compute_note,
            force=args.force,
        )
    except (ProgramlError, OSError) as error:
        print(f"programl export-pretrained: error: {one_line(describe(error))}", file=sys.stderr)
        return EXIT_FAILED
    size = sum(p.stat().st_size for p in directory.iterdir())
    print(f"{directory}: {size:,} bytes ({', '.join(sorted(p.name for p in directory.iterdir()))})")
    return EXIT_OK
