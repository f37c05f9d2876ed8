"""Home Assistant MQTT discovery (opt-in, ``[homeassistant]``): predictions show up in HA.

For every device the runtime serves, retained config messages (QoS 1) on
``<prefix>/<component>/<node_id>/<object_id>/config`` (ids from ``[a-zA-Z0-9_-]``):

- ``sensor``: ``<device>_prediction``, state ``y_pred`` from ``<topics prefix>/<device>/prediction``,
  the class probabilities (``proba``) as attributes;
- ``event`` (``drift = "event"``, default): ``<device>_drift`` fired by every drift alert on
  ``<topics prefix>/<device>/drift``, event types ``warning`` and ``drift``, the alert's fields
  as event attributes; or ``binary_sensor`` (``drift = "binary_sensor"``): on at a drift
  alert, off ``drift_off_delay_s`` later;
- both with the runtime's retained status topic (``online``/``offline``) as availability and a
  ``device`` block per edgebayes device.

Configs are published when a device first appears, again when Home Assistant announces itself
``online`` on ``<prefix>/status`` (its birth message), and removed (empty retained payload)
when the device is retired: ``retire(device)``, or no reading for ``retire_after_s``. HA reads
JSON templates, so discovery requires ``[output] format = "json"``. The shapes follow the
real configs in ../shared/payloads/homeassistant.json (Zigbee2MQTT's ``availability`` list,
``origin`` and ``device`` blocks).

Config::

    [homeassistant]  discovery=false prefix="homeassistant" node_id=<[broker] client_id>
                     drift="event" ("event" | "binary_sensor") drift_off_delay_s=600
                     retire_after_s=None (never)
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from edgebayes.runtime.config import NAME_RE

log = logging.getLogger(__name__)

ORIGIN_URL = "https://github.com/edgebayes/edgebayes"


@dataclass(frozen=True)
class DiscoveryConfig:
    discovery: bool = False
    prefix: str = "homeassistant"
    node_id: str | None = None
    drift: str = "event"
    drift_off_delay_s: float = 600.0
    retire_after_s: float | None = None


def parse_homeassistant(raw: Any, output_format: str, problems: list[str]) -> DiscoveryConfig | None:
    """The ``[homeassistant]`` table; problems appended to ``problems``."""
    if not isinstance(raw, dict):
        problems.append("[homeassistant] must be a table")
        return None
    n = len(problems)
    for key, v in raw.items():
        if key == "discovery":
            ok = isinstance(v, bool)
        elif key == "prefix":
            ok = isinstance(v, str) and bool(v) and all(lvl and "+" not in lvl and "#" not in lvl for lvl in v.split("/"))
        elif key == "node_id":
            ok = isinstance(v, str) and bool(NAME_RE.match(v))
        elif key == "drift":
            ok = v in ("event", "binary_sensor")
        elif key in ("drift_off_delay_s", "retire_after_s"):
            ok = not isinstance(v, bool) and isinstance(v, (int, float)) and 0 < v < math.inf
        else:
            problems.append(f"[homeassistant] unknown key {key!r}; known: discovery, prefix, node_id, "
                            "drift, drift_off_delay_s, retire_after_s")
            continue
        if not ok:
            problems.append(f"[homeassistant] {key} = {v!r} is not valid")
    if raw.get("discovery") is True and output_format != "json":
        problems.append('[homeassistant] discovery needs [output] format = "json" (HA templates read JSON)')
    return DiscoveryConfig(**raw) if len(problems) == n else None


class Discovery:
    """Publishes and removes the discovery configs (see the module docstring).

    Args:
        cfg: the ``[homeassistant]`` table.
        topics: the runtime's ``protocol.Topics`` (prediction, drift and status topics).
        node_id: default node id (the runtime's client id).
        model_names: the configured models' names (shown as the HA device's model).
        publish: ``publish(topic, payload, qos, retain)``.

    ``tick(devices)`` (worker loop) announces new devices and retires silent ones.
    """

    def __init__(self, cfg: DiscoveryConfig, topics, node_id: str, model_names: list[str], publish):
        from edgebayes import __version__

        self.cfg = cfg
        self.topics = topics
        self.node = cfg.node_id or node_id
        self.model = "online classifier: " + ", ".join(model_names)
        self.version = __version__
        self.publish = publish
        self.ha_status_topic = f"{cfg.prefix}/status"
        self.announced: dict[str, float] = {}  # device -> last activity (unix s)
        self._seen_seq: dict[str, int] = {}

    def config_topics(self, device: str) -> dict[str, str]:
        """component -> config topic of ``device``."""
        drift = self.cfg.drift
        return {"sensor": f"{self.cfg.prefix}/sensor/{self.node}/{device}_prediction/config",
                drift: f"{self.cfg.prefix}/{drift}/{self.node}/{device}_drift/config"}

    def configs(self, device: str) -> dict[str, dict]:
        """config topic -> config payload for ``device``."""
        t = self.topics
        uid = f"edgebayes_{self.node}_{device}"
        common = {
            "availability": [{"topic": t.status, "payload_available": "online",
                              "payload_not_available": "offline"}],
            "device": {"identifiers": [uid], "name": f"{device} (edgebayes)", "manufacturer": "edgebayes",
                       "model": self.model, "sw_version": self.version},
            "origin": {"name": "edgebayes", "sw": self.version, "url": ORIGIN_URL},
        }
        pred_topic, drift_topic = t.device_topic(device, "prediction"), t.device_topic(device, "drift")
        topics = self.config_topics(device)
        sensor = {
            "name": "Prediction", "unique_id": f"{uid}_prediction", "object_id": f"{device}_prediction",
            "state_topic": pred_topic,
            "value_template": "{{ value_json.y_pred if value_json.y_pred is not none else 'unknown' }}",
            "json_attributes_topic": pred_topic, "json_attributes_template": "{{ value_json.proba | tojson }}",
            "icon": "mdi:chart-bell-curve", **common,
        }
        if self.cfg.drift == "event":
            drift = {
                "name": "Drift", "unique_id": f"{uid}_drift", "object_id": f"{device}_drift",
                "state_topic": drift_topic, "event_types": ["warning", "drift"],
                "value_template": "{{ dict(value_json, event_type=value_json.level) | tojson }}",
                "entity_category": "diagnostic", **common,
            }
        else:
            drift = {
                "name": "Drift", "unique_id": f"{uid}_drift", "object_id": f"{device}_drift",
                "state_topic": drift_topic, "device_class": "problem",
                "value_template": "{{ 'ON' if value_json.level == 'drift' else 'OFF' }}",
                "payload_on": "ON", "payload_off": "OFF", "off_delay": self.cfg.drift_off_delay_s,
                "json_attributes_topic": drift_topic, "entity_category": "diagnostic", **common,
            }
        return {topics["sensor"]: sensor, topics[self.cfg.drift]: drift}

    def announce(self, device: str) -> None:
        for topic, payload in self.configs(device).items():
            self.publish(topic, json.dumps(payload).encode(), qos=1, retain=True)
        self.announced.setdefault(device, time.time())
        log.info("Home Assistant discovery: announced device %s", device)

    def retire(self, device: str) -> None:
        """Remove ``device``'s entities from Home Assistant (empty retained configs)."""
        for topic in self.config_topics(device).values():
            self.publish(topic, b"", qos=1, retain=True)
        self.announced.pop(device, None)
        log.info("Home Assistant discovery: retired device %s", device)

    def ha_status(self, payload: bytes) -> None:
        """Home Assistant's birth message: it forgot non-retained state; send configs again."""
        if bytes(payload).strip().lower() == b"online":
            for device in list(self.announced):
                self.announce(device)

    def tick(self, devices: dict) -> None:
        """Announce devices not yet announced; retire those silent for ``retire_after_s``.

        ``devices``: the worker's device id -> ``Device`` (``last_seq`` tells activity)."""
        now = time.time()
        for name, dev in devices.items():
            if self._seen_seq.get(name) != dev.last_seq:
                self._seen_seq[name] = dev.last_seq
                if name not in self.announced:
                    self.announce(name)
                self.announced[name] = now
        limit = self.cfg.retire_after_s
        if limit is not None:
            for name in [d for d, t in self.announced.items() if now - t > limit]:
                self.retire(name)
