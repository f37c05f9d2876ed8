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

import struct
import sys
from array import array

import numpy as np

from edgebayes import naive_bayes_batch as batch
from edgebayes._backend import choose
from edgebayes.base import (
    LIST_BYTES,
    ClassLimitError,
    Learner,
    as_floats,
    check_label,
    check_size_bound,
    check_weight,
    check_weights,
    refuse_malformed,
)
from edgebayes.naive_bayes_kernel import _LOG_2PI as _LOG_2PI  # read by the compiled twin
from edgebayes.naive_bayes_kernel import FAR_SCALE as FAR_SCALE  # read by the compiled twin
from edgebayes.naive_bayes_kernel import proba, terms, update, update_rate
from edgebayes.naive_bayes_params import check_gaussian_params, rate_constants
from edgebayes.naive_bayes_state import read_gaussian
from edgebayes.sizes import insert_bytes

__all__ = ["GaussianNB"]

#: Floor of the variance smoothing: the smallest positive normal float64, so that a model whose
#: features have all been constant so far (zero variance everywhere) still has finite densities.
EPS_FLOOR = sys.float_info.min
_ZERO = array("d", [0.0])
_ARRAY_BYTES = sys.getsizeof(array("d"))  # header of an empty array; items are 8 bytes each
_POINTER_BYTES = struct.calcsize("P")
#: the model object in `GaussianNB.memory_bytes`, the same on both backends: a header, a
#: pointer per attribute (18) and the four floats (_n, _eps, _top, _log_keep) as objects
OBJECT_BYTES = sys.getsizeof(object()) + 18 * _POINTER_BYTES + 4 * sys.getsizeof(0.0)


def _zeros(n: int) -> array:
    """``n`` zero doubles, allocated exactly (``array * n`` does not over-allocate)."""
    return array("d", _ZERO) * n


def _put(a: array, base: int, values: np.ndarray) -> None:
    """Write the float64 ``values`` into ``a`` from index ``base`` (no re-allocation)."""
    a[base:base + len(values)] = array("d", values.tolist())


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
        check_gaussian_params(learning_rate, var_smoothing, warm_up)
        self.learning_rate = learning_rate
        self.var_smoothing = var_smoothing
        self.warm_up = warm_up
        self._top, self._log_keep = rate_constants(learning_rate, warm_up)
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
        update(self._counts, self._means, self._vars, k * len(xs), xs, w, top, lk)
        update(self._fcounts, self._fmeans, self._fvars, 0, xs, w, top, lk)
        self._eps = max(self.var_smoothing * max(self._fvars), EPS_FLOOR)

    def learn_many(self, X, y, w=None) -> None:
        """Learn the rows of ``X`` in order: the same model as `learn_one` row by row (to rounding).

        Args:
            X: array-like (n, n_features_in_) of floats (NaN = missing).
            y: n labels.
            w: None or n sample weights >= 0.

        Vectorised: the final state of the sequential rule is a weighted mixture of the old
        estimate and the rows (`edgebayes.naive_bayes_batch.merge`), per class and in chunks of
        `edgebayes.naive_bayes_batch.CHUNK` rows.

        Raises:
            ValueError: as `learn_one`, or X and y of different lengths. The model is unchanged.
        """
        X = batch.check_rows(X, self.n_features_in_, learning=True)
        labels = y.tolist() if isinstance(y, np.ndarray) else list(y)
        if len(labels) != len(X):
            raise ValueError(f"X has {len(X)} rows but y has {len(labels)} labels")
        if w is not None:  # zero weight: validated, not learned (as learn_one)
            X, labels, w = batch.drop_zero_weights(X, labels, check_weights(w, len(X)))
        codes, new = batch.encode(self._index, labels, self._new_label)
        if not len(X):
            return
        self._check_room(new, X.shape[1])
        for label in new:
            self._add_class(label, X.shape[1])
        has_nan = bool(np.isnan(X).any())
        for start in range(0, len(X), batch.CHUNK):
            stop = start + batch.CHUNK
            self._learn_chunk(X[start:stop], codes[start:stop], None if w is None else w[start:stop], has_nan)

    def _learn_chunk(self, X, codes, w, has_nan):
        top, lk, d = self._top, self._log_keep, self.n_features_in_
        K = len(self.classes_)
        wcol = np.ones((len(X), 1)) if w is None else w[:, None]
        a0, A, n_after = batch.mixture_weights(np.array([self._n]), wcol, top, lk)
        priors = a0[0] * np.array(self._priors) + np.bincount(codes, weights=A[:, 0], minlength=K)
        _put(self._priors, 0, priors)
        self._n = float(n_after[0])
        for k, rows, ws in batch.by_class(X, codes, w, K):
            row = slice(k * d, (k + 1) * d)
            old = (np.array(self._counts[row]), np.array(self._means[row]), np.array(self._vars[row]))
            for buffer, values in zip((self._counts, self._means, self._vars),
                                      batch.merge(*old, rows, ws, top, lk, has_nan)):
                _put(buffer, k * d, values)
        old = (np.array(self._fcounts), np.array(self._fmeans), np.array(self._fvars))
        for buffer, values in zip((self._fcounts, self._fmeans, self._fvars),
                                  batch.merge(*old, X, w, top, lk, has_nan)):
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

    # ------------------------------------------------------------------ prediction

    def _stats(self) -> tuple:
        """The buffers and eps the kernel reads: priors, counts, means, variances, eps."""
        return self._priors, self._counts, self._means, self._vars, self._eps

    def _proba(self, xs: list, has_nan: bool) -> list:
        """Class probabilities of a checked ``xs``, in `classes_` order (the kernel's `proba`)."""
        return proba(*self._stats(), xs, has_nan)

    def joint_log_likelihood_one(self, x) -> dict:
        """log P(k) + sum_j log N(x_j; mu_kj, var_kj + eps) per class (empty before learning).

        Raises:
            ValueError: bad x (as `learn_one`).
        """
        if not self.classes_:
            return {}
        cs, qs = terms(*self._stats(), *as_floats(x, self.n_features_in_))
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
        return batch.proba_rows(batch.check_rows(X, self.n_features_in_), *self._stats())

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
    @refuse_malformed("gaussian_nb")
    def from_state(cls, state: dict) -> GaussianNB:
        """Rebuild the learner that `state` described (predictions identical, learning goes on).

        Raises:
            ValueError: not a gaussian_nb state, or a malformed one: a missing key, a value of
                the wrong type, inconsistent shapes, a bad label, a non-finite number, a
                negative count, prior or variance, or priors not summing to 1
                (`edgebayes.naive_bayes_state.read_gaussian`).
        """
        if not isinstance(state, dict) or state.get("kind") != "gaussian_nb":
            raise ValueError("not a gaussian_nb state")
        # max_size_bytes and warm_up are absent from states older than them
        model = cls(state["learning_rate"], state["var_smoothing"], state.get("max_size_bytes"),
                    state.get("warm_up", True))
        classes, d, model._n, model._priors, rows, feats = read_gaussian(state)
        model.classes_, model.n_features_in_ = classes, d
        model._index = {c: k for k, c in enumerate(classes)}
        model._counts, model._means, model._vars = rows
        if feats is not None:
            model._fcounts, model._fmeans, model._fvars = feats
            model._eps = max(model.var_smoothing * max(model._fvars), EPS_FLOOR)
        return model


#: the pure-Python reference, by name whichever class `GaussianNB` is
ReferenceGaussianNB = GaussianNB
GaussianNB = choose(ReferenceGaussianNB, "edgebayes._core.naive_bayes")
