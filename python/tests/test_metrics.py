"""test_metrics.py — offcore.metrics against hand-computed values (ties, one class, classes
only predicted), against a naive pair count on many tied scores, and against sklearn when
it is installed; bad input refused with a message naming it.
"""
import math

import numpy as np
import pytest

from offcore import metrics


def test_roc_auc_counts_ties_as_one_half():
    # positives 0.8, 0.4, 0.4; negatives 0.4, 0.1: 5 of 6 pairs won (the C test's values)
    assert metrics.roc_auc([1, 1, 1, 0, 0], [0.8, 0.4, 0.4, 0.4, 0.1]) == pytest.approx(5 / 6)
    assert metrics.roc_auc([0, 0, 1, 1], [-2, -1, 3, 4]) == 1.0
    assert metrics.roc_auc([1, 1, 0, 0], [-2, -1, 3, 4]) == 0.0
    assert metrics.roc_auc([1, 0, 0, 1, 0], [7] * 5) == 0.5
    assert metrics.roc_auc([1, 0], [-0.0, 0.0]) == 0.5


def test_roc_auc_of_one_class_or_a_nan_score_is_nan():
    assert math.isnan(metrics.roc_auc([1, 1], [0.3, 0.2]))
    assert math.isnan(metrics.roc_auc([0, 0], [0.3, 0.2]))
    assert math.isnan(metrics.roc_auc([], []))
    assert math.isnan(metrics.roc_auc([1, 0], [math.nan, 0.2]))


def test_roc_auc_matches_the_pair_count():
    rng = np.random.default_rng(3)
    s = rng.integers(-8, 8, 600) / 4.0  # many ties
    y = (rng.random(600) < 0.3) | (s > 1.0)
    pos, neg = s[y], s[~y]
    diff = pos[:, None] - neg[None, :]
    want = ((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size
    assert metrics.roc_auc(y.astype(int), s) == pytest.approx(want, abs=1e-12)


def test_rocauc_scores_the_logit_difference():
    # margins 1, 1 (a tie though the logits differ) for positives and 3 for the negative
    logits = np.array([[0, 1], [5, 6], [-1, 2]], dtype=np.float32)
    assert metrics.score("rocauc", [1, 1, 0], logits) == 0.0
    assert metrics.score("rocauc", [0, 1, 1], logits) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="rocauc needs two classes"):
        metrics.score("rocauc", [0, 1], np.zeros((2, 3)))


def test_f1_macro_over_the_classes_among_labels_or_predictions():
    # class 0: 2/4, class 1: 4/5, class 2: 0; class 3 appears nowhere
    assert metrics.f1_macro([0, 0, 1, 1, 2], [0, 1, 1, 1, 0]) == pytest.approx(1.3 / 3)
    assert metrics.f1_macro([0, 0], [0, 1]) == pytest.approx(1 / 3)
    assert metrics.f1_macro([], []) == 0.0
    logits = np.eye(4)[[0, 1, 1, 1, 0]]
    assert metrics.score("f1-macro", [0, 0, 1, 1, 2], logits) == pytest.approx(1.3 / 3)


def test_accuracy_takes_the_first_maximum():
    logits = np.array([[1, 2, 2], [1, 2, 2], [3, 1, 3]], dtype=np.float32)
    assert metrics.score("acc", [1, 2, 0], logits) == pytest.approx(2 / 3)
    assert metrics.accuracy([], np.zeros((0, 3))) == 0.0


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="unknown metric 'auc'"):
        metrics.score("auc", [0], np.zeros((1, 2)))
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        metrics.roc_auc([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="2 labels but 3 scores"):
        metrics.roc_auc([0, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="non-negative integers"):
        metrics.f1_macro([-1, 0], [0, 0])


def test_agrees_with_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 500)
    s = np.round(rng.normal(size=500) + y, 1)
    assert metrics.roc_auc(y, s) == pytest.approx(sk.roc_auc_score(y, s), abs=1e-12)
    y3, p3 = rng.integers(0, 5, 400), rng.integers(0, 4, 400)
    assert metrics.f1_macro(y3, p3) == pytest.approx(sk.f1_score(y3, p3, average="macro"))
