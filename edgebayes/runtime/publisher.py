"""What the runtime publishes through: the ``Publisher`` and ``Session`` protocols.

``Publisher`` is the one call every producer of MQTT messages makes (``MqttClient``, the
firmware simulator's device client, ``Muted``); ``Session`` adds what the worker needs of its
broker connection: acknowledging incoming messages, waiting for room in the outgoing backlog
and the counters it reports. ``Muted`` is the session a journal replay runs on: it publishes
and acknowledges nothing, so replayed readings send no prediction, alert or report again.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Publisher(Protocol):
    """Publishes one MQTT message."""

    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> Any:
        """Queue ``payload`` (bytes) on ``topic`` at ``qos`` (0 or 1); the result is the
        implementation's (paho's message info, a bool, or None when refused)."""


@runtime_checkable
class Session(Publisher, Protocol):
    """A broker connection as the worker uses it.

    Attributes:
        n_connects: connections made so far; a packet id acknowledged is only meaningful on
            the connection it came from.
        n_publish_failed: messages paho or the broker refused.
    """

    n_connects: int
    n_publish_failed: int

    def ack(self, mid: int, qos: int) -> None:
        """Acknowledge incoming message ``mid`` received at ``qos``."""

    def wait_for_room(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds for room in the outgoing backlog; whether there is."""


class Muted:
    """A ``Session`` that publishes nothing and acknowledges nothing (a journal replay)."""

    n_connects = 0
    n_publish_failed = 0

    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> None:
        return None

    def ack(self, mid: int, qos: int) -> None:
        return None

    def wait_for_room(self, timeout_s: float) -> bool:
        return True
