"""Input adapters: the runtime reads what existing sensors already publish (``[[sources]]``).

Each ``[[sources]]`` entry names an ecosystem (``kind``), the topics to read, how the device id
comes from the topic, where each feature's value lives and, optionally, where the label comes
from. Its adapter turns one MQTT message into an ``Extract`` (feature values, a label value,
an availability change, or a counted rejection with its reason); the ``SourceRouter`` then
drops stale retained values and repeated publishes, feeds the ``Assembler`` (one reading per
device from values arriving on several topics) and hands the resulting ``Reading``/``Label``
objects to the worker's own reading and label path: test-then-train, pending labels, drift
and checkpoints are the same as for the edgebayes protocol (docs/protocol.md).

Config (keys with defaults; ``-`` = required)::

    [[sources]]   kind=- ("edgebayes" | "zigbee2mqtt" | "tasmota" | "esphome" | "shelly" | "json")
                  topic=None (filter of the messages whose JSON payload holds the features;
                      for "edgebayes": the protocol prefix)
                  device=None (a fixed device id for everything this source reads) or
                  device_level=<per kind> (index of the topic level naming the device; negative
                      counts from the end; the level is made a device id by turning characters
                      outside [A-Za-z0-9_-] into "_")
                  availability_topic=None (an extra availability filter; "json" has no other)
                  features={} (feature name -> where its value lives, see below)
                  label=None (where the label lives, same forms as a feature)
                  label_values={} (wire value as text -> label: "ON", "true", "1", "idle")
                  label_window_before_s=0 (readings up to this long before a label get it as a
                      delayed label, by seq) label_window_after_s=60 (readings assembled up to
                      this long after it get it inline)
    [assembler]   interval_s=0 (0: a reading when every feature was reported since the last
                      reading, a value or "no value now", or one is reported again before
                      that; > 0: a reading every interval_s s from the latest values)
                  max_age_s=600 (older values are missing: NaN) dedupe_s=1 (a byte-identical
                  publish on the same topic within this is a repeat, dropped)
                  accept_retained=false (retained values delivered on subscribe are stale)
                  min_features=1 (a reading with fewer present features is not served:
                      counted and reported as ``too_few_values``; at most the schema's count)

Where a value lives: ``"BME280.Temperature"`` (a key path into the JSON payload of a message on
``topic``; quote keys holding dots: ``'PMS5003."PM2.5"'``), a list of such paths (the first
present wins: translated firmware, ``["BME280.Temperature", "BME280.Temperatur"]``), or a
topic: a string with a ``/`` (``"livingroom/sensor/temperature/state"``, wildcards allowed)
whose plain payload is the value, or ``{topic = "...", path = "..."}`` for JSON on that topic.
A path element ``NAME[KEY=VALUE]`` picks a block by what it holds: the block named ``NAME`` or
``NAME-<n>`` whose ``KEY`` is ``VALUE`` (as text). Several Tasmota DS18B20 probes are
``DS18B20-1``, ``DS18B20-2``, ... in bus order, renumbered when one is removed (``DS18B20``
alone when one is left), so name each by its 1-Wire ``Id``:
``"DS18B20[Id=01144A0CB8AA].Temperature"``; a probe that is gone is missing (NaN), never
another probe's value. Quote a key holding ``[`` (``'"a[1]".b'``).

Values: JSON numbers; numbers sent as strings (``"100.00"``); booleans and ``ON``/``OFF``,
``true``/``false`` as 1/0; ``nan``, ``None``, ``null``, ``unavailable``, ``unknown`` and
empty payloads as "no value now" (the feature is missing, NaN, in the reading that message
makes, and the message's label still labels it), and so is a mapped feature left out of a
Tasmota ``SENSOR`` message that holds another mapped value or the label (Tasmota leaves a
probe that failed out of the message); any other text is refused
(kind ``field``), +/-inf too (``not_finite``), and a magnitude above 1e100 (``out_of_range``,
the learners' bound). Tasmota temperatures in Fahrenheit and pressures in mmHg/inHg are
converted to °C and hPa from the message's ``TempUnit`` and ``PressureUnit``.

Availability messages are never readings: ``offline`` drops the values that device published
(and Shelly's kept component status), so nothing stale is assembled from them. Each kind
subscribes to its own, derived from the topics it reads: zigbee2mqtt ``bridge/state`` and
``<name>/availability``; Tasmota ``LWT``; ESPHome ``<topic_prefix>/status``
(``online``/``offline``); Shelly Gen1 ``shellies/<id>/online`` and Gen2+ ``<prefix>/online``
(``true``/``false``); a configured ``availability_topic`` is read by every kind as well. An
ESPHome ``topic_prefix`` or a Shelly Gen2 prefix may have several levels
(``home/livingroom/esp1``): the ESPHome prefix is what comes before the component level
(``sensor``, ``binary_sensor``, ...) of ``<prefix>/<component>/<object_id>/state``, and each
prefix is one device (``home_livingroom_esp1``; ``device_level`` picks one level instead).

zigbee2mqtt republishes a device's whole cached state (``cache_state``, the default) on any
Zigbee message from it: a new measurement, but also a linkquality or battery report, another
cluster's report, or a ``last_seen`` update. So a zigbee2mqtt message whose mapped feature
values and label (a null equal to a null) are all those of the previous message from the same
publisher (the friendly name, within one ``[[sources]]`` entry) is a republish, not a
measurement: it makes no reading and does not count towards the round of ``interval_s = 0``,
whatever else in it changed (fields the config does not read). It still shows the values are
current (their age for ``max_age_s`` restarts), its label is applied as any label, and it is
counted as ``unchanged``. After that publisher's ``offline`` the same values are new again.
The other kinds publish on measurement (Tasmota's ``TelePeriod``, ESPHome's per-entity topics,
Shelly's status deltas), so an equal value there is a reading.
Payload shapes, topics and pitfalls per ecosystem: ../shared/payloads/README.md.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from paho.mqtt.client import topic_matches_sub

from edgebayes.base import InputError, check_label, to_float
from edgebayes.runtime.assembler import Assembler, Incomplete
from edgebayes.runtime.config import AssemblerConfig, Select, SourceConfig, Spec, parse_path  # noqa: F401
from edgebayes.runtime.names import NAME_RE, device_id
from edgebayes.runtime.protocol import (
    Label,
    Parser,
    ProtocolError,
    Reading,
    Retained,
)

log = logging.getLogger(__name__)

KINDS = ("edgebayes", "zigbee2mqtt", "tasmota", "esphome", "shelly", "json")
#: texts that mean "the sensor has no value now" (ESPHome nan/None, HA unavailable/unknown)
NO_VALUE = frozenset({"", "nan", "-nan", "none", "null", "unavailable", "unknown"})
_ON, _OFF = frozenset({"on", "true"}), frozenset({"off", "false"})
_ONLINE = frozenset({"online", "true", "1", "connected"})
_OFFLINE = frozenset({"offline", "false", "0", "disconnected"})
#: Tasmota keys whose unit the message declares (English and German builds)
_TEMP_KEYS = frozenset({"temperature", "dewpoint", "temperatur", "taupunkt"})
_PRESSURE_KEYS = frozenset({"pressure", "seapressure", "druck"})
_HPA_PER = {"mmHg": 1.33322387415, "inHg": 33.8638866667}  # hPa per unit
_ABSENT = object()
#: data messages of a source mapping nothing, none before them mapping anything, before a warning
HINT_AFTER = 10


# --- value coercion ----------------------------------------------------------------------------

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
            raise ProtocolError("field", f"feature {name!r}: {s[:40]!r} is not a number") from None
    elif t is not int and t is not float:
        raise ProtocolError("field", f"feature {name!r} must be a number, got {t.__name__}")
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
        raise ProtocolError("field", f"label value {str(v)[:40]!r} cannot be a label")
    if values:
        if key not in values:
            raise ProtocolError("field", f"label value {key[:40]!r} is not in label_values "
                                         f"({', '.join(map(repr, values))})")
        return values[key]
    y = int(key) if type(v) is int or type(v) is float else key
    try:
        check_label(y)  # the learners' rule: a 64-bit int, a str of valid Unicode
    except ValueError as exc:
        raise ProtocolError("field", f"label value {key[:40]!r}: {exc}") from None
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


# --- adapters ----------------------------------------------------------------------------------

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
                return Extract("rejected", origin=origin, reason="field",
                               explanation=f"availability payload {bytes(payload)[:40]!r} not understood")
            return Extract("availability", origin=origin, online=online)
        device = self.cfg.device or device_id(pub)
        if not device:
            return Extract("rejected", origin=origin, reason="device_id",
                           explanation=f"no device id at level {self.level} of {topic!r}")
        out = Extract("values", device=device, origin=origin)
        doc: Any = _ABSENT
        on_main = self.cfg.topic is not None and topic_matches_sub(self.cfg.topic, topic)
        items = [*self.cfg.features, *((("\0label", self.cfg.label),) if self.cfg.label else ())]
        absent = []
        try:
            for name, spec in items:
                if spec.topic is None and not on_main or spec.topic is not None and not topic_matches_sub(spec.topic, topic):
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
            raise ProtocolError("decode", f"payload is not JSON: {exc}") from None


class Zigbee2Mqtt(Adapter):
    """``<base>/<friendly name>`` JSON; ``<base>/bridge/state`` and ``<name>/availability``
    are availability; other ``bridge/...`` topics and ``/set``, ``/get`` are ignored. The
    device is the whole friendly name (it may hold '/', spaces, ':')."""

    republishes_state = True  # cache_state (the default): any Zigbee message repeats every attribute

    def availability_filters(self):
        out = super().availability_filters()
        for f in self.data_filters():
            base = f.split("/")[0]
            out.append(f"{base}/bridge/state")
            if not f.endswith("#"):
                out.append(f"{f}/availability")
        return out

    def kind_of(self, topic):
        levels = topic.split("/")
        if len(levels) >= 2 and levels[1] == "bridge":
            return "availability" if levels[2:] == ["state"] else "ignored"
        if levels[-1] == "availability":
            return "availability"
        if levels[-1] in ("set", "get"):
            return "ignored"
        return super().kind_of(topic)

    def publisher(self, topic):
        if self.level is not None:
            return super().publisher(topic)
        levels = topic.split("/")
        if levels[1:] == ["bridge", "state"]:
            return ""  # the bridge: every device of this source
        if levels[-1] == "availability":
            levels = levels[:-1]
        return "/".join(levels[1:])


class Tasmota(Adapter):
    """``.../<Topic>/SENSOR``, ``STATE``, ``ENERGY`` JSON (matched on the last level: FullTopic
    is user-defined); ``LWT`` is availability; the device is the level before the last, or the
    one before ``tele``/``stat`` when FullTopic puts the prefix after the topic."""

    DATA = frozenset({"SENSOR", "STATE", "ENERGY", "RESULT"})

    def availability_filters(self):
        out = super().availability_filters()
        for f in self.data_filters():
            head, _, last = f.rpartition("/")
            if last in self.DATA or last == "+":
                out.append(f"{head}/LWT")
        return out

    def kind_of(self, topic):
        last = topic.rsplit("/", 1)[-1]
        if last == "LWT":
            return "availability"
        return "data" if last in self.DATA else "ignored"

    def snapshot(self, topic):
        return topic.endswith("/SENSOR")  # every TelePeriod: all the board's sensors that read

    def publisher(self, topic):
        if self.level is not None:
            return super().publisher(topic)
        levels = topic.split("/")
        if len(levels) < 2:
            return ""
        if levels[-2] in ("tele", "stat") and len(levels) >= 3:
            return levels[-3]
        return levels[-2]

    def convert(self, doc, path, value):
        if not isinstance(doc, dict) or type(value) not in (int, float) or type(path[-1]) is not str:
            return value
        key = path[-1].lower()
        if key in _TEMP_KEYS and doc.get("TempUnit") == "F":
            return (value - 32.0) / 1.8
        unit = doc.get("PressureUnit")
        if key in _PRESSURE_KEYS and type(unit) is str and unit in _HPA_PER:  # a map is unhashable
            return value * _HPA_PER[unit]
        return value


class ESPHome(Adapter):
    """``<topic_prefix>/<component>/<object_id>/state`` plain text (climate entities one level
    deeper); ``<topic_prefix>/status`` availability (``online``/``offline``). The prefix, the
    node's name by default, may have several levels (``home/livingroom/esp1``): it is found
    from the right, before the component level, and each prefix is one device."""

    def availability_filters(self):
        out = super().availability_filters()
        for f in self.data_filters():
            prefix = _esphome_prefix(f.split("/"))
            if prefix:  # a filter ending in '#' with no component level already holds <prefix>/status
                out.append("/".join(prefix) + "/status")
        return out

    def kind_of(self, topic):
        levels = topic.split("/")
        if len(levels) >= 2 and levels[-1] == "status":
            return "availability"
        return "data" if levels[-1] == "state" or self.cfg.topic else "ignored"

    def publisher(self, topic):
        prefix = _esphome_prefix(topic.split("/")) if self.level is None else None
        return "/".join(prefix) if prefix else super().publisher(topic)


#: ESPHome entity types: the level after the node's topic_prefix in its state topics
_ESPHOME_COMPONENTS = frozenset({
    "sensor", "binary_sensor", "text_sensor", "switch", "light", "fan", "cover", "climate", "number",
    "select", "text", "button", "lock", "valve", "alarm_control_panel", "event", "update", "datetime",
    "date", "time", "water_heater", "media_player"})


def _esphome_prefix(levels: list[str]) -> list[str] | None:
    """The ``topic_prefix`` levels of an ESPHome topic or filter: for a state topic, those
    before its component level (``<component>/<object_id>/state``, a climate entity one level
    deeper; a filter's trailing ``#`` may stand for what follows the component); for another
    topic (``status``, a custom will topic), those before its last level. None for a one-level
    topic, or a ``#`` with no component level before it.

    The component is searched from the right because a prefix level may be named like one.
    """
    if levels[-1] not in ("state", "#"):
        return levels[:-1] or None
    wild = levels[-1] == "#"
    for i in range(len(levels) - (2 if wild else 3), 0, -1):
        if levels[i] in _ESPHOME_COMPONENTS:
            return levels[:i]
    if wild or len(levels) < 4:
        return None
    return levels[:-3]  # a component type newer than this list


class Shelly(Adapter):
    """Gen1 ``shellies/<id>/...`` plain values; Gen2/3 ``<prefix>/events/rpc`` JSON-RPC
    (``NotifyStatus`` deltas overlaid on the kept component status, ``NotifyFullStatus``
    replacing it) and ``<prefix>/status/<component>``; ``shellies/<id>/online`` and
    ``<prefix>/online`` (``true``/``false``) are availability, and ``false`` drops the kept
    status. The Gen2 prefix (the device id by default) may have several levels. Key paths
    start at the component: ``temperature:0.tC``."""

    def __init__(self, index, cfg):
        super().__init__(index, cfg)
        self.state: dict[str, dict] = {}  # publisher -> component -> status

    def availability_filters(self):
        out = super().availability_filters()
        for f in self.data_filters():
            prefix = _shelly_prefix(f.split("/"))
            if prefix:  # a filter ending in '#' already holds <prefix>/online
                out.append("/".join(prefix) + "/online")
        return out

    def kind_of(self, topic):
        levels = topic.split("/")
        if levels[-1] == "online":
            return "availability"
        if levels[-1] == "announce":
            return "ignored"
        return "data"

    def publisher(self, topic):
        if self.level is not None:
            return super().publisher(topic)
        levels = topic.split("/")
        prefix = _shelly_prefix(levels)
        if prefix:
            return prefix[1] if prefix[0] == "shellies" else "/".join(prefix)
        return levels[1] if levels[0] == "shellies" and len(levels) > 1 else levels[0]

    def offline(self, publisher):
        if publisher:
            self.state.pop(publisher, None)
        else:
            self.state.clear()

    def document(self, topic, doc):
        pub = self.publisher(topic)
        kept = self.state.setdefault(pub, {})
        levels = topic.split("/")
        if levels[-2:] == ["events", "rpc"]:
            method = doc.get("method") if isinstance(doc, dict) else None
            params = doc.get("params") if isinstance(doc, dict) else None
            if method not in ("NotifyStatus", "NotifyFullStatus") or not isinstance(params, dict):
                return {}  # NotifyEvent and others carry no status
            if method == "NotifyFullStatus":
                kept.clear()
            for comp, status in params.items():
                if isinstance(status, dict):
                    _overlay(kept.setdefault(comp, {}), status)
            # only the components this message touched count as new values
            return {comp: kept[comp] for comp, s in params.items() if isinstance(s, dict)}
        if len(levels) >= 2 and levels[-2] == "status" and isinstance(doc, dict):
            kept[levels[-1]] = doc
            return {levels[-1]: doc}
        return doc


def _overlay(kept: dict, delta: dict) -> None:
    for key, value in delta.items():
        if isinstance(value, dict) and isinstance(kept.get(key), dict):
            _overlay(kept[key], value)
        else:
            kept[key] = value


def _shelly_prefix(levels: list[str]) -> list[str] | None:
    """The device's topic prefix in a Shelly topic or filter: ``shellies/<id>`` (Gen1), or the
    levels before ``events/rpc``, ``status/<component>`` or ``online`` (Gen2+); None when the
    topic has none of these shapes or the prefix would hold a ``#``."""
    if levels[0] == "shellies":
        ok = len(levels) > 2 and levels[1] not in ("#", "announce")
        return levels[:2] if ok else None
    if "#" in levels[-1]:
        return None
    if levels[-2:] == ["events", "rpc"] or (len(levels) >= 3 and levels[-2] == "status"):
        return levels[:-2]
    if len(levels) >= 2 and levels[-1] == "online":
        return levels[:-1]
    return None


class EdgebayesProtocol(Adapter):
    """Our own protocol under another prefix: ``<topic>/<device>/reading`` and ``/label``."""

    def data_filters(self):
        return [f"{self.cfg.topic}/+/reading", f"{self.cfg.topic}/+/label"]

    def publisher(self, topic):
        return topic.split("/")[-2]


ADAPTERS = {"json": Adapter, "zigbee2mqtt": Zigbee2Mqtt, "tasmota": Tasmota, "esphome": ESPHome,
            "shelly": Shelly, "edgebayes": EdgebayesProtocol}


def make_adapter(index: int, cfg: SourceConfig) -> Adapter:
    """The adapter of ``[[sources]]`` table number ``index`` (from 0) for its ``kind``
    (``ADAPTERS``; the kind was checked when the config was read)."""
    return ADAPTERS[cfg.kind](index, cfg)


# --- the router: adapters -> assembler -> the worker's reading and label path ------------------

class SourceRouter:
    """Feeds messages of the ``[[sources]]`` topics through the worker's own path.

    Args:
        config: the runtime ``Config`` (``sources``, ``assembler``, ``schema``, ``queue``).
        worker: the ``Worker``; readings and labels go to its ``serve``, refusals to its ``_error`` (rate-limited error reports, counted in its metrics).
        discovery: a ``discovery.Discovery`` to tell about Home Assistant's birth, or None.

    ``counts`` (a Counter, in the metrics as ``sources``): ``retained``, ``repeated``,
    ``ignored`` (topics that are not data, such as zigbee2mqtt ``bridge/devices``: dropped
    before the payload size check, whatever their size), ``unchanged`` (zigbee2mqtt
    republishes of the mapped values and label: no reading), ``no_feature``, ``offline``,
    ``online``, ``readings``, ``labels``, ``no_value`` (values a sensor reported as "no value
    now" or left out of a snapshot message), ``missing_values`` (NaN features in the readings
    served), and one entry per refusal kind (``too_few_values``: a reading with fewer than ``[assembler] min_features``
    present features, not served).
    """

    def __init__(self, config, worker, discovery=None):
        self.worker = worker
        self.discovery = discovery
        acfg = config.assembler or AssemblerConfig()
        self.acfg = acfg
        self.adapters = [make_adapter(i, s) for i, s in enumerate(config.sources)]
        self.assembler = Assembler(config.schema.features, acfg.interval_s, acfg.max_age_s,
                                   max((s.label_window_before_s for s in config.sources), default=0.0),
                                   min_features=acfg.min_features)
        self.parser = Parser(config.schema.features, config.schema.label, config.queue.max_payload_bytes)
        self.max_payload_bytes = config.queue.max_payload_bytes
        self.counts: Counter = Counter()
        self._unmatched: Counter = Counter()  # source index -> messages mapping nothing, until one did
        self._last_payload: dict[str, tuple[bytes, float]] = {}
        self._last_mapped: dict[tuple, tuple] = {}  # origin -> its last message's mapped values and label
        self._routes: dict[str, list[Adapter]] = {}
        extra = [discovery.ha_status_topic] if discovery is not None else []
        self.filters = list(dict.fromkeys([f for a in self.adapters for f in a.filters()] + extra))

    def _match(self, topic: str) -> list[Adapter]:
        found = self._routes.get(topic)
        if found is None:
            found = [a for a in self.adapters if any(topic_matches_sub(f, topic) for f in a.filters())]
            if len(self._routes) >= 4096:
                self._routes.clear()
            self._routes[topic] = found
        return found

    def handle(self, topic: str, payload: bytes, t_recv: float) -> bool:
        """Process a message of a source topic (worker thread); False if no source reads it."""
        if self.discovery is not None and topic == self.discovery.ha_status_topic:
            self.discovery.ha_status(payload)
            return True
        adapters = self._match(topic)
        if not adapters:
            return False
        if all(a.classify(topic) == "ignored" for a in adapters):
            # before the size check: a large retained zigbee2mqtt/bridge/devices is not an error
            self.counts["ignored"] += len(adapters)
            return True
        now = time.time()
        if len(payload) > self.max_payload_bytes:
            self._refuse(None, topic, "oversize", f"payload of {len(payload)} bytes exceeds {self.max_payload_bytes}")
            return True
        for adapter in adapters:
            self._one(adapter, topic, payload, now, t_recv)
        return True

    def _one(self, adapter: Adapter, topic: str, payload: bytes, now: float, t_recv: float) -> None:
        kind = adapter.classify(topic)
        if kind == "data" and type(payload) is Retained and not self.acfg.accept_retained:
            self.counts["retained"] += 1  # stale: no way to tell how old
            return
        if kind == "data" and self.acfg.dedupe_s > 0:
            key = f"{adapter.index}\0{topic}"
            last = self._last_payload.get(key)
            if last is not None and last[0] == payload and now - last[1] < self.acfg.dedupe_s:
                self.counts["repeated"] += 1
                return
            if len(self._last_payload) >= 4096:
                self._last_payload.clear()
            self._last_payload[key] = (bytes(payload), now)
        if adapter.cfg.kind == "edgebayes":
            self._protocol(topic, payload, t_recv)
            return
        ex = adapter.extract(topic, payload)
        if ex.kind == "availability":
            self.counts["online" if ex.online else "offline"] += 1
            if not ex.online:
                self.assembler.offline(ex.origin, now)
                adapter.offline(ex.origin[1])
                self._forget_mapped(ex.origin)
            return
        if ex.kind == "ignored" or ex.reason == "no_feature":
            self.counts[ex.kind if ex.kind == "ignored" else "no_feature"] += 1
            if ex.reason == "no_feature":
                self._hint(adapter, topic, ex.explanation)
            return
        if ex.kind == "rejected":
            self._refuse(ex.device, topic, ex.reason, ex.explanation)
            return
        self._unmatched[adapter.index] = -1  # a source that matched once is not hinted at
        cfg = adapter.cfg
        if ex.has_label:
            for lab in self.assembler.label(ex.device, ex.label, now, cfg.label_window_before_s,
                                            cfg.label_window_after_s):
                self._deliver(lab, topic, t_recv)
        if ex.values or ex.left_out:
            values = {**ex.values, **dict.fromkeys(ex.left_out, math.nan)} if ex.left_out else ex.values
            if adapter.republishes_state and self._unchanged(ex, values):
                self.counts["unchanged"] += 1
                self.assembler.refresh(ex.device, values, ex.origin, now)
                return
            n_null = sum(map(math.isnan, values.values()))
            if n_null:
                self.counts["no_value"] += n_null
            out = self.assembler.update(ex.device, values, ex.origin, now)
            if isinstance(out, Incomplete):
                self._refuse(ex.device, topic, "too_few_values",
                             f"no value for {', '.join(out.missing)}: fewer than [assembler] "
                             f"min_features = {self.acfg.min_features} present, no reading")
            elif out is not None:
                self._deliver(out, topic, t_recv)

    def _unchanged(self, ex: Extract, values: dict[str, float]) -> bool:
        """Whether ``values`` and the label of ``ex`` are those of its publisher's previous
        message (a zigbee2mqtt republish of the cached state: linkquality, last_seen, battery,
        another cluster's report); this message's are remembered for the next."""
        mapped = (ex.device, tuple((k, None if math.isnan(v) else v) for k, v in sorted(values.items())),
                  ex.has_label, ex.label)
        before = self._last_mapped.get(ex.origin)
        if len(self._last_mapped) >= 4096:
            self._last_mapped.clear()  # bounded: at worst one more reading per publisher
        self._last_mapped[ex.origin] = mapped
        return before == mapped

    def _forget_mapped(self, origin: tuple) -> None:
        """Drop what ``_unchanged`` remembers of ``origin`` (``(source, "")``: all of that source)."""
        src, pub = origin
        for key in [k for k in self._last_mapped if k[0] == src and (not pub or k[1] == pub)]:
            del self._last_mapped[key]

    def _hint(self, adapter: Adapter, topic: str, explanation: str) -> None:
        """Log once when a source's first ``HINT_AFTER`` data messages all map nothing: its key
        paths likely do not match what its devices send (a few may be other messages, such as
        Tasmota's STATE under ``tele/+/+``)."""
        n = self._unmatched[adapter.index]
        if n < 0:
            return
        self._unmatched[adapter.index] = n + 1
        if n + 1 == HINT_AFTER:
            log.warning("[[sources]] #%d (%s): %d messages and none holds a mapped feature or the "
                        "label; the last, on %s: %s. Check the key paths (counted in the metrics as "
                        "sources.no_feature)", adapter.index + 1, adapter.cfg.kind, HINT_AFTER, topic,
                        explanation)

    def _protocol(self, topic: str, payload: bytes, t_recv: float) -> None:
        device, kind = topic.split("/")[-2:]
        try:
            if not NAME_RE.match(device):
                raise ProtocolError("device_id", f"device id {device[:80]!r} is not 1-64 characters from [A-Za-z0-9_-]")
            item = self.parser.parse_reading(device, payload) if kind == "reading" else self.parser.parse_label(device, payload)
        except ProtocolError as exc:
            self._refuse(device if NAME_RE.match(device) else None, topic, exc.kind, str(exc), exc.seq)
            return
        self._deliver(item, topic, t_recv)

    def _deliver(self, item: Reading | Label, topic: str, t_recv: float) -> None:
        if isinstance(item, Reading):
            self.counts["readings"] += 1
            n_missing = sum(map(math.isnan, item.x))
            if n_missing:
                self.counts["missing_values"] += n_missing
        else:
            self.counts["labels"] += 1
        self.worker.serve(item, topic, t_recv)

    def _refuse(self, device: str | None, topic: str, kind: str, explanation: str, seq: int | None = None) -> None:
        self.counts[kind] += 1
        w = self.worker
        out = w.topics.device_topic(device, "error") if device else w.topics.runtime_error
        w._error(out, topic, ProtocolError(kind, explanation, seq))

    def tick(self) -> None:
        """Cadence readings due now (worker loop, every ``TICK_S``)."""
        for reading in self.assembler.due(time.time()):
            self._deliver(reading, "(assembler)", time.perf_counter())


def make_router(config, topics, worker) -> SourceRouter | None:
    """The router for ``config`` (None without ``[[sources]]`` and HA discovery)."""
    from edgebayes.runtime.discovery import Discovery

    ha = config.homeassistant
    discovery = None
    if ha is not None and ha.discovery:
        discovery = Discovery(ha, topics, config.broker.client_id, [m.name for m in config.models], None)
    if not config.sources and discovery is None:
        return None
    return SourceRouter(config, worker, discovery)


class _Intake:
    """paho per-filter callback for the source topics (network thread): the payload is marked
    ``Retained`` when the broker sent it as a retained message, then queued to the worker like
    any message (acknowledged by the worker once processed)."""

    def __init__(self, worker):
        self.worker = worker
        self.n_callback_errors = 0
        self._last = None

    def __call__(self, client, userdata, msg) -> None:
        if msg is self._last:  # paho calls once per matching filter; take the message once
            return
        self._last = msg
        try:
            self.worker.submit(msg.topic, Retained(msg.payload) if msg.retain else msg.payload, msg.mid, msg.qos)
        except Exception:
            self.n_callback_errors += 1  # casebook C31: never silent
            log.exception("error queueing a source message on %s (%d so far)", msg.topic, self.n_callback_errors)
            if msg.qos > 0:
                client.ack(msg.mid, msg.qos)


def attach(router: SourceRouter, mqtt) -> None:
    """Wire ``router`` to the runtime's ``MqttClient`` and worker: per-filter callbacks (they
    carry the retain flag), the worker's dispatch and tick, discovery's publisher."""
    intake = _Intake(router.worker)
    for f in router.filters:
        mqtt.add_filter_callback(f, intake)
    router.worker.sources = router
    router.worker.tick_hooks.append(router.tick)
    if router.discovery is not None:
        router.discovery.publish = mqtt.publish
        devices = router.worker.devices
        router.worker.tick_hooks.append(lambda: router.discovery.tick(devices))
