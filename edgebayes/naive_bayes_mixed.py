"""Naive Bayes over numeric and nominal features: Gaussian densities and category frequencies.

The sibling of `edgebayes.naive_bayes.GaussianNB` for streams whose schema declares nominal
features (``Schema.nominal``; values are float category codes, NaN = missing). Artiemjew and
Idzikowski (2019, section 2) describe the naive Bayes their committees use: for a symbolic
attribute P(b_m = v | d = k) is the frequency of v among the training objects of class k; for
a numeric one, a Gaussian. The zero-frequency problem (a value never seen with class k turns
the whole product into 0) is handled by one of two rules:

- ``"laplace"`` (default): P(v | k) = (n_kv + alpha) / (n_k + alpha V), V the number of
  distinct values of the feature seen in training (scikit-learn's CategoricalNB with the
  categories seen so far; River's MultinomialNB ``alpha``).
- ``"borrow"``: the paper's first rule (section 2). A zero frequency in class k takes the smallest
  non-zero frequency of that value among the other classes, lowered by ``borrow_factor``; every
  class with a zero gets that same value.

Under both rules a value absent from every class (or a missing one) is disregarded: it
multiplies every class by the same factor, as the paper says for the descriptor seen in no
class. Its counts are the per-class weights of each value; with a ``learning_rate`` they fade
like GaussianNB's estimates (see `MixedNB._learn_nominal`).

Our choices where the paper is silent: V counts the values seen in any class (a value seen in
no class is not counted, since it is disregarded); a class that never saw a feature gets the
uniform 1/V from Laplace and a borrowed frequency under ``"borrow"``.

Scoring (``scoring``): by default the classes are scored by the product of the prior and the
likelihoods, in log space (``"product"``). ``"paper_sum"`` is the paper's own classifier, the
one its experiments use: section 2's sum, "in practice, it is also acceptable to use sums
instead of products",

    Param_k = P(d = k) * sum_m P(b_m = a_m(v) | d = k)     (eq. 2, as section 2.1 computes it)

with the zero frequencies of its worked example (section 2.1, test object x2): where value v
of a nominal feature has frequency 0 in some class, the counter of every class that holds v
goes up by one, P(v | k) = (n_kv + 1) / n_k ("we increase counter by 1 because
P(a1 | c = 4) = 0, so finally P(a1 = 1 | c = 2) = 2/3"); the classes without v keep 0, and a
value in no class adds 0 to every class (the paper's "we cannot handle it"). See
`MixedNB` for the numeric features and the probabilities under ``"paper_sum"``.

``scoring="moa"`` is MOA's NaiveBayes exactly, the SRP paper's NB baseline (Gomes et al. 2019
ran MOA's): see `edgebayes.naive_bayes_moa`.
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
    check_size_bound,
    check_weight,
)
from edgebayes.naive_bayes import GaussianNB, update_rate
from edgebayes.naive_bayes_moa import gaussian_factors, max_index, nominal_factors, value_bounds
from edgebayes.sizes import insert_bytes

__all__ = ["SCORING", "ZERO_FREQUENCY", "MixedNB", "split_columns"]

ZERO_FREQUENCY = ("laplace", "borrow")
#: ``"product"``: log P(k) + sum_j log P(x_j | k) (default); ``"paper_sum"``: Artiemjew and
#: Idzikowski's (2019) P(k) sum_j P(x_j | k) with its worked example's counter increment (see
#: `MixedNB`); ``"moa"``: MOA's NaiveBayes (`edgebayes.naive_bayes_moa`).
SCORING = ("product", "paper_sum", "moa")
_LOG_2PI = math.log(2.0 * math.pi)
_NAN = float("nan")


def _check_nominal(nominal_attributes, n_features: float = math.inf) -> list[int]:
    """The nominal indices as a sorted list of ints.

    Raises:
        ValueError: not a sequence of ints in [0, n_features), or an index appears twice.
    """
    if nominal_attributes is None:
        return []
    try:
        nominal = list(nominal_attributes)
    except TypeError:
        raise ValueError(f"nominal_attributes must be a sequence of ints, got {nominal_attributes!r}") from None
    for i in nominal:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < n_features:
            raise ValueError(f"nominal_attributes: {i!r} is not an index of x's {n_features} features")
    if len(set(nominal)) != len(nominal):
        raise ValueError(f"nominal_attributes holds a duplicate index: {nominal}")
    return sorted(int(i) for i in nominal)


def split_columns(nominal_attributes, n_features: int) -> tuple[list[int], list[int]]:
    """(nominal, numeric) column indices of an x of ``n_features`` values, each sorted.

    Raises:
        ValueError: a nominal index is not an int in [0, n_features) or appears twice.
    """
    nominal = _check_nominal(nominal_attributes, n_features)
    taken = set(nominal)
    return nominal, [j for j in range(n_features) if j not in taken]


class MixedNB(Learner):
    """Incremental naive Bayes with Gaussian numeric features and counted nominal features.

    The numeric columns (all but ``nominal_attributes``) are learned by a `GaussianNB`, which
    also keeps the class priors (with no numeric column it is fed one always-missing column,
    so that it keeps the priors alone). Prediction multiplies its posterior P(k | numeric part)
    by P(v_j | k) for every nominal feature j, in log space, and normalises (log-sum-exp).

    Args:
        nominal_attributes: indices of x holding nominal values (float category codes; any
            finite float is a category, NaN is missing). None = none (then the model predicts
            exactly as GaussianNB). Checked against x's length at the first sample.
        learning_rate: None for exact estimates (counts are the sample weights, frequencies n_kv /
            n_k); alpha in (0, 1) to forget at the rate of docs/design.md 2.1 (as GaussianNB).
        var_smoothing: GaussianNB's variance smoothing for the numeric features.
        zero_frequency: ``"laplace"`` or ``"borrow"`` (Artiemjew and Idzikowski 2019, section 2),
            see the module doc.
        alpha: Laplace pseudo-count, > 0 (used by ``"laplace"``).
        borrow_factor: in (0, 1): how much a borrowed frequency is lowered (used by
            ``"borrow"``). The paper says "slightly" and gives no number; 0.9 is our choice.
        max_size_bytes: hard bound on `memory_bytes` (None = unbounded), at least the bytes
            of the empty model: a sample whose new class or new nominal values would take
            the model past it (cached log tables counted) is refused with
            `edgebayes.base.ClassLimitError`, the model unchanged.
        scoring: ``"product"`` (default) or ``"paper_sum"``: Artiemjew and Idzikowski's (2019)
            symbolic naive Bayes, section 2, eq. 2, Param_k = P(k) sum_m P(v_m | k), zero
            frequencies by the counter increment of its worked example (section 2.1; see the
            module doc). ``zero_frequency``, ``alpha`` and ``borrow_factor`` are then unused. A
            numeric feature adds its Gaussian density N(x; mu_k, var_k + eps) to the sum, as
            section 2 says for numerical data (a density, not a probability: its scale depends
            on the feature's unit, so the paper's experiments, and ours, declare every feature
            nominal). The probabilities are the Param_k normalised to sum 1; when every Param_k
            is 0 (no value of x seen in any class) they are uniform, the paper's tie resolved at
            random. With 3 or more classes a class holding v gets +1 however many classes lack v
            (the paper's example has two classes, where the readings coincide).
            ``"moa"``: MOA's NaiveBayes (its ``doNaiveBayesPrediction``, nominal and Gaussian
            observers; see `edgebayes.naive_bayes_moa`): a product in floating point in
            attribute order, MOA's Laplace correction and sample variances, no smoothing;
            ``zero_frequency``, ``alpha``, ``borrow_factor`` and ``var_smoothing`` are unused,
            and ``learning_rate`` must be None. Nominal values are MOA's value indices
            (non-negative integer codes). The probabilities are the votes normalised (NaN
            read as 0; infinite votes share 1; uniform when all are 0); `predict_one` is MOA's
            ``Utils.maxIndex`` over the votes in ``classes`` order.
        classes: labels in the order of MOA's header (its ARFF ``@attribute class {...}``):
            under ``"moa"`` ties between votes go to the first of them, and a label of it not
            learned yet has vote 0 (and can be predicted, as MOA does). None = `classes_` order.
            Unused by the other scorings.

    Attributes:
        classes_: labels in order of first appearance.
        n_features_in_: number of features, fixed by the first learned sample.

    Raises:
        ValueError: an invalid parameter (named); at learning, bad x, label or weight, or
            nominal indices out of x's range (the model is unchanged).

    Example:
        >>> nb = MixedNB(nominal_attributes=[1])
        >>> for x, y in [([1.0, 0.0], "a"), ([1.2, 0.0], "a"), ([3.0, 1.0], "b"), ([2.8, 1.0], "b")]:
        ...     nb.learn_one(x, y)
        >>> nb.predict_one([2.0, 1.0])
        'b'
        >>> nb.category_counts_[0].tolist()  # class x value: a saw 0.0 twice, b saw 1.0 twice
        [[2.0, 0.0], [0.0, 2.0]]
    """

    def __init__(
        self,
        nominal_attributes=None,
        learning_rate: float | None = None,
        var_smoothing: float = 1e-9,
        zero_frequency: str = "laplace",
        alpha: float = 1.0,
        borrow_factor: float = 0.9,
        max_size_bytes: int | None = None,
        scoring: str = "product",
        classes=None,
    ):
        self._gnb = GaussianNB(learning_rate, var_smoothing)  # validates both
        _check_nominal(nominal_attributes)
        if zero_frequency not in ZERO_FREQUENCY:
            raise ValueError(f"zero_frequency must be one of {ZERO_FREQUENCY}, got {zero_frequency!r}")
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < alpha < math.inf:
            raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
        if (isinstance(borrow_factor, bool) or not isinstance(borrow_factor, numbers.Real)
                or not 0.0 < borrow_factor < 1.0):
            raise ValueError(f"borrow_factor must be in (0, 1), got {borrow_factor!r}")
        if scoring not in SCORING:
            raise ValueError(f"scoring must be one of {SCORING}, got {scoring!r}")
        if scoring == "moa" and learning_rate is not None:
            raise ValueError("scoring='moa' is MOA's NaiveBayes, which does not forget: learning_rate must be None")
        if classes is not None:
            classes = list(classes)
            for c in classes:
                check_label(c)
            if len(set(classes)) != len(classes):
                raise ValueError(f"classes holds a duplicate label: {classes}")
        self.classes = classes
        self.nominal_attributes = nominal_attributes
        self.learning_rate = learning_rate
        self.var_smoothing = var_smoothing
        self.zero_frequency = zero_frequency
        self.alpha = alpha
        self.borrow_factor = borrow_factor
        self.scoring = scoring
        a = float(learning_rate or 0.0)
        self._top = math.floor(1.0 / a) if a > 0 else math.inf  # as GaussianNB: 1/n up to 1/alpha
        self._log_keep = math.log1p(-a)
        self.n_features_in_: int | None = None
        self._nominal: list[int] = []
        self._numeric: list[int] = []
        self._index: dict = {}
        # per nominal feature: value -> column; per class, the weight of each value; per class,
        # the sum of those weights (n_k of the frequencies) and the weight learned (for rates)
        self._values: list[dict] = []
        self._counts: list[list[list[float]]] = []
        self._totals: list[list[float]] = []
        self._seen: list[list[float]] = []
        self._tables = None  # per nominal feature, per value column: K log-probabilities (or, for
        # "paper_sum", K frequencies)
        self.max_size_bytes = max_size_bytes
        check_size_bound(max_size_bytes, self.memory_bytes(), "the empty model")

    @property
    def classes_(self) -> list:
        return self._gnb.classes_

    # ------------------------------------------------------------------ learning

    def _layout(self, d: int) -> tuple[list[int], list[int]]:
        if self.n_features_in_ is None:
            return split_columns(self.nominal_attributes, d)
        return self._nominal, self._numeric

    def _numeric_part(self, xs: list, numeric: list) -> list:
        return [xs[j] for j in numeric] if numeric else [_NAN]

    def learn_one(self, x, y, w: float = 1.0) -> None:
        """Learn one sample: GaussianNB on the numeric part, counts on the nominal part.

        Args:
            x: 1-D sequence of n_features_in_ floats (NaN = missing).
            y: label (str or int; a new one adds a class).
            w: sample weight >= 0; equals w repeated updates; 0 leaves the model unchanged.

        Raises:
            ValueError: bad x (length, non-numeric, +/-inf, magnitude above
                `edgebayes.base.MAX_ABS_X`, nominal index out of range), bad label or weight.
                The model is unchanged.
            ClassLimitError: (a ValueError) a new class or nominal value ``max_size_bytes``
                cannot hold; the model is unchanged.
        """
        if type(w) is not float or w != 1.0:  # the default skips the check; True does not
            w = check_weight(w)
        xs, _ = as_floats(x, self.n_features_in_, learning=True)
        nominal, numeric = self._layout(len(xs))
        if self.max_size_bytes is not None and w != 0.0:
            check_label(y)
            self._check_room([y] if y not in self._index else [], self.new_values(xs), len(xs))
        self._gnb.learn_one(self._numeric_part(xs, numeric), y, w)  # validates y, keeps priors
        if w == 0.0:
            return
        if self.n_features_in_ is None:
            self._start(len(xs), nominal, numeric)
        self._sync_classes()
        self._learn_nominal([xs[j] for j in nominal], self._index[y], w)

    def learn_many(self, X, y, w=None) -> None:
        """Learn the rows of ``X`` (n, n_features_in_) in order; the same model as `learn_one`.

        The numeric part goes through GaussianNB's vectorised `learn_many`; the nominal counts
        are updated row by row.

        Raises:
            ValueError: as `learn_one`, or X, y, w of different lengths. The model is unchanged.
        """
        X = np.asarray(X)
        if X.size == 0 and X.ndim < 2:
            return
        if X.ndim != 2 or X.dtype.kind not in "fiub":
            raise ValueError(f"X must be a 2-D array of numbers, got shape {X.shape} dtype {X.dtype}")
        X = X.astype(np.float64, copy=False)
        if X.shape[1] != (self.n_features_in_ or X.shape[1]) or X.shape[1] == 0:
            raise ValueError(f"X has {X.shape[1]} features, the model {self.n_features_in_}")
        if np.isinf(X).any():
            raise ValueError("X holds +/-inf: features must be finite (NaN marks a missing value)")
        if (np.abs(X) > MAX_ABS_X).any():
            raise ValueError(f"X holds a value out of range: learning takes |x| <= {MAX_ABS_X:g}")
        nominal, numeric = self._layout(X.shape[1])
        if self.max_size_bytes is not None:
            self._check_batch(X, y, w)
        self._gnb.learn_many(X[:, numeric] if numeric else np.full((len(X), 1), _NAN), y, w)
        labels = y.tolist() if isinstance(y, np.ndarray) else list(y)
        weights = [1.0] * len(X) if w is None else np.asarray(w, dtype=float).reshape(-1).tolist()
        if self.n_features_in_ is None and self._gnb.classes_:
            self._start(X.shape[1], nominal, numeric)
        self._sync_classes()
        index = self._index
        for row, label, wi in zip(X[:, nominal].tolist(), labels, weights):
            if wi > 0.0:
                self._learn_nominal(row, index[label], wi)

    def new_values(self, xs: list) -> dict:
        """The nominal values of ``xs`` (a checked list of floats) not seen yet: position
        among the nominal features -> [value]; NaN (missing) is no value."""
        nominal = self._layout(len(xs))[0]
        known = self._values or [{}] * len(nominal)
        return {i: [xs[j]] for i, j in enumerate(nominal) if xs[j] == xs[j] and xs[j] not in known[i]}

    def has_room(self, x, y) -> bool:
        """Whether `learn_one` would take ``y`` and ``x``'s nominal values within
        ``max_size_bytes`` (always True without a bound); changes nothing. ``x``, ``y``: a
        sample `learn_one` accepts."""
        if self.max_size_bytes is None:
            return True
        check_label(y)
        xs = as_floats(x, self.n_features_in_, learning=True)[0]
        labels = [] if y in self._index else [y]
        values = self.new_values(xs)
        return not (labels or values) or self.planned_bytes(labels, len(xs), values) <= self.max_size_bytes

    def planned_bytes(self, labels: list, d: int, values: dict | None = None) -> int:
        """`memory_bytes` once the new classes ``labels`` and the new nominal ``values``
        (position among the nominal features -> list of new values) are added for x of
        ``d`` features, counting the cached log tables and the Gaussian part's cache whether
        built or not (the most learning them can hold)."""
        nominal, numeric = self._layout(d)
        values = values or {}
        have = self._values or [{} for _ in nominal]
        K = len(self._index) + len(labels)
        sizes = [len(v) + len(values.get(i, ())) for i, v in enumerate(have)]
        dicts = sys.getsizeof(self._index) + insert_bytes(self._index, labels)
        for i, (v, n) in enumerate(zip(have, sizes)):
            dicts += sys.getsizeof(v) + insert_bytes(v, values.get(i, ())) + FLOAT_IN_LIST_BYTES * n
        floats = K * sum(sizes) + 2 * len(sizes) * K
        lists = len(sizes) * K + 3 * len(sizes) + 4
        tables = sum(K * (n + 1) * 8 + 112 for n in sizes)
        gnb = self._gnb.planned_bytes(labels, len(numeric) or 1)
        return int(sys.getsizeof(self) + gnb + FLOAT_IN_LIST_BYTES * floats + LIST_BYTES * lists + dicts + tables)

    def _check_room(self, labels: list, values: dict, d: int) -> None:
        """ClassLimitError unless the new ``labels`` and ``values`` fit ``max_size_bytes``."""
        if not (labels or values):
            return
        need = self.planned_bytes(labels, d, values)
        if need > self.max_size_bytes:
            what = f"class {labels[0]!r}" if labels else f"nominal value(s) {values}"
            raise ClassLimitError(
                f"{what} refused: max_size_bytes={self.max_size_bytes} holds {len(self._index)} "
                f"classes and {sum(map(len, self._values))} nominal values; this sample needs {need} bytes"
            )

    def _check_batch(self, X: np.ndarray, y, w) -> None:
        """`_check_room` for the new classes and values of the rows of ``X`` (weight > 0)."""
        labels = y.tolist() if isinstance(y, np.ndarray) else list(y)
        if w is not None and len(w) == len(X) == len(labels):  # other lengths: refused later, by GaussianNB
            keep = np.asarray(w, dtype=float).reshape(-1) > 0.0
            X, labels = X[keep], [v for v, k in zip(labels, keep.tolist()) if k]
        for v in labels:
            check_label(v)
        new = [v for v in dict.fromkeys(labels) if v not in self._index]
        nominal = self._layout(X.shape[1])[0]
        known = self._values or [{}] * len(nominal)
        values = {}
        for i, j in enumerate(nominal):
            col = [v for v in dict.fromkeys(X[:, j].tolist()) if v == v and v not in known[i]]
            if col:
                values[i] = col
        self._check_room(new, values, X.shape[1])

    def _start(self, d: int, nominal: list, numeric: list) -> None:
        self.n_features_in_ = d
        self._nominal, self._numeric = nominal, numeric
        self._values = [{} for _ in nominal]
        self._counts = [[] for _ in nominal]
        self._totals = [[] for _ in nominal]
        self._seen = [[] for _ in nominal]

    def _sync_classes(self) -> None:
        """Add the rows of the classes GaussianNB has added since the last call."""
        classes = self._gnb.classes_
        for y in classes[len(self._index):]:
            self._index[y] = len(self._index)
            for i, values in enumerate(self._values):
                self._counts[i].append([0.0] * len(values))
                self._totals[i].append(0.0)
                self._seen[i].append(0.0)
            if self.scoring == "moa":
                self._tables = None  # the value-index bounds gain a class: rebuilt when needed

    def _learn_nominal(self, vs: list, k: int, w: float) -> None:
        """Counts of one sample's nominal values ``vs`` for class k, weight w.

        Exact mode (and a learning rate while the class has seen at most 1/alpha): the value's
        count and the class total grow by w. Past that, the frequencies move by the rate r of
        docs/design.md 2.1 towards the new value, p <- (1 - r) p + r e_v, and the counts are kept as
        T p with T = floor(1/alpha) (GaussianNB's switch point): effective weights for Laplace
        smoothing that, like the frequencies, do not depend on how a weight is split.
        """
        top, lk = self._top, self._log_keep
        bounds = self._tables if self.scoring == "moa" else None  # kept up to date, not rebuilt
        for i, v in enumerate(vs):
            if v != v:
                continue
            values = self._values[i]
            col = values.get(v)
            if col is None:
                values[v] = col = len(values)
                for row in self._counts[i]:
                    row.append(0.0)
            m = self._seen[i][k]
            self._seen[i][k] = m + w
            if m + w <= top:
                self._counts[i][k][col] += w
                self._totals[i][k] += w
                if bounds is not None:
                    bounds[i][k] = max(bounds[i][k], int(v) + 1)
                continue
            r = update_rate(m, w, top, lk)
            s = self._totals[i][k]
            keep = (1.0 - r) * top / s if s > 0.0 else 0.0
            row = [c * keep for c in self._counts[i][k]]
            row[col] += r * top
            self._counts[i][k] = row
            self._totals[i][k] = float(top)
        if bounds is None:
            self._tables = None

    # ------------------------------------------------------------------ prediction

    def _log_tables(self) -> list[np.ndarray]:
        """Per nominal feature, log P(v | k) as an array (K, V + 1); the last column (unseen
        value) and the columns of values absent from every class are 0 (disregarded)."""
        if self._tables is None:
            self._tables = [self._log_table(i) for i in range(len(self._nominal))]
        return self._tables

    def _log_table(self, i: int) -> np.ndarray:
        K, V = len(self._index), len(self._values[i])
        C = np.array(self._counts[i], dtype=float).reshape(K, V)
        n = np.array(self._totals[i], dtype=float)[:, None]
        out = np.zeros((K, V + 1))
        if V == 0:
            return out
        if self.zero_frequency == "laplace":
            a = float(self.alpha)  # an int beyond int64 would make numpy build object arrays
            out[:, :V] = np.log((C + a) / (n + a * V))
            return out
        with np.errstate(invalid="ignore", divide="ignore"):
            P = np.where(n > 0.0, C / np.where(n > 0.0, n, 1.0), 0.0)
        low = np.where(P > 0.0, P, np.inf).min(axis=0)  # smallest non-zero frequency per value
        seen = np.isfinite(low)
        P = np.where(P > 0.0, P, self.borrow_factor * low)
        out[:, :V][:, seen] = np.log(P[:, seen])
        return out

    def _frequency_tables(self) -> list[np.ndarray]:
        """``"paper_sum"``: per nominal feature, P(v | k) as an array (K, V + 1), the counter
        increment of the paper's section 2.1 applied; the last column (unseen value) is 0."""
        if self._tables is None:
            self._tables = [self._frequency_table(i) for i in range(len(self._nominal))]
        return self._tables

    def _frequency_table(self, i: int) -> np.ndarray:
        K, V = len(self._index), len(self._values[i])
        C = np.array(self._counts[i], dtype=float).reshape(K, V)
        n = np.array(self._totals[i], dtype=float)[:, None]
        out = np.zeros((K, V + 1))
        held = C > 0.0  # a class holding v has n_k >= n_kv > 0
        # the paper's x2: "we increase counter by 1 because P(a1 | c = 4) = 0"
        bump = held & (~held).any(axis=0)
        out[:, :V] = np.where(held, (C + bump) / np.where(n > 0.0, n, 1.0), 0.0)
        return out

    def _paper_proba(self, X: np.ndarray) -> np.ndarray:
        """``"paper_sum"``: `_paper_scores` normalised per row; uniform where every Param_k is 0."""
        S = self._paper_scores(X)
        total = S.sum(axis=1, keepdims=True)
        return np.where(total > 0.0, S / np.where(total > 0.0, total, 1.0), 1.0 / S.shape[1])

    def _paper_scores(self, X: np.ndarray) -> np.ndarray:
        """``"paper_sum"``: the paper's Param_k = P(k) (sum of the nominal frequencies + sum of
        the numeric densities), (n, K), for the rows of the checked ``X`` (n, n_features_in_)."""
        gnb = self._gnb
        S = np.zeros((len(X), len(self._index)))
        for table, cols in zip(self._frequency_tables(), self._nominal_columns(X)):
            S += table[:, cols].T
        if self._numeric:
            Xn = X[:, self._numeric][:, None, :]  # (n, 1, d) against (K, d)
            v = gnb.variances_ + gnb.epsilon_
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                dens = np.exp(-0.5 * ((Xn - gnb.means_) ** 2 / v + _LOG_2PI + np.log(v)))
            use = (gnb.counts_ > 0.0) & ~np.isnan(Xn)  # a missing value, or a class that never saw
            S += np.where(use, dens, 0.0).sum(axis=2)  # the feature, adds nothing
        return S * gnb.class_prior_

    def _nominal_columns(self, X: np.ndarray) -> list[np.ndarray]:
        """Per nominal feature, the table column of each row's value (V for unseen/missing)."""
        out = []
        for i, j in enumerate(self._nominal):
            values = self._values[i]
            miss = len(values)
            uniq, inverse = np.unique(X[:, j], return_inverse=True)
            cols = np.array([values.get(v, miss) if v == v else miss for v in uniq.tolist()], dtype=np.intp)
            out.append(cols[inverse.reshape(-1)])
        return out

    def _moa_votes(self, xs: list) -> list[float]:
        """``"moa"``: MOA's vote of each class of `classes_` for the checked ``xs``: the prior
        times each attribute's factor, multiplied in attribute order."""
        gnb, K = self._gnb, len(self._index)
        F = np.ones((K, self.n_features_in_))
        if self._numeric:
            x = np.array([xs[j] for j in self._numeric])
            F[:, self._numeric] = gaussian_factors(x, gnb.counts_, gnb.means_, gnb.variances_)
        if self._tables is None:
            self._tables = [value_bounds(rows, list(values)) for values, rows in zip(self._values, self._counts)]
        for i, j in enumerate(self._nominal):
            v = xs[j]
            if v == v:
                F[:, j] = nominal_factors(self._counts[i], self._totals[i], self._tables[i].tolist(),
                                          self._values[i].get(v))
        return [math.prod(row, start=p) for p, row in zip(gnb.class_prior_.tolist(), F.tolist())]

    def _moa_proba(self, xs: list) -> list[float]:
        """``"moa"``: the votes normalised (NaN as 0; infinite votes share 1; uniform if all 0)."""
        votes = [v if v == v else 0.0 for v in self._moa_votes(xs)]
        if math.inf in votes:
            votes = [1.0 if v == math.inf else 0.0 for v in votes]
        s = sum(votes)
        return [v / s for v in votes] if s > 0.0 else [1.0 / len(votes)] * len(votes)

    def _moa_predict(self, xs: list):
        """``"moa"``: MOA's ``Utils.maxIndex`` over the votes in ``classes`` order (labels not
        learned yet vote 0), then the other classes in `classes_` order."""
        votes = dict(zip(self.classes_, self._moa_votes(xs)))
        order = list(self.classes or ()) + [c for c in self.classes_ if c not in set(self.classes or ())]
        return order[max_index([votes.get(c, 0.0) for c in order])]

    def predict_one(self, x):
        """The most probable label for ``x`` (None before learning); under ``"moa"``, MOA's
        prediction (see `MixedNB`; before learning, the first of ``classes`` if given).

        Raises:
            ValueError: bad x (as `learn_one`).
        """
        if self.scoring != "moa":
            return super().predict_one(x)
        xs = as_floats(x, self.n_features_in_)[0]
        if not self._index:  # MOA: the first class of an empty vote
            return self.classes[0] if self.classes else None
        return self._moa_predict(xs)

    def predict_proba_one(self, x) -> dict:
        """Class probabilities {label: float} for ``x``, summing to 1 (empty before learning).

        Raises:
            ValueError: bad x (as `learn_one`).
        """
        if not self._index:
            return {}
        xs, _ = as_floats(x, self.n_features_in_)
        if self.scoring == "paper_sum":
            return dict(zip(self.classes_, self._paper_proba(np.array([xs], dtype=float))[0].tolist()))
        if self.scoring == "moa":
            return dict(zip(self.classes_, self._moa_proba(xs)))
        post = self._gnb.predict_proba_one(self._numeric_part(xs, self._numeric))
        if not self._nominal:
            return post
        logs = [math.log(p) if p > 0.0 else -math.inf for p in post.values()]
        for i, (j, table) in enumerate(zip(self._nominal, self._log_tables())):
            v = xs[j]
            col = self._values[i].get(v) if v == v else None
            if col is not None:
                logs = [a + b for a, b in zip(logs, table[:, col].tolist())]
        top = max(logs)
        e = [math.exp(v - top) for v in logs]
        s = sum(e)
        return {c: v / s for c, v in zip(self.classes_, e)}

    def predict_proba_many(self, X) -> np.ndarray:
        """Class probabilities, float64 array (n, len(classes_)), columns in `classes_` order.

        Raises:
            ValueError: bad X (shape, non-numeric, +/-inf).
        """
        if not self._index:
            return np.zeros((len(X), 0))
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_ or X.dtype.kind not in "fiub":
            raise ValueError(f"X must be numbers of shape (n, {self.n_features_in_}), got {X.shape} {X.dtype}")
        X = X.astype(np.float64, copy=False)
        if np.isinf(X).any():
            raise ValueError("X holds +/-inf: features must be finite (NaN marks a missing value)")
        if self.scoring == "paper_sum":
            return self._paper_proba(X)
        if self.scoring == "moa":
            return np.array([self._moa_proba(xs) for xs in X.tolist()]).reshape(len(X), len(self._index))
        P = self._gnb.predict_proba_many(X[:, self._numeric] if self._numeric else np.full((len(X), 1), _NAN))
        if not self._nominal:
            return P
        with np.errstate(divide="ignore"):
            L = np.log(P)
        for table, cols in zip(self._log_tables(), self._nominal_columns(X)):
            L += table[:, cols].T
        L -= L.max(axis=1, keepdims=True)
        E = np.exp(L)
        return E / E.sum(axis=1, keepdims=True)

    def predict_many(self, X) -> list:
        """The most probable label of each row (None for every row before learning)."""
        if not self._index:
            return [None] * len(X)
        if self.scoring == "moa":
            return [self.predict_one(xs) for xs in np.asarray(X).tolist()]
        return [self.classes_[k] for k in self.predict_proba_many(X).argmax(axis=1).tolist()]

    # ------------------------------------------------------------------ inspection, state

    @property
    def gaussian_(self) -> GaussianNB:
        """The GaussianNB of the numeric columns (priors, means, variances), read-only use."""
        return self._gnb

    @property
    def class_prior_(self) -> np.ndarray:
        """Priors P(k), float64 (n_classes,)."""
        return self._gnb.class_prior_

    @property
    def categories_(self) -> list[list[float]]:
        """Per nominal feature (in `nominal_attributes` sorted order), its values seen, in order
        of first appearance (the columns of `category_counts_`)."""
        return [list(values) for values in self._values]

    @property
    def category_counts_(self) -> list[np.ndarray]:
        """Per nominal feature, the weight of each value per class: float64 (n_classes, n_values).
        Exact sample weights without a learning rate; effective (faded) weights with one."""
        K = len(self._index)
        return [np.array(c, dtype=float).reshape(K, len(v)) for c, v in zip(self._counts, self._values)]

    @property
    def n_samples_seen_(self) -> float:
        """Total sample weight learned."""
        return self._gnb.n_samples_seen_

    def memory_bytes(self) -> int:
        """Bytes held: the GaussianNB's, plus 32 per count float, 56 per list, the value dicts
        and the cached log tables."""
        floats = sum(len(r) for rows in self._counts for r in rows) + 2 * sum(map(len, self._totals))
        lists = sum(len(rows) for rows in self._counts) + 3 * len(self._counts) + 4
        dicts = sum(sys.getsizeof(v) + FLOAT_IN_LIST_BYTES * len(v) for v in self._values) + sys.getsizeof(self._index)
        tables = sum(t.nbytes + 112 for t in self._tables) if self._tables is not None else 0
        held = FLOAT_IN_LIST_BYTES * floats + LIST_BYTES * lists + dicts + tables
        return int(sys.getsizeof(self) + self._gnb.memory_bytes() + held)

    def state(self) -> dict:
        """Plain, msgpack-serialisable state with ``"kind": "mixed_nb"`` (see `from_state`)."""
        return {
            "kind": "mixed_nb",
            "params": {
                "nominal_attributes": (None if self.nominal_attributes is None
                                       else [int(i) for i in self.nominal_attributes]),
                "learning_rate": self.learning_rate,
                "var_smoothing": self.var_smoothing,
                "zero_frequency": self.zero_frequency,
                "alpha": self.alpha,
                "borrow_factor": self.borrow_factor,
                "max_size_bytes": self.max_size_bytes,
                "scoring": self.scoring,
                "classes": self.classes,
            },
            "gaussian": self._gnb.state(),
            "n_features_in": self.n_features_in_,
            "values": [list(v) for v in self._values],
            "counts": [[list(r) for r in rows] for rows in self._counts],
            "totals": [list(t) for t in self._totals],
            "seen": [list(s) for s in self._seen],
        }

    @classmethod
    def from_state(cls, state: dict) -> MixedNB:
        """Rebuild the learner that `state` described (predictions identical, learning goes on).

        Raises:
            ValueError: not a mixed_nb state, or a malformed one: a missing key, a value of
                the wrong type, shapes that do not match the classes and nominal features, a
                non-finite number or a negative count.
        """
        if not isinstance(state, dict) or state.get("kind") != "mixed_nb":
            raise ValueError("not a mixed_nb state")
        try:
            return cls._from_state(state)
        except STATE_ERRORS as exc:
            raise ValueError(f"invalid mixed_nb state: {exc!r}") from None

    @classmethod
    def _from_state(cls, state: dict) -> MixedNB:
        model = cls(**state["params"])
        model._gnb = GaussianNB.from_state(state["gaussian"])
        if model._gnb.learning_rate != model.learning_rate or model._gnb.var_smoothing != model.var_smoothing:
            raise ValueError("invalid mixed_nb state: the Gaussian part's parameters differ")
        d, gd = state["n_features_in"], model._gnb.n_features_in_
        if (d is None) != (gd is None):
            raise ValueError("invalid mixed_nb state: n_features_in does not match the Gaussian part")
        if d is not None:
            n_nominal = len(model.nominal_attributes or ())
            if type(d) is not int or not 1 <= d <= n_nominal + gd:  # before building range(d)
                raise ValueError(f"invalid mixed_nb state: n_features_in {d!r}")
            model._start(d, *split_columns(model.nominal_attributes, d))
            if (len(model._numeric) or 1) != gd:
                raise ValueError("invalid mixed_nb state: n_features_in does not match the Gaussian part")
            values = [[float(v) for v in vs] for vs in state["values"]]
            model._values = [{v: c for c, v in enumerate(vs)} for vs in values]
            model._counts = [[[float(c) for c in r] for r in rows] for rows in state["counts"]]
            model._totals = [[float(t) for t in ts] for ts in state["totals"]]
            model._seen = [[float(s) for s in ss] for ss in state["seen"]]
            for vs, unique in zip(values, model._values):
                check_finite("values", vs, -MAX_ABS_X, MAX_ABS_X)
                if len(unique) != len(vs):
                    raise ValueError("invalid mixed_nb state: a nominal value appears twice")
            for name in ("_counts", "_totals", "_seen"):
                for rows in getattr(model, name):
                    for r in rows if name == "_counts" else [rows]:
                        check_finite(name[1:], r, 0.0)
        K = len(model._gnb.classes_)
        model._index = {c: k for k, c in enumerate(model._gnb.classes_)}
        shapes = [len(model._values), len(model._counts), len(model._totals), len(model._seen)]
        if shapes != [len(model._nominal)] * 4 or any(
            len(rows) != K or any(len(r) != len(v) for r in rows) or len(t) != K or len(s) != K
            for rows, v, t, s in zip(model._counts, model._values, model._totals, model._seen)
        ):
            raise ValueError("invalid mixed_nb state: shapes do not match classes and nominal features")
        return model
