"""Reading the saved states of the naive Bayes learners: each value parsed and checked.

A state is what ``GaussianNB.state()`` or ``MixedNB.state()`` returned, perhaps edited or
damaged on disk; the readers here return its statistics as the learner holds them, or raise
``ValueError`` naming what no learning could have produced. A reading error of the state's
structure (a missing key, a value of the wrong type) surfaces as one of
`edgebayes.base.STATE_ERRORS`, which ``from_state`` turns into a ``ValueError``.
"""

from __future__ import annotations

import math
from array import array

from edgebayes.base import MAX_ABS_X, check_finite, check_label
from edgebayes.naive_bayes_params import split_columns

__all__ = ["read_gaussian", "read_layout", "read_nominal"]

#: the bounds of learning (edgebayes.base.MAX_ABS_X) on counts, means and variances: a value
#: past them would overflow at the next update
_BOUNDS = ((0.0, math.inf), (-MAX_ABS_X, MAX_ABS_X), (0.0, 4.0 * MAX_ABS_X * MAX_ABS_X))
_ROWS = ("counts", "means", "variances")
_FEATURES = ("feature_counts", "feature_means", "feature_variances")


def read_gaussian(state: dict) -> tuple:
    """The statistics of a ``"gaussian_nb"`` state.

    Returns:
        ``(classes, d, n, priors, rows, features)``: the labels (list), n_features_in (None or
        an int >= 1), the weight learned, the priors as ``array("d")`` (K,), the per-class
        counts, means and variances as three ``array("d")`` (K * d,), and the all-class ones
        as three ``array("d")`` (d,), None without classes.

    Raises:
        ValueError: inconsistent shapes, a bad or repeated label, a non-finite number, a
            negative count, prior or variance, a value beyond the bounds of learning, or priors
            not summing to 1.
    """
    classes = list(state["classes"])
    K, d = len(classes), state["n_features_in"]
    rows = [[float(v) for v in r] for key in _ROWS for r in state[key]]
    feats = [[float(v) for v in state[key]] for key in _FEATURES]
    priors = [float(p) for p in state["priors"]]
    n = float(state["n"])
    if (d is None) != (K == 0) or not (d is None or (type(d) is int and d >= 1)):
        raise ValueError(f"invalid gaussian_nb state: n_features_in {d!r} with {K} classes")
    if len(priors) != K or len(rows) != 3 * K or any(len(r) != d for r in rows + (feats if K else [])):
        raise ValueError("invalid gaussian_nb state: shapes do not match classes and n_features_in")
    for c in classes:
        check_label(c)
    if len(dict.fromkeys(classes)) != K:
        raise ValueError("invalid gaussian_nb state: two classes are equal labels")
    check_finite("n", n, 0.0)
    check_finite("priors", priors, 0.0)
    if K and abs(math.fsum(priors) - 1.0) > 1e-6:
        raise ValueError(f"invalid gaussian_nb state: priors sum to {math.fsum(priors)}, not 1")
    parts = (rows[:K], rows[K:2 * K], rows[2 * K:])
    for name, rs, (low, high) in zip(_ROWS, parts, _BOUNDS):
        for r in rs:
            check_finite(name, r, low, high)
    if K:
        for name, r, (low, high) in zip(_FEATURES, feats, _BOUNDS):
            check_finite(name, r, low, high)
    flat = tuple(array("d", [v for r in part for v in r]) for part in parts)
    return classes, d, n, array("d", priors), flat, tuple(array("d", r) for r in feats) if K else None


def read_nominal(state: dict, n_nominal: int, K: int) -> tuple:
    """The nominal counts of a ``"mixed_nb"`` state of ``n_nominal`` nominal features and K
    classes.

    Returns:
        ``(values, counts, totals, seen)``: per nominal feature, its values (value -> column,
        in order of first appearance), the weight of each value per class (K lists), and per
        class the sum of those weights and the weight learned (K floats each).

    Raises:
        ValueError: a value beyond `edgebayes.base.MAX_ABS_X` or seen twice, a negative or
            non-finite count, or shapes that do not match the classes and nominal features.
    """
    values = [[float(v) for v in vs] for vs in state["values"]]
    index = [{v: c for c, v in enumerate(vs)} for vs in values]
    counts = [[[float(c) for c in r] for r in rows] for rows in state["counts"]]
    totals = [[float(t) for t in ts] for ts in state["totals"]]
    seen = [[float(s) for s in ss] for ss in state["seen"]]
    for vs, unique in zip(values, index):
        check_finite("values", vs, -MAX_ABS_X, MAX_ABS_X)
        if len(unique) != len(vs):
            raise ValueError("invalid mixed_nb state: a nominal value appears twice")
    for name, part in (("counts", counts), ("totals", totals), ("seen", seen)):
        for rows in part:
            for r in rows if name == "counts" else [rows]:
                check_finite(name, r, 0.0)
    if [len(index), len(counts), len(totals), len(seen)] != [n_nominal] * 4 or any(
        len(rows) != K or any(len(r) != len(v) for r in rows) or len(t) != K or len(s) != K
        for rows, v, t, s in zip(counts, index, totals, seen)
    ):
        raise ValueError("invalid mixed_nb state: shapes do not match classes and nominal features")
    return index, counts, totals, seen


def read_layout(d, gd, nominal_attributes) -> tuple | None:
    """The (nominal, numeric) columns of a ``"mixed_nb"`` state of n_features_in ``d`` whose
    Gaussian part has ``gd`` features (None: neither has learned yet).

    Raises:
        ValueError: ``d`` is not an int in [1, nominal + gd], or does not match the Gaussian part.
    """
    if (d is None) != (gd is None):
        raise ValueError("invalid mixed_nb state: n_features_in does not match the Gaussian part")
    if d is None:
        return None
    if type(d) is not int or not 1 <= d <= len(nominal_attributes or ()) + gd:  # before building range(d)
        raise ValueError(f"invalid mixed_nb state: n_features_in {d!r}")
    nominal, numeric = split_columns(nominal_attributes, d)
    if (len(numeric) or 1) != gd:
        raise ValueError("invalid mixed_nb state: n_features_in does not match the Gaussian part")
    return nominal, numeric
