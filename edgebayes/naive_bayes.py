"""Gaussian naive Bayes learned one sample at a time, exactly or with a constant learning rate.

Seed paper 001 (Wu and Xiong 2023): Algorithm 1 updates the prior, mean and standard deviation
of each class by Eqs. (8)-(10), with step 1/(i+1), so that they equal the offline estimates on
the same samples; Algorithm 2 replaces that step by a constant learning rate alpha, Eqs.
(12)-(14), so that recent samples keep weight alpha (concept drift). docs/design.md 2.1 folds both
into one update rule, used here for the priors, for the per-class statistics and for the
all-class per-feature statistics that scale ``var_smoothing``:

    r = max(alpha, 1/n)      mean: d = x - mu ; mu <- mu + r d ;  variance: var <- (1 - r)(var + r d^2)

with n the weight seen by that estimate including this sample (alpha = 0 is Algorithm 1). The
1/n of the first 1/alpha samples is a *warm-up*: each estimate is the plain average of its
samples until it has seen 1/alpha of them (100 at the paper's alpha = 0.01), and forgets only
after. ``warm_up=False`` is Algorithm 2 as the paper writes it: r = 1 for an estimate's first
sample (Eqs. (8)-(10) at i = 0: the first sample sets the estimate), alpha for every later one.
Each update mixes the old distribution (weight 1 - r) with a point mass at x (weight r), so the
variance can never go negative (docs/cases.md C03) and the first sample sets the estimate (r = 1,
docs/cases.md C04/C05). A sample weight w equals w repeated updates (see `update_rate`).
"""

from __future__ import annotations

import math
import numbers
import struct
import sys
from array import array

import numpy as np

from edgebayes._backend import choose
from edgebayes.base import (
    LIST_BYTES,
    MAX_ABS_X,
    STATE_ERRORS,
    ClassLimitError,
    Learner,
    as_floats,
    check_finite,
    check_label,
    check_size_bound,
    check_weight,
    check_weights,
)
from edgebayes.sizes import insert_bytes

__all__ = ["GaussianNB"]

_LOG_2PI = math.log(2.0 * math.pi)
#: 2^-600: scales x and the means when every density underflows (see `GaussianNB._far`)
FAR_SCALE = 2.0**-600
#: Floor of the variance smoothing: the smallest positive normal float64, so that a model whose
#: features have all been constant so far (zero variance everywhere) still has finite densities.
EPS_FLOOR = sys.float_info.min
#: Rows per numpy pass in the batch methods: bounds the temporaries to a few MB.
_CHUNK = 65536
_INF = math.inf
_ZERO = array("d", [0.0])
_ARRAY_BYTES = sys.getsizeof(array("d"))  # header of an empty array; items are 8 bytes each
_POINTER_BYTES = struct.calcsize("P")
#: the model object in `GaussianNB.memory_bytes`, the same on both backends: a header, a
#: pointer per attribute (18) and the four floats (_n, _eps, _top, _log_keep) as objects
OBJECT_BYTES = sys.getsizeof(object()) + 18 * _POINTER_BYTES + 4 * sys.getsizeof(0.0)


def update_rate(m: float, w: float, top: float, log_keep: float) -> float:
    """The rate of one update of weight ``w`` on an estimate that has seen weight ``m``.

    docs/design.md 2.1 with the rule applied to w unit steps: the steps that take the count to at
    most ``top`` have rate 1/n (their retentions telescope to m/(m+t)), the others alpha
    (retention (1-alpha) each), so the total rate is 1 - m/(m+t) (1-alpha)^(w-t) with
    t = clip(top - m, 0, w). ``top`` is floor(1/alpha) with the warm-up (for w = 1 the rate is
    then max(alpha, 1/n)), 1 without it (the paper's Algorithm 2: rate 1 for the first unit of
    weight, alpha after) and inf in the exact mode (rate w/(m+w), Algorithm 1);
    ``log_keep`` = log(1 - alpha). For any weights, learning w1 then w2 equals learning w1 + w2.
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


def _update(counts: array, means: array, variances: array, base: int, xs: list, w: float,
            top: float, log_keep: float) -> None:
    """One sample of weight ``w`` into the counts, means and variances at ``base`` (a class's
    row, or 0 for the all-class statistics), in place: docs/design.md 2.1, feature by feature.
    Features with equal counts share one rate, so a dense row computes it once."""
    last = r = -1.0
    for j, a in enumerate(xs):
        if a != a:  # missing
            continue
        i = base + j
        m = counts[i]
        if m != last:
            last, r = m, update_rate(m, w, top, log_keep)
        e = a - means[i]
        means[i] += r * e
        variances[i] = (1.0 - r) * (variances[i] + r * e * e)
        counts[i] = m + w


def _normalised(e: list) -> list:
    """``e`` divided by its sum, added left to right."""
    s = 0.0
    for v in e:
        s += v
    return [v / s for v in e]


def _zeros(n: int) -> array:
    """``n`` zero doubles, allocated exactly (``array * n`` does not over-allocate)."""
    return array("d", _ZERO) * n


def _put(a: array, base: int, values: np.ndarray) -> None:
    """Write the float64 ``values`` into ``a`` from index ``base`` (no re-allocation)."""
    a[base:base + len(values)] = array("d", values.tolist())


def _matrix(a: array, d: int) -> np.ndarray:
    """A flat buffer of rows of ``d`` doubles as a float64 (rows, d) copy."""
    return np.array(a, dtype=np.float64).reshape(-1, d)


def _rows(a: array, d: int) -> list:
    """A flat buffer of rows of ``d`` doubles as a list of lists of floats."""
    return [a[i:i + d].tolist() for i in range(0, len(a), d)]


def _shape_bytes(n_classes: int, d: int) -> int:
    """Bytes of the statistics of ``n_classes`` classes of ``d`` features: seven exactly
    allocated buffers of doubles (priors; counts, means, variances per class and per
    feature) and the ``classes_`` list."""
    doubles = n_classes * (3 * d + 1) + 3 * d
    return 8 * doubles + 7 * _ARRAY_BYTES + LIST_BYTES + _POINTER_BYTES * n_classes


class GaussianNB(Learner):
    """Incremental Gaussian naive Bayes: exact (Wu and Xiong 2023, Algorithm 1) or constant-rate (Algorithm 2).

    Args:
        learning_rate: None (or 0) for the exact mode: priors n_k/n, means and population
            variances equal the offline estimates on the same samples. A float alpha in (0, 1)
            (the paper uses 0.01) for the constant rate (Algorithm 2): each estimate moves by
            alpha towards a new sample, so old samples fade as (1 - alpha)^age.
        warm_up: with a learning rate, how an estimate starts. True (default): it moves by
            max(alpha, 1/n), the plain average of its first 1/alpha samples (docs/design.md 2.1),
            so a class seen a few times is not a copy of its last sample and one seen fewer
            than 1/alpha times is the exact model's. False: the paper's Algorithm 2 as
            written, Eqs. (12)-(14) from the second sample on: the first sample sets the
            estimate (Eqs. (8)-(10) at i = 0) and every later one moves it by alpha. Must stay
            True in the exact mode, which has no rate to warm up.
        var_smoothing: added to every variance at prediction, times the largest per-feature
            variance over all classes (as scikit-learn; that variance follows the same rule, so
            it forgets in the learning-rate mode), floored at `EPS_FLOOR` so that constant
            features and one-sample classes give finite log-densities (docs/cases.md C01).
        max_size_bytes: hard bound on `memory_bytes` (None = unbounded), at least the bytes
            of the empty model: a new class that would take the model past it is refused
            with `edgebayes.base.ClassLimitError`, the model unchanged. Cost per class:
            (3 n_features + 1) doubles of 8 bytes, a pointer in ``classes_``, its label and
            index entry.

    Prediction (docs/design.md 2.1): argmax_k log P(k) + sum_j log N(x_j; mu_kj, var_kj + eps), in
    log space, probabilities by log-sum-exp, so they sum to 1 and hold no NaN even when every
    density underflows (docs/cases.md C08, C13). A NaN feature value is a missing value, skipped in
    learning and in the likelihood; a class without any value of a feature skips that feature (as
    River). When x is so far out that every class's log-likelihood is -inf, the probabilities are
    the limit as x moves away: the classes with the smallest scaled squared distance share them.

    Attributes:
        classes_: labels in order of first appearance (columns of `predict_proba_many`).
        n_features_in_: number of features, fixed by the first sample (None before).

    The statistics live in seven exactly allocated ``array("d")`` buffers: priors (n_classes,);
    counts, means and variances (n_classes * n_features, one row per class); the all-class
    counts, means and variances (n_features,). ``learn_one`` and ``predict_proba_one`` here
    are the readable reference (`ReferenceGaussianNB`), scalar loops over those buffers;
    ``GaussianNB`` is the compiled implementation (`edgebayes._core.naive_bayes`, one C call
    per sample, the same loops in the same order over the same buffers) when
    `edgebayes.backend()`, chosen at import, is ``"compiled"``: ``state()``, probabilities,
    errors and ``memory_bytes()`` are the same bit for bit, and a state saved by one loads in
    the other. Batch methods use numpy and give the same model (to rounding) as the
    per-sample path. Learning refuses features of magnitude above `edgebayes.base.MAX_ABS_X`
    (1e100), whose squares could overflow the variance; prediction takes any finite x.

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
                 max_size_bytes: int | None = None, warm_up: bool = True):
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
        if type(warm_up) is not bool:
            raise ValueError(f"warm_up must be True or False, got {warm_up!r}")
        alpha = float(learning_rate or 0.0)
        if not warm_up and alpha == 0.0:
            raise ValueError("warm_up=False needs a learning_rate in (0, 1): the exact mode "
                             "(Algorithm 1) has no constant rate to warm up")
        self.learning_rate = learning_rate
        self.var_smoothing = var_smoothing
        self.warm_up = warm_up
        # the count up to which the rate is 1/n (`update_rate`): the warm-up's 1/alpha, the
        # first sample only in Algorithm 2 as written, every sample in the exact mode
        self._top = (float(math.floor(1.0 / alpha)) if warm_up else 1.0) if alpha > 0 else _INF
        self._log_keep = math.log1p(-alpha)
        self.classes_: list = []
        self.n_features_in_: int | None = None
        self._index: dict = {}
        self._n = 0.0  # total weight learned
        self._priors = array("d")
        self._counts = array("d")  # row k = class k, per feature: weight of present values
        self._means = array("d")
        self._vars = array("d")
        self._fcounts = array("d")  # per feature, all classes: scales var_smoothing
        self._fmeans = array("d")
        self._fvars = array("d")
        self._eps = EPS_FLOOR
        self.max_size_bytes = max_size_bytes
        check_size_bound(max_size_bytes, self.memory_bytes(), "the empty model")

    # ------------------------------------------------------------------ learning

    def learn_one(self, x, y, w: float = 1.0) -> None:
        """Learn one sample with the rule of docs/design.md 2.1.

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
        xs = as_floats(x, self.n_features_in_, learning=True)[0]
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
        r = update_rate(self._n, w, top, lk)
        keep = 1.0 - r
        priors = self._priors
        for c in range(len(priors)):
            priors[c] *= keep
        priors[k] += r
        self._n += w
        _update(self._counts, self._means, self._vars, k * len(xs), xs, w, top, lk)
        _update(self._fcounts, self._fmeans, self._fvars, 0, xs, w, top, lk)
        self._eps = max(self.var_smoothing * max(self._fvars), EPS_FLOOR)

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
        _put(self._priors, 0, priors)
        self._n = float(n_after[0])
        order = np.argsort(codes, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=K))])
        Xs, ws = X[order], (None if w is None else w[order])
        d = self.n_features_in_
        for k in range(K):
            lo, hi = bounds[k], bounds[k + 1]
            if lo == hi:
                continue
            row = slice(k * d, (k + 1) * d)
            cnt, mu, var = _merge(
                np.array(self._counts[row]), np.array(self._means[row]), np.array(self._vars[row]),
                Xs[lo:hi], None if ws is None else ws[lo:hi], top, lk, has_nan,
            )
            for buffer, values in ((self._counts, cnt), (self._means, mu), (self._vars, var)):
                _put(buffer, k * d, values)
        cnt, mu, var = _merge(
            np.array(self._fcounts), np.array(self._fmeans), np.array(self._fvars), X, w, top, lk, has_nan
        )
        for buffer, values in ((self._fcounts, cnt), (self._fmeans, mu), (self._fvars, var)):
            _put(buffer, 0, values)
        self._eps = max(self.var_smoothing * max(self._fvars), EPS_FLOOR)

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
        """Register label ``y`` (validated, room checked) for x of ``d`` features: a zero prior
        and a zero row in each per-class buffer, re-allocated exactly. Returns its index."""
        if self.n_features_in_ is None:
            self.n_features_in_ = d
            self._fcounts, self._fmeans, self._fvars = _zeros(d), _zeros(d), _zeros(d)
        self._index[y] = len(self.classes_)
        self.classes_.append(y)
        self._priors = self._priors + _ZERO  # a + b is allocated exactly, a += b over-allocates
        self._counts = self._counts + _zeros(d)
        self._means = self._means + _zeros(d)
        self._vars = self._vars + _zeros(d)
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

    def _terms(self, xs: list, has_nan: bool) -> tuple[list, list]:
        """Per class: log P(k) - 0.5 sum_j log(2 pi v_kj), and sum_j (x_j - mu_kj)^2 / v_kj,
        with v = var + eps; the joint log-likelihood is the first minus half the second.

        A class with every feature seen, for x without a missing value, takes log of the
        product of its v (one log, or the sum of the logs if the product over- or
        underflows); otherwise only the features present in x and seen in the class count.
        """
        d, eps = self.n_features_in_, self._eps
        counts, means, variances = self._counts, self._means, self._vars
        cs, qs = [], []
        for k, p in enumerate(self._priors):
            base = k * d
            log_p = math.log(p) if p > 0.0 else -_INF
            q = 0.0
            if not has_nan and min(counts[base:base + d]) > 0.0:
                prod = 1.0
                for j, a in enumerate(xs):
                    v = variances[base + j] + eps
                    prod *= v
                    e = a - means[base + j]
                    q += e * e / v
                if 0.0 < prod < _INF:
                    log_det = math.log(prod)
                else:
                    log_det = 0.0
                    for j in range(d):
                        log_det += math.log(variances[base + j] + eps)
                c = log_p - 0.5 * (d * _LOG_2PI + log_det)
            else:
                c = log_p
                for j, a in enumerate(xs):
                    i = base + j
                    if a == a and counts[i] > 0.0:
                        v = variances[i] + eps
                        c -= 0.5 * (_LOG_2PI + math.log(v))
                        e = a - means[i]
                        q += e * e / v
            cs.append(c)
            qs.append(q)
        return cs, qs

    def _far(self, xs: list) -> list:
        """Probabilities when every class's log-likelihood is -inf (x extremely far): the limit
        as x moves away, found with the squared distances scaled by 2^-1200."""
        scale = FAR_SCALE
        d, eps = self.n_features_in_, self._eps
        counts, means, variances = self._counts, self._means, self._vars
        u, c = [], []
        for k, p in enumerate(self._priors):
            base = k * d
            uk = ck = 0.0
            for j, a in enumerate(xs):
                i = base + j
                if a == a and counts[i] > 0.0:
                    v = variances[i] + eps
                    e = a * scale - means[i] * scale
                    uk += e * e / v
                    ck -= 0.5 * (_LOG_2PI + math.log(v))
            u.append(uk if p > 0.0 else _INF)
            c.append(ck + math.log(p) if p > 0.0 else -_INF)
        best = min(u)
        win = [uk == best and ck > -_INF for uk, ck in zip(u, c)]
        top = max(ck for ck, won in zip(c, win) if won)
        e = [math.exp(ck - top) if won else 0.0 for ck, won in zip(c, win)]
        return _normalised(e)

    def _proba(self, xs: list, has_nan: bool) -> list:
        """Class probabilities of a checked ``xs``, in `classes_` order: log-sum-exp."""
        cs, qs = self._terms(xs, has_nan)
        # shift by the smallest squared distance: when it is huge (a variance at the floor),
        # the log priors would otherwise be absorbed and tied distances no longer tie
        q0 = min(qs)
        if q0 == _INF:
            return self._far(xs)
        jll = [c - 0.5 * (q - q0) for c, q in zip(cs, qs)]
        top = max(jll)
        if top == -_INF:
            return self._far(xs)
        return _normalised([math.exp(v - top) for v in jll])

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
        return dict(zip(self.classes_, self._proba(*as_floats(x, self.n_features_in_))))

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
        counts, means, variances = (_matrix(a, X.shape[1]) for a in (self._counts, self._means, self._vars))
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            log_p = np.log(np.array(self._priors))
            for k in range(len(self.classes_)):
                v = variances[k] + eps
                seen = counts[k] > 0
                inv = np.where(seen, 1.0 / v, 0.0)
                half_log = np.where(seen, 0.5 * (_LOG_2PI + np.log(v)), 0.0)
                D = X - means[k]
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
        """Bytes held, counted from the shapes (the same on both backends): 8 per double in
        the seven buffers and their headers, the ``classes_`` list, the label index and
        labels, and `OBJECT_BYTES` for the model object. Sizes are this platform's."""
        labels = sum(sys.getsizeof(c) for c in self.classes_)
        held = sys.getsizeof(self._index) + labels
        return OBJECT_BYTES + _shape_bytes(len(self.classes_), self.n_features_in_ or 0) + held

    def planned_bytes(self, labels: list, d: int) -> int:
        """`memory_bytes` once the new classes ``labels`` are added for x of ``d`` features."""
        held = sum(sys.getsizeof(c) for c in (*self.classes_, *labels))
        index = sys.getsizeof(self._index) + insert_bytes(self._index, labels)
        return OBJECT_BYTES + _shape_bytes(len(self.classes_) + len(labels), d) + index + held

    def state(self) -> dict:
        """Plain, msgpack-serialisable state with ``"kind": "gaussian_nb"`` (see `from_state`):
        per-class statistics as lists of rows of n_features floats."""
        d = self.n_features_in_ or 1
        return {
            "kind": "gaussian_nb",
            "learning_rate": self.learning_rate,
            "var_smoothing": self.var_smoothing,
            "n_features_in": self.n_features_in_,
            "classes": list(self.classes_),
            "n": self._n,
            "priors": self._priors.tolist(),
            "counts": _rows(self._counts, d),
            "means": _rows(self._means, d),
            "variances": _rows(self._vars, d),
            "feature_counts": self._fcounts.tolist(),
            "feature_means": self._fmeans.tolist(),
            "feature_variances": self._fvars.tolist(),
            "max_size_bytes": self.max_size_bytes,
            "warm_up": self.warm_up,
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
        # max_size_bytes and warm_up are absent from states older than them
        model = cls(state["learning_rate"], state["var_smoothing"], state.get("max_size_bytes"),
                    state.get("warm_up", True))
        classes = list(state["classes"])
        K, d = len(classes), state["n_features_in"]
        rows = [[float(v) for v in r] for key in ("counts", "means", "variances") for r in state[key]]
        feats = [[float(v) for v in state[key]] for key in ("feature_counts", "feature_means", "feature_variances")]
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
        # the bounds of learning (edgebayes.base.MAX_ABS_X): a mean or variance past them
        # would overflow at the next update
        bounds = ((0.0, _INF), (-MAX_ABS_X, MAX_ABS_X), (0.0, 4.0 * MAX_ABS_X * MAX_ABS_X))
        parts = (rows[:K], rows[K:2 * K], rows[2 * K:])
        for name, rs, (low, high) in zip(("counts", "means", "variances"), parts, bounds):
            for r in rs:
                check_finite(name, r, low, high)
        if K:
            for name, r, (low, high) in zip(("feature_counts", "feature_means", "feature_variances"), feats, bounds):
                check_finite(name, r, low, high)
        model.classes_ = classes
        model._index = {c: k for k, c in enumerate(classes)}
        model.n_features_in_ = d
        model._n, model._priors = n, array("d", priors)
        model._counts, model._means, model._vars = (
            array("d", [v for r in rows[i * K:(i + 1) * K] for v in r]) for i in range(3))
        if K:
            model._fcounts, model._fmeans, model._fvars = (array("d", r) for r in feats)
            model._eps = max(model.var_smoothing * max(model._fvars), EPS_FLOOR)
        return model


#: the pure-Python reference, by name whichever class `GaussianNB` is
ReferenceGaussianNB = GaussianNB
GaussianNB = choose(ReferenceGaussianNB, "edgebayes._core.naive_bayes")
