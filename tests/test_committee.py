"""NaiveBayesCommittee: online bootstrap / Monte Carlo committees of naive Bayes (Artiemjew and
Idzikowski 2019)."""

from __future__ import annotations

import collections
import math
import pickle

import numpy as np
import pytest

from edgebayes.base import learner_from_state
from edgebayes.codec import decode, encode
from edgebayes.ensemble.committee import NaiveBayesCommittee
from edgebayes.naive_bayes import GaussianNB
from edgebayes.naive_bayes_mixed import MixedNB
from tests.test_naive_bayes_mixed import ALL_NOMINAL, PAPER_TEST, PAPER_TRAIN

pytestmark = pytest.mark.usefixtures("backend")  # every test on both backends


def _fit(model, rows):
    for x, y in rows:
        model.learn_one(x, y)
    return model


def _paper_committee(seed, n_models=1):
    # Monte Carlo with fraction 1: every member learns every object, as the single paper model
    nbc = NaiveBayesCommittee(n_models, "monte_carlo", 1.0, nominal_attributes=ALL_NOMINAL,
                              zero_frequency="borrow", seed=seed)  # fmt: skip
    return _fit(nbc, PAPER_TRAIN)


def test_paper_example_decisions_and_random_ties():
    """x1 -> 2, x2 -> 2 whatever the seed; x3, x4 are ties decided at random (the paper's 2.1)."""
    picks = collections.Counter()
    for seed in range(40):
        nbc = _paper_committee(seed)
        (x1, _), (x2, _), (x3, _), (x4, _) = PAPER_TEST
        assert nbc.predict_one(x1) == 2 and nbc.predict_one(x2) == 2
        for x in (x3, x4):
            pick = nbc.predict_one(x)
            assert pick in (2, 4)
            assert nbc.predict_one(x) == pick  # same model, same x: same draw
            assert nbc.predict_proba_one(x)[pick] == 1.0  # the single member's vote
            picks[pick] += 1
    assert 20 <= picks[2] <= 60 and picks[2] + picks[4] == 80  # both sides drawn (binomial 80, 1/2)


def test_tie_break_is_reproducible_by_seed_and_survives_a_state_round_trip():
    X = [(9, 7, 10, 7), (4, 4, 10, 10), (8, 8, 8, 8), (6, 6, 6, 6)]
    a = [_paper_committee(5, n_models=4).predict_one(x) for x in X]
    assert a == [_paper_committee(5, n_models=4).predict_one(x) for x in X]
    runs = {tuple(_paper_committee(s, n_models=4).predict_one(x) for x in X) for s in range(12)}
    assert len(runs) > 1  # the seed matters
    nbc = _paper_committee(5, n_models=4)
    before = encode(nbc.state())
    restored = learner_from_state(decode(encode(nbc.state())))
    assert [restored.predict_one(x) for x in X] == a
    assert encode(nbc.state()) == before  # predicting drew nothing from the committee


def test_vote_tie_between_members_is_broken_by_the_committee():
    # two members, one learns only class "a", the other only "b" -> one vote each
    nbc = NaiveBayesCommittee(n_models=2, sampling="monte_carlo", sample_fraction=0.5, seed=0)
    rng = np.random.default_rng(1)
    while not (nbc.members[0].classes_ == ["a"] and nbc.members[1].classes_ == ["b"]):
        nbc = NaiveBayesCommittee(n_models=2, sampling="monte_carlo", sample_fraction=0.5,
                                  seed=int(rng.integers(1 << 30)))  # fmt: skip
        nbc.learn_one([0.0], "a")
        nbc.learn_one([1.0], "b")
    assert nbc.predict_proba_one([0.5]) == {"a": 0.5, "b": 0.5}
    picks = {nbc.predict_one([v]) for v in np.linspace(0, 1, 40)}
    assert picks == {"a", "b"}  # ties drawn per input, both ways


def test_vote_shares_are_the_members_majority():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    y = ["u" if a + 0.5 * rng.normal() > 0 else "v" for a in X[:, 0]]
    nbc = NaiveBayesCommittee(n_models=15, sample_fraction=0.2, seed=3)
    nbc.learn_many(X, y)
    disagreement = 0
    for x in X[:60]:
        picks = collections.Counter(m.predict_one(x) for m in nbc.members)
        shares = nbc.predict_proba_one(x)
        assert shares == {c: picks[c] / 15 for c in ("u", "v")}
        disagreement += len(picks) > 1
        assert nbc.predict_one(x) == picks.most_common(1)[0][0]  # 15 voters: no tie
    assert disagreement > 0  # the members differ (docs/cases.md C27: not one shared draw)


def _member_weights(sampling, fraction, n=1000, n_models=20):
    """Each member's weight for each sample: the samples' index is a nominal feature, so a
    member's category counts are exactly its drawn weights (0 for a sample not drawn)."""
    nbc = NaiveBayesCommittee(n_models, sampling, fraction, nominal_attributes=[0], seed=11)
    for i in range(n):
        nbc.learn_one([float(i)], "a")
    K = np.zeros((n_models, n))
    for r, m in enumerate(nbc.members):
        K[r, np.array(m.categories_[0], dtype=int)] = m.category_counts_[0][0]
    return K


@pytest.mark.parametrize("fraction", [0.1, 0.5, 1.0])
def test_bootstrap_weights_are_poisson(fraction):
    K = _member_weights("bootstrap", fraction)
    n = K.size  # 20000 draws
    assert np.all(np.round(K) == K)
    assert abs(K.mean() - fraction) < 4 * math.sqrt(fraction / n)
    p0 = math.exp(-fraction)
    assert abs((K == 0).mean() - p0) < 4 * math.sqrt(p0 * (1 - p0) / n)
    assert K.var() == pytest.approx(fraction, rel=0.1)  # Poisson: variance = mean


@pytest.mark.parametrize("fraction", [0.1, 0.5])
def test_monte_carlo_weights_are_bernoulli(fraction):
    K = _member_weights("monte_carlo", fraction)
    n = K.size
    assert set(np.unique(K).tolist()) == {0.0, 1.0}  # never a copy
    assert abs(K.mean() - fraction) < 4 * math.sqrt(fraction * (1 - fraction) / n)


def test_monte_carlo_fraction_one_gives_every_member_every_sample():
    K = _member_weights("monte_carlo", 1.0, n=50, n_models=3)
    assert K.tolist() == [[1.0] * 50] * 3


def test_sample_weight_multiplies_the_drawn_weight_and_zero_skips():
    a = NaiveBayesCommittee(n_models=6, seed=4)
    b = NaiveBayesCommittee(n_models=6, seed=4)
    a.learn_one([1.0, 2.0], "x", w=2.5)
    b.learn_one([1.0, 2.0], "x")
    for ma, mb in zip(a.members, b.members):
        assert ma.n_samples_seen_ == 2.5 * mb.n_samples_seen_
    before = encode(a.state())
    a.learn_one([3.0, 4.0], "y", w=0)
    assert encode(a.state()) == before and a.classes_ == ["x"]


def test_c11_shares_over_every_class_seen():
    nbc = NaiveBayesCommittee(n_models=3, sampling="monte_carlo", sample_fraction=0.01, seed=0)
    nbc.learn_one([0.0], "a")  # no member draws it (0.99^3)
    assert all(not m.classes_ for m in nbc.members)
    assert nbc.predict_proba_one([0.0]) == {"a": 1.0} and nbc.predict_one([0.0]) == "a"
    nbc = NaiveBayesCommittee(n_models=4, sampling="monte_carlo", sample_fraction=1.0, seed=0)
    _fit(nbc, [([0.0], 0), ([0.1], 0), ([5.0], 1), ([5.1], 1)])
    assert nbc.predict_proba_one([0.0]) == {0: 1.0, 1: 0.0}


def test_members_follow_the_parameters():
    nbc = NaiveBayesCommittee(n_models=3, learning_rate=0.05, nominal_attributes=[1], zero_frequency="borrow")
    assert all(type(m) is MixedNB and m.learning_rate == 0.05 and m.zero_frequency == "borrow" for m in nbc.members)
    assert all(isinstance(m, GaussianNB) and m.learning_rate is None for m in NaiveBayesCommittee(n_models=2).members)


def test_paper_sum_members():
    """scoring="paper_sum" reaches every member (MixedNB, even without nominal_attributes), the
    single-member committee decides the paper's x1 and x2 as the paper, and it survives a state
    round trip; a state without "scoring" (older) loads as "product"."""
    nbc = NaiveBayesCommittee(3, "monte_carlo", 1.0, nominal_attributes=ALL_NOMINAL, scoring="paper_sum", seed=1)
    assert all(type(m) is MixedNB and m.scoring == "paper_sum" for m in nbc.members)
    assert all(type(m) is MixedNB and m.scoring == "paper_sum"
               for m in NaiveBayesCommittee(n_models=2, scoring="paper_sum").members)  # fmt: skip
    _fit(nbc, PAPER_TRAIN)
    (x1, _), (x2, _), _, _ = PAPER_TEST
    assert nbc.predict_proba_one(x1) == {2: 1.0, 4: 0.0} and nbc.predict_proba_one(x2) == {2: 1.0, 4: 0.0}
    restored = learner_from_state(decode(encode(nbc.state())))
    assert restored.scoring == "paper_sum" and all(m.scoring == "paper_sum" for m in restored.members)
    assert [restored.predict_one(x) for x, _ in PAPER_TEST] == [nbc.predict_one(x) for x, _ in PAPER_TEST]
    state = _paper_committee(2, n_models=2).state()
    del state["params"]["scoring"]
    assert learner_from_state(state).scoring == "product"


def test_c30_pickle():
    nbc = _paper_committee(3, n_models=5)
    copy = pickle.loads(pickle.dumps(nbc))
    for x, _ in PAPER_TEST:
        assert copy.predict_proba_one(x) == nbc.predict_proba_one(x)
        assert copy.predict_one(x) == nbc.predict_one(x)
    copy.learn_one((1, 1, 1, 1), 2)
    assert copy.n_samples_seen_ == nbc.n_samples_seen_ + 1


@pytest.mark.parametrize(
    "kw",
    [
        {"n_models": 0},
        {"sampling": "jackknife"},
        {"sampling": "monte_carlo", "sample_fraction": 1.5},
        {"sample_fraction": 0.0},
        {"sample_fraction": math.inf},
        {"learning_rate": 2.0},
        {"nominal_attributes": [1, 1]},
        {"zero_frequency": "zero"},
        {"scoring": "sum"},
        {"seed": -1},
    ],
)
def test_bad_parameters_raise(kw):
    with pytest.raises(ValueError):
        NaiveBayesCommittee(**kw)


def test_bad_input_leaves_the_generator_alone():
    nbc = NaiveBayesCommittee(n_models=4, nominal_attributes=[3], seed=0)
    with pytest.raises(ValueError, match="nominal_attributes"):
        nbc.learn_one([0.0, 1.0], "a")  # index 3 out of range
    nbc.learn_one([0.0, 1.0, 2.0, 3.0], "a")
    before = encode(nbc.state())
    for x, y in [([0.0, 1.0], "a"), ([0.0, 1.0, 2.0, math.inf], "a"), ([0.0, 1.0, 2.0, 3.0], None)]:
        with pytest.raises(ValueError):
            nbc.learn_one(x, y)
    assert encode(nbc.state()) == before
