"""Which new device the runtime serves when ids it never saw keep coming.

``[memory] max_devices`` bounds the devices in memory. Two rules keep one client from locking
new devices out with junk ids (docs/protocol.md "Devices"):

- **A rate of new ids per source.** A device with neither a model in memory nor a checkpoint
  takes one token of its source's bucket: ``new_devices_per_min`` tokens, refilled at that
  rate. A source is the edgebayes protocol's topics, or the ``[[sources]]`` topic filter the
  message came on (the assembler's cadence readings, topic ``(assembler)``, are one source).
  A device with a checkpoint is known and takes none, so after a restart the devices that were
  served are not out-raced by junk. (MQTT does not tell the runtime who
  published a message, so there is no per-user rate here: the ACL's per-user topics are that.)
- **Idle devices make room.** With checkpoints on, a device not served for ``evict_idle_s`` is
  written to its checkpoint and evicted, least recently served first, when a new device needs
  its place; its next reading restores it. Without checkpoints nothing is evicted (its
  learning would be lost): a new device past ``max_devices`` is refused. Nor during a journal
  replay (the checkpoint would claim entries not replayed yet).

Only the worker thread uses these objects.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from paho.mqtt.client import topic_matches_sub

from edgebayes.runtime.messages import ProtocolError
from edgebayes.runtime.topics import Topics

#: the source key of the edgebayes protocol's own topics
NATIVE = "edgebayes"


class Admission:
    """The per-source rate of new device ids and the order devices were last served in.

    Args:
        topics: the runtime's topics (a message on them is of source `NATIVE`).
        filters: the ``[[sources]]`` topic filters (each is a source of its own).
        per_min: new device ids each source may bring per minute (and at once, from calm).
        evict_idle_s: seconds since it was last served after which a device may be evicted.
        clock: monotonic seconds.
    """

    def __init__(self, topics: Topics, filters: list[str], per_min: int, evict_idle_s: float,
                 clock: Callable[[], float] = time.monotonic):
        self.topics = topics
        self.filters = list(filters)
        self.per_min = per_min
        self.evict_idle_s = evict_idle_s
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # source -> (tokens, when counted)
        self._served: dict[str, float] = {}  # device -> when last served (monotonic s)

    def source(self, topic: str) -> str:
        """The source of a message on ``topic``: `NATIVE`, else its ``[[sources]]`` filter (else
        the topic itself). At most one per filter, plus one."""
        try:
            if self.topics.route(topic) is not None:
                return NATIVE
        except ProtocolError:
            pass
        return next((f for f in self.filters if topic_matches_sub(f, topic)), topic)

    def take_new(self, device: str, topic: str) -> str | None:
        """Count new device ``device`` (no model, no checkpoint) against its source's rate; why
        it is refused (None: it may be admitted)."""
        src = self.source(topic)
        now = self.clock()
        tokens, then = self._buckets.get(src, (float(self.per_min), now))
        tokens = min(float(self.per_min), tokens + (now - then) * self.per_min / 60.0)
        if tokens < 1.0:
            self._buckets[src] = (tokens, now)
            return (f"device {device} refused: source {src} brought more than {self.per_min} new device ids "
                    "in a minute ([memory] new_devices_per_min)")
        self._buckets[src] = (tokens - 1.0, now)
        return None

    def served(self, device: str) -> None:
        """``device`` is being served now."""
        self._served[device] = self.clock()

    def forget(self, device: str) -> None:
        """``device`` left memory."""
        self._served.pop(device, None)

    def least_recent(self) -> list[str]:
        """Every device served, least recently served first."""
        return sorted(self._served, key=self._served.__getitem__)

    def idle(self) -> list[str]:
        """The devices not served for ``evict_idle_s`` seconds, least recently served first."""
        horizon = self.clock() - self.evict_idle_s
        return sorted((d for d, t in self._served.items() if t <= horizon), key=self._served.__getitem__)
