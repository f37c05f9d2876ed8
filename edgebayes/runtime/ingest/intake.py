"""``Intake``: every incoming MQTT message as what the worker takes, readings, labels and refusals.

A message on the edgebayes protocol's topics (``Topics.route``) is parsed (``native.Parser``);
one on a topic given a handler (Home Assistant's birth message, the runtime's own retained
discovery configs) goes to that handler, and makes nothing; one on a ``[[sources]]`` topic goes
through the ``SourceRouter``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from paho.mqtt.client import topic_matches_sub

from edgebayes.runtime.config import Config
from edgebayes.runtime.ingest.native import Parser
from edgebayes.runtime.ingest.router import SourceRouter
from edgebayes.runtime.messages import ErrorKind, ProtocolError, Refusal, Retained
from edgebayes.runtime.topics import Topics

log = logging.getLogger(__name__)


class Intake:
    """Turns incoming messages into ``(item, topic)`` pairs for the worker (worker thread).

    Args:
        config: the runtime's config (``schema``, ``queue``, ``sources``, ``assembler``).
        topics: the runtime's topics (the edgebayes protocol's are routed here).
        handlers: topic filter -> ``handler(topic, payload)`` for messages that are no input.
        on_offline: ``on_offline(device, seq)`` when a source's availability topic takes a device
            offline (``SourceRouter``).

    ``filters``: the topic filters to subscribe besides the protocol's own (the sources' and
    the handlers' topics); ``sources``: the ``SourceRouter``, or None without ``[[sources]]``
    and handlers.
    """

    def __init__(self, config: Config, topics: Topics,
                 handlers: dict[str, Callable[[str, bytes], None]] | None = None,
                 on_offline: Callable[[str, int], None] | None = None):
        self.topics = topics
        self.parser = Parser(config.schema.features, config.schema.label, config.queue.max_payload_bytes)
        self._as_written: tuple[Parser, list[int | None]] | None = None  # replay_as: (parser, schema index -> its)
        self.handlers = dict(handlers or {})
        # with handlers (HA discovery) too, so the metrics hold ``sources`` whenever either is on
        self.sources = SourceRouter(config, on_offline) if config.sources or self.handlers else None
        source_filters = self.sources.filters if self.sources is not None else []
        self.filters = list(dict.fromkeys([*source_filters, *self.handlers]))

    def handle(self, topic: str, payload: bytes) -> list[tuple]:
        """What one message makes: ``(item, topic)`` pairs, ``item`` a ``Reading``, a ``Label``
        or a ``Refusal``, in the order the worker takes them."""
        try:
            route = self.topics.route(topic)
        except ProtocolError as exc:
            return [(Refusal(None, exc), topic)]
        if route is None:
            handler = self._handler(topic)
            if handler is not None:
                handler(topic, payload)
                return []
            out = self.sources.handle(topic, payload) if self.sources is not None else None
            if out is None:
                log.warning("message on unexpected topic %s ignored", topic)
                return []
            return out
        kind, device = route
        try:
            if type(payload) is Retained:  # readings are never retained: this one may be any age
                raise ProtocolError(ErrorKind.RETAINED, f"a retained {kind} is stale (the broker keeps it for new "
                                    "subscribers); publish readings and labels with retain off")
            if kind == "label":
                item = self.parser.parse_label(device, payload)
            elif self._as_written is None:
                item = self.parser.parse_reading(device, payload)
            else:
                parser, where = self._as_written
                item = parser.parse_reading(device, payload)
                item.x = [math.nan if i is None else item.x[i] for i in where]
        except ProtocolError as exc:
            return [(Refusal(device, exc), topic)]
        return [(item, topic)]

    def replay_as(self, features: list[str] | None) -> None:
        """Parse protocol readings as written under ``features`` (a journal of the last run,
        written before ``[schema] features`` was edited: a list ``x`` is in that order), their
        values taken into the schema's order by name: a feature added since is missing (NaN),
        one removed is dropped. None, or the schema's own features: parse as usual."""
        if features is None or list(features) == list(self.parser.features):
            self._as_written = None
            return
        parser = Parser(tuple(features), self.parser.label_key, self.parser.max_payload_bytes)
        self._as_written = parser, [parser.index.get(name) for name in self.parser.features]

    def _handler(self, topic: str) -> Callable[[str, bytes], None] | None:
        """The handler whose filter ``topic`` matches (an exact topic first), or None."""
        handler = self.handlers.get(topic)
        if handler is None:
            handler = next((h for f, h in self.handlers.items() if topic_matches_sub(f, topic)), None)
        return handler

    def journaled(self, topic: str) -> bool:
        """Whether a message on ``topic`` is input the worker journals: a protocol reading or
        label, or a ``[[sources]]`` data or availability message (not a handler's topic, not
        one a source ignores, not a topic refused for its device id)."""
        try:
            if self.topics.route(topic) is not None:
                return True
        except ProtocolError:
            return False
        return self._handler(topic) is None and self.sources is not None and self.sources.reads(topic)

    def tick(self) -> list[tuple]:
        """The readings due now (``[assembler] interval_s``), as ``handle`` gives them."""
        return self.sources.tick() if self.sources is not None else []

    def metrics(self) -> dict:
        """The metrics of the input side: ``sources`` counts with ``[[sources]]`` or handlers."""
        return {"sources": dict(self.sources.counts)} if self.sources is not None else {}
