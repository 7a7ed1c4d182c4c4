"""The action space: LLVM 22 passes by their new-pass-manager names, and where CompilerGym's 124 ``llvm-v0`` flags
went (docs/gym.md#actions).

CompilerGym's ``llvm-v0`` offered 124 legacy-pass-manager flags of LLVM 10 (``-mem2reg``, ``-instcombine`` ...;
``compiler_gym/envs/llvm/service/passes/10.0.0/flags.txt``). LLVM removed the legacy optimisation pipeline in LLVM
17; :data:`FLAGS` says for each of those flags, in CompilerGym's order, what LLVM 22 has instead:

* ``exists``: the same pass under the same name in the new pass manager;
* ``renamed``: the pass under a new name or as a parameter of another (``-early-cse-memssa`` is
  ``early-cse<memssa>``, ``-loweratomic`` is ``lower-atomic`` ...);
* ``gone``: removed from LLVM; the note says when and which pass now does its work;
* ``excluded``: the pass exists but is not an action (the note says why).

Each action is one pipeline element for ``opt-22 -passes=``, nested explicitly in the pass manager it belongs to
(``function(instcombine)``, ``function(loop-mssa(licm))``, ``cgscc(inline)``, ``globalopt``), so that the elements of
an episode joined by commas are the pipeline that reproduces it (:meth:`~programl.gym.env.LlvmEnv.commandline`).
Action ``i`` is :data:`ACTIONS` ``[i]``: the ``exists`` and ``renamed`` flags in CompilerGym's order.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ACTIONS", "ACTION_NAMES", "FLAGS", "STATUSES", "Action", "Flag", "action_index", "pipeline_of"]

#: The four fates of a CompilerGym flag (module docstring).
STATUSES = ("exists", "renamed", "gone", "excluded")


@dataclass(frozen=True)
class Flag:
    """One of CompilerGym's ``llvm-v0`` flags and what LLVM 22 has for it.

    Attributes:
        flag: CompilerGym's flag (``-mem2reg``).
        description: CompilerGym's description of it.
        status: One of :data:`STATUSES`.
        pipeline: The ``opt-22 -passes=`` element of the LLVM 22 pass (None when ``gone``).
        note: What changed, when not ``exists``, and why a pipeline element has a parameter.
        pass_name: The action's name when it is not the pipeline element's innermost text.
    """

    flag: str
    description: str
    status: str
    pipeline: str | None
    note: str = ""
    pass_name: str | None = None

    @property
    def name(self) -> str:
        """The LLVM 22 pass name inside the pipeline element (``licm`` for ``function(loop-mssa(licm))``)."""
        if self.pass_name is not None:
            return self.pass_name
        if self.pipeline is None:
            return self.flag.lstrip("-")
        inner = self.pipeline
        for adaptor in ("function(", "loop-mssa(", "loop(", "cgscc("):
            if inner.startswith(adaptor):
                inner = inner[len(adaptor) : -1]
        return inner


def _f(name: str) -> str:
    return f"function({name})"


def _l(name: str) -> str:
    return f"function(loop({name}))"


def _m(name: str) -> str:  # loop passes that need (or, in LLVM's own pipelines, run with) MemorySSA
    return f"function(loop-mssa({name}))"


def _c(name: str) -> str:
    return f"cgscc({name})"


_E, _R, _G, _X = STATUSES

# fmt: off
#: CompilerGym's 124 ``llvm-v0`` flags in its order, with their LLVM 22 counterparts (module docstring).
FLAGS: tuple[Flag, ...] = (
    Flag("-add-discriminators", "Add DWARF path discriminators", _E, _f("add-discriminators")),
    Flag("-adce", "Aggressive Dead Code Elimination", _E, _f("adce")),
    Flag("-aggressive-instcombine", "Combine pattern based expressions", _E, _f("aggressive-instcombine")),
    Flag("-alignment-from-assumptions", "Alignment from assumptions", _E, _f("alignment-from-assumptions")),
    Flag("-always-inline", "Inliner for always_inline functions", _E, "always-inline"),
    Flag("-argpromotion", "Promote 'by reference' arguments to scalars", _E, _c("argpromotion")),
    Flag("-attributor", "Deduce and propagate attributes", _E, "attributor"),
    Flag("-barrier", "A No-Op Barrier Pass", _G, None, "a no-op of the legacy pass manager, which LLVM 17 removed"),
    Flag("-bdce", "Bit-Tracking Dead Code Elimination", _E, _f("bdce")),
    Flag("-break-crit-edges", "Break critical edges in CFG", _E, _f("break-crit-edges")),
    Flag("-simplifycfg", "Simplify the CFG", _E, _f("simplifycfg")),
    Flag("-callsite-splitting", "Call-site splitting", _E, _f("callsite-splitting")),
    Flag("-called-value-propagation", "Called Value Propagation", _E, "called-value-propagation"),
    Flag("-canonicalize-aliases", "Canonicalize aliases", _E, "canonicalize-aliases"),
    Flag("-consthoist", "Constant Hoisting", _E, _f("consthoist")),
    Flag("-constmerge", "Merge Duplicate Global Constants", _E, "constmerge"),
    Flag("-constprop", "Simple constant propagation", _G, None, "removed in LLVM 12; instsimplify folds constants"),
    Flag("-coro-cleanup", "Lower all coroutine related intrinsics", _E, "coro-cleanup"),
    Flag("-coro-early", "Lower early coroutine intrinsics", _E, "coro-early"),
    Flag("-coro-elide", "Coroutine frame allocation elision and indirect calls replacement", _E, _f("coro-elide")),
    Flag("-coro-split", "Split coroutine into a set of functions driving its state machine", _E, _c("coro-split")),
    Flag("-correlated-propagation", "Value Propagation", _E, _f("correlated-propagation")),
    Flag("-cross-dso-cfi", "Cross-DSO CFI", _E, "cross-dso-cfi"),
    Flag("-deadargelim", "Dead Argument Elimination", _E, "deadargelim"),
    Flag("-dce", "Dead Code Elimination", _E, _f("dce")),
    Flag("-die", "Dead Instruction Elimination", _G, None, "removed in LLVM 13; dce does its work"),
    Flag("-dse", "Dead Store Elimination", _E, _f("dse")),
    Flag("-reg2mem", "Demote all values to stack slots", _E, _f("reg2mem")),
    Flag("-div-rem-pairs", "Hoist/decompose integer division and remainder", _E, _f("div-rem-pairs")),
    Flag("-early-cse-memssa", "Early CSE w/ MemorySSA", _R, _f("early-cse<memssa>"), "a parameter of early-cse"),
    Flag("-early-cse", "Early CSE", _E, _f("early-cse")),
    Flag("-elim-avail-extern", "Eliminate Available Externally Globals", _E, "elim-avail-extern"),
    Flag("-ee-instrument", "Instrument function entry/exit with calls to e.g. mcount() (pre inlining)", _E,
         _f("ee-instrument")),
    Flag("-flattencfg", "Flatten the CFG", _R, _f("flatten-cfg"), "renamed flatten-cfg"),
    Flag("-float2int", "Float to int", _E, _f("float2int")),
    Flag("-forceattrs", "Force set function attributes", _E, "forceattrs"),
    Flag("-inline", "Function Integration/Inlining", _E, _c("inline")),
    Flag("-insert-gcov-profiling", "Insert instrumentation for GCOV profiling", _X, "insert-gcov-profiling",
         "writes .gcno/.gcda notes to paths the module's debug info names (a received module could name any path)"),
    Flag("-gvn-hoist", "Early GVN Hoisting of Expressions", _E, _f("gvn-hoist")),
    Flag("-gvn", "Global Value Numbering", _E, _f("gvn")),
    Flag("-globaldce", "Dead Global Elimination", _E, "globaldce"),
    Flag("-globalopt", "Global Variable Optimizer", _E, "globalopt"),
    Flag("-globalsplit", "Global splitter", _E, "globalsplit"),
    Flag("-guard-widening", "Widen guards", _E, _f("guard-widening")),
    Flag("-hotcoldsplit", "Hot Cold Splitting", _E, "hotcoldsplit"),
    Flag("-ipconstprop", "Interprocedural constant propagation", _G, None, "removed in LLVM 12; ipsccp does its work"),
    Flag("-ipsccp", "Interprocedural Sparse Conditional Constant Propagation", _E, "ipsccp"),
    Flag("-indvars", "Induction Variable Simplification", _E, _l("indvars")),
    Flag("-irce", "Inductive range check elimination", _E, _f("irce")),
    Flag("-infer-address-spaces", "Infer address spaces", _E, _f("infer-address-spaces")),
    Flag("-inferattrs", "Infer set function attributes", _E, "inferattrs"),
    Flag("-inject-tli-mappings", "Inject TLI Mappings", _E, _f("inject-tli-mappings")),
    Flag("-instsimplify", "Remove redundant instructions", _E, _f("instsimplify")),
    Flag("-instcombine", "Combine redundant instructions", _E, _f("instcombine<no-verify-fixpoint>"),
         "opt's instcombine aborts when it needs a second round (verify-fixpoint, a testing aid); LLVM's pipelines and"
         " this action turn that off", "instcombine"),
    Flag("-instnamer", "Assign names to anonymous instructions", _E, _f("instnamer")),
    Flag("-jump-threading", "Jump Threading", _E, _f("jump-threading")),
    Flag("-lcssa", "Loop-Closed SSA Form Pass", _E, _f("lcssa")),
    Flag("-licm", "Loop Invariant Code Motion", _E, _m("licm"), "a loop pass that needs MemorySSA (loop-mssa)"),
    Flag("-libcalls-shrinkwrap", "Conditionally eliminate dead library calls", _E, _f("libcalls-shrinkwrap")),
    Flag("-load-store-vectorizer", "Vectorize load and Store instructions", _E, _f("load-store-vectorizer")),
    Flag("-loop-data-prefetch", "Loop Data Prefetch", _E, _f("loop-data-prefetch")),
    Flag("-loop-deletion", "Delete dead loops", _E, _l("loop-deletion")),
    Flag("-loop-distribute", "Loop Distribution", _E, _f("loop-distribute")),
    Flag("-loop-fusion", "Loop Fusion", _E, _f("loop-fusion")),
    Flag("-loop-guard-widening", "Widen guards (within a single loop, as a loop pass)", _R, _l("guard-widening"),
         "guard-widening run as a loop pass"),
    Flag("-loop-idiom", "Recognize loop idioms", _E, _l("loop-idiom")),
    Flag("-loop-instsimplify", "Simplify instructions in loops", _E, _m("loop-instsimplify")),
    Flag("-loop-interchange", "Interchanges loops for cache reuse", _E, _l("loop-interchange"), "a loop-nest pass"),
    Flag("-loop-load-elim", "Loop Load Elimination", _E, _f("loop-load-elim")),
    Flag("-loop-predication", "Loop predication", _E, _l("loop-predication")),
    Flag("-loop-reroll", "Reroll loops", _G, None, "removed in LLVM 19 (unmaintained)"),
    Flag("-loop-rotate", "Rotate Loops", _E, _m("loop-rotate")),
    Flag("-loop-simplifycfg", "Simplify loop CFG", _E, _m("loop-simplifycfg")),
    Flag("-loop-simplify", "Canonicalize natural loops", _E, _f("loop-simplify")),
    Flag("-loop-sink", "Loop Sink", _E, _f("loop-sink")),
    Flag("-loop-reduce", "Loop Strength Reduction", _E, _l("loop-reduce")),
    Flag("-loop-unroll-and-jam", "Unroll and Jam loops", _E, _l("loop-unroll-and-jam"), "a loop-nest pass"),
    Flag("-loop-unroll", "Unroll loops", _E, _f("loop-unroll")),
    Flag("-loop-unswitch", "Unswitch loops", _G, None,
         "removed in LLVM 15; simple-loop-unswitch (an action of its own) replaces it"),
    Flag("-loop-vectorize", "Loop Vectorization", _E, _f("loop-vectorize")),
    Flag("-loop-versioning-licm", "Loop Versioning For LICM", _E, _l("loop-versioning-licm")),
    Flag("-loop-versioning", "Loop Versioning", _E, _f("loop-versioning")),
    Flag("-loweratomic", "Lower atomic intrinsics to non-atomic form", _R, _f("lower-atomic"), "renamed lower-atomic"),
    Flag("-lower-constant-intrinsics", "Lower constant intrinsics", _E, _f("lower-constant-intrinsics")),
    Flag("-lower-expect", "Lower 'expect' Intrinsics", _E, _f("lower-expect")),
    Flag("-lower-guard-intrinsic", "Lower the guard intrinsic to normal control flow", _E, _f("lower-guard-intrinsic")),
    Flag("-lowerinvoke", "Lower invoke and unwind, for unwindless code generators", _R, _f("lower-invoke"),
         "renamed lower-invoke"),
    Flag("-lower-matrix-intrinsics", "Lower the matrix intrinsics", _E, _f("lower-matrix-intrinsics")),
    Flag("-lowerswitch", "Lower SwitchInst's to branches", _R, _f("lower-switch"), "renamed lower-switch"),
    Flag("-lower-widenable-condition", "Lower the widenable condition to default true value", _E,
         _f("lower-widenable-condition")),
    Flag("-memcpyopt", "MemCpy Optimization", _E, _f("memcpyopt")),
    Flag("-mergefunc", "Merge Functions", _E, "mergefunc"),
    Flag("-mergeicmps", "Merge contiguous icmps into a memcmp", _E, _f("mergeicmps")),
    Flag("-mldst-motion", "MergedLoadStoreMotion", _E, _f("mldst-motion")),
    Flag("-sancov", "Pass for instrumenting coverage on functions", _R, "sancov-module", "renamed sancov-module"),
    Flag("-name-anon-globals", "Provide a name to nameless globals", _E, "name-anon-globals"),
    Flag("-nary-reassociate", "Nary reassociation", _E, _f("nary-reassociate")),
    Flag("-newgvn", "Global Value Numbering", _E, _f("newgvn")),
    Flag("-pgo-memop-opt", "Optimize memory intrinsic using its size value profile", _E, _f("pgo-memop-opt")),
    Flag("-partial-inliner", "Partial Inliner", _E, "partial-inliner"),
    Flag("-partially-inline-libcalls", "Partially inline calls to library functions", _E,
         _f("partially-inline-libcalls")),
    Flag("-post-inline-ee-instrument", "Instrument function entry/exit with calls to e.g. mcount() (post inlining)",
         _R, _f("ee-instrument<post-inline>"), "a parameter of ee-instrument"),
    Flag("-functionattrs", "Deduce function attributes", _R, _c("function-attrs"), "renamed function-attrs"),
    Flag("-mem2reg", "Promote Memory to Register", _E, _f("mem2reg")),
    Flag("-prune-eh", "Remove unused exception handling info", _G, None,
         "removed in LLVM 16; function-attrs and simplifycfg do its work"),
    Flag("-reassociate", "Reassociate expressions", _E, _f("reassociate")),
    Flag("-redundant-dbg-inst-elim", "Redundant Dbg Instruction Elimination", _E, _f("redundant-dbg-inst-elim")),
    Flag("-rpo-functionattrs", "Deduce function attributes in RPO", _R, "rpo-function-attrs",
         "renamed rpo-function-attrs"),
    Flag("-rewrite-statepoints-for-gc", "Make relocations explicit at statepoints", _E, "rewrite-statepoints-for-gc"),
    Flag("-sccp", "Sparse Conditional Constant Propagation", _E, _f("sccp")),
    Flag("-slp-vectorizer", "SLP Vectorizer", _E, _f("slp-vectorizer")),
    Flag("-sroa", "Scalar Replacement Of Aggregates", _E, _f("sroa")),
    Flag("-scalarizer", "Scalarize vector operations", _E, _f("scalarizer")),
    Flag("-separate-const-offset-from-gep", "Split GEPs to a variadic base and a constant offset for better CSE", _E,
         _f("separate-const-offset-from-gep")),
    Flag("-simple-loop-unswitch", "Simple unswitch loops", _E, _m("simple-loop-unswitch")),
    Flag("-sink", "Code sinking", _E, _f("sink")),
    Flag("-speculative-execution", "Speculatively execute instructions", _E, _f("speculative-execution")),
    Flag("-slsr", "Straight line strength reduction", _E, _f("slsr")),
    Flag("-strip-dead-prototypes", "Strip Unused Function Prototypes", _E, "strip-dead-prototypes"),
    Flag("-strip-debug-declare", "Strip all llvm.dbg.declare intrinsics", _E, "strip-debug-declare"),
    Flag("-strip-nondebug", "Strip all symbols, except dbg symbols, from a module", _E, "strip-nondebug"),
    Flag("-strip", "Strip all symbols from a module", _E, "strip"),
    Flag("-tailcallelim", "Tail Call Elimination", _E, _f("tailcallelim")),
    Flag("-mergereturn", "Unify function exit nodes", _E, _f("mergereturn")),
)
# fmt: on


@dataclass(frozen=True)
class Action:
    """One action: an LLVM 22 pass.

    Attributes:
        name: The pass's LLVM 22 name (``licm``, ``early-cse<memssa>``).
        pipeline: Its ``opt-22 -passes=`` element (``function(loop-mssa(licm))``).
        flag: CompilerGym's flag it replaces (``-licm``).
        description: What the pass does (CompilerGym's words).
    """

    name: str
    pipeline: str
    flag: str
    description: str


#: The action space, in CompilerGym's order: every flag whose status is ``exists`` or ``renamed``.
ACTIONS: tuple[Action, ...] = tuple(
    Action(f.name, f.pipeline, f.flag, f.description) for f in FLAGS if f.status in ("exists", "renamed")
)
#: The LLVM 22 names of :data:`ACTIONS`, in order.
ACTION_NAMES: tuple[str, ...] = tuple(a.name for a in ACTIONS)

_BY_KEY = {**{a.flag: i for i, a in enumerate(ACTIONS)}, **{a.name: i for i, a in enumerate(ACTIONS)}}


def action_index(key: str) -> int:
    """The index of an action named by its LLVM 22 name (``licm``) or CompilerGym flag (``-licm``).

    Raises:
        KeyError: No action has that name; for a ``gone`` or ``excluded`` flag the message says why.
    """
    if key in _BY_KEY:
        return _BY_KEY[key]
    flag = next((f for f in FLAGS if key in (f.flag, f.flag.lstrip("-"))), None)
    if flag is not None:
        raise KeyError(f"{flag.flag} is not an action: {flag.status} ({flag.note})")
    raise KeyError(f"no action named {key!r}")


def pipeline_of(actions: list[int] | tuple[int, ...]) -> str:
    """The ``opt-22 -passes=`` pipeline that applies ``actions`` in order (empty for none)."""
    return ",".join(ACTIONS[a].pipeline for a in actions)
