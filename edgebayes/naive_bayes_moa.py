"""MOA's naive Bayes rule: the per-attribute factors and the vote of `MixedNB(scoring="moa")`.

MOA's ``bayes.NaiveBayes`` (Kirkby, MOA 2007-, ``doNaiveBayesPrediction``) scores class k by

    vote_k = P(k) * prod_j p_j(x_j | k)          (in attribute order, in floating point, no logs)

skipping missing values, and predicts the first class of largest vote (``Utils.maxIndex``). Its
factors, as ``NominalAttributeClassObserver`` and ``GaussianNumericAttributeClassObserver`` /
``GaussianEstimator`` compute them:

- nominal: (n_kv + 1) / (n_k + V_k), V_k one more than the largest value code class k has seen
  (the length of its count vector, not the number of distinct values); an unseen value has
  n_kv = 0; a class that has seen no value of the attribute gives 0.
- numeric: the normal density with the class's mean and its sample variance (divided by
  n_k - 1; 0 when n_k <= 1); zero variance gives 1 where x equals the mean and 0 elsewhere; a
  class that has seen no value gives 0.

Underflow is kept: a product that reaches 0 for every class leaves the first declared class.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["gaussian_factors", "max_index", "nominal_factors", "predict", "value_bounds", "vote_proba", "votes"]

_SQRT_2PI = math.sqrt(2.0 * math.pi)  # MOA's GaussianEstimator.NORMAL_CONSTANT


def value_bounds(rows: list[list[float]], codes: list[float]) -> np.ndarray:
    """V_k of one nominal attribute for each class: one more than the largest value code of
    weight > 0 in the class (the length of MOA's count vector), 0 for a class without one.

    Args:
        rows: K lists of V floats, the weight of each seen value per class.
        codes: the V values seen (category codes, read as ints as MOA does).

    Returns:
        float64 (K,).
    """
    return np.array([max((int(c) + 1 for c, n in zip(codes, row) if n > 0.0), default=0) for row in rows],
                    dtype=float)


def nominal_factors(rows: list[list[float]], totals: list[float], bounds: list[float], col: int | None) -> list[float]:
    """MOA's P(v | k) of one nominal attribute's value, per class.

    Args:
        rows: K lists of V floats, the weight of each seen value per class.
        totals: K floats, each row's sum (n_k).
        bounds: K floats, V_k: one more than the largest value code (read as an int, as MOA
            does) of weight > 0 in the class.
        col: the value's column in ``rows``, None for a value no class has seen.

    Returns:
        K floats.
    """
    return [0.0 if n <= 0.0 else ((row[col] if col is not None else 0.0) + 1.0) / (n + top)
            for row, n, top in zip(rows, totals, bounds)]


def gaussian_factors(x: np.ndarray, counts: np.ndarray, means: np.ndarray, variances: np.ndarray) -> np.ndarray:
    """MOA's GaussianEstimator.probabilityDensity of each numeric value, per class.

    Args:
        x: float64 (d,), NaN = missing (factor 1: the attribute is skipped).
        counts, means, variances: float64 (K, d), the weight of present values, their mean and
            population variance per class (`GaussianNB.counts_`, ``means_``, ``variances_``).

    Returns:
        float64 (K, d).
    """
    with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
        sample = np.where(counts > 1.0, variances * counts / (counts - 1.0), 0.0)
        sd = np.sqrt(sample)
        diff = x - means
        dens = (1.0 / (_SQRT_2PI * sd)) * np.exp(-(diff * diff / (2.0 * sd * sd)))
    point = (x == means).astype(float)
    p = np.where(counts > 0.0, np.where(sd > 0.0, dens, point), 0.0)
    return np.where(np.isnan(x), 1.0, p)


def max_index(votes: list[float]) -> int:
    """MOA's ``Utils.maxIndex``: the first index whose vote is greater than every earlier one
    (index 0 when every vote is 0, or when the first is NaN)."""
    best, top = 0, votes[0] if votes else 0.0
    for i in range(1, len(votes)):
        if votes[i] > top:
            best, top = i, votes[i]
    return best


def votes(xs: list, prior: list, numeric: list[int], gaussian: tuple, nominal: list[int], lists: tuple) -> list:
    """MOA's vote of each class for the checked sample ``xs``: the prior times each attribute's
    factor, multiplied in attribute order (``doNaiveBayesPrediction``).

    Args:
        xs: d floats, NaN = missing.
        prior: K floats, P(k).
        numeric, nominal: the column indices of each kind.
        gaussian: ``(counts, means, variances)``, float64 (K, len(numeric)) each (`gaussian_factors`).
        lists: ``(values, counts, totals, bounds)`` per nominal feature: value -> column, K
            lists of V weights, K totals, the `value_bounds` array (K,).

    Returns:
        K floats.
    """
    values, counts, totals, bounds = lists
    F = np.ones((len(prior), len(xs)))
    if numeric:
        F[:, numeric] = gaussian_factors(np.array([xs[j] for j in numeric]), *gaussian)
    for i, j in enumerate(nominal):
        v = xs[j]
        if v == v:
            F[:, j] = nominal_factors(counts[i], totals[i], bounds[i].tolist(), values[i].get(v))
    return [math.prod(row, start=p) for p, row in zip(prior, F.tolist())]


def vote_proba(votes: list[float]) -> list[float]:
    """The votes normalised: NaN read as 0, infinite votes share 1, uniform when all are 0."""
    votes = [v if v == v else 0.0 for v in votes]
    if math.inf in votes:
        votes = [1.0 if v == math.inf else 0.0 for v in votes]
    s = sum(votes)
    return [v / s for v in votes] if s > 0.0 else [1.0 / len(votes)] * len(votes)


def predict(labels: list, votes: list[float], header: list | None):
    """MOA's ``Utils.maxIndex`` over the ``votes`` of ``labels`` (a learner's classes) in the
    order of ``header`` (MOA's class attribute; its labels not learned yet vote 0), then the
    other labels in their order."""
    scores = dict(zip(labels, votes))
    order = list(header or ()) + [c for c in labels if c not in set(header or ())]
    return order[max_index([scores.get(c, 0.0) for c in order])]
