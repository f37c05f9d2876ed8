"""GaussianNB (edgebayes.naive_bayes): exactness, batch == per-sample, weights, robustness,
bad input, the cases C01 C03 C04 C05 C08 C11 C13 C30 of docs/cases.md, Wu and Xiong's (2023) claim that
online learning gives the offline 10-fold cross-validated accuracy on the UCI sets, and the
two backends (compiled, python) giving the same floats, errors and checkpoints."""

from __future__ import annotations

import inspect
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgebayes import codec
from edgebayes.base import ClassLimitError, make_learner
from edgebayes.naive_bayes import EPS_FLOOR, GaussianNB
from edgebayes.streams import open_stream
from tests.conftest import BACKENDS, implementation, shared_path

pytestmark = pytest.mark.usefixtures("backend")  # every test on both backends

#: exact; the paper's rate; a rate whose warm-up ends at n = 3; the paper's Algorithm 2 as
#: written (no warm-up) at both rates
MODES = [{"learning_rate": None}, {"learning_rate": 0.01}, {"learning_rate": 0.3},
         {"learning_rate": 0.01, "warm_up": False}, {"learning_rate": 0.3, "warm_up": False}]
MODE_IDS = ["exact", "lr0.01", "lr0.3", "lr0.01-no-warm-up", "lr0.3-no-warm-up"]

# ---------------------------------------------------------------- strategies and helpers

values = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def samples(draw, nan=False, weights=False, max_n=40):
    d = draw(st.integers(1, 4))
    n = draw(st.integers(1, max_n))
    cell = st.one_of(values, st.just(math.nan)) if nan else values
    X = np.array(draw(st.lists(st.lists(cell, min_size=d, max_size=d), min_size=n, max_size=n)))
    y = draw(st.lists(st.sampled_from(["a", "b", 7]), min_size=n, max_size=n))
    w = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)) if weights else None
    return X, y, w


def _close(actual, expected, scale):
    """Equal to 1e-9 relative, or to 1e-12 of the data's scale for values near 0."""
    np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-12 * scale)


def _assert_same_model(a: GaussianNB, b: GaussianNB, X):
    scale = 1.0 + float(np.nanmax(np.abs(X), initial=0.0))
    assert a.classes_ == b.classes_
    _close(b.class_prior_, a.class_prior_, 1.0)
    _close(b.counts_, a.counts_, 1.0)
    _close(b.means_, a.means_, scale)
    _close(b.variances_, a.variances_, scale**2)


def _assert_same_proba(actual, model: GaussianNB, X):
    """Probabilities equal to what parameters equal to ~1e-9 relative allow.

    Such parameters move each joint log-likelihood l_k by about 1e-9 |l_k|, and p_k by
    p_k (dl_k - sum_j p_j dl_j) to first order: the bound is per element, with 10x slack.
    """
    expected = model.predict_proba_many(X)
    for row, x, p in zip(actual, X, expected):
        jll = np.abs(np.array(list(model.joint_log_likelihood_one(x).values())))
        jll[~np.isfinite(jll)] = 0.0  # a class at -inf has p = 0 and adds nothing
        bound = 1e-8 * p * (1.0 + jll + p @ jll) + 1e-12
        assert np.all(np.abs(row - p) <= bound), (x, row, p, bound)


def _offline(X, y):
    """numpy estimates: priors n_k/n, means, population variances, epsilon (scikit-learn's)."""
    classes = list(dict.fromkeys(y))
    y = np.array(y, dtype=object)
    prior = np.array([np.mean(y == c) for c in classes])
    mean = np.array([X[y == c].mean(axis=0) for c in classes])
    var = np.array([X[y == c].var(axis=0) for c in classes])
    eps = max(1e-9 * X.var(axis=0).max(), EPS_FLOOR)
    return classes, prior, mean, var, eps


def _offline_predict(params, X):
    """argmax_k log P(k) + sum_j log N(x_j; mu_kj, var_kj + eps): the same formula, offline."""
    classes, prior, mean, var, eps = params
    v = var + eps
    jll = np.log(prior) - 0.5 * (np.log(2 * np.pi * v).sum(axis=1) + (((X[:, None, :] - mean) ** 2) / v).sum(axis=2))
    return [classes[k] for k in jll.argmax(axis=1)]


def _fit(X, y, w=None, cls=GaussianNB, **params):
    model = cls(**params)
    for i, (xi, yi) in enumerate(zip(X, y)):
        model.learn_one(xi, yi, 1.0 if w is None else w[i])
    return model


# ---------------------------------------------------------------- exactness (Algorithm 1)


@settings(max_examples=60, deadline=None)
@given(samples())
def test_exact_mode_equals_offline_estimates(data):
    X, y, _ = data
    model = _fit(X, y)
    classes, prior, mean, var, eps = _offline(X, y)
    scale = 1.0 + np.abs(X).max()
    assert model.classes_ == classes
    _close(model.class_prior_, prior, 1.0)
    _close(model.means_, mean, scale)
    _close(model.variances_, var, scale**2)
    _close(model.epsilon_, eps, 1e-9 * scale**2)


def test_exact_mode_equals_offline_on_a_real_stream():
    X, y = open_stream(shared_path("data/elec2/elec2.csv.gz"), drop=["date"]).to_arrays(5000)
    model = _fit(X, y)
    classes, prior, mean, var, eps = _offline(X, y)
    assert model.classes_ == classes == ["UP", "DOWN"]
    np.testing.assert_allclose(model.class_prior_, prior, rtol=1e-12)
    np.testing.assert_allclose(model.means_, mean, rtol=1e-9)
    # constant columns (the first 17,424 rows of vicprice, vicdemand, transfer): exactly 0
    # online, rounding noise (1e-28) in numpy's two-pass variance
    np.testing.assert_allclose(model.variances_, var, rtol=1e-9, atol=1e-15)
    assert model.variances_[:, 4:].tolist() == [[0.0] * 3, [0.0] * 3]
    assert model.epsilon_ == pytest.approx(eps, rel=1e-9)


def test_learning_rate_zero_is_the_exact_mode():
    X, y = np.arange(24.0).reshape(12, 2) ** 1.5, list("abcabcaabbcc")
    assert _fit(X, y, learning_rate=0).state()["variances"] == _fit(X, y).state()["variances"]


# ---------------------------------------------------------------- batch == per sample, weights


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@settings(max_examples=40, deadline=None)
@given(data=samples(nan=True, weights=True), split=st.integers(0, 40))
def test_learn_many_equals_learn_one(mode, data, split):
    X, y, w = data
    one = _fit(X, y, w, **mode)
    many = GaussianNB(**mode)
    many.learn_many(X[:split], y[:split], w[:split])
    many.learn_many(X[split:], y[split:], w[split:])
    _assert_same_model(one, many, X)
    if one.classes_:
        Xp = np.nan_to_num(X, nan=0.5)
        _assert_same_proba(many.predict_proba_many(Xp), one, Xp)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_learn_many_equals_learn_one_on_a_real_stream_across_chunks(mode, monkeypatch):
    import edgebayes.naive_bayes_batch as batch

    monkeypatch.setattr(batch, "CHUNK", 700)  # several chunks, some classes absent from a chunk
    X, y = open_stream(shared_path("data/elec2/elec2.csv.gz"), drop=["date"]).to_arrays(3000)
    one, many = _fit(X, y, **mode), GaussianNB(**mode)
    many.learn_many(X, y)
    _assert_same_model(one, many, X)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@settings(max_examples=40, deadline=None)
@given(data=samples(nan=True, weights=True))
def test_weight_w_equals_w_repeated_updates(mode, data):
    X, y, w = data
    weighted = _fit(X, y, w, **mode)
    repeated = GaussianNB(**mode)
    for xi, yi, wi in zip(X, y, w):
        for _ in range(wi):
            repeated.learn_one(xi, yi)
    _assert_same_model(repeated, weighted, X)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@settings(max_examples=30, deadline=None)
@given(w1=st.floats(0.01, 5), w2=st.floats(0.01, 5), start=st.integers(0, 5))
def test_fractional_weights_compose(mode, w1, w2, start):
    """learn(x, w1) then learn(x, w2) == learn(x, w1 + w2), through the warm-up too."""
    a, b = GaussianNB(**mode), GaussianNB(**mode)
    for i in range(start):
        a.learn_one([float(i), -2.0 * i], "a")
        b.learn_one([float(i), -2.0 * i], "a")
    a.learn_one([3.5, 1.0], "b", w1)
    a.learn_one([3.5, 1.0], "b", w2)
    b.learn_one([3.5, 1.0], "b", w1 + w2)
    _assert_same_model(a, b, np.array([[10.0]]))


def test_zero_weight_changes_nothing():
    model = _fit([[1.0, 2.0], [2.0, 0.0]], ["a", "b"])
    before = model.state()
    model.learn_one([5.0, 5.0], "c", w=0)
    model.learn_many([[5.0, 5.0]], ["d"], w=[0.0])
    assert model.state() == before


def test_new_class_mid_stream_gets_its_prior():
    model = _fit([[0.0], [1.0], [2.0], [3.0]], ["a", "a", "a", "b"])
    assert model.classes_ == ["a", "b"]
    np.testing.assert_allclose(model.class_prior_, [0.75, 0.25], rtol=1e-15)
    model.learn_many([[4.0], [5.0]], ["c", "a"])
    assert model.classes_ == ["a", "b", "c"]
    np.testing.assert_allclose(model.class_prior_, [4 / 6, 1 / 6, 1 / 6], rtol=1e-15)


def test_numpy_labels_are_stored_as_plain_python_values():
    model = GaussianNB()
    model.learn_many(np.ones((3, 1)), np.array([3, 4, 3]))
    model.learn_one([1.0], np.str_("x"))
    assert model.classes_ == [3, 4, "x"]
    assert [type(c) for c in model.classes_] == [int, int, str]


# ---------------------------------------------------------------- missing values


def test_nan_features_are_skipped_in_learning_and_prediction():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2))
    y = ["a" if v > 0 else "b" for v in X[:, 0] + 0.3 * rng.normal(size=200)]
    extra = np.column_stack([X, np.where(rng.random(200) < 0.5, np.nan, rng.normal(size=200))])
    two, three = _fit(X, y, var_smoothing=0.0), _fit(extra, y, var_smoothing=0.0)
    np.testing.assert_array_equal(three.means_[:, :2], two.means_)
    np.testing.assert_array_equal(three.variances_[:, :2], two.variances_)
    for x in X[:20]:
        p2, p3 = two.predict_proba_one(x), three.predict_proba_one([*x, math.nan])
        assert p3 == pytest.approx(p2, rel=1e-12, abs=1e-15)
    P = three.predict_proba_many(np.column_stack([X[:20], np.full(20, np.nan)]))
    np.testing.assert_allclose(P, two.predict_proba_many(X[:20]), rtol=1e-12, atol=1e-15)


def test_a_class_that_never_saw_a_feature_skips_it():
    model = _fit([[1.0, np.nan], [np.nan, 5.0], [1.2, np.nan]], ["a", "b", "a"])
    assert model.counts_.tolist() == [[2.0, 0.0], [0.0, 1.0]]
    for x in ([1.1, 5.0], [1e6, -1e6], [np.nan, np.nan]):
        proba = model.predict_proba_one(x)
        assert all(math.isfinite(p) for p in proba.values())
        assert sum(proba.values()) == pytest.approx(1.0, abs=1e-12)
    assert model.predict_proba_one([np.nan, np.nan]) == pytest.approx({"a": 2 / 3, "b": 1 / 3}, rel=1e-12)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_a_feature_that_is_always_missing(mode):
    """The kind of C16 (always-NaN feature, docs/cases.md) for naive Bayes: ignored, never an error."""
    X = np.column_stack([np.arange(6.0), np.full(6, np.nan)])
    y = list("aabbab")
    one, many = _fit(X, y, **mode), GaussianNB(**mode)
    many.learn_many(X, y)
    for model in (one, many):
        assert model.counts_[:, 1].tolist() == [0.0, 0.0]
        assert model.predict_proba_one([0.5, np.nan]) == pytest.approx(
            model.predict_proba_one([0.5, 123.0]), rel=1e-12)
        _assert_distribution(model.predict_proba_many([[0.5, np.nan]])[0])
    assert GaussianNB.from_state(one.state()).predict_proba_one([4.0, np.nan]) == one.predict_proba_one([4.0, np.nan])


# ---------------------------------------------------------------- probabilities stay a distribution


def _assert_distribution(proba):
    values = list(proba.values()) if isinstance(proba, dict) else list(proba)
    assert all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in values)
    assert abs(sum(values) - 1.0) <= 1e-12


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@settings(max_examples=40, deadline=None)
@given(
    data=samples(max_n=10),
    x=st.lists(st.floats(-1.7e308, 1.7e308, allow_nan=False), min_size=4, max_size=4),
)
def test_probabilities_sum_to_one_for_any_x(mode, data, x):
    X, y, _ = data
    model = _fit(X, y, **mode)
    x = x[: model.n_features_in_]
    _assert_distribution(model.predict_proba_one(x))
    for row in model.predict_proba_many(np.array([x, X[0]])):
        _assert_distribution(row)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_constant_features_one_sample_classes_and_far_x(mode):
    model = GaussianNB(**mode)
    model.learn_one([3.0, 1.0], "a")
    for x in ([3.0, 1.0], [3.0, 2.0], [1e300, -1e300]):  # everything constant so far
        assert model.predict_proba_one(x) == {"a": 1.0}
    model.learn_one([3.0, 7.0], "b")  # first feature constant, one sample per class
    model.learn_one([3.0, 7.0], "c")
    for x in ([3.0, 1.0], [3.0, 4.0], [-5.0, 1e6], [1e200, 1e200], [-1.7e308, 1.7e308]):
        proba = model.predict_proba_one(x)
        _assert_distribution(proba)
        _assert_distribution(model.predict_proba_many([x])[0])
    assert model.predict_proba_one([3.0, 1.0])["a"] == 1.0
    # equidistant from the three classes: the priors, 1/3 each (0.9801, 0.0099, 0.01 without
    # the warm-up, where the first sample set the priors and the next two moved them by alpha)
    priors = {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}
    if mode.get("warm_up", True) is False:
        a = mode["learning_rate"]
        priors = {"a": (1 - a) ** 2, "b": a * (1 - a), "c": a}
    assert model.predict_proba_one([3.0, 4.0]) == pytest.approx(priors, rel=1e-9)


def test_far_x_goes_to_the_class_with_the_larger_spread():
    """When every density underflows, the limit: the widest class (in scaled distance) wins."""
    model = _fit([[-1.0], [1.0], [9.0], [11.0], [-1.0], [0.0]], ["a", "a", "b", "b", "a", "a"])
    # a: mean -0.25, variance 0.6875; b: mean 10, variance 1: b's density has the heavier tails
    for x in (1e9, 1e200, 1.7e308, -1e9, -1e200, -1.7e308):
        assert model.predict_proba_one([x]) == {"a": 0.0, "b": 1.0}
    np.testing.assert_array_equal(model.predict_proba_many([[1e200], [-1e200]]), [[0.0, 1.0], [0.0, 1.0]])


# ---------------------------------------------------------------- bad input


def _trained():
    return _fit(np.arange(12.0).reshape(4, 3), ["a", "b", "a", "b"])


@pytest.mark.parametrize(
    "x, y, w, message",
    [
        ([1.0, 2.0], "a", 1.0, "2 features"),
        ([1.0, 2.0, 3.0, 4.0], "a", 1.0, "4 features"),
        ([1.0, "hot", 3.0], "a", 1.0, "not a number"),
        ([1.0, None, 3.0], "a", 1.0, "not a number"),
        ("abc", "a", 1.0, "sequence of numbers"),
        (np.array([["1"], ["2"], ["3"]]), "a", 1.0, "1-D"),
        (np.array(["1", "2", "3"]), "a", 1.0, "numbers"),
        ([1.0, math.inf, 3.0], "a", 1.0, "finite"),
        ([-math.inf, 0.0, 3.0], "a", 1.0, "finite"),
        ([1.0, 2.0, 3.0], None, 1.0, "None"),
        ([1.0, 2.0, 3.0], math.nan, 1.0, "NaN"),
        ([1.0, 2.0, 3.0], ["a"], 1.0, "hashable"),
        ([1.0, 2.0, 3.0], "a", -1.0, "weight"),
        ([1.0, 2.0, 3.0], "a", math.nan, "weight"),
        ([1.0, 2.0, 3.0], "a", "x", "weight"),
    ],
)
def test_bad_input_raises_and_leaves_the_model_unchanged(x, y, w, message):
    model = _trained()
    before = model.state()
    with pytest.raises(ValueError, match=message):
        model.learn_one(x, y, w)
    assert model.state() == before
    if y == "a" and w == 1.0:
        with pytest.raises(ValueError, match=message):
            model.predict_proba_one(x)


@pytest.mark.parametrize(
    "X, y, w, message",
    [
        (np.ones((2, 2)), ["a", "b"], None, "shape"),
        (np.ones((2, 3)), ["a"], None, "1 labels"),
        (np.ones((2, 3)), ["a", "b"], [1.0], "1 weights"),
        (np.ones((2, 3)), ["a", "b"], [1.0, -1.0], "weights"),
        ([[1.0, 2.0, math.inf]], ["a"], None, "inf"),
        ([[1.0, 2.0, "x"]], ["a"], None, "numbers"),
        (np.ones((3, 3)), ["new", None, "b"], None, "None"),
        (np.ones((2, 3)), ["new", math.nan], None, "NaN"),
        (np.ones((2, 3)), ["a", None], [1.0, 0.0], "None"),
    ],
)
def test_bad_batch_raises_and_leaves_the_model_unchanged(X, y, w, message):
    model = _trained()
    before = model.state()
    with pytest.raises(ValueError, match=message):
        model.learn_many(X, y, w)
    assert model.state() == before
    assert model.classes_ == ["a", "b"]


def test_first_sample_with_a_bad_label_does_not_fix_the_length():
    model = GaussianNB()
    with pytest.raises(ValueError):
        model.learn_one([1.0, 2.0], None)
    model.learn_one([1.0, 2.0, 3.0], "a")
    assert model.n_features_in_ == 3


@pytest.mark.parametrize("params", [{"learning_rate": 1.0}, {"learning_rate": -0.1}, {"learning_rate": "fast"},
                                    {"var_smoothing": -1e-9}, {"var_smoothing": math.inf},
                                    {"warm_up": 1}, {"warm_up": False}, {"warm_up": False, "learning_rate": 0}])
def test_bad_parameters_are_refused(params):
    with pytest.raises(ValueError, match=next(iter(params))):
        GaussianNB(**params)


# ---------------------------------------------------------------- Algorithm 2 as written


def _algorithm_2(X, y, alpha):
    """The paper's Algorithm 2 written out plainly, one estimate at a time: the first sample of
    the stream or of a class sets an estimate (Eqs. (8)-(10) at i = 0), every later one moves it
    by alpha: prior Eq. (12), mean Eq. (13), variance (the square of Eq. (14)'s deviation)."""
    priors, means, variances = {}, {}, {}
    for i, (x, c) in enumerate(zip(X, y)):
        for k in priors:
            priors[k] *= 1 - alpha
        priors[c] = priors.get(c, 0.0) + (1.0 if i == 0 else alpha)
        if c not in means:
            means[c], variances[c] = list(x), [0.0] * len(x)
            continue
        for j, v in enumerate(x):
            d = v - means[c][j]
            means[c][j] += alpha * d
            variances[c][j] = (1 - alpha) * (variances[c][j] + alpha * d * d)
    return priors, means, variances


@pytest.mark.parametrize("alpha", [0.01, 0.3])
def test_no_warm_up_is_the_papers_algorithm_2_as_written(alpha):
    rng = np.random.default_rng(12)
    X, y = rng.normal(size=(60, 3)) * [1.0, 10.0, 0.1], rng.choice(["a", "b", "c"], 60).tolist()
    model = _fit(X, y, learning_rate=alpha, warm_up=False)
    priors, means, variances = _algorithm_2(X.tolist(), y, alpha)
    _close(model.class_prior_, [priors[c] for c in model.classes_], 1.0)
    _close(model.means_, [means[c] for c in model.classes_], 10.0)
    _close(model.variances_, [variances[c] for c in model.classes_], 100.0)
    many = GaussianNB(alpha, warm_up=False)
    many.learn_many(X, y)
    _assert_same_model(model, many, X)


def test_the_warm_up_is_the_exact_model_until_a_class_has_1_over_alpha_samples():
    """Why the warm-up rate equals the exact model on the small UCI sets (results.md): below
    1/alpha samples an estimate is the plain average; without the warm-up it is not."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(99, 2)), rng.choice([0, 1], 99).tolist()
    exact, warm, literal = _fit(X, y), _fit(X, y, learning_rate=0.01), _fit(X, y, learning_rate=0.01, warm_up=False)
    _assert_same_model(exact, warm, X)
    assert not np.allclose(literal.means_, exact.means_, rtol=1e-3)
    assert _means(0.5, [2, -2, 5], warm_up=False) == [2.0, 0.0, 2.5]  # alpha = 1/2: warm-up ends at 2
    assert _means(0.1, [0, 10], warm_up=False) == [0.0, 1.0]  # C04's value (docs/cases.md)


def test_a_state_without_warm_up_loads_with_the_warm_up():
    nb = GaussianNB(0.01, warm_up=False)
    nb.learn_one([0.0, 1.0], "a")
    old = {k: v for k, v in nb.state().items() if k != "warm_up"}
    assert GaussianNB.from_state(old).warm_up is True
    assert GaussianNB.from_state(nb.state()).state() == nb.state()


def test_from_state_refuses_another_kind():
    with pytest.raises(ValueError, match="gaussian_nb"):
        GaussianNB.from_state({"kind": "srp"})


# ------------------------------------------------------------ docs/cases.md


def test_c01_one_sample_per_class():
    model = GaussianNB()
    model.learn_one([1.0], "a")
    model.learn_one([5.0], "b")
    assert model.variances_.tolist() == [[0.0], [0.0]]  # stored variance per class
    assert model.predict_one([1.0]) == "a"
    for x in ([1.0], [3.0]):
        _assert_distribution(model.predict_proba_one(x))
    assert model.predict_proba_one([3.0]) == pytest.approx({"a": 0.5, "b": 0.5}, abs=1e-9)
    np.testing.assert_allclose(model.predict_proba_many([[3.0]]), [[0.5, 0.5]], atol=1e-9)


@pytest.mark.parametrize("stream", [[0.3, 0.3], [100000000.1, 100000000.1]])
def test_c03_exponentially_weighted_variance_of_a_constant_is_zero(stream):
    model = GaussianNB(learning_rate=0.1)
    for v in stream:
        model.learn_one([v], "a")
        assert model.variances_[0, 0] == 0.0


def test_c03_sanity_and_variance_never_negative():
    model = GaussianNB(learning_rate=0.5)
    for v in (1.0, 3.0):
        model.learn_one([v], "a")
    assert model.means_[0, 0] == 2.0
    assert model.variances_[0, 0] == 1.0
    rng = np.random.default_rng(0)
    for lr in (0.1, 0.5, 0.9):
        model = GaussianNB(learning_rate=lr)
        for v in 1e8 + rng.integers(0, 3, 500) * 0.1:
            model.learn_one([v], "a")
            assert model.variances_[0, 0] >= 0.0


def _means(learning_rate, stream, warm_up=True):
    model, out = GaussianNB(learning_rate=learning_rate, warm_up=warm_up), []
    for v in stream:
        model.learn_one([float(v)], "a")
        out.append(model.means_[0, 0])
    return out


def test_c04_mean_initialisation_is_tracked_by_count_not_by_zero():
    assert _means(0.5, [0, 1]) == [0.0, 0.5]
    assert _means(0.5, [2, -2, 5]) == [2.0, 0.0, 2.5]
    # C04 (docs/cases.md) expects [0.0, 1.0] (a plain EW mean after the first sample); docs/design.md 2.1's
    # warm-up rate max(alpha, 1/n) = 1/2 gives 5.0. What the case guards against is 10.0, a
    # mean of 0 taken for "uninitialised".
    assert _means(0.1, [0, 10]) == [0.0, 5.0]
    # Past the warm-up (n > 1/alpha) the rate is alpha, and the case's value comes back.
    assert _means(0.1, [0] * 10 + [10])[-1] == pytest.approx(1.0, rel=1e-15)


def test_c05_first_sample_sets_the_mean():
    assert _means(0.5, [1, 1, 1]) == [1.0, 1.0, 1.0]


def test_c08_outlier_log_space():
    model = _fit([[-1.0], [0.0], [1.0], [0.0], [1.0], [2.0]], list("aaabbb"))
    assert model.predict_one([1000.0]) == "b"
    proba = model.predict_proba_one([1000.0])
    _assert_distribution(proba)
    assert proba["b"] == 1.0
    jll = model.joint_log_likelihood_one([1000.0])
    # population variance 2/3 (plus epsilon = 1e-9 x 11/12, a 1.4e-9 relative change)
    assert jll["b"] - jll["a"] == pytest.approx(1499.25, rel=2e-9)
    np.testing.assert_array_equal(model.predict_proba_many([[1000.0]]), [[0.0, 1.0]])


def test_c11_probabilities_cover_every_class_in_a_fixed_order():
    declared = [0, 1, 2, 3, 4, 5, 6]
    model = GaussianNB()
    for label in (4, 4, 1):
        model.learn_one([0.0, 1.0], label)  # identical x: the likelihoods tie, the priors decide
    proba = model.predict_proba_one([0.3, 2.0])
    assert list(proba) == model.classes_ == [4, 1]
    padded = [proba.get(c, 0.0) for c in declared]
    np.testing.assert_allclose(padded, [0.0, 1 / 3, 0.0, 0.0, 2 / 3, 0.0, 0.0], rtol=1e-12)
    before = model.predict_proba_many([[0.3, 2.0]])
    assert before.shape == (1, 2)
    model.learn_one([0.0, 1.0], 0)  # a new class appends a column, never reorders
    after = model.predict_proba_many([[0.3, 2.0]])
    assert model.classes_ == [4, 1, 0] and after.shape == (1, 3)
    np.testing.assert_allclose(after[0], [0.5, 0.25, 0.25], rtol=1e-12)


def test_c13_votes_too_small_for_linear_space_still_normalise():
    """Raw votes in the ratio 0.0004 : 0.000229, each underflowing to 0 in linear space."""
    L = 2.0**-10  # class a: {-1, 1}, class b: {L - 1, L + 1}; both variance 1, equal priors
    model = _fit([[-1.0], [L - 1.0], [1.0], [L + 1.0]], ["a", "b", "a", "b"])
    v = model.variances_[0, 0] + model.epsilon_
    assert model.variances_[1, 0] + model.epsilon_ == v
    x = (L * L - 2.0 * v * math.log(0.0004 / 0.000229)) / (2.0 * L)  # about -571
    jll = model.joint_log_likelihood_one([x])
    assert math.exp(jll["a"]) == 0.0 and math.exp(jll["b"]) == 0.0
    proba = model.predict_proba_one([x])
    assert [proba["a"], proba["b"]] == pytest.approx([0.6359300476947536, 0.3640699523052464], rel=1e-9)
    assert model.predict_one([x]) == "a"
    np.testing.assert_allclose(model.predict_proba_many([[x]]), [[0.6359300476947536, 0.3640699523052464]], rtol=1e-9)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_c30_pickle_a_trained_model(mode):
    model = GaussianNB(**mode)
    for x, y in (([5.1, 3.5, 1.4, 0.2], 0), ([7.0, 3.2, 4.7, 1.4], 1), ([6.3, 3.3, 6.0, 2.5], 2)):
        model.learn_one(x, y)
    probes = np.random.default_rng(30).uniform([4, 2, 1, 0], [8, 4.5, 7, 2.5], size=(5, 4))
    copy = pickle.loads(pickle.dumps(model))
    assert [copy.predict_proba_one(p) for p in probes] == [model.predict_proba_one(p) for p in probes]
    before = model.state()
    copy.learn_one([5.9, 3.0, 5.1, 1.8], 2)
    assert copy.n_samples_seen_ == 4
    assert model.state() == before


# ---------------------------------------------------------------- the seed paper's claim

UCI = [
    "uci_iris/iris.csv",
    "uci_wine/wine.csv",
    "uci_breast_cancer_wdbc/breast_cancer_wdbc.csv",
    "uci_pima_diabetes/pima_diabetes.csv",
    "uci_ionosphere/ionosphere.csv",
    "uci_sonar/sonar.csv",
    "uci_heart_statlog/heart_statlog.csv",
    "uci_australian_statlog/australian_statlog.csv",
]


@pytest.mark.parametrize("path", UCI)
def test_online_10_fold_cv_accuracy_equals_offline(path):
    """Wu and Xiong (2023), Table 2: Algorithm 1 gives the offline learner's 10-fold CV accuracy."""
    X, y = open_stream(shared_path(f"data/{path}")).to_arrays()
    order = np.random.default_rng(0).permutation(len(y))  # several files are sorted by class
    X, y = X[order], [y[i] for i in order]
    online, offline = [], []
    for test in np.array_split(np.arange(len(y)), 10):
        train = np.setdiff1d(np.arange(len(y)), test)
        Xtr, ytr = X[train], [y[i] for i in train]
        model = _fit(Xtr, ytr)
        truth = [y[i] for i in test]
        online.append(np.mean([p == t for p, t in zip(model.predict_many(X[test]), truth)]))
        offline.append(np.mean([p == t for p, t in zip(_offline_predict(_offline(Xtr, ytr), X[test]), truth)]))
    assert online == offline
    assert 0.5 < np.mean(online) < 1.0


def test_learn_many_refuses_a_batch_whose_new_classes_do_not_fit_and_learns_nothing():
    bound = GaussianNB().planned_bytes(["a", "b", "c"], 2)
    nb = GaussianNB(max_size_bytes=bound)
    nb.learn_one([0.0, 1.0], "a")
    state = nb.state()
    with pytest.raises(ClassLimitError, match="class 'b' refused: max_size_bytes="):
        nb.learn_many(np.array([[1.0, 2.0], [2.0, 3.0], [3.0, 4.0]]), ["b", "c", "d"])
    assert nb.state() == state
    nb.learn_many(np.array([[1.0, 2.0], [2.0, 3.0]]), ["b", "c"])
    assert nb.classes_ == ["a", "b", "c"] and nb.memory_bytes() <= bound
    nb.predict_one([1.0, 2.0])
    assert nb.memory_bytes() <= bound  # the prediction cache was planned for


def test_a_state_without_max_size_bytes_loads_unbounded_and_the_bound_round_trips():
    nb = GaussianNB(max_size_bytes=5000)
    nb.learn_one([0.0, 1.0], "a")
    old = {k: v for k, v in nb.state().items() if k != "max_size_bytes"}
    assert GaussianNB.from_state(old).max_size_bytes is None
    assert GaussianNB.from_state(nb.state()).max_size_bytes == 5000


# ---------------------------------------------------------------- the two backends


def test_the_backend_fixture_builds_that_backend(backend):
    expected = {"compiled": "edgebayes._core.naive_bayes", "python": "edgebayes.naive_bayes"}[backend]
    trained = _trained()
    built = (GaussianNB(), GaussianNB(0.01).clone(), GaussianNB.from_state(trained.state()),
             make_learner("gaussian_nb", learning_rate=0.01), pickle.loads(pickle.dumps(trained)))
    for model in built:
        assert type(model).__module__ == expected and isinstance(model, GaussianNB)
    assert list(inspect.signature(type(built[0])).parameters) == [
        "learning_rate", "var_smoothing", "max_size_bytes", "warm_up"]
    assert repr(built[1]) == "GaussianNB(learning_rate=0.01, var_smoothing=1e-09, max_size_bytes=None, warm_up=True)"
    assert built[2].state() == built[4].state() == trained.state()


def _both(*args):
    """One GaussianNB per backend, same arguments."""
    models = {name: implementation("GaussianNB", name)(*args) for name in BACKENDS}
    assert type(models["compiled"]) is not type(models["python"])
    return models


def _forms(x: np.ndarray) -> list:
    """``x`` as the inputs a caller may give: list and tuple of floats, a float64 array (and a
    strided view of one), a float32 array, Python ints where exact, numpy scalars."""
    ints = [int(v) if v.is_integer() and abs(v) < 1e15 else v for v in x.tolist()]
    return [x.tolist(), tuple(x.tolist()), x, np.repeat(x, 2)[::2], x.astype(np.float32),
            ints, list(x)]


def _outcome(model, method: str, args: tuple):
    """What ``model.method(*args)`` returns, or its error's type and message."""
    try:
        return getattr(model, method)(*args)
    except ValueError as exc:
        return type(exc), str(exc)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@settings(max_examples=40, deadline=None)
@given(
    data=samples(nan=True, weights=True),
    forms=st.lists(st.integers(0, 6), min_size=40, max_size=40),
    probes=st.lists(st.lists(st.floats(-1.7e308, 1.7e308), min_size=4, max_size=4), max_size=3),
    bound=st.sampled_from([None, 0, 1, 2]),
)
def test_backends_give_identical_states_probabilities_and_errors(mode, data, forms, probes, bound):
    """Sample by sample: the same probabilities (before learning each sample, and for far or
    invalid probes), the same ValueError or ClassLimitError, the same state, on both backends."""
    X, y, w = data
    d = X.shape[1]
    max_size = None if bound is None else GaussianNB().planned_bytes(["a", "b", 7][:bound + 1], d)
    models = _both(mode["learning_rate"], 1e-9, max_size, mode.get("warm_up", True))
    bad = [[math.inf] * d, [1.0] * (d + 1), ["1.0"] * d]
    for xi, yi, wi, form in zip(X, y, w, forms):
        x = _forms(xi)[form]
        calls = [("predict_proba_one", (x,)), ("learn_one", (x, yi, wi / 2))]
        calls += [("predict_proba_one", (p[:d],)) for p in probes]
        calls += [("learn_one", (b, "a")) for b in bad] + [("learn_one", (x, [yi]))]
        for method, args in calls:
            assert _outcome(models["compiled"], method, args) == _outcome(models["python"], method, args)
    assert models["compiled"].state() == models["python"].state()
    assert models["compiled"].memory_bytes() == models["python"].memory_bytes()


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("writer, reader", [BACKENDS, BACKENDS[::-1]])
def test_a_state_written_by_one_backend_continues_identically_in_the_other(writer, reader, mode):
    X, y = open_stream(shared_path("data/elec2/elec2.csv.gz"), drop=["date"]).to_arrays(4000)
    original = _fit(X[:2500], y[:2500], cls=implementation("GaussianNB", writer), **mode)
    state = codec.decode(codec.encode(original.state()))
    copy = implementation("GaussianNB", reader).from_state(state)
    assert type(copy) is not type(original)
    assert copy.state() == original.state()
    for x, label in zip(X[2500:], y[2500:]):
        assert copy.predict_proba_one(x) == original.predict_proba_one(x)
        copy.learn_one(x, label)
        original.learn_one(x, label)
    assert copy.state() == original.state()
