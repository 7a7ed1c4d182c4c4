import pytest

from programl.util.scores import precision_recall_f1, ratio


def test_ratio_of_zero_denominator_is_zero():
    assert ratio(3, 0) == 0.0
    assert ratio(3, 4) == 0.75


@pytest.mark.parametrize(
    ("tp", "fn", "fp", "expected"),
    [
        (8, 2, 4, (8 / 12, 0.8, 2 * (8 / 12) * 0.8 / (8 / 12 + 0.8))),
        (0, 0, 0, (0.0, 0.0, 0.0)),  # no positives, none predicted: every ratio undefined -> 0
        (0, 5, 0, (0.0, 0.0, 0.0)),  # nothing predicted positive
        (5, 0, 0, (1.0, 1.0, 1.0)),
    ],
)
def test_precision_recall_f1_matches_scikit_learn_conventions(tp, fn, fp, expected):
    scores = precision_recall_f1(tp, fn, fp)
    assert (scores["precision"], scores["recall"], scores["f1"]) == pytest.approx(expected)


def test_agrees_with_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    true = [1] * 8 + [1] * 2 + [0] * 4 + [0] * 6
    pred = [1] * 8 + [0] * 2 + [1] * 4 + [0] * 6
    scores = precision_recall_f1(8, 2, 4)
    assert scores["precision"] == pytest.approx(metrics.precision_score(true, pred))
    assert scores["recall"] == pytest.approx(metrics.recall_score(true, pred))
    assert scores["f1"] == pytest.approx(metrics.f1_score(true, pred))
