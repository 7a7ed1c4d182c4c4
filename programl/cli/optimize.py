"""``programl optimize``: optimise a program for size with the learned policy of programl.gym (a GGNN that reads the
program's graph and picks an LLVM 22 pass pipeline in one shot; ``-Oz`` when the policy is not available), and print
the passes and the sizes before and after: instructions of the IR, and bytes of code in the object file.

The input is a ``.c``, ``.cc``, ``.cpp``, ``.cxx``, ``.cl`` source (compiled by clang-22 at ``-O0``) or ``.ll`` /
``.bc`` LLVM 22 IR. ``--search S`` lets the policy guide a search for up to S seconds instead of one shot. ``-o FILE``
writes the optimised module (textual IR when FILE ends in ``.ll``, else bitcode). Every LLVM tool runs in a process of
its own under ``--timeout`` and ``--max-memory``. An input that cannot be read, compiled or verified is one line and
exit code 1; a bad option, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from programl.cli.common import add_limit_options, describe_error, parse_timeout, usage_error
from programl.cli.helptext import SUMMARIES, description
from programl.exceptions import ProgramlError

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "optimize",
        help=SUMMARIES["optimize"],
        description=description(__doc__),
        epilog="examples:\n  programl optimize prog.c\n  programl optimize prog.ll --search 60 -o prog.opt.bc",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="FILE", help="the program: .c/.cc/.cpp/.cxx/.cl source, or .ll/.bc IR")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the optimised module (.ll: IR text, else bitcode)")  # fmt: skip
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--policy", metavar="DIR", help="a policy folder (default: the one shipped with programl)")
    choice.add_argument("--oz", action="store_true", help="use LLVM's -Oz pipeline instead of the policy")
    parser.add_argument("--search", type=parse_timeout, metavar="S",
                        help="let the policy guide a search for up to S seconds (default: one shot)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_limit_options(parser, per="LLVM tool run")
    parser.set_defaults(run=run, parser=parser)


def _policy(args: argparse.Namespace):
    """The policy to use and, when it is not available and none was asked for, why not (None, reason)."""
    try:
        from programl.gym.policy import PolicyError, load_policy
    except ModuleNotFoundError as error:  # torch or torch-geometric missing
        return None, f"the learned policy needs the ml extra (pip install 'programl[ml]'; {error.name} is missing)"
    try:
        return load_policy(args.policy), None
    except ModuleNotFoundError as error:
        return None, f"the learned policy needs the ml extra (pip install 'programl[ml]'; {error.name} is missing)"
    except PolicyError as error:
        if args.policy is not None:
            raise
        return None, f"no learned policy ({error})"


def _size(observer, name: str, state, benchmark):
    from programl.gym.errors import ObservationError

    try:
        return observer.observe(name, state, benchmark)
    except ObservationError:  # no object file for the module's target (OpenCL's spir64)
        return None


def run(args: argparse.Namespace) -> int:
    if args.oz and args.search:
        return usage_error(args.parser, "--search needs the policy (not --oz)")
    try:
        from programl.gym.agents import run_pipeline
        from programl.gym.env import LlvmEnv
        from programl.gym.state import State, disassemble
    except ModuleNotFoundError as error:
        if error.name != "gymnasium":
            raise
        print("programl optimize: needs the gym extra: pip install 'programl[gym]'", file=sys.stderr)
        return 1
    from programl.util.fs import atomic_write_bytes, atomic_write_text

    try:
        policy, note = (None, None) if args.oz else _policy(args)
    except ProgramlError as error:  # the policy asked for with --policy cannot be used
        print(describe_error(error, args.policy), file=sys.stderr)
        return 1
    if note:
        print(f"programl optimize: {note}; using -Oz", file=sys.stderr)
    try:
        env = LlvmEnv(args.input, observation_space=None, reward_space="IrInstructionCountOz",
                      timeout=args.timeout, max_memory=args.max_memory)  # fmt: skip
        env.reset()
        if policy is None:
            state, _, cost = run_pipeline(env, "default<Oz>")
            pipeline, how = "default<Oz>", "LLVM's -Oz"
        else:
            if args.search:
                from programl.gym.policy import guided_search

                result = guided_search(env, policy, max_seconds=args.search)
                how = f"the learned policy {policy.name}, guiding a search of up to {args.search:g} s"
            else:
                result = policy.optimize(env)
                how = f"the learned policy {policy.name} (one shot)"
            state, cost, pipeline = State(result.bitcode), result.cost, result.pipeline
        observer, benchmark = env._observer, env.benchmark
        initial = observer.initial_state(benchmark)
        sizes = {
            "instructions": {
                "before": observer.observe("IrInstructionCountO0", initial, benchmark),
                "after": cost,
                "Oz": observer.observe("IrInstructionCountOz", initial, benchmark),
            },
            "text_bytes": {
                "before": _size(observer, "ObjectTextSizeO0", initial, benchmark),
                "after": _size(observer, "ObjectTextSizeBytes", state, benchmark),
                "Oz": _size(observer, "ObjectTextSizeOz", initial, benchmark),
            },
        }
        text = disassemble(state.bitcode, args.output, env.toolchain) if (args.output or "").endswith(".ll") else None
    except ProgramlError as error:
        print(describe_error(error, args.input), file=sys.stderr)
        return 1
    except OSError as error:
        print(describe_error(error, args.input), file=sys.stderr)
        return 1
    if args.output:
        try:
            if text is not None:
                atomic_write_text(args.output, text)
            else:
                atomic_write_bytes(args.output, state.bitcode)
        except OSError as error:
            print(describe_error(error, args.output), file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps({"input": args.input, "optimiser": how, "pipeline": pipeline, "sizes": sizes,
                          "output": args.output}))  # fmt: skip
        return 0
    print(f"{args.input}: optimised by {how}")
    print(f"passes: {pipeline}")
    print(f"{'':<14}{'before':>10}{'after':>10}{'-Oz':>10}")
    for label, key in (("instructions", "instructions"), (".text bytes", "text_bytes")):
        row = sizes[key]
        cells = "".join(f"{'-' if row[c] is None else f'{row[c]:,}':>10}" for c in ("before", "after", "Oz"))
        print(f"{label:<14}{cells}")
    if args.output:
        print(f"wrote {args.output}")
    return 0
