"""
Data-flow labels
================

The five analyses (reachability, dominance, datadep, liveness, subexpressions) label a graph's nodes for one root at
a time, exactly as ProGraML defines them. :func:`programl.dataflow.analyze_arrays` returns numpy arrays;
:func:`programl.dataflow.analyze` the original's ``ProgramGraphFeaturesList``.
"""

import programl
import programl.dataflow as dataflow

graph = programl.from_cpp(
    """
int f(int x) {
  int y = x * 2;
  if (x > 10) y = y + 1; else y = y - 1;
  return y;
}
""",
    language="c",
)

# %%
# Reachability from a root instruction: which instructions control flow can reach from it.

result = dataflow.analyze_arrays(graph, "reachability", max_roots=2, seed=0)
for root, labels in zip(result.roots, result.labels):
    reached = [f"{i}:{graph.node[i].text}" for i in labels.nonzero()[0]]
    print(f"root {root} ({graph.node[root].text}) reaches {len(reached)} nodes: {', '.join(reached)}")

# %%
# Every analysis has its own eligible roots (instructions, or variables for datadep).

for analysis in dataflow.ANALYSES:
    roots = dataflow.eligible_roots(graph, analysis)
    print(f"{analysis:15} {len(roots):3} eligible roots")

# %%
# The records the original tools write: one ``ProgramGraphFeatures`` per root, the labels as a node feature list.

records = dataflow.analyze(graph, "liveness", max_roots=1, seed=0)
print(type(records).__name__, len(records.graph), "record(s)")
