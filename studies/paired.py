"""The paired difference of two results on the same folds or seeds (the devmap comparisons of the studies:
``devmap_against_baseline.py``, ``devmap_graph_forest.py``, ``devmap_numbers_types.py``, ``devmap_above.py``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PairedDifference", "paired_difference"]


@dataclass(frozen=True)
class PairedDifference:
    """``ours - theirs`` over paired results (the same folds or seeds), in the unit of ``scale``."""

    mean: float  #: the mean difference
    standard_error: float  #: sample standard deviation of the differences over sqrt(pairs); NaN for one pair
    above: int  #: pairs where ours is higher (by more than 1e-9)
    level: int  #: pairs within 1e-9
    below: int  #: pairs where ours is lower

    @property
    def counts(self) -> tuple[int, int, int]:
        """``(above, level, below)``."""
        return self.above, self.level, self.below


def paired_difference(ours: Sequence[float], theirs: Sequence[float], scale: float = 100.0) -> PairedDifference:
    """The paired difference of two equal-length result lists (by default fractions, reported in points): each
    pair's difference times ``scale``, their mean, its standard error and the pairs above / level / below. Pairs
    share training data when they are cross-validation folds, so the standard error is optimistic there."""
    if len(ours) != len(theirs) or len(ours) == 0:
        raise ValueError(f"paired_difference: {len(ours)} against {len(theirs)} results (equal, at least one)")
    differences = [scale * (float(a) - float(b)) for a, b in zip(ours, theirs)]
    n = len(differences)
    mean = sum(differences) / n
    spread = math.sqrt(sum((d - mean) ** 2 for d in differences) / (n - 1)) if n > 1 else math.nan
    tolerance = 1e-9
    return PairedDifference(
        mean=mean,
        standard_error=spread / math.sqrt(n),
        above=sum(d > tolerance for d in differences),
        level=sum(abs(d) <= tolerance for d in differences),
        below=sum(d < -tolerance for d in differences),
    )
