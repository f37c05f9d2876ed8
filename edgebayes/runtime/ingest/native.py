"""The edgebayes protocol (docs/protocol.md): ``Parser`` turns a reading or label payload into a
clean ``Reading`` or ``Label``, or raises ``ProtocolError`` whose ``kind`` names what was
wrong; nothing it refuses reaches a model. ``EdgebayesProtocol`` is the adapter of a
``[[sources]] kind = "edgebayes"`` entry: the same protocol under another prefix.
"""

from __future__ import annotations

import math
from typing import Any

from edgebayes.base import InputError, check_label, to_float, to_floats
from edgebayes.codec import DecodeError, decode
from edgebayes.runtime.ingest.adapter import Adapter
from edgebayes.runtime.messages import SEQ_LIMIT, ErrorKind, Label, ProtocolError, Reading

_NUMBER_TYPES = frozenset({float, int})


def _seq_field(msg: dict) -> int:
    v = msg.get("seq")
    if type(v) is not int or not 0 <= v < SEQ_LIMIT:
        raise ProtocolError(ErrorKind.FIELD, f"'seq' must be an int in [0, 2**53), got {_short(v)}" if "seq" in msg
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
            raise ProtocolError(ErrorKind.FIELD, f"label '{key}' is missing", seq)
        return None
    if type(y) is not str and type(y) is not int:
        raise ProtocolError(ErrorKind.FIELD, f"label '{key}' must be a str or an int, got {type(y).__name__}", seq)
    try:
        check_label(y)  # the learners' rule: an int of 64 bits, a str of valid Unicode (no lone surrogate)
    except ValueError as exc:
        raise ProtocolError(ErrorKind.FIELD, f"label '{key}': {exc}", seq) from None
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
            raise ProtocolError(ErrorKind.OVERSIZE, f"payload of {len(payload)} bytes exceeds {self.max_payload_bytes}")
        try:
            msg = decode(payload)
        except DecodeError as exc:
            raise ProtocolError(ErrorKind.DECODE, str(exc)) from None
        if not isinstance(msg, dict):
            raise ProtocolError(ErrorKind.NOT_A_MAP, f"payload is a {type(msg).__name__}, not a map")
        return msg

    def _vector(self, x: Any, seq: int) -> list[float]:
        if isinstance(x, list):
            if len(x) != len(self.features):
                raise ProtocolError(ErrorKind.VECTOR_LENGTH,
                                    f"'x' holds {len(x)} values, the schema {len(self.features)}", seq)
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
                    raise ProtocolError(ErrorKind.UNKNOWN_FEATURE,
                                        f"feature {str(name)[:80]!r} is not in the schema", seq)
                out[i] = self._number(v, name, seq)
            return out
        raise ProtocolError(ErrorKind.FIELD, "'x' is missing" if x is None else
                            f"'x' must be a list or a map, got {type(x).__name__}", seq)

    @staticmethod
    def _number(v: Any, name: str, seq: int) -> float:
        """A feature value by the learners' rule (`edgebayes.base.to_float`); JSON ``true`` is no number."""
        t = type(v)
        if t is not float and t is not int:
            raise ProtocolError(ErrorKind.FIELD, f"feature {name!r} must be a number, got {t.__name__}", seq)
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
                    raise ProtocolError(ErrorKind.FIELD,
                                        f"'ts' must be a finite number, got {_short(ts)}", seq) from None
            if type(ts) is not float or not math.isfinite(ts):
                raise ProtocolError(ErrorKind.FIELD, f"'ts' must be a finite number, got {_short(ts)}", seq)
        x = self._vector(msg.get("x"), seq)
        return Reading(device, seq, ts, x, _label_field(msg, self.label_key, seq, required=False))

    def parse_label(self, device: str, payload: bytes) -> Label:
        """A clean ``Label``, or ``ProtocolError`` naming the problem."""
        msg = self._decode(payload)
        seq = _seq_field(msg)
        return Label(device, seq, _label_field(msg, self.label_key, seq, required=True))


class EdgebayesProtocol(Adapter):
    """Our own protocol under another prefix: ``<topic>/<device>/reading`` and ``/label``."""

    def data_filters(self):
        return [f"{self.cfg.topic}/+/reading", f"{self.cfg.topic}/+/label"]

    def publisher(self, topic):
        return topic.split("/")[-2]
