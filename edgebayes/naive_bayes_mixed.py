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
like GaussianNB's estimates (see `edgebayes.naive_bayes_nominal.NominalCounts.learn`).

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
`edgebayes.naive_bayes_paper`. A numeric feature adds its Gaussian density N(x; mu_k, var_k +
eps) to the sum, as section 2 says for numerical data (a density, not a probability: its scale
depends on the feature's unit, so the paper's experiments, and ours, declare every feature
nominal). The probabilities are the Param_k normalised to sum 1; when every Param_k is 0 (no
value of x seen in any class) they are uniform, the paper's tie resolved at random. With 3 or
more classes a class holding v gets +1 however many classes lack v (the paper's example has two
classes, where the readings coincide).

``scoring="moa"`` is MOA's NaiveBayes exactly, the SRP paper's NB baseline (Gomes et al. 2019
ran MOA's): its ``doNaiveBayesPrediction`` with its nominal and Gaussian observers, a product in
floating point in attribute order, MOA's Laplace correction and sample variances, no smoothing
(`edgebayes.naive_bayes_moa`). Nominal values are MOA's value indices (non-negative integer
codes). The probabilities are the votes normalised (NaN read as 0; infinite votes share 1;
uniform when all are 0).
"""


from __future__ import annotations

import sys

import numpy as np

from edgebayes import naive_bayes_batch as batch
from edgebayes import naive_bayes_paper as paper
from edgebayes.base import (
    ClassLimitError,
    Learner,
    as_floats,
    check_label,
    check_size_bound,
    check_weight,
    refuse_malformed,
)
from edgebayes.naive_bayes import GaussianNB
from edgebayes.naive_bayes_moa import predict as moa_predict
from edgebayes.naive_bayes_moa import value_bounds, vote_proba, votes
from edgebayes.naive_bayes_nominal import NominalCounts, columns, log_table, posterior_one, posterior_rows
from edgebayes.naive_bayes_params import SCORING, ZERO_FREQUENCY, check_mixed_params, rate_constants, split_columns
from edgebayes.naive_bayes_state import read_layout
from edgebayes.sizes import insert_bytes

__all__ = ["SCORING", "ZERO_FREQUENCY", "MixedNB", "split_columns"]

_NAN = float("nan")


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
        scoring: ``"product"`` (default), ``"paper_sum"`` (Artiemjew and Idzikowski 2019, section
            2, eq. 2, Param_k = P(k) sum_m P(v_m | k), zero frequencies by the counter increment
            of its section 2.1; ``zero_frequency``, ``alpha`` and ``borrow_factor`` unused) or
            ``"moa"`` (MOA's NaiveBayes; ``zero_frequency``, ``alpha``, ``borrow_factor`` and
            ``var_smoothing`` unused, ``learning_rate`` must be None; `predict_one` is MOA's
            ``Utils.maxIndex`` over the votes in ``classes`` order). The module doc gives each rule.
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
        self.classes = check_mixed_params(nominal_attributes, learning_rate, zero_frequency, alpha,
                                          borrow_factor, scoring, classes)
        self.nominal_attributes = nominal_attributes
        self.learning_rate = learning_rate
        self.var_smoothing = var_smoothing
        self.zero_frequency = zero_frequency
        self.alpha = alpha
        self.borrow_factor = borrow_factor
        self.scoring = scoring
        self._top, self._log_keep = rate_constants(learning_rate)  # as GaussianNB: 1/n up to 1/alpha
        self.n_features_in_: int | None = None
        self._nominal: list[int] = []
        self._numeric: list[int] = []
        self._index: dict = {}
        self._nom = NominalCounts()
        self._tables = None  # per nominal feature, per value column: K log-probabilities (or, for
        # "paper_sum", K frequencies; for "moa", MOA's value bounds)
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
        X = batch.check_rows(X, self.n_features_in_, learning=True)
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
        return self._nom.new_values(self._layout(len(xs))[0], xs)

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
        held = self._nom.planned_bytes(nominal, values or {}, len(self._index) + len(labels))
        index = sys.getsizeof(self._index) + insert_bytes(self._index, labels)
        gnb = self._gnb.planned_bytes(labels, len(numeric) or 1)
        return int(sys.getsizeof(self) + gnb + held + index)

    def _check_room(self, labels: list, values: dict, d: int) -> None:
        """ClassLimitError unless the new ``labels`` and ``values`` fit ``max_size_bytes``."""
        if not (labels or values):
            return
        need = self.planned_bytes(labels, d, values)
        if need > self.max_size_bytes:
            what = f"class {labels[0]!r}" if labels else f"nominal value(s) {values}"
            raise ClassLimitError(
                f"{what} refused: max_size_bytes={self.max_size_bytes} holds {len(self._index)} "
                f"classes and {sum(map(len, self._nom.values))} nominal values; this sample needs {need} bytes"
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
        values = self._nom.new_row_values(self._layout(X.shape[1])[0], X)
        self._check_room(new, values, X.shape[1])

    def _start(self, d: int, nominal: list, numeric: list) -> None:
        self.n_features_in_ = d
        self._nominal, self._numeric = nominal, numeric
        self._nom = NominalCounts(len(nominal))

    def _sync_classes(self) -> None:
        """Add the rows of the classes GaussianNB has added since the last call."""
        for y in self._gnb.classes_[len(self._index):]:
            self._index[y] = len(self._index)
            self._nom.add_class()
            if self.scoring == "moa":
                self._tables = None  # the value-index bounds gain a class: rebuilt when needed

    def _learn_nominal(self, vs: list, k: int, w: float) -> None:
        """Counts of one sample's nominal values ``vs`` for class k, weight w (`NominalCounts.learn`)."""
        bounds = self._tables if self.scoring == "moa" else None  # kept up to date, not rebuilt
        self._nom.learn(vs, k, w, self._top, self._log_keep, bounds)
        if bounds is None:
            self._tables = None

    # ------------------------------------------------------------------ prediction

    def _log_tables(self) -> list[np.ndarray]:
        """Per nominal feature, log P(v | k) as an array (K, V + 1) (`naive_bayes_nominal.log_table`)."""
        if self._tables is None:
            self._tables = self._nom.tables(log_table, self.zero_frequency, self.alpha, self.borrow_factor)
        return self._tables

    def _frequency_tables(self) -> list[np.ndarray]:
        """``"paper_sum"``: per nominal feature, P(v | k), (K, V + 1) (`naive_bayes_paper.frequency_table`)."""
        if self._tables is None:
            self._tables = self._nom.tables(paper.frequency_table)
        return self._tables

    def _paper_scores(self, X: np.ndarray) -> np.ndarray:
        """``"paper_sum"``: the paper's Param_k = P(k) (sum of the nominal frequencies + sum of
        the numeric densities), (n, K), for the rows of the checked ``X`` (n, n_features_in_)."""
        gnb = self._gnb
        S = np.zeros((len(X), len(self._index)))
        for table, cols in zip(self._frequency_tables(), self._nominal_columns(X)):
            S += table[:, cols].T
        if self._numeric:
            S += paper.density_sums(X[:, self._numeric], gnb.means_, gnb.variances_ + gnb.epsilon_, gnb.counts_)
        return S * gnb.class_prior_

    def _nominal_columns(self, X: np.ndarray) -> list[np.ndarray]:
        """Per nominal feature, the table column of each row's value (V for unseen/missing)."""
        return [columns(values, X[:, j]) for values, j in zip(self._nom.values, self._nominal)]

    def _moa_votes(self, xs: list) -> list[float]:
        """``"moa"``: MOA's vote of each class of `classes_` for the checked ``xs``
        (`edgebayes.naive_bayes_moa.votes`)."""
        gnb, nom = self._gnb, self._nom
        if self._tables is None:
            self._tables = [value_bounds(rows, list(values)) for values, rows in zip(nom.values, nom.counts)]
        return votes(xs, gnb.class_prior_.tolist(), self._numeric, (gnb.counts_, gnb.means_, gnb.variances_),
                     self._nominal, (nom.values, nom.counts, nom.totals, self._tables))

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
        return moa_predict(self.classes_, self._moa_votes(xs), self.classes)

    def predict_proba_one(self, x) -> dict:
        """Class probabilities {label: float} for ``x``, summing to 1 (empty before learning).

        Raises:
            ValueError: bad x (as `learn_one`).
        """
        if not self._index:
            return {}
        xs, _ = as_floats(x, self.n_features_in_)
        if self.scoring == "paper_sum":
            return dict(zip(self.classes_, paper.normalised_scores(self._paper_scores(np.array([xs])))[0].tolist()))
        if self.scoring == "moa":
            return dict(zip(self.classes_, vote_proba(self._moa_votes(xs))))
        post = self._gnb.predict_proba_one(self._numeric_part(xs, self._numeric))
        if not self._nominal:
            return post
        post = posterior_one(list(post.values()), xs, self._nominal, self._nom.values, self._log_tables())
        return dict(zip(self.classes_, post))

    def predict_proba_many(self, X) -> np.ndarray:
        """Class probabilities, float64 array (n, len(classes_)), columns in `classes_` order.

        Raises:
            ValueError: bad X (shape, non-numeric, +/-inf).
        """
        if not self._index:
            return np.zeros((len(X), 0))
        X = np.asarray(X)
        if X.ndim != 2:  # an empty 1-D X too, which check_rows would take for no rows
            raise ValueError(f"X must have shape (n, {self.n_features_in_}), got {X.shape}")
        X = batch.check_rows(X, self.n_features_in_)
        if self.scoring == "paper_sum":
            return paper.normalised_scores(self._paper_scores(X))
        if self.scoring == "moa":
            return np.array([vote_proba(self._moa_votes(xs)) for xs in X.tolist()]).reshape(len(X), len(self._index))
        P = self._gnb.predict_proba_many(X[:, self._numeric] if self._numeric else np.full((len(X), 1), _NAN))
        if not self._nominal:
            return P
        return posterior_rows(P, self._log_tables(), self._nominal_columns(X))

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
        return [list(values) for values in self._nom.values]

    @property
    def category_counts_(self) -> list[np.ndarray]:
        """Per nominal feature, the weight of each value per class: float64 (n_classes, n_values).
        Exact sample weights without a learning rate; effective (faded) weights with one."""
        K = len(self._index)
        return [np.array(c, dtype=float).reshape(K, len(v)) for c, v in zip(self._nom.counts, self._nom.values)]

    @property
    def n_samples_seen_(self) -> float:
        """Total sample weight learned."""
        return self._gnb.n_samples_seen_

    def memory_bytes(self) -> int:
        """Bytes held: the GaussianNB's, the class index, and the nominal lists, value dicts
        and cached tables (`NominalCounts.held_bytes`)."""
        held = self._nom.held_bytes(self._tables)
        return int(sys.getsizeof(self) + self._gnb.memory_bytes() + held + sys.getsizeof(self._index))

    def state(self) -> dict:
        """Plain, msgpack-serialisable state with ``"kind": "mixed_nb"`` (see `from_state`)."""
        nominal = None if self.nominal_attributes is None else [int(i) for i in self.nominal_attributes]
        return {
            "kind": "mixed_nb",
            "params": {**self._params(), "nominal_attributes": nominal},  # the constructor's arguments
            "gaussian": self._gnb.state(),
            "n_features_in": self.n_features_in_,
            **self._nom.state(),
        }

    @classmethod
    @refuse_malformed("mixed_nb")
    def from_state(cls, state: dict) -> MixedNB:
        """Rebuild the learner that `state` described (predictions identical, learning goes on).

        Raises:
            ValueError: not a mixed_nb state, or a malformed one: a missing key, a value of
                the wrong type, shapes that do not match the classes and nominal features, a
                non-finite number or a negative count (`edgebayes.naive_bayes_state`).
        """
        if not isinstance(state, dict) or state.get("kind") != "mixed_nb":
            raise ValueError("not a mixed_nb state")
        model = cls(**state["params"])
        model._gnb = GaussianNB.from_state(state["gaussian"])
        if model._gnb.learning_rate != model.learning_rate or model._gnb.var_smoothing != model.var_smoothing:
            raise ValueError("invalid mixed_nb state: the Gaussian part's parameters differ")
        layout = read_layout(state["n_features_in"], model._gnb.n_features_in_, model.nominal_attributes)
        model._index = {c: k for k, c in enumerate(model._gnb.classes_)}
        if layout is not None:
            model._start(state["n_features_in"], *layout)
            model._nom = NominalCounts.from_state(state, len(model._nominal), len(model._index))
        return model
