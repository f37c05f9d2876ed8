"""One member of Streaming Random Patches: a learner on its random patch, its accuracy, its
warning and drift signals and its background learner.

`Member` is MOA's ``StreamingRandomPatches.StreamingRandomPatchesClassifier`` (Gomes, Read
and Bifet, "Streaming Random Patches for Evolving Data Stream Classification", ICDM 2019,
Algorithm 1, the body of its member loop): ``vote`` (MOA's getVotesForInstance),
``train`` (the test and its accuracy, then trainOnInstance), ``on_warning`` (triggerWarning),
``on_drift`` (reset) and ``state``. The ensemble (`edgebayes.ensemble.srp`) owns what members
share: the random generators, the base learner's prototype, the memory shares, the events.

`Sample` is one checked sample as every member reads it, with the votes and test predictions
the members add on it. `edgebayes._core.srp` compiles both: a `Member` subclass whose ``vote``
and ``train`` (its only overrides) run the compiled tree through its C entry points, and its
own `Sample`; this module is their reference, bit for bit.
"""

from __future__ import annotations

import sys

import numpy as np

from edgebayes.base import learner_from_state
from edgebayes.drift.base import detector_from_state

__all__ = [
    "ARRAY_OVERHEAD_BYTES",
    "DRIFT",
    "MEMBER_SLOT_BYTES",
    "UNKNOWN_ACCURACY_WEIGHT",
    "WARNING",
    "Member",
    "Sample",
]

#: `Member.train`'s signals, or-ed: its warning signal fired, its drift signal fired
WARNING, DRIFT = 1, 2
#: Vote weight of a member whose accuracy is 0 or not yet known: MOA weighs votes by the
#: accuracy in percent and falls back to weight 1 (i.e. 1 %) for those, so we use 0.01.
UNKNOWN_ACCURACY_WEIGHT = 0.01
#: bytes ``sys.getsizeof`` adds to an index array's ``nbytes``
ARRAY_OVERHEAD_BYTES = 112


class Sample:
    """One checked sample for every member, and the members' votes summed on it.

    Attributes:
        xs: the sample, a list of n_features floats (NaN = missing).
        v: the same as a float64 array of shape (n_features,) when members are fed a slice
            of it, else None.
        index: label -> position in the ensemble's classes.
        acc: per class, the weighted votes added so far (floats, `add`).
        predictions: the members' test predictions on it, in the order they trained
            (`Member.train`; None = no prediction).
    """

    __slots__ = ("acc", "index", "predictions", "v", "xs")

    def __init__(self, xs: list | None, v: np.ndarray | None, index: dict):
        self.xs, self.v, self.index = xs, v, index
        self.acc = [0.0] * len(index)
        self.predictions = []

    def view(self, take: np.ndarray | None):
        """What a learner fed ``take`` (indices into x, None = the whole x) reads."""
        return self.xs if take is None else self.v[take]

    def add(self, vote: dict, weight: float) -> None:
        """Add one member's vote ({label: probability or score >= 0}) normalised, times
        ``weight`` (>= 0); an empty or all-zero vote adds nothing."""
        s = 0.0
        for p in vote.values():  # sums left to right, as the compiled core
            s += p
        if s > 0.0 and weight > 0.0:
            f = weight / s
            acc, index = self.acc, self.index
            for c, p in vote.items():
                acc[index[c]] += p * f

    def proba(self, classes: list) -> dict:
        """{label: float} over ``classes`` (in the index's order), the votes normalised to sum
        to 1; uniform when no member voted."""
        total = 0.0
        for a in self.acc:
            total += a
        if total > 0.0:
            return {c: a / total for c, a in zip(classes, self.acc)}
        return dict.fromkeys(classes, 1.0 / len(classes))

    def best(self, classes: list):
        """The first most probable label of `proba` (``classes`` non-empty)."""
        proba = self.proba(classes)
        return max(proba, key=proba.get)


class Member:
    """One ensemble slot (Algorithm 1's ``L_i`` with its patch, detectors and ``B_i``).

    Attributes:
        learner: the member's base learner.
        features: its subspace, sorted int64 indices of shape (k,); None = every feature.
        take: indices taken from x for a learner without ``features``, else None.
        warning, drift: its change signals on its 0/1 error (None where disabled).
        n_tested, n_correct: test-then-train weight, and the correct part of it, since the
            member's last reset (floats).
        bkg, bkg_features, bkg_take: its background learner, its subspace and take (None
            when it has none).
        promoted: a background learner was swapped in and no warning came since (bool).
    """

    __slots__ = (
        "bkg",
        "bkg_features",
        "bkg_take",
        "drift",
        "features",
        "learner",
        "n_correct",
        "n_tested",
        "promoted",
        "take",
        "warning",
    )  # fmt: skip

    #: the type of the sample its `vote` and `train` read (`Sample`, or the compiled one)
    sample = Sample

    def __init__(self, learner, features, take, warning, drift):
        self.learner = learner
        self.features = features
        self.take = take
        self.warning = warning
        self.drift = drift
        self.n_tested = 0.0
        self.n_correct = 0.0
        self.bkg = None
        self.bkg_features = None
        self.bkg_take = None
        self.promoted = False

    # ------------------------------------------------------------------ the hot methods

    def vote(self, x: Sample, weighted: bool) -> None:
        """Add this member's class probabilities on ``x``, normalised, times its `weight`
        (1 when not ``weighted``) to ``x``'s votes."""
        x.add(self.learner.predict_proba_one(x.view(self.take)), self.weight if weighted else 1.0)

    def train(self, x: Sample, y, w: float, k: int) -> int:
        """Test then train on one sample (Algorithm 1, lines 8-11, 14 and, for the background
        learner, 19).

        Predict ``x`` (the test, appended to ``x.predictions``; no prediction counts as
        wrong) and count it in the accuracy with weight ``w``. If ``k`` (the member's Poisson
        draw) > 0: train the learner with weight ``k * w`` (one ``learn_one``), then its
        background learner (or, when promoted, the learner a second time, as MOA trains its
        background reference), and feed the signals the 0/1 error (1 = wrong) of the learner
        *as just trained* (MOA's correctlyClassifies after trainOnInstance). With ``k == 0``
        the detectors are not fed.

        Args:
            x: the checked sample; y: its label (checked); w: the sample weight (> 0).
            k: the member's Poisson weight (int >= 0).

        Returns:
            The signals that fired: `WARNING` and `DRIFT` or-ed, 0 for none.
        """
        learner = self.learner
        xm = x.view(self.take)
        prediction = learner.predict_one(xm)
        x.predictions.append(prediction)
        self.n_tested += w
        if prediction == y:
            self.n_correct += w
        if not k:
            return 0
        kw = k * w
        learner.learn_one(xm, y, kw)
        if self.drift is not None:
            error = 0.0 if learner.predict_one(xm) == y else 1.0
        if self.bkg is not None:
            self.bkg.learn_one(x.view(self.bkg_take), y, kw)
        elif self.promoted:
            learner.learn_one(xm, y, kw)
        if self.drift is None:
            return 0
        signals = WARNING if self.warning is not None and self.warning.update(error) else 0
        if self.drift.update(error):
            signals |= DRIFT
        return signals

    # ------------------------------------------------------------------ warning and drift

    def on_warning(self, learner, features, take) -> None:
        """Algorithm 1, lines 11-12: start the background learner ``learner`` on ``features``
        (fed ``take``), replacing a running one (MOA's triggerWarning), and restart the
        warning signal."""
        self.bkg, self.bkg_features, self.bkg_take = learner, features, take
        self.promoted = False
        self.warning.reset()

    def on_drift(self, fresh, share: int | None) -> None:
        """Algorithm 1, lines 14-15: swap the background learner in (it then holds ``share``
        bytes, None = unbounded), or, without one, a fresh learner (``fresh()`` returns
        (learner, features, take)); restart both signals and the accuracy.

        A promoted member (no warning since its swap) keeps its learner and signals and only
        restarts its accuracy: MOA swaps in the background reference it still holds, which
        is the member itself.
        """
        if not self.promoted:
            if self.bkg is not None:
                self.learner, self.features, self.take = self.bkg, self.bkg_features, self.bkg_take
                self.shed_background()
                self.promoted = True
                if share is not None:  # a larger bound is read at the learner's next allocation
                    self.learner.max_size_bytes = share
            else:
                self.learner, self.features, self.take = fresh()
            self.drift.reset()
            if self.warning is not None:
                self.warning.reset()
        self.n_tested = self.n_correct = 0.0

    def shed_background(self) -> bool:
        """Drop the background learner (a later warning starts a new one); whether it had one."""
        had = self.bkg is not None
        self.bkg = self.bkg_features = self.bkg_take = None
        return had

    # ------------------------------------------------------------------ inspection

    @property
    def weight(self) -> float:
        """Vote weight: the accuracy since the last reset, `UNKNOWN_ACCURACY_WEIGHT` while
        it is 0 or unknown."""
        return self.n_correct / self.n_tested if self.n_correct > 0.0 else UNKNOWN_ACCURACY_WEIGHT

    @property
    def accuracy(self) -> float | None:
        """Test-then-train accuracy since the last reset (None before any test)."""
        return self.n_correct / self.n_tested if self.n_tested else None

    def has_room(self, x: Sample, y) -> bool:
        """Whether the learner can hold ``x`` with label ``y`` (its ``has_room``)."""
        return bool(self.learner.has_room(x.view(self.take), y))

    def drop_background_without_room(self, x: Sample, y) -> None:
        """Drop the background learner if it cannot hold ``x`` with label ``y``."""
        if self.bkg is not None and not self.bkg.has_room(x.view(self.bkg_take), y):
            self.shed_background()

    def memory_bytes(self) -> int:
        """Bytes of the learner, the background learner and the signals (`own_bytes` apart)."""
        total = self.learner.memory_bytes()
        if self.bkg is not None:
            total += self.bkg.memory_bytes()
        for det in (self.warning, self.drift):
            if det is not None:
                total += det.memory_bytes()
        return total

    def own_bytes(self) -> int:
        """Bytes of this slot object and its subspace arrays."""
        total = sys.getsizeof(self)
        for f in (self.features, self.bkg_features):
            if f is not None:
                total += f.nbytes + ARRAY_OVERHEAD_BYTES
        return total

    # ------------------------------------------------------------------ state

    def state(self) -> dict:
        """Plain, msgpack-serialisable state (keys as in `from_state`)."""
        def opt(obj):
            return None if obj is None else obj.state()

        def idx(f):
            return None if f is None else f.tolist()

        return {
            "learner": self.learner.state(),
            "features": idx(self.features),
            "warning": opt(self.warning),
            "drift": opt(self.drift),
            "n_tested": self.n_tested,
            "n_correct": self.n_correct,
            "bkg": opt(self.bkg),
            "bkg_features": idx(self.bkg_features),
            "promoted": self.promoted,
        }

    @classmethod
    def from_state(cls, s: dict, take) -> Member:
        """The member `state` described; ``take(features)`` gives a learner's take. A state
        without ``"promoted"`` (older checkpoints) is not promoted.

        Raises:
            ValueError, KeyError, TypeError: a malformed state (the ensemble's ``from_state``
                turns them into one ValueError).
        """
        def idx(f):
            return None if f is None else np.asarray(f, dtype=np.int64)

        def det(d):
            return None if d is None else detector_from_state(d)

        f = idx(s["features"])
        m = cls(learner_from_state(s["learner"]), f, take(f), det(s["warning"]), det(s["drift"]))
        m.n_tested, m.n_correct = float(s["n_tested"]), float(s["n_correct"])
        m.promoted = s.get("promoted", False)
        if s["bkg"] is not None:
            m.bkg_features = idx(s["bkg_features"])
            m.bkg, m.bkg_take = learner_from_state(s["bkg"]), take(m.bkg_features)
        return m


#: bytes of a member's slot object (its attributes are slots)
MEMBER_SLOT_BYTES = sys.getsizeof(Member.__new__(Member))
