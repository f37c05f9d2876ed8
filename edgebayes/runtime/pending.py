"""Readings waiting for their delayed label, and labels waiting for their reading, bounded.

Each device has one ``PendingLabels``: reading ``seq`` -> (arrival time, features, every
model's prediction made at reading time). The stored predictions let the delayed label score
the prediction the device actually received (prequential, test-then-train). The oldest entry
falls out when the buffer is full or older than ``max_age_s``; both are counted, and so are
the entries dropped by ``clear`` when the device restarts its ``seq`` (a reboot).

A label can also arrive before its reading (they travel on two topics: a broker or a NATS
node that fails over resends the reading after the label). Such a label is held for the
reading, at most ``max_pending`` of them per device and none longer than `EARLY_HOLD_S`;
those that fall out are returned to be reported, never learned.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, NamedTuple

from edgebayes.base import as_floats, check_count
from edgebayes.runtime.messages import SEQ_LIMIT

#: the longest a label waits for its reading, seconds (a resent reading comes within seconds)
EARLY_HOLD_S = 60.0


class Pending(NamedTuple):
    """One unlabelled reading. ``t`` is the arrival time in unix seconds (survives restarts)."""

    t: float
    x: list[float]
    y_preds: list[Any]


class Early(NamedTuple):
    """A label held for its reading: arrival time (unix s), the label as the device learns
    it, and the topic it came on (for the report if its reading never comes)."""

    t: float
    y: Any
    topic: str


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
        self._early: OrderedDict[int, Early] = OrderedDict()  # labels held for their reading
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

    def hold(self, seq: int, label: Early) -> list[tuple[int, Early]]:
        """Hold ``label`` for reading ``seq``, not yet come; returns the held labels that fell
        out (the oldest beyond ``max_pending``, or held longer than `EARLY_HOLD_S`), oldest first."""
        dropped = self.expire_early(label.t)
        early = self._early
        while early and len(early) >= self.max_pending:
            dropped.append(early.popitem(last=False))
        if self.max_pending:
            early[seq] = label
        else:
            dropped.append((seq, label))
        return dropped

    def held(self, seq: int) -> bool:
        """Whether a label waits for reading ``seq``."""
        return seq in self._early

    def take(self, seq: int) -> Early | None:
        """The label held for reading ``seq``, removed; None if there is none."""
        return self._early.pop(seq, None)

    def expire_early(self, now: float) -> list[tuple[int, Early]]:
        """Drop and return the labels held more than `EARLY_HOLD_S` before ``now`` (unix s)."""
        early, limit, dropped = self._early, now - EARLY_HOLD_S, []
        while early and next(iter(early.values())).t < limit:
            dropped.append(early.popitem(last=False))
        return dropped

    def drop_early(self) -> list[tuple[int, Early]]:
        """Drop and return every held label (a reboot: their seqs now name new readings)."""
        dropped = list(self._early.items())
        self._early.clear()
        return dropped

    @property
    def n_early(self) -> int:
        """Labels held for their reading."""
        return len(self._early)

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
            "early": [[seq, e.t, e.y, e.topic] for seq, e in self._early.items()],
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
                [0, 2**63); a held label whose seq or time is wrong, whose label is not a str
                or int, or whose topic is not a str. KeyError, TypeError: a missing or
                mistyped part.
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
        early = OrderedDict()
        for seq, t, y, topic in state["early"]:
            if (type(seq) is not int or not 0 <= seq < SEQ_LIMIT or not math.isfinite(t)
                    or type(y) not in (int, str) or type(topic) is not str):
                raise ValueError(f"held label: seq {seq!r:.40}, time {t!r:.40}, label {y!r:.40}, topic {topic!r:.80}")
            early[seq] = Early(float(t), y, topic)
        while len(early) > self.max_pending:
            early.popitem(last=False)  # a smaller max_pending now: the oldest go, as they would live
        self._items = items
        self._early = early
        self.n_overflow = n_overflow
        self.n_expired = check_count("n_expired", state["n_expired"])
        self.n_rebooted = check_count("n_rebooted", state.get("n_rebooted", 0))  # absent in old ones
