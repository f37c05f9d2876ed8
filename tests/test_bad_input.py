"""Bad input at learning, for every registered learner: out-of-range x, weights that are not
real numbers or overflow once multiplied by a Poisson draw, None and string features. Each is
refused with ValueError before anything changes, and what is accepted never makes a model
hold inf or NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgebayes.base import MAX_ABS_X, MAX_WEIGHT, as_floats, check_weight
from edgebayes.codec import encode
from edgebayes.ensemble import NaiveBayesCommittee, SRPClassifier
from edgebayes.naive_bayes import GaussianNB
from tests.test_learner_contract import LEARNERS, _stream


def _trained(name, n=50):
    model = LEARNERS[name]()
    X, y = _stream(n=n)
    for xi, yi in zip(X, y):
        model.learn_one(xi, yi)
    return model


def _assert_finite_distribution(proba):
    assert proba and all(math.isfinite(p) and p >= 0.0 for p in proba.values()), proba
    assert sum(proba.values()) == pytest.approx(1.0, abs=1e-9)


def test_gaussian_nb_refuses_a_huge_x_and_keeps_predicting():
    """The tester's case: 1e160 overflowed the variance and predict raised max() of nothing."""
    m = GaussianNB()
    m.learn_one([0.0], "a")
    m.learn_one([1.0], "b")
    for big in (1e160, 1e308, -1e308, 10**400):
        with pytest.raises(ValueError, match="out of range"):
            m.learn_one([big], "a")
    assert m.predict_proba_one([0.3]) == {"a": 1.0, "b": 0.0}  # two one-sample classes
    _assert_finite_distribution(m.predict_proba_one([1e160]))  # prediction takes any finite x


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize("big", [1e101, 1e160, -1e308, 10**400, -(10**400)])
def test_learning_refuses_x_out_of_range_and_leaves_the_model_unchanged(name, big):
    model = _trained(name)
    before = encode(model.state())
    for x in ([big, 0.1, 0.2, 0.3], np.array([0.1, big, 0.2, 0.3]) if isinstance(big, float) else [0.1, 0.2, big, 0.3]):
        with pytest.raises(ValueError, match="out of range"):
            model.learn_one(x, "a")
    assert encode(model.state()) == before


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_x_at_the_range_bound_with_the_largest_weight_keeps_the_model_finite(name):
    model = _trained(name)
    big_w = MAX_WEIGHT / 1e3 if name.startswith(("srp", "nb_committee")) else MAX_WEIGHT  # times k
    for i in range(60):
        s = 1.0 if i % 2 else -1.0
        model.learn_one([s * MAX_ABS_X, -s * MAX_ABS_X, 0.5, s], "ab"[i % 2], w=big_w if i % 3 == 0 else 1.0)
    for x in ([MAX_ABS_X, 0.0, 0.5, 1.0], [0.0, 0.0, 0.0, 0.0], [-1e300, 1e300, 0.0, 0.0]):
        _assert_finite_distribution(model.predict_proba_one(x))
    assert "nan" not in repr(model.state()).lower()


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize("w", ["1", True, np.True_, None, 1e308, 10**400, -1.0, math.nan])
def test_weights_that_are_not_real_numbers_in_range_are_refused(name, w):
    model = _trained(name)
    before = encode(model.state())
    with pytest.raises(ValueError, match="weight"):
        model.learn_one([0.1, 0.2, 0.3, 0.4], "a", w=w)
    assert encode(model.state()) == before


@pytest.mark.parametrize(
    "make", [lambda: SRPClassifier(n_models=3, seed=1), lambda: NaiveBayesCommittee(5, sample_fraction=6.0, seed=1)]
)
def test_a_poisson_draw_times_the_weight_above_the_bound_is_refused_before_any_member_learns(make):
    model = make()
    X, y = _stream(n=50)
    model.learn_many(X, y)
    before = encode(model.state())
    with pytest.raises(ValueError, match="Poisson"):
        model.learn_one([0.1, 0.2, 0.3, 0.4], "a", w=MAX_WEIGHT)  # draws of k >= 2 overflow the bound
    assert encode(model.state()) == before  # generators included: the next draws are the same
    model.learn_one([0.1, 0.2, 0.3, 0.4], "a", w=MAX_WEIGHT / 1000)


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize("bad", [None, "x", b"1", [1.0]])
def test_none_and_string_features_are_refused_by_every_learner(name, bad):
    model = _trained(name)
    before = encode(model.state())
    with pytest.raises(ValueError, match="not a number"):
        model.learn_one([0.1, bad, 0.3, 0.4], "a")
    with pytest.raises(ValueError, match="not a number"):
        model.predict_proba_one([0.1, bad, 0.3, 0.4])
    assert encode(model.state()) == before


def test_check_weight_and_as_floats_state_the_rule():
    assert check_weight(2) == 2.0 and type(check_weight(np.float32(0.5))) is float
    assert check_weight(MAX_WEIGHT) == MAX_WEIGHT
    for w in ("1", True, None, MAX_WEIGHT * 1.01, -0.0 - 1e-300):
        with pytest.raises(ValueError):
            check_weight(w)
    assert as_floats([MAX_ABS_X, -MAX_ABS_X], 2, learning=True) == ([MAX_ABS_X, -MAX_ABS_X], False)
    assert as_floats([1e300, math.nan], 2) == ([1e300, math.nan], True)[0:1] + (True,)
    with pytest.raises(ValueError, match=r"x\[1\].*out of range"):
        as_floats([math.nan, 1e101], 2, learning=True)
    with pytest.raises(ValueError, match=r"x\[0\].*out of range"):
        as_floats([10**400], 1)  # not even a float


def test_labels_equal_in_python_are_one_class():
    """True, 1 and 1.0 are one dict key: one class, named by the first seen (base.py doc)."""
    m = GaussianNB()
    for y in (1, True, 1.0):
        m.learn_one([0.0], y)
    assert m.classes_ == [1] and m.n_samples_seen_ == 3.0


@pytest.mark.parametrize("name", ["gaussian_nb", "gaussian_nb_lr", "mixed_nb", "mixed_nb_borrow_lr"])
def test_learn_many_refuses_what_learn_one_refuses(name):
    model = _trained(name)
    before = encode(model.state())
    X = np.array([[0.1, 0.2, 0.3, 0.4], [0.1, 1e101, 0.3, 0.4]])
    with pytest.raises(ValueError, match="out of range"):
        model.learn_many(X, ["a", "b"])
    for w in (["1", "1"], [True, True], [1.0, MAX_WEIGHT * 2]):
        with pytest.raises(ValueError, match="weights"):
            model.learn_many(X[:1].repeat(2, axis=0), ["a", "b"], w=w)
    assert encode(model.state()) == before
