"""metrics.py — the evaluation metrics of `offcore train --metric`, for models trained in
Python on offcore's loader, with the same definitions as the C side (src/train/metric.c):

    accuracy(y, logits)  the share of rows whose first maximal logit is the label
    roc_auc(y, score)    two classes: ROC-AUC of score (class 1 positive), exact, tied scores
                         counting one half (Mann-Whitney U, the average-rank formulation, as
                         sklearn's roc_auc_score); NaN when y holds one class only
    f1_macro(y, pred)    mean F1 over the classes among y or pred (sklearn's "macro"); 0 for
                         no rows
    score(name, y, logits)  one of "acc", "rocauc" (score = logit[1] - logit[0]), "f1-macro"

Arguments are numpy arrays (or anything np.asarray takes: torch tensors on the CPU too).
Place: the package's helpers (numpy only); examples/common.py prints them.
"""
import math

import numpy as np

METRICS = ("acc", "rocauc", "f1-macro")
LABELS = {"acc": "Acc", "rocauc": "ROC-AUC", "f1-macro": "F1-macro"}


def _labels(y):
    y = np.asarray(y).reshape(-1)
    if y.size and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0):
        raise ValueError("labels must be non-negative integers")
    return y.astype(np.int64)


def accuracy(y, logits):
    """Share of rows whose first maximal logit is their label (0.0 for no rows)."""
    y = _labels(y)
    logits = np.asarray(logits)
    if len(y) == 0:
        return 0.0
    return float(np.mean(np.argmax(logits, axis=1) == y))


def roc_auc(y, score):
    """ROC-AUC of score for labels y in {0, 1}: P(score of a positive > score of a negative),
    ties counting one half. NaN if y has no positive or no negative."""
    y = _labels(y)
    s = np.asarray(score, dtype=np.float64).reshape(-1)
    if len(s) != len(y):
        raise ValueError("roc_auc: %d labels but %d scores" % (len(y), len(s)))
    if y.size and y.max() > 1:
        raise ValueError("roc_auc: labels must be 0 or 1 (two classes)")
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0 or np.isnan(s).any():
        return math.nan
    # average ranks (1-based) of the sorted scores, tied runs sharing their mean rank
    order = np.argsort(s, kind="stable")
    sorted_s = s[order]
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
    ends = np.r_[starts[1:], len(s)]
    ranks = np.empty(len(s))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def f1_macro(y, pred):
    """Mean over the classes among y or pred of 2 TP / (2 TP + FP + FN); 0.0 for no rows."""
    y, pred = _labels(y), _labels(pred)
    if len(y) != len(pred):
        raise ValueError("f1_macro: %d labels but %d predictions" % (len(y), len(pred)))
    if len(y) == 0:
        return 0.0
    n = int(max(y.max(), pred.max())) + 1
    tp = np.bincount(y[y == pred], minlength=n)
    fp = np.bincount(pred[y != pred], minlength=n)
    fn = np.bincount(y[y != pred], minlength=n)
    d = 2 * tp + fp + fn
    present = d > 0
    return float(np.mean(2.0 * tp[present] / d[present]))


def score(name, y, logits):
    """The metric `name` ("acc", "rocauc" or "f1-macro") of logits for labels y."""
    logits = np.asarray(logits)
    if name == "acc":
        return accuracy(y, logits)
    if name == "rocauc":
        if logits.ndim != 2 or logits.shape[1] != 2:
            raise ValueError("rocauc needs two classes (logits of shape [n, 2]), got shape %s"
                             % (logits.shape,))
        return roc_auc(y, logits[:, 1].astype(np.float64) - logits[:, 0].astype(np.float64))
    if name == "f1-macro":
        return f1_macro(y, np.argmax(logits, axis=1))
    raise ValueError("unknown metric %r (expected one of %s)" % (name, ", ".join(METRICS)))
