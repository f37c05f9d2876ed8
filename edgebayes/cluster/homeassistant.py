"""Home Assistant discovery for a pool (``[homeassistant] discovery`` with ``[cluster]``): the
pool's devices show up in Home Assistant as one runtime's would.

NATS keeps no retained message for a plain NATS publish, so each runtime of the pool also holds
one MQTT connection (``MqttClient``) to a node's MQTT gateway (``[broker]`` host and port, the
runtime's NATS user), which keeps retained MQTT publishes and fires wills in its JetStream
streams. Through it the runtime publishes its status (``<prefix>/runtime/<client_id>/status``,
retained ``online``, ``offline`` as its last will and on a clean stop) and, with the single
runtime's ``Discovery``, the discovery configs, availability and attributes of the devices it
serves. A device's configs name the status topic of the runtime that serves it: when a
runtime dies its will makes its devices unavailable in Home Assistant, and the runtime that
takes a partition over announces again, at once, every device of the partition that has
configs (seen on the config topics, retained or live), so Home Assistant shows them available
as soon as their new owner serves them. A partition handed over or lost is forgotten
(``Discovery.forget``): its devices' configs and retained state stay for the next owner.

Home Assistant's birth message makes each runtime send its own devices' configs again
(``Discovery.ha_status``). Configs an earlier run left for a device that never comes back are
not retired here (a single runtime does that at start): the owner retires a device only after
``retire_after_s`` without a reading while it serves it.

Messages from the gateway arrive on the MQTT network thread; they and the partitions taken
(nats-py's thread) are queued and applied on the worker thread (``tick``), which owns the
``Discovery`` and the devices.
"""

from __future__ import annotations

import logging
import queue

from edgebayes.runtime.config import Config
from edgebayes.runtime.discovery import DEFAULT_NODE, Discovery, config_device
from edgebayes.runtime.mqtt import MqttClient
from edgebayes.runtime.topics import Topics

log = logging.getLogger(__name__)


class PoolDiscovery:
    """One pool runtime's Home Assistant side (see the module docstring): a worker watcher.

    Args:
        config: the runtime config, with ``[homeassistant] discovery = true``; ``[broker]``
            names a NATS node's MQTT gateway (MQTT 3.1.1).
        topics: the runtime's topics (its status topic names this runtime).

    Raises:
        OSError: the ``[broker]`` password file cannot be read.
        ConfigError: a ``[broker]`` TLS file does not parse.
    """

    def __init__(self, config: Config, topics: Topics):
        ha = config.homeassistant
        node = ha.node_id or DEFAULT_NODE
        # a pool's configs were never published under a client id: nothing of older releases to remove
        self.discovery = Discovery(ha, topics, node, [m.name for m in config.models], self._publish)
        self.config_filter = f"{ha.prefix}/+/{node}/+/config"
        self.configured: set[str] = set()  # devices that have configs of ours (any runtime's)
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()  # (topic, payload) or (None, devices taken)
        self.client = MqttClient(config.broker, subscriptions=[self.discovery.ha_status_topic, self.config_filter],
                                 status_topic=topics.status, on_message=self._message)

    def start(self) -> None:
        """Connect in the background (retrying until the gateway answers)."""
        self.client.start()

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Publish ``offline`` and disconnect; True when the gateway acknowledged it."""
        return self.client.stop(timeout_s)

    def _publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False):
        return self.client.publish(topic, payload, qos=qos, retain=retain)

    def _message(self, topic: str, payload: bytes, mid: int, qos: int) -> None:
        """MQTT network thread: nothing here needs to survive a crash, so acknowledged at once."""
        self.client.ack(mid, qos)
        self._inbox.put((topic, bytes(payload)))

    # --- nats-py's thread -------------------------------------------------------------------
    def taken(self, devices: set[str]) -> None:
        """This runtime took a partition with ``devices``: announce those that have configs."""
        self._inbox.put((None, set(devices)))

    # --- worker thread ----------------------------------------------------------------------
    def forget(self, devices: set[str]) -> None:
        """A partition handed over or lost: publish nothing more for its devices."""
        for device in devices:
            self.discovery.forget(device)

    def tick(self, devices: dict) -> None:
        """Apply what came since the last tick, then ``Discovery.tick`` (worker watcher)."""
        while True:
            try:
                topic, payload = self._inbox.get_nowait()
            except queue.Empty:
                break
            if topic is None:
                for device in sorted(payload & self.configured):
                    self.discovery.announce(device)
            elif topic == self.discovery.ha_status_topic:
                self.discovery.ha_status(payload)
            elif (device := config_device(topic)) is not None:
                (self.configured.add if payload else self.configured.discard)(device)
        self.discovery.tick(devices)
