"""Attribute observers of a leaf: updated by every sample the leaf learns, read when the leaf
evaluates its candidate splits (VFDT, Domingos and Hulten 2000, Table 1: "increment
n_ijk(l)" and "compute G_l(X_i) for each attribute").

The statistics themselves live in the tree's flat arrays (`arena`): `observe` updates one
slot in place; the split functions take numpy views of one leaf's block and return the best
split per feature.

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
_SQRT2 = math.sqrt(2.0)
_LOG_2PI = math.log(2.0 * math.pi)

# Field positions in the per-(slot, class, numeric feature) record of the stats array: the
# Gaussian estimator, and its log-density terms kept for naive Bayes (`leaves`)
W, MEAN, M2, MIN, MAX, LOGNORM, INV2VAR = range(7)
N_FIELDS = 7


def observe(tree, s: int, xl: list, c: int, w: float, codes: list) -> None:
    """Add ``xl`` with class ``c`` and weight ``w`` to slot ``s``'s observers (weighted
    Welford, West 1979, for the numeric features; ``codes`` the nominal values' codes,
    -1 for a missing value). NaN is not learned."""
    st = tree._st
    log = math.log
    k = (s * tree._ccap + c) * len(tree._gnum) * N_FIELDS
    for g in tree._gnum:
        v = xl[g]
        if v != v:
            pass
        elif st[k] <= 0.0:  # the first value as the mean, exactly (MOA's GaussianEstimator):
            st[k], st[k + 1], st[k + 3], st[k + 4] = w, v, v, v  # Welford's v * w / w can miss
        else:  # v by an ulp, and a point mass would get a variance of 1e-17
            sw = st[k] + w
            st[k] = sw
            mu = st[k + 1]
            d = v - mu
            mu += d * w / sw
            st[k + 1] = mu
            m2 = st[k + 2] + w * d * (v - mu)
            st[k + 2] = m2
            st[k + 3] = min(st[k + 3], v)
            st[k + 4] = max(st[k + 4], v)
            if sw > 1.0 and m2 > 0.0:  # sample variance, as MOA's GaussianEstimator
                var = m2 / (sw - 1.0)
                st[k + 5] = -0.5 * (_LOG_2PI + log(var))
                st[k + 6] = 0.5 / var
        k += N_FIELDS
    for k, code in enumerate(codes):
        if code >= 0:
            tree._nc[k][(s * tree._ccap + c) * tree._vcaps[k] + code] += w


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
    spread = lo < hi  # at least two distinct values; features without values: inf > -inf
    if not spread.any():
        return np.full(n_features, -np.inf), np.zeros(n_features), np.zeros((n_features, 2, n_classes))
    lo = np.where(spread, lo, 0.0)
    hi = np.where(spread, hi, 0.0)
    bin_size = (hi - lo) / (n_split_points + 1.0)  # MOA's arithmetic, to the last bit
    cand = lo + bin_size * np.arange(1, n_split_points + 1)[:, None]  # (K, F)
    valid = spread & (cand > lo) & (cand < hi)
    w1 = np.where(w > 1.0, w - 1.0, 1.0)
    std = np.sqrt(np.where(w > 1.0, np.maximum(block[:, :, M2], 0.0) / w1, 0.0))  # (C, F)
    t = cand[:, None, :]  # (K, 1, F)
    frac = (t >= mean).astype(np.float64)  # (K, C, F): a point mass goes whole
    inside = (std > 0.0) & (t >= lo_c) & (t < hi_c)
    z = ((t - mean) / np.where(std > 0.0, std * _SQRT2, 1.0))[inside]
    frac[inside] = 0.5 * (1.0 + _erf(z).astype(np.float64))
    frac[t >= hi_c] = 1.0
    frac[t < lo_c] = 0.0  # before the class's smallest value: none of it goes left
    frac *= w
    both = np.empty((n_split_points, n_classes, 2, n_features))
    both[:, :, 0] = frac
    both[:, :, 1] = np.maximum(w - frac, 0.0)
    dists = both.transpose(0, 3, 2, 1)  # (K, F, 2, C); the class sums run in class order
    merits = np.where(valid, info_gain(pre, dists), -np.inf)
    best = merits.argmax(axis=0)  # first maximum, as MOA's strict '>' scan
    cols = np.arange(n_features)
    return merits[best, cols], cand[best, cols], dists[best, cols]


def nominal_splits(counts: list, pre: np.ndarray) -> list:
    """The multiway split of every nominal feature of one leaf, in one vectorised evaluation.

    Args:
        counts: per nominal feature a float64 view of shape (n_classes, n_values_k): weight
            per class and value code.
        pre: class weights at the leaf, shape (n_classes,).

    Returns:
        per feature (merit, dists): dists of shape (n_branches, n_classes), one branch per
        value code up to the largest code seen at this leaf; merit -inf (dists None) with
        fewer than two values seen. Features with fewer values are padded with empty branches,
        which add exact zeros to the merit (numpy sums fewer than 8 branches in order; beyond,
        its pairwise order may move the last bit).
    """
    n_values = max(c.shape[1] for c in counts)
    stacked = np.zeros((len(counts), n_values, pre.shape[0]))
    for k, c in enumerate(counts):
        stacked[k, : c.shape[1]] = c.T
    merits = info_gain(pre, stacked).tolist()
    out = []
    for k, seen in enumerate((stacked.sum(axis=2) > 0.0).tolist()):
        if sum(seen) < 2:
            out.append((-math.inf, None))
        else:
            last = n_values - seen[::-1].index(True)
            out.append((merits[k], stacked[k, :last].copy()))
    return out
