"""
Building a graph and looking inside it
======================================

A C function becomes a ProGraML graph with :func:`programl.from_cpp` (clang-22 at ``-O0``, then the graph builder);
LLVM IR text goes through :func:`programl.from_llvm_ir`. The result is a protobuf ``ProgramGraph``: nodes,
edges, functions and a module.
"""

import collections

import programl

SOURCE = """
int sum_positive(const int *a, int n) {
  int s = 0;
  for (int i = 0; i < n; i++)
    if (a[i] > 0) s += a[i];
  return s;
}
"""

graph = programl.from_cpp(SOURCE, language="c")
print(f"{len(graph.node)} nodes, {len(graph.edge)} edges, functions: {[f.name for f in graph.function]}")

# %%
# Each node has a type (instruction, variable, constant), a text (the opcode, or the type of a value) and a full
# text, the instruction as LLVM prints it.

types = {0: "instruction", 1: "variable", 2: "constant"}
print(collections.Counter(types[node.type] for node in graph.node))
for node in graph.node[:8]:
    full = node.features.feature["full_text"].bytes_list.value
    print(f"{types[node.type]:12} {node.text:8} {full[0].decode() if full else ''}")

# %%
# Edges carry a flow (control, data, call) and a position: the operand's index for data edges, the successor's
# index for control edges.

flows = {0: "control", 1: "data", 2: "call"}
print(collections.Counter(flows[edge.flow] for edge in graph.edge))
successors = collections.defaultdict(list)
for edge in graph.edge:
    if edge.flow == 0:
        successors[edge.source].append(edge)
branch = next(i for i, node in enumerate(graph.node) if node.text == "br" and len(successors[i]) == 2)
print(graph.node[branch].features.feature["full_text"].bytes_list.value[0].decode())
for edge in successors[branch]:
    print(f"  -> {graph.node[edge.target].text} (node {edge.target}), position {edge.position}")

# %%
# The same graph as a networkx ``MultiDiGraph`` (ProGraML's and CompilerGym's attribute names) and back, losslessly.

nx_graph = programl.to_networkx(graph)
print(nx_graph)
assert programl.from_networkx(nx_graph) == graph
