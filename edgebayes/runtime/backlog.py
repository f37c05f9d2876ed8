"""The outgoing backlog of the runtime's MQTT connection, counted in bytes and messages.

Every message published and not yet done with (a QoS 0 one until paho writes it to the socket,
a QoS 1 one until the broker acknowledges it) counts its topic, its payload and
``PAHO_MESSAGE_BYTES``; ``MqttClient`` lets its consumer process a message only while the
backlog is under its bounds (`edgebayes.runtime.mqtt`'s module docstring).
"""

from __future__ import annotations

import threading

#: What paho keeps per queued message besides its topic and payload (``MQTTMessage``, its
#: ``MQTTMessageInfo`` and their lock and condition), from tracemalloc around paho 2.2 publishes
#: (``python -m bench.mqtt_backlog``).
PAHO_MESSAGE_BYTES = 1700
#: Messages published and not yet done with, at most: paho's packet ids are 16 bits (65,535
#: unacknowledged QoS 1 messages), and ids of QoS 0 messages come from the same counter.
MAX_OUT_MESSAGES = 32768


class Backlog:
    """Messages published and not yet done with, by paho packet id (any thread).

    Args:
        max_bytes: the bound in bytes (``[output] max_backlog_bytes``).

    Attributes:
        bytes: what the messages count, in bytes (``PAHO_MESSAGE_BYTES`` each besides topic
            and payload).
        n_qos1: messages waiting for the broker's acknowledgement.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self.n_qos1 = 0
        self._lock = threading.Lock()
        self._out: dict[int, tuple[int, int]] = {}  # mid -> (bytes, qos)
        self._done_early: set[int] = set()  # mids paho finished before publish returned them

    def __len__(self) -> int:
        return len(self._out)

    def under_bounds(self) -> bool:
        """Whether the backlog is under ``max_bytes`` and ``MAX_OUT_MESSAGES``."""
        return self.bytes < self.max_bytes and len(self._out) < MAX_OUT_MESSAGES

    def add(self, mid: int, topic: str, payload: bytes, qos: int) -> None:
        """A message paho accepted as ``mid``."""
        nbytes = len(topic) + len(payload) + PAHO_MESSAGE_BYTES
        with self._lock:
            if mid in self._done_early:  # written (or acknowledged) before publish returned
                self._done_early.discard(mid)
                return
            self._out[mid] = (nbytes, qos)
            self.n_qos1 += qos > 0
            self.bytes += nbytes

    def done(self, mid: int) -> None:
        """Message ``mid`` written (QoS 0) or acknowledged (QoS 1)."""
        with self._lock:
            entry = self._out.pop(mid, None)
            if entry is None:
                self._done_early.add(mid)
                return
            self.bytes -= entry[0]
            self.n_qos1 -= entry[1] > 0

    def forget_qos0(self) -> None:
        """Drop the QoS 0 messages (before a reconnect: paho discards the QoS 0 packets it had
        not written, without an on_publish)."""
        with self._lock:
            for mid in [m for m, (_, qos) in self._out.items() if qos == 0]:
                self.bytes -= self._out.pop(mid)[0]
