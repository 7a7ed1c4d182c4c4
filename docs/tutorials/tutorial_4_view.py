"""
Looking at a graph and a model's predictions
=============================================

:func:`programl.view.to_html` makes the page ``programl view`` writes: one self-contained HTML file (no network
when it is opened) that draws the graph, folds functions, searches nodes and, given an analysis and a model, shows
each root's exact labels beside the model's predictions. The :doc:`/view` page embeds one.
"""

import tempfile
from pathlib import Path

import programl
from programl.view import graph_data, to_html

graph = programl.from_cpp(
    """
int gcd(int a, int b) {
  while (b != 0) { int t = a % b; a = b; b = t; }
  return a;
}
""",
    language="c",
)
page = to_html(graph, title="gcd", analysis="dominance", model="dominance")
path = Path(tempfile.mkdtemp()) / "gcd.html"
path.write_text(page, encoding="utf-8")
print(f"{path.name}: {len(page):,} characters, {len(graph.node)} nodes")

# %%
# The data the page draws is plain JSON: the layout computed in Python (each function's blocks down the control flow,
# operands beside their instruction), and per root the labels as bit sets.

data = graph_data(graph)
print({key: data["counts"][key] for key in ("nodes", "edges", "functions")})
print([(group["name"], group["size"]) for group in data["groups"]])
