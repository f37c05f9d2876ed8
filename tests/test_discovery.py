"""Home Assistant discovery (edgebayes.runtime.discovery) without a broker: the config payloads
against Home Assistant's MQTT schemas, per-device availability, attributes published only when
they change, and the last predictions published again when Home Assistant restarts."""

import json
import re
from types import SimpleNamespace

import pytest

from edgebayes.runtime.config import DiscoveryConfig, parse_homeassistant
from edgebayes.runtime.discovery import Discovery, entity_slug
from edgebayes.runtime.topics import Topics
from tests.fakes import RecordingPublisher

# The keys Home Assistant's MQTT discovery takes per platform, from home-assistant/core
# homeassistant/components/mqtt/: MQTT_AVAILABILITY_SCHEMA and MQTT_ENTITY_COMMON_SCHEMA
# (schemas.py, with default_entity_id since 2025.10), MQTT_RO_SCHEMA (config.py) and each
# platform's schema (sensor.py, event.py, binary_sensor.py). Discovery schemas drop unknown
# keys silently (vol.REMOVE_EXTRA): a misspelt key would just do nothing.
COMMON = {"availability", "availability_mode", "availability_template", "availability_topic",
          "payload_available", "payload_not_available", "device", "origin", "enabled_by_default",
          "entity_category", "entity_picture", "icon", "json_attributes_topic", "json_attributes_template",
          "object_id", "default_entity_id", "unique_id", "state_topic", "value_template", "qos", "encoding"}
PLATFORM = {
    "sensor": {"device_class", "expire_after", "force_update", "last_reset_value_template", "name", "options",
               "suggested_display_precision", "state_class", "unit_of_measurement"},
    "event": {"device_class", "name", "event_types"},
    "binary_sensor": {"device_class", "expire_after", "force_update", "name", "off_delay", "payload_off",
                      "payload_on"},
}
AVAILABILITY_ITEM = {"topic", "payload_available", "payload_not_available", "value_template"}
DEVICE = {"identifiers", "connections", "manufacturer", "model", "model_id", "name", "hw_version",
          "serial_number", "sw_version", "via_device", "suggested_area", "configuration_url"}
ORIGIN = {"name", "sw_version", "support_url", "sw", "url"}  # sw, url: HA's abbreviations of the last two
# homeassistant/core.py valid_entity_id: domain.object_id, [a-z0-9_], no "__", no "_" at either end
VALID_ENTITY_ID = re.compile(r"^(?!.+__)(?!_)[\da-z_]+(?<!_)\.(?!_)[\da-z_]+(?<!_)$")


def prediction(seq, proba, model="nb"):
    y_pred = max(proba, key=proba.get) if proba else None
    return json.dumps({"seq": seq, "ts": None, "y_pred": y_pred, "proba": proba, "model": model,
                       "models": {model: y_pred}, "latency_ms": 0.1 * seq}).encode()


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


def discovery(**cfg):
    pub, clock = RecordingPublisher(), Clock()
    d = Discovery(DiscoveryConfig(discovery=True, **cfg), Topics("eb", "+", "rt"), "rt", ["nb"], pub.publish)
    d.clock = clock
    return d, pub, clock


def reading(devices, name, proba, model="nb"):
    """What the worker leaves on a device after serving one reading."""
    dev = devices.setdefault(name, SimpleNamespace(last_seq=-1, last_prediction=None))
    dev.last_seq += 1
    dev.last_prediction = prediction(dev.last_seq, proba, model)


@pytest.mark.parametrize("drift", ["event", "binary_sensor"])
def test_configs_use_only_home_assistant_keys_and_set_default_entity_id(drift):
    d, _, _ = discovery(drift=drift)
    configs = d.configs("t-0")
    assert set(configs) == set(d.config_topics("t-0").values())
    for topic, cfg in configs.items():
        component = topic.split("/")[1]
        assert set(cfg) <= COMMON | PLATFORM[component], set(cfg) - COMMON - PLATFORM[component]
        assert all(set(a) <= AVAILABILITY_ITEM for a in cfg["availability"])
        assert set(cfg["device"]) <= DEVICE and set(cfg["origin"]) <= ORIGIN
        # HA 2025.10+ wants the full entity id; older ones know only object_id
        assert cfg["default_entity_id"] == f"{component}.{entity_slug(cfg['object_id'])}"
        assert VALID_ENTITY_ID.match(cfg["default_entity_id"]), cfg["default_entity_id"]
    assert configs[d.config_topics("t-0")["sensor"]]["default_entity_id"] == "sensor.t_0_prediction"


def test_availability_needs_the_runtime_and_the_device_and_goes_offline_after_silence():
    d, pub, clock = discovery(offline_after_s=60)
    sensor = d.configs("t-0")[d.config_topics("t-0")["sensor"]]
    assert sensor["availability_mode"] == "all"
    assert [a["topic"] for a in sensor["availability"]] == ["eb/runtime/rt/status", "eb/t-0/availability"]
    assert sensor["expire_after"] == 60  # HA's own clock, for a device the restarted runtime forgot
    devices = {}
    reading(devices, "t-0", {})
    d.tick(devices)
    configs = [i for i, (t, *_) in enumerate(pub.published) if t.endswith("/config")]
    states = [i for i, (t, *_) in enumerate(pub.published) if t.startswith("eb/t-0/")]
    assert max(states) < min(configs)  # retained state first: HA finds it once it subscribes
    for _ in range(5):
        clock.now += 10
        reading(devices, "t-0", {})
        d.tick(devices)
    clock.now += 60.5
    d.tick(devices)
    d.tick(devices)
    assert pub.sent_on("eb/t-0/availability") == [(b"online", True), (b"offline", True)]
    reading(devices, "t-0", {})
    d.tick(devices)
    assert pub.sent_on("eb/t-0/availability")[-1] == (b"online", True)
    assert "t-0" in d.announced  # offline is not retired: its entities stay, unavailable


def test_attributes_are_published_only_when_the_facts_change():
    d, pub, clock = discovery()
    sensor = d.configs("t-0")[d.config_topics("t-0")["sensor"]]
    assert sensor["json_attributes_topic"] == "eb/t-0/attributes"
    assert "json_attributes_template" not in sensor  # no probabilities: new at every reading
    devices = {}
    for i in range(50):  # other probabilities, seq, latency at every reading
        clock.now += 1
        reading(devices, "t-0", {"a": 0.5 + i / 200, "b": 0.5 - i / 200})
        d.tick(devices)
    reading(devices, "t-0", {"a": 0.2, "b": 0.3, "c": 0.5})  # a new class
    d.tick(devices)
    reading(devices, "t-0", {"a": 0.2, "b": 0.3, "c": 0.5}, model="srp")  # another model is shown
    d.tick(devices)
    assert [json.loads(p) for p, _ in pub.sent_on("eb/t-0/attributes")] == [
        {"model": "nb", "classes": ["a", "b"]}, {"model": "nb", "classes": ["a", "b", "c"]},
        {"model": "srp", "classes": ["a", "b", "c"]}]
    assert all(retained for _, retained in pub.sent_on("eb/t-0/attributes"))


def test_home_assistant_birth_publishes_configs_then_the_last_predictions_again():
    d, pub, clock = discovery(offline_after_s=60)
    d.republish_delay_s = 2.0
    devices = {}
    reading(devices, "t-0", {"a": 0.9, "b": 0.1})
    reading(devices, "t-1", {"a": 0.3, "b": 0.7})
    reading(devices, "t-1", {"a": 0.4, "b": 0.6})
    d.tick(devices)
    clock.now += 30
    reading(devices, "t-1", {"a": 0.1, "b": 0.9})
    d.tick(devices)
    clock.now += 40  # t-0 silent for 70 s: offline, its prediction is stale
    d.tick(devices)
    pub.published.clear()
    d.ha_status(b"offline")
    d.tick(devices)
    assert pub.published == []
    d.ha_status(b"online")
    assert {t for t, *_ in pub.published} == {*d.config_topics("t-0").values(), *d.config_topics("t-1").values()}
    pub.published.clear()
    clock.now += 1
    d.tick(devices)
    assert pub.published == []  # HA sets its entities up first
    clock.now += 1.5
    d.tick(devices)
    assert pub.published == [("eb/t-1/prediction", devices["t-1"].last_prediction, 1, False)]
    clock.now += 10
    d.tick(devices)
    assert len(pub.published) == 1 and d.n_republished == 1


def test_retire_clears_availability_and_attributes():
    d, pub, clock = discovery(retire_after_s=100)
    devices = {}
    reading(devices, "t-0", {"a": 1.0})
    d.tick(devices)
    clock.now += 101
    d.tick(devices)
    assert "t-0" not in d.announced
    for topic in ("eb/t-0/availability", "eb/t-0/attributes", *d.config_topics("t-0").values()):
        assert pub.sent_on(topic)[-1] == (b"", True)
    reading(devices, "t-0", {"a": 1.0})  # back: announced again, online, attributes again
    d.tick(devices)
    assert pub.sent_on("eb/t-0/availability")[-1] == (b"online", True)
    assert json.loads(pub.sent_on("eb/t-0/attributes")[-1][0]) == {"model": "nb", "classes": ["a"]}


def test_forget_publishes_nothing_and_a_device_back_here_is_announced_again():
    d, pub, clock = discovery(offline_after_s=60, retire_after_s=100)
    devices = {}
    reading(devices, "t-0", {"a": 1.0})
    d.tick(devices)
    d.forget("t-0")  # another runtime of a pool serves it now; the worker drops it too
    dev = devices.pop("t-0")
    n = len(pub.published)
    clock.now += 200
    d.tick(devices)  # neither offline nor retired by this runtime, and no birth message
    d.ha_status(b"online")
    assert pub.published[n:] == [] and "t-0" not in d.announced
    devices["t-0"] = dev  # back here with the same last seq (restored from its checkpoint)
    d.tick(devices)
    again = [(t, p) for t, p, *_ in pub.published[n:]]
    assert again[:2] == [("eb/t-0/availability", b"online"), ("eb/t-0/attributes", b'{"classes": ["a"], "model": "nb"}')]
    assert [t for t, p in again[-2:] if p] == list(d.config_topics("t-0").values())


def test_offline_after_s_is_read_and_checked():
    problems = []
    assert parse_homeassistant({"discovery": True, "offline_after_s": 90}, "json", problems).offline_after_s == 90
    assert parse_homeassistant({"offline_after_s": 0}, "json", problems) is None
    assert problems == ["[homeassistant] offline_after_s = 0: must be > 0"]
    assert DiscoveryConfig().offline_after_s == 3600.0


def test_source_offline_holds_until_a_reading_after_it():
    d, pub, _ = discovery()
    devices = {}
    reading(devices, "t-0", {"a": 1.0})
    d.tick(devices)
    reading(devices, "t-0", {"a": 1.0})  # served, but its tick comes after the LWT
    d.source_offline("t-0", devices["t-0"].last_seq)
    d.source_offline("t-9", 5)  # never announced: nothing to mark
    d.tick(devices)
    assert pub.sent_on("eb/t-0/availability") == [(b"online", True), (b"offline", True)]
    assert pub.sent_on("eb/t-9/availability") == []
    reading(devices, "t-0", {"a": 1.0})
    d.tick(devices)
    assert pub.sent_on("eb/t-0/availability")[-1] == (b"online", True)


def test_entity_ids_false_and_configs_device_are_read_and_checked():
    problems = []
    cfg = parse_homeassistant({"discovery": True, "entity_ids": False, "configs": "device"}, "json", problems)
    assert (cfg.entity_ids, cfg.configs, problems) == (False, "device", [])
    assert parse_homeassistant({"configs": "both"}, "json", problems) is None
    assert problems == ["[homeassistant] configs = 'both': must be one of 'entity', 'device'"]
    d, _, _ = discovery(entity_ids=False)
    for cfg in d.configs("t-0").values():
        assert "default_entity_id" not in cfg and "object_id" not in cfg
