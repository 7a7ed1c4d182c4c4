"""Hand-built graphs: a helper to write small ProgramGraphs, and the golden examples of SPEC §4."""

from __future__ import annotations

from programl.proto import Edge, Node, ProgramGraph


def make_graph(nodes, edges) -> ProgramGraph:
    """A ProgramGraph from ``nodes`` = [(type, text, function)] and ``edges`` = [(src, dst, flow[, position])]."""
    g = ProgramGraph()
    for node_type, text, function in nodes:
        n = g.node.add()
        n.type, n.text, n.function = node_type, text, function
    for edge in edges:
        e = g.edge.add()
        e.source, e.target, e.flow = edge[0], edge[1], edge[2]
        e.position = edge[3] if len(edge) > 3 else 0
    return g


INST, VAR, CONST = Node.INSTRUCTION, Node.VARIABLE, Node.CONSTANT
CTRL, DATA, CALL = Edge.CONTROL, Edge.DATA, Edge.CALL


# ------------------------------------------------------------------------------------------- golden graphs (SPEC §4)
def reachability_chain() -> ProgramGraph:
    """SPEC §4.2: the external node feeds a -> b -> c -> d (nodes 1..4) over control edges."""
    nodes = [(INST, "[external]", 0)] + [(INST, t, 0) for t in "abcd"]
    return make_graph(nodes, [(0, 1, CTRL), (1, 2, CTRL), (2, 3, CTRL), (3, 4, CTRL)])


def reachability_diamond() -> ProgramGraph:
    """a -> b, a -> c, b -> d, c -> d (nodes 1..4): d is enqueued by b and by c before it is dequeued."""
    nodes = [(INST, "[external]", 0)] + [(INST, t, 0) for t in "abcd"]
    return make_graph(nodes, [(1, 2, CTRL), (1, 3, CTRL), (2, 4, CTRL), (3, 4, CTRL)])


def dominance_diamond(with_e: bool = False) -> ProgramGraph:
    """SPEC §4.3: a(1) -> b(2), a -> c(3), b -> d(4), c -> d, data a -> v1 -> c; with e(5) -> b, v1 is 6 (else 5).

    As in the reference's unit test, the external node also has a control edge to a.
    """
    names = "abcde" if with_e else "abcd"
    nodes = [(INST, "[external]", 0)] + [(INST, t, 0) for t in names] + [(VAR, "v1", 0)]
    v1 = len(nodes) - 1
    edges = [(0, 1, CTRL), (1, 2, CTRL), (1, 3, CTRL), (2, 4, CTRL), (3, 4, CTRL), (1, v1, DATA), (v1, 3, DATA)]
    if with_e:
        edges.append((5, 2, CTRL))
    return make_graph(nodes, edges)


def datadep_chain() -> ProgramGraph:
    """SPEC §4.4: control a(1) -> b(2) -> c(3) -> d(4); data a -> v1(5) -> b -> v2(6) -> d."""
    nodes = [(INST, "[external]", 0)] + [(INST, t, 0) for t in "abcd"] + [(VAR, "v1", 0), (VAR, "v2", 0)]
    edges = [(0, 1, CTRL), (1, 2, CTRL), (2, 3, CTRL), (3, 4, CTRL)]
    edges += [(1, 5, DATA), (5, 2, DATA), (2, 6, DATA), (6, 4, DATA)]
    return make_graph(nodes, edges)


def liveness_textbook() -> ProgramGraph:
    """SPEC §4.5 (Wikipedia's live-variable example): variables a,b,c,d,x = 1..5; b1=6, b2=7, b3a=8, b3b=9."""
    nodes = [(INST, "[external]", 0)] + [(VAR, "<var>", 0)] * 5 + [(INST, "inst", 0)] * 4
    edges = [(0, 6, CALL), (6, 7, CTRL), (6, 8, CTRL), (7, 8, CTRL), (8, 9, CTRL)]
    edges += [(6, 1, DATA), (6, 2, DATA), (6, 4, DATA), (6, 5, DATA), (7, 3, DATA), (7, 4, DATA), (8, 3, DATA)]
    edges += [(1, 7, DATA), (2, 7, DATA), (2, 9, DATA), (3, 9, DATA), (4, 9, DATA)]
    return make_graph(nodes, edges)


def subexpressions_example(s1_operands: tuple[int, int] = (4, 5), opcode: str = "mul") -> ProgramGraph:
    """SPEC §4.6: t0 = s0(b op c), t1 = s1(<s1_operands>), a = s2(t0 + g), d = s3(t1 * e).

    Variables t0, t1, a, b, c, d, e, g = 1..8; instructions s0..s3 = 9..12 (s0, s1 use ``opcode``).
    """
    nodes = [(INST, "[external]", 0)] + [(VAR, "<var>", 0)] * 8
    nodes += [(INST, opcode, 0), (INST, opcode, 0), (INST, "add", 0), (INST, "mul", 0)]
    edges = [(0, 9, CTRL), (9, 10, CTRL), (10, 11, CTRL), (11, 12, CTRL)]
    edges += [(9, 1, DATA, 0), (10, 2, DATA, 0), (11, 3, DATA, 0), (11, 6, DATA, 0)]
    edges += [(4, 9, DATA, 0), (5, 9, DATA, 1), (s1_operands[0], 10, DATA, 0), (s1_operands[1], 10, DATA, 1)]
    edges += [(1, 11, DATA, 0), (8, 11, DATA, 1), (2, 12, DATA, 0), (7, 12, DATA, 1)]
    return make_graph(nodes, edges)
