"""The names of the five data-flow analyses, in the reference's label-generation order
(docs/spec/analyses.md#label-files).

The one home of the names: the analyses (:mod:`programl.dataflow.analyze`), the DeepDataFlow layout, the datasets and
the command line all import :data:`ANALYSES` from here (``tests/dataflow/test_names.py`` checks that no other module
spells the list out). This module imports nothing, and the package ``__init__`` loads the analyses only when one of
them is used (PEP 562), so ``from programl.dataflow import ANALYSES`` costs neither numpy nor the analyses: the
command line's ``--help`` lists the choices without them.
"""

from __future__ import annotations

__all__ = ["ANALYSES", "check_analysis"]

#: Names of the analyses, in the reference's label-generation order (``create_labels.sh``;
#: docs/spec/analyses.md#label-files).
ANALYSES = ("reachability", "dominance", "datadep", "liveness", "subexpressions")


def check_analysis(analysis: object, error: type[Exception] = ValueError) -> str:
    """``analysis``, if it is one of :data:`ANALYSES`.

    Raises:
        error: For any other value, with a message that lists the analyses (``ValueError`` unless told).
    """
    if analysis not in ANALYSES:
        raise error(f"unknown analysis {analysis!r}; expected one of {', '.join(ANALYSES)}")
    return analysis  # type: ignore[return-value]
