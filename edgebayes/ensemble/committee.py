"""A committee of naive Bayes models, each trained on its own random part of the stream.

Artiemjew and Idzikowski (2019), committees of naive Bayes over bootstraps and Monte Carlo
splits, in online form (docs/design.md 2.2): the paper draws, for each of its iterations, a
new training set of a fixed fraction of the training objects, with replacement (bootstrap) or without (Monte Carlo
split), trains one naive Bayes on it, and classifies by the majority vote of all the models
so far, ties resolved at random. Online, each member decides for each arriving sample:

- ``"bootstrap"``: it learns the sample with weight k ~ Poisson(sample_fraction), the limit of
  drawing ``sample_fraction`` x N objects with replacement from N (Oza and Russell's online
  bagging, lam = sample_fraction);
- ``"monte_carlo"``: it learns the sample (weight 1) with probability ``sample_fraction``, so
  about that fraction of the stream, without copies.
"""

from __future__ import annotations

import math
import numbers
import sys
import zlib

import numpy as np

from edgebayes.base import (
    MAX_WEIGHT,
    STATE_ERRORS,
    ClassLimitError,
    Learner,
    as_floats,
    check_count,
    check_finite,
    check_label,
    check_size_bound,
    check_weight,
    learner_from_state,
    rng_from_state,
    rng_state,
)
from edgebayes.naive_bayes import GaussianNB
from edgebayes.naive_bayes_mixed import SCORING, ZERO_FREQUENCY, MixedNB, split_columns
from edgebayes.sizes import append_bytes, insert_bytes

__all__ = ["SAMPLINGS", "TIE_RTOL", "NaiveBayesCommittee"]

SAMPLINGS = ("bootstrap", "monte_carlo")
#: A member's classes whose probabilities are within this relative distance of its best are
#: tied: exact ties in the paper's arithmetic (a test object whose every value is unseen
#: leaves the priors, 3/6 and 3/6) come out 0.5 +/- 1 ulp in floating point.
TIE_RTOL = 1e-9


class NaiveBayesCommittee(Learner):
    """Majority vote of ``n_models`` naive Bayes, each on its own resample (Artiemjew and
    Idzikowski 2019).

    Args:
        n_models: number of members, int >= 1 (the paper's iterations). The default stays 20,
            not the paper's 50: 50 is the length of the paper's experiment, and its finding is
            that the vote is stable from about 20 members, even on 10 % draws, which holds for
            these members' product rules (docs/results.md, section "Seed 002", measured with 50
            by ``python -m bench.committee``). On the device every member costs: 50 members hold
            and take 2.5 times the bytes and the time per sample of 20 (docs/results.md,
            "Figures behind choices in the code"), and under ``max_size_bytes`` (the runtime's
            ``[memory]`` share) room is planned for every member holding every class and value,
            so a 50-member committee refuses new classes and values 2.5 times sooner. Pass
            ``n_models=50`` for the paper's committee.
        sampling: ``"bootstrap"`` (weight Poisson(sample_fraction)) or ``"monte_carlo"``
            (weight 1 with probability sample_fraction).
        sample_fraction: the paper's training-set percentage / 100: in (0, 1] for
            ``"monte_carlo"``, in (0, 1e18] for ``"bootstrap"`` (numpy's Poisson sampler).
        learning_rate: the members' (None = exact, see `GaussianNB`).
        nominal_attributes: indices of nominal features; when given the members are `MixedNB`
            (counts for those, Gaussians for the rest), else `GaussianNB`.
        zero_frequency: the MixedNB members' rule, ``"laplace"`` or ``"borrow"``.
        scoring: the members' scoring, ``"product"`` or ``"paper_sum"`` (the paper's own
            naive Bayes, see `MixedNB`); ``"paper_sum"`` makes the members `MixedNB` even without
            ``nominal_attributes``.
        seed: int >= 0 or None (fresh entropy, fixed at construction and kept in `state`).
        max_size_bytes: hard bound on `memory_bytes` (None = unbounded), at least the bytes
            of the empty committee. Room is planned for every member holding every class
            and nominal value the committee has taken, whatever the members drew so far: a
            sample whose new class or value does not fit that plan is refused with
            `edgebayes.base.ClassLimitError` before any draw, the committee unchanged.

    Vote: each member that has learned something votes for its most probable class;
    `predict_proba_one` gives the vote shares over every class the committee has seen (0.0
    for a class nobody votes for, docs/cases.md C11; uniform while no member has learned).
    `predict_one` takes the class with most votes.

    Random tie-breaks (a member's own tie, and a tie of votes) draw from a generator derived
    from the committee's seed, the number of samples learned and the bytes of x, never from
    the generator that draws the training weights: predicting changes nothing (so the
    contract "predict does not change the model" holds, and a state round trip predicts the
    same), the same x on the same model gets the same answer, and different inputs or a model
    that learned more get independent draws. The price: one small generator per tied vote.

    Attributes:
        classes_: labels in order of first appearance.
        n_features_in_: fixed by the first learned sample.
        n_samples_seen_: total sample weight learned.

    Raises:
        ValueError: an invalid parameter (named); at learning, bad x, label or weight (the
            model, including its generator, is unchanged).

    Example:
        >>> nbc = NaiveBayesCommittee(n_models=20, sampling="monte_carlo", sample_fraction=0.5, seed=7)
        >>> for i in range(200):
        ...     nbc.learn_one([i % 10 + 0.1 * (i % 3)], "high" if i % 10 >= 5 else "low")
        >>> nbc.predict_one([8.0]), nbc.predict_proba_one([8.0])["high"]
        ('high', 1.0)
    """

    def __init__(
        self,
        n_models: int = 20,
        sampling: str = "bootstrap",
        sample_fraction: float = 1.0,
        learning_rate: float | None = None,
        nominal_attributes=None,
        zero_frequency: str = "laplace",
        seed: int | None = None,
        max_size_bytes: int | None = None,
        scoring: str = "product",
    ):
        if isinstance(n_models, bool) or not isinstance(n_models, numbers.Integral) or n_models < 1:
            raise ValueError(f"n_models must be an int >= 1, got {n_models!r}")
        if sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
        top = 1.0 if sampling == "monte_carlo" else 1e18  # numpy's Poisson takes lam < ~9.2e18
        if (
            isinstance(sample_fraction, bool)
            or not isinstance(sample_fraction, numbers.Real)
            or not 0.0 < sample_fraction <= top
            or sample_fraction == math.inf
        ):
            bound = "(0, 1]" if sampling == "monte_carlo" else "(0, 1e18]"
            raise ValueError(f"sample_fraction must be in {bound} for {sampling}, got {sample_fraction!r}")
        if zero_frequency not in ZERO_FREQUENCY:
            raise ValueError(f"zero_frequency must be one of {ZERO_FREQUENCY}, got {zero_frequency!r}")
        if scoring not in SCORING:
            raise ValueError(f"scoring must be one of {SCORING}, got {scoring!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
            raise ValueError(f"seed must be None or an int >= 0, got {seed!r}")
        if nominal_attributes is None and scoring == "product":
            proto = GaussianNB(learning_rate)
        else:
            proto = MixedNB(nominal_attributes, learning_rate, zero_frequency=zero_frequency, scoring=scoring)
        self.n_models = n_models
        self.sampling = sampling
        self.sample_fraction = sample_fraction
        self.learning_rate = learning_rate
        self.nominal_attributes = nominal_attributes
        self.zero_frequency = zero_frequency
        self.scoring = scoring
        self.seed = seed
        self._members = [proto.clone() for _ in range(n_models)]
        seq = np.random.SeedSequence(seed)
        self._rng = np.random.default_rng(seq)  # training weights, one draw per member and sample
        self._tie_key = int(seq.generate_state(1)[0])  # roots the tie-break generators
        self.classes_: list = []
        self._index: dict = {}
        self.n_features_in_: int | None = None
        self.n_samples_seen_ = 0.0
        self._n_learned = 0  # samples learned: keys the tie-break draws to the model's version
        self.max_size_bytes = max_size_bytes
        check_size_bound(max_size_bytes, self.memory_bytes(), "the empty committee")

    # ------------------------------------------------------------------ learning

    def _weights(self) -> list:
        """Each member's weight for the next sample (0 = not learned)."""
        n, f = self.n_models, self.sample_fraction
        if self.sampling == "bootstrap":
            return self._rng.poisson(f, n).tolist()
        return (self._rng.random(n) < f).astype(float).tolist()

    def learn_one(self, x, y, w: float = 1.0) -> None:
        """Offer one sample to every member, each with its own random weight (times ``w``).

        Args:
            x: 1-D sequence of floats (NaN = missing), length fixed by the first sample.
            y: label (str or int; a new one adds a class to the committee even if no member
                draws the sample).
            w: sample weight >= 0, multiplying each member's drawn weight; 0 skips the sample
                (no weights are drawn).

        Raises:
            ValueError: bad x (as `GaussianNB.learn_one`), label, weight, a weight k * w above
                `edgebayes.base.MAX_WEIGHT`, or nominal indices out of x's range; all checked
                before any member learns: the model (generator included) is unchanged.
            ClassLimitError: (a ValueError) a new class or nominal value ``max_size_bytes``
                cannot hold (see the class docstring); the model is unchanged.
        """
        if type(w) is not float or w != 1.0:  # the default skips the check; True does not
            w = check_weight(w)
        xs, _ = as_floats(x, self.n_features_in_, learning=True)
        check_label(y)
        if self.n_features_in_ is None:
            split_columns(self.nominal_attributes, len(xs))
        if w == 0.0:
            return
        if self.max_size_bytes is not None:
            self._check_room(xs, y)
        saved = self._rng.bit_generator.state if w > 1.0 else None  # k * w may be refused
        ks = self._weights()
        if saved is not None and max(ks) * w > MAX_WEIGHT:
            self._rng.bit_generator.state = saved
            raise ValueError(f"sample weight {w} times a Poisson draw {max(ks)} exceeds {MAX_WEIGHT:g}")
        if isinstance(y, np.generic):
            y = y.item()
        self.n_features_in_ = len(xs)
        if y not in self._index:
            self._index[y] = len(self.classes_)
            self.classes_.append(y)
        self.n_samples_seen_ += w
        self._n_learned += 1
        for member, k in zip(self._members, ks):
            if k:
                member.learn_one(xs, y, k * w)

    def _check_room(self, xs: list, y) -> None:
        """ClassLimitError unless the committee, every member holding every class and
        nominal value taken so far plus those of (xs, y), fits ``max_size_bytes``."""
        new_class = y not in self._index
        nominal = self.nominal_attributes is not None
        # a value is new to the committee when no member has seen it
        fresh = [m.new_values(xs) for m in self._members] if nominal else []
        new_values = {i: v for i, v in fresh[0].items() if all(i in f for f in fresh)} if fresh else {}
        if not (new_class or new_values):
            return
        classes = [*self.classes_, y] if new_class else self.classes_
        need = self._own_bytes() + (sys.getsizeof(y) + append_bytes(self.classes_, 1)
                                    + insert_bytes(self._index, [y]) if new_class else 0)
        d = len(xs)
        if nominal:
            union = [set().union(*col) for col in zip(*(m.categories_ for m in self._members))]
            union = union or [set() for _ in split_columns(self.nominal_attributes, d)[0]]
            for i, v in new_values.items():
                union[i] |= set(v)
        for m in self._members:
            missing = [c for c in classes if c not in m.classes_]
            if nominal:
                seen = m.categories_ or [[] for _ in union]
                values = {i: sorted(u.difference(s)) for i, (u, s) in enumerate(zip(union, seen))}
                need += m.planned_bytes(missing, d, {i: v for i, v in values.items() if v})
            else:
                need += m.planned_bytes(missing, d)
        if need > self.max_size_bytes:
            what = f"class {y!r}" if new_class else f"nominal value(s) {new_values}"
            raise ClassLimitError(
                f"{what} refused: max_size_bytes={self.max_size_bytes} cannot hold "
                f"{len(classes)} classes in each of the {self.n_models} members ({need} bytes)"
            )

    # ------------------------------------------------------------------ prediction

    def _tie_rng(self, xs: list) -> np.random.Generator:
        digest = zlib.crc32(np.asarray(xs, dtype=np.float64).tobytes())
        return np.random.default_rng([self._tie_key, self._n_learned, digest])

    def _votes(self, xs: list):
        """Votes per class (list of ints in `classes_` order) and the tie generator if a
        member's tie needed it (else None)."""
        votes = [0] * len(self.classes_)
        index, rng = self._index, None
        for member in self._members:
            if not member.classes_:
                continue  # has learned nothing: abstains
            proba = member.predict_proba_one(xs)
            bar = max(proba.values()) * (1.0 - TIE_RTOL)
            tied = [c for c, p in proba.items() if p >= bar]
            if len(tied) > 1:
                rng = rng or self._tie_rng(xs)
                tied = [tied[int(rng.integers(len(tied)))]]
            votes[index[tied[0]]] += 1
        return votes, rng

    def predict_proba_one(self, x) -> dict:
        """Vote shares {label: float} over every class seen, summing to 1 (empty before learning).

        Raises:
            ValueError: bad x.
        """
        if not self.classes_:
            return {}
        votes, _ = self._votes(as_floats(x, self.n_features_in_)[0])
        total = sum(votes)
        if not total:
            return {c: 1.0 / len(votes) for c in self.classes_}
        return {c: v / total for c, v in zip(self.classes_, votes)}

    def predict_one(self, x):
        """The class with most votes, a tie broken at random (reproducibly, see the class doc);
        None before learning.

        Raises:
            ValueError: bad x.
        """
        if not self.classes_:
            return None
        xs = as_floats(x, self.n_features_in_)[0]
        votes, rng = self._votes(xs)
        best = max(votes)
        tied = [k for k, v in enumerate(votes) if v == best]
        if len(tied) > 1:
            rng = rng or self._tie_rng(xs)
            tied = [tied[int(rng.integers(len(tied)))]]
        return self.classes_[tied[0]]

    # ------------------------------------------------------------------ inspection, state

    @property
    def members(self) -> list:
        """The members' learners, in member order (read-only use)."""
        return list(self._members)

    def memory_bytes(self) -> int:
        """Bytes held: the members' own counts, the member and class lists, the generator."""
        return int(self._own_bytes() + sum(m.memory_bytes() for m in self._members))

    def _own_bytes(self) -> int:
        total = sys.getsizeof(self) + sys.getsizeof(self.__dict__) + sys.getsizeof(self._members)
        total += sys.getsizeof(self.classes_) + sys.getsizeof(self._index) + sum(map(sys.getsizeof, self.classes_))
        return total + sys.getsizeof(self._rng) + sys.getsizeof(self._rng.bit_generator)

    def state(self) -> dict:
        """Plain, msgpack-serialisable state with ``"kind": "nb_committee"`` (see `from_state`)."""
        return {
            "kind": "nb_committee",
            "params": {
                "n_models": self.n_models,
                "sampling": self.sampling,
                "sample_fraction": self.sample_fraction,
                "learning_rate": self.learning_rate,
                "nominal_attributes": (None if self.nominal_attributes is None
                                       else [int(i) for i in self.nominal_attributes]),
                "zero_frequency": self.zero_frequency,
                "seed": self.seed,
                "max_size_bytes": self.max_size_bytes,
                "scoring": self.scoring,
            },
            "classes": list(self.classes_),
            "n_features_in": self.n_features_in_,
            "n_samples_seen": self.n_samples_seen_,
            "n_learned": self._n_learned,
            "rng": rng_state(self._rng),
            "tie_key": self._tie_key,
            "members": [m.state() for m in self._members],
        }

    @classmethod
    def from_state(cls, state: dict) -> NaiveBayesCommittee:
        """Rebuild the committee `state` described: same votes, same future draws.

        Raises:
            ValueError: not an nb_committee state, or a malformed one (a missing key, a value
                of the wrong type, counts out of range, members that do not match n_models,
                the features or the classes).
        """
        if not isinstance(state, dict) or state.get("kind") != "nb_committee":
            raise ValueError("not an nb_committee state")
        try:
            if state["params"]["n_models"] != len(state["members"]):  # before building that many
                raise ValueError("invalid nb_committee state: members do not match n_models")
            out = cls(**state["params"])
            out.classes_ = list(state["classes"])
            out._index = {c: k for k, c in enumerate(out.classes_)}
            out.n_features_in_ = state["n_features_in"]
            out.n_samples_seen_ = float(state["n_samples_seen"])
            out._n_learned = check_count("n_learned", state["n_learned"])
            out._rng = rng_from_state(state["rng"])
            out._tie_key = int(state["tie_key"])
            members = [learner_from_state(s) for s in state["members"]]
        except STATE_ERRORS as exc:
            raise ValueError(f"invalid nb_committee state: {exc!r}") from None
        if len(members) != out.n_models or any(type(m) is not type(out._members[0]) for m in members):
            raise ValueError(f"invalid nb_committee state: members do not match n_models={out.n_models}")
        for c in out.classes_:
            check_label(c)
        d, known = out.n_features_in_, set(out._index)
        check_finite("n_samples_seen", out.n_samples_seen_, 0.0)
        if (
            len(known) != len(out.classes_)
            or (d is None) != (not known)
            or not (d is None or (type(d) is int and d >= 1))
            or not out._n_learned >= 0
            or not 0 <= out._tie_key < 1 << 32  # a SeedSequence word
            or any(m.classes_ and (not set(m.classes_) <= known or m.n_features_in_ != d) for m in members)
        ):
            raise ValueError("invalid nb_committee state: classes, features or counts do not fit the members")
        out._members = members
        return out
