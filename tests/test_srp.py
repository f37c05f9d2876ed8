"""Streaming Random Patches: subspaces, Poisson weights, detectors, vote, events, state.

Casebook cases covered here: C11 (vote padded to every class), C25 (detectors fed 1 = error;
the member whose error rose is replaced, the others untouched), C27 (members' subspaces and
weights distinct, runs reproducible), C28 (a member that drew k = 0 is neither trained nor
are its detectors fed).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from edgebayes.base import learner_from_state
from edgebayes.codec import decode, encode
from edgebayes.drift import ADWIN, ErrorDetector
from edgebayes.ensemble import SRPClassifier
from edgebayes.ensemble.srp import UNKNOWN_ACCURACY_WEIGHT, combine_votes
from edgebayes.ensemble.subspaces import (
    check_subspace_size,
    draw_subspaces,
    random_subspace,
    subspace_size_for,
)
from edgebayes.naive_bayes import GaussianNB

# ---------------------------------------------------------------------------- subspace sizes


@pytest.mark.parametrize(
    "size, n, k",
    [
        (0.6, 10, 6),  # the paper's m = 60 %
        (0.6, 7, 4),  # 4.2 -> 4 (ELEC without date)
        (0.6, 8, 5),  # 4.8 -> 5
        (0.5, 5, 3),  # 2.5 rounds half up, as Java's Math.round (Python's round gives 2)
        (0.5, 3, 2),  # 1.5 -> 2
        (0.1, 10, 2),  # rounds to 1 -> bumped to 2 (MOA)
        (0.01, 10, 1),  # rounds to 0 -> 1
        (0.6, 1, 1),  # one feature: 0.6 -> 1 -> 2 -> clipped to 1
        (0.6, 2, 2),  # 1.2 -> 1 -> 2: every feature
        (1.0, 9, 9),
        (3, 10, 3),
        (1, 10, 1),  # an explicit 1 stays 1
        (12, 10, 10),  # m larger than the number of features: every feature
        (-2, 10, 8),  # all but 2
        (-10, 10, 1),  # all but all: at least one
        (-15, 10, 1),
        ("sqrt", 10, 4),  # round(3.16) + 1
        ("sqrt", 16, 5),
        ("sqrt", 1, 1),  # 2 clipped to 1
        ("rmsqrt", 10, 6),  # 10 - 4
        ("rmsqrt", 4, 1),  # 4 - 3
        ("rmsqrt", 2, 1),  # 2 - 2 = 0 -> at least one
    ],
)
def test_subspace_size_rules(size, n, k):
    assert subspace_size_for(size, n) == k


@pytest.mark.parametrize("bad", [0, 0.0, -0.5, 1.5, True, "log2", None, float("nan")])
def test_invalid_subspace_size_is_refused(bad):
    with pytest.raises(ValueError):
        check_subspace_size(bad)
    with pytest.raises(ValueError, match="subspace_size"):
        SRPClassifier(model=GaussianNB(), subspace_size=bad)


def test_subspace_size_needs_a_feature():
    with pytest.raises(ValueError, match="at least one feature"):
        subspace_size_for(0.6, 0)


def test_distinct_subspaces_when_enough_exist():
    rng = np.random.default_rng(0)
    subs = draw_subspaces(10, 2, 10, rng)  # C(10, 2) = 45 >= 10
    assert len({s.tobytes() for s in subs}) == 10
    assert all(s.dtype == np.int64 and len(s) == 2 and list(s) == sorted(set(s.tolist())) for s in subs)
    # exactly as many as exist: every one of them, once
    subs = draw_subspaces(5, 2, 10, rng)  # C(5, 2) = 10
    assert sorted(tuple(s) for s in subs) == list(itertools.combinations(range(5), 2))


def test_few_subspaces_are_reused_evenly():
    rng = np.random.default_rng(0)
    subs = draw_subspaces(3, 2, 10, rng)  # C(3, 2) = 3 < 10: each 3 times, one of them 4 times
    counts = sorted(sum(tuple(s) == c for s in subs) for c in itertools.combinations(range(3), 2))
    assert counts == [3, 3, 4]
    subs = draw_subspaces(4, 1, 8, rng)  # 4 singletons, twice each
    assert sorted(int(s[0]) for s in subs) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_subspaces_are_not_the_lexicographic_first():
    # River gives n_models members the first combinations (all with feature 0); we draw at random
    firsts = [draw_subspaces(10, 6, 10, np.random.default_rng(s)) for s in range(5)]
    assert any(0 not in sub for subs in firsts for sub in subs)


def test_draw_subspaces_rejects_bad_sizes():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        draw_subspaces(5, 0, 3, rng)
    with pytest.raises(ValueError):
        draw_subspaces(5, 6, 3, rng)
    with pytest.raises(ValueError):
        draw_subspaces(5, 2, 0, rng)
    assert random_subspace(5, 5, rng).tolist() == [0, 1, 2, 3, 4]


# ---------------------------------------------------------------------------- weighted vote


def test_weighted_vote_arithmetic():
    classes, index = ["a", "b", "c"], {"a": 0, "b": 1, "c": 2}
    votes = [{"a": 0.8, "b": 0.2}, {"b": 3.0, "c": 1.0}, {}]  # the second is unnormalised
    # a: 0.8*0.5 = 0.4 ; b: 0.2*0.5 + 0.75*0.9 = 0.775 ; c: 0.25*0.9 = 0.225 ; total 1.4
    out = combine_votes(votes, [0.5, 0.9, 1.0], classes, index)
    assert out == pytest.approx({"a": 0.4 / 1.4, "b": 0.775 / 1.4, "c": 0.225 / 1.4}, abs=1e-15)
    assert list(out) == classes  # every class, in order (casebook C11)
    # unweighted: a 0.8, b 0.2 + 0.75, c 0.25 over 2
    out = combine_votes(votes, [1.0, 1.0, 1.0], classes, index)
    assert out == pytest.approx({"a": 0.4, "b": 0.475, "c": 0.125}, abs=1e-15)
    # nobody votes: uniform over the known classes; no class known: empty
    assert combine_votes([{}, {"a": 0.0}], [1.0, 1.0], classes, index) == pytest.approx(
        {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}
    )
    assert combine_votes([], [], [], {}) == {}


def test_casebook_C11_vote_covers_every_class():
    # a class seen by the ensemble but by no member's vote gets 0.0, and order never changes
    classes = [0, 1, 2, 3, 4, 5, 6]
    index = {c: i for i, c in enumerate(classes)}
    out = combine_votes([{4: 2 / 3, 1: 1 / 3}], [1.0], classes, index)
    assert list(out.values()) == pytest.approx([0.0, 1 / 3, 0.0, 0.0, 2 / 3, 0.0, 0.0], abs=1e-15)


def test_ensemble_vote_weights_are_member_accuracies():
    srp = SRPClassifier(model=GaussianNB(), n_models=4, seed=3)
    X, y = _blobs(300, seed=3)
    for xi, yi in zip(X, y):
        srp.learn_one(xi, yi)
    x = X[0]
    votes = [m.predict_proba_one(x[f] if f is not None else x) for m, f in
             zip(srp.members, [None if s is None else np.array(s) for s in srp.subspaces])]
    accs = srp.member_accuracies
    expected = combine_votes(votes, accs, srp.classes_, {c: i for i, c in enumerate(srp.classes_)})
    assert srp.predict_proba_one(x) == pytest.approx(expected, abs=1e-15)
    assert all(0.0 < a <= 1.0 for a in accs)


def test_zero_accuracy_member_votes_with_moa_fallback_weight():
    assert UNKNOWN_ACCURACY_WEIGHT == 0.01  # MOA: weight 1 on its percent scale


# ---------------------------------------------------------------------------- helpers


def _blobs(n, seed=0, d=3, labels=("a", "b")):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, len(labels), n)
    X = rng.normal(size=(n, d)) + 2.0 * y[:, None]
    return X, [labels[int(v)] for v in y]
