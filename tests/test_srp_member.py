"""SRP's member on its own: test-then-train, signals, warning and drift, vote, state."""

from __future__ import annotations

import numpy as np
import pytest

from edgebayes.drift import ADWIN
from edgebayes.drift.base import ErrorDetector
from edgebayes.ensemble import SRPClassifier
from edgebayes.ensemble.srp import combine_votes
from edgebayes.ensemble.srp_member import DRIFT, UNKNOWN_ACCURACY_WEIGHT, WARNING, Member
from edgebayes.naive_bayes import GaussianNB

pytestmark = pytest.mark.usefixtures("backend")  # every test on both backends

FEATURES = np.array([0, 2], dtype=np.int64)


class _Scripted:
    """A detector that signals on the given inputs (1-based counts) and keeps what it was fed."""

    estimation = 0.5

    def __init__(self, fire_at=()):
        self.fire_at, self.fed, self.n_resets = tuple(fire_at), [], 0

    def update(self, x):
        self.fed.append(x)
        return len(self.fed) in self.fire_at

    def reset(self):
        self.n_resets += 1

    def clone(self):
        return _Scripted(self.fire_at)

    def state(self):
        return {"kind": "scripted"}

    def memory_bytes(self):
        return 0


def _member(warning=None, drift=None) -> Member:
    """A member of this backend's type: GaussianNB fed x[0, 2]."""
    member_type = SRPClassifier(model=GaussianNB())._member_type
    return member_type(GaussianNB(), FEATURES, FEATURES, warning, drift)


def _sample(member, x, labels=("a", "b")):
    xs = [float(v) for v in x]
    return member.sample(xs, np.array(xs), {c: i for i, c in enumerate(labels)})


def test_train_tests_then_trains_with_k_times_w_on_its_subspace():
    m = _member(_Scripted(), _Scripted())
    ref = GaussianNB()
    rows = [([0.0, 9.0, 1.0], "a", 1.0, 2), ([3.0, -9.0, 4.0], "b", 0.5, 3), ([0.2, 5.0, 1.1], "a", 2.0, 1)]
    for x, y, w, k in rows:
        expected = ref.predict_one([x[0], x[2]])  # the test, before training
        sample = _sample(m, x)
        assert m.train(sample, y, w, k) == 0
        assert sample.predictions == [expected]
        ref.learn_one([x[0], x[2]], y, k * w)
    assert m.learner.state() == ref.state()
    assert (m.n_tested, m.n_correct) == (3.5, 2.0)  # the third test was right, with weight 2
    # the tests were wrong twice, but the detectors judge the member as trained: right each time
    assert m.drift.fed == m.warning.fed == [0.0, 0.0, 0.0]


def test_a_zero_draw_is_tested_and_counted_but_neither_trains_nor_feeds_the_signals():
    m = _member(_Scripted(), _Scripted())
    m.train(_sample(m, [0.0, 0.0, 1.0]), "a", 1.0, 1)
    before = m.learner.state()
    sample = _sample(m, [0.0, 0.0, 1.0])
    assert m.train(sample, "a", 1.0, 0) == 0
    assert sample.predictions == ["a"] and (m.n_tested, m.n_correct) == (2.0, 1.0)
    assert m.learner.state() == before and len(m.drift.fed) == len(m.warning.fed) == 1


@pytest.mark.parametrize("warn_at, drift_at, signals", [
    ((), (), 0), ((1,), (), WARNING), ((), (1,), DRIFT), ((1,), (1,), WARNING | DRIFT),
])  # fmt: skip
def test_train_returns_the_signals_that_fired(warn_at, drift_at, signals):
    m = _member(_Scripted(warn_at), _Scripted(drift_at))
    assert m.train(_sample(m, [1.0, 2.0, 3.0]), "a", 1.0, 4) == signals


def test_without_detectors_train_returns_no_signal():
    m = _member()
    assert m.train(_sample(m, [1.0, 2.0, 3.0]), "a", 1.0, 4) == 0
    assert m.learner.n_samples_seen_ == 4.0  # one learn_one of weight k * w


def test_background_learner_trains_beside_the_member_and_a_promoted_one_twice():
    m = _member(_Scripted(), _Scripted())
    bkg_features = np.array([1], dtype=np.int64)
    m.on_warning(GaussianNB(), bkg_features, bkg_features)
    m.train(_sample(m, [1.0, 2.0, 3.0]), "a", 1.0, 2)
    assert m.bkg.n_samples_seen_ == 2.0 and m.bkg.n_features_in_ == 1
    m.on_drift(None, 5000)  # swaps the background learner in: promoted, with a member's share
    assert m.bkg is None and m.promoted and m.features is bkg_features
    assert m.learner.max_size_bytes == 5000
    m.train(_sample(m, [1.0, 2.0, 3.0]), "a", 1.0, 2)
    assert m.learner.n_samples_seen_ == 6.0  # trained twice on the second sample


def test_on_warning_replaces_a_running_background_learner_and_restarts_the_warning():
    m = _member(_Scripted(), _Scripted())
    m.promoted = True
    first, second = GaussianNB(), GaussianNB()
    m.on_warning(first, None, None)
    m.on_warning(second, FEATURES, FEATURES)
    assert m.bkg is second and m.bkg_features is FEATURES and not m.promoted
    assert (m.warning.n_resets, m.drift.n_resets) == (2, 0)


def test_on_drift_without_background_learner_takes_a_fresh_one_and_restarts_everything():
    m = _member(_Scripted(), _Scripted())
    m.n_tested, m.n_correct = 4.0, 3.0
    fresh = GaussianNB()
    m.on_drift(lambda: (fresh, None, None), None)
    assert m.learner is fresh and m.features is None and m.take is None and not m.promoted
    assert (m.n_tested, m.n_correct, m.warning.n_resets, m.drift.n_resets) == (0.0, 0.0, 1, 1)


def test_on_drift_of_a_promoted_member_restarts_only_its_accuracy():
    m = _member(_Scripted(), _Scripted())
    learner = m.learner
    m.promoted, m.n_tested, m.n_correct = True, 4.0, 3.0
    m.on_drift(lambda: pytest.fail("a promoted member takes no fresh learner"), 100)
    assert m.learner is learner and m.promoted and (m.n_tested, m.n_correct) == (0.0, 0.0)
    assert (m.warning.n_resets, m.drift.n_resets) == (0, 0)


@pytest.mark.parametrize("weighted", [True, False])
def test_vote_adds_the_normalised_probabilities_times_the_weight(weighted):
    m = _member()
    for x, y in [([0.0, 0.0, 0.0], "a"), ([2.0, 0.0, 2.0], "b"), ([0.1, 0.0, 0.3], "a")]:
        m.train(_sample(m, x), y, 1.0, 1)
    assert m.weight == 1.0 / 3.0  # the third test only was right
    sample = _sample(m, [0.5, 7.0, 0.4])
    m.vote(sample, weighted)
    m.vote(sample, weighted)
    vote = m.learner.predict_proba_one([0.5, 0.4])
    weight = m.weight if weighted else 1.0
    assert sample.proba(["a", "b"]) == combine_votes([vote, vote], [weight, weight], ["a", "b"], sample.index)
    assert sample.best(["a", "b"]) == max(vote, key=vote.get)


def test_a_member_that_was_never_right_votes_with_the_fallback_weight():
    m = _member()
    assert m.weight == UNKNOWN_ACCURACY_WEIGHT and m.accuracy is None
    m.train(_sample(m, [0.0, 0.0, 0.0]), "a", 1.0, 1)  # no prediction yet: wrong
    assert m.weight == UNKNOWN_ACCURACY_WEIGHT and m.accuracy == 0.0


def test_state_keeps_the_checkpoint_keys_and_round_trips():
    m = _member(ErrorDetector(ADWIN(delta=0.01)), ErrorDetector(ADWIN(delta=0.001)))
    m.on_warning(GaussianNB(), FEATURES[:1], FEATURES[:1])
    for i in range(30):
        m.train(_sample(m, [i % 3, 1.0, i % 2]), "ab"[i % 2], 1.0, 1 + i % 3)
    state = m.state()
    assert list(state) == ["learner", "features", "warning", "drift", "n_tested", "n_correct", "bkg",
                           "bkg_features", "promoted"]  # as SRP checkpoints have always written them
    restored = type(m).from_state(state, lambda f: f)
    assert restored.state() == state and type(restored) is type(m)
    del state["promoted"]  # checkpoints written before the flag existed
    assert not type(m).from_state(state, lambda f: f).promoted


def test_the_compiled_member_overrides_vote_and_train_only(backend):
    if backend != "compiled":
        pytest.skip("the compiled member only")
    compiled = type(_member())
    own = {name for name in vars(compiled) if not name.startswith("__")}
    assert compiled.__mro__[1] is Member and own == {"vote", "train", "sample"}
