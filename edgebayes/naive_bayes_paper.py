"""``MixedNB(scoring="paper_sum")``: Artiemjew and Idzikowski's (2019) sum of frequencies.

Section 2, eq. 2 as section 2.1 computes it: Param_k = P(d = k) * sum_m P(b_m = a_m(v) | d = k),
with the zero frequencies of its worked example (test object x2): where value v of a nominal
feature has frequency 0 in some class, the counter of every class that holds v goes up by one.
A numeric feature adds its Gaussian density to the sum (section 2, numerical data).
"""

from __future__ import annotations

import numpy as np

from edgebayes.naive_bayes_kernel import _LOG_2PI

__all__ = ["density_sums", "frequency_table", "normalised_scores"]


def frequency_table(counts: list, totals: list, V: int) -> np.ndarray:
    """P(v | k) of one nominal feature of V values, float64 (K, V + 1), the counter increment
    of the paper's section 2.1 applied; the last column (unseen value) is 0.

    Args:
        counts: K lists of V floats, the weight of each value per class.
        totals: K floats, n_k.
    """
    K = len(totals)
    C = np.array(counts, dtype=float).reshape(K, V)
    n = np.array(totals, dtype=float)[:, None]
    out = np.zeros((K, V + 1))
    held = C > 0.0  # a class holding v has n_k >= n_kv > 0
    # the paper's x2: "we increase counter by 1 because P(a1 | c = 4) = 0"
    bump = held & (~held).any(axis=0)
    out[:, :V] = np.where(held, (C + bump) / np.where(n > 0.0, n, 1.0), 0.0)
    return out


def density_sums(X: np.ndarray, means: np.ndarray, variances: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per row and class, the sum over the numeric features of N(x_j; mu_kj, v_kj), float64 (n, K).

    Args:
        X: float64 (n, d), the numeric columns (NaN = missing: adds nothing).
        means, variances, counts: float64 (K, d), per class (variances smoothed); a class that
            never saw a feature (count 0) adds nothing for it.
    """
    Xn = X[:, None, :]  # (n, 1, d) against (K, d)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        dens = np.exp(-0.5 * ((Xn - means) ** 2 / variances + _LOG_2PI + np.log(variances)))
    use = (counts > 0.0) & ~np.isnan(Xn)
    return np.where(use, dens, 0.0).sum(axis=2)


def normalised_scores(S: np.ndarray) -> np.ndarray:
    """The scores ``S`` (n, K) normalised per row; uniform where every Param_k is 0."""
    total = S.sum(axis=1, keepdims=True)
    return np.where(total > 0.0, S / np.where(total > 0.0, total, 1.0), 1.0 / S.shape[1])
