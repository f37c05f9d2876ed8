"""How a bounded SRP ensemble splits ``max_size_bytes`` between its parts, planned before any
allocation.

A fixed reserve goes to the detectors (each signal's window sized for ``2**32`` inputs,
`signal_bound`) and to the ensemble's own bookkeeping (`bookkeeping_bytes`); the rest is the
learners' pool, split into one share per member and one per background learner
(`learner_shares`). Each learner gets its share as its own ``max_size_bytes``.
"""

from __future__ import annotations

from edgebayes.ensemble.srp_member import ARRAY_OVERHEAD_BYTES, MEMBER_SLOT_BYTES

__all__ = [
    "BOOKKEEPING_BYTES",
    "DETECTOR_HORIZON_LOG2",
    "MEMBER_BOOKKEEPING_BYTES",
    "MEMBER_FRACTION",
    "bookkeeping_bytes",
    "learner_fits",
    "learner_shares",
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
    """The reserve for the ensemble's own objects (what ``SRPClassifier._own_bytes`` counts),
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
