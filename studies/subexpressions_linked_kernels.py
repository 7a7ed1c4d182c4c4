#!/usr/bin/env python3
"""Training graphs with larger common-subexpression groups: linked modules of training kernels (issue 11 item 4).

The subexpressions model misses the groups of SHOC S3D's ``ratx4_kernel`` (702 calls ``get_global_id(0)``, one group:
same opcode, same operand node, the module's one ``i32 0`` constant, SPEC §4.6) and ``qssab_kernel`` (384): it finds
every member of the groups of up to 361 calls that the training split holds (``qssa2_kernel``) and almost none from 384
on (``studies/history/results-history.md`` §5). No training graph has a larger group, because each kernel is its own
module. This script links random sets of the *training split's* S3D kernels at -O0 into one module each
(``llvm-link-22``; LLVM uniques constants per module, so the calls of all linked kernels share one constant node and
form one group of their summed size), builds and labels them (``programl dataset build --analyses subexpressions``), and
assembles a derived data set root: the base build's graphs and labels (symlinks), its training graphs that have
subexpressions labels plus every linked module in ``train/``, its ``val/`` and ``test/`` unchanged, its vocabulary, and
its converted val/test splits (symlinks, so only ``train`` is converted again). Validation and test examples are the
base build's, untouched.

Usage::

    python studies/subexpressions_linked_kernels.py --base data/ddf22-full --out data/ddf22-subx \\
        --modules 120 --seed 204 -j 2
    programl train dataflow --analysis subexpressions --dataset data/ddf22-subx ...
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

from programl.data.deepdataflow.derived import DerivedRootError, link, link_all, link_converted_splits
from programl.data.deepdataflow.labels import labelled_names
from programl.data.deepdataflow.layout import Layout


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, required=True, help="the DeepDataFlow build (programl dataset build)")
    parser.add_argument("--out", type=Path, required=True, help="where the linked modules and the derived root go")
    parser.add_argument("--pattern", default="opencl_shoc-1.1.5-S3D-", help="name prefix of the kernels to link")
    parser.add_argument("--suffix", default=".O0.cl", help="name suffix of the kernels to link (default: -O0)")
    parser.add_argument("--modules", type=int, default=120, help="linked modules to make (default: 120)")
    parser.add_argument("--min-kernels", type=int, default=2, help="fewest kernels per module (default: 2)")
    parser.add_argument("--max-kernels", type=int, default=8, help="most kernels per module (default: 8)")
    parser.add_argument("--seed", type=int, default=204, help="seed of the kernel sets and the roots (default: 204)")
    parser.add_argument("--prefix", default="linked", help="module names: PREFIX-<k> (default: linked)")
    parser.add_argument("--max-roots", type=int, default=10, help="label records per module (default: 10)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="build workers (default: 1)")
    parser.add_argument("--llvm-link", default="llvm-link-22", help="the linker (default: llvm-link-22)")
    args = parser.parse_args(argv)
    if not 2 <= args.min_kernels <= args.max_kernels:
        parser.error("need 2 <= --min-kernels <= --max-kernels")
    return args


def training_kernels(base: Path, pattern: str, suffix: str) -> list[str]:
    """Names (``<name>.ProgramGraph.pb`` without the suffix) of the training split's kernels to link."""
    names = sorted(p.name[: -len(".ProgramGraph.pb")] for p in (base / "train").iterdir())
    return [n for n in names if n.startswith(pattern) and n.endswith(suffix) and (base / "ir" / f"{n}.ll").is_file()]


def exported_definitions(path: Path) -> set[str]:
    """Names of the functions and globals ``path`` defines with external linkage (the ones a link can clash on)."""
    text = path.read_text(encoding="utf-8")
    functions = re.findall(r"^define (?!internal |private )[^@]*@([\w.$]+)\(", text, re.M)
    variables = re.findall(r"^@([\w.$]+) = (?!internal |private )", text, re.M)
    return set(functions) | set(variables)


def link_modules(args: argparse.Namespace, kernels: list[str]) -> Path:
    """Write ``out/linked/linked-<k>.ll`` for each seeded kernel set; ``out/linked.json`` lists the sets."""
    linked = args.out / "linked"
    linked.mkdir(parents=True, exist_ok=True)
    defined = {k: exported_definitions(args.base / "ir" / f"{k}.ll") for k in kernels}
    rng = random.Random(args.seed)
    sets = []
    for k in range(args.modules):
        count = rng.randint(args.min_kernels, min(args.max_kernels, len(kernels)))
        while True:  # two kernels of one source (rdwdot2 and rdwdot3 define rdwdot2_kernel) cannot be linked
            members = sorted(rng.sample(kernels, count))
            names = [n for m in members for n in defined[m]]
            if len(names) == len(set(names)):
                break
        path = linked / f"{args.prefix}-{k:03d}.ll"
        if not path.is_file():
            tmp = path.with_suffix(".tmp")
            inputs = [str(args.base / "ir" / f"{m}.ll") for m in members]
            subprocess.run([args.llvm_link, "-S", *inputs, "-o", str(tmp)], check=True)
            os.replace(tmp, path)
        sets.append({"module": path.stem, "kernels": members})
    (args.out / "linked.json").write_text(json.dumps(sets, indent=1) + "\n")
    return linked


def assemble(args: argparse.Namespace, build: Path) -> Path:
    """The derived root ``out/root`` (module docstring)."""
    base, root = args.base.resolve(), (args.out / "root")
    root.mkdir(parents=True, exist_ok=True)
    # The labels in either form (labels/subexpressions: protobuf; labels/all: compact, every analysis of a graph).
    # Two module sets with one --prefix would give one name two files: an error, not silently the first one.
    for sub in ("graphs", "labels/subexpressions", "labels/all"):
        for source in (base / sub, build / sub):
            if source.is_dir():
                link_all(root / sub, source, hint="use another --prefix")
    for split in ("val", "test"):
        link(root / split, base / split)
    (root / "vocab").mkdir(exist_ok=True)
    shutil.copyfile(base / "vocab" / "programl.csv", root / "vocab" / "programl.csv")
    labelled = labelled_names(Layout(base), "subexpressions")
    train = root / "train"
    train.mkdir(exist_ok=True)
    names = [p.name for p in (base / "train").iterdir() if p.name[: -len(".ProgramGraph.pb")] in labelled]
    names += [p.name for p in (build / "graphs").iterdir()]
    for name in names:
        if not (train / name).exists():
            os.symlink(f"../graphs/{name}", train / name)
    # The base build's converted val/test splits: only train is converted again.
    link_converted_splits(base, root)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except subprocess.CalledProcessError as error:  # the tool has printed its own message
        print(f"error: {error.cmd[0]} {error.cmd[1]}... exited with status {error.returncode}", file=sys.stderr)
    except DerivedRootError as error:  # --out holds another module set under the same names
        print(f"error: {error}", file=sys.stderr)
    except OSError as error:  # a missing base directory or linker, a full disk
        print(f"error: {error.filename or ''}: {error.strerror or error}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    """Link, build and assemble (module docstring); 1 when the base has too few kernels."""
    kernels = training_kernels(args.base, args.pattern, args.suffix)
    if len(kernels) < args.min_kernels:
        print(
            f"error: {args.base / 'train'}: {len(kernels)} kernels match {args.pattern}*{args.suffix}", file=sys.stderr
        )
        return 1
    print(f"{len(kernels)} training kernels: {', '.join(k[len(args.pattern) :] for k in kernels)}", flush=True)
    linked = link_modules(args, kernels)
    build = args.out / "build"
    command = [
        sys.executable,
        "-m",
        "programl",
        "dataset",
        "build",
        str(linked),
        str(build),
        "--analyses",
        "subexpressions",
        "--seed",
        str(args.seed),
        "--max-roots",
        str(args.max_roots),
        "-j",
        str(args.jobs),
    ]
    subprocess.run(command, check=True)
    root = assemble(args, build)
    train = sum(1 for _ in (root / "train").iterdir())
    print(f"{root}: {train} training graphs ({args.modules} linked modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
