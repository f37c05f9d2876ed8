"""Streaming Random Patches: subspaces, Poisson weights, detectors, vote, events, state.

Cases of docs/cases.md covered here: C11 (vote padded to every class), C25 (detectors fed 1 = error;
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
from edgebayes.ensemble import SRPClassifier
from edgebayes.ensemble.srp import combine_votes
from edgebayes.ensemble.srp_budget import MEMBER_FRACTION
from edgebayes.ensemble.srp_member import UNKNOWN_ACCURACY_WEIGHT
from edgebayes.ensemble.subspaces import (
    check_subspace_size,
    draw_subspaces,
    random_subspace,
    subspace_size_for,
)
from edgebayes.naive_bayes import GaussianNB

pytestmark = pytest.mark.usefixtures("backend")  # every test on both backends

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
    assert list(out) == classes  # every class, in order (docs/cases.md C11)
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


def _flip_stream(n_before, n_after, seed=0, d=3):
    """Two Gaussian classes; at ``n_before`` the labels swap (an abrupt real drift)."""
    X, y = _blobs(n_before + n_after, seed=seed, d=d)
    swap = {"a": "b", "b": "a"}
    return X, y[:n_before] + [swap[v] for v in y[n_before:]]


class _ForcedPoisson:
    """Stands in for the ensemble's Poisson generator: returns the given rows of k in turn."""

    def __init__(self, rows):
        self.rows = iter(rows)

    def poisson(self, lam, size):
        return np.array(next(self.rows))


# ---------------------------------------------------------------------------- construction


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_models": 0}, "n_models"),
        ({"n_models": 2.5}, "n_models"),
        ({"training_method": "bagging"}, "training_method"),
        ({"lam": 0.0}, "lam"),
        ({"lam": float("inf")}, "lam"),
        ({"disable_detector": "both"}, "disable_detector"),
        ({"disable_weighted_vote": 1}, "disable_weighted_vote"),
        ({"seed": -1}, "seed"),
        ({"drift_detector": "adwin"}, "drift_detector"),
        ({"model": "tree"}, "model"),
        ({"model": {"var_smoothing": 1e-9}}, "kind"),
        ({"model": {"kind": "no_such_learner"}}, "no_such_learner"),
        ({"model": {"kind": "gaussian_nb", "grace_period": 50}}, "grace_period"),
        ({"model": {"kind": "srp"}}, "srp"),
        ({"max_size_bytes": 10_000}, "max_size_bytes"),  # GaussianNB takes no budget
    ],
)
def test_invalid_arguments_raise(kwargs, match):
    kwargs.setdefault("model", GaussianNB())
    with pytest.raises(ValueError, match=match):
        SRPClassifier(**kwargs)


def test_arguments_are_stored_unchanged_and_predict_does_not_initialise():
    srp = SRPClassifier(model=GaussianNB(), n_models=4, subspace_size="sqrt", seed=7)
    assert (srp.n_models, srp.subspace_size, srp.drift_detector, srp.seed) == (4, "sqrt", None, 7)
    assert srp.predict_proba_one([0.0, 1.0]) == {}
    assert srp.members == [] and srp.n_features_ is None  # River initialises in predict; we do not


def test_model_given_as_a_config_dict_is_stored_unchanged_and_round_trips():
    # a TOML config chooses the base learner: {"kind": ..., **params} built by make_learner
    config = {"kind": "hoeffding_tree", "grace_period": 20, "leaf_prediction": "mc"}
    X, y = _blobs(300, seed=8)
    srp = SRPClassifier(model=config, n_models=3, seed=8)
    assert srp.model is config and config == {"kind": "hoeffding_tree", "grace_period": 20, "leaf_prediction": "mc"}
    srp.learn_many(X, y)
    assert [(m.grace_period, m.leaf_prediction) for m in srp.members] == [(20, "mc")] * 3
    restored = learner_from_state(decode(encode(srp.state())))
    assert restored.model == config
    assert restored.predict_proba_many(X).tolist() == srp.predict_proba_many(X).tolist()
    assert encode(restored.state()) == encode(srp.state())
    nb = SRPClassifier(model={"kind": "gaussian_nb"}, n_models=2, seed=8)
    nb.learn_many(X, y)
    assert all(isinstance(m, GaussianNB) for m in nb.members)
    assert nb.clone().model == {"kind": "gaussian_nb"}


def test_subspaces_every_feature_means_resampling():
    srp = SRPClassifier(model=GaussianNB(), n_models=3, subspace_size=5, training_method="subspaces", seed=0)
    srp.learn_one([0.0, 1.0, 2.0], "a")
    assert srp.training_method == "subspaces" and srp.training_method_ == "resampling"
    assert srp.subspaces == [None, None, None]


# ---------------------------------------------------------------------------- Poisson weights


def test_poisson_weights_per_member_reproducible_and_distinct():
    X, y = _blobs(200, seed=1)

    def weights_seen(seed):
        srp = SRPClassifier(model=GaussianNB(), n_models=5, subspace_size=1.0, disable_detector="drift", seed=seed)
        for xi, yi in zip(X, y):
            srp.learn_one(xi, yi)
        return [m.n_samples_seen_ for m in srp.members]

    a, b, c = weights_seen(11), weights_seen(11), weights_seen(12)
    assert a == b  # same seed, same draws
    assert len(set(a)) == 5  # each member its own draws
    assert a != c
    assert all(w == int(w) and 900 < w < 1500 for w in a)  # ~ 200 * lam = 1200


def test_subspaces_method_trains_every_member_with_weight_one():
    X, y = _blobs(50, seed=2)
    srp = SRPClassifier(model=GaussianNB(), n_models=3, training_method="subspaces", seed=2)
    srp.learn_many(X, y)
    assert [m.n_samples_seen_ for m in srp.members] == [50.0, 50.0, 50.0]


def test_casebook_C27_members_draw_distinct_subspaces_and_runs_repeat():
    rng = np.random.default_rng(42)
    X = rng.normal(size=(200, 10))
    y = [int(v) for v in (X.sum(axis=1) > 0)]

    def run():
        srp = SRPClassifier(model=GaussianNB(), n_models=10, subspace_size=2, seed=42)
        srp.learn_many(X, y)
        return srp

    a, b = run(), run()
    assert len({tuple(s) for s in a.subspaces}) == 10  # C(10, 2) = 45 >= 10: all distinct
    assert encode(a.state()) == encode(b.state())
    assert a.predict_proba_many(X).tolist() == b.predict_proba_many(X).tolist()


def test_casebook_C28_zero_weight_neither_trains_nor_feeds_detectors():
    srp = SRPClassifier(model=GaussianNB(), n_models=2, lam=6.0, seed=0)
    srp._poisson = _ForcedPoisson([[0, 4], [0, 2], [3, 1]])  # member 0 draws 0, 0, 3
    stream = [([0.1], "a"), ([0.9], "b"), ([0.2], "a")]

    def widths(i):
        warning, drift = srp.member_detectors[i]
        return warning.detector.width, drift.detector.width

    for x, y in stream[:2]:
        srp.learn_one(x, y)
    assert srp.members[0].n_samples_seen_ == 0
    assert widths(0) == (0, 0)
    assert srp.member_accuracies[0] == 0.0  # tested on both (no prediction = wrong), as MOA
    srp.learn_one(*stream[2])
    assert srp.members[0].n_samples_seen_ == 3
    assert widths(0) == (1, 1)
    assert srp.members[1].n_samples_seen_ == 7 and widths(1) == (3, 3)


# ---------------------------------------------------------------------------- detectors, events


def test_casebook_C25_the_member_whose_error_rose_is_replaced():
    # member A sees feature 0, B feature 1; both agree for 200 samples, then feature 0 inverts:
    # A is wrong from then on, B still right. Detectors take 1 = error.
    rng = np.random.default_rng(5)
    s = rng.choice([-1.0, 1.0], size=400)
    noise = rng.normal(scale=0.1, size=(400, 2))
    X = np.column_stack([s, s]) + noise
    X[200:, 0] *= -1.0
    y = ["p" if v > 0 else "q" for v in s]
    srp = SRPClassifier(model=GaussianNB(), n_models=2, subspace_size=1, training_method="subspaces",
                        disable_detector="warning", seed=5)
    srp.learn_one(X[0], y[0])
    a = srp.subspaces.index([0])
    b = 1 - a
    b_learner = srp.members[b]
    drifts = []
    for i in range(1, 400):
        srp.learn_one(X[i], y[i])
        drifts += [(i, e) for e in srp.last_events]
    assert drifts and all(e["member"] == a and e["level"] == "drift" for _, e in drifts)
    first_i, first = drifts[0]
    assert 200 < first_i < 300
    assert first["detector"] == "adwin"
    assert first["accuracy_after"] < first["accuracy_before"]  # the error estimate rose
    assert srp.members[b] is b_learner  # B untouched
    assert srp.member_detectors[b][1].estimation < 0.01
    assert srp.member_detectors[b][1].n_detections == 0
    # the case's streams through a member's own signal: A's estimate ends > 0.5, B's at 0.0
    signal_a, signal_b = srp.member_detectors[b][1].clone(), srp.member_detectors[b][1].clone()
    fired_a = [signal_a.update(e) for e in [0.0] * 200 + [1.0] * 200]
    fired_b = [signal_b.update(0.0) for _ in range(400)]
    assert any(fired_a) and signal_a.estimation > 0.5
    assert not any(fired_b) and signal_b.estimation == 0.0


def test_detectors_judge_the_member_as_trained_on_the_sample():
    # the paper's code (MOA's correctlyClassifies after trainOnInstance): a fresh member has no
    # test prediction (wrong, counted in its accuracy) but classifies the sample right once
    # trained on it, so its detectors get 0, not 1
    srp = SRPClassifier(model=GaussianNB(), n_models=1, training_method="subspaces", seed=0)
    srp.learn_one([0.0, 1.0, 2.0], "a")
    assert srp.last_member_predictions == [None] and srp.member_accuracies == [0.0]
    warning, drift = srp.member_detectors[0]
    assert (warning.detector.width, warning.estimation) == (1, 0.0)
    assert (drift.detector.width, drift.estimation) == (1, 0.0)


class _AlwaysWarns:
    """A detector that signals on every input."""

    estimation = 1.0

    def update(self, x):
        return True

    def reset(self):
        pass

    def clone(self):
        return _AlwaysWarns()

    def state(self):
        return {"kind": "always"}

    def memory_bytes(self):
        return 0


def test_each_warning_starts_a_fresh_background_learner():
    # MOA's triggerWarning: a warning replaces a running background learner, so that a drift
    # swaps in a learner of the latest concept, not one started at an older warning
    srp = SRPClassifier(model=GaussianNB(), n_models=1, training_method="subspaces",
                        warning_detector=_AlwaysWarns(), seed=0)
    srp.learn_one([0.0, 1.0, 2.0], "a")
    first = srp._members[0].bkg
    srp.learn_one([0.1, 1.1, 2.1], "a")
    second = srp._members[0].bkg
    assert srp.n_warnings == 2 and second is not first
    assert first.n_samples_seen_ == 1 and second.n_samples_seen_ == 0


class _Scripted(_AlwaysWarns):
    """A detector that signals on the given inputs (1-based counts since construction)."""

    def __init__(self, fire_at):
        self.fire_at, self.n = tuple(fire_at), 0

    def update(self, x):
        self.n += 1
        return self.n in self.fire_at

    def clone(self):
        return _Scripted(self.fire_at)


def test_promoted_learner_trains_twice_and_a_drift_before_the_next_warning_keeps_it():
    # MOA keeps the swapped-in background learner as the member's background reference: it is
    # trained twice per sample, and a drift "swaps in" that reference, the member itself,
    # restarting only its accuracy; the next warning ends both
    srp = SRPClassifier(model=GaussianNB(), n_models=1, training_method="subspaces", seed=0,
                        warning_detector=_Scripted([3, 10]), drift_detector=_Scripted([5, 8]))
    X, y = _blobs(12, seed=1)
    seen = []
    for i in range(12):
        srp.learn_one(X[i], y[i])
        m = srp._members[0]
        seen.append((m.learner, m.learner.n_samples_seen_, getattr(m, "promoted", False),
                     srp.member_accuracies[0], m.bkg))
    assert (srp.n_warnings, srp.n_drifts) == (2, 2)
    promoted = seen[2][4]  # the warning at 3 started it; the drift at 5 swapped it in
    assert promoted is not None and seen[4][0] is promoted and seen[3][0] is not promoted
    assert [s[1] for s in seen[4:8]] == [2, 4, 6, 8]  # learned 4 and 5, then twice per sample
    assert all(s[0] is promoted and s[2] for s in seen[4:9])  # the drift at 8 kept it
    assert seen[7][3] is None  # ... and restarted its accuracy
    assert not seen[9][2] and seen[11][1] - seen[10][1] == 1  # the warning at 10 ended it


def test_abrupt_change_warns_grows_background_learners_and_replaces_members():
    X, y = _flip_stream(2000, 2000, seed=3)
    srp = SRPClassifier(model=GaussianNB(), n_models=5, seed=3)
    events, grown, swapped = [], 0, 0
    for i, (xi, yi) in enumerate(zip(X, y)):
        before = srp.members
        bkg_before = [m.bkg for m in srp._members]
        srp.learn_one(xi, yi)
        for e in srp.last_events:
            events.append((i, e))
            if e["level"] == "warning" and bkg_before[e["member"]] is None:
                grown += srp._members[e["member"]].bkg is not None
            if e["level"] == "drift" and bkg_before[e["member"]] is not None:
                swapped += srp.members[e["member"]] is bkg_before[e["member"]]
                assert srp.members[e["member"]] is not before[e["member"]]
    assert events and all(i >= 2000 for i, _ in events)  # nothing on the stationary prefix
    levels = [e["level"] for _, e in events]
    assert levels.count("warning") == srp.n_warnings > 0
    assert levels.count("drift") == srp.n_drifts > 0
    assert grown > 0 and swapped > 0
    assert all(set(e) == {"level", "member", "detector", "accuracy_before", "accuracy_after"} for _, e in events)
    # recovered: the last 500 samples are mostly right
    late = sum(srp.predict_one(xi) == yi for xi, yi in zip(X[-500:], y[-500:]))
    assert late > 450


@pytest.mark.parametrize("mode", ["warning", "drift"])
def test_disable_detector_modes(mode):
    X, y = _flip_stream(1500, 1500, seed=4)
    srp = SRPClassifier(model=GaussianNB(), n_models=4, disable_detector=mode, seed=4)
    old = None
    for i, (xi, yi) in enumerate(zip(X, y)):
        if i == 1:
            old = srp.members
        srp.learn_one(xi, yi)
        assert srp.n_background_learners == 0
    assert srp.n_warnings == 0
    if mode == "drift":
        assert srp.n_drifts == 0 and srp.members == old
        assert srp.member_detectors == [(None, None)] * 4
    else:
        assert srp.n_drifts > 0 and srp.members != old  # reset with fresh learners


def test_last_events_holds_what_the_latest_learn_one_signalled_and_nothing_else():
    X, y = _flip_stream(500, 1500, seed=6)
    srp = SRPClassifier(model=GaussianNB(), n_models=3, seed=6)
    signalled = {}
    for i, (xi, yi) in enumerate(zip(X, y)):
        srp.learn_one(xi, yi)
        if srp.last_events:
            signalled[i] = [(e["level"], e["member"]) for e in srp.last_events]
    # a warning and a drift per member: member 2 at 543, members 0 and 1 at 546, then none
    assert signalled == {
        543: [("warning", 2), ("drift", 2)],
        546: [("warning", 0), ("drift", 0), ("warning", 1), ("drift", 1)],
    }
    assert srp.n_warnings == srp.n_drifts == 3


# ---------------------------------------------------------------------------- state, labels


def _noisy_change_stream(n_before, n_after, seed=0, share=0.3):
    """Two Gaussian classes; from ``n_before`` on, ``share`` of the labels are swapped: a
    change slow enough for warnings to come before drifts."""
    X, y = _blobs(n_before + n_after, seed=seed)
    rng = np.random.default_rng(seed)
    swap = {"a": "b", "b": "a"}
    return X, y[:n_before] + [swap[v] if rng.random() < share else v for v in y[n_before:]]


def test_state_round_trip_mid_warning_continues_identically():
    X, y = _noisy_change_stream(1000, 1000, seed=3)
    srp = SRPClassifier(model=GaussianNB(), n_models=5, seed=3)
    i = 0
    while srp.n_background_learners == 0:
        srp.learn_one(X[i], y[i])
        i += 1
    restored = learner_from_state(decode(encode(srp.state())))
    assert restored.n_background_learners == srp.n_background_learners
    for xi, yi in zip(X[i:], y[i:]):
        assert restored.predict_proba_one(xi) == srp.predict_proba_one(xi)
        srp.learn_one(xi, yi)
        restored.learn_one(xi, yi)
        assert restored.last_events == srp.last_events
    assert encode(restored.state()) == encode(srp.state())
    assert (restored.n_warnings, restored.n_drifts) == (srp.n_warnings, srp.n_drifts)


def test_state_keeps_the_promoted_flag_and_older_states_load_without_it():
    X, y = _flip_stream(1500, 1500, seed=4)
    srp = SRPClassifier(model=GaussianNB(), n_models=5, seed=4)
    i = 0
    while not any(m.promoted for m in srp._members):
        srp.learn_one(X[i], y[i])
        i += 1
    state = decode(encode(srp.state()))
    restored = learner_from_state(state)
    assert [m.promoted for m in restored._members] == [m.promoted for m in srp._members]
    for xi, yi in zip(X[i:i + 300], y[i:i + 300]):
        srp.learn_one(xi, yi)
        restored.learn_one(xi, yi)
    assert encode(restored.state()) == encode(srp.state())
    for m in state["members"]:
        del m["promoted"]  # a checkpoint written before the flag existed
    assert not any(m.promoted for m in learner_from_state(state)._members)
    bad = decode(encode(srp.state()))
    bad["members"][0].update(promoted=True, bkg=bad["members"][0]["learner"], bkg_features=None)
    with pytest.raises(ValueError, match="promoted"):
        learner_from_state(bad)


def test_state_rejects_other_kinds():
    with pytest.raises(ValueError):
        SRPClassifier.from_state({"kind": "gaussian_nb"})
    with pytest.raises(ValueError):
        SRPClassifier.from_state({"kind": "srp"})


@pytest.mark.parametrize("labels", [("cold", "hot", "warm"), (0, 1, 2)])
def test_labels_and_a_class_first_seen_mid_stream(labels):
    X, _ = _blobs(400, seed=8, d=3)
    y = [labels[0] if x[0] < 0.5 else labels[1] for x in X[:200]]
    y += [labels[2] if x[0] > 1.5 else labels[0] if x[0] < 0.5 else labels[1] for x in X[200:]]
    srp = SRPClassifier(model=GaussianNB(), n_models=3, seed=8)
    for xi, yi in zip(X[:200], y[:200]):
        srp.learn_one(xi, yi)
    first_two = list(dict.fromkeys(y[:200]))  # order of first appearance
    assert srp.classes_ == first_two and set(first_two) == set(labels[:2])
    assert list(srp.predict_proba_one(X[0])) == first_two
    for xi, yi in zip(X[200:], y[200:]):
        srp.learn_one(xi, yi)
    assert srp.classes_ == first_two + [labels[2]]
    assert all(type(c) is type(labels[0]) for c in srp.classes_)
    proba = srp.predict_proba_one([3.0, 3.0, 3.0])
    assert list(proba) == srp.classes_ and math.isclose(sum(proba.values()), 1.0)
    assert srp.predict_one([3.0, 3.0, 3.0]) == labels[2]


def test_numpy_labels_are_stored_as_python_values():
    srp = SRPClassifier(model=GaussianNB(), n_models=2, seed=0)
    srp.learn_one([0.0, 1.0], np.int64(3))
    assert srp.classes_ == [3] and type(srp.classes_[0]) is int


def test_zero_weight_sample_changes_nothing():
    srp = SRPClassifier(model=GaussianNB(), n_models=3, seed=0)
    X, y = _blobs(30)
    srp.learn_many(X, y)
    before = encode(srp.state())
    srp.learn_one(X[0], "new", w=0.0)
    assert encode(srp.state()) == before


def test_bad_input_leaves_the_ensemble_unchanged():
    srp = SRPClassifier(model=GaussianNB(), n_models=3, seed=0)
    X, y = _blobs(30)
    srp.learn_many(X, y)
    before = encode(srp.state())
    for x, label, w in [([1.0, 2.0], "a", 1.0), ([1.0, math.inf, 0.0], "a", 1.0), ([1.0, 2.0, 3.0], None, 1.0),
                        ([1.0, 2.0, 3.0], "a", -1.0), ("abc", "a", 1.0), ([[1.0, 2.0, 3.0]], "a", 1.0)]:
        with pytest.raises(ValueError):
            srp.learn_one(x, label, w)
    assert encode(srp.state()) == before


def test_nan_feature_is_accepted_as_missing():
    srp = SRPClassifier(model=GaussianNB(), n_models=3, seed=0)
    X, y = _blobs(30)
    srp.learn_many(X, y)
    srp.learn_one([math.nan, 0.0, 0.0], "a")
    assert set(srp.predict_proba_one([math.nan, 0.0, 0.0])) == {"a", "b"}


# ---------------------------------------------------------------------------- diagnostics


def test_pairwise_kappa_by_hand():
    from edgebayes.ensemble.diagnostics import pairwise_kappa

    # members (columns): m0 = 0101, m1 = 0110, m2 = 1101
    # (0,1): p_o .5, p_e .5 -> 0 ; (0,2): p_o .75, p_e .5 -> .5 ; (1,2): p_o .25, p_e .5 -> -.5
    rows = [[0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 0, 1]]
    assert pairwise_kappa(rows) == pytest.approx(0.0, abs=1e-15)
    assert pairwise_kappa([[r[0], r[2]] for r in rows]) == pytest.approx(0.5)
    assert pairwise_kappa([["a", "a"], ["b", "b"]]) == 1.0
    assert pairwise_kappa([["a", "a"], ["a", "a"]]) == 1.0  # chance agreement 1: identical
    assert math.isnan(pairwise_kappa([["a"], ["b"]]))


def test_diversity_monitor_in_the_evaluation_loop():
    from edgebayes.ensemble.diagnostics import DiversityMonitor
    from edgebayes.evaluate import prequential

    X, y = _blobs(600, seed=9)
    srp = SRPClassifier(model=GaussianNB(), n_models=4, seed=9)
    monitor = DiversityMonitor(srp, window=200)
    curve = []
    prequential(monitor, zip(X, y), every=200,
                callback=lambda r: curve.append((r.n_samples, monitor.kappa(), monitor.average_depth())))
    assert [n for n, _, _ in curve] == [200, 400, 600]
    assert all(-1.0 <= k <= 1.0 for _, k, _ in curve)
    assert all(math.isnan(d) for _, _, d in curve)  # naive Bayes members have no depth
    assert len(monitor._rows) == 200
    with pytest.raises(ValueError):
        DiversityMonitor(srp, window=1)
    with pytest.raises(ValueError):
        DiversityMonitor(GaussianNB())


# ---------------------------------------------------------------------------- with trees


def _tree(**kw):
    from edgebayes.tree import HoeffdingTreeClassifier

    return HoeffdingTreeClassifier(**{"grace_period": 50, "delta": 0.01, "leaf_prediction": "nba", **kw})


def test_default_base_learner_is_the_papers_tree():
    srp = SRPClassifier(n_models=2, seed=0)
    srp.learn_one([0.0, 1.0, 2.0, 3.0, 4.0], "a")
    tree = srp.members[0]
    assert (type(tree).__name__, tree.grace_period, tree.delta, tree.leaf_prediction) == (
        "HoeffdingTreeClassifier", 50, 0.01, "nba")
    assert tree.features == srp.subspaces[0] and len(tree.features) == 3  # 60 % of 5
    assert srp.model is None  # the argument is kept as given


def test_memory_budget_is_shared_and_never_exceeded():
    from edgebayes.ensemble.diagnostics import average_depth

    rng = np.random.default_rng(10)
    X = rng.uniform(size=(3000, 6))
    y = [int(a + b > 1.0) + 2 * int(c > 0.5) for a, b, c in X[:, :3]]
    y = y[:1500] + [3 - c for c in y[1500:]]  # an abrupt change: members warn and drift
    budget = 250_000  # room for MEMBER_FRACTION's split: background learners above the tree's minimum
    srp = SRPClassifier(model=_tree(grace_period=10), n_models=3, max_size_bytes=budget, seed=10)
    unbounded = SRPClassifier(model=_tree(grace_period=10), n_models=3, seed=10)
    peak = 0
    for i, (xi, yi) in enumerate(zip(X, y)):
        srp.learn_one(xi, yi)
        unbounded.learn_one(xi, yi)
        if i % 50 == 0:
            peak = max(peak, srp.memory_bytes())
    assert peak <= budget and srp.memory_bytes() <= budget
    assert unbounded.memory_bytes() > budget  # the bound did bite
    shares = {t.max_size_bytes for t in srp.members}
    assert len(shares) == 1  # background learners swapped in by a drift got a member's share
    assert srp.n_drifts > 0 and srp.n_warnings > 0
    share = shares.pop()
    assert share == srp._share and 3 * share / MEMBER_FRACTION < budget
    assert 0 < srp._bkg_share < share
    assert average_depth(srp) >= 1.0


def test_budget_too_small_is_refused_up_front():
    with pytest.raises(ValueError, match="too small"):
        SRPClassifier(model=_tree(), n_models=10, max_size_bytes=50_000)


def test_casebook_C20_deep_trees_inside_srp_do_not_recurse():
    import sys

    # the case's staircase (labels flip every 10 samples), shortened: 3000 samples already
    # grow trees ~300 deep, far past the recursion limit set below
    n = 3000
    X = np.arange(n, dtype=float)[:, None] / n
    y = [(i // 10) % 2 for i in range(n)]
    srp = SRPClassifier(model=_tree(grace_period=10, delta=0.5, tau=1.0), n_models=2,
                        disable_detector="drift", seed=0)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(120)
    try:
        for xi, yi in zip(X, y):
            srp.learn_one(xi, yi)
        srp.predict_proba_one(X[0])
        state = encode(srp.state())
        restored = learner_from_state(decode(state))
    finally:
        sys.setrecursionlimit(old)
    assert max(t.depth for t in srp.members) > 120
    assert restored.predict_one(X[-1]) == srp.predict_one(X[-1])
