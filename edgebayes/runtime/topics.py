"""Every topic of the runtime (docs/protocol.md): ``Topics`` names the runtime's own and each
device's output topics, and routes an incoming topic of the edgebayes protocol to
``("reading" | "label", device)`` with paho's ``topic_matches_sub`` (docs/cases.md C32: a filter
like ``test/6/#`` must not match ``test/3``).
"""

from __future__ import annotations

from paho.mqtt.client import topic_matches_sub

from edgebayes.runtime.messages import ErrorKind, ProtocolError
from edgebayes.runtime.names import NAME_RE


class Topics:
    """Every topic of the runtime, for a prefix, a device filter and the runtime's id."""

    def __init__(self, prefix: str, devices: str, runtime_id: str):
        self.prefix = prefix
        self.reading_filter = f"{prefix}/{devices}/reading"
        self.label_filter = f"{prefix}/{devices}/label"
        self.status = f"{prefix}/runtime/{runtime_id}/status"
        self.metrics = f"{prefix}/runtime/{runtime_id}/metrics"
        self.runtime_error = f"{prefix}/runtime/{runtime_id}/error"
        self.alert = f"{prefix}/runtime/{runtime_id}/alert"
        self._skip = len(prefix) + 1
        self._routes: dict[str, tuple[str, str] | None] = {}  # topic -> route, bounded below

    @property
    def subscriptions(self) -> list[str]:
        return [self.reading_filter, self.label_filter]

    def device_topic(self, device: str, kind: str) -> str:
        """``<prefix>/<device>/<kind>`` for kind prediction, drift or error."""
        return f"{self.prefix}/{device}/{kind}"

    def route(self, topic: str) -> tuple[str, str] | None:
        """``("reading" | "label", device)`` for a subscribed topic, None for any other.

        Raises:
            ProtocolError: kind ``device_id``: the device level is not 1-64 of [A-Za-z0-9_-].
        """
        route = self._routes.get(topic)
        if route is not None:
            return route
        route = self._match(topic)
        if route is not None:
            if len(self._routes) >= 4096:  # many devices or junk topics: start over
                self._routes.clear()
            self._routes[topic] = route
        return route

    def _match(self, topic: str) -> tuple[str, str] | None:
        if topic_matches_sub(self.reading_filter, topic):
            kind = "reading"
        elif topic_matches_sub(self.label_filter, topic):
            kind = "label"
        else:
            return None
        device = topic[self._skip:topic.rindex("/")]
        if not NAME_RE.match(device):
            raise ProtocolError(ErrorKind.DEVICE_ID,
                                f"device id {device[:80]!r} is not 1-64 characters from [A-Za-z0-9_-]")
        return kind, device
