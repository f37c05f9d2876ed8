"""Streaming Random Patches (SRP): online bagging over random feature subspaces.

Gomes, Read and Bifet (ICDM 2019), Algorithm 1, with MOA's defaults and semantics
(``moa.classifiers.meta.StreamingRandomPatches``) where the paper leaves room or its text and
MOA differ (docs/design.md 2.5; noted below).

The ensemble runs Algorithm 1 over its members (`edgebayes.ensemble.srp_member.Member`: the
test, training and detectors of one learner) and splits a memory bound with
`edgebayes.ensemble.srp_budget`. `SRPClassifier` is the compiled ensemble (`edgebayes._core.srp`,
whose members vote and train over the compiled trees in C) when `edgebayes.backend()`, chosen at
import, is "compiled"; `ReferenceSRPClassifier`, in this module, is its reference, bit for bit.

For each labelled sample and each member (docs/design.md 2.5): predict on the member's subspace
(the test; no prediction, from a member that has learned nothing yet, counts as wrong),
count the result in the member's accuracy (every sample counts), draw
``k ~ Poisson(lam)`` (``k = 1`` for ``"subspaces"``); if ``k > 0``, train the member and
its background learner with weight ``k`` (one ``learn_one(x, y, w=k)``, never ``k``
repeated calls), then feed its detectors the 0/1 error (1 = wrong, docs/cases.md C25) of the
member *as just trained* on the sample. A member that drew ``k = 0`` is neither trained
nor are its detectors fed (docs/cases.md C28). A warning starts a fresh background learner on a
fresh random subspace (replacing a running one) and resets the warning detector; a drift
swaps the background learner in (or a fresh learner on a fresh subspace) and resets both
detectors and the accuracy.

Where the paper's text reads otherwise, this follows the paper's implementation (MOA's
``StreamingRandomPatches``, also in the paper's own repository; River does the same;
docs/design.md 2.5): Algorithm 1 calls the detectors ``d(delta, l, x, y)`` after ``Train``
(lines 10-14), and the code feeds ``correctlyClassifies`` after ``trainOnInstance``; the
text reads as the test prediction's error. A member stuck on a poor subspace has a high but
*stationary* test error, which ADWIN never flags, while its error after training moves with
the concept: on ELEC the error after training, and replacing a running background learner
at each warning (MOA's ``triggerWarning``), close most of the gap to MOA (docs/results.md,
"Figures behind choices in the code"). It costs one more prediction per trained member.

Also as MOA: a background learner swapped in by a drift stays the member's background
reference until the member's next warning, so until then it is *promoted*: trained twice
per sample (its own ``learn_one`` and the background one, each with weight k; the
detectors judge it after the first), and a drift in that time keeps it and its detectors
and restarts only its accuracy. The next warning starts a background learner as usual.
A learner swapped in thus catches up fast and a member whose new learner soon errs more is
muted (a low vote weight) rather than reset. On the fast-drifting RBF streams this is
most of the gap to MOA (docs/results.md, "Figures behind choices in the code").
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from edgebayes._backend import choose
from edgebayes.base import (
    MAX_WEIGHT,
    Learner,
    as_floats,
    check_count,
    check_label,
    check_weight,
    init_parameters,
    make_learner,
    refuse_malformed,
    rng_from_state,
)
from edgebayes.drift.base import ErrorDetector
from edgebayes.ensemble.srp_budget import (
    check_first_sample,
    check_label_room,
    check_member_room,
    learner_shares,
    own_bytes,
)
from edgebayes.ensemble.srp_member import DRIFT, WARNING, Member, Sample
from edgebayes.ensemble.srp_state import check_state, read_params, srp_state
from edgebayes.ensemble.subspaces import (
    check_subspace_size,
    draw_subspaces,
    random_subspace,
    subspace_size_for,
)

__all__ = ["SRPClassifier", "combine_votes"]

TRAINING_METHODS = ("patches", "subspaces", "resampling")
DISABLE_DETECTOR = ("off", "warning", "drift")


def combine_votes(votes: list, weights: list, classes: list, index: dict) -> dict:
    """SRP's weighted vote: sum over members of normalised probabilities times weight.

    Args:
        votes: per member, a dict {label: probability or score >= 0} (may be empty).
        weights: per member, a float >= 0 (its accuracy, or 1 for an unweighted vote).
        classes: the ensemble's labels, in output order; every vote's labels are among them.
        index: label -> position in ``classes``.

    Returns:
        {label: float} over all ``classes`` (0.0 for classes no member votes for, docs/cases.md
        C11), summing to 1; uniform when no member votes; {} when ``classes`` is empty.
    """
    if not classes:
        return {}
    sample = Sample(None, None, index)
    for vote, w in zip(votes, weights):
        sample.add(vote, w)
    return sample.proba(classes)


def _error_signal(proto):
    """A member's own change signal from the prototype detector: a rise of its error rate.

    ADWIN-like detectors (with ``estimation_before_drift``) are wrapped in `ErrorDetector`
    (MOA's ADWINChangeDetector: a cut after which the error estimate rose, docs/design.md 2.4); an
    ErrorDetector is cloned; any other detector signals whatever change it sees.
    """
    if isinstance(proto, ErrorDetector) or not hasattr(proto, "estimation_before_drift"):
        return proto.clone()
    return ErrorDetector(proto.clone())


def _signal_prototypes(disable_detector: str, drift_detector, warning_detector) -> tuple:
    """Each member's (drift, warning) signal prototypes (`_error_signal`), None where
    ``disable_detector`` turns them off; defaults ``ADWIN(delta=1e-5)`` and ``ADWIN(delta=1e-4)``."""
    drift = warning = None
    if disable_detector != "drift":
        drift = _error_signal(drift_detector if drift_detector is not None else _adwin(1e-5))
    if disable_detector == "off":
        warning = _error_signal(warning_detector if warning_detector is not None else _adwin(1e-4))
    return drift, warning


def _event(level: str, i: int, signal) -> dict:
    """The `SRPClassifier.last_events` entry of member ``i``'s ``signal`` firing at ``level``:
    its detector's name and accuracy (1 - error estimate) before and after the input."""
    inner = getattr(signal, "detector", signal)
    return {
        "level": level, "member": i, "detector": type(inner).__name__.lower(),
        "accuracy_before": 1.0 - getattr(inner, "estimation_before_drift", math.nan),
        "accuracy_after": 1.0 - signal.estimation,
    }  # fmt: skip


def _poisson_weights(rng, lam: float, n: int, w: float) -> list:
    """``n`` Poisson(``lam``) draws of ``rng``, the members' weights of a sample of weight ``w``.

    Raises:
        ValueError: a draw times ``w`` above `edgebayes.base.MAX_WEIGHT`; ``rng`` is then as before.
    """
    saved = rng.bit_generator.state if w > 1.0 else None  # k * w may be refused
    ks = rng.poisson(lam, n).tolist()
    if saved is not None and max(ks) * w > MAX_WEIGHT:
        rng.bit_generator.state = saved
        raise ValueError(f"sample weight {w} times a Poisson draw {max(ks)} exceeds {MAX_WEIGHT:g}")
    return ks


class SRPClassifier(Learner):
    """Streaming Random Patches ensemble classifier (Gomes, Read and Bifet 2019, Algorithm 1).

    Each sample tests then trains every member and handles its warnings and drifts as the
    module doc says (Algorithm 1, and where this follows MOA rather than the paper's text).

    Args:
        model: prototype base learner, cloned for every member and background learner (never
            trained itself), or its config as a plain dict ``{"kind": KIND, **params}`` (a
            TOML table; built with `edgebayes.base.make_learner`, stored unchanged). Default:
            ``HoeffdingTreeClassifier(grace_period=50, delta=0.01, leaf_prediction="nba")``,
            the paper's. A learner with a ``features`` parameter (our
            tree) gets its subspace through it and sees the whole ``x``; any other learner
            (GaussianNB) is fed ``x`` restricted to its subspace. Parameters ``seed`` and
            ``max_size_bytes``, when the learner has them, are set per member.
        n_models: number of members (int >= 1); the paper's n = 10.
        subspace_size: features per member: int (negative = all but that many), float in
            (0, 1] (fraction, the paper's m = 60 %), ``"sqrt"`` or ``"rmsqrt"``; rules in
            `edgebayes.ensemble.subspaces.subspace_size_for`. When it covers every feature the
            ensemble trains by resampling (as MOA), whatever ``training_method`` says.
        training_method: ``"patches"`` (subspace + Poisson resampling: SRP), ``"subspaces"``
            (subspace, every sample weight 1: SRS in the paper), ``"resampling"`` (all
            features + Poisson: BAG in the paper).
        lam: Poisson mean of the resampling weights (float in (0, 1e18]; the paper's 6).
        drift_detector: prototype drift detector (default ``ADWIN(delta=1e-5)``).
        warning_detector: prototype warning detector (default ``ADWIN(delta=1e-4)``). Each
            member signals when its detector cuts and its error estimate rose (docs/design.md 2.4).
        disable_detector: ``"off"`` (warnings with background learners, and drifts),
            ``"warning"`` (drifts only: a drift resets the member with a fresh learner on a
            fresh subspace), ``"drift"`` (no detection at all). River's names.
        disable_weighted_vote: True = every member's normalised vote counts 1.
        max_size_bytes: hard bound on `memory_bytes` (None = unbounded), shared by members
            and background learners as `edgebayes.ensemble.srp_budget` plans it: a fixed
            reserve for detectors and bookkeeping, and each learner slot its share, passed
            down as the learner's own ``max_size_bytes`` (so the base learner must take it and
            tell with ``has_room(x, y)`` whether it can hold a sample's class; our tree and
            naive Bayes do). A sample is refused with `edgebayes.base.ClassLimitError`, nothing
            changed (generators included), when its new label does not fit the bookkeeping
            reserve or a member, whatever its Poisson weight, cannot hold its class or nominal
            values; a background learner that cannot is dropped (a later warning starts another).
        seed: int >= 0 or None (fresh entropy, fixed at construction). Subspaces, Poisson
            weights and members' seeds come from it; the same seed and stream give the same
            model and predictions.

    Attributes:
        classes_: labels in order of first appearance.
        n_features_: features per sample (None before the first sample).
        subspace_size_: resolved features per member (None before the first sample).
        training_method_: the method in force ("resampling" when the subspace is every
            feature).
        n_samples_seen_: samples learned (with weight > 0).
        n_warnings, n_drifts: warnings and drifts signalled by members since construction.
        last_events: what the latest `learn_one` signalled, a list of dicts ``{"level":
            "warning" | "drift", "member": i, "detector": "adwin", "accuracy_before": float,
            "accuracy_after": float}`` (the member's detector's accuracy estimate, 1 - error,
            just before and just after the signalling input); empty when nothing happened.

    Raises:
        ValueError: any invalid argument (named in the message).

    Example:
        >>> from edgebayes.naive_bayes import GaussianNB
        >>> srp = SRPClassifier(model=GaussianNB(), n_models=3, seed=1)
        >>> for x, y in [([0.1, 1.0, 0.2], "a"), ([0.9, 0.1, 0.8], "b")] * 20:
        ...     srp.learn_one(x, y)
        >>> srp.predict_one([0.2, 0.9, 0.1])
        'a'
    """

    #: the members' type; the compiled ensemble's members vote and train in C
    _member_type = Member

    def __init__(
        self,
        model=None,
        n_models: int = 10,
        subspace_size=0.6,
        training_method: str = "patches",
        lam: float = 6.0,
        drift_detector=None,
        warning_detector=None,
        disable_detector: str = "off",
        disable_weighted_vote: bool = False,
        max_size_bytes: int | None = None,
        seed: int | None = None,
    ):
        proto = _prototype(model)
        _check_params(n_models, subspace_size, training_method, lam, drift_detector, warning_detector,
                      disable_detector, disable_weighted_vote, max_size_bytes, seed)
        self.model = model
        self.n_models = n_models
        self.subspace_size = subspace_size
        self.training_method = training_method
        self.lam = lam
        self.drift_detector = drift_detector
        self.warning_detector = warning_detector
        self.disable_detector = disable_detector
        self.disable_weighted_vote = disable_weighted_vote
        self.max_size_bytes = max_size_bytes
        self.seed = seed

        self._proto = proto
        self._has_features, self._has_seed = _takes_features_and_seed(proto, max_size_bytes)
        self._drift_proto, self._warning_proto = _signal_prototypes(disable_detector, drift_detector,
                                                                    warning_detector)
        self._share = self._bkg_share = None  # bytes per member / background learner
        self.subspace_size_: int | None = None
        self.training_method_: str = training_method
        self._set_shares()

        structure, weights = np.random.SeedSequence(seed).spawn(2)
        self._rng = np.random.default_rng(structure)  # subspaces, members' seeds
        self._poisson = np.random.default_rng(weights)  # Poisson weights, one row per sample
        self.classes_: list = []
        self._index: dict = {}
        self.n_features_: int | None = None
        self.n_samples_seen_ = 0
        self.n_warnings = 0
        self.n_drifts = 0
        self.last_events: list = []
        self._members: list[Member] = []
        self._last_predictions: list = []

    # ------------------------------------------------------------------ construction helpers

    def _set_shares(self) -> None:
        """Each member's and background learner's bytes under ``max_size_bytes``, for the
        subspaces drawn (if any; `edgebayes.ensemble.srp_budget.learner_shares`)."""
        if self.max_size_bytes is not None:
            self._share, self._bkg_share = learner_shares(self.max_size_bytes, self.n_models, self._proto,
                                                          self._drift_proto, self._warning_proto,
                                                          self._subspace_k())

    def _subspace_k(self) -> int | None:
        """Features per drawn subspace; None before the first sample or when every member
        sees every feature."""
        return None if self.training_method_ == "resampling" else self.subspace_size_

    def _plan(self, n_features: int) -> tuple[int, str]:
        """(features per member, training method in force) for samples of ``n_features``."""
        k = subspace_size_for(self.subspace_size, n_features)
        return k, "resampling" if self.training_method == "resampling" or k == n_features else self.training_method

    def _new_learner(self, features, background: bool = False):
        """A fresh base learner for ``features`` (None = all): its share, seed and subspace."""
        params = self._proto._params()
        if self._has_features:
            params["features"] = None if features is None else features.tolist()
        if self._share is not None:
            params["max_size_bytes"] = self._bkg_share if background else self._share
        if self._has_seed:
            params["seed"] = int(self._rng.integers(2**31))
        return type(self._proto)(**params)

    def _new_patch(self, background: bool = False) -> tuple:
        """(learner, features, take) on a fresh random subspace (every feature in resampling)."""
        resampling = self.training_method_ == "resampling"
        f = None if resampling else random_subspace(self.n_features_, self.subspace_size_, self._rng)
        return self._new_learner(f, background), f, self._take(f)

    def _take(self, features):
        # a learner without `features` is fed x[features]
        return None if self._has_features or features is None else features

    def _init_members(self, n_features: int) -> None:
        """Resolve the subspace size, draw distinct subspaces, build the members (first sample)."""
        self.n_features_ = n_features
        k, self.training_method_ = self._plan(n_features)
        self.subspace_size_ = k
        resampling = self.training_method_ == "resampling"
        subspaces = [None] * self.n_models if resampling else draw_subspaces(n_features, k, self.n_models, self._rng)
        self._set_shares()
        warning, drift = self._warning_proto, self._drift_proto
        self._members = [self._member_type(self._new_learner(f), f, self._take(f),
                                           None if warning is None else warning.clone(),
                                           None if drift is None else drift.clone()) for f in subspaces]

    # ------------------------------------------------------------------ input checks

    def _check_x(self, x, learning: bool = False) -> tuple[list, np.ndarray | None]:
        """``x`` checked once per sample for every member: (list of n_features_ floats, NaN =
        missing, by the rule of `edgebayes.base.as_floats`; the same as a float64 array when
        members take a slice of it, else None: the tree checks a float list in one ``sum``).

        Raises:
            ValueError: not 1-D numbers (None included), wrong length, empty, +/-inf, or
                (``learning``) a magnitude above `edgebayes.base.MAX_ABS_X`.
        """
        xs = as_floats(x, self.n_features_, learning)[0]
        return xs, None if self._has_features else np.array(xs, dtype=np.float64)

    # ------------------------------------------------------------------ learning

    def learn_one(self, x, y, w: float = 1.0) -> None:
        """Test then train every member on one sample (Algorithm 1, lines 6-20).

        For each member: test and update its accuracy, train it and its background learner
        with its Poisson weight, feed its detectors (`Member.train`, lines 8-11, 14, 19); a
        warning starts a background learner (lines 11-12), a drift replaces the member by it
        (lines 14-15).

        Args:
            x: 1-D sequence of n_features_ floats (NaN = missing), fixed by the first sample.
            y: label (str or int; a new label adds a class).
            w: sample weight >= 0, multiplying each member's Poisson weight (as MOA); 0 skips
                the sample.

        Raises:
            ValueError: bad x, label or weight, or a weight k * w above
                `edgebayes.base.MAX_WEIGHT`; checked before any member learns, the model
                (generators included) is unchanged.
            ClassLimitError: (a ValueError) a class or nominal value ``max_size_bytes``
                cannot hold (see the class docstring); the model is unchanged.
        """
        xs, v, y, w, ks = self._checked(x, y, w)
        if ks is None:
            return
        sample = self._member_type.sample(xs, v, self._index)
        self.n_samples_seen_ += 1
        for i, m in enumerate(self._members):
            signals = m.train(sample, y, w, ks[i])  # test, accuracy, training, detectors
            if signals:  # rare: tested once rather than once per signal
                if signals & WARNING:  # a background learner
                    self._on_warning(i, m)
                if signals & DRIFT:  # replaced by it
                    self._on_drift(i, m)
        self._last_predictions = sample.predictions

    def _checked(self, x, y, w) -> tuple:
        """(xs, v, y, w, ks): the sample checked, room made for it and its class, its members'
        Poisson weights drawn; ks None for a weight of 0 (nothing to learn)."""
        xs, v = self._check_x(x, learning=True)
        check_label(y)
        if type(w) is not float or w != 1.0:  # the default skips the check; True does not
            w = check_weight(w)
        if w == 0.0:
            self.last_events = []
            return xs, v, y, w, None
        if self._share is not None:
            self._make_room(xs, v, y)
        if self.training_method_ == "subspaces":
            ks = [1] * self.n_models
        else:
            ks = _poisson_weights(self._poisson, self.lam, self.n_models, w)
        if self.last_events:
            self.last_events = []
        if isinstance(y, np.generic):
            y = y.item()
        if not self._members:
            self._init_members(len(xs))
        if y not in self._index:
            self._index[y] = len(self.classes_)
            self.classes_.append(y)
        return xs, v, y, w, ks

    def _make_room(self, xs: list, v, y) -> None:
        """Refuse (ClassLimitError, nothing changed) a sample whose new label the
        bookkeeping reserve cannot hold or whose class or nominal values a member cannot
        hold (`has_room`), whether or not its Poisson weight will be 0; then drop the
        background learners that cannot hold them (a later warning starts new ones)."""
        if y not in self._index:
            check_label_room(self, y, self._subspace_k())
        if not self._members:
            k, method = self._plan(len(xs))
            check_first_sample(xs, y, None if method == "resampling" else k, self._has_features,
                               self.max_size_bytes, self.n_models, self._proto, self._drift_proto,
                               self._warning_proto)
        sample = Sample(xs, v, self._index)
        check_member_room(self._members, sample, y, self._share, self.max_size_bytes)
        for m in self._members:
            m.drop_background_without_room(sample, y)

    def _on_warning(self, i: int, m: Member) -> None:
        """Algorithm 1, lines 11-12: member ``i`` starts a background learner on a fresh
        subspace (`Member.on_warning`)."""
        self.n_warnings += 1
        self.last_events.append(_event("warning", i, m.warning))
        m.on_warning(*self._new_patch(background=True))

    def _on_drift(self, i: int, m: Member) -> None:
        """Algorithm 1, lines 14-15: member ``i`` swaps in its background learner, or a fresh
        one (`Member.on_drift`)."""
        self.n_drifts += 1
        self.last_events.append(_event("drift", i, m.drift))
        m.on_drift(self._new_patch, self._share)

    # ------------------------------------------------------------------ prediction

    def predict_proba_one(self, x) -> dict:
        """Weighted vote {label: probability} over every class seen (empty before learning).

        Each member's class probabilities, normalised, times its accuracy since its last
        reset (`combine_votes`), summed and normalised.

        Raises:
            ValueError: bad x (as `learn_one`).
        """
        if not self._members:
            return {}
        return self._votes(x).proba(self.classes_)

    def predict_one(self, x):
        """The first most probable label of `predict_proba_one` (None before learning).

        Raises:
            ValueError: bad x (as `learn_one`).
        """
        if not self._members or not self.classes_:
            return None
        return self._votes(x).best(self.classes_)

    def _votes(self, x) -> Sample:
        """``x`` checked, with every member's weighted vote added on it (`Member.vote`)."""
        xs, v = self._check_x(x)
        sample = self._member_type.sample(xs, v, self._index)
        weighted = not self.disable_weighted_vote
        for m in self._members:
            m.vote(sample, weighted)
        return sample

    # ------------------------------------------------------------------ inspection

    def shed_background(self) -> int:
        """Drop every background learner (a later warning starts a new one): the first thing
        the runtime sheds under memory pressure (edgebayes.runtime.memory). Returns how many."""
        return sum(m.shed_background() for m in self._members)

    @property
    def n_background_learners(self) -> int:
        """Members currently training a background learner."""
        return sum(m.bkg is not None for m in self._members)

    @property
    def members(self) -> list:
        """The members' learners, in member order (read-only view for diagnostics)."""
        return [m.learner for m in self._members]

    @property
    def subspaces(self) -> list:
        """Each member's feature indices (sorted int list), None for every feature."""
        return [None if m.features is None else m.features.tolist() for m in self._members]

    @property
    def member_detectors(self) -> list:
        """Each member's ``(warning, drift)`` signals (None where disabled), read-only use."""
        return [(m.warning, m.drift) for m in self._members]

    @property
    def member_accuracies(self) -> list:
        """Each member's test-then-train accuracy since its last reset (None before any test)."""
        return [m.accuracy for m in self._members]

    @property
    def last_member_predictions(self) -> list:
        """Each member's test prediction in the latest `learn_one` (None = no prediction)."""
        return list(self._last_predictions)

    def memory_bytes(self) -> int:
        """Bytes held: members' and background learners' own counts, detectors, and this
        object's bookkeeping (`edgebayes.ensemble.srp_budget.own_bytes`)."""
        total = own_bytes(self) + sum(m.memory_bytes() for m in self._members)
        if not self._members:
            total += self._proto.memory_bytes()
        return int(total)

    # ------------------------------------------------------------------ state

    def state(self) -> dict:
        """Plain, msgpack-serialisable state with ``"kind": "srp"`` (see `from_state`)."""
        return srp_state(self)

    @classmethod
    @refuse_malformed("srp")
    def from_state(cls, state: dict) -> SRPClassifier:
        """Rebuild the ensemble `state` described: same predictions, same future learning.

        Raises:
            ValueError: not an srp state, or a malformed one (a missing key, a value of the
                wrong type, counts that are not ints >= 0, members that do not match
                n_models, n_features or the classes).
        """
        if not isinstance(state, dict) or state.get("kind") != "srp":
            raise ValueError("not an srp state")
        out = cls(**read_params(state["params"]))
        out.classes_ = list(state["classes"])
        out._index = {c: i for i, c in enumerate(out.classes_)}
        out.n_features_ = state["n_features"]
        out.subspace_size_ = state["subspace_size_"]
        out.training_method_ = state["training_method_"]
        out._set_shares()
        out.n_samples_seen_ = check_count("n_samples_seen", state["n_samples_seen"])
        out.n_warnings = check_count("n_warnings", state["n_warnings"])
        out.n_drifts = check_count("n_drifts", state["n_drifts"])
        out._rng = rng_from_state(state["rng"])
        out._poisson = rng_from_state(state["poisson_rng"])
        out._members = [out._member_type.from_state(s, out._take) for s in state["members"]]
        check_state(out, state, TRAINING_METHODS)
        return out


def _check_params(n_models, subspace_size, training_method, lam, drift_detector, warning_detector,
                  disable_detector, disable_weighted_vote, max_size_bytes, seed) -> None:
    """ValueError naming the first invalid `SRPClassifier` argument (rules in its docstring)."""
    if isinstance(n_models, bool) or not isinstance(n_models, numbers.Integral) or n_models < 1:
        raise ValueError(f"n_models must be an int >= 1, got {n_models!r}")
    check_subspace_size(subspace_size)
    if training_method not in TRAINING_METHODS:
        raise ValueError(f"training_method must be one of {TRAINING_METHODS}, got {training_method!r}")
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not 0.0 < lam <= 1e18:
        raise ValueError(f"lam must be in (0, 1e18] (numpy's Poisson sampler), got {lam!r}")
    for name, det in (("drift_detector", drift_detector), ("warning_detector", warning_detector)):
        if det is not None and not all(hasattr(det, a) for a in ("update", "clone", "state")):
            raise ValueError(f"{name} must be a drift detector (update, clone, state), got {det!r}")
    if disable_detector not in DISABLE_DETECTOR:
        raise ValueError(f"disable_detector must be one of {DISABLE_DETECTOR}, got {disable_detector!r}")
    if not isinstance(disable_weighted_vote, bool):
        raise ValueError(f"disable_weighted_vote must be a bool, got {disable_weighted_vote!r}")
    if max_size_bytes is not None and (
        isinstance(max_size_bytes, bool) or not isinstance(max_size_bytes, numbers.Integral) or max_size_bytes < 1
    ):
        raise ValueError(f"max_size_bytes must be None or an int >= 1, got {max_size_bytes!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
        raise ValueError(f"seed must be None or an int >= 0, got {seed!r}")


def _takes_features_and_seed(proto, max_size_bytes) -> tuple[bool, bool]:
    """Whether the base learner ``proto`` takes the parameters ``features`` and ``seed``.

    Raises:
        ValueError: a ``max_size_bytes`` bound for a learner that does not take one.
    """
    accepted = init_parameters(type(proto))
    if max_size_bytes is not None and "max_size_bytes" not in accepted:
        raise ValueError(f"max_size_bytes needs a base learner that takes max_size_bytes; "
                         f"{type(proto).__name__} does not")
    return "features" in accepted, "seed" in accepted


def _prototype(model) -> Learner:
    """The base learner ``model`` stands for: the learner itself, one built from a config dict,
    or the paper's tree (None).

    Raises:
        ValueError: neither a Learner nor a dict with a registered ``kind`` and parameters the
            learner takes (`edgebayes.base.make_learner` names the problem).
    """
    if model is None:
        return _default_tree()
    if isinstance(model, Learner):
        return model
    if isinstance(model, dict):
        kind = model.get("kind")
        if not isinstance(kind, str):
            raise ValueError(f"model config needs a 'kind' string (e.g. 'gaussian_nb'), got {model!r}")
        if kind == "srp":
            raise ValueError("model config kind 'srp': an SRP member cannot be an SRP")
        return make_learner(kind, **{k: v for k, v in model.items() if k != "kind"})
    raise ValueError(f"model must be an edgebayes Learner or a config dict, got {type(model).__name__}")


def _adwin(delta: float):
    from edgebayes.drift import ADWIN

    return ADWIN(delta=delta)


def _default_tree():
    """The paper's base learner: Hoeffding tree, grace period 50, delta 0.01, NBA leaves."""
    from edgebayes.tree import HoeffdingTreeClassifier

    return HoeffdingTreeClassifier(grace_period=50, delta=0.01, leaf_prediction="nba")


#: the pure-Python reference, by name whichever class `SRPClassifier` is
ReferenceSRPClassifier = SRPClassifier
SRPClassifier = choose(ReferenceSRPClassifier, "edgebayes._core.srp")
