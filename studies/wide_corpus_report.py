#!/usr/bin/env python3
"""Per-source report of a DeepDataFlow build (issue 36 item 4: DeepDataFlow-22 wide).

Reads a data set built by ``programl dataset build`` (its ``manifest.jsonl`` and split links; optionally its graphs)
and prints, per source (the first part of an input's name: ``poj104``, ``opencl`` for the DevMap kernels, or the
``name`` of a recipe's archive source) and per compiler (clang-22, clang-14, flang-22):

* programs: distinct source files (POJ-104: programs; archives: files of the archive), inputs, graphs built,
  inputs that failed (the manifest's failures: compile errors, timeouts);
* groups (split units) and graphs per split (train / val / test);
* nodes: mean and max per graph;
* per analysis: label records (examples) and the shares needing <= 30, 31-60 and > 60 data-flow steps. The DDF-30
  share is the first, DDF-60 the first two (SPEC §7.2); DDF is all. The JSON also counts the graphs on which the
  analysis gave up (dominance's 1,000 and liveness's 5,000 step limits: no records for that graph);
* with ``--dead-blocks``: instructions that begin a block no control edge reaches (the dead blocks after
  ``unreachable`` that clang-10 -O0 IR kept, issue 36 item 5), counted from the graphs.

The table goes to stdout (Markdown); ``--json`` writes the same numbers.

Usage::

    python studies/wide_corpus_report.py data/ddf22-wide --json wide.json [--dead-blocks] [--by-compiler]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from programl.data.deepdataflow.layout import SPLITS, Layout, read_manifest  # noqa: E402
from programl.data.deepdataflow.recipe import source_of  # noqa: E402
from programl.dataflow.names import ANALYSES  # noqa: E402

SHORT = {"reachability": "reach", "dominance": "dom", "datadep": "datadep", "liveness": "live", "subexpressions": "cse"}


def compiler_of(entry: dict) -> str:
    """clang-22, clang-14 or flang-22 (from the input's language: ``c@clang-14``, ``fortran``)."""
    language = entry.get("language") or ""
    if "@" in language:
        return language.split("@", 1)[1]
    return "flang-22" if language == "fortran" else "clang-22" if language else "ir"


def dead_block_heads(path: Path) -> int:
    """Instructions with no incoming control edge, less one per function (its entry): heads of unreachable blocks."""
    from programl.io.files import read_graph

    graph = read_graph(path)
    reached = set()
    for edge in graph.edge:
        if edge.flow == 0:  # CONTROL
            reached.add(edge.target)
    heads: dict[int, int] = defaultdict(int)
    for index, node in enumerate(graph.node):
        if node.type == 0 and index not in reached and node.text != "[external]":
            heads[node.function] += 1
    return sum(max(count - 1, 0) for count in heads.values())


def report(root: Path, by_compiler: bool = False, dead_blocks: bool = False) -> dict:
    layout = Layout(root)
    entries = read_manifest(layout.manifest)
    split_of: dict[str, str] = {}
    for split in SPLITS:
        try:
            for name in layout.split_names(split):
                split_of[name] = split
        except FileNotFoundError:
            pass
    rows: dict[str, dict] = {}
    for entry in entries.values():
        key = source_of(entry["name"]) + (f" ({compiler_of(entry)})" if by_compiler else "")
        row = rows.setdefault(
            key,
            {
                "programs": set(),
                "groups": set(),
                "inputs": 0,
                "graphs": 0,
                "failed": 0,
                "nodes": [],
                "splits": dict.fromkeys(SPLITS, 0),
                "compilers": set(),
                "steps": {a: [] for a in ANALYSES},
                "gave_up": dict.fromkeys(ANALYSES, 0),
                "dead_block_heads": 0,
                "graphs_with_dead_blocks": 0,
            },
        )
        program = entry.get("group") if entry.get("kind") == "poj104" else entry.get("source", "").rsplit("]", 1)[0]
        row["programs"].add(program)
        row["groups"].add(entry.get("group"))
        row["compilers"].add(compiler_of(entry))
        row["inputs"] += 1
        if entry.get("status") != "ok":
            row["failed"] += 1
            continue
        row["graphs"] += 1
        row["nodes"].append(int(entry.get("nodes", 0)))
        if entry["name"] in split_of:
            row["splits"][split_of[entry["name"]]] += 1
        for analysis in ANALYSES:
            info = (entry.get("labels") or {}).get(analysis) or {}
            row["steps"][analysis] += info.get("steps", [])
            if "not found in" in info.get("reason", "") or "Failed to terminate" in info.get("reason", ""):
                row["gave_up"][analysis] += 1
        if dead_blocks and layout.graph(entry["name"]).is_file():
            heads = dead_block_heads(layout.graph(entry["name"]))
            row["dead_block_heads"] += heads
            row["graphs_with_dead_blocks"] += heads > 0
    result = {}
    for key in sorted(rows, key=lambda k: (k.startswith(("poj104", "opencl")), k)):
        row = rows[key]
        analyses = {}
        for analysis, steps in row["steps"].items():
            n = len(steps)
            le30 = sum(1 for s in steps if s <= 30)
            le60 = sum(1 for s in steps if s <= 60)
            analyses[analysis] = {
                "examples": n,
                "steps_le30": le30,
                "steps_31_60": le60 - le30,
                "steps_gt60": n - le60,
                "share_ddf30": round(le30 / n, 4) if n else None,
                "share_ddf60": round(le60 / n, 4) if n else None,
                "max_steps": max(steps) if steps else None,
                "graphs_where_the_analysis_gave_up": row["gave_up"][analysis],
            }
        nodes = row["nodes"]
        result[key] = {
            "programs": len(row["programs"]),
            "groups": len(row["groups"]),
            "inputs": row["inputs"],
            "graphs": row["graphs"],
            "failed": row["failed"],
            "compilers": sorted(row["compilers"]),
            "splits": row["splits"],
            "nodes_total": sum(nodes),
            "nodes_mean": round(sum(nodes) / len(nodes), 1) if nodes else 0,
            "nodes_max": max(nodes) if nodes else 0,
            "analyses": analyses,
            **(
                {"dead_block_heads": row["dead_block_heads"], "graphs_with_dead_blocks": row["graphs_with_dead_blocks"]}
                if dead_blocks
                else {}
            ),
        }
    return result


def _share(info: dict) -> str:
    n = info["examples"]
    if not n:
        return "-"
    shares = (100 * info[k] / n for k in ("steps_le30", "steps_31_60", "steps_gt60"))
    return f"{n:,}: " + "/".join(f"{share:.0f}" for share in shares)


def table(result: dict, dead_blocks: bool = False) -> str:
    head = ["source", "programs", "inputs", "graphs", "failed", "groups", "train/val/test", "nodes mean/max"]
    head += [f"{SHORT[a]} (≤30/31–60/>60 %)" for a in ANALYSES]
    if dead_blocks:
        head.append("dead-block heads (graphs)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    totals = defaultdict(int)
    for key, row in result.items():
        splits = "/".join(f"{row['splits'][s]:,}" for s in SPLITS)
        cells = [
            key,
            f"{row['programs']:,}",
            f"{row['inputs']:,}",
            f"{row['graphs']:,}",
            f"{row['failed']:,}",
            f"{row['groups']:,}",
            splits,
            f"{row['nodes_mean']:,.0f}/{row['nodes_max']:,}",
        ]
        cells += [_share(row["analyses"][a]) for a in ANALYSES]
        if dead_blocks:
            cells.append(f"{row['dead_block_heads']:,} ({row['graphs_with_dead_blocks']:,})")
        lines.append("| " + " | ".join(cells) + " |")
        for k in ("programs", "inputs", "graphs", "failed"):
            totals[k] += row[k]
    lines.append(
        f"| all | {totals['programs']:,} | {totals['inputs']:,} | {totals['graphs']:,} | {totals['failed']:,} |"
        + " |" * (len(head) - 5)
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="a data set built by programl dataset build")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the numbers as JSON")
    parser.add_argument("--by-compiler", action="store_true", help="one row per source and compiler")
    parser.add_argument("--dead-blocks", action="store_true", help="count unreachable-block heads in the graphs")
    args = parser.parse_args(argv)
    if not Layout(args.root).manifest.is_file():
        parser.error(f"{args.root}: no manifest.jsonl (not a data set built by programl dataset build)")
    result = report(args.root, by_compiler=args.by_compiler, dead_blocks=args.dead_blocks)
    print(table(result, dead_blocks=args.dead_blocks))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
