"""Wire values as feature values, labels and availability, for the ``[[sources]]`` adapters.

Values: JSON numbers; numbers sent as strings (``"100.00"``); booleans and ``ON``/``OFF``,
``true``/``false`` as 1/0; ``nan``, ``None``, ``null``, ``unavailable``, ``unknown`` and
empty payloads as "no value now" (the feature is missing, NaN, in the reading that message
makes, and the message's label still labels it), and so is a mapped feature left out of a
Tasmota ``SENSOR`` message that holds another mapped value or the label (Tasmota leaves a
probe that failed out of the message); any other text is refused
(kind ``field``), +/-inf too (``not_finite``), and a magnitude above 1e100 (``out_of_range``,
the learners' bound). Tasmota temperatures in Fahrenheit and pressures in mmHg/inHg are
converted to °C and hPa from the message's ``TempUnit`` and ``PressureUnit``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from edgebayes.base import InputError, check_label, to_float
from edgebayes.runtime.messages import ErrorKind, ProtocolError

#: texts that mean "the sensor has no value now" (ESPHome nan/None, HA unavailable/unknown)
NO_VALUE = frozenset({"", "nan", "-nan", "none", "null", "unavailable", "unknown"})
_ON, _OFF = frozenset({"on", "true"}), frozenset({"off", "false"})
_ONLINE = frozenset({"online", "true", "1", "connected"})
_OFFLINE = frozenset({"offline", "false", "0", "disconnected"})


def _text(v: str) -> str:
    s = v.strip()
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':  # JSON-encoded string (HA statestream attributes)
        s = s[1:-1].strip()
    return s


def to_number(v: Any, name: str) -> float:
    """A feature value as a float; NaN for "no value now".

    Raises:
        ProtocolError: ``field`` for text that is no number (a text sensor), a map or a list;
            ``not_finite`` or ``out_of_range`` by the learners' rule (`edgebayes.base.to_float`).
    """
    if v is None:
        return math.nan
    t = type(v)
    if t is bool:
        return 1.0 if v else 0.0
    if t is str:
        s = _text(v)
        low = s.lower()
        if low in NO_VALUE:
            return math.nan
        if low in _ON:
            return 1.0
        if low in _OFF:
            return 0.0
        try:
            v = float(s)
        except ValueError:
            raise ProtocolError(ErrorKind.FIELD, f"feature {name!r}: {s[:40]!r} is not a number") from None
    elif t is not int and t is not float:
        raise ProtocolError(ErrorKind.FIELD, f"feature {name!r} must be a number, got {t.__name__}")
    try:
        return to_float(v, f"feature {name!r}")
    except InputError as exc:
        raise ProtocolError(exc.kind, str(exc)) from None


def to_label(v: Any, values: dict) -> Any:
    """A label value mapped through ``label_values``; None for "no value now".

    Raises:
        ProtocolError: ``field`` for a value absent from a non-empty ``label_values``, or a
            value that cannot be a label (a map, a list, a fraction).
    """
    if v is None:
        return None
    if type(v) is bool:
        key = "true" if v else "false"
    elif type(v) is str:
        key = _text(v)
        if key.lower() in NO_VALUE:
            return None
    elif type(v) is int or (type(v) is float and v.is_integer()):
        key = str(int(v))
    else:
        raise ProtocolError(ErrorKind.FIELD, f"label value {str(v)[:40]!r} cannot be a label")
    if values:
        if key not in values:
            raise ProtocolError(ErrorKind.FIELD, f"label value {key[:40]!r} is not in label_values "
                                         f"({', '.join(map(repr, values))})")
        return values[key]
    y = int(key) if type(v) is int or type(v) is float else key
    try:
        check_label(y)  # the learners' rule: a 64-bit int, a str of valid Unicode
    except ValueError as exc:
        raise ProtocolError(ErrorKind.FIELD, f"label value {key[:40]!r}: {exc}") from None
    return y


def availability(payload: bytes) -> bool | None:
    """True (online), False (offline) or None (not understood) for an availability payload:
    ``online``/``Online``/``true``/``offline``/``false`` text, ``{"state": ...}`` or
    ``{"online": bool}`` JSON."""
    text = bytes(payload).decode("utf-8", "replace").strip()
    if text.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            return None
        v = doc.get("state", doc.get("online")) if isinstance(doc, dict) else None
        text = str(v).lower() if isinstance(v, (str, bool)) else ""
    low = _text(text).lower()
    return True if low in _ONLINE else False if low in _OFFLINE else None
