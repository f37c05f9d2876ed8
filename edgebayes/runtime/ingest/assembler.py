"""One reading per device from feature values that arrive on several topics or messages.

The ``Assembler`` keeps, per device, the latest value of each schema feature with the time it
arrived and the publisher it came from. It emits a ``messages.Reading``:

- ``interval_s == 0``: when a round of reports is over: every feature was reported since the
  device's last reading (a value, or "no value now": ``null``, ``nan``, ``unavailable``), or a
  feature is reported a second time before that (a sensor that stopped reporting, or a probe
  missing from its message, does not hold the others back). A Tasmota ``SENSOR`` message
  holding them all gives one reading per message; an ESPHome node publishing one topic per
  sensor gives one reading per round of topics;
- ``interval_s > 0``: every ``interval_s`` seconds, from the latest values. A device's first
  reading does not wait a whole interval: it comes as soon as every feature was reported, and
  at most ``FIRST_READING_S`` after its first value (the values that arrived by then, the rest
  missing); the cadence runs from it.

In a reading, a feature is missing (NaN, which the learners skip) when its last report was "no
value now", when it was never reported, when its publisher went offline (``offline``), or
when its value is older than ``max_age_s`` seconds; a feature not reported in the current round
keeps its latest value otherwise. A reading with fewer than ``min_features`` present (non-NaN)
features is not served: ``update`` returns an ``Incomplete`` (reported by the caller), ``due``
skips it. ``seq`` is the emission time in milliseconds, kept strictly increasing, so it keeps
growing across restarts as docs/protocol.md asks.

Labels: ``label(device, y, ...)`` sets the device's label state. Readings assembled up to
``after_s`` seconds later carry it inline (predicted, then learned); readings assembled up to
``before_s`` seconds earlier, not yet labelled, get it as delayed ``Label`` objects by seq
(the worker scores their reading-time predictions, then learns them). ``y = None`` (the label
source has no value now) clears the state.

Only the worker thread touches it (no locks).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

from edgebayes.runtime.messages import Label, Reading

_NAN = math.nan
#: seconds from a device's first value to its first cadence reading at the latest
#: (``interval_s > 0``): long enough for the other sensors' first messages to arrive
FIRST_READING_S = 5.0


def _present(x: list[float]) -> int:
    """How many values of ``x`` are present (not NaN)."""
    return len(x) - sum(map(math.isnan, x))


@dataclass(frozen=True)
class Incomplete:
    """A round of reports that ended with fewer than ``min_features`` present features:
    ``missing`` names the features without a value, in schema order."""

    device: str
    missing: tuple[str, ...]


class _Device:
    __slots__ = ("label", "last_seq", "next_due", "origins", "recent", "times", "updated", "values")

    def __init__(self, n: int):
        self.values = [_NAN] * n
        self.times = [-math.inf] * n
        self.origins: list[tuple] = [()] * n
        self.updated: set[int] = set()  # features reported (a value or NaN) since the last reading
        self.last_seq = -1
        self.next_due: float | None = None
        self.label: tuple[Any, float, float] | None = None  # (y, since, after_s)
        self.recent: deque[list] = deque(maxlen=10000)  # [seq, t, labelled] of recent readings


class Assembler:
    """Latest value per feature and device; readings on a cadence or when all are new.

    Args:
        features: the schema's feature names, in order.
        interval_s: 0 for "at the end of each round of reports", else the cadence in seconds.
        max_age_s: values older than this (seconds) are missing.
        window_before_s: the longest ``before_s`` any label will use (how long readings are
            remembered for delayed labels).
        max_devices: devices tracked at most; values for further devices are dropped (counted
            in ``n_devices_dropped``) so junk topics cannot grow memory.
        min_features: the fewest present (non-NaN) features a reading is served with (>= 1).
    """

    def __init__(self, features: tuple[str, ...], interval_s: float, max_age_s: float,
                 window_before_s: float = 0.0, max_devices: int = 1024, min_features: int = 1):
        self.features = features
        self.index = {name: i for i, name in enumerate(features)}
        self.n = len(features)
        self.interval_s = interval_s
        self.max_age_s = max_age_s
        self.window_before_s = window_before_s
        self.max_devices = max_devices
        self.min_features = min_features
        self.devices: dict[str, _Device] = {}
        self.n_devices_dropped = 0

    def _device(self, device: str) -> _Device | None:
        dev = self.devices.get(device)
        if dev is None:
            if len(self.devices) >= self.max_devices:
                self.n_devices_dropped += 1
                return None
            dev = self.devices[device] = _Device(self.n)
        return dev

    def update(self, device: str, values: dict[str, float], origin: tuple,
               now: float) -> Reading | Incomplete | None:
        """Record ``values`` (feature name -> float, NaN = no value now) from ``origin`` at
        ``now`` (unix s). When ``interval_s`` is 0 and they end a round: the reading, or an
        ``Incomplete`` when it has fewer than ``min_features`` present; else None."""
        dev = self._device(device)
        if dev is None:
            return None
        indices = [self.index[name] for name in values]
        repeated = not dev.updated.isdisjoint(indices)  # a second report: the round is over
        for i, v in zip(indices, values.values()):
            dev.values[i], dev.times[i], dev.origins[i] = v, now, origin
        dev.updated.update(indices)
        if self.interval_s > 0:
            if dev.next_due is None:
                dev.next_due = now + min(self.interval_s, FIRST_READING_S)
            if dev.last_seq < 0 and len(dev.updated) == self.n:
                dev.next_due = now  # the first round is complete: no need to wait
            return None
        if not repeated and len(dev.updated) < self.n:
            return None
        x = self._values(dev, now)
        if _present(x) < self.min_features:
            dev.updated.clear()
            return Incomplete(device, tuple(f for f, v in zip(self.features, x) if math.isnan(v)))
        return self._emit(device, dev, now, x)

    def waiting(self, device: str) -> tuple[str, ...]:
        """The features ``device`` has never reported (a value or "no value now"), in schema
        order; () for a device not tracked."""
        dev = self.devices.get(device)
        if dev is None:
            return ()
        return tuple(f for f, t in zip(self.features, dev.times) if t == -math.inf)

    def refresh(self, device: str, values: dict[str, float], origin: tuple, now: float) -> None:
        """Record ``values`` again, as no report: a republish of values already recorded
        (zigbee2mqtt's cached state) shows they are current, so their age restarts, but it is
        no new measurement, so it neither ends a round nor counts towards one."""
        dev = self.devices.get(device)
        if dev is None:
            return
        for name, v in values.items():
            i = self.index[name]
            dev.values[i], dev.times[i], dev.origins[i] = v, now, origin

    def label(self, device: str, y: Any, now: float, before_s: float, after_s: float) -> list[Label]:
        """Set the device's label state; the delayed labels for its recent unlabelled readings."""
        dev = self._device(device)
        if dev is None:
            return []
        dev.label = None if y is None else (y, now, after_s)
        if y is None or before_s <= 0:
            return []
        out = []
        for entry in dev.recent:
            if not entry[2] and entry[1] >= now - before_s:
                entry[2] = True
                out.append(Label(device, entry[0], y))
        return out

    def offline(self, origin: tuple, now: float) -> list[tuple[str, int]]:
        """Drop the values ``origin`` published (``(source, "")``: everything of that source);
        ``(device, seq of its last reading, -1 if none)`` for each device that held any and
        has no value left (one of two sensors going offline leaves the device served)."""
        src, pub = origin
        touched = []
        for name, dev in self.devices.items():
            held = False
            for i, o in enumerate(dev.origins):
                if o and o[0] == src and (not pub or o[1] == pub):
                    dev.values[i], dev.times[i] = _NAN, now
                    dev.updated.discard(i)
                    held = True
            if held and _present(dev.values) == 0:
                touched.append((name, dev.last_seq))
        return touched

    def due(self, now: float) -> list[Reading]:
        """The cadence readings due at ``now`` (none when ``interval_s`` is 0)."""
        if self.interval_s <= 0:
            return []
        out = []
        for device, dev in self.devices.items():
            if dev.next_due is None or now < dev.next_due:
                continue
            dev.next_due += self.interval_s
            if dev.next_due <= now:  # we were late: no burst of catch-up readings
                dev.next_due = now + self.interval_s
            x = self._values(dev, now)
            if _present(x) >= self.min_features:
                out.append(self._emit(device, dev, now, x))
        return out

    def _values(self, dev: _Device, now: float) -> list[float]:
        horizon = now - self.max_age_s
        return [v if t >= horizon else _NAN for v, t in zip(dev.values, dev.times)]

    def _emit(self, device: str, dev: _Device, now: float, x: list[float]) -> Reading:
        seq = max(dev.last_seq + 1, int(now * 1000))
        dev.last_seq = seq
        dev.updated.clear()
        y = None
        if dev.label is not None and now - dev.label[1] <= dev.label[2]:
            y = dev.label[0]
        recent = dev.recent
        recent.append([seq, now, y is not None])
        while recent and recent[0][1] < now - self.window_before_s:
            recent.popleft()
        return Reading(device, seq, now, x, y)
