"""The one fake broker session of the tests: ``RecordingPublisher`` records what is published
and acknowledged (the worker's ``Session`` protocol, ``edgebayes.runtime.publisher``)."""

from __future__ import annotations

from edgebayes.codec import decode


class RecordingPublisher:
    """A ``Session`` without a broker: every publish and acknowledgement is recorded.

    Args:
        fail_on: publishing on a topic ending with this raises ``RuntimeError`` (None: never).

    Attributes:
        published: (topic, payload bytes, qos, retain) of each publish, in order.
        acked: the packet ids acknowledged, in order.
        n_connects: the connection number the worker compares before acknowledging.
    """

    def __init__(self, fail_on: str | None = None):
        self.published: list[tuple[str, bytes, int, bool]] = []
        self.acked: list[int] = []
        self.fail_on = fail_on
        self.n_connects = 0
        self.n_publish_failed = 0

    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> None:
        if self.fail_on and topic.endswith(self.fail_on):
            raise RuntimeError(f"cannot publish on {topic}")
        self.published.append((topic, bytes(payload), qos, retain))

    def ack(self, mid: int, qos: int) -> None:
        self.acked.append(mid)

    def wait_for_room(self, timeout_s: float) -> bool:
        return True  # nothing waits to be written

    def on(self, kind: str) -> list:
        """The decoded payloads published on topics ending with ``/kind``, in order."""
        return [decode(p) for t, p, *_ in self.published if t.endswith("/" + kind)]

    def sent_on(self, topic: str) -> list[tuple[bytes, bool]]:
        """(payload, retain) of each publish on ``topic`` exactly, in order."""
        return [(p, retain) for t, p, _, retain in self.published if t == topic]
