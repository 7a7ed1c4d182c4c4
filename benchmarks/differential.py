#!/usr/bin/env python3
"""Agreement with the original builder: exact-match rates over the differential corpus, and why files differ.

Corpus: the C/C++ programs of tests/data/programs at -O0, -O2 and -O0 -g (clang-14, LLVM 10-readable IR), the 1,000
files of ../shared/data/legacy-ir, the PyPI C files that benchmarks/build.py compiled into its cache (when
present), and harder real code at -O0 and -O2: C++ with classes in namespaces and templates
(ujson's bundled double-conversion), C++ that throws and catches exceptions (pyclipper's Clipper library and
its Cython-generated C++ wrapper; marisa-trie's MARISA library and its Cython-generated C++, whose ``except +``
calls catch C++ exceptions) and Cython-generated C (msgpack's and aiohttp's, as their sdists ship it). Those
sdists are fetched at benchmark time with ``pip download --no-deps --no-binary`` (sdists only) into --cache (never
committed); a package that cannot be fetched is skipped with a message. Each file is built by ProGraML 0.3.2's
``llvm2graph-10`` and by programl, and compared as multisets of canonical nodes and edges
(programl.graph_builder.compare):

* "policy only": after the Policy normalisation (pointer texts, `.p0i8` -> `.p0` intrinsic names, order);
* "+ upgrade effects": after also rewriting the original's graph by the named LLVM 10 -> 22 upgrade effects
  (programl.graph_builder.compare.UPGRADE_EFFECTS); for each effect, how many files it touched.

Prints a table and writes JSON (--out). Needs llvm2graph-10 and clang-14 (make reference). --corpus picks groups by
name (e.g. ``--corpus "Cython C" --corpus "PyPI C++"``).
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
import sysconfig
import tarfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from programl.exceptions import GraphCreationError  # noqa: E402
from programl.graph_builder.compare import UPGRADE_EFFECTS, apply_llvm22_upgrade, compare_graphs  # noqa: E402
from programl.graph_builder.llvm import graph_from_ir  # noqa: E402
from tests.graph_builder.reference import (  # noqa: E402
    find_clang14,
    find_llvm2graph,
    llvm10_compatible,
    llvm10_ir,
    reference_graph,
)

SHARED = REPO.parent / "shared" / "data"

#: (group, sdist, files in it, include directories in it): C++ with templates and namespaces, C++ that throws and
#: catches, and C that Cython generated (the sdists ship it). Without include directories, every directory of the
#: sdist that holds headers is one (marisa-trie's include/marisa/stdio.h would hide <stdio.h> that way).
HARDER_CODE = [
    ("PyPI C++", "ujson==5.10.0", ["deps/double-conversion/double-conversion/*.cc"], None),
    # C++ that throws and catches (invoke, landingpad, resume, __cxa_*): Clipper, and the C++ Cython generated for it
    ("PyPI C++", "pyclipper==1.3.0.post6", ["src/clipper.cpp", "src/pyclipper/_pyclipper.cpp"], None),
    # typed catches (llvm.eh.typeid.for): the MARISA library, and Cython C++ whose `except +` calls catch C++ errors
    (
        "PyPI C++",
        "marisa-trie==1.2.1",
        ["src/marisa_trie.cpp", "marisa-trie/lib/marisa/*.cc", "marisa-trie/lib/marisa/grimoire/*/*.cc"],
        ["marisa-trie/include", "marisa-trie/lib"],
    ),
    ("Cython C", "msgpack==1.1.0", ["msgpack/_cmsgpack.c"], None),
    (
        "Cython C",
        "aiohttp==3.9.5",
        ["aiohttp/_helpers.c", "aiohttp/_http_parser.c", "aiohttp/_http_writer.c", "aiohttp/_websocket.c"],
        None,
    ),
]


def fetch_sdist(spec: str, cache: Path) -> Path | None:
    """The unpacked sdist of ``spec`` under ``cache`` (pip download once), or None when it cannot be fetched."""
    directory = cache / "sdists" / spec
    if directory.exists():
        return directory
    download = cache / "downloads" / spec
    download.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", spec, "-d", str(download)]
    # pip prepares the sdist's metadata: first with this environment's setuptools (no download of build
    # requirements such as Cython); packages that need more (setuptools_scm) with pip's isolated build environment,
    # whose build requirements may be wheels (built from source they take many minutes): only `spec` must be an sdist
    name = spec.split("==")[0]
    for options in (["--no-binary", ":all:", "--no-build-isolation"], ["--no-binary", name]):
        try:
            subprocess.run([*command, *options], capture_output=True, timeout=600)
        except subprocess.TimeoutExpired:
            continue
        if any(download.glob("*.tar.gz")):
            break
    archives = sorted(download.glob("*.tar.gz"))
    if not archives:
        print(f"could not download {spec}: skipped", file=sys.stderr)
        return None
    partial = directory.with_name(directory.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archives[0]) as tar:
        tar.extractall(partial, filter="data")
    partial.rename(directory)
    return directory


def harder_code(cache: Path, wanted=lambda group: True):
    """(group, name, IR) for the C++ and Cython-generated C files of HARDER_CODE, at -O0 and -O2."""
    python_include = sysconfig.get_paths()["include"]
    for group, spec, patterns, includes in HARDER_CODE:
        if not wanted(group):
            continue
        directory = fetch_sdist(spec, cache)
        if directory is None:
            continue
        headers = sorted(
            {
                str(Path(h).parent)
                for suffix in ("h", "hpp")
                for h in glob.glob(str(directory / "**" / f"*.{suffix}"), recursive=True)
            }
        )
        roots = sorted(directory.iterdir())
        if includes is not None:
            headers = [str(root / include) for root in roots for include in includes]
        flags = [f"-I{d}" for d in headers] + [f"-I{r}" for r in roots] + [f"-I{python_include}"]
        sources = sorted(path for root in roots for pattern in patterns for path in root.glob(pattern))
        for opt in ("-O0", "-O2"):
            for source in sources:
                try:
                    ir = llvm10_ir(source, [opt, *flags])
                except GraphCreationError as error:
                    print(f"clang-14 cannot compile {source.name} {opt}: {error}", file=sys.stderr)
                    continue
                yield f"{group} {opt}", f"{spec}:{source.name} {opt}", ir


def corpus(pypi_cache: Path, cache: Path, wanted=lambda group: True):
    """(group, name, IR) of every file; ``wanted(group)`` (a group name without its -O flag) skips the rest."""
    if wanted("programs"):
        programs = sorted((REPO / "tests" / "data" / "programs").glob("*.c*"))
        for opt in ("-O0", "-O2", "-g"):
            for program in programs:
                yield f"programs {opt}", f"{program.name} {opt}", llvm10_ir(program, [opt])
    if wanted("legacy-ir"):
        with tarfile.open(SHARED / "legacy-ir" / "llvm_ir.tar.bz2") as tar:
            for member in sorted(tar.getmembers(), key=lambda m: m.name):
                if member.name.endswith(".ll"):
                    yield "legacy-ir", member.name, tar.extractfile(member).read().decode("utf-8")
    if wanted("pypi C files"):
        for path in sorted(pypi_cache.glob("*/*.ll")):
            text = path.read_text()
            if text:  # an empty file marks a C file that did not compile with clang-14
                yield "pypi C files", path.name, llvm10_compatible(text)
    if any(wanted(group) for group, *_ in HARDER_CODE):
        yield from harder_code(cache, wanted)


def _row(group: str, counts: Counter) -> str:
    files = max(counts["files"], 1)
    exact, after = counts["policy only"], counts["+ upgrade effects"]
    skipped = ", ".join(f"{counts[k]} {k}" for k in ("unreadable by LLVM 22", "original timed out") if counts[k])
    return (
        f"{group:<16} {counts['files']:>6} {exact:>8} ({100 * exact / files:5.1f}%) "
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
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "programl" / "bench-differential",
        help="where the sdists of the C++ and Cython corpora are kept",
    )
    parser.add_argument("--corpus", action="append", help="only groups whose name starts with this (repeatable)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per file for llvm2graph-10")
    args = parser.parse_args()
    binary = find_llvm2graph()
    if binary is None or find_clang14() is None:
        print("needs llvm2graph-10 and clang-14: make reference", file=sys.stderr)
        return 1
    groups: dict[str, Counter] = {}
    effects_by_group: dict[str, Counter] = {}
    differing: list[dict] = []

    def wanted(group: str) -> bool:
        return not args.corpus or any(prefix.startswith(group) or group.startswith(prefix) for prefix in args.corpus)

    for group, name, ir in corpus(args.pypi_cache, args.cache, wanted):
        if not wanted(group):
            continue
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
    print(f"{'corpus':<16} {'files':>6} {'policy only':>14} {'+ upgrade effects':>19}  not compared")
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
