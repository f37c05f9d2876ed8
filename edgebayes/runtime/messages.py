"""The messages between the input side and the worker (docs/protocol.md).

``Reading`` and ``Label`` are what ``edgebayes.runtime.ingest`` makes of incoming MQTT
messages, validated, and all the worker ever learns from; ``ProtocolError`` is a refusal
(its ``kind`` an ``ErrorKind``), reported on an error topic; ``Retained`` marks a
payload the broker delivered as retained. ``SEQ_*`` and ``TS_AHEAD_S`` bound a reading's
``seq`` and ``ts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from edgebayes.base import InputError


class ErrorKind(StrEnum):
    """What was wrong with a message: the ``kind`` of an error report (docs/protocol.md "Error
    report"); each member is its wire string."""

    OVERSIZE = "oversize"
    DECODE = "decode"
    NOT_A_MAP = "not_a_map"
    FIELD = "field"
    VECTOR_LENGTH = "vector_length"
    NOT_FINITE = "not_finite"
    OUT_OF_RANGE = "out_of_range"
    UNKNOWN_FEATURE = "unknown_feature"
    DEVICE_ID = "device_id"
    DUPLICATE = "duplicate"
    SEQ_JUMP = "seq_jump"
    TS_AHEAD = "ts_ahead"
    UNKNOWN_SEQ = "unknown_seq"
    DEVICE_LIMIT = "device_limit"
    LABEL_TYPE = "label_type"
    RETAINED = "retained"
    INTERNAL = "internal"
    CLASS_LIMIT = "class_limit"
    LEARNER_ERROR = "learner_error"
    CHECKPOINT_UNREADABLE = "checkpoint_unreadable"
    CHECKPOINT_REFUSED = "checkpoint_refused"
    TOO_FEW_VALUES = "too_few_values"
    DEVICE_ID_TAKEN = "device_id_taken"


#: the wire strings of every ``ErrorKind``
ERROR_KINDS = tuple(k.value for k in ErrorKind)
#: kinds counted as malformed input in the metrics (``n_malformed``); the others are
#: protocol-level refusals
MALFORMED = frozenset({
    ErrorKind.OVERSIZE, ErrorKind.DECODE, ErrorKind.NOT_A_MAP, ErrorKind.FIELD, ErrorKind.VECTOR_LENGTH,
    ErrorKind.NOT_FINITE, ErrorKind.OUT_OF_RANGE, ErrorKind.UNKNOWN_FEATURE, ErrorKind.DEVICE_ID,
})

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
    """A message the runtime refuses: ``kind`` (an ``ErrorKind``, or its wire string) and
    ``seq`` if it was read.

    Raises:
        ValueError: ``kind`` is not an ``ErrorKind``.
    """

    def __init__(self, kind: ErrorKind | str, message: str, seq: int | None = None):
        super().__init__(ErrorKind(kind), message)
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
