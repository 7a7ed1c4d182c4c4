#!/usr/bin/env python3
"""Agreement with the original builder: exact-match rates over the differential corpus, and why files differ.

Corpus: the C/C++ programs of tests/data/programs at -O0, -O2 and -O0 -g (clang-14, LLVM 10-readable IR), the 1,000
files of ../shared/data/legacy-ir, and the PyPI C files that benchmarks/build.py compiled into its cache (when
present). Each file is built by ProGraML 0.3.2's ``llvm2graph-10`` and by programl, and compared
as multisets of canonical nodes and edges (programl.graph_builder.compare):

* "policy only": after the Policy normalisation (pointer texts, `.p0i8` -> `.p0` intrinsic names, order);
* "+ upgrade effects": after also rewriting the original's graph by the named LLVM 10 -> 22 upgrade effects
  (programl.graph_builder.compare.UPGRADE_EFFECTS); for each effect, how many files it touched.

Prints a table and writes JSON (--out). Needs llvm2graph-10 and clang-14 (make reference).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.exceptions import GraphCreationError  # noqa: E402
from programl.graph_builder.compare import UPGRADE_EFFECTS, apply_llvm22_upgrade, compare_graphs  # noqa: E402
from programl.graph_builder.llvm import graph_from_ir  # noqa: E402
from programl.graph_builder.reference import (  # noqa: E402
    find_clang14,
    find_llvm2graph,
    llvm10_compatible,
    llvm10_ir,
    reference_graph,
)

SHARED = REPO.parent / "shared" / "data"


def corpus(pypi_cache: Path):
    programs = sorted((REPO / "tests" / "data" / "programs").glob("*.c*"))
    for opt in ("-O0", "-O2", "-g"):
        for program in programs:
            yield f"programs {opt}", f"{program.name} {opt}", llvm10_ir(program, [opt])
    archive = SHARED / "legacy-ir" / "llvm_ir.tar.bz2"
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.name.endswith(".ll"):
                yield "legacy-ir", member.name, tar.extractfile(member).read().decode("utf-8")
    for path in sorted(pypi_cache.glob("*/*.ll")):
        text = path.read_text()
        if text:  # an empty file marks a C file that did not compile with clang-14
            yield "pypi C files", path.name, llvm10_compatible(text)


def _row(group: str, counts: Counter) -> str:
    files = max(counts["files"], 1)
    exact, after = counts["policy only"], counts["+ upgrade effects"]
    skipped = ", ".join(f"{counts[k]} {k}" for k in ("unreadable by LLVM 22", "original timed out") if counts[k])
    return (
        f"{group:<14} {counts['files']:>6} {exact:>8} ({100 * exact / files:5.1f}%) "
        f"{after:>10} ({100 * after / files:5.1f}%)  {skipped}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench-results" / "differential.json")
    parser.add_argument(
        "--pypi-cache",
        type=Path,
        default=Path.home() / ".cache" / "programl" / "bench-build" / "ir",
        help="IR of the build benchmark's PyPI C files",
    )
    parser.add_argument("--timeout", type=float, default=300, help="seconds per file for llvm2graph-10")
    args = parser.parse_args()
    binary = find_llvm2graph()
    if binary is None or find_clang14() is None:
        print("needs llvm2graph-10 and clang-14: make reference", file=sys.stderr)
        return 1
    groups: dict[str, Counter] = {}
    effects_by_group: dict[str, Counter] = {}
    differing: list[dict] = []
    for group, name, ir in corpus(args.pypi_cache):
        counts = groups.setdefault(group, Counter())
        effects = effects_by_group.setdefault(group, Counter())
        try:
            ours = graph_from_ir(ir)
        except GraphCreationError as error:
            counts["unreadable by LLVM 22"] += 1
            print(f"LLVM 22 cannot read {group} {name}: {error}", file=sys.stderr)
            continue
        try:
            reference = reference_graph(ir, binary, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            counts["original timed out"] += 1
            print(f"llvm2graph-10 took over {args.timeout:g} s on {name} ({len(ours.node):,} nodes)", file=sys.stderr)
            continue
        counts["files"] += 1
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
    print(f"{'corpus':<14} {'files':>6} {'policy only':>14} {'+ upgrade effects':>19}  not compared")
    total = Counter()
    for group, counts in groups.items():
        total.update(counts)
        print(_row(group, counts))
    print(_row("all", total))
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
