"""Readings waiting for their delayed label, bounded by count and by age.

Each device has one ``PendingLabels``: reading ``seq`` -> (arrival time, features, every
model's prediction made at reading time). The stored predictions let the delayed label score
the prediction the device actually received (prequential, test-then-train). The oldest entry
falls out when the buffer is full or older than ``max_age_s``; both are counted, and so are
the entries dropped by ``clear`` when the device restarts its ``seq`` (a reboot).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, NamedTuple

from edgebayes.base import as_floats, check_count
from edgebayes.runtime.messages import SEQ_LIMIT


class Pending(NamedTuple):
    """One unlabelled reading. ``t`` is the arrival time in unix seconds (survives restarts)."""

    t: float
    x: list[float]
    y_preds: list[Any]


class PendingLabels:
    """A bounded FIFO of unlabelled readings of one device.

    Args:
        max_pending: most entries kept (0 keeps none: delayed labels are then all unknown).
        max_age_s: entries older than this (in seconds) fall out at the next ``expire``/``add``.
    """

    def __init__(self, max_pending: int, max_age_s: float):
        self.max_pending = max_pending
        self.max_age_s = max_age_s
        self._items: OrderedDict[int, Pending] = OrderedDict()
        self.n_overflow = 0  # fallen out because the buffer was full
        self.n_expired = 0  # fallen out because too old
        self.n_rebooted = 0  # dropped because the device restarted its seq

    def __len__(self) -> int:
        return len(self._items)

    def add(self, seq: int, entry: Pending) -> None:
        """Keep ``entry`` under ``seq``, dropping the oldest entries beyond the limits."""
        self.expire(entry.t)
        items = self._items
        while items and len(items) >= self.max_pending:
            items.popitem(last=False)
            self.n_overflow += 1
        if self.max_pending:
            items[seq] = entry
        else:
            self.n_overflow += 1

    def get(self, seq: int) -> Pending | None:
        """The entry of ``seq``, left in place; None if it is not pending."""
        return self._items.get(seq)

    def pop(self, seq: int) -> Pending | None:
        """The entry of ``seq``, removed; None if it is not pending."""
        return self._items.pop(seq, None)

    def clear(self) -> None:
        """Drop every entry (counted): after a reboot a label's ``seq`` means a new reading."""
        self.n_rebooted += len(self._items)
        self._items.clear()

    @property
    def n_dropped(self) -> int:
        """Entries that fell out without their label: overflow, age and reboots."""
        return self.n_overflow + self.n_expired + self.n_rebooted

    def expire(self, now: float) -> None:
        """Drop entries that arrived more than ``max_age_s`` before ``now`` (unix seconds)."""
        items, limit = self._items, now - self.max_age_s
        while items:
            seq, entry = next(iter(items.items()))
            if entry.t >= limit:
                break
            del items[seq]
            self.n_expired += 1

    def state(self) -> dict:
        """Plain-data state for checkpoints."""
        return {
            "items": [[seq, e.t, e.x, e.y_preds] for seq, e in self._items.items()],
            "n_overflow": self.n_overflow,
            "n_expired": self.n_expired,
            "n_rebooted": self.n_rebooted,
        }

    def load_state(self, state: dict, n_features: int | None = None,
                   n_models: int | None = None) -> None:
        """Restore the entries and counters of ``state()``. Limits stay as configured: only the
        newest ``max_pending`` entries are kept, the others counted as overflow.

        Args:
            n_features: each entry's ``x`` length (None: any); n_models: its predictions' count.

        Raises:
            ValueError: an entry whose seq is not an int in [0, 2**53), whose time is not
                finite, whose ``x`` a model would refuse to learn (see ``as_floats``), or whose
                predictions are not a list of ``n_models``; a counter that is not an int in
                [0, 2**63). KeyError, TypeError: a missing or mistyped part.
        """
        items = OrderedDict()
        for seq, t, x, yp in state["items"]:
            if type(seq) is not int or not 0 <= seq < SEQ_LIMIT or not math.isfinite(t):
                raise ValueError(f"pending entry: seq {seq!r} at time {t!r}")
            if type(yp) is not list or (n_models is not None and len(yp) != n_models):
                raise ValueError(f"pending entry {seq}: predictions {yp!r:.80} are not {n_models}")
            items[seq] = Pending(float(t), as_floats(x, n_features, learning=True)[0], yp)
        n_overflow = check_count("n_overflow", state["n_overflow"])
        while len(items) > self.max_pending:
            items.popitem(last=False)
            n_overflow += 1
        self._items = items
        self.n_overflow = n_overflow
        self.n_expired = check_count("n_expired", state["n_expired"])
        self.n_rebooted = check_count("n_rebooted", state.get("n_rebooted", 0))  # absent in old ones
