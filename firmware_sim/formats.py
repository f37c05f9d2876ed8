"""The payload shapes of existing firmware, so the runtime's ``[[sources]]`` adapters can be
run without hardware (``firmware-sim run --format tasmota|zigbee2mqtt|esphome|shelly``).

Per sample (``x`` in schema order, NaN = missing), for device ``<d>``:

| format | reading | label (its own topic) |
|---|---|---|
| tasmota | ``tele/<d>/SENSOR`` ``{"Time", "<sensor>": {field: value}, "TempUnit": "C"}`` (NaN as null, like a failed read; ``SimConfig.sensor``, default ``SIM``, and ``fields``, default the feature names) | ``stat/<d>/RESULT`` ``{"Var1": y}`` (a ``Var1`` command's answer), or with ``SimConfig.switch`` its state in the ``SENSOR`` message: ``"Switch1": "ON"`` for 1, ``"OFF"`` for 0 |
| zigbee2mqtt | ``zigbee2mqtt/<d>`` ``{feature: value, ..., "linkquality": 120}`` (NaN as null) | ``zigbee2mqtt/<d>_label`` ``{"action": y}`` (a remote's action) |
| esphome | ``<d>/sensor/<object_id>/state`` plain text per feature (``nan`` when missing) | ``<d>/sensor/label/state`` plain text (a text sensor) |
| shelly | ``<d>/events/rpc`` Gen2 ``NotifyStatus`` with virtual components ``number:200``, ``number:201``, ... ``{"value": v}`` | ``<d>/status/text:200`` ``{"id": 200, "value": y}`` |

``object_id`` is the feature name in lower case with other characters than ``[a-z0-9]``
turned into ``_`` (as ESPHome does). These messages carry no ``seq``: with ``labels="inline"``
the label message goes out just before its reading (the label state the runtime applies to
the next readings, ``label_window_after_s``); with ``labels="delayed"`` it follows the reading
``label_delay_s`` later (``label_window_before_s``). A malformed reading is sent truncated.
Values keep their full precision (``repr``), so a run can be compared exactly with an offline
model. ``read_back`` tells the monitor what such a message was (``firmware-sim monitor --format``).
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass

FORMATS = ("tasmota", "zigbee2mqtt", "esphome", "shelly")
_OBJECT_ID = re.compile(r"[^a-z0-9]")


def object_id(name: str) -> str:
    """ESPHome's object id of an entity name: lower case, other characters as ``_``."""
    return _OBJECT_ID.sub("_", name.lower())


def _json(doc) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def _value(v: float):
    return None if math.isnan(v) else v


def switch_state(y) -> str:
    """A 0/1 label as a Tasmota switch state. Raises ValueError: another label."""
    if type(y) is int and y in (0, 1):
        return "ON" if y else "OFF"
    raise ValueError(f"a switch state needs a 0/1 label, got {y!r}")


def reading(fmt: str, device: str, names, values: list[float], ts: float, sensor: str = "SIM",
            switch: tuple[str, str] | None = None) -> list[tuple[str, bytes]]:
    """The (topic, payload) pairs of one sample in ``fmt``; for "tasmota", ``names`` are the
    keys in the ``sensor`` block and ``switch`` a (name, state) pair added to the message."""
    if fmt == "tasmota":
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ts))
        block = {n: _value(v) for n, v in zip(names, values)}
        doc = {"Time": stamp, sensor: block, **dict([switch] if switch else []), "TempUnit": "C"}
        return [(f"tele/{device}/SENSOR", _json(doc))]
    if fmt == "zigbee2mqtt":
        return [(f"zigbee2mqtt/{device}", _json({**{n: _value(v) for n, v in zip(names, values)}, "linkquality": 120}))]
    if fmt == "esphome":
        return [(f"{device}/sensor/{object_id(n)}/state", ("nan" if math.isnan(v) else repr(v)).encode())
                for n, v in zip(names, values)]
    if fmt == "shelly":
        params = {"ts": round(ts, 2), **{f"number:{200 + j}": {"id": 200 + j, "value": _value(v)}
                                         for j, v in enumerate(values)}}
        return [(f"{device}/events/rpc", _json({"src": device, "dst": f"{device}/events",
                                                "method": "NotifyStatus", "params": params}))]
    raise ValueError(f"unknown format {fmt!r}")


def label(fmt: str, device: str, y) -> tuple[str, bytes]:
    """The (topic, payload) of a label in ``fmt``."""
    if fmt == "tasmota":
        return f"stat/{device}/RESULT", _json({"Var1": y})
    if fmt == "zigbee2mqtt":
        return f"zigbee2mqtt/{device}_label", _json({"action": y})
    if fmt == "esphome":
        return f"{device}/sensor/label/state", str(y).encode()
    if fmt == "shelly":
        return f"{device}/status/text:200", _json({"id": 200, "value": y})
    raise ValueError(f"unknown format {fmt!r}")


def publications(device, m, ts: float) -> list[tuple[str, bytes]]:
    """What ``device`` (a `firmware_sim.device.Device`) publishes for script entry ``m``."""
    c = device.config
    fmt = c.format
    if m.kind == "label":
        return [label(fmt, m.device, m.y)]
    y = m.y.item() if hasattr(m.y, "item") else m.y
    inline = m.labelled and c.labels == "inline"
    out = [label(fmt, m.device, y)] if inline and c.switch is None else []
    switch = (c.switch, switch_state(y)) if inline and c.switch is not None else None
    pubs = reading(fmt, m.device, c.fields or device.schema.feature_names, m.x.tolist(), ts, c.sensor, switch)
    if m.delivery == "malformed":
        pubs = [(t, p[: max(1, int(len(p) * m.detail))]) for t, p in pubs]
    return out + pubs


# --- reading them back (the monitor) ---------------------------------------------------------

#: what the monitor subscribes to, per format, to see the readings and labels of `publications`
MONITOR_TOPICS = {"tasmota": ("tele/+/SENSOR", "stat/+/RESULT"), "zigbee2mqtt": ("zigbee2mqtt/+",),
                  "esphome": ("+/sensor/+/state",), "shelly": ("+/events/rpc", "+/status/text:200")}


@dataclass(frozen=True)
class Seen:
    """One message of `publications` read back: ``kind`` "reading", "label" or "malformed";
    ``device``; the label ``y`` when ``has_y`` (a label, or a Tasmota switch state in the
    reading); ``part``: the feature a one-value-per-topic reading (ESPHome) carries."""

    kind: str
    device: str
    y: object = None
    has_y: bool = False
    part: str | None = None


def _doc(payload: bytes):
    try:
        doc = json.loads(payload)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def read_back(fmt: str, topic: str, payload: bytes, switch: str | None = None) -> Seen | None:
    """What a message on one of ``MONITOR_TOPICS[fmt]`` is, as `reading` and `label` made it;
    None for another message there (a Tasmota ``RESULT`` without ``Var1``, a Shelly event
    without status). ``switch``: the Tasmota switch whose state (``ON``, ``OFF``) is the label."""
    levels = topic.split("/")
    device = levels[1] if fmt in ("tasmota", "zigbee2mqtt") else levels[0]
    if fmt == "esphome":
        text = bytes(payload).decode("utf-8", "replace")
        if levels[2] == "label":
            return Seen("label", device, text, True)
        try:
            float(text)
        except ValueError:
            return Seen("malformed", device)
        return Seen("reading", device, part=levels[2])
    doc = _doc(payload)
    is_label = (fmt == "tasmota" and levels[-1] == "RESULT") or (fmt == "zigbee2mqtt" and device.endswith("_label")) \
        or (fmt == "shelly" and levels[-1] == "text:200")
    if is_label:
        key = {"tasmota": "Var1", "zigbee2mqtt": "action", "shelly": "value"}[fmt]
        if doc is None or key not in doc:
            return None
        return Seen("label", device.removesuffix("_label") if fmt == "zigbee2mqtt" else device, doc[key], True)
    if doc is None:
        return Seen("malformed", device)
    if fmt == "shelly" and doc.get("method") != "NotifyStatus":
        return None
    if fmt == "tasmota" and switch is not None:
        state = doc.get(switch)
        return Seen("reading", device, state, state is not None)
    return Seen("reading", device)
