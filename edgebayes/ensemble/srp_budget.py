"""How a bounded SRP ensemble splits ``max_size_bytes`` between its parts, planned before any
allocation.

A fixed reserve goes to the detectors (each signal's window sized for ``2**32`` inputs,
`signal_bound`) and to the ensemble's own bookkeeping (`bookkeeping_bytes`); the rest is the
learners' pool, split into one share per member and one per background learner
(`learner_shares`). Each learner gets its share as its own ``max_size_bytes``.

ADWIN windows sized for 2**32 inputs take 3.4 kB per signal, 68 kB for 10 members with warning
and drift detectors; the bookkeeping grows at the first sample when the subspaces' index arrays
need more than 512 bytes per member. Members get `MEMBER_FRACTION` of the pool, background
learners what is left (for 1 MB and 10 members: 82.7 kB per member, 9.2 kB per background
learner, raised to a member's share when it is swapped in). With 10 members the reserve holds
about 40 labels of 10 characters.
"""

from __future__ import annotations

import sys

from edgebayes.base import ClassLimitError
from edgebayes.ensemble.srp_member import ARRAY_OVERHEAD_BYTES, MEMBER_SLOT_BYTES
from edgebayes.sizes import append_bytes, insert_bytes

__all__ = [
    "BOOKKEEPING_BYTES",
    "DETECTOR_HORIZON_LOG2",
    "MEMBER_BOOKKEEPING_BYTES",
    "MEMBER_FRACTION",
    "bookkeeping_bytes",
    "check_first_sample",
    "check_label_room",
    "check_member_room",
    "learner_fits",
    "learner_shares",
    "own_bytes",
    "signal_bound",
]

#: Part of a bounded ensemble's learner bytes that goes to its members when background
#: learners exist; background learners share the rest (an even split starves the members:
#: docs/results.md, "Figures behind choices in the code").
MEMBER_FRACTION = 0.9
#: Inputs an ADWIN window is sized for when the memory budget reserves room for detectors.
DETECTOR_HORIZON_LOG2 = 32
#: Bytes a bounded ensemble reserves for its own bookkeeping (the ensemble object, the class
#: list and index), plus `MEMBER_BOOKKEEPING_BYTES` per member (its slot object, two subspace
#: arrays; more once drawn subspaces need it).
BOOKKEEPING_BYTES = 8192
MEMBER_BOOKKEEPING_BYTES = 512


def signal_bound(signal) -> int:
    """Bytes a member's signal may reach: its window over ``2**DETECTOR_HORIZON_LOG2`` inputs
    (``max_memory_bytes``), else what the detector holds now (a detector of constant size)."""
    bound = getattr(signal, "max_memory_bytes", None)
    return bound(2**DETECTOR_HORIZON_LOG2) if bound is not None else signal.memory_bytes()


def bookkeeping_bytes(n_models: int, k: int | None = None) -> int:
    """The reserve for the ensemble's own objects (what `own_bytes` counts),
    for ``n_models`` members with subspaces of ``k`` features (None: none drawn)."""
    per_member = MEMBER_BOOKKEEPING_BYTES
    if k is not None:  # a member's and a background learner's subspace, int64 arrays
        per_member = max(per_member, MEMBER_SLOT_BYTES + 2 * (8 * k + ARRAY_OVERHEAD_BYTES))
    return BOOKKEEPING_BYTES + per_member * n_models


def learner_shares(max_size_bytes: int, n_models: int, proto, drift_proto, warning_proto,
                   k: int | None = None) -> tuple[int, int]:
    """Bytes each member and each background learner may hold under ``max_size_bytes``.

    The pool is what the reserve leaves: ``max_size_bytes - bookkeeping_bytes(n_models, k) -
    n_signals * signal_bound``. Without warnings (no background learner) each member gets
    ``pool // n_models``. With warnings, members get `MEMBER_FRACTION` of the pool and
    background learners the rest, or an even split when the small share is below what the
    base learner accepts: a background learner lives from a warning to a drift (a few
    thousand samples) and takes a member's share once swapped in.

    Args:
        max_size_bytes: the ensemble's bound (int >= 1).
        n_models: members (int >= 1).
        proto: the base learner; ``type(proto)(**proto._params(), max_size_bytes=share)``
            must accept the smaller share.
        drift_proto, warning_proto: the prototype signals (None where disabled).
        k: features per drawn subspace (None: none drawn yet, or every feature).

    Returns:
        (member share, background share), ints.

    Raises:
        ValueError: the budget leaves no room for the learners (the message gives the reserve
            and the shares).
    """
    n = n_models
    n_signals = n * ((drift_proto is not None) + (warning_proto is not None))
    reserve = bookkeeping_bytes(n, k) + n_signals * signal_bound(drift_proto or warning_proto)
    pool = max_size_bytes - reserve
    if warning_proto is None:
        splits = [(pool // n, pool // n)]
    else:
        splits = [(int(pool * f) // n, (pool - int(pool * f) // n * n) // n) for f in (MEMBER_FRACTION, 0.5)]
    for share, bkg_share in splits:
        try:  # the base learner's own lower bound, checked now rather than at the first sample
            type(proto)(**{**proto._params(), "max_size_bytes": max(min(share, bkg_share), 0)})
            return share, bkg_share
        except ValueError as exc:
            refusal = exc
    raise ValueError(
        f"max_size_bytes={max_size_bytes} is too small: detectors and bookkeeping "
        f"reserve {reserve} bytes, leaving {max(share, 0)} per member and "
        f"{max(bkg_share, 0)} per background learner for {n} members ({refusal})"
    )


def learner_fits(proto, xs: list, y, **params) -> bool:
    """Whether a fresh base learner like ``proto``, with ``params`` (e.g. ``max_size_bytes``,
    ``features``) over its own, can hold the sample ``xs`` (a list of floats) with label ``y``
    (its ``has_room``)."""
    return bool(type(proto)(**{**proto._params(), **params}).has_room(xs, y))


def own_bytes(srp) -> int:
    """Bytes of the ensemble ``srp``'s own bookkeeping: the object, its lists, class index and
    labels, member slots and subspaces (what `bookkeeping_bytes` reserves)."""
    total = sys.getsizeof(srp) + sys.getsizeof(srp.__dict__) + sys.getsizeof(srp._members)
    total += sys.getsizeof(srp.classes_) + sys.getsizeof(srp._index)
    total += sum(sys.getsizeof(c) for c in srp.classes_)
    total += 2 * (sys.getsizeof(srp._last_predictions) + 8 * srp.n_models)
    total += sum(m.own_bytes() for m in srp._members)
    return total


def check_label_room(srp, y, k: int | None) -> None:
    """ClassLimitError unless the ensemble ``srp``'s bookkeeping reserve (subspaces of ``k``
    features) can hold the new label ``y`` beside the labels it holds."""
    bookkeeping = bookkeeping_bytes(srp.n_models, k)
    grown = sys.getsizeof(y) + append_bytes(srp.classes_, 1) + insert_bytes(srp._index, [y])
    if own_bytes(srp) + grown > bookkeeping:
        raise ClassLimitError(
            f"class {y!r} refused: max_size_bytes={srp.max_size_bytes} reserves "
            f"{bookkeeping} bytes for the ensemble's own bookkeeping, "
            f"full with {len(srp.classes_)} labels"
        )


def check_member_room(members: list, sample, y, share: int, max_size_bytes: int) -> None:
    """ClassLimitError unless every one of ``members`` (their ``has_room``) can hold the label
    ``y`` and the nominal values of ``sample`` within its ``share``."""
    for i, m in enumerate(members):
        if not m.has_room(sample, y):
            raise ClassLimitError(
                f"class {y!r} refused: member {i}'s share of max_size_bytes={max_size_bytes} "
                f"({share} bytes) cannot hold it or this sample's nominal values"
            )


def check_first_sample(xs: list, y, k: int | None, has_features: bool, max_size_bytes: int, n_models: int,
                       proto, drift_proto, warning_proto) -> None:
    """ClassLimitError unless a learner like ``proto`` over every feature, with the share a
    member will have once subspaces of ``k`` features (None: every feature) are reserved
    (`learner_shares`), can hold the first sample ``xs``, ``y``; ``has_features``: the learner
    takes its subspace as ``features`` (and holds a subspace of k features)."""
    n = len(xs)
    try:
        share = learner_shares(max_size_bytes, n_models, proto, drift_proto, warning_proto, k)[0]
    except ValueError as exc:
        raise ClassLimitError(f"class {y!r} refused: x of {n} features: {exc}") from None
    params = {"max_size_bytes": share}
    if has_features:  # a subspace of as many features as a member's, held as it is
        params["features"] = None if k is None else list(range(k))
    if not learner_fits(proto, xs, y, **params):
        raise ClassLimitError(f"class {y!r} refused: a member's share of max_size_bytes="
                              f"{max_size_bytes} ({share} bytes) cannot hold a learner "
                              f"of {n} features with it")
