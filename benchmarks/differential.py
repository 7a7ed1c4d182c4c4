#!/usr/bin/env python3
"""Agreement with the original builder: exact-match rates over the differential corpus, and why files differ.

Corpus: the C/C++ programs of tests/data/programs at -O0, -O2 and -O0 -g (clang-14, LLVM 10-readable IR) and the 1,000 files
of ../shared/data/legacy-ir. Each file is built by ProGraML 0.3.2's ``llvm2graph-10`` and by programl, and compared
as multisets of canonical nodes and edges (programl.graph_builder.compare):

* "policy only": after the Policy normalisation (pointer texts, `.p0i8` -> `.p0` intrinsic names, order);
* "+ upgrade effects": after also rewriting the original's graph by the named LLVM 10 -> 22 upgrade effects
  (programl.graph_builder.compare.UPGRADE_EFFECTS); for each effect, how many files it touched.

Prints a table and writes JSON (--out). Needs llvm2graph-10 and clang-14 (make reference).
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.graph_builder.compare import UPGRADE_EFFECTS, apply_llvm22_upgrade, compare_graphs  # noqa: E402
from programl.graph_builder.llvm import graph_from_ir  # noqa: E402
from programl.graph_builder.reference import find_clang14, find_llvm2graph, llvm10_ir, reference_graph  # noqa: E402

SHARED = REPO.parent / "shared" / "data"


def corpus():
    programs = sorted((REPO / "tests" / "data" / "programs").glob("*.c*"))
    for opt in ("-O0", "-O2", "-g"):
        for program in programs:
            yield f"programs {opt}", f"{program.name} {opt}", llvm10_ir(program, [opt])
    archive = SHARED / "legacy-ir" / "llvm_ir.tar.bz2"
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.name.endswith(".ll"):
                yield "legacy-ir", member.name, tar.extractfile(member).read().decode("utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench-results" / "differential.json")
    args = parser.parse_args()
    binary = find_llvm2graph()
    if binary is None or find_clang14() is None:
        print("needs llvm2graph-10 and clang-14: make reference", file=sys.stderr)
        return 1
    groups: dict[str, Counter] = {}
    effects_by_group: dict[str, Counter] = {}
    differing: list[dict] = []
    for group, name, ir in corpus():
        counts = groups.setdefault(group, Counter())
        effects = effects_by_group.setdefault(group, Counter())
        counts["files"] += 1
        reference = reference_graph(ir, binary)
        ours = graph_from_ir(ir)
        exact = not compare_graphs(reference, ours)
        upgraded, applied = apply_llvm22_upgrade(reference)
        after = not compare_graphs(upgraded, ours)
        counts["policy only"] += exact
        counts["+ upgrade effects"] += after
        effects.update({effect: 1 for effect in applied})
        if any(node.text.endswith("*") or "*]" in node.text for node in reference.node):
            effects["opaque-pointer-texts"] += 1
        if not after:
            differing.append({"group": group, "file": name, "difference": compare_graphs(upgraded, ours).summary(3)})
    print(f"{'corpus':<14} {'files':>6} {'policy only':>14} {'+ upgrade effects':>19}")
    total = Counter()
    for group, counts in groups.items():
        total.update(counts)
        print(
            f"{group:<14} {counts['files']:>6} {counts['policy only']:>8} ({100 * counts['policy only'] / counts['files']:5.1f}%)"
            f" {counts['+ upgrade effects']:>10} ({100 * counts['+ upgrade effects'] / counts['files']:5.1f}%)"
        )
    print(
        f"{'all':<14} {total['files']:>6} {total['policy only']:>8} ({100 * total['policy only'] / total['files']:5.1f}%)"
        f" {total['+ upgrade effects']:>10} ({100 * total['+ upgrade effects'] / total['files']:5.1f}%)"
    )
    print("\nupgrade effects (files touched):")
    for effect in UPGRADE_EFFECTS:
        touched = {group: effects_by_group[group][effect] for group in groups if effects_by_group[group][effect]}
        print(f"  {effect:<30} {sum(touched.values()):>5}  {touched}")
    for item in differing:
        print(f"DIFFERS: {item['group']} {item['file']}: {item['difference']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"groups": groups, "effects": effects_by_group, "differing": differing}, indent=1, default=dict)
    )
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
