#!/usr/bin/env python3
"""The paper's table in the shipped data-flow models' cards (issue 36 item 6): copies each analysis's cells of
``docs/results.json`` (``dataflow.<analysis>.table`` for the faithful model ``<analysis>``, ``step_free_table`` for
the variant its cells name) into the model's ``model.json`` as ``scores.paper_table``, with the paper's numbers
(SPEC §7.1), and writes the card's section "The paper's table" from it
(:func:`programl.tasks.dataflow.spec.paper_table_lines`, the section the card writer renders), so the cards carry the
numbers ``docs/results.md`` publishes and change with them.

Cards written by the current exporter come out as :func:`programl.pretrained.card.model_card` writes them; the older
hand-completed cards of the faithful models keep their other words, and the section goes where the exporter puts it
(the end of "Scores").

Usage::

    python studies/dataflow_cards.py            # after docs/results.json changed
    python studies/dataflow_cards.py --check    # exit 1 when a card or model.json is behind docs/results.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.tasks.dataflow.spec import PAPER_TABLE_HEADING, SIZE_TABLE_HEADING, paper_table_lines  # noqa: E402
from programl.tasks.dataflow.train import PAPER_TABLE  # noqa: E402
from programl.util.fs import atomic_write_text  # noqa: E402

WEIGHTS = REPO / "programl" / "pretrained" / "weights"
#: The keys of a results.json cell a card shows.
CELL_KEYS = ("precision", "recall", "f1", "pooled_f1", "examples", "steps", "patience", "latch", "source")


def tables(results: dict) -> dict[str, dict]:
    """``{model name: {cell: card cell}}`` from ``docs/results.json``'s data-flow entries."""
    out: dict[str, dict] = {}
    for analysis, entry in results["dataflow"].items():
        for key in ("table", "step_free_table"):
            cells = entry.get(key) or {}
            if not cells:
                continue
            names = {c.get("model") or analysis for c in cells.values()}
            if len(names) != 1:
                raise SystemExit(f"docs/results.json: dataflow.{analysis}.{key} names several models: {sorted(names)}")
            table = {}
            for cell, c in cells.items():
                table[cell] = {k: c[k] for k in CELL_KEYS if k in c}
                table[cell]["paper"] = dict(zip(("precision", "recall", "f1"), PAPER_TABLE[analysis][cell]))
            out[names.pop()] = table
    return out


def with_section(card: str, lines: list[str]) -> str:
    """``card`` with its "The paper's table" section replaced by ``lines`` (or added at the end of "Scores", before
    the large-graph table where the card has one)."""
    end = card.index("\n\n## Compute")
    head, after = card[:end], ""
    if SIZE_TABLE_HEADING in head:
        cut = head.index("\n\n" + SIZE_TABLE_HEADING)
        head, after = head[:cut], head[cut:]
    if PAPER_TABLE_HEADING in head:
        head = head[: head.index("\n\n" + PAPER_TABLE_HEADING)]
    return head + "\n" + "\n".join(lines) + after + card[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=REPO / "docs" / "results.json")
    parser.add_argument("--weights", type=Path, default=WEIGHTS, help="the models' directory")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a model is behind")
    args = parser.parse_args(argv)
    behind = []
    for name, table in sorted(tables(json.loads(args.results.read_text())).items()):
        directory = args.weights / name
        if not (directory / "model.json").is_file():
            raise SystemExit(f"{directory}: no model.json (docs/results.json names the model {name!r})")
        metadata_text = (directory / "model.json").read_text()
        metadata = json.loads(metadata_text)
        metadata.setdefault("scores", {})["paper_table"] = table
        new_metadata = json.dumps(metadata, indent=2, sort_keys=True) + "\n"
        card_text = (directory / "MODEL_CARD.md").read_text()
        new_card = with_section(card_text, paper_table_lines(table))
        if (new_metadata, new_card) == (metadata_text, card_text):
            continue
        behind.append(name)
        if not args.check:
            atomic_write_text(directory / "model.json", new_metadata)
            atomic_write_text(directory / "MODEL_CARD.md", new_card)
    verb = "behind docs/results.json" if args.check else "written"
    print(f"{len(behind)} model(s) {verb}: {', '.join(behind) or 'none'}")
    return 1 if args.check and behind else 0


if __name__ == "__main__":
    sys.exit(main())
