"""The messages between the input side and the worker (docs/protocol.md).

``Reading`` and ``Label`` are what ``edgebayes.runtime.ingest`` makes of incoming MQTT
messages, validated, and all the worker ever learns from; ``ProtocolError`` is a refusal
(its ``kind`` is one of ``ERROR_KINDS``), reported on an error topic; ``Retained`` marks a
payload the broker delivered as retained. ``SEQ_*`` and ``TS_AHEAD_S`` bound a reading's
``seq`` and ``ts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgebayes.base import InputError

#: ``ProtocolError.kind`` values (docs/protocol.md, "Error report")
ERROR_KINDS = (
    "oversize", "decode", "not_a_map", "field", "vector_length", "not_finite", "out_of_range",
    "unknown_feature", "device_id", "duplicate", "seq_jump", "ts_ahead", "unknown_seq",
    "device_limit", "label_type", "retained", "internal", "class_limit", "learner_error",
    "checkpoint_unreadable", "checkpoint_refused",
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


@dataclass(slots=True)
class Refusal:
    """A message the runtime refuses, to report on ``device``'s error topic (None: on the
    runtime's own, when no device can be named)."""

    device: str | None
    error: ProtocolError
