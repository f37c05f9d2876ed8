"""One contract for every learner (edgebayes.base): register each learner in LEARNERS.

Checks: predict before learn, predict does not change the model, clone, state round trip
through msgpack, seeds, str and int labels, a class first seen mid-stream, bad input raising
ValueError with the model unchanged, learn_many equal to learn_one, memory_bytes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgebayes.base import KINDS, learner_from_state
from edgebayes.codec import decode, encode
from edgebayes.ensemble import NaiveBayesCommittee, SRPClassifier
from edgebayes.naive_bayes import GaussianNB
from edgebayes.naive_bayes_mixed import MixedNB
from edgebayes.tree import HoeffdingTreeClassifier

pytestmark = pytest.mark.usefixtures("backend")  # every test on both backends

LEARNERS = {
    "gaussian_nb": GaussianNB,
    "gaussian_nb_lr": lambda: GaussianNB(learning_rate=0.01),
    "mixed_nb": lambda: MixedNB(nominal_attributes=[3]),
    "mixed_nb_borrow_lr": lambda: MixedNB([2, 3], learning_rate=0.01, zero_frequency="borrow"),
    "mixed_nb_paper_sum": lambda: MixedNB([2, 3], scoring="paper_sum"),
    "hoeffding_tree": lambda: HoeffdingTreeClassifier(grace_period=20, delta=0.01, seed=1),
    "srp": lambda: SRPClassifier(n_models=3, seed=1),
    "nb_committee": lambda: NaiveBayesCommittee(n_models=5, seed=1),
    "nb_committee_mc": lambda: NaiveBayesCommittee(4, "monte_carlo", 0.5, nominal_attributes=[3], seed=2),
}


def _stream(n=300, seed=0, labels=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = [labels[int(v)] for v in (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)]  # 0, 1 or 2
    return X, y


def _fingerprint(model):
    return encode(model.state())


@pytest.fixture(params=sorted(LEARNERS))
def make(request):
    return LEARNERS[request.param]


def test_every_registered_kind_is_checked():
    assert sorted({make().state()["kind"] for make in LEARNERS.values()}) == sorted(KINDS)


def test_predict_before_learn(make):
    model = make()
    x = [0.1, 0.2, 0.3, 0.4]
    assert model.predict_proba_one(x) == {}
    assert model.predict_one(x) is None
    model.learn_one(x, "a")
    assert model.predict_one(x) == "a"


def test_predict_does_not_change_the_model(make):
    model = make()
    X, y = _stream()
    for xi, yi in zip(X[:100], y[:100]):
        model.learn_one(xi, yi)
    before = _fingerprint(model)
    for xi in X[100:]:
        model.predict_proba_one(xi)
        model.predict_one(xi)
    assert _fingerprint(model) == before


def test_probabilities_are_a_distribution(make):
    model = make()
    X, y = _stream()
    for xi, yi in zip(X, y):
        proba = model.predict_proba_one(xi)
        if proba:
            assert all(math.isfinite(p) and p >= 0 for p in proba.values())
            assert sum(proba.values()) == pytest.approx(1.0, abs=1e-9)
        model.learn_one(xi, yi)
    assert set(model.classes_) == {"a", "b", "c"}


def test_state_round_trip_through_msgpack(make):
    model = make()
    X, y = _stream()
    for xi, yi in zip(X[:200], y[:200]):
        model.learn_one(xi, yi)
    restored = learner_from_state(decode(encode(model.state())))
    assert type(restored) is type(model)
    for xi in X[200:]:
        assert restored.predict_proba_one(xi) == model.predict_proba_one(xi)
    # both keep learning identically
    for xi, yi in zip(X[200:], y[200:]):
        model.learn_one(xi, yi)
        restored.learn_one(xi, yi)
    assert _fingerprint(restored) == _fingerprint(model)


def test_same_seed_same_model(make):
    a, b = make(), make()
    X, y = _stream()
    for xi, yi in zip(X, y):
        a.learn_one(xi, yi)
        b.learn_one(xi, yi)
    assert _fingerprint(a) == _fingerprint(b)


def test_clone_is_fresh(make):
    model = make()
    X, y = _stream()
    model.learn_one(X[0], y[0])
    twin = model.clone()
    assert repr(twin) == repr(model)
    assert twin.predict_proba_one(X[0]) == {}


def test_int_labels_and_a_class_first_seen_mid_stream(make):
    model = make()
    X, y = _stream(labels=(0, 1, 2))
    y = [0 if v == 2 else v for v in y[:150]] + y[150:]
    for xi, yi in zip(X, y):
        model.learn_one(xi, yi)
    assert set(model.classes_) == {0, 1, 2}
    assert all(isinstance(c, int) for c in model.classes_)


@pytest.mark.parametrize(
    "x, y",
    [
        ([0.1, 0.2, 0.3], "a"),  # wrong length
        ([0.1, 0.2, "hot", 0.4], "a"),  # non-numeric
        ([0.1, float("inf"), 0.3, 0.4], "a"),  # inf
        ([0.1, 0.2, 0.3, 0.4], None),  # no label
        ([0.1, 0.2, 0.3, 0.4], float("nan")),  # NaN label
    ],
)
def test_bad_input_raises_and_leaves_the_model_unchanged(make, x, y):
    model = make()
    X, labels = _stream()
    for xi, yi in zip(X[:50], labels[:50]):
        model.learn_one(xi, yi)
    before = _fingerprint(model)
    with pytest.raises(ValueError):
        model.learn_one(x, y)
    assert _fingerprint(model) == before


def test_learn_many_equals_learn_one(make):
    a, b = make(), make()
    X, y = _stream()
    for xi, yi in zip(X, y):
        a.learn_one(xi, yi)
    b.learn_many(X, y)
    np.testing.assert_allclose(b.predict_proba_many(X), a.predict_proba_many(X), rtol=1e-9, atol=1e-12)


def test_memory_bytes_grows_with_the_model(make):
    model = make()
    empty = model.memory_bytes()
    assert isinstance(empty, int) and empty > 0
    X, y = _stream()
    model.learn_many(X, y)
    assert model.memory_bytes() >= empty
