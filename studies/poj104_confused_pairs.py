#!/usr/bin/env python3
"""Where a POJ-104 model's errors are, and what the graph would need to see to remove them (issue 40, item 4).

Reads the ``confused_pairs`` of one split of an ``evaluation_<checkpoint>.json`` (``programl evaluate classifyapp``:
each unordered pair of classes with its errors in both directions, most first) and, for each of the first
``--pairs`` pairs, asks whether the two classes' *sources* tell them apart by what ProGraML's graph leaves out:

* **string literals** (``"%d,"``): the graph keeps a string global as a node with the text ``ptr`` (SPEC §1.2); its
  bytes are only in ``full_text``, which no model reads;
* **numeric literals** (``100``, ``1e-6``): the graph keeps a constant's type; ``--numbers-and-types``
  (``docs/numbers_types.md``) adds its value.

For each pair and each kind of literal, a logistic regression on the counts of each whole literal is fitted on the
pair's *training* programs and scored on its *validation* programs (the data set's own split, ``split_programs`` with
its seed; test programs are never read, even when the pairs are the test split's), beside the majority class of those
validation programs. "Errors per program of the pair" divides the pair's errors by its programs in the scored split
(those that did not compile included). A pair whose two classes are the same problem under two labels stays near the
majority rate with every feature; one that the literals separate is a pair the graph could separate if it carried
them.

Usage::

    programl evaluate classifyapp --run-dir RUN --split val --out EVAL
    python studies/poj104_confused_pairs.py EVAL/evaluation_best.json --source ../shared/data/poj104 --json pairs.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from programl.data.poj104 import read_programs, split_programs
from programl.exceptions import ProgramlError
from programl.util.fs import atomic_write_text, read_json

#: the tokens that matter here, in one scan (so that a quote in a comment or a ``//`` in a string is what it is):
#: a string literal, a character literal, a comment, a numeric literal (integer, decimal, exponent, hex)
TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*'"
    r"|//[^\n]*|/\*.*?\*/"
    r"|(?<![\w.])(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)",
    re.DOTALL,
)


def literals(text: str) -> dict[str, list[str]]:
    """The string literals (without their quotes) and the numeric literals of a source text; comments and character
    literals count as neither."""
    found: dict[str, list[str]] = {"strings": [], "numbers": []}
    for match in TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            found["strings"].append(token[1:-1])
        elif token[0] not in "'/":
            found["numbers"].append(token)
    return found


def separability(train: list[tuple[int, list[str]]], val: list[tuple[int, list[str]]]) -> float:
    """Validation accuracy of a logistic regression on the counts of whole literals, fitted on ``train``; each item
    ``(label, literals)``. A program without any literal is one token of its own (an empty row cannot be told)."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = CountVectorizer(analyzer=lambda tokens: tokens or ["<none>"], lowercase=False)
    x_train = vectorizer.fit_transform([tokens for _, tokens in train])
    model = LogisticRegression(max_iter=5000).fit(x_train, [label for label, _ in train])
    return float(model.score(vectorizer.transform([tokens for _, tokens in val]), [label for label, _ in val]))


def analyse(evaluation: dict, split: str, source: Path, pairs: int, seed: int, verify: bool) -> dict:
    """Per pair: its errors, their share, and the validation accuracy of each kind of literal (module docstring)."""
    if not isinstance(evaluation.get(split), dict) or "confused_pairs" not in evaluation[split]:
        raise ProgramlError(f"the evaluation has no confused_pairs for the {split!r} split (programl evaluate ...)")
    scored = evaluation[split]
    programs = read_programs(source, verify=verify)
    by_id = {program.id: program for program in programs}
    ids = split_programs(programs, seed)
    rows = []
    for entry in scored["confused_pairs"][:pairs]:
        pair = tuple(entry["classes"])
        row = {"classes": list(pair), "count": entry["count"], "share": entry["share"]}
        parts = {name: [by_id[i] for i in ids[name] if by_id[i].label in pair] for name in ("train", "val")}
        val_labels = [p.label for p in parts["val"]]
        row["val_programs"] = len(val_labels)
        row["split_programs"] = sum(by_id[i].label in pair for i in ids[split])  # those of the scored split
        row["majority"] = round(max(val_labels.count(c) for c in pair) / len(val_labels), 4)
        found = {name: [(p.label, literals(p.text)) for p in group] for name, group in parts.items()}
        for kind in ("strings", "numbers"):
            train = [(label, lit[kind]) for label, lit in found["train"]]
            val = [(label, lit[kind]) for label, lit in found["val"]]
            row[kind] = round(separability(train, val), 4)
        rows.append(row)
    errors = round(scored["error"] * scored["count"])
    return {"split": split, "graphs": scored["count"], "errors": errors, "error": scored["error"], "pairs": rows}


def table(result: dict) -> str:
    """The result as a Markdown table."""
    lines = [
        f"{result['split']}: {result['errors']} errors in {result['graphs']} graphs ({100 * result['error']:.2f} %)",
        "",
        "| classes | errors | share of errors | errors per program of the pair | majority | string literals "
        "| numeric literals |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in result["pairs"]:
        a, b = row["classes"]
        lines.append(
            f"| {a} / {b} | {row['count']} | {100 * row['share']:.1f} % | {row['count'] / row['split_programs']:.2f} "
            f"| {100 * row['majority']:.1f} % "
            f"| {100 * row['strings']:.1f} % | {100 * row['numbers']:.1f} % |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("evaluation", type=Path, help="evaluation_<checkpoint>.json of programl evaluate")
    parser.add_argument("--split", default="val", choices=("val", "test"), help="whose pairs (default: val)")
    parser.add_argument("--source", type=Path, required=True, help="poj104.tar.xz, its directory or a codexglue/")
    parser.add_argument("--pairs", type=int, default=10, help="how many of the most confused pairs (default: 10)")
    parser.add_argument("--seed", type=int, default=204, help="the data set's split seed (default: 204)")
    parser.add_argument("--no-verify", action="store_true", help="accept a source that is not the published POJ-104")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    try:
        result = analyse(read_json(args.evaluation), args.split, args.source, args.pairs, args.seed, not args.no_verify)
    except (ProgramlError, OSError, ValueError) as error:
        print(f"poj104_confused_pairs: {error}", file=sys.stderr)
        return 1
    print(table(result))
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
