"""Gaussian naive Bayes learned one sample at a time, exactly or with a constant learning rate.

Seed paper 001 (Wu and Xiong 2023): Algorithm 1 updates the prior, mean and standard deviation
of each class so that they equal the offline estimates on the same samples; Algorithm 2 replaces
the step 1/(i+1) by a constant learning rate alpha so that recent samples keep weight alpha
(concept drift). DESIGN.md 2.1 folds both into one update rule, used here for the priors, for the
per-class statistics and for the all-class per-feature statistics that scale ``var_smoothing``:

    r = max(alpha, 1/n)      mean: d = x - mu ; mu <- mu + r d ;  variance: var <- (1 - r)(var + r d^2)

with n the weight seen by that estimate including this sample (alpha = 0 is Algorithm 1). Each
update mixes the old distribution (weight 1 - r) with a point mass at x (weight r), so the
variance can never go negative (casebook C03) and the first sample sets the estimate (r = 1,
casebook C04/C05). A sample weight w equals w repeated updates (see `_rate`).
"""

from __future__ import annotations

import math
import numbers
import sys

import numpy as np

from edgebayes.base import (
    FLOAT_IN_LIST_BYTES,
    LIST_BYTES,
    MAX_ABS_X,
    STATE_ERRORS,
    ClassLimitError,
    Learner,
    as_floats,
    check_finite,
    check_label,
    check_weight,
    check_weights,
)
from edgebayes.sizes import insert_bytes

__all__ = ["GaussianNB"]

_LOG_2PI = math.log(2.0 * math.pi)
#: Floor of the variance smoothing: the smallest positive normal float64, so that a model whose
#: features have all been constant so far (zero variance everywhere) still has finite densities.
EPS_FLOOR = sys.float_info.min
#: Rows per numpy pass in the batch methods: bounds the temporaries to a few MB.
_CHUNK = 65536
_INF = math.inf


def update_rate(m: float, w: float, top: float, log_keep: float) -> float:
    """The rate of one update of weight ``w`` on an estimate that has seen weight ``m``.

    DESIGN.md 2.1 with the rule applied to w unit steps: the steps that take the count to at
    most ``top`` = floor(1/alpha) have rate 1/n (their retentions telescope to m/(m+t)), the
    others alpha (retention (1-alpha) each), so the total rate is
    1 - m/(m+t) (1-alpha)^(w-t) with t = clip(top - m, 0, w). ``top`` is inf in the exact mode
    (rate w/(m+w)); ``log_keep`` = log(1 - alpha). For w = 1 this is max(alpha, 1/n); for any
    weights, learning w1 then w2 equals learning w1 + w2.
    """
    n = m + w
    if n <= top:
        return w / n
    if m >= top:
        return -math.expm1(w * log_keep)
    t = top - m
    return (t - m * math.expm1((w - t) * log_keep)) / top


def _rates(before: np.ndarray, W: np.ndarray, top: float, log_keep: float) -> np.ndarray:
    """`update_rate` element-wise (0 where the weight is 0)."""
    t = np.clip(top - before, 0.0, W)
    s = -np.expm1((W - t) * log_keep)
    den = before + t
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 0, (t + before * s) / np.where(den > 0, den, 1.0), 0.0)
    return np.minimum(r, 1.0)


def _mixture_weights(n0, W: np.ndarray, top: float, log_keep: float):
    """Weights of the old estimate and of each row after a run of updates (DESIGN.md 2.1).

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


def _merge(n0, mu0, var0, X, w, top, log_keep, has_nan=True):
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
    a0, A, n_after = _mixture_weights(n0, W, top, log_keep)
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


def _update(cnt, mu, var, xs, has_nan, dense, w, top, log_keep):
    """One sample into per-feature counts, means and variances (lists): DESIGN.md 2.1.

    Returns ``(cnt, mu, var, dense)``; ``dense`` = every feature has the same count, so that the
    common case computes one rate and rebuilds the lists with comprehensions.
    """
    if dense and not has_nan:
        m = cnt[0]
        r = update_rate(m, w, top, log_keep)
        q = 1.0 - r
        ds = [a - b for a, b in zip(xs, mu)]
        mu = [b + r * e for b, e in zip(mu, ds)]
        var = [q * (s + r * e * e) for s, e in zip(var, ds)]
        return [m + w] * len(xs), mu, var, True
    last = r = None
    for j, a in enumerate(xs):
        if a != a:
            continue
        m = cnt[j]
        if m != last:
            last, r = m, update_rate(m, w, top, log_keep)
        e = a - mu[j]
        mu[j] += r * e
        var[j] = (1.0 - r) * (var[j] + r * e * e)
        cnt[j] = m + w
    return cnt, mu, var, cnt.count(cnt[0]) == len(cnt)


def _shape_bytes(n_classes: int, d: int, cache: bool) -> int:
    """Bytes of the statistics lists of ``n_classes`` classes of ``d`` features (and of the
    prediction cache if ``cache``): floats in lists and list headers."""
    floats = n_classes * (3 * d + 1) + 3 * d
    lists = 3 * n_classes + 6
    if cache:
        floats += n_classes * (d + 1)
        lists += n_classes + 1
    return FLOAT_IN_LIST_BYTES * floats + LIST_BYTES * lists


class GaussianNB(Learner):
    """Incremental Gaussian naive Bayes: exact (seed 001, Algorithm 1) or constant-rate (Algorithm 2).

    Args:
        learning_rate: None (or 0) for the exact mode: priors n_k/n, means and population
            variances equal the offline estimates on the same samples. A float alpha in (0, 1)
            (the paper uses 0.01) for the constant rate: each estimate moves by
            max(alpha, 1/n) towards a new sample, so old samples fade as (1 - alpha)^age.
        var_smoothing: added to every variance at prediction, times the largest per-feature
            variance over all classes (as scikit-learn; that variance follows the same rule, so
            it forgets in the learning-rate mode), floored at `EPS_FLOOR` so that constant
            features and one-sample classes give finite log-densities (casebook C01).
        max_size_bytes: hard bound on `memory_bytes` (None = unbounded), at least the bytes
            of the empty model: a new class that would take the model past it (prediction
            cache included) is refused with `edgebayes.base.ClassLimitError`, the model
            unchanged. Cost per class: (4 n_features + 2) floats of 32 bytes (64-bit
            CPython), four list headers, its label and index entry.

    Prediction (DESIGN.md 2.1): argmax_k log P(k) + sum_j log N(x_j; mu_kj, var_kj + eps), in log
    space, probabilities by log-sum-exp, so they sum to 1 and hold no NaN even when every density
    underflows (casebook C08, C13). A NaN feature value is a missing value, skipped in learning
    and in the likelihood; a class without any value of a feature skips that feature (as River).
    When x is so far out that every class's log-likelihood is -inf, the probabilities are the
    limit as x moves away: the classes with the smallest scaled squared distance share them.

    Attributes:
        classes_: labels in order of first appearance (columns of `predict_proba_many`).
        n_features_in_: number of features, fixed by the first sample (None before).

    Per-sample methods keep the statistics in Python lists: for a handful of features plain
    floats beat numpy's per-call overhead (DESIGN.md 3); batch methods use numpy and give the
    same model (to rounding) as the per-sample path. Learning refuses features of magnitude
    above `edgebayes.base.MAX_ABS_X` (1e100), whose squares could overflow the variance;
    prediction takes any finite x.

    Example:
        >>> nb = GaussianNB()
        >>> for x, y in [([1.0, 2.0], "a"), ([1.2, 1.8], "a"), ([3.0, 0.5], "b"), ([2.6, 0.9], "b")]:
        ...     nb.learn_one(x, y)
        >>> nb.predict_one([2.9, 0.6])
        'b'
        >>> nb.predict_proba_one([1.1, 1.9])["a"] > 0.999
        True
    """

    def __init__(self, learning_rate: float | None = None, var_smoothing: float = 1e-9,
                 max_size_bytes: int | None = None):
        if learning_rate is not None and (
            isinstance(learning_rate, bool)
            or not isinstance(learning_rate, numbers.Real)
            or not 0.0 <= learning_rate < 1.0
        ):
            raise ValueError(f"learning_rate must be None or in [0, 1), got {learning_rate!r}")
        if (
            isinstance(var_smoothing, bool)
            or not isinstance(var_smoothing, numbers.Real)
            or not 0.0 <= var_smoothing < _INF
        ):
            raise ValueError(f"var_smoothing must be finite and >= 0, got {var_smoothing!r}")
        self.learning_rate = learning_rate
        self.var_smoothing = var_smoothing
        alpha = float(learning_rate or 0.0)
        self._top = math.floor(1.0 / alpha) if alpha > 0 else _INF
        self._log_keep = math.log1p(-alpha)
        self.classes_: list = []
        self.n_features_in_: int | None = None
        self._index: dict = {}
        self._n = 0.0  # total weight learned
        self._priors: list[float] = []
        self._counts: list[list[float]] = []  # per class, per feature: weight of present values
        self._means: list[list[float]] = []
        self._vars: list[list[float]] = []
        self._dense: list[bool] = []
        self._fcounts: list[float] = []  # per feature, all classes: scales var_smoothing
        self._fmeans: list[float] = []
        self._fvars: list[float] = []
        self._fdense = True
        self._eps = EPS_FLOOR
        self._cache = None  # per class (log prior - normaliser, var + eps, all features seen)
        self.max_size_bytes = max_size_bytes
        if max_size_bytes is not None and (
            isinstance(max_size_bytes, bool)
            or not isinstance(max_size_bytes, numbers.Integral)
            or max_size_bytes < self.memory_bytes()
        ):
            raise ValueError(f"max_size_bytes must be None or an int >= {self.memory_bytes()} "
                             f"(the empty model), got {max_size_bytes!r}")

    # ------------------------------------------------------------------ learning

    def learn_one(self, x, y, w: float = 1.0) -> None:
        """Learn one sample with the rule of DESIGN.md 2.1.

        Args:
            x: 1-D sequence of n_features_in_ floats (NaN = missing).
            y: label (str or int; a new one adds a class).
            w: sample weight >= 0; equals w repeated updates; 0 leaves the model unchanged.

        Raises:
            ValueError: bad x (length, non-numeric, +/-inf, magnitude above
                `edgebayes.base.MAX_ABS_X`), None/NaN/unhashable label, bad weight (see
                `edgebayes.base.check_weight`). The model is unchanged.
            ClassLimitError: (a ValueError) a new class ``max_size_bytes`` cannot hold;
                the model is unchanged.
        """
        if type(w) is not float or w != 1.0:  # the default skips the check; True does not
            w = check_weight(w)
        xs, has_nan = as_floats(x, self.n_features_in_, learning=True)
        try:
            k = self._index.get(y)
        except TypeError:
            k = None
        if k is None:
            y = self._new_label(y)
        if w == 0.0:
            return
        if k is None:
            self._check_room([y], len(xs))
            k = self._add_class(y, len(xs))
        top, lk = self._top, self._log_keep
        r0 = update_rate(self._n, w, top, lk)
        keep = 1.0 - r0
        priors = [p * keep for p in self._priors]
        priors[k] += r0
        self._priors = priors
        self._n += w
        self._counts[k], self._means[k], self._vars[k], self._dense[k] = _update(
            self._counts[k], self._means[k], self._vars[k], xs, has_nan, self._dense[k], w, top, lk
        )
        self._fcounts, self._fmeans, self._fvars, self._fdense = _update(
            self._fcounts, self._fmeans, self._fvars, xs, has_nan, self._fdense, w, top, lk
        )
        self._eps = max(self.var_smoothing * max(self._fvars), EPS_FLOOR)
        self._cache = None

    def learn_many(self, X, y, w=None) -> None:
        """Learn the rows of ``X`` in order: the same model as `learn_one` row by row (to rounding).

        Args:
            X: array-like (n, n_features_in_) of floats (NaN = missing).
            y: n labels.
            w: None or n sample weights >= 0.

        Vectorised: the final state of the sequential rule is a weighted mixture of the old
        estimate and the rows (`_mixture_weights`), per class and in chunks of `_CHUNK` rows.

        Raises:
            ValueError: as `learn_one`, or X and y of different lengths. The model is unchanged.
        """
        X = self._check_X(X, learning=True)
        labels = y.tolist() if isinstance(y, np.ndarray) else list(y)
        if len(labels) != len(X):
            raise ValueError(f"X has {len(X)} rows but y has {len(labels)} labels")
        if w is not None:
            w = check_weights(w, len(X))
            keep = w > 0
            if not keep.all():  # zero weight: validated, not learned (as learn_one)
                for v, k in zip(labels, keep.tolist()):
                    if not k:
                        check_label(v)
                X, w = X[keep], w[keep]
                labels = [v for v, k in zip(labels, keep.tolist()) if k]
            if np.all(w == 1.0):
                w = None
        codes, new = self._encode(labels)
        if not len(X):
            return
        self._check_room(new, X.shape[1])
        for label in new:
            self._add_class(label, X.shape[1])
        has_nan = bool(np.isnan(X).any())
        for start in range(0, len(X), _CHUNK):
            stop = start + _CHUNK
            self._learn_chunk(X[start:stop], codes[start:stop], None if w is None else w[start:stop], has_nan)

    def _learn_chunk(self, X, codes, w, has_nan):
        top, lk = self._top, self._log_keep
        K = len(self.classes_)
        wcol = np.ones((len(X), 1)) if w is None else w[:, None]
        a0, A, n_after = _mixture_weights(np.array([self._n]), wcol, top, lk)
        priors = a0[0] * np.array(self._priors) + np.bincount(codes, weights=A[:, 0], minlength=K)
        self._priors = priors.tolist()
        self._n = float(n_after[0])
        order = np.argsort(codes, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=K))])
        Xs, ws = X[order], (None if w is None else w[order])
        for k in range(K):
            lo, hi = bounds[k], bounds[k + 1]
            if lo == hi:
                continue
            cnt, mu, var = _merge(
                np.array(self._counts[k]), np.array(self._means[k]), np.array(self._vars[k]),
                Xs[lo:hi], None if ws is None else ws[lo:hi], top, lk, has_nan,
            )
            self._counts[k], self._means[k], self._vars[k] = cnt.tolist(), mu.tolist(), var.tolist()
            self._dense[k] = bool(np.all(cnt == cnt[0]))
        cnt, mu, var = _merge(
            np.array(self._fcounts), np.array(self._fmeans), np.array(self._fvars), X, w, top, lk, has_nan
        )
        self._fcounts, self._fmeans, self._fvars = cnt.tolist(), mu.tolist(), var.tolist()
        self._fdense = bool(np.all(cnt == cnt[0]))
        self._eps = max(self.var_smoothing * max(self._fvars), EPS_FLOOR)
        self._cache = None

    def _new_label(self, y):
        """A label not seen yet, validated (ValueError) and as a plain Python value."""
        check_label(y)
        if isinstance(y, np.generic):
            y = y.item()
        return y

    def has_room(self, x, y) -> bool:
        """Whether `learn_one` would take label ``y`` within ``max_size_bytes`` (always True
        without a bound or for a known label); changes nothing. ``x``: the sample's features
        (its length sizes the first class)."""
        if self.max_size_bytes is None:
            return True
        check_label(y)
        if y in self._index:
            return True
        return self.planned_bytes([y], self.n_features_in_ or len(x)) <= self.max_size_bytes

    def _check_room(self, labels: list, d: int) -> None:
        """ClassLimitError unless the new ``labels`` fit ``max_size_bytes``."""
        if self.max_size_bytes is None or not labels:
            return
        need = self.planned_bytes(labels, d)
        if need > self.max_size_bytes:
            raise ClassLimitError(
                f"class {labels[0]!r} refused: max_size_bytes={self.max_size_bytes} holds "
                f"{len(self.classes_)} classes of {d} features, {len(labels)} more need {need} bytes"
            )

    def _add_class(self, y, d: int) -> int:
        if self.n_features_in_ is None:
            self.n_features_in_ = d
            self._fcounts, self._fmeans, self._fvars = [0.0] * d, [0.0] * d, [0.0] * d
        self._index[y] = len(self.classes_)
        self.classes_.append(y)
        self._priors.append(0.0)
        self._counts.append([0.0] * d)
        self._means.append([0.0] * d)
        self._vars.append([0.0] * d)
        self._dense.append(True)
        self._cache = None
        return len(self.classes_) - 1

    def _encode(self, labels: list) -> tuple[np.ndarray, list]:
        """Class indices of ``labels`` and the new labels in order of first appearance.

        Raises:
            ValueError: a None, NaN or unhashable label (nothing is registered).
        """
        index = self._index
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
                y = self._new_label(v)
                if y not in index and y not in new:
                    new[y] = len(index) + len(new)
        lookup = {**index, **new}
        return np.array([lookup[v] for v in labels], dtype=np.intp), list(new)

    def _check_X(self, X, learning: bool = False) -> np.ndarray:
        """``X`` as a float64 array (n, n_features_in_). Raises ValueError."""
        X = np.asarray(X)
        d = self.n_features_in_
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

    # ------------------------------------------------------------------ prediction

    def _class_cache(self):
        """Per class: log prior minus the normaliser, var + eps, and whether every feature has
        a value (the fast path). Rebuilt after learning."""
        cache = self._cache
        if cache is None:
            eps = self._eps
            d = self.n_features_in_
            cache = []
            for p, var, cnt in zip(self._priors, self._vars, self._counts):
                vs = [v + eps for v in var]
                prod = math.prod(vs)
                log_det = math.log(prod) if 0.0 < prod < _INF else sum(map(math.log, vs))
                log_p = math.log(p) if p > 0.0 else -_INF
                cache.append((log_p - 0.5 * (d * _LOG_2PI + log_det), vs, min(cnt) > 0.0))
            self._cache = cache
        return cache

    def _terms(self, xs: list, has_nan: bool) -> tuple[list, list]:
        """Per class: log P(k) - 0.5 sum_j log(2 pi v_kj), and sum_j (x_j - mu_kj)^2 / v_kj,
        with v = var + eps; the joint log-likelihood is the first minus half the second."""
        cs, qs = [], []
        for (c, vs, full), p, mu, cnt in zip(self._class_cache(), self._priors, self._means, self._counts):
            if full and not has_nan:
                cs.append(c)
                qs.append(sum([(a - b) * (a - b) / v for a, b, v in zip(xs, mu, vs)]))
                continue
            # missing values: only the features present in x and seen in this class count
            c = math.log(p) if p > 0.0 else -_INF
            q = 0.0
            for a, b, v, n in zip(xs, mu, vs, cnt):
                if a == a and n > 0.0:
                    c -= 0.5 * (_LOG_2PI + math.log(v))
                    q += (a - b) * (a - b) / v
            cs.append(c)
            qs.append(q)
        return cs, qs

    def _far(self, xs: list) -> list:
        """Probabilities when every class's log-likelihood is -inf (x extremely far): the limit
        as x moves away, found with the squared distances scaled by 2^-1200."""
        scale = 2.0**-600
        eps = self._eps
        u, c = [], []
        for p, mu, var, cnt in zip(self._priors, self._means, self._vars, self._counts):
            ui = ci = 0.0
            for a, b, v, n in zip(xs, mu, var, cnt):
                if a == a and n > 0.0:
                    ui += (a * scale - b * scale) ** 2 / (v + eps)
                    ci -= 0.5 * (_LOG_2PI + math.log(v + eps))
            u.append(ui if p > 0.0 else _INF)
            c.append(ci + math.log(p) if p > 0.0 else -_INF)
        best = min(u)
        win = [k for k, ui in enumerate(u) if ui == best and c[k] > -_INF]
        top = max(c[k] for k in win)
        e = [math.exp(c[k] - top) if k in win else 0.0 for k in range(len(u))]
        s = sum(e)
        return [v / s for v in e]

    def joint_log_likelihood_one(self, x) -> dict:
        """log P(k) + sum_j log N(x_j; mu_kj, var_kj + eps) per class (empty before learning).

        Raises:
            ValueError: bad x (as `learn_one`).
        """
        if not self.classes_:
            return {}
        cs, qs = self._terms(*as_floats(x, self.n_features_in_))
        return {label: c - 0.5 * q for label, c, q in zip(self.classes_, cs, qs)}

    def predict_proba_one(self, x) -> dict:
        """Class probabilities {label: float} for ``x``, summing to 1 (empty before learning).

        Raises:
            ValueError: bad x (as `learn_one`).
        """
        if not self.classes_:
            return {}
        xs, has_nan = as_floats(x, self.n_features_in_)
        cs, qs = self._terms(xs, has_nan)
        # shift by the smallest squared distance: when it is huge (a variance at the floor),
        # the log priors would otherwise be absorbed and tied distances no longer tie
        q0 = min(qs)
        jll = [c - 0.5 * (q - q0) for c, q in zip(cs, qs)] if q0 < _INF else []
        top = max(jll, default=-_INF)
        if top == -_INF:
            return dict(zip(self.classes_, self._far(xs)))
        exp = math.exp
        e = [exp(v - top) for v in jll]
        s = sum(e)
        return dict(zip(self.classes_, [v / s for v in e]))

    def predict_proba_many(self, X) -> np.ndarray:
        """Class probabilities, float64 array (n, len(classes_)), columns in `classes_` order.

        Raises:
            ValueError: bad X (shape, non-numeric, +/-inf).
        """
        if not self.classes_:
            return np.zeros((len(X), 0))
        X = self._check_X(X)
        out = np.empty((len(X), len(self.classes_)))
        for start in range(0, len(X), _CHUNK):
            out[start:start + _CHUNK] = self._proba_chunk(X[start:start + _CHUNK])
        return out

    def _proba_chunk(self, X: np.ndarray) -> np.ndarray:
        nan = np.isnan(X)
        has_nan = bool(nan.any())
        present = (~nan).astype(float)
        eps = self._eps
        n, K = len(X), len(self.classes_)
        C, Q = np.empty((n, K)), np.empty((n, K))
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            log_p = np.log(np.array(self._priors))
            for k in range(len(self.classes_)):
                v = np.array(self._vars[k]) + eps
                seen = np.array(self._counts[k]) > 0
                inv = np.where(seen, 1.0 / v, 0.0)
                half_log = np.where(seen, 0.5 * (_LOG_2PI + np.log(v)), 0.0)
                D = X - np.array(self._means[k])
                if not seen.all():
                    D[:, ~seen] = 0.0
                if has_nan:
                    D[nan] = 0.0
                    norm = present @ half_log
                else:
                    norm = half_log.sum()
                C[:, k] = log_p[k] - norm
                Q[:, k] = (D * D) @ inv
            jll = C - 0.5 * (Q - Q.min(axis=1, keepdims=True))  # shifted as in predict_proba_one
            top = jll.max(axis=1, keepdims=True)
        far = ~(top[:, 0] > -np.inf)  # every squared distance overflowed: the limit, by _far
        top[far] = 0.0
        with np.errstate(invalid="ignore"):
            P = np.exp(jll - top)
            P /= P.sum(axis=1, keepdims=True)
        for i in np.flatnonzero(far):
            P[i] = self._far(X[i].tolist())
        return P

    def predict_many(self, X) -> list:
        """The most probable label of each row (None for every row before learning)."""
        if not self.classes_:
            return [None] * len(X)
        best = self.predict_proba_many(X).argmax(axis=1)
        return [self.classes_[k] for k in best.tolist()]

    # ------------------------------------------------------------------ inspection, state

    @property
    def class_prior_(self) -> np.ndarray:
        """Priors P(k), float64 (n_classes,)."""
        return np.array(self._priors, dtype=float)

    @property
    def means_(self) -> np.ndarray:
        """Per-class feature means, float64 (n_classes, n_features)."""
        return np.array(self._means, dtype=float).reshape(len(self.classes_), self.n_features_in_ or 0)

    @property
    def variances_(self) -> np.ndarray:
        """Per-class population variances (before smoothing), float64 (n_classes, n_features)."""
        return np.array(self._vars, dtype=float).reshape(len(self.classes_), self.n_features_in_ or 0)

    @property
    def counts_(self) -> np.ndarray:
        """Per-class weight of present values of each feature, float64 (n_classes, n_features)."""
        return np.array(self._counts, dtype=float).reshape(len(self.classes_), self.n_features_in_ or 0)

    @property
    def epsilon_(self) -> float:
        """The variance added at prediction: var_smoothing x max feature variance, >= EPS_FLOOR."""
        return self._eps

    @property
    def n_samples_seen_(self) -> float:
        """Total sample weight learned."""
        return self._n

    def memory_bytes(self) -> int:
        """Bytes held, counted from the shapes: per float in a list a pointer and a float object
        (32 bytes on 64-bit CPython), per list its header (56), the label index and labels,
        and the prediction cache. Sizes are this platform's (armhf: 20 and 28)."""
        labels = sum(sys.getsizeof(c) for c in self.classes_)
        return _shape_bytes(len(self.classes_), self.n_features_in_ or 0, self._cache is not None) + int(
            sys.getsizeof(self) + sys.getsizeof(self._index) + labels)

    def planned_bytes(self, labels: list, d: int) -> int:
        """`memory_bytes` once the new classes ``labels`` are added for x of ``d`` features,
        counting the prediction cache whether built or not (the most learning them can hold)."""
        held = sum(sys.getsizeof(c) for c in (*self.classes_, *labels))
        index = sys.getsizeof(self._index) + insert_bytes(self._index, labels)
        return _shape_bytes(len(self.classes_) + len(labels), d, True) + int(sys.getsizeof(self) + index + held)

    def state(self) -> dict:
        """Plain, msgpack-serialisable state with ``"kind": "gaussian_nb"`` (see `from_state`)."""
        return {
            "kind": "gaussian_nb",
            "learning_rate": self.learning_rate,
            "var_smoothing": self.var_smoothing,
            "n_features_in": self.n_features_in_,
            "classes": list(self.classes_),
            "n": self._n,
            "priors": list(self._priors),
            "counts": [list(r) for r in self._counts],
            "means": [list(r) for r in self._means],
            "variances": [list(r) for r in self._vars],
            "feature_counts": list(self._fcounts),
            "feature_means": list(self._fmeans),
            "feature_variances": list(self._fvars),
            "max_size_bytes": self.max_size_bytes,
        }

    @classmethod
    def from_state(cls, state: dict) -> GaussianNB:
        """Rebuild the learner that `state` described (predictions identical, learning goes on).

        Raises:
            ValueError: not a gaussian_nb state, or a malformed one: a missing key, a value of
                the wrong type, inconsistent shapes, a bad label, a non-finite number, a
                negative count, prior or variance, or priors not summing to 1.
        """
        if not isinstance(state, dict) or state.get("kind") != "gaussian_nb":
            raise ValueError("not a gaussian_nb state")
        try:
            return cls._from_state(state)
        except STATE_ERRORS as exc:
            raise ValueError(f"invalid gaussian_nb state: {exc!r}") from None

    @classmethod
    def _from_state(cls, state: dict) -> GaussianNB:
        model = cls(state["learning_rate"], state["var_smoothing"], state.get("max_size_bytes"))  # absent before bounds
        classes = list(state["classes"])
        K, d = len(classes), state["n_features_in"]
        rows = [[float(v) for v in r] for key in ("counts", "means", "variances") for r in state[key]]
        feats = [[float(v) for v in state[key]] for key in ("feature_counts", "feature_means", "feature_variances")]
        priors = [float(p) for p in state["priors"]]
        n = float(state["n"])
        if (d is None) != (K == 0) or not (d is None or type(d) is int and d >= 1):
            raise ValueError(f"invalid gaussian_nb state: n_features_in {d!r} with {K} classes")
        if len(priors) != K or len(rows) != 3 * K or any(len(r) != d for r in rows + (feats if K else [])):
            raise ValueError("invalid gaussian_nb state: shapes do not match classes and n_features_in")
        for c in classes:
            check_label(c)
        if len({c: None for c in classes}) != K:
            raise ValueError("invalid gaussian_nb state: two classes are equal labels")
        check_finite("n", n, 0.0)
        check_finite("priors", priors, 0.0)
        if K and abs(math.fsum(priors) - 1.0) > 1e-6:
            raise ValueError(f"invalid gaussian_nb state: priors sum to {math.fsum(priors)}, not 1")
        # the bounds of learning (edgebayes.base.MAX_ABS_X): a mean or variance past them
        # would overflow at the next update
        bounds = ((0.0, _INF), (-MAX_ABS_X, MAX_ABS_X), (0.0, 4.0 * MAX_ABS_X * MAX_ABS_X))
        for name, rs, (low, high) in zip(("counts", "means", "variances"), (rows[:K], rows[K:2 * K], rows[2 * K:]), bounds):
            for r in rs:
                check_finite(name, r, low, high)
        if K:
            for name, r, (low, high) in zip(("feature_counts", "feature_means", "feature_variances"), feats, bounds):
                check_finite(name, r, low, high)
        model.classes_ = classes
        model._index = {c: k for k, c in enumerate(classes)}
        model.n_features_in_ = d
        model._n, model._priors = n, priors
        model._counts, model._means, model._vars = rows[:K], rows[K:2 * K], rows[2 * K:]
        model._dense = [r.count(r[0]) == len(r) for r in model._counts]
        if K:
            model._fcounts, model._fmeans, model._fvars = feats
            model._fdense = feats[0].count(feats[0][0]) == d
            model._eps = max(model.var_smoothing * max(model._fvars), EPS_FLOOR)
        return model
