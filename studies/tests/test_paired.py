"""studies/paired.py: the paired difference of two results on the same folds or seeds, in points."""

import math

import pytest

from studies.paired import paired_difference


def test_paired_difference_in_points():
    d = paired_difference([0.9, 0.8, 0.7, 0.6], [0.8, 0.8, 0.8, 0.8])
    assert d.counts == (1, 1, 2)
    differences = [10.0, 0.0, -10.0, -20.0]
    mean = sum(differences) / 4
    assert d.mean == pytest.approx(mean)
    assert d.standard_error == pytest.approx(math.sqrt(sum((x - mean) ** 2 for x in differences) / 3) / 2)
    one = paired_difference([0.9], [0.8], scale=1.0)
    assert one.mean == pytest.approx(0.1) and math.isnan(one.standard_error) and one.counts == (1, 0, 0)
    with pytest.raises(ValueError, match="equal, at least one"):
        paired_difference([0.9, 0.8], [0.8])
