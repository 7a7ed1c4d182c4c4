"""
A pretrained model's predictions
================================

The package ships trained models (``programl/pretrained/weights``). :func:`programl.pretrained.pretrained` loads one
(its files checked against their sha256, its weights read as tensors only); ``predict`` runs it on a graph, and
``compare=True`` adds the exact labels of the analysis beside its predictions.
"""

import programl
from programl.pretrained import pretrained, pretrained_names

print(pretrained_names())

graph = programl.from_cpp(
    """
int count(const char *s) {
  int n = 0;
  while (*s) { if (*s == ' ') n++; s++; }
  return n;
}
""",
    language="c",
)
model = pretrained("reachability")
print(model.name, model.metadata["steps"], "steps")

# %%
# Two roots, predicted and compared: for each, how many nodes the model and the analysis label true, and where they
# disagree.

prediction = model.predict(graph, num_roots=2, seed=0, compare=True)
for row, root in enumerate(prediction.roots):
    predicted, exact = prediction.predicted[row], prediction.exact[row]
    print(
        f"root {root} ({graph.node[root].text}): model {predicted.sum()} true, exact {exact.sum()} true, "
        f"false positives {(predicted & ~exact).sum()}, missed {(~predicted & exact).sum()}"
    )
