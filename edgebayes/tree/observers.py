"""Attribute observers of a leaf: updated by every sample the leaf learns, read when the leaf
evaluates its candidate splits (VFDT, Domingos and Hulten 2000, Table 1: "increment
n_ijk(l)" and "compute G_l(X_i) for each attribute").

The statistics themselves live in the tree's flat arrays (`arena`): `observe` updates one
slot in place; the split functions read one slot and return the best split per feature. Every
loop here is a scalar loop in the compiled core's order (`edgebayes._core.tree`), so both give
the same floats on any CPU.

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

from edgebayes.tree.criterion import info_gain

_SQRT2 = math.sqrt(2.0)
_LOG_2PI = math.log(2.0 * math.pi)

# Field positions in the per-(slot, class, numeric feature) record of the stats array: the
# Gaussian estimator, and its log-density terms kept for naive Bayes (`leaves`)
WEIGHT, MEAN, M2, MIN, MAX, LOG_NORM, HALF_INV_VAR = range(7)
N_FIELDS = 7


def gaussian_at(tree, s: int, c: int) -> int:
    """Index in the tree's Gaussian records of class ``c``'s record of the first numeric
    feature at slot ``s``; numeric feature j's record is ``j * N_FIELDS`` further."""
    return (s * tree._class_cap + c) * len(tree._numeric_features) * N_FIELDS


def count_at(tree, k: int, s: int, c: int) -> int:
    """Index in nominal feature ``k``'s counts of class ``c``'s count of value code 0 at slot
    ``s``; code v's count is ``v`` further."""
    return (s * tree._class_cap + c) * tree._value_caps[k]


def observe(tree, s: int, xl: list, c: int, w: float, codes: list) -> None:
    """Add ``xl`` with class ``c`` and weight ``w`` to slot ``s``'s observers (weighted
    Welford, West 1979, for the numeric features; ``codes`` the nominal values' codes,
    -1 for a missing value). NaN is not learned."""
    st = tree._gaussians
    log = math.log
    k = gaussian_at(tree, s, c)
    for g in tree._numeric_features:
        v = xl[g]
        if v != v:
            pass
        elif st[k + WEIGHT] <= 0.0:  # the first value as the mean, exactly (MOA's GaussianEstimator):
            st[k + WEIGHT], st[k + MEAN], st[k + MIN], st[k + MAX] = w, v, v, v  # Welford's v * w / w can miss
        else:  # v by an ulp, and a point mass would get a variance of 1e-17
            sw = st[k + WEIGHT] + w
            st[k + WEIGHT] = sw
            mu = st[k + MEAN]
            d = v - mu
            mu += d * w / sw
            st[k + MEAN] = mu
            m2 = st[k + M2] + w * d * (v - mu)
            st[k + M2] = m2
            st[k + MIN] = min(st[k + MIN], v)
            st[k + MAX] = max(st[k + MAX], v)
            if sw > 1.0 and m2 > 0.0:  # sample variance, as MOA's GaussianEstimator
                var = m2 / (sw - 1.0)
                st[k + LOG_NORM] = -0.5 * (_LOG_2PI + log(var))
                st[k + HALF_INV_VAR] = 0.5 / var
        k += N_FIELDS
    for k, code in enumerate(codes):
        if code >= 0:
            tree._nominal_counts[k][count_at(tree, k, s, c) + code] += w


def numeric_splits(tree, s: int, n_classes: int, h_pre: float) -> list:
    """Best binary split of every numeric feature at slot ``s`` (MOA's
    ``GaussianNumericAttributeClassObserver.getBestEvaluatedSplitSuggestion``).

    Args:
        tree: the tree (`arena` describes its arrays).
        s: an active leaf's stats slot.
        n_classes: classes the tree knows.
        h_pre: entropy of the leaf's class weights (`criterion.entropy`).

    Returns:
        per numeric feature, in record order, (merit, threshold, dists): dists the class
        weights left (<=) and right (>) as two lists of floats; merit -inf when the feature
        has no valid candidate (fewer than two distinct values, or only NaN). The first best
        candidate wins (MOA's strict '>' scan).
    """
    st, n_num, n_points = tree._gaussians, len(tree._numeric_features), tree.n_split_points
    base = gaussian_at(tree, s, 0)
    step = n_num * N_FIELDS  # from one class's record of a feature to the next class's
    out = []
    for j in range(n_num):
        first = base + j * N_FIELDS
        lo, hi = math.inf, -math.inf  # empty classes hold +inf / -inf and drop out
        for c in range(n_classes):
            k = first + c * step
            lo = min(lo, st[k + MIN])
            hi = max(hi, st[k + MAX])
        best = (-math.inf, 0.0, None)
        if lo < hi:
            bin_size = (hi - lo) / (n_points + 1.0)  # MOA's arithmetic, to the last bit
            for i in range(1, n_points + 1):
                t = lo + bin_size * i
                if not (lo < t < hi):
                    continue
                dists = _sides(st, first, step, n_classes, t)
                merit = info_gain(h_pre, dists)
                if merit > best[0]:
                    best = (merit, t, dists)
        out.append(best)
    return out


def _sides(st, first: int, step: int, n_classes: int, t: float) -> list:
    """Class weights at or below threshold ``t`` and above it, from each class's Gaussian
    (MOA's ``GaussianEstimator.estimatedWeight_LessThan_EqualTo_GreaterThan_Value``): a class
    with no spread goes whole to one side, one lying wholly on one side goes there whole."""
    left, right = [], []
    for c in range(n_classes):
        k = first + c * step
        w, mean, lo_c, hi_c = st[k + WEIGHT], st[k + MEAN], st[k + MIN], st[k + MAX]
        std = math.sqrt(max(st[k + M2], 0.0) / (w - 1.0)) if w > 1.0 else 0.0
        if t < lo_c:
            frac = 0.0
        elif t >= hi_c:
            frac = 1.0
        elif std > 0.0:
            frac = 0.5 * (1.0 + math.erf((t - mean) / (std * _SQRT2)))
        else:
            frac = 1.0 if t >= mean else 0.0
        below = frac * w
        left.append(below)
        right.append(max(w - below, 0.0))
    return [left, right]


def nominal_splits(tree, s: int, n_classes: int, h_pre: float) -> list:
    """The multiway split of every nominal feature at slot ``s`` (MOA's
    ``NominalAttributeClassObserver``): a branch per value code up to the largest code seen.

    Returns:
        per nominal feature (merit, dists): dists the class weights per branch (a list of
        float lists); merit -inf and dists None with fewer than two values seen here.
    """
    out = []
    for k, counts in enumerate(tree._nominal_counts):
        vcap = tree._value_caps[k]
        branches, last, n_seen = [], 0, 0
        for v in range(vcap):
            row = [counts[count_at(tree, k, s, c) + v] for c in range(n_classes)]
            branches.append(row)
            if any(x > 0.0 for x in row):
                last, n_seen = v + 1, n_seen + 1
        if n_seen < 2:
            out.append((-math.inf, None))
        else:
            out.append((info_gain(h_pre, branches[:last]), branches[:last]))
    return out
