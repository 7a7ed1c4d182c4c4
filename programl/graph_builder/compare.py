"""Compare two program graphs up to the reference's non-determinism and the Policy differences
(docs/spec/graph.md#construction-order, docs/spec/policy.md).

Used by the differential tests against the original ``llvm2graph-10`` and by anyone who wants to check that two
builders (or two LLVM generations) agree. The reference orders argument nodes, constant nodes and CALL edges by
hash maps, and LLVM 22 renames some intrinsics, so graphs are compared as multisets of canonical nodes and edges:

* a function is identified by its name (``.p0i8``-style typed-pointer manglings of intrinsics -> ``.p0``);
* an instruction or instruction-result variable by (function, ordinal among that function's such nodes);
* an argument variable (a variable without a producer) by (function, its uses);
* a constant by its uses; the external node and declaration placeholders by themselves;
* node texts are normalised so that typed pointers read ``ptr`` (``i32*``, ``struct*``, ``[4 x i8*]``...).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field

from programl.proto import Edge, Node, ProgramGraph

__all__ = [
    "UPGRADE_EFFECTS",
    "GraphDifference",
    "apply_llvm22_upgrade",
    "canonical_form",
    "compare_graphs",
    "normalize_function_name",
    "normalize_type_text",
]

_TYPED_POINTER = re.compile(r"(?:%\"[^\"]*\"|%?[\w.$\"-]+|\{[^{}]*\}|\[[^\[\]]*\]|<[^<>]*>)\s*(?:\([^()]*\))?\*+")
_INTRINSIC_POINTER = re.compile(
    r"\.p(\d+)(?:i\d+|f\d+|s_[\w.$-]+?s(?=\.|$)|f_[\w]+f|v\d+\w+|a\d+\w+|[A-Za-z_]\w*)?(?=\.|$)"
)
# a vector of typed pointers in a mangled name: `.v4p0i32` -> `.v4p0`, `.nxv2p0f64` -> `.nxv2p0`
_INTRINSIC_POINTER_VECTOR = re.compile(r"\.((?:nx)?v\d+)p(\d+)(?:s_[\w.$-]+?s(?=\.|$)|[A-Za-z_]\w*)(?=\.|$)")


def normalize_type_text(text: str) -> str:
    """``i32*`` -> ``ptr``, ``[4 x i8*]`` -> ``[4 x ptr]``, ``i32 (i32)*`` -> ``ptr``, ``struct*`` -> ``ptr``."""
    if text.rstrip().endswith("*"):
        return "ptr"
    previous = None
    while previous != text:
        previous = text
        text = _TYPED_POINTER.sub("ptr", text)
    return text


# intrinsics that became overloaded on the pointer type after LLVM 10, so LLVM 22 adds a `.p0` suffix
_RENAMED_INTRINSICS = {
    "llvm.eh.typeid.for": "llvm.eh.typeid.for.p0",
    "llvm.stacksave": "llvm.stacksave.p0",
    "llvm.stackrestore": "llvm.stackrestore.p0",
    "llvm.va_start": "llvm.va_start.p0",
    "llvm.va_end": "llvm.va_end.p0",
    "llvm.va_copy": "llvm.va_copy.p0",  # overloaded on one pointer type: both operands have it
    "llvm.thread.pointer": "llvm.thread.pointer.p0",
    "llvm.var.annotation": "llvm.var.annotation.p0.p0",  # overloaded on the annotated and the string pointer
    "llvm.flt.rounds": "llvm.get.rounding",
}
# (LLVM 10 name after the `.p0` normalisation, LLVM 22 name) for intrinsics whose mangling or name changed otherwise
_RENAMED_INTRINSIC_PATTERNS = [
    (re.compile(r"llvm\.x86\.avx512\.cmp\.(p[ds]\.\d+)"), r"llvm.x86.avx512.mask.cmp.\1"),  # with a mask operand
    (re.compile(r"(llvm\.annotation\.i\d+)"), r"\1.p0"),  # overloaded on the string pointer too
    (re.compile(r"(llvm\.ptr\.annotation\.p\d+)"), r"\1.p0"),
    (re.compile(r"llvm\.ptrmask\.p(\d+)\.p\1\.(i\d+)"), r"llvm.ptrmask.p\1.\2"),  # result and operand are one type
    (re.compile(r"llvm\.experimental\.vector\.reduce\.v2\.(fadd|fmul)\.\w+?\.(\w+)"), r"llvm.vector.reduce.\1.\2"),
    (re.compile(r"llvm\.experimental\.vector\.reduce\.(\w+\.\w+)"), r"llvm.vector.reduce.\1"),
]


def normalize_function_name(name: str) -> str:
    """``llvm.memset.p0i8.i64`` -> ``llvm.memset.p0.i64`` (LLVM 22's opaque-pointer intrinsic names)."""
    if not name.startswith("llvm."):
        return name
    name = _INTRINSIC_POINTER.sub(lambda m: f".p{m.group(1)}", name)
    name = _INTRINSIC_POINTER_VECTOR.sub(lambda m: f".{m.group(1)}p{m.group(2)}", name)
    if re.fullmatch(r"llvm\.powi\.(f\d+|x86_fp80|fp128|ppc_fp128)", name):  # overloaded on the exponent (LLVM 13)
        return name + ".i32"
    for pattern, replacement in _RENAMED_INTRINSIC_PATTERNS:
        match = pattern.fullmatch(name)
        if match:
            return match.expand(replacement)
    return _RENAMED_INTRINSICS.get(name, name)


@dataclass
class GraphDifference:
    """What differs between two canonical forms (empty lists when the graphs agree)."""

    missing_nodes: list = field(default_factory=list)  # in the first graph only
    extra_nodes: list = field(default_factory=list)  # in the second graph only
    missing_edges: list = field(default_factory=list)
    extra_edges: list = field(default_factory=list)
    functions: tuple = ((), ())

    def __bool__(self) -> bool:
        return bool(self.missing_nodes or self.extra_nodes or self.missing_edges or self.extra_edges)

    def summary(self, limit: int = 5) -> str:
        parts = []
        for name in ("missing_nodes", "extra_nodes", "missing_edges", "extra_edges"):
            items = getattr(self, name)
            if items:
                parts.append(f"{name} ({len(items)}): {items[:limit]}")
        return "; ".join(parts) or "equal"


def canonical_form(graph: ProgramGraph, normalize: bool = True) -> tuple[Counter, Counter, list[str]]:
    """(node multiset, edge multiset, function names) of a graph; see the module docstring."""
    fname = [normalize_function_name(f.name) if normalize else f.name for f in graph.function]
    n = len(graph.node)
    has_producer = [False] * n
    uses: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for edge in graph.edge:
        if edge.flow == Edge.DATA:
            has_producer[edge.target] = True
            uses[edge.source].append((edge.target, edge.position))
    key: list = [None] * n
    ordinal: Counter = Counter()
    deferred = []
    for i, node in enumerate(graph.node):
        if i == 0:
            key[i] = ("external",)
        elif node.type == Node.INSTRUCTION and node.text == "; undefined function":
            key[i] = (fname[node.function], "declaration")
        elif node.type == Node.INSTRUCTION or (node.type == Node.VARIABLE and has_producer[i]):
            name = fname[node.function] if node.function < len(fname) else "?"
            key[i] = (name, ordinal[name])
            ordinal[name] += 1
        else:
            deferred.append(i)
    for i in deferred:  # arguments and constants: identified by their uses
        # a digest, not the tuple of uses itself: a constant can have 100k uses, and every edge hashes its key
        signature = hashlib.sha1(repr(sorted((key[t], p) for t, p in uses[i])).encode()).hexdigest()[:16]
        node = graph.node[i]
        if node.type == Node.VARIABLE:
            key[i] = (fname[node.function], "argument", signature)
        else:
            key[i] = ("constant", signature)
    text = normalize_type_text if normalize else (lambda t: t)
    nodes = Counter()
    for i, node in enumerate(graph.node):
        node_text = node.text if node.type == Node.INSTRUCTION else text(node.text)
        function = fname[node.function] if node.type != Node.CONSTANT and i else None
        nodes[(key[i], node.type, node_text, function, node.block)] += 1
    edges = Counter((e.flow, e.position, key[e.source], key[e.target]) for e in graph.edge)
    return nodes, edges, fname


def compare_graphs(expected: ProgramGraph, actual: ProgramGraph, normalize: bool = True) -> GraphDifference:
    """Compare ``actual`` against ``expected`` as multisets of canonical nodes and edges."""
    nodes_a, edges_a, functions_a = canonical_form(expected, normalize)
    nodes_b, edges_b, functions_b = canonical_form(actual, normalize)
    return GraphDifference(
        missing_nodes=sorted((nodes_a - nodes_b).elements(), key=repr),
        extra_nodes=sorted((nodes_b - nodes_a).elements(), key=repr),
        missing_edges=sorted((edges_a - edges_b).elements(), key=repr),
        extra_edges=sorted((edges_b - edges_a).elements(), key=repr),
        functions=(tuple(functions_a), tuple(functions_b)),
    )


# ----------------------------------------------------------------------------------------------------------------
# LLVM 10 -> LLVM 22: what reading the same IR with a newer LLVM changes in the graph.

#: The upgrade effects that :func:`apply_llvm22_upgrade` knows, with what each one means.
UPGRADE_EFFECTS = {
    "opaque-pointer-texts": "every pointer type prints as `ptr` (docs/spec/policy.md#llvm-22-texts): `i32*` -> `ptr`, "
    "`[4 x i8*]` -> `[4 x ptr]`",
    "intrinsic-rename": "intrinsics overloaded on pointer types are named `.p0` (`llvm.memset.p0i8.i64` -> "
    "`llvm.memset.p0.i64`, `llvm.masked.gather.v4i32.v4p0i32` -> `llvm.masked.gather.v4i32.v4p0`; "
    "`llvm.stacksave` -> `llvm.stacksave.p0`, `llvm.va_copy` -> `llvm.va_copy.p0`, `llvm.var.annotation` -> "
    "`llvm.var.annotation.p0.p0`), `llvm.powi.f64` -> `llvm.powi.f64.i32`, `llvm.flt.rounds` -> "
    "`llvm.get.rounding`, `llvm.experimental.vector.reduce.*` -> `llvm.vector.reduce.*`",
    "constant-gep-folding": "a constant `getelementptr` with all-zero indices is the base global itself "
    "(one CONSTANT node instead of two)",
    "pointer-bitcast-folding": "a constant `bitcast` between pointer types is its operand itself, a global or "
    "another constant expression such as a `getelementptr` into a struct (one CONSTANT node instead of two)",
    "function-cast-removal": "a constant cast of a function (`bitcast (void ()* @f to i8*)`) is the function "
    "itself, and functions are never nodes (the CONSTANT node and its DATA edges go)",
    "debug-intrinsics-to-records": "`llvm.dbg.*` calls become debug records, which are not instructions (their "
    "INSTRUCTION nodes, CALL edges and the `llvm.dbg.*` declarations go; CONTROL edges join their neighbours)",
    "pointer-constant-merging": "constants that differed only in their pointer type (`i8* null`, "
    "`%struct.S* null`, `i32* undef`; casts to a pointer type such as `(int *)1` and `(char *)1`, `i32* inttoptr "
    "(i64 1 to i32*)` and `i8* inttoptr (i64 1 to i8*)`) are one constant (`ptr null`, `ptr inttoptr (i64 1 to "
    "ptr)`): one CONSTANT node instead of several",
    "aggregate-constant-merging": "aggregate and vector constants that differed only in their pointer types "
    "(`{ i8*, i8 } undef` and `{ i32*, i8 } undef`, `<2 x T*> undef`, `[N x T*] zeroinitializer`, `{ i32*, i32 } "
    "{ i32* @g, i32 1 }` and `{ i8*, i32 } { i8* bitcast (i32* @g to i8*), i32 1 }`) are one constant (`{ ptr, i8 } "
    "undef`): one CONSTANT node instead of several",
    "shufflevector-mask": "a `shufflevector` mask is no longer an operand (LLVM 11+): no CONSTANT use at position 2",
    "masked-alignment-operand": "`llvm.masked.load/store/gather/scatter` carry their alignment as an `align` "
    "attribute, not an `i32` operand (LLVM 22): the constant's use goes and the operands after it move down one "
    "position (`llvm.masked.expandload/compressstore` never had it)",
    "annotation-null-operand": "`llvm.var.annotation` and `llvm.ptr.annotation` gained a fifth operand, the "
    "annotation's arguments (LLVM 14): the upgrade passes `ptr null`, a DATA edge at position 4 from that constant",
    "lifetime-size-operand": "`llvm.lifetime.start/end` lost their size operand (LLVM 22): the size constant's use "
    "goes, the pointer moves from position 1 to 0, and LLVM 22 leaves unused `llvm.lifetime.start/end.i64` "
    "declarations in the module",
    "lifetime-gep-stripping": "the pointer of an upgraded `llvm.lifetime.start/end` is stripped to the `alloca` "
    "through all-zero-index `getelementptr` instructions too (`stripPointerCasts`; -O2 C++ and Cython code): its "
    "variable's producer is the `alloca`, not the `getelementptr`",
    "x86-compare-mask-operand": "`llvm.x86.avx512.cmp.pd/ps.128/256/512` (LLVM 10; clang 12+ writes the LLVM 22 "
    "form) are `llvm.x86.avx512.mask.cmp.*` with an all-ones `<N x i1>` mask operand (LLVM 12): a DATA edge at "
    "position 3 from that constant, and the 512-bit forms' rounding operand moves from 3 to 4",
    "lifetime-marker-removal": "an `llvm.lifetime.start/end` whose pointer is not an `alloca` behind its casts (an "
    "argument, a global, a coroutine frame's `getelementptr`) is deleted by the upgrade (LLVM 22): its INSTRUCTION "
    "node, operands and CALL edges go (CONTROL edges join its neighbours), and so does the intrinsic's declaration "
    "when no marker of it is left",
}

_UNDEFINED = "; undefined function"  # the text of a declaration's placeholder node
_MASKED_MEMORY = re.compile(r"@llvm\.masked\.(load|store|gather|scatter)\.")
_AVX512_COMPARE = re.compile(r"@llvm\.x86\.avx512\.cmp\.(pd|ps)\.(128|256|512)\(")
_AVX512_COMPARE_LANES = {
    (kind, bits): int(bits) // (64 if kind == "pd" else 32) for kind in ("pd", "ps") for bits in ("128", "256", "512")
}
_ANNOTATION = re.compile(r"@llvm\.(?:var\.annotation|ptr\.annotation\.[\w.]+)\(")
_SIMPLE_CONSTANT = re.compile(r"^(.*\*) (null|undef|poison|zeroinitializer)$")
_GLOBAL_DEFINITION = re.compile(r'^(@(?:"[^"]*"|[-\w.$]+)) = ')


def _pointer_constant_key(full_text: str) -> str | None:
    """What a constant of a pointer type is in LLVM 22 (``ptr null``, ``inttoptr (i64 1 to ptr)``), when it is a
    plain value or a cast to a pointer type; None for anything else (pointer-constant-merging)."""
    match = _SIMPLE_CONSTANT.match(full_text)
    if match:
        return normalize_type_text(match.group(1)) + " " + match.group(2)
    value = _split_type_and_value(full_text.strip())
    type_text = full_text.strip()[: -len(value)].strip() if value else ""
    if type_text.endswith("*") and value.split(" ", 1)[0] in _CASTS and value.endswith(")"):
        return "ptr " + _identity(value)
    return None


_AGGREGATE_BRACKETS = {"{": "}", "[": "]", "<": ">"}


def _aggregate_constant_key(full_text: str) -> str | None:
    """What a constant of an aggregate or vector type that holds pointers is in LLVM 22 (``{ ptr, i8 } undef``,
    ``[2 x ptr] zeroinitializer``, ``{ ptr, i32 } { ptr @g, i32 1 }``); None for anything else, and for a string
    or a global variable (aggregate-constant-merging)."""
    text = full_text.strip()
    if '"' in text or _GLOBAL_DEFINITION.match(text):
        return None
    value = _split_type_and_value(text)
    type_text = text[: -len(value)].strip() if value != text else ""
    if not type_text or type_text.endswith("*") or "*" not in type_text or type_text[0] not in _AGGREGATE_BRACKETS:
        return None
    return f"{normalize_type_text(type_text)} {_aggregate_value(value)}"


def _aggregate_value(value: str) -> str:
    """The elements of an aggregate constant's value as LLVM 22 has them (``{ i8* null, i8 1 }`` -> ``{ ptr null, i8
    1 }``, an element ``i8* bitcast (i32* @g to i8*)`` -> ``@g``); a plain value (``undef``) is itself."""
    packed = value.startswith("<{") and value.endswith("}>")
    inner = value[2:-2] if packed else value[1:-1]
    if not packed and (len(value) < 2 or _AGGREGATE_BRACKETS.get(value[0]) != value[-1]):
        return value
    elements = []
    for element in _top_level_commas(inner):
        element_value = _split_type_and_value(element)
        if element_value != element and element_value[:1] in _AGGREGATE_BRACKETS:
            element_type = element[: -len(element_value)].strip()
            elements.append(f"{normalize_type_text(element_type)} {_aggregate_value(element_value)}")
        else:
            elements.append(_identity(element))
    opening, closing = ("<{", "}>") if packed else (value[0], value[-1])
    return f"{opening} {', '.join(elements)} {closing}"


def _split_type_and_value(text: str) -> str:
    """``i8* getelementptr (...)`` -> ``getelementptr (...)`` (drops a leading, possibly nested, type)."""
    depth = 0
    for index, char in enumerate(text):
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        elif char == " " and depth == 0 and not text[index + 1 :].startswith(("x ", "(", "*")):
            rest = text[index + 1 :]
            if rest and rest[0] not in "*(":
                return rest
    return text


def _top_level_commas(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return parts


def _folded_base(full_text: str) -> tuple[str, str] | None:
    """For a constant LLVM 22 folds into its operand, (the operand's identity, effect); else None."""
    value = full_text.strip()
    if not value.startswith(("bitcast (", "getelementptr (", "getelementptr inbounds (")):  # typed: drop the type
        value = _split_type_and_value(value)
    if value.startswith("bitcast (") and value.endswith(")"):
        inner = value[len("bitcast (") : -1]
        operand, _, target = inner.rpartition(" to ")
        if not target.rstrip().endswith("*"):
            return None
        return (_identity(operand), "pointer-bitcast-folding")
    for prefix in ("getelementptr inbounds (", "getelementptr ("):
        if value.startswith(prefix) and value.endswith(")"):
            fields = _top_level_commas(value[len(prefix) : -1])
            if len(fields) >= 2 and all(f.split()[-1] == "0" for f in fields[2:]):
                return (_identity(fields[1]), "constant-gep-folding")
    return None


def _identity(operand: str) -> str:
    """A typed constant operand (``i8* getelementptr (...)``) as LLVM 22 has it: a global is its name (``@s``); in
    an expression, at any depth, pointer types read ``ptr`` and pointer ``bitcast``s and all-zero-index
    ``getelementptr``s are their operand. Two LLVM 10 constants with one identity are one LLVM 22 constant."""
    operand = operand.strip()
    value = _split_type_and_value(operand)
    if value.startswith("@"):
        return value
    type_text = operand[: len(operand) - len(value)].strip()
    open_paren = value.find("(")
    if open_paren < 0 or not value.endswith(")"):
        return f"{normalize_type_text(type_text)} {value}" if type_text else value
    folded = _folded_base(value)
    if folded:
        return folded[0]
    head = value[:open_paren].strip()
    inner = value[open_paren + 1 : -1]
    if " to " in inner and head.split()[0] in _CASTS:
        cast_operand, _, target = inner.rpartition(" to ")
        return f"{head} ({_identity(cast_operand)} to {normalize_type_text(target.strip())})"
    fields = _top_level_commas(inner)
    if head.startswith("getelementptr") and fields:
        return f"{head} ({normalize_type_text(fields[0])}, {', '.join(_identity(f) for f in fields[1:])})"
    return f"{head} ({', '.join(_identity(f) for f in fields)})"


_CASTS = frozenset(
    "trunc zext sext fptrunc fpext fptoui fptosi uitofp sitofp ptrtoint inttoptr bitcast addrspacecast".split()
)


def apply_llvm22_upgrade(graph: ProgramGraph) -> tuple[ProgramGraph, Counter]:
    """Rewrite a graph built by LLVM 10 (``llvm2graph-10``) as LLVM 22 would see the same IR.

    Applies the effects of :data:`UPGRADE_EFFECTS` that concern graph structure (texts and function names are
    normalised by :func:`canonical_form`). Returns the rewritten graph and how often each effect applied.
    """
    effects: Counter = Counter()
    nodes = graph.node
    functions = {f.name for f in graph.function}
    drop = [False] * len(nodes)
    replace = list(range(len(nodes)))

    # constants: which global or constant expression each one is, after folding
    global_node: dict[str, int] = {}
    for index, node in enumerate(nodes):
        if node.type == Node.CONSTANT:
            match = _GLOBAL_DEFINITION.match(_full_text(node))
            if match:
                global_node.setdefault(match.group(1), index)
    for index, node in enumerate(nodes):  # constant expressions a pointer bitcast may fold into
        if node.type != Node.CONSTANT or not _split_type_and_value(_full_text(node)).endswith(")"):
            continue
        if not _folded_base(_full_text(node)):
            global_node.setdefault(_identity(_full_text(node)), index)
    for index, node in enumerate(nodes):
        if node.type != Node.CONSTANT:
            continue
        folded = _folded_base(_full_text(node))
        if not folded:
            continue
        base, effect = folded
        if base[1:] in functions or base[2:-1] in functions:
            drop[index] = True
            effects["function-cast-removal"] += 1
        elif base in global_node and global_node[base] != index:
            replace[index] = global_node[base]
            drop[index] = True
            effects[effect] += 1
        else:  # the base global has no node of its own yet: this node becomes it
            global_node[base] = index
            effects[effect] += 1

    # constants that only differed by their pointer types are one constant in LLVM 22 (`ptr null`)
    same_value: dict[str, int] = {}
    for index, node in enumerate(nodes):
        if node.type != Node.CONSTANT or drop[index]:
            continue
        key, effect = _pointer_constant_key(_full_text(node)), "pointer-constant-merging"
        if key is None:
            key, effect = _aggregate_constant_key(_full_text(node)), "aggregate-constant-merging"
        if key is None:
            continue
        if key in same_value:
            replace[index] = same_value[key]
            drop[index] = True
            effects[effect] += 1
        else:
            same_value[key] = index

    # debug intrinsic calls and declarations
    dbg_functions = {i for i, f in enumerate(graph.function) if f.name.startswith("llvm.dbg.")}
    control_next: dict[int, int] = {}
    for index, node in enumerate(nodes):
        if node.type == Node.INSTRUCTION and (
            _full_text(node).startswith("call void @llvm.dbg.")
            or (node.function in dbg_functions and node.text == _UNDEFINED)
        ):
            drop[index] = True
            effects["debug-intrinsics-to-records"] += 1
    if any(drop[i] and nodes[i].type == Node.INSTRUCTION for i in range(len(nodes))):
        for edge in graph.edge:
            if edge.flow == Edge.CONTROL and drop[edge.source] and edge.position == 0:
                control_next[edge.source] = edge.target

    def resolve(index: int) -> int:
        while replace[index] != index:  # a merged constant may have been merged again
            index = replace[index]
        while drop[index] and index in control_next:
            index = control_next[index]
        return index

    shuffles = {i for i, n in enumerate(nodes) if n.type == Node.INSTRUCTION and n.text == "shufflevector"}
    lifetime_functions = {
        i for i, f in enumerate(graph.function) if re.fullmatch(r"llvm\.lifetime\.(start|end)\.p\d+\w*", f.name)
    }
    lifetime_calls = {
        i
        for i, n in enumerate(nodes)
        if n.type == Node.INSTRUCTION and n.text == "call" and "@llvm.lifetime." in _full_text(n)
    }

    # the lifetime upgrade strips pointer casts and all-zero-index GEPs (stripPointerCasts): the variable's producer
    # becomes the cast's (or GEP's) own operand's
    producer_edge: dict[int, int] = {}  # variable -> index of its def edge
    operand_zero: dict[int, int] = {}  # instruction -> source of its DATA edge at position 0
    for index, edge in enumerate(graph.edge):
        if edge.flow == Edge.DATA:
            if nodes[edge.target].type == Node.VARIABLE:
                producer_edge[edge.target] = index
            elif edge.position == 0:
                operand_zero[edge.target] = edge.source
    new_producer: dict[int, int] = {}
    for edge in graph.edge:
        if edge.flow == Edge.DATA and edge.target in lifetime_calls and edge.position == 1:
            variable = edge.source
            producer = graph.edge[producer_edge[variable]].source if variable in producer_edge else None
            through_gep = False
            while producer is not None and producer in operand_zero:
                if nodes[producer].text == "getelementptr" and _zero_index_gep(_full_text(nodes[producer])):
                    through_gep = True
                elif nodes[producer].text not in ("bitcast", "addrspacecast"):
                    break
                feeding = operand_zero[producer]
                if feeding not in producer_edge:
                    producer = None  # a cast of an argument or a constant
                    break
                producer = graph.edge[producer_edge[feeding]].source
            if producer is None or nodes[producer].text != "alloca":
                # not an alloca behind the casts: LLVM 22's upgrade deletes the marker, and the pointer's use
                drop[edge.target] = True
                if variable in producer_edge:
                    drop[variable] = True
                effects["lifetime-marker-removal"] += 1
                continue
            new_producer[producer_edge[variable]] = producer
            effects["lifetime-gep-stripping"] += through_gep
    for edge in graph.edge:
        if edge.flow == Edge.CONTROL and edge.position == 0 and edge.source in lifetime_calls and drop[edge.source]:
            control_next[edge.source] = edge.target
    # a lifetime intrinsic whose every marker is deleted (or that has none) has no declaration in LLVM 22
    placeholders = {i: n.function for i, n in enumerate(nodes) if n.type == Node.INSTRUCTION and n.text == _UNDEFINED}
    callee = {e.source: placeholders[e.target] for e in graph.edge if e.flow == Edge.CALL and e.target in placeholders}
    removed_functions = {f for f in lifetime_functions if all(drop[c] for c in lifetime_calls if callee.get(c) == f)}
    for index, function in placeholders.items():
        drop[index] = drop[index] or function in removed_functions

    # masked memory intrinsics: the alignment operand's position (LLVM 22 makes it an attribute)
    masked_alignment: dict[int, int] = {}
    annotations: list[int] = []  # llvm.ptr/var.annotation calls: LLVM 22 appends a `ptr null` operand
    for index, node in enumerate(nodes):
        if node.type == Node.INSTRUCTION and node.text == "call":
            match = _MASKED_MEMORY.search(_full_text(node))
            if match:
                masked_alignment[index] = 1 if match.group(1) in ("load", "gather") else 2
            elif _ANNOTATION.search(_full_text(node)):
                annotations.append(index)
    # llvm.x86.avx512.cmp.pd/ps.*: LLVM 22 calls llvm.x86.avx512.mask.cmp.* with an all-ones mask operand at 3
    compare_masks = {
        i: _AVX512_COMPARE_LANES[match.groups()]
        for i, n in enumerate(nodes)
        if n.type == Node.INSTRUCTION and n.text == "call" and (match := _AVX512_COMPARE.search(_full_text(n)))
    }
    if annotations:  # only the LLVM 10 form, four operands; clang 14 already writes the fifth
        fifth = {e.target for e in graph.edge if e.flow == Edge.DATA and e.position == 4}
        annotations = [call for call in annotations if call not in fifth]

    result = ProgramGraph()
    result.CopyFrom(graph)
    del result.node[:]
    del result.edge[:]
    new_index = [-1] * len(nodes)
    for index, node in enumerate(nodes):
        if not drop[index]:
            new_index[index] = len(result.node)
            result.node.add().CopyFrom(node)
    for edge_index, edge in enumerate(graph.edge):
        source, target = new_producer.get(edge_index, edge.source), edge.target
        if edge.flow == Edge.DATA and target in shuffles and edge.position == 2 and nodes[source].type == Node.CONSTANT:
            effects["shufflevector-mask"] += 1
            continue
        position = edge.position
        if drop[target] and nodes[target].type == Node.INSTRUCTION:
            if edge.flow == Edge.DATA or (edge.flow == Edge.CALL and nodes[source].text == _UNDEFINED):
                continue  # a deleted call's operands and its callee's return edge (a function entry moves on)
        if edge.flow == Edge.DATA and target in masked_alignment:
            if position == masked_alignment[target]:
                effects["masked-alignment-operand"] += 1
                continue
            position -= position > masked_alignment[target]
        if edge.flow == Edge.DATA and target in compare_masks and position == 3:
            position = 4  # the 512-bit form's rounding operand, after the mask
        if edge.flow == Edge.DATA and target in lifetime_calls:
            if position == 0:
                effects["lifetime-size-operand"] += 1
                continue
            position -= 1
        if drop[source] and nodes[source].type == Node.INSTRUCTION:
            if edge.flow != Edge.CONTROL or control_next.get(source) == target:
                continue  # the dropped instruction's own edges
        if drop[source] and nodes[source].type == Node.CONSTANT and replace[source] == source:
            continue  # a removed function cast
        source, target = resolve(source), resolve(target)
        if drop[source] or drop[target]:
            continue
        copy = result.edge.add()
        copy.CopyFrom(edge)
        copy.source, copy.target = new_index[source], new_index[target]
        copy.position = position
    if annotations:
        null = _constant_node(result, nodes, "i8*", "null")
        for call in annotations:
            result.edge.add(flow=Edge.DATA, position=4, source=null, target=new_index[call])
            effects["annotation-null-operand"] += 1
    for call, lanes in compare_masks.items():
        mask = _constant_node(result, nodes, f"<{lanes} x i1>", f"<{', '.join(['i1 true'] * lanes)}>")
        result.edge.add(flow=Edge.DATA, position=3, source=mask, target=new_index[call])
        effects["x86-compare-mask-operand"] += 1
    _drop_unused_values(result)
    for function in sorted(removed_functions, reverse=True):
        del result.function[function]
        for node in result.node:
            node.function -= node.function > function
    for function in sorted(lifetime_functions):
        # LLVM 22 keeps a stray declaration `llvm.lifetime.<start|end>.i64` next to the upgraded intrinsic
        name = re.sub(r"\.p\d+\w*$", ".i64", graph.function[function].name)
        if any(f.name == name for f in result.function):
            continue
        result.function.add(name=name)
        placeholder = len(result.node)
        result.node.add(type=Node.INSTRUCTION, text=_UNDEFINED, function=len(result.function) - 1)
        result.node[placeholder].features.feature["full_text"].bytes_list.value.append(b"")
        result.edge.add(flow=Edge.CALL, source=0, target=placeholder)
        result.edge.add(flow=Edge.CALL, source=placeholder, target=0)
    for name in functions:
        if normalize_function_name(name) != name and not name.startswith("llvm.dbg."):
            effects["intrinsic-rename"] += 1
    return result, effects


def _zero_index_gep(instruction: str) -> bool:
    """Whether a printed ``getelementptr`` instruction has only zero indices (``..., i64 0, i32 0``)."""
    _, _, rest = instruction.partition("getelementptr ")
    fields = [f for f in _top_level_commas(rest.removeprefix("inbounds ")) if not f.startswith("!")]
    return len(fields) > 2 and all(f.split()[-1] == "0" for f in fields[2:])


def _constant_node(graph: ProgramGraph, original, type_text: str, value: str) -> int:
    """The index of the constant ``<type_text> <value>`` in a rewritten graph (``i8* null`` is ``ptr null`` once
    pointer constants are merged); added, as the original builder adds a constant (after every block: block = the
    number of blocks), if absent."""
    full = f"{type_text} {value}"
    key = _pointer_constant_key(full) or full
    for index, node in enumerate(graph.node):
        if node.type == Node.CONSTANT and (_pointer_constant_key(_full_text(node)) or _full_text(node)) == key:
            return index
    blocks = max((n.block + 1 for n in original if n.type == Node.INSTRUCTION and n.text != _UNDEFINED), default=0)
    node = graph.node.add(type=Node.CONSTANT, text=type_text, block=blocks)
    node.features.feature["full_text"].bytes_list.value.append(full.encode())
    return len(graph.node) - 1


def _drop_unused_values(graph: ProgramGraph) -> None:
    """Remove CONSTANT and VARIABLE nodes left without edges (their only uses were removed)."""
    used = set()
    for edge in graph.edge:
        used.add(edge.source)
        used.add(edge.target)
    keep = [i for i, n in enumerate(graph.node) if n.type == Node.INSTRUCTION or i in used]
    if len(keep) == len(graph.node):
        return
    new_index = {old: new for new, old in enumerate(keep)}
    nodes = [graph.node[i] for i in keep]
    copies = [type(n)() for n in nodes]
    for copy, node in zip(copies, nodes):
        copy.CopyFrom(node)
    del graph.node[:]
    graph.node.extend(copies)
    for edge in graph.edge:
        edge.source, edge.target = new_index[edge.source], new_index[edge.target]


def _full_text(node) -> str:
    values = node.features.feature["full_text"].bytes_list.value if node.HasField("features") else []
    return values[0].decode("utf-8", "replace") if values else ""
