"""The runtime assembled: config -> MQTT client -> bounded queue -> worker -> publisher.

``Runtime(config)`` builds the pieces, each given what it uses when it is made: the
``Intake`` (readings, labels and refusals from the incoming messages, ``[[sources]]``
included), Home Assistant ``Discovery`` when ``[homeassistant] discovery`` is on, the
``MqttClient`` (paho's network thread, which only enqueues, through ``Runtime``) and the
``Worker`` (all model state, one thread). ``start()`` connects in the background;
``stop()`` does the clean shutdown: no more intake, drain the queue, checkpoint every device,
publish ``offline`` (retained), disconnect. With ``[checkpoint] dir`` set, the worker also
keeps the write-ahead journal ``<dir>/journal`` and replays it in ``start()``.

The worker processes a message only while ``MqttClient.wait_for_room`` says the outgoing
backlog is under ``[output] max_backlog_bytes`` and the broker is connected; a session
takeover is published on the alert topic (``session_taken_over``).

Hooks, given to ``Runtime``: ``ready_hooks`` run (network thread) after every successful
connect, e.g. a systemd READY notification; ``tick_hooks`` run from the worker loop (a
watchdog keep-alive).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import Config
from edgebayes.runtime.discovery import Discovery
from edgebayes.runtime.ingest.intake import Intake
from edgebayes.runtime.journal import Journal
from edgebayes.runtime.mqtt import PACKET_ROOM, MqttClient
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker

log = logging.getLogger(__name__)

class Runtime:
    """The whole runtime for one config (see the module docstring).

    Raises:
        OSError: the checkpoint folder is a file, or the password file cannot be read.
        ConfigError: ``[memory] model_budget_bytes`` cannot hold the models, or a ``[broker]``
            TLS file does not parse.
    """

    def __init__(self, config: Config, *, ready_hooks: Sequence[Callable[[], None]] = (),
                 tick_hooks: Sequence[Callable[[], None]] = ()):
        self.config = config
        self.topics = Topics(config.topics.prefix, config.topics.devices, config.broker.client_id)
        store = journal = None
        if config.checkpoint.dir is not None:
            store = CheckpointStore(config.checkpoint.dir, config.schema.features)
            journal = Journal(config.checkpoint.dir, config.schema.features, config.queue.max_payload_bytes)
        ha = config.homeassistant
        self.discovery = None
        if ha is not None and ha.discovery:
            self.discovery = Discovery(ha, self.topics, config.broker.client_id,
                                       [m.name for m in config.models], self._publish)
        handlers = self.discovery.handlers() if self.discovery else {}
        self.intake = Intake(config, self.topics, handlers,
                             on_offline=self.discovery.source_offline if self.discovery else None)
        self.ready_hooks = list(ready_hooks)
        self.source_filters = self.intake.filters  # [[sources]], [homeassistant]
        self.client = MqttClient(
            config.broker, subscriptions=self.topics.subscriptions + self.source_filters,
            status_topic=self.topics.status,
            on_message=self._submit, receive_maximum=config.queue.max_size,
            max_backlog_bytes=config.output.max_backlog_bytes, on_connected=self._connected,
            can_take=self._can_take, alert=self._alert, on_round=self._handed,
            max_packet_bytes=config.queue.max_payload_bytes + PACKET_ROOM,
        )
        self.worker = Worker(config, self.topics, store, journal, session=self.client, intake=self.intake,
                             tick_hooks=tick_hooks, watchers=[self.discovery] if self.discovery else [])

    # the discovery is made before the client, the client before the worker: they reach them here
    def _submit(self, topic: str, payload: bytes, mid: int, qos: int) -> None:
        self.worker.submit(topic, payload, mid, qos, wake=False)  # woken once per round: _handed

    def _handed(self) -> None:
        self.worker.wake()

    def _can_take(self) -> bool:
        return self.worker.can_take()

    def _publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False):
        return self.client.publish(topic, payload, qos=qos, retain=retain)

    def _alert(self, msg: dict) -> None:
        self.worker.out.alert(msg)

    def _connected(self) -> None:
        for hook in self.ready_hooks:
            hook()

    def start(self) -> None:
        self.worker.start()
        self.client.start()
        sources = ""
        if self.source_filters:
            tables = [t for t, on in (("[[sources]]", self.config.sources),
                                      ("[homeassistant]", self.config.homeassistant)) if on]
            sources = f"; {' and '.join(tables)}: {', '.join(self.source_filters)}"
        log.info("serving %s and %s%s as %s", *self.topics.subscriptions, sources,
                 self.config.broker.client_id)

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Clean shutdown; True when ``offline`` was acknowledged by the broker."""
        self.worker.stop(timeout_s)
        if self.worker.is_alive():
            log.error("the worker did not stop within %.0f s: no final checkpoint", timeout_s)
        return self.client.stop()
