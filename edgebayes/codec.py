"""Payload encoding for MQTT messages and checkpoints: msgpack by default, JSON accepted.

Readings may arrive as msgpack or JSON; ``decode`` tells them apart by the first byte (a JSON
document starts with ``{`` or ``[`` or white space, which no msgpack map or array does).
``encode`` turns numpy scalars and arrays into plain numbers and lists first, so a prediction
holding a ``numpy.float32`` or ``numpy.int64`` is never refused (docs/cases.md C39), and msgpack
always writes str as str and bytes as bin (``use_bin_type``), so decoding never mixes them up
(docs/cases.md C41).
"""

from __future__ import annotations

import json
from typing import Any

import msgpack
import numpy as np

FORMATS = ("msgpack", "json")


class DecodeError(ValueError):
    """A payload that is neither valid msgpack nor valid JSON."""


def _plain(obj: Any) -> Any:
    """A msgpack/JSON-ready copy of ``obj``: numpy scalars and arrays become Python values."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"cannot encode {type(obj).__name__}")


def encode(obj: Any, fmt: str = "msgpack") -> bytes:
    """Encode ``obj`` as ``fmt`` ("msgpack" or "json").

    Raises:
        ValueError: unknown format. TypeError: an object neither format can hold.
    """
    if fmt == "msgpack":
        return msgpack.packb(obj, use_bin_type=True, default=_plain)
    if fmt == "json":
        return json.dumps(obj, default=_plain, separators=(",", ":"), allow_nan=True).encode()
    raise ValueError(f"unknown payload format {fmt!r}; use one of {FORMATS}")


def sniff(payload: bytes) -> str:
    """"json" when the payload looks like a JSON document, else "msgpack"."""
    head = payload[:1]
    return "json" if head in (b"{", b"[", b" ", b"\n", b"\r", b"\t") else "msgpack"


def decode(payload: bytes, max_bytes: int | None = None) -> Any:
    """Decode a msgpack or JSON payload (sniffed from its first byte).

    Raises:
        DecodeError: empty, oversize (over ``max_bytes``), truncated or otherwise invalid
            payload, or one past a decoder limit: nesting deeper than the decoder takes (JSON:
            about 1,000 levels, Python's recursion limit; msgpack: 1,024), a JSON int of more
            than 4,300 digits (``sys.get_int_max_str_digits``), a msgpack length beyond the
            payload's own.
    """
    if not payload:
        raise DecodeError("empty payload")
    if max_bytes is not None and len(payload) > max_bytes:
        raise DecodeError(f"payload of {len(payload)} bytes exceeds the limit of {max_bytes}")
    if sniff(payload) == "json":
        try:
            return json.loads(payload)
        except RecursionError:
            raise DecodeError("invalid JSON: nested too deep") from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an int of too many digits
            raise DecodeError(f"invalid JSON: {exc}") from None
    try:
        return msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except (msgpack.UnpackException, ValueError, TypeError) as exc:  # StackError: nested too deep
        text = _text(payload)
        if text is not None:  # e.g. Tasmota's or a shell's plain "21.5" on a reading topic
            raise DecodeError(f"a text payload that is not JSON ({text!r:.60}): a reading or label is a JSON "
                              "object or a msgpack map") from None
        raise DecodeError(f"invalid msgpack: {type(exc).__name__}" + (f": {exc}" if str(exc) else "")) from None


def _text(payload: bytes) -> str | None:
    """``payload`` as text if it is printable UTF-8, else None (binary: msgpack)."""
    try:
        text = payload.decode()
    except UnicodeDecodeError:
        return None
    text = text.strip()
    return text if text and text.isprintable() else None
