"""Home Assistant MQTT discovery (opt-in, ``[homeassistant]``): predictions show up in HA.

For every device the runtime serves, retained config messages (QoS 1) on
``<prefix>/<component>/<node_id>/<object_id>/config`` (ids from ``[a-zA-Z0-9_-]``; ``node_id``
is ``edgebayes`` unless ``[homeassistant] node_id`` sets one, never the client id, so a new
client id overwrites the same configs), or with ``configs = "device"`` one device-based config
(HA 2024.11+) on ``<prefix>/device/<node_id>/<device>/config``: ``dev``, ``o`` and the
availability shared by its ``cmps`` (``prediction``, ``drift``, each with its platform ``p``):

- ``sensor``: ``<device>_prediction``, state ``y_pred`` from ``<topics prefix>/<device>/prediction``;
  its attributes are slowly changing facts (``model``: the model whose prediction is shown,
  ``classes``: the classes it knows) published retained on ``<topics prefix>/<device>/attributes``
  only when they change: HA writes a state row for every attributes change, so class
  probabilities (new at every reading) are not attributes (HA's MQTT sensor docs warn of it);
- ``event`` (``drift = "event"``, default): ``<device>_drift`` fired by every drift alert on
  ``<topics prefix>/<device>/drift``, event types ``warning`` and ``drift``, the alert's fields
  as event attributes; or ``binary_sensor`` (``drift = "binary_sensor"``): on at a drift
  alert, off ``drift_off_delay_s`` later;
- each with a ``unique_id`` of ``edgebayes[_<node_id>]_<device>_<entity>``; with ``default_entity_id``
  (``<component>.<object_id slugified>``, HA 2025.10+) and the deprecated ``object_id`` (older
  HA) unless ``entity_ids = false`` (since HA 2026.8 a supplied one overrides the user's own
  entity-id format); a ``device``
  block per edgebayes device, and two availability topics that must both say ``online``
  (``availability_mode: all``): the runtime's retained status topic, and the device's own
  ``<topics prefix>/<device>/availability``, published retained ``online`` while it sends
  readings and ``offline`` after ``offline_after_s`` without one, or at once when its
  ``[[sources]]`` availability topic says it is offline (Tasmota's LWT, zigbee2mqtt's
  ``<name>/availability``, ESPHome's ``status``, Shelly's ``online``: ``source_offline``), until
  its next reading.

Why an availability topic and ``expire_after`` both: the availability topic makes every entity of a
silent device unavailable (the drift event too, which has no ``expire_after``), is retained
(right at once after an HA restart) and is there for any other MQTT client; the prediction
sensor's ``expire_after = offline_after_s`` is HA's own clock, which still runs when the runtime
restarts and so no longer knows a device that died while it was down (its retained
``online`` would stay).

Configs are published when a device first appears (after removing those of it this runtime no
longer publishes: the other ``configs`` form or ``drift`` component, and the per-client-id node
of older releases), again when Home Assistant announces itself ``online`` on
``<prefix>/status`` (its birth message), and removed (empty retained payload, as are the
availability and attributes topics) when the device is retired: ``retire(device)``, or no
reading for ``retire_after_s``. The runtime reads its own retained configs back at start, so a
device an earlier run announced that never returns goes offline and is retired too. After
the birth message, ``republish_delay_s`` later (HA subscribes an entity's state topic once the
entity is set up), each online device's last
prediction is published again, unchanged (same ``seq``): predictions are not retained, and
HA forgets them when it restarts. HA reads JSON templates, so discovery requires
``[output] format = "json"``. The shapes follow the discovery configs
Zigbee2MQTT really publishes (its ``availability`` list, ``origin`` and
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
from collections.abc import Callable

from edgebayes.runtime.config import DiscoveryConfig
from edgebayes.runtime.messages import Retained
from edgebayes.runtime.payloads import OFFLINE, ONLINE

log = logging.getLogger(__name__)

ORIGIN_URL = "https://github.com/edgebayes/edgebayes"
#: seconds from Home Assistant's birth message to the last predictions published again: its
#: entities subscribe their state topics only once their configs are set up
REPUBLISH_DELAY_S = 5.0
#: the configs' node level without ``[homeassistant] node_id``: not the client id, so that a
#: new client id overwrites the same retained configs instead of adding a second set
DEFAULT_NODE = "edgebayes"


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
        client_id: the runtime's client id; configs that older releases published under it
            (node level and unique ids from it) are removed when a device is first announced.
        model_names: the configured models' names (shown as the HA device's model).
        publish: ``publish(topic, payload, qos, retain)``.

    ``tick(devices)`` (worker loop) announces new devices, marks silent ones offline, retires
    those silent longer and publishes the predictions due after HA's birth; ``handlers()``
    (worker thread too) take HA's birth message and the retained configs of an earlier run;
    ``source_offline`` marks a device offline when its source says so. ``clock`` (unix s) is
    replaceable for tests.
    """

    def __init__(self, cfg: DiscoveryConfig, topics, client_id: str, model_names: list[str], publish):
        from edgebayes import __version__

        self.cfg = cfg
        self.topics = topics
        self.node = cfg.node_id or DEFAULT_NODE
        self.uid_prefix = f"edgebayes_{cfg.node_id}" if cfg.node_id else "edgebayes"
        self.legacy_node = client_id if cfg.node_id is None and client_id != self.node else None
        self.model = "online classifier: " + ", ".join(model_names)
        self.version = __version__
        self.publish = publish
        self.ha_status_topic = f"{cfg.prefix}/status"
        self.clock = time.time
        self.republish_delay_s = REPUBLISH_DELAY_S
        self.announced: dict[str, float] = {}  # device -> last activity (unix s)
        self.online: dict[str, bool] = {}  # device -> availability last published
        self.n_republished = 0  # predictions published again after HA's birth messages
        self.n_adopted = 0  # devices known from an earlier run's retained configs
        self._attributes: dict[str, bytes] = {}  # device -> attributes last published
        self._seen_seq: dict[str, int] = {}
        self._offline_seq: dict[str, int] = {}  # device -> last seq before its source went offline
        self._cleared: set[str] = set()  # devices whose stale configs were removed in this run
        self._republish_at: float | None = None

    # --- topics and payloads ----------------------------------------------------------------
    def entity_topics(self, device: str, node: str | None = None) -> dict[str, str]:
        """component -> per-entity config topic of ``device`` (under ``node``, default ours)."""
        node = node or self.node
        drift = self.cfg.drift
        return {"sensor": f"{self.cfg.prefix}/sensor/{node}/{device}_prediction/config",
                drift: f"{self.cfg.prefix}/{drift}/{node}/{device}_drift/config"}

    def device_config_topic(self, device: str) -> str:
        """``device``'s device-based config topic (``configs = "device"``)."""
        return f"{self.cfg.prefix}/device/{self.node}/{device}/config"

    def config_topics(self, device: str) -> dict[str, str]:
        """What this runtime publishes for ``device``: component -> config topic, or
        ``{"device": topic}`` with ``configs = "device"``."""
        if self.cfg.configs == "device":
            return {"device": self.device_config_topic(device)}
        return self.entity_topics(device)

    def stale_topics(self, device: str) -> list[str]:
        """Config topics of ``device`` this runtime does not publish but an earlier one may have:
        the other ``configs`` form, the other ``drift`` component, and the per-client-id node
        of older releases (their unique ids would duplicate ours in HA)."""
        ours = set(self.config_topics(device).values())
        other = "binary_sensor" if self.cfg.drift == "event" else "event"
        nodes = [self.node] + ([self.legacy_node] if self.legacy_node else [])
        candidates = [f"{self.cfg.prefix}/device/{self.node}/{device}/config"]
        for node in nodes:
            candidates += [*self.entity_topics(device, node).values(),
                           f"{self.cfg.prefix}/{other}/{node}/{device}_drift/config"]
        return [t for t in dict.fromkeys(candidates) if t not in ours]

    def state_topics(self, device: str) -> tuple[str, str]:
        """``device``'s availability and attributes topics (retained, this class publishes them)."""
        return self.topics.device_topic(device, "availability"), self.topics.device_topic(device, "attributes")

    def configs(self, device: str) -> dict[str, dict]:
        """config topic -> config payload for ``device``."""
        uid = f"{self.uid_prefix}_{device}"
        available, _ = self.state_topics(device)
        avail = {"availability": [{"topic": topic, "payload_available": "online", "payload_not_available": "offline"}
                                  for topic in (self.topics.status, available)],
                 "availability_mode": "all"}
        dev = {"identifiers": [uid], "name": f"{device} (edgebayes)", "manufacturer": "edgebayes",
               "model": self.model, "sw_version": self.version}
        origin = {"name": "edgebayes", "sw": self.version, "url": ORIGIN_URL}
        entities = self._entities(device, uid)
        if self.cfg.configs == "device":
            # HA 2024.11+: one config, device, origin and availability shared by its components
            cmps = {key: {"p": component, **payload} for component, (key, payload) in entities.items()}
            return {self.device_config_topic(device): {"dev": dev, "o": origin, **avail, "cmps": cmps}}
        topics = self.entity_topics(device)
        return {topics[c]: {**payload, **avail, "device": dev, "origin": origin}
                for c, (_, payload) in entities.items()}

    def _entities(self, device: str, uid: str) -> dict[str, tuple[str, dict]]:
        """component -> (key, entity config without device, origin, availability)."""
        t = self.topics
        pred_topic, drift_topic = t.device_topic(device, "prediction"), t.device_topic(device, "drift")
        sensor = {
            "name": "Prediction", "unique_id": f"{uid}_prediction", **self._entity_id("sensor", f"{device}_prediction"),
            "state_topic": pred_topic,
            "value_template": "{{ value_json.y_pred if value_json.y_pred is not none else 'unknown' }}",
            "json_attributes_topic": self.state_topics(device)[1], "expire_after": math.ceil(self.cfg.offline_after_s),
            "icon": "mdi:chart-bell-curve",
        }
        drift = {"name": "Drift", "unique_id": f"{uid}_drift", **self._entity_id(self.cfg.drift, f"{device}_drift"),
                 "state_topic": drift_topic, "entity_category": "diagnostic"}
        if self.cfg.drift == "event":
            drift.update(event_types=["warning", "drift"],
                         value_template="{{ dict(value_json, event_type=value_json.level) | tojson }}")
        else:
            drift.update(device_class="problem", payload_on="ON", payload_off="OFF",
                         value_template="{{ 'ON' if value_json.level == 'drift' else 'OFF' }}",
                         off_delay=self.cfg.drift_off_delay_s, json_attributes_topic=drift_topic)
        return {"sensor": ("prediction", sensor), self.cfg.drift: ("drift", drift)}

    def _entity_id(self, component: str, object_id: str) -> dict[str, str]:
        """The suggested entity id (``_entity_id``), none with ``entity_ids = false``: HA then
        applies its own entity-id format (a supplied one overrides it since HA 2026.8)."""
        return _entity_id(component, object_id) if self.cfg.entity_ids else {}

    # --- announcing and retiring --------------------------------------------------------------
    def announce(self, device: str) -> None:
        if device not in self._cleared:
            self._cleared.add(device)
            for topic in self.stale_topics(device):
                self.publish(topic, b"", qos=1, retain=True)
        for topic, payload in self.configs(device).items():
            self.publish(topic, json.dumps(payload).encode(), qos=1, retain=True)
        self.announced.setdefault(device, self.clock())
        log.info("Home Assistant discovery: announced device %s", device)

    def retire(self, device: str) -> None:
        """Remove ``device``'s entities from Home Assistant (empty retained configs, the stale
        ones too), and its retained availability and attributes."""
        for topic in [*self.config_topics(device).values(), *self.stale_topics(device), *self.state_topics(device)]:
            self.publish(topic, b"", qos=1, retain=True)
        self._drop(device)
        log.info("Home Assistant discovery: retired device %s", device)

    def forget(self, device: str) -> None:
        """Stop publishing for ``device`` and leave its configs and retained state as they are
        (another runtime of a pool serves it now and announces it as its own)."""
        self._drop(device)
        self._seen_seq.pop(device, None)  # so that it is announced again if it comes back here

    def _drop(self, device: str) -> None:
        self._cleared.discard(device)
        self.announced.pop(device, None)
        self.online.pop(device, None)
        self._attributes.pop(device, None)
        self._offline_seq.pop(device, None)

    # --- incoming -----------------------------------------------------------------------------
    def handlers(self) -> dict[str, Callable[[str, bytes], None]]:
        """topic filter -> ``handler(topic, payload)`` for the ``Intake``: HA's birth message,
        and this runtime's own config topics (their retained configs name the devices an
        earlier run announced)."""
        nodes = [self.node] + ([self.legacy_node] if self.legacy_node else [])
        return {self.ha_status_topic: lambda topic, payload: self.ha_status(payload),
                **{f"{self.cfg.prefix}/+/{node}/+/config": self.retained_config for node in nodes}}

    def ha_status(self, payload: bytes) -> None:
        """Home Assistant's birth message: it forgot non-retained state; send configs again now,
        and the last predictions ``republish_delay_s`` later (``tick``)."""
        if bytes(payload).strip().lower() == b"online":
            for device in list(self.announced):
                self.announce(device)
            self._republish_at = self.clock() + self.republish_delay_s

    def retained_config(self, topic: str, payload: bytes) -> None:
        """A retained config of ours from an earlier run: its device is taken as last active
        now, so it is marked offline after ``offline_after_s`` and retired after
        ``retire_after_s`` unless it sends a reading (live echoes of our own publishes and
        removals are ignored)."""
        if type(payload) is not Retained or not payload:
            return
        device = config_device(topic)
        if device and device not in self.announced:
            self.announced[device] = self.clock()
            self.n_adopted += 1
            log.info("Home Assistant discovery: device %s known from its retained config (%s)", device, topic)

    def source_offline(self, device: str, seq: int) -> None:
        """``device``'s source says it is offline (a Tasmota LWT, a zigbee2mqtt availability):
        its availability is ``offline`` now, until a reading after ``seq`` (the last one
        assembled before) is served."""
        if device not in self.announced:
            return
        self._offline_seq[device] = seq
        self._set_online(device, False, "its source says it is offline")

    # --- periodic -----------------------------------------------------------------------------
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
                below = self._offline_seq.get(name)
                if below is not None and dev.last_seq <= below:
                    continue  # served before its source went offline
                self._offline_seq.pop(name, None)
                self._active(name, dev, now)
        self._expire(now)
        if self._republish_at is not None and now >= self._republish_at:
            self._republish_at = None
            self._republish(devices)

    def _active(self, name: str, dev, now: float) -> None:
        """``name`` sent a reading: online, attributes if changed, configs if new (after the
        retained state, so HA finds it when it subscribes)."""
        new = name not in self._cleared
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
                self._set_online(name, False, f"no reading for {offline_after:g} s")

    def _set_online(self, name: str, online: bool, why: str = "") -> None:
        """Publish ``name``'s availability (retained) when it changes."""
        if self.online.get(name) is online:
            return
        self.online[name] = online
        self.publish(self.state_topics(name)[0], ONLINE if online else OFFLINE, qos=1, retain=True)
        if not online:
            log.info("Home Assistant discovery: device %s offline (%s)", name, why)

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


def config_device(topic: str) -> str | None:
    """The device of one of our config topics (``<prefix>/<component>/<node>/<object>/config``:
    ``<device>_prediction``, ``<device>_drift``, or the device itself for ``device``), None for
    another topic."""
    component, _, obj = topic.split("/")[-4:-1]
    if component == "device":
        return obj or None
    device, sep, _ = obj.rpartition("_")
    return device if sep and device else None


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
