"""Attribute observers of a leaf, read when the leaf evaluates its candidate splits.

The statistics themselves live in the tree's flat arrays (`storage`); these functions take
numpy views of one leaf's block and return the best split per feature.

- Numeric feature: per class a Gaussian estimator (weight, mean, M2, min, max; MOA's
  ``GaussianNumericAttributeClassObserver``). Candidate thresholds are ``n_split_points``
  evenly spaced points strictly between the feature's min and max over the classes; the class
  weights on each side come from each class's Gaussian CDF, a class lying wholly on one side
  of the threshold going there whole. A sample goes left when ``x <= threshold``.
- Nominal feature: per class and value a weight count (MOA's ``NominalAttributeClassObserver``),
  evaluated as one multiway split with a branch per value code.
"""

from __future__ import annotations

import math

import numpy as np

from edgebayes.tree.criterion import info_gain

_erf = np.frompyfunc(math.erf, 1, 1)

# Field positions in the per-(slot, class, numeric feature) record of the stats array.
W, MEAN, M2, MIN, MAX, LOGNORM, INV2VAR = range(7)
N_FIELDS = 7


def numeric_splits(block: np.ndarray, pre: np.ndarray, n_split_points: int):
    """Best binary split of every numeric feature of one leaf.

    Args:
        block: float64 view of shape (n_classes, n_features, 7): the leaf's Gaussian records.
        pre: class weights at the leaf, shape (n_classes,).
        n_split_points: candidate thresholds per feature (MOA's numBins, 10).

    Returns:
        (merit, threshold, dists): merit and threshold of shape (n_features,) (merit -inf when
        the feature has no valid candidate, e.g. fewer than two distinct values or only NaN),
        dists of shape (n_features, 2, n_classes): class weights left (<=) and right (>).
    """
    w = block[:, :, W]
    mean = block[:, :, MEAN]
    lo_c = block[:, :, MIN]
    hi_c = block[:, :, MAX]
    lo = lo_c.min(axis=0)  # empty classes hold +inf / -inf and drop out
    hi = hi_c.max(axis=0)
    n_classes, n_features = w.shape
    if not np.isfinite(lo).any():
        return np.full(n_features, -np.inf), np.zeros(n_features), np.zeros((n_features, 2, n_classes))
    with np.errstate(invalid="ignore", divide="ignore"):
        bin_size = (hi - lo) / (n_split_points + 1.0)  # MOA's arithmetic, to the last bit
        cand = lo[None, :] + bin_size[None, :] * np.arange(1, n_split_points + 1)[:, None]  # (K, F)
        valid = (cand > lo) & (cand < hi)
        var = np.where(w > 1.0, block[:, :, M2] / np.where(w > 1.0, w - 1.0, 1.0), 0.0)
        std = np.sqrt(np.maximum(var, 0.0))  # (C, F)
        t = cand[:, None, :]  # (K, 1, F)
        z = (t - mean) / np.where(std > 0.0, std * math.sqrt(2.0), 1.0)
        phi = 0.5 * (1.0 + _erf(np.where(std > 0.0, z, 0.0)).astype(np.float64))
        frac = np.where(std > 0.0, phi, (t >= mean).astype(np.float64))
        frac = np.where(t < lo_c, 0.0, np.where(t >= hi_c, 1.0, frac))
        left = np.where(w > 0.0, frac * w, 0.0)  # (K, C, F)
    right = np.maximum(w - left, 0.0)
    dists = np.stack([left, right], axis=2).transpose(0, 3, 2, 1)  # (K, F, 2, C)
    merits = np.where(valid, info_gain(pre, dists), -np.inf)  # (K, F)
    best = merits.argmax(axis=0)  # first maximum, as MOA's strict '>' scan
    cols = np.arange(n_features)
    return merits[best, cols], cand[best, cols], dists[best, cols]


def nominal_split(counts: np.ndarray, pre: np.ndarray):
    """The multiway split of one nominal feature of one leaf.

    Args:
        counts: float64 view of shape (n_classes, n_values): weight per class and value code.
        pre: class weights at the leaf, shape (n_classes,).

    Returns:
        (merit, dists): dists of shape (n_branches, n_classes), one branch per value code up to
        the largest code seen at this leaf; merit -inf with fewer than two useful branches.
    """
    seen = np.flatnonzero(counts.sum(axis=0) > 0.0)
    if seen.size < 2:
        return -math.inf, None
    dists = counts[:, : seen[-1] + 1].T.copy()
    return float(info_gain(pre, dists[None])[0]), dists


def normalize_votes(votes) -> list | None:
    """Class votes (non-negative weights) as probabilities summing to 1.

    Returns None (no prediction) only for an empty, all-zero or non-finite vote vector; any
    other vector, however small its sum, is normalised (casebook C13).
    """
    total = 0.0
    for v in votes:
        if not (v >= 0.0 and math.isfinite(v)):
            return None
        total += v
    if total <= 0.0 or not math.isfinite(total):
        return None
    return [v / total for v in votes]


def softmax_log(log_votes) -> list | None:
    """Probabilities from log-votes by log-sum-exp; None when no vote is finite (all zero)."""
    top = max(log_votes, default=-math.inf)
    if not math.isfinite(top):
        return None
    exps = [math.exp(v - top) for v in log_votes]
    total = sum(exps)
    return [e / total for e in exps]
