"""Home Assistant MQTT discovery (opt-in, ``[homeassistant]``): predictions show up in HA.

For every device the runtime serves, retained config messages (QoS 1) on
``<prefix>/<component>/<node_id>/<object_id>/config`` (ids from ``[a-zA-Z0-9_-]``):

- ``sensor``: ``<device>_prediction``, state ``y_pred`` from ``<topics prefix>/<device>/prediction``;
  its attributes are slowly changing facts (``model``: the model whose prediction is shown,
  ``classes``: the classes it knows) published retained on ``<topics prefix>/<device>/attributes``
  only when they change: HA writes a state row for every attributes change, so class
  probabilities (new at every reading) are not attributes (HA's MQTT sensor docs warn of it);
- ``event`` (``drift = "event"``, default): ``<device>_drift`` fired by every drift alert on
  ``<topics prefix>/<device>/drift``, event types ``warning`` and ``drift``, the alert's fields
  as event attributes; or ``binary_sensor`` (``drift = "binary_sensor"``): on at a drift
  alert, off ``drift_off_delay_s`` later;
- each with ``default_entity_id`` (``<component>.<object_id slugified>``, HA 2025.10+) and the deprecated
  ``object_id`` (older HA; newer ones ignore it when ``default_entity_id`` is set), a ``device``
  block per edgebayes device, and two availability topics that must both say ``online``
  (``availability_mode: all``): the runtime's retained status topic, and the device's own
  ``<topics prefix>/<device>/availability``, published retained ``online`` while it sends
  readings and ``offline`` after ``offline_after_s`` without one.

Why an availability topic and ``expire_after`` both: the availability topic makes every entity of a
silent device unavailable (the drift event too, which has no ``expire_after``), is retained
(right at once after an HA restart) and is there for any other MQTT client; the prediction
sensor's ``expire_after = offline_after_s`` is HA's own clock, which still runs when the runtime
restarts and so no longer knows a device that died while it was down (its retained
``online`` would stay).

Configs are published when a device first appears, again when Home Assistant announces itself
``online`` on ``<prefix>/status`` (its birth message), and removed (empty retained payload, as
are the availability and attributes topics) when the device is retired: ``retire(device)``, or
no reading for ``retire_after_s``. After the birth message, ``republish_delay_s`` later (HA
subscribes an entity's state topic once the entity is set up), each online device's last
prediction is published again, unchanged (same ``seq``): predictions are not retained, and
HA forgets them when it restarts. HA reads JSON templates, so discovery requires
``[output] format = "json"``. The shapes follow the real configs in
../shared/payloads/homeassistant.json (Zigbee2MQTT's ``availability`` list, ``origin`` and
``device`` blocks); the keys are those of HA's MQTT platform schemas
(homeassistant/components/mqtt/: schemas.py, sensor.py, event.py, binary_sensor.py).

Config: ``[homeassistant]`` (``edgebayes.runtime.config``).
"""

from __future__ import annotations

import json
import logging
import math
import re
import time

from edgebayes.runtime.config import DiscoveryConfig

log = logging.getLogger(__name__)

ORIGIN_URL = "https://github.com/edgebayes/edgebayes"
#: seconds from Home Assistant's birth message to the last predictions published again: its
#: entities subscribe their state topics only once their configs are set up
REPUBLISH_DELAY_S = 5.0


def attributes(prediction: bytes) -> bytes:
    """The prediction sensor's attributes from a JSON prediction message (docs/protocol.md
    "Prediction"): the facts that change seldom, so HA records a change only when one does."""
    msg = json.loads(prediction)
    facts = {"model": msg["model"], "classes": sorted(msg["proba"])}
    return json.dumps(facts, sort_keys=True).encode()


class Discovery:
    """Publishes and removes the discovery configs, device availability and attributes, and
    publishes the last predictions again for a restarted Home Assistant (module docstring).

    Args:
        cfg: the ``[homeassistant]`` table.
        topics: the runtime's ``topics.Topics`` (prediction, drift and status topics).
        node_id: default node id (the runtime's client id).
        model_names: the configured models' names (shown as the HA device's model).
        publish: ``publish(topic, payload, qos, retain)``.

    ``tick(devices)`` (worker loop) announces new devices, marks silent ones offline, retires
    those silent longer and publishes the predictions due after HA's birth; ``ha_status``
    (worker thread too) takes HA's birth message. ``clock`` (unix s) is replaceable for tests.
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
        self.clock = time.time
        self.republish_delay_s = REPUBLISH_DELAY_S
        self.announced: dict[str, float] = {}  # device -> last activity (unix s)
        self.online: dict[str, bool] = {}  # device -> availability last published
        self.n_republished = 0  # predictions published again after HA's birth messages
        self._attributes: dict[str, bytes] = {}  # device -> attributes last published
        self._seen_seq: dict[str, int] = {}
        self._republish_at: float | None = None

    def config_topics(self, device: str) -> dict[str, str]:
        """component -> config topic of ``device``."""
        drift = self.cfg.drift
        return {"sensor": f"{self.cfg.prefix}/sensor/{self.node}/{device}_prediction/config",
                drift: f"{self.cfg.prefix}/{drift}/{self.node}/{device}_drift/config"}

    def state_topics(self, device: str) -> tuple[str, str]:
        """``device``'s availability and attributes topics (retained, this class publishes them)."""
        return self.topics.device_topic(device, "availability"), self.topics.device_topic(device, "attributes")

    def configs(self, device: str) -> dict[str, dict]:
        """config topic -> config payload for ``device``."""
        t = self.topics
        uid = f"edgebayes_{self.node}_{device}"
        available, attributes_topic = self.state_topics(device)
        common = {
            "availability": [{"topic": topic, "payload_available": "online", "payload_not_available": "offline"}
                             for topic in (t.status, available)],
            "availability_mode": "all",
            "device": {"identifiers": [uid], "name": f"{device} (edgebayes)", "manufacturer": "edgebayes",
                       "model": self.model, "sw_version": self.version},
            "origin": {"name": "edgebayes", "sw": self.version, "url": ORIGIN_URL},
        }
        pred_topic, drift_topic = t.device_topic(device, "prediction"), t.device_topic(device, "drift")
        topics = self.config_topics(device)
        sensor = {
            "name": "Prediction", "unique_id": f"{uid}_prediction", **_entity_id("sensor", f"{device}_prediction"),
            "state_topic": pred_topic,
            "value_template": "{{ value_json.y_pred if value_json.y_pred is not none else 'unknown' }}",
            "json_attributes_topic": attributes_topic, "expire_after": math.ceil(self.cfg.offline_after_s),
            "icon": "mdi:chart-bell-curve", **common,
        }
        drift_ids = {"name": "Drift", "unique_id": f"{uid}_drift", **_entity_id(self.cfg.drift, f"{device}_drift")}
        if self.cfg.drift == "event":
            drift = {
                **drift_ids, "state_topic": drift_topic, "event_types": ["warning", "drift"],
                "value_template": "{{ dict(value_json, event_type=value_json.level) | tojson }}",
                "entity_category": "diagnostic", **common,
            }
        else:
            drift = {
                **drift_ids, "state_topic": drift_topic, "device_class": "problem",
                "value_template": "{{ 'ON' if value_json.level == 'drift' else 'OFF' }}",
                "payload_on": "ON", "payload_off": "OFF", "off_delay": self.cfg.drift_off_delay_s,
                "json_attributes_topic": drift_topic, "entity_category": "diagnostic", **common,
            }
        return {topics["sensor"]: sensor, topics[self.cfg.drift]: drift}

    def announce(self, device: str) -> None:
        for topic, payload in self.configs(device).items():
            self.publish(topic, json.dumps(payload).encode(), qos=1, retain=True)
        self.announced.setdefault(device, self.clock())
        log.info("Home Assistant discovery: announced device %s", device)

    def retire(self, device: str) -> None:
        """Remove ``device``'s entities from Home Assistant (empty retained configs), and its
        retained availability and attributes."""
        for topic in [*self.config_topics(device).values(), *self.state_topics(device)]:
            self.publish(topic, b"", qos=1, retain=True)
        self.announced.pop(device, None)
        self.online.pop(device, None)
        self._attributes.pop(device, None)
        log.info("Home Assistant discovery: retired device %s", device)

    def ha_status(self, payload: bytes) -> None:
        """Home Assistant's birth message: it forgot non-retained state; send configs again now,
        and the last predictions ``republish_delay_s`` later (``tick``)."""
        if bytes(payload).strip().lower() == b"online":
            for device in list(self.announced):
                self.announce(device)
            self._republish_at = self.clock() + self.republish_delay_s

    def tick(self, devices: dict) -> None:
        """Announce devices not yet announced, mark those silent for ``offline_after_s``
        offline and retire those silent for ``retire_after_s``; publish the last predictions
        when due after HA's birth.

        ``devices``: the worker's device id -> ``Device`` (``last_seq`` tells activity,
        ``last_prediction`` is the last prediction message)."""
        now = self.clock()
        for name, dev in devices.items():
            if self._seen_seq.get(name) != dev.last_seq:
                self._seen_seq[name] = dev.last_seq
                self._active(name, dev, now)
        self._expire(now)
        if self._republish_at is not None and now >= self._republish_at:
            self._republish_at = None
            self._republish(devices)

    def _active(self, name: str, dev, now: float) -> None:
        """``name`` sent a reading: online, attributes if changed, configs if new (after the
        retained state, so HA finds it when it subscribes)."""
        new = name not in self.announced
        self.announced[name] = now
        self._set_online(name, True)
        if dev.last_prediction is not None:
            self._set_attributes(name, attributes(dev.last_prediction))
        if new:
            self.announce(name)

    def _expire(self, now: float) -> None:
        offline_after, retire_after = self.cfg.offline_after_s, self.cfg.retire_after_s
        for name, last in list(self.announced.items()):
            if retire_after is not None and now - last > retire_after:
                self.retire(name)
            elif now - last > offline_after:
                self._set_online(name, False)

    def _set_online(self, name: str, online: bool) -> None:
        """Publish ``name``'s availability (retained) when it changes."""
        if self.online.get(name) is online:
            return
        self.online[name] = online
        self.publish(self.state_topics(name)[0], b"online" if online else b"offline", qos=1, retain=True)
        if not online:
            log.info("Home Assistant discovery: device %s offline (no reading for %g s)", name,
                     self.cfg.offline_after_s)

    def _set_attributes(self, name: str, payload: bytes) -> None:
        """Publish ``name``'s attributes (retained) when they change: one HA state write each."""
        if self._attributes.get(name) != payload:
            self._attributes[name] = payload
            self.publish(self.state_topics(name)[1], payload, qos=1, retain=True)

    def _republish(self, devices: dict) -> None:
        """Each online device's last prediction again, as it was (HA restarted without it)."""
        for name in list(self.announced):
            dev = devices.get(name)
            if self.online.get(name) and dev is not None and dev.last_prediction is not None:
                self.publish(self.topics.device_topic(name, "prediction"), dev.last_prediction, qos=1, retain=False)
                self.n_republished += 1
        log.info("Home Assistant discovery: last predictions published again (%d so far)", self.n_republished)


def _entity_id(component: str, object_id: str) -> dict[str, str]:
    """Both ways to suggest the entity id: ``default_entity_id`` (HA 2025.10+, the full id, so
    already in HA's entity-id alphabet: `entity_slug`) and ``object_id`` (deprecated there, its
    support ends in 2026.4; older HA knows only it, and slugifies it itself)."""
    return {"object_id": object_id, "default_entity_id": f"{component}.{entity_slug(object_id)}"}


def entity_slug(text: str) -> str:
    """``text`` as the object part of a Home Assistant entity id (HA's ``valid_entity_id``:
    lowercase letters, digits and single underscores, none at either end): ``t-0_prediction``
    -> ``t_0_prediction``."""
    return "_".join(re.findall(r"[a-z0-9]+", text.lower())) or "edgebayes"
