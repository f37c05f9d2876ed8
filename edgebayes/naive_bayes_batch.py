"""GaussianNB's batch paths in numpy: the state after a run of updates, probabilities of many rows.

`merge` computes, in a few vectorised passes, exactly the final state of the per-sample rule of
`edgebayes.naive_bayes_kernel` (docs/design.md 2.1) over rows in order, as a weighted mixture of
the old estimate and the rows; `proba_rows` is the kernel's `proba` for many rows. Both work in
chunks of `CHUNK` rows, which bounds the temporaries to a few MB.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

from edgebayes.base import MAX_ABS_X, check_label
from edgebayes.naive_bayes_kernel import _LOG_2PI, far_proba

__all__ = ["CHUNK", "by_class", "check_rows", "drop_zero_weights", "encode", "merge", "mixture_weights",
           "proba_rows"]

#: Rows per numpy pass in the batch methods: bounds the temporaries to a few MB.
CHUNK = 65536
_INF = math.inf


def _rates(before: np.ndarray, W: np.ndarray, top: float, log_keep: float) -> np.ndarray:
    """`edgebayes.naive_bayes_kernel.update_rate` element-wise (0 where the weight is 0)."""
    t = np.clip(top - before, 0.0, W)
    s = -np.expm1((W - t) * log_keep)
    den = before + t
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 0, (t + before * s) / np.where(den > 0, den, 1.0), 0.0)
    return np.minimum(r, 1.0)


def mixture_weights(n0, W: np.ndarray, top: float, log_keep: float):
    """Weights of the old estimate and of each row after a run of updates (docs/design.md 2.1).

    Updating with rates r_1..r_n mixes the old distribution and the rows: the old one keeps
    a0 = prod(1 - r_i), row i keeps a_i = r_i prod_{t>i}(1 - r_t). ``n0`` is the weight seen
    before (scalar or (d,)), ``W`` the row weights, (n, 1) or (n, d) (0 = missing).

    Returns:
        ``(a0, A, n_after)`` shaped like ``n0``, ``W`` and ``n0``.
    """
    n_after = n0 + W.sum(axis=0)
    if top == _INF:  # exact mode: a_i = w_i / n, the offline weights
        safe = np.where(n_after > 0, n_after, 1.0)
        return n0 / safe, W / safe, n_after
    before = n0 + (np.cumsum(W, axis=0) - W)
    r = _rates(before, W, top, log_keep)
    with np.errstate(divide="ignore"):
        log_keep_i = np.log1p(-r)  # -inf where r == 1 (an estimate's first sample)
    tail = np.cumsum(log_keep_i[::-1], axis=0)[::-1]  # sum over t >= i
    later = np.zeros_like(tail)
    later[:-1] = tail[1:]  # sum over t > i, without subtracting (-inf - -inf)
    return np.exp(tail[0]), r * np.exp(later), n_after


def _column_sums(A: np.ndarray, M: np.ndarray) -> np.ndarray:
    """sum_i A[i, j] M[i, j] for A of shape (n, 1) (one BLAS call) or (n, d)."""
    return A[:, 0] @ M if A.shape[1] == 1 else np.einsum("ij,ij->j", A, M)


def merge(n0, mu0, var0, X, w, top, log_keep, has_nan=True):
    """Counts, means and variances (arrays (d,)) after learning the rows of ``X`` in order.

    Exactly the final state of the sequential rule, computed as a weighted mixture around a
    reference (the old mean, or a feature's first value) so that constant features stay exact.
    ``has_nan=False`` promises that ``X`` holds no NaN (skips a pass).
    """
    n, d = X.shape
    nan = np.isnan(X) if has_nan else None
    has_nan = has_nan and bool(nan.any())
    wcol = np.ones((n, 1)) if w is None else w[:, None]
    if has_nan:
        W = wcol * ~nan
    elif np.all(n0 == n0[0]):
        W, n0 = wcol, n0[:1]  # one count for every feature: rates per row only
    else:
        W = np.repeat(wcol, d, axis=1)
    a0, A, n_after = mixture_weights(n0, W, top, log_keep)
    if has_nan:
        first = X[np.argmax(~nan, axis=0), np.arange(d)]
        ref = np.where(n0 > 0, mu0, np.where(np.isnan(first), 0.0, first))
    else:
        ref = np.where(n0 > 0, mu0, X[0])
    D = X - ref
    if has_nan:
        D[nan] = 0.0
    mean = ref + a0 * (mu0 - ref) + _column_sums(A, D)
    D -= mean - ref
    D *= D
    var = a0 * (var0 + (mu0 - mean) ** 2) + _column_sums(A, D)
    return np.broadcast_to(n_after, mu0.shape).copy(), mean, var


def by_class(X: np.ndarray, codes: np.ndarray, w, K: int):
    """Yield ``(k, rows, weights)`` for each class k of ``codes`` (class indices < K) with rows,
    its rows of ``X`` in their order (``weights`` None when ``w`` is None)."""
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=K))])
    Xs, ws = X[order], (None if w is None else w[order])
    for k in range(K):
        lo, hi = bounds[k], bounds[k + 1]
        if lo < hi:
            yield k, Xs[lo:hi], None if ws is None else ws[lo:hi]


def check_rows(X, d: int | None, learning: bool = False) -> np.ndarray:
    """``X`` as a float64 array (n, d) (any d >= 1 when ``d`` is None).

    Raises:
        ValueError: not numbers, wrong shape, +/-inf, or (``learning``) a magnitude above
            `edgebayes.base.MAX_ABS_X`.
    """
    X = np.asarray(X)
    if X.size == 0 and X.ndim < 2:
        return np.empty((0, d or 0))
    if X.dtype.kind not in "fiub":
        raise ValueError(f"X must hold numbers, got dtype {X.dtype}")
    X = X.astype(np.float64, copy=False)
    if X.ndim != 2 or (d is not None and X.shape[1] != d) or (learning and X.shape[1] == 0):
        raise ValueError(f"X must have shape (n, {d or 'n_features'}), got {X.shape}")
    if np.isinf(X).any():
        raise ValueError("X holds +/-inf: features must be finite (NaN marks a missing value)")
    if learning and (np.abs(X) > MAX_ABS_X).any():
        raise ValueError(f"X holds a value out of range: learning takes |x| <= {MAX_ABS_X:g}")
    return X


def drop_zero_weights(X: np.ndarray, labels: list, w: np.ndarray) -> tuple:
    """``(X, labels, w)`` without the rows of weight 0, whose labels are checked
    (`edgebayes.base.check_label`, ValueError) but not learned; ``w`` None when every weight
    left is 1."""
    keep = w > 0
    if not keep.all():
        for v, k in zip(labels, keep.tolist()):
            if not k:
                check_label(v)
        X, w = X[keep], w[keep]
        labels = [v for v, k in zip(labels, keep.tolist()) if k]
    return X, labels, None if np.all(w == 1.0) else w


def encode(index: dict, labels: list, new_label) -> tuple[np.ndarray, list]:
    """Class indices of ``labels`` (``index``: label -> index, new labels numbered after it)
    and the new labels in order of first appearance, each as ``new_label(label)`` returns it.

    Raises:
        ValueError: a None, NaN or unhashable label (``new_label`` raises for the first two).
    """
    try:
        codes = list(map(index.get, labels))
    except TypeError:  # an unhashable label: find it and say which
        for v in labels:
            check_label(v)
    if None not in codes:
        return np.array(codes, dtype=np.intp), []
    new: dict = {}
    for v in dict.fromkeys(labels):
        if v not in index:
            y = new_label(v)
            if y not in index and y not in new:
                new[y] = len(index) + len(new)
    lookup = {**index, **new}
    return np.array([lookup[v] for v in labels], dtype=np.intp), list(new)


def _matrix(a: array, d: int) -> np.ndarray:
    """A flat buffer of rows of ``d`` doubles as a float64 (rows, d) copy."""
    return np.array(a, dtype=np.float64).reshape(-1, d)


def proba_rows(X: np.ndarray, priors: array, counts: array, means: array, variances: array,
               eps: float) -> np.ndarray:
    """The kernel's `proba` of every row of a checked ``X`` (n, d), float64 (n, K), over the
    buffers of K classes (``priors`` (K,); ``counts``, ``means``, ``variances`` (K * d,))."""
    out = np.empty((len(X), len(priors)))
    for start in range(0, len(X), CHUNK):
        out[start:start + CHUNK] = _proba_chunk(X[start:start + CHUNK], priors, counts, means, variances, eps)
    return out


def _proba_chunk(X, priors, counts, means, variances, eps) -> np.ndarray:
    nan = np.isnan(X)
    has_nan = bool(nan.any())
    present = (~nan).astype(float)
    n, K = len(X), len(priors)
    C, Q = np.empty((n, K)), np.empty((n, K))
    cm, mm, vm = (_matrix(a, X.shape[1]) for a in (counts, means, variances))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_p = np.log(np.array(priors))
        for k in range(K):
            v = vm[k] + eps
            seen = cm[k] > 0
            inv = np.where(seen, 1.0 / v, 0.0)
            half_log = np.where(seen, 0.5 * (_LOG_2PI + np.log(v)), 0.0)
            D = X - mm[k]
            if not seen.all():
                D[:, ~seen] = 0.0
            if has_nan:
                D[nan] = 0.0
                norm = present @ half_log
            else:
                norm = half_log.sum()
            C[:, k] = log_p[k] - norm
            Q[:, k] = (D * D) @ inv
        jll = C - 0.5 * (Q - Q.min(axis=1, keepdims=True))  # shifted as in the kernel's proba
        top = jll.max(axis=1, keepdims=True)
    far = ~(top[:, 0] > -np.inf)  # every squared distance overflowed: the limit, by far_proba
    top[far] = 0.0
    with np.errstate(invalid="ignore"):
        P = np.exp(jll - top)
        P /= P.sum(axis=1, keepdims=True)
    for i in np.flatnonzero(far):
        P[i] = far_proba(priors, counts, means, variances, eps, X[i].tolist())
    return P
