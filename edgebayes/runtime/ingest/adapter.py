"""``Extract`` (what one message means for one source) and ``Adapter``, the generic JSON adapter
(``[[sources]] kind = "json"``) the ecosystem adapters build on; ``lookup`` reads a key path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from paho.mqtt.client import topic_matches_sub

from edgebayes.runtime.config import Select, SourceConfig
from edgebayes.runtime.ingest.values import availability, to_label, to_number
from edgebayes.runtime.messages import ErrorKind, ProtocolError
from edgebayes.runtime.names import device_id

_ABSENT = object()


def _pick(select: Select, doc: Any) -> Any:
    """The first block of the map ``doc`` that ``select`` chooses, or ``_ABSENT``."""
    if not isinstance(doc, dict):
        return _ABSENT
    for name, block in doc.items():
        if select.named(name) and isinstance(block, dict) and select.holds(block.get(select.key)):
            return block
    return _ABSENT


def lookup(doc: Any, path: tuple[str | Select, ...]) -> Any:
    """The value at ``path`` in a decoded JSON document, or ``_ABSENT``."""
    for key in path:
        if type(key) is Select:
            doc = _pick(key, doc)
            if doc is _ABSENT:
                return _ABSENT
        elif isinstance(doc, dict):
            doc = doc.get(key, _ABSENT)
            if doc is _ABSENT:
                return _ABSENT
        elif isinstance(doc, list) and key.isdigit() and int(key) < len(doc):
            doc = doc[int(key)]
        else:
            return _ABSENT
    return doc


@dataclass
class Extract:
    """What one message means for one source.

    ``kind``: "values" (``values`` feature -> float, NaN = no value now; ``label`` present when
    ``has_label``), "availability" (``online``), "ignored" (not data: bridge logs, announces,
    commands) or "rejected" (``reason``: an error kind of docs/protocol.md or ``no_feature``,
    ``explanation`` in words). ``device`` is the device id the values belong to, ``origin``
    the publisher (source index, topic-derived name) whose availability governs them.
    ``left_out``: mapped features absent from a message that holds all its publisher's
    sensors (``Adapter.snapshot``): missing now.
    """

    kind: str
    device: str | None = None
    origin: tuple = ()
    values: dict[str, float] = field(default_factory=dict)
    has_label: bool = False
    label: Any = None
    online: bool | None = None
    reason: str | None = None
    explanation: str = ""
    left_out: tuple[str, ...] = ()


class Adapter:
    """The generic JSON adapter (kind "json"); subclasses know one ecosystem's topics."""

    default_level: int | None = None
    #: a message may repeat the publisher's whole last-known state (see ``SourceRouter``)
    republishes_state = False

    def __init__(self, index: int, cfg: SourceConfig):
        self.index = index
        self.cfg = cfg
        self.level = cfg.device_level if cfg.device_level is not None else self.default_level
        self.label_values = dict(cfg.label_values)
        specs = [*(s for _, s in cfg.features), *([cfg.label] if cfg.label else [])]
        self.value_topics = sorted({s.topic for s in specs if s.topic is not None})

    # topics
    def data_filters(self) -> list[str]:
        return ([self.cfg.topic] if self.cfg.topic else []) + self.value_topics

    def availability_filters(self) -> list[str]:
        return [self.cfg.availability_topic] if self.cfg.availability_topic else []

    def filters(self) -> list[str]:
        return list(dict.fromkeys(self.data_filters() + self.availability_filters()))

    def classify(self, topic: str) -> str:
        """"data", "availability" or "ignored": a configured ``availability_topic`` first, then
        the kind's own topic rules (``kind_of``)."""
        if self.cfg.availability_topic and topic_matches_sub(self.cfg.availability_topic, topic):
            return "availability"
        return self.kind_of(topic)

    def kind_of(self, topic: str) -> str:
        """What a topic is by this kind's topic rules (the configured availability aside)."""
        return "ignored" if topic.endswith("/config") else "data"

    def offline(self, publisher: str) -> None:
        """Forget what this adapter keeps of ``publisher`` ("" = all of them): it went offline."""

    def publisher(self, topic: str) -> str:
        levels = topic.split("/")
        level = self.level if self.level is not None else 0
        return levels[level] if -len(levels) <= level < len(levels) else ""

    def document(self, topic: str, doc: Any) -> Any:
        """The JSON document the key paths read (Shelly overlays its deltas here)."""
        return doc

    def convert(self, doc: Any, path: tuple[str | Select, ...], value: Any) -> Any:
        """Unit normalisation for a value read at ``path`` (Tasmota)."""
        return value

    def snapshot(self, topic: str) -> bool:
        """Whether a message on ``topic`` holds every sensor of its publisher, so a mapped
        feature absent from it (a failed probe left out) is missing rather than unchanged."""
        return False

    # extraction
    def extract(self, topic: str, payload: bytes) -> Extract:
        """What the message on ``topic`` means (see ``Extract``); never raises for bad input."""
        kind = self.classify(topic)
        pub = self.publisher(topic)
        origin = (self.index, pub)
        if kind == "ignored":
            return Extract("ignored", origin=origin, explanation=f"{self.cfg.kind}: not a data topic")
        if kind == "availability":
            online = availability(payload)
            if online is None:
                return Extract("rejected", origin=origin, reason=ErrorKind.FIELD,
                               explanation=f"availability payload {bytes(payload)[:40]!r} not understood")
            return Extract("availability", origin=origin, online=online)
        device = self.cfg.device or device_id(pub)
        if not device:
            return Extract("rejected", origin=origin, reason=ErrorKind.DEVICE_ID,
                           explanation=f"no device id at level {self.level} of {topic!r}")
        out = Extract("values", device=device, origin=origin)
        doc: Any = _ABSENT
        on_main = self.cfg.topic is not None and topic_matches_sub(self.cfg.topic, topic)
        items = [*self.cfg.features, *((("\0label", self.cfg.label),) if self.cfg.label else ())]
        absent = []
        try:
            for name, spec in items:
                if (spec.topic is None and not on_main) or (
                        spec.topic is not None and not topic_matches_sub(spec.topic, topic)):
                    continue
                if spec.paths:
                    if doc is _ABSENT:
                        doc = self.document(topic, self._json(payload))
                    raw = next((v for p in spec.paths if (v := lookup(doc, p)) is not _ABSENT), _ABSENT)
                    if raw is _ABSENT:
                        absent.append(name)  # not in this message: unchanged, or missing in a snapshot
                        continue
                    raw = self.convert(doc, next(p for p in spec.paths if lookup(doc, p) is not _ABSENT), raw)
                else:
                    raw = bytes(payload).decode("utf-8", "replace")
                if name == "\0label":
                    out.has_label, out.label = True, to_label(raw, self.label_values)
                else:
                    out.values[name] = to_number(raw, name)
        except ProtocolError as exc:
            return Extract("rejected", device=device, origin=origin, reason=exc.kind, explanation=str(exc))
        if not out.values and not out.has_label:
            keys = f" (its keys: {', '.join(list(doc)[:20])})" if isinstance(doc, dict) else ""
            return Extract("rejected", device=device, origin=origin, reason="no_feature",
                           explanation=f"no mapped feature or label{keys}")
        if self.snapshot(topic):
            out.left_out = tuple(name for name in absent if name != "\0label")
        return out

    @staticmethod
    def _json(payload: bytes) -> Any:
        try:
            return json.loads(bytes(payload))
        except ValueError as exc:
            raise ProtocolError(ErrorKind.DECODE, f"payload is not JSON: {exc}") from None
