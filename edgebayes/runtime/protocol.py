"""The wire protocol (docs/protocol.md): topic names, and validation of readings and labels.

``Topics`` names every topic and routes an incoming topic to ``("reading" | "label", device)``
with paho's ``topic_matches_sub`` (casebook C32: a filter like ``test/6/#`` must not match
``test/3``). ``Parser`` turns a payload into a clean ``Reading`` or ``Label``, or raises
``ProtocolError`` whose ``kind`` names what was wrong; nothing it refuses reaches a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from paho.mqtt.client import topic_matches_sub

from edgebayes.base import InputError, check_label, to_float, to_floats
from edgebayes.codec import DecodeError, decode
from edgebayes.runtime.names import NAME_RE

#: ``ProtocolError.kind`` values (docs/protocol.md, "Error report")
ERROR_KINDS = (
    "oversize", "decode", "not_a_map", "field", "vector_length", "not_finite", "out_of_range",
    "unknown_feature", "device_id", "duplicate", "seq_jump", "ts_ahead", "unknown_seq",
    "device_limit", "label_type", "retained", "internal", "class_limit", "learner_error",
)

#: ``seq`` is below 2**53 (exact in a double, so in any JSON reader); int labels are 64-bit
#: (`edgebayes.base.check_label`; docs/protocol.md "Reading")
SEQ_LIMIT = 2**53
#: how far a reading's ``seq`` may run ahead of its device's last accepted one: this many, plus
#: `SEQ_PER_S` per second since that reading arrived (docs/protocol.md "Seq and ts bounds")
SEQ_JUMP = 2**16
SEQ_PER_S = 10_000
#: how far (seconds) a reading's ``ts`` may be ahead of the runtime's clock when it arrives
TS_AHEAD_S = 86_400.0

_NUMBER_TYPES = frozenset({float, int})


class Retained(bytes):
    """A payload the broker delivered because it was retained (it may be arbitrarily old)."""


class ProtocolError(InputError):
    """A message the runtime refuses. ``kind`` is one of ``ERROR_KINDS``; ``seq`` if it was read."""

    def __init__(self, kind: str, message: str, seq: int | None = None):
        super().__init__(kind, message)
        self.seq = seq


@dataclass(slots=True)
class Reading:
    """A validated reading: ``x`` holds ``n_features`` floats in schema order (NaN = missing)."""

    device: str
    seq: int
    ts: float | None
    x: list[float]
    y: Any  # str | int | None


@dataclass(slots=True)
class Label:
    """A validated delayed label for reading ``seq`` of ``device``."""

    device: str
    seq: int
    y: Any  # str | int


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
            raise ProtocolError("device_id", f"device id {device[:80]!r} is not 1-64 characters from [A-Za-z0-9_-]")
        return kind, device


def _seq_field(msg: dict) -> int:
    v = msg.get("seq")
    if type(v) is not int or not 0 <= v < SEQ_LIMIT:
        raise ProtocolError("field", f"'seq' must be an int in [0, 2**53), got {_short(v)}" if "seq" in msg
                            else "'seq' is missing")
    return v


def _short(v: Any) -> str:
    """``repr(v)`` cut to 80 characters (an int of 10,000 digits is not echoed whole)."""
    r = repr(v) if type(v) is not int else str(v) if v.bit_length() < 256 else f"an int of {v.bit_length()} bits"
    return r if len(r) <= 80 else r[:77] + "..."


def _label_field(msg: dict, key: str, seq: int, required: bool) -> Any:
    y = msg.get(key)
    if y is None:
        if required:
            raise ProtocolError("field", f"label '{key}' is missing", seq)
        return None
    if type(y) is not str and type(y) is not int:
        raise ProtocolError("field", f"label '{key}' must be a str or an int, got {type(y).__name__}", seq)
    try:
        check_label(y)  # the learners' rule: an int of 64 bits, a str of valid Unicode (no lone surrogate)
    except ValueError as exc:
        raise ProtocolError("field", f"label '{key}': {exc}", seq) from None
    return y


class Parser:
    """Validates readings and labels against the schema.

    Args:
        features: the ordered feature names (``[schema] features``).
        label_key: the payload key holding the label (``[schema] label``, default "y").
        max_payload_bytes: longer payloads are refused unread.
    """

    def __init__(self, features: tuple[str, ...], label_key: str = "y", max_payload_bytes: int = 65536):
        self.features = tuple(features)
        self.index = {name: i for i, name in enumerate(self.features)}
        self.label_key = label_key
        self.max_payload_bytes = max_payload_bytes

    def _decode(self, payload: bytes) -> dict:
        if len(payload) > self.max_payload_bytes:
            raise ProtocolError("oversize", f"payload of {len(payload)} bytes exceeds {self.max_payload_bytes}")
        try:
            msg = decode(payload)
        except DecodeError as exc:
            raise ProtocolError("decode", str(exc)) from None
        if not isinstance(msg, dict):
            raise ProtocolError("not_a_map", f"payload is a {type(msg).__name__}, not a map")
        return msg

    def _vector(self, x: Any, seq: int) -> list[float]:
        if isinstance(x, list):
            if len(x) != len(self.features):
                raise ProtocolError("vector_length", f"'x' holds {len(x)} values, the schema {len(self.features)}", seq)
            if not _NUMBER_TYPES.issuperset(map(type, x)):  # set ops in C: the per-reading hot path
                for name, v in zip(self.features, x):
                    self._number(v, name, seq)  # raises, naming the feature
            try:
                return to_floats(x, self.features)[0]
            except InputError as exc:
                raise ProtocolError(exc.kind, str(exc), seq) from None
        if isinstance(x, dict):
            out = [math.nan] * len(self.features)
            for name, v in x.items():
                i = self.index.get(name)
                if i is None:
                    raise ProtocolError("unknown_feature", f"feature {str(name)[:80]!r} is not in the schema", seq)
                out[i] = self._number(v, name, seq)
            return out
        raise ProtocolError("field", "'x' is missing" if x is None else
                            f"'x' must be a list or a map, got {type(x).__name__}", seq)

    @staticmethod
    def _number(v: Any, name: str, seq: int) -> float:
        """A feature value by the learners' rule (`edgebayes.base.to_float`); JSON ``true`` is no number."""
        t = type(v)
        if t is not float and t is not int:
            raise ProtocolError("field", f"feature {name!r} must be a number, got {t.__name__}", seq)
        try:
            return to_float(v, f"feature {name!r}")
        except InputError as exc:
            raise ProtocolError(exc.kind, str(exc), seq) from None

    def parse_reading(self, device: str, payload: bytes) -> Reading:
        """A clean ``Reading``, or ``ProtocolError`` naming the problem (see docs/protocol.md)."""
        msg = self._decode(payload)
        seq = _seq_field(msg)
        ts = msg.get("ts")
        if ts is not None:
            if type(ts) is int:
                try:
                    ts = float(ts)
                except OverflowError:  # an int beyond a double
                    raise ProtocolError("field", f"'ts' must be a finite number, got {_short(ts)}", seq) from None
            if type(ts) is not float or not math.isfinite(ts):
                raise ProtocolError("field", f"'ts' must be a finite number, got {_short(ts)}", seq)
        x = self._vector(msg.get("x"), seq)
        return Reading(device, seq, ts, x, _label_field(msg, self.label_key, seq, required=False))

    def parse_label(self, device: str, payload: bytes) -> Label:
        """A clean ``Label``, or ``ProtocolError`` naming the problem."""
        msg = self._decode(payload)
        seq = _seq_field(msg)
        return Label(device, seq, _label_field(msg, self.label_key, seq, required=True))
