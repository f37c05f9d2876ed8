"""MixedNB: nominal features by counts (Laplace, the borrowing rule of Artiemjew and Idzikowski
2019), numeric ones Gaussian; the paper's own summed scores (scoring="paper_sum")."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from edgebayes.base import learner_from_state, make_learner
from edgebayes.codec import decode, encode
from edgebayes.naive_bayes import GaussianNB
from edgebayes.naive_bayes_mixed import MixedNB, split_columns

pytestmark = pytest.mark.usefixtures("backend")  # every test on both backends

# Artiemjew and Idzikowski (2019), section 2.1: two classes (2 and 4) of three objects, four
# symbolic attributes. The paper's training table did not survive; this one has exactly the
# frequencies the paper derives (P(a1=2|2)=1/3, P(a1=1|4)=0/3, P(a4=1|2)=3/3, P(a4=1|4)=2/3,
# a2=4 and a2=2 in no class, ...), and the test objects are the paper's four.
PAPER_TRAIN = [
    ((2, 1, 2, 1), 2), ((1, 1, 1, 1), 2), ((3, 3, 3, 1), 2),
    ((2, 3, 1, 1), 4), ((3, 1, 2, 1), 4), ((5, 5, 5, 3), 4),
]  # fmt: skip
PAPER_TEST = [((2, 4, 2, 1), 4), ((1, 2, 1, 1), 4), ((9, 7, 10, 7), 4), ((4, 4, 10, 10), 4)]
ALL_NOMINAL = [0, 1, 2, 3]


def _paper_model(**kw) -> MixedNB:
    nb = MixedNB(nominal_attributes=ALL_NOMINAL, **kw)
    for x, y in PAPER_TRAIN:
        nb.learn_one(x, y)
    return nb


def test_paper_example_frequencies_are_the_papers():
    nb = _paper_model(zero_frequency="borrow")
    counts = nb.category_counts_
    col = [{v: c for c, v in enumerate(vs)} for vs in nb.categories_]
    assert nb.classes_ == [2, 4]
    assert nb.class_prior_.tolist() == pytest.approx([0.5, 0.5], abs=1e-15)
    # x1 = (2, 4, 2, 1): 1/3, absent, 1/3, 3/3 for class 2; 1/3, absent, 1/3, 2/3 for class 4
    assert counts[0][:, col[0][2.0]].tolist() == [1.0, 1.0]
    assert 4.0 not in col[1] and 2.0 not in col[1] and 7.0 not in col[1]
    assert counts[2][:, col[2][2.0]].tolist() == [1.0, 1.0]
    assert counts[3][:, col[3][1.0]].tolist() == [3.0, 2.0]
    # x2 = (1, 2, 1, 1): a1 = 1 once in class 2, never in class 4; a3 = 1 once in both
    assert counts[0][:, col[0][1.0]].tolist() == [1.0, 0.0]
    assert counts[2][:, col[2][1.0]].tolist() == [1.0, 1.0]
    # x3, x4: every value absent from both classes
    for x, _ in PAPER_TEST[2:]:
        assert all(v not in col[j] for j, v in enumerate(map(float, x)))


def test_paper_example_decisions_with_the_borrowing_rule():
    """x1 -> 2 (wrong), x2 -> 2, x3 and x4 -> tie (the paper draws at random), as the paper finds.

    Products of frequencies, an absent descriptor ignored:
    x1: 1/2 (1/3)(1/3)(3/3) = 1/18 vs 1/2 (1/3)(1/3)(2/3) = 1/27 -> P(2) = 27/45 = 0.6;
    x2: class 4 borrows 0.9 x 1/3 for a1 = 1: 1/18 vs 1/2 (0.3)(1/3)(2/3) = 1/30 -> P(2) = 0.625.
    """
    nb = _paper_model(zero_frequency="borrow")
    (x1, _), (x2, _), (x3, _), (x4, _) = PAPER_TEST
    assert nb.predict_one(x1) == 2
    assert nb.predict_proba_one(x1)[2] == pytest.approx(0.6, abs=1e-12)
    assert nb.predict_one(x2) == 2
    assert nb.predict_proba_one(x2)[2] == pytest.approx(0.625, abs=1e-12)
    for x in (x3, x4):  # nothing but the equal priors: a tie
        assert nb.predict_proba_one(x) == pytest.approx({2: 0.5, 4: 0.5}, abs=1e-12)
    # borrow_factor is what separates x2's classes: with 0.5 class 4 gets 1/2 (1/6)(1/3)(2/3)
    nb = _paper_model(zero_frequency="borrow", borrow_factor=0.5)
    assert nb.predict_proba_one(x2)[2] == pytest.approx((1 / 18) / (1 / 18 + 1 / 54), abs=1e-12)


def test_paper_example_with_laplace_by_hand():
    """alpha = 1, V = values seen: a1 {1,2,3,5} V=4, a3 V=4, a4 {1,3} V=2; a2 = 4 or 2 unseen.

    x1: (2/7)(2/7)(4/5) vs (2/7)(2/7)(3/5) -> P(2) = 4/7;  x2: (2/7)(2/7)(4/5) vs (1/7)(2/7)(3/5) -> 8/11.
    """
    nb = _paper_model()
    assert nb.zero_frequency == "laplace"
    assert nb.predict_proba_one(PAPER_TEST[0][0])[2] == pytest.approx(4 / 7, abs=1e-12)
    assert nb.predict_proba_one(PAPER_TEST[1][0])[2] == pytest.approx(8 / 11, abs=1e-12)
    nb = _paper_model(alpha=0.5)  # x1: (1.5/5)(1.5/5)(3.5/4) vs (1.5/5)(1.5/5)(2.5/4)
    assert nb.predict_proba_one(PAPER_TEST[0][0])[2] == pytest.approx(3.5 / 6, abs=1e-12)


def test_paper_sum_worked_example_by_hand():
    """The paper's section 2.1, scoring by sums: Param_k = P(k) sum_m P(a_m = v_m | k).

    x1 = (2, 4, 2, 1): Param_2 = 1/2 (1/3 + 0/3 + 1/3 + 3/3) = 5/6, Param_4 = 1/2 (1/3 + 0/3 +
    1/3 + 2/3) = 2/3 -> 2 (the paper: "incorrectly classified").
    x2 = (1, 2, 1, 1): a1 = 1 is in class 2 once and never in class 4, so class 2's counter goes
    up by one, 2/3; Param_2 = 1/2 (2/3 + 0/3 + 1/3 + 3/3) = 1, Param_4 = 1/2 (0/3 + 0/3 + 1/3 +
    2/3) = 1/2 -> 2.
    x3, x4: no value seen in any class: Param = 0 for both, a tie (the paper draws at random).
    (The paper's text gives x2 the decision 4 yet calls the decision 2 correct, and calls x4's
    random 4 wrong: its decisions' labels are garbled, its scores are the ones checked here.)
    """
    nb = _paper_model(scoring="paper_sum")
    X = np.array([x for x, _ in PAPER_TEST], dtype=float)
    params = nb._paper_scores(X)
    expected = [[5 / 6, 2 / 3], [1.0, 1 / 2], [0.0, 0.0], [0.0, 0.0]]
    np.testing.assert_allclose(params, expected, rtol=1e-15, atol=0.0)
    col = nb.categories_[0].index(1.0)
    assert nb._frequency_tables()[0][:, col].tolist() == pytest.approx([2 / 3, 0.0], abs=1e-15)  # incremented
    col = nb.categories_[0].index(2.0)
    assert nb._frequency_tables()[0][:, col].tolist() == pytest.approx([1 / 3, 1 / 3], abs=1e-15)  # both hold it
    (x1, _), (x2, _), (x3, _), (x4, _) = PAPER_TEST
    assert nb.predict_one(x1) == 2 and nb.predict_one(x2) == 2
    assert nb.predict_proba_one(x1) == pytest.approx({2: (5 / 6) / (5 / 6 + 2 / 3), 4: (2 / 3) / (5 / 6 + 2 / 3)}, abs=1e-15)
    assert nb.predict_proba_one(x2) == pytest.approx({2: 2 / 3, 4: 1 / 3}, abs=1e-15)
    for x in (x3, x4):
        assert nb.predict_proba_one(x) == {2: 0.5, 4: 0.5}
    np.testing.assert_allclose(nb.predict_proba_many(X), [list(nb.predict_proba_one(x).values()) for x in X], rtol=1e-15)
    # zero_frequency, alpha and borrow_factor do not enter the sums
    other = _paper_model(scoring="paper_sum", zero_frequency="borrow", alpha=3.0, borrow_factor=0.2)
    np.testing.assert_array_equal(other.predict_proba_many(X), nb.predict_proba_many(X))


def test_paper_sum_increment_is_one_per_class_holding_the_value():
    """Value 7: class a 1 of 2, class b 2 of 4, class c 0 of 1 -> a (1+1)/2, b (2+1)/4, c 0.
    Value 1 is in every class: no increment, 1/2, 2/4, 1/1."""
    nb = MixedNB(nominal_attributes=[0], scoring="paper_sum")
    for v, y in [(7, "a"), (1, "a"), (7, "b"), (7, "b"), (1, "b"), (1, "b"), (1, "c")]:
        nb.learn_one([v], y)
    prior = np.array([2, 4, 1]) / 7
    for v, freq in ((7, [1.0, 3 / 4, 0.0]), (1, [1 / 2, 1 / 2, 1.0])):
        np.testing.assert_allclose(nb._paper_scores(np.array([[v]], dtype=float))[0], prior * freq, rtol=1e-15)
    # a missing or unseen value adds nothing: all Param 0, uniform probabilities
    for x in ([math.nan], [3.0]):
        assert list(nb.predict_proba_one(x).values()) == pytest.approx([1 / 3] * 3, abs=1e-15)
    # weights count as copies: the counter is the weight, the increment stays 1
    nb = MixedNB(nominal_attributes=[0], scoring="paper_sum")
    nb.learn_one([7.0], "a", w=3)
    nb.learn_one([1.0], "b", w=2)
    np.testing.assert_allclose(nb._paper_scores(np.array([[7.0]]))[0], [0.6 * 4 / 3, 0.0], rtol=1e-15)


def test_paper_sum_adds_the_numeric_density():
    """One numeric feature (class a: 0, 2 -> mean 1, var 1; class b: 4, 6 -> mean 5, var 1)
    and one nominal; Param_k = P(k) (N(x; mu_k, var_k + eps) + P(v | k))."""
    nb = MixedNB(nominal_attributes=[1], scoring="paper_sum")
    for x, y in [([0.0, 1.0], "a"), ([2.0, 1.0], "a"), ([4.0, 1.0], "b"), ([6.0, 2.0], "b")]:
        nb.learn_one(x, y)
    eps = nb.gaussian_.epsilon_

    def density(x, mu):
        return math.exp(-((x - mu) ** 2) / (2 * (1 + eps))) / math.sqrt(2 * math.pi * (1 + eps))

    # value 1.0: a holds it 2 of 2, b 1 of 2, both hold it: no increment
    want = [0.5 * (density(3.0, 1.0) + 1.0), 0.5 * (density(3.0, 5.0) + 0.5)]
    np.testing.assert_allclose(nb._paper_scores(np.array([[3.0, 1.0]]))[0], want, rtol=1e-14)
    # a missing numeric value adds nothing; value 2.0 only in b: b gets (1 + 1) / 2
    np.testing.assert_allclose(nb._paper_scores(np.array([[math.nan, 2.0]]))[0], [0.0, 0.5], rtol=1e-15)
    assert nb.predict_proba_one([math.nan, 2.0]) == {"a": 0.0, "b": 1.0}


def test_scoring_off_changes_nothing():
    """The default is "product", and "product" given explicitly is the same model bit for bit
    (the hand-computed decisions of the Laplace and borrowing tests above hold with it)."""
    assert MixedNB().scoring == "product"
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.normal(size=120), rng.integers(0, 4, 120), rng.integers(0, 3, 120)]).astype(float)
    X[rng.random(120) < 0.1, 1] = np.nan
    y = [("a", "b", "c")[int(v)] for v in rng.integers(0, 3, 120)]
    for kw in ({}, {"zero_frequency": "borrow"}, {"learning_rate": 0.05}):
        default, explicit = MixedNB([1, 2], **kw), MixedNB([1, 2], scoring="product", **kw)
        default.learn_many(X[:80], y[:80])
        explicit.learn_many(X[:80], y[:80])
        np.testing.assert_array_equal(default.predict_proba_many(X[80:]), explicit.predict_proba_many(X[80:]))
        assert [default.predict_proba_one(x) for x in X[80:]] == [explicit.predict_proba_one(x) for x in X[80:]]
        assert encode(default.state()) == encode(explicit.state())
        assert default.memory_bytes() == explicit.memory_bytes()
    nb = _paper_model(scoring="product")
    assert nb.predict_proba_one(PAPER_TEST[0][0])[2] == pytest.approx(4 / 7, abs=1e-12)
    # a state written before the option existed (no "scoring" key) loads as "product"
    state = nb.state()
    del state["params"]["scoring"]
    assert learner_from_state(state).scoring == "product"


def test_paper_sum_state_round_trip():
    nb = _paper_model(scoring="paper_sum", learning_rate=0.2)
    restored = learner_from_state(decode(encode(nb.state())))
    assert restored.scoring == "paper_sum"
    for x, _ in PAPER_TEST:
        assert restored.predict_proba_one(x) == nb.predict_proba_one(x)


def test_borrow_takes_the_smallest_non_zero_frequency_of_the_other_classes():
    # value 7 of feature 0: class a 1/2, class b 1/4, class c and d never -> both get 0.9 x 1/4
    nb = MixedNB(nominal_attributes=[0], zero_frequency="borrow")
    rows = [(7, "a"), (1, "a"), (7, "b"), (1, "b"), (1, "b"), (1, "b"), (1, "c"), (1, "d")]
    for v, y in rows:
        nb.learn_one([v], y)
    prior = np.array([2, 4, 1, 1]) / 8
    lik = np.array([1 / 2, 1 / 4, 0.9 / 4, 0.9 / 4])
    expected = prior * lik / (prior * lik).sum()
    np.testing.assert_allclose(list(nb.predict_proba_one([7]).values()), expected, rtol=1e-12)
    # a value seen in no class, or missing, leaves the priors
    for x in ([3.0], [math.nan]):
        np.testing.assert_allclose(list(nb.predict_proba_one(x).values()), prior, rtol=1e-12)


def test_counts_are_exact_weights():
    nb = MixedNB(nominal_attributes=[1, 2])
    nb.learn_one([0.5, 2.0, 0.0], "a", w=2.5)
    nb.learn_one([0.7, 1.0, math.nan], "a")
    nb.learn_one([0.1, 2.0, 1.0], "b", w=3)
    nb.learn_one([0.2, 9.0, 1.0], "b", w=0)  # weight 0: nothing learned, value not registered
    assert nb.categories_ == [[2.0, 1.0], [0.0, 1.0]]
    assert nb.category_counts_[0].tolist() == [[2.5, 1.0], [3.0, 0.0]]
    assert nb.category_counts_[1].tolist() == [[2.5, 0.0], [0.0, 3.0]]
    assert nb.n_samples_seen_ == 6.5
    # the numeric column went to the GaussianNB, with the same weights
    assert nb.gaussian_.counts_.tolist() == [[3.5], [3.0]]
    assert nb.gaussian_.means_[:, 0].tolist() == pytest.approx([(2.5 * 0.5 + 0.7) / 3.5, 0.1])


def test_weight_k_equals_k_repeats_and_learn_many_equals_learn_one():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.normal(size=200), rng.integers(0, 4, 200), rng.integers(0, 3, 200)]).astype(float)
    X[rng.random(200) < 0.1, 1] = np.nan
    y = [("a", "b")[int(v)] for v in rng.integers(0, 2, 200)]
    w = rng.integers(0, 4, 200).astype(float)
    for lr in (None, 0.05):
        one, rep, many = (MixedNB(nominal_attributes=[1, 2], learning_rate=lr) for _ in range(3))
        for xi, yi, wi in zip(X, y, w):
            one.learn_one(xi, yi, wi)
            for _ in range(int(wi)):
                rep.learn_one(xi, yi)
        many.learn_many(X, y, w)
        for a, b in zip(one.category_counts_, many.category_counts_):
            np.testing.assert_array_equal(a, b)
        if lr is None:
            for a, b in zip(one.category_counts_, rep.category_counts_):
                np.testing.assert_array_equal(a, b)
        else:
            for a, b in zip(one.category_counts_, rep.category_counts_):
                np.testing.assert_allclose(a, b, rtol=1e-9)
        P = one.predict_proba_many(X)
        np.testing.assert_allclose(many.predict_proba_many(X), P, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose([list(one.predict_proba_one(x).values()) for x in X], P, rtol=1e-9, atol=1e-12)


def test_learning_rate_moves_frequencies_by_the_rate():
    """alpha = 0.5 (1/n up to n = 2, then 0.5): values 0, 1, 1 -> p = (1/2, 1/2), then
    (1 - 0.5)(1/2, 1/2) + 0.5 (0, 1) = (1/4, 3/4); the counts are 2 p (T = 1/alpha = 2)."""
    nb = MixedNB(nominal_attributes=[0], learning_rate=0.5)
    for v in (0.0, 1.0, 1.0):
        nb.learn_one([v], "a")
    assert nb.category_counts_[0].tolist() == [[0.5, 1.5]]
    nb.learn_one([0.0], "a")  # (1/8, 3/8) + (1/2, 0) -> counts (1.25, 0.75)
    assert nb.category_counts_[0].tolist() == [[1.25, 0.75]]


def test_numeric_only_is_gaussian_nb_and_mixed_multiplies_its_posterior():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=60), rng.normal(size=60), rng.integers(0, 2, 60)])
    y = ["p" if a > 0 else "q" for a in X[:, 0]]
    gnb, nb = GaussianNB(), MixedNB()
    gnb.learn_many(X, y)
    nb.learn_many(X, y)
    assert nb.predict_proba_one(X[0]) == gnb.predict_proba_one(X[0])
    mixed = MixedNB(nominal_attributes=[2])
    mixed.learn_many(X, y)
    g2 = GaussianNB()
    g2.learn_many(X[:, :2], y)
    post = g2.predict_proba_one(X[5, :2])
    counts = mixed.category_counts_[0]
    col = mixed.categories_[0].index(X[5, 2])
    lik = (counts[:, col] + 1) / (counts.sum(axis=1) + 2)
    joint = np.array([post["p"], post["q"]]) * lik
    assert list(mixed.predict_proba_one(X[5]).values()) == pytest.approx((joint / joint.sum()).tolist(), rel=1e-12)


def test_casebook_c08_outlier_underflow_with_a_nominal_feature():
    nb = MixedNB(nominal_attributes=[1])
    for f0, y in [(-1.0, "a"), (0.0, "a"), (1.0, "a"), (0.0, "b"), (1.0, "b"), (2.0, "b")]:
        nb.learn_one([f0, 1.0], y)
    proba = nb.predict_proba_one([1000.0, 1.0])
    assert nb.predict_one([1000.0, 1.0]) == "b"
    assert proba["b"] == 1.0 and not any(math.isnan(p) for p in proba.values())


def test_casebook_c30_pickle_and_state_round_trip():
    nb = _paper_model(zero_frequency="borrow", learning_rate=0.2)
    copy = pickle.loads(pickle.dumps(nb))
    restored = learner_from_state(decode(encode(nb.state())))
    for x, _ in PAPER_TEST:
        assert copy.predict_proba_one(x) == nb.predict_proba_one(x) == restored.predict_proba_one(x)
    before = encode(nb.state())
    copy.learn_one((9, 7, 10, 7), 4)
    restored.learn_one((9, 7, 10, 7), 4)
    assert encode(nb.state()) == before
    assert encode(copy.state()) == encode(restored.state())
    assert copy.categories_[0][-1] == 9.0


@pytest.mark.parametrize(
    "kw",
    [
        {"nominal_attributes": [0, 0]},
        {"nominal_attributes": [-1]},
        {"nominal_attributes": [1.5]},
        {"nominal_attributes": 3},
        {"zero_frequency": "smooth"},
        {"alpha": 0.0},
        {"borrow_factor": 1.0},
        {"learning_rate": 1.0},
        {"scoring": "sum"},
    ],
)
def test_bad_parameters_raise(kw):
    with pytest.raises(ValueError):
        MixedNB(**kw)


def test_nominal_index_out_of_range_raises_and_leaves_the_model_empty():
    nb = MixedNB(nominal_attributes=[2])
    with pytest.raises(ValueError, match="nominal_attributes"):
        nb.learn_one([1.0, 2.0], "a")
    with pytest.raises(ValueError, match="nominal_attributes"):
        nb.learn_many([[1.0, 2.0]], ["a"])
    assert nb.classes_ == [] and nb.n_features_in_ is None
    assert split_columns([2], 4) == ([2], [0, 1, 3])


def test_registered_kind():
    nb = make_learner("mixed_nb", nominal_attributes=[0], zero_frequency="borrow")
    assert isinstance(nb, MixedNB)


# ---------------------------------------------------------------------------- scoring="moa"

# x = (nominal code, numeric): class a saw codes 0 and 1 with 1.0 and 3.0, class b code 0 with 2.0
MOA_TRAIN = [([0.0, 1.0], "a"), ([1.0, 3.0], "a"), ([0.0, 2.0], "b")]


def moa_nb(classes=("a", "b")):
    nb = MixedNB(nominal_attributes=[0], scoring="moa", classes=classes)
    for x, y in MOA_TRAIN:
        nb.learn_one(x, y)
    return nb


def test_moa_scoring_gives_moas_votes():
    """MOA's NaiveBayes by hand: prior x (n_kv + 1) / (n_k + V_k) x normal density with the
    sample variance; a single value (variance 0) gives 1 at its mean."""
    vote_a = 2 / 3 * (1 + 1) / (2 + 2) * (1 / math.sqrt(2 * math.pi * 2.0))  # mean 2, var (1+1)/(2-1)
    vote_b = 1 / 3 * (1 + 1) / (1 + 1) * 1.0  # V_b = 1: b saw code 0 only
    p = moa_nb().predict_proba_one([0.0, 2.0])
    assert p["a"] == pytest.approx(vote_a / (vote_a + vote_b), rel=1e-12)
    assert p["b"] == pytest.approx(vote_b / (vote_a + vote_b), rel=1e-12)


def test_moa_scoring_counts_an_unseen_value_and_a_point_mass_off_its_mean():
    """An unseen code is 1 / (n_k + V_k) (not disregarded); class b's single value 2.0 gives
    density 0 at 2.5, so b's vote is 0."""
    p = moa_nb().predict_proba_one([7.0, 2.5])
    assert p == {"a": 1.0, "b": 0.0}
    nb = moa_nb()
    vote_a = 2 / 3 * (0 + 1) / (2 + 2) * (1 / math.sqrt(2 * math.pi * 2.0))
    vote_b = 1 / 3 * (0 + 1) / (1 + 1) * 1.0
    assert nb.predict_proba_one([7.0, 2.0])["b"] == pytest.approx(vote_b / (vote_a + vote_b), rel=1e-12)
    assert nb.predict_proba_one([float("nan"), 2.0])["b"] == pytest.approx(
        (1 / 3) / (1 / 3 + 2 / 3 / math.sqrt(2 * math.pi * 2.0)), rel=1e-12)  # missing: skipped


def test_moa_scoring_ties_go_to_the_first_declared_class():
    """Votes that underflow to 0 for every class leave MOA's class index 0, here b (declared
    first, learned second); before learning MOA also predicts its first class."""
    assert moa_nb(classes=("b", "a")).predict_one([0.0, 1e6]) == "b"
    assert moa_nb(classes=("a", "b")).predict_one([0.0, 1e6]) == "a"
    assert moa_nb(classes=("b", "a")).predict_proba_one([0.0, 1e6]) == {"a": 0.5, "b": 0.5}
    assert MixedNB(nominal_attributes=[0], scoring="moa", classes=["z", "a"]).predict_one([0.0, 1.0]) == "z"
    assert MixedNB(nominal_attributes=[0], scoring="moa").predict_one([0.0, 1.0]) is None


def test_moa_scoring_survives_state_and_refuses_a_learning_rate():
    nb = moa_nb(classes=("b", "a"))
    back = MixedNB.from_state(decode(encode(nb.state())))
    for x in ([0.0, 2.0], [7.0, 2.5], [1.0, 1e6], [float("nan"), 3.0]):
        assert back.predict_one(x) == nb.predict_one(x)
        assert back.predict_proba_one(x) == nb.predict_proba_one(x)
    assert back.predict_many(np.array([[0.0, 1e6]])) == ["b"]
    with pytest.raises(ValueError, match="learning_rate"):
        MixedNB(scoring="moa", learning_rate=0.01)
    with pytest.raises(ValueError, match="duplicate"):
        MixedNB(scoring="moa", classes=["a", "a"])


def _moa_stream(n: int, seed: int = 3):
    """A 3-class stream of a nominal attribute (6 codes), a Gaussian one, one constant within
    its class (zero variance), one with missing values, and a far outlier now and then."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = np.column_stack([
        (y + rng.integers(0, 4, n)) % 6,
        rng.normal(y * 1.5, 1.0 + y),
        y * 2.0,
        np.where(rng.random(n) < 0.2, np.nan, rng.normal(-y, 0.5)),
    ])
    X[rng.random(n) < 0.02, 1] = 1e4
    return X, [int(v) for v in y]


def test_moa_scoring_matches_moas_naive_bayes_sample_by_sample(tmp_path):
    """MOA's own NaiveBayes (CapyMOA) on the same ARFF stream: its prediction (Utils.maxIndex of
    its votes) and its normalised votes equal ours at every sample, test then train."""
    pytest.importorskip("capymoa", reason="capymoa (and Java) not installed: MOA's NaiveBayes is the reference")
    from bench.srp import moa_available, moa_learner, write_arff
    from edgebayes.streams.schema import Feature, Schema

    if (problem := moa_available(tmp_path)) is not None:
        pytest.skip(problem)
    from capymoa.stream import ARFFStream
    from moa.core import Utils

    X, y = _moa_stream(600)
    schema = Schema((Feature("c", "nominal", tuple(map(str, range(6)))), Feature("g"), Feature("z"), Feature("m")),
                    classes=(0, 1, 2))
    write_arff(tmp_path / "s.arff", X, y, schema)
    stream = ARFFStream(str(tmp_path / "s.arff"))
    moa = moa_learner("NB", stream.get_schema(), 1)
    ours = MixedNB(nominal_attributes=[0], scoring="moa", classes=[0, 1, 2])
    n_mass = 0
    for xi, yi in zip(X, y):
        inst = stream.next_instance()
        votes = moa.moa_learner.getVotesForInstance(inst.java_instance)
        assert ours.predict_one(xi) == int(Utils.maxIndex(votes))
        v = np.pad(np.array(votes, dtype=float), (0, 3 - len(votes)))
        if ours.classes_ and v.sum() > 0.0:
            p = ours.predict_proba_one(xi)
            np.testing.assert_allclose([p.get(k, 0.0) for k in (0, 1, 2)], v / v.sum(), rtol=1e-9, atol=1e-300)
            n_mass += 1
        moa.train(inst)
        ours.learn_one(xi, yi)
    assert n_mass > 500  # the votes were compared, not only the argmax
