"""Home Assistant beside the sensors it already has, through a real Mosquitto: a source's own
offline state (Tasmota LWT, zigbee2mqtt availability) reaches the device's availability at
once; device-based discovery configs; configs that survive a client id change; configs of a
device an earlier run announced, retired when it does not come back."""

import json

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from edgebayes.runtime.config import load_config
from edgebayes.runtime.service import Runtime
from tests.runtime_client import wait_for
from tests.test_sources_e2e import Collector

#: a naive Bayes runtime on two climate features, fed by zigbee2mqtt devices (``ZIGBEE``)
ZIGBEE = """
[schema]
features = ["temperature", "humidity"]
[[models]]
name = "nb"
kind = "gaussian_nb"
[output]
format = "json"
[[sources]]
kind = "zigbee2mqtt"
topic = "zigbee2mqtt/+"
features = { temperature = "temperature", humidity = "humidity" }
"""
BASE = ZIGBEE + """\
[[sources]]
kind = "tasmota"
topic = "tele/+/SENSOR"
features = { temperature = "AM2301.Temperature", humidity = "AM2301.Humidity" }
[homeassistant]
discovery = true
offline_after_s = 3600
"""


def runtime(broker, tmp_path, client_id="rt-ha", extra=""):
    path = tmp_path / f"{client_id}.toml"
    path.write_text(f'[broker]\nhost = "{broker.host}"\nport = {broker.port}\nclient_id = "{client_id}"\n'
                    f'reconnect_min_s = 0.1\nreconnect_max_s = 0.5\n[topics]\nprefix = "eb"\n' + BASE + extra)
    rt = Runtime(load_config(path))
    rt.start()
    wait_for(rt.client.subscribed.is_set, what="runtime subscription")
    return rt


def publisher(broker):
    c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="sensors")
    c.connect(broker.host, broker.port)
    c.loop_start()
    return c


def send(client, topic, payload, retain=False):
    client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(5)


def tasmota(t):
    return json.dumps({"Time": "2026-01-01T00:00:00", "AM2301": {"Temperature": t, "Humidity": 40.0}})


def test_a_source_going_offline_makes_its_device_unavailable_at_once(broker, tmp_path):
    rt = runtime(broker, tmp_path)
    live = Collector(broker, ["eb/+/availability"], "live")
    dev = publisher(broker)
    try:
        send(dev, "tele/kitchen/SENSOR", tasmota(20.0))
        send(dev, "zigbee2mqtt/hall", json.dumps({"temperature": 19.0, "humidity": 50.0, "linkquality": 90}))
        send(dev, "zigbee2mqtt/porch", json.dumps({"temperature": 9.0, "humidity": 80.0}))
        wait_for(lambda: all(live.on(f"eb/{d}/availability") == [(b"online", False)]
                             for d in ("kitchen", "hall", "porch")), what="online")
        # Tasmota's LWT (retained, as Tasmota sends it), zigbee2mqtt's JSON and plain forms;
        # offline_after_s is an hour: only the sources can say so now
        send(dev, "tele/kitchen/LWT", b"Offline", retain=True)
        send(dev, "zigbee2mqtt/hall/availability", json.dumps({"state": "offline"}), retain=True)
        send(dev, "zigbee2mqtt/porch/availability", b"offline", retain=True)
        for d in ("kitchen", "hall", "porch"):
            wait_for(lambda d=d: live.on(f"eb/{d}/availability")[-1:] == [(b"offline", False)], what=f"{d} offline")
        assert rt.intake.sources.counts["offline"] == 3
        # the source's "online" alone is no reading: the device stays offline until one comes
        send(dev, "tele/kitchen/LWT", b"Online", retain=True)
        send(dev, "tele/kitchen/SENSOR", tasmota(21.0))
        wait_for(lambda: live.on("eb/kitchen/availability")[-1:] == [(b"online", False)], what="online again")
        wait_for(lambda: rt.worker.serving.n_predictions == 4, what="the fourth prediction")
        assert live.on("eb/kitchen/availability") == [(b"online", False), (b"offline", False), (b"online", False)]
        assert live.on("eb/hall/availability") == [(b"online", False), (b"offline", False)]
    finally:
        dev.loop_stop()
        live.close()
        rt.stop(timeout_s=5)


def _retained(broker, name, filters=("homeassistant/+/+/+/config",)):
    """The retained messages on ``filters``: topic -> payload. The runtime's retained status,
    subscribed last, marks the end (Mosquitto sends retained messages in filter order)."""
    c = Collector(broker, [*filters, "eb/runtime/+/status"], name)
    wait_for(lambda: any(t.startswith("eb/runtime/") for t, _, _ in c.got), what="the retained status")
    c.close()
    return {t: p for t, p, r in c.got if r and p and not t.startswith("eb/runtime/")}


def _configs(broker, name):
    return {t: json.loads(p) for t, p in _retained(broker, name).items()}


def test_device_based_configs_without_entity_ids(broker, tmp_path):
    rt = runtime(broker, tmp_path, extra='configs = "device"\nentity_ids = false\n')
    dev = publisher(broker)
    try:
        send(dev, "tele/kitchen/SENSOR", tasmota(20.0))
        wait_for(lambda: rt.discovery.online.get("kitchen"), what="announcement")
    finally:
        dev.loop_stop()
        rt.stop(timeout_s=5)
    configs = _configs(broker, "ha")
    assert list(configs) == ["homeassistant/device/edgebayes/kitchen/config"]
    cfg = configs["homeassistant/device/edgebayes/kitchen/config"]
    assert set(cfg) == {"dev", "o", "availability", "availability_mode", "cmps"}
    assert cfg["dev"]["identifiers"] == ["edgebayes_kitchen"] and cfg["o"]["name"] == "edgebayes"
    assert [a["topic"] for a in cfg["availability"]] == ["eb/runtime/rt-ha/status", "eb/kitchen/availability"]
    assert {k: c["p"] for k, c in cfg["cmps"].items()} == {"prediction": "sensor", "drift": "event"}
    assert {c["unique_id"] for c in cfg["cmps"].values()} == {"edgebayes_kitchen_prediction", "edgebayes_kitchen_drift"}
    assert cfg["cmps"]["prediction"]["state_topic"] == "eb/kitchen/prediction"
    assert not any(k in c for c in cfg["cmps"].values() for k in ("default_entity_id", "object_id"))


def test_a_new_client_id_keeps_one_set_of_configs_and_old_ones_are_removed(broker, tmp_path):
    dev = publisher(broker)
    # what an older release left: its node level and unique ids from the client id
    legacy = "homeassistant/sensor/rt-new/kitchen_prediction/config"
    send(dev, legacy, json.dumps({"unique_id": "edgebayes_rt-new_kitchen_prediction"}), retain=True)
    try:
        for client_id, t in (("rt-old", 20.0), ("rt-new", 21.0)):
            rt = runtime(broker, tmp_path, client_id=client_id)
            try:
                send(dev, "tele/kitchen/SENSOR", tasmota(t))
                wait_for(lambda rt=rt: rt.discovery.online.get("kitchen"), what="announcement")
            finally:
                rt.stop(timeout_s=5)
    finally:
        dev.loop_stop()
    configs = _configs(broker, "ha")
    assert sorted(configs) == ["homeassistant/event/edgebayes/kitchen_drift/config",
                               "homeassistant/sensor/edgebayes/kitchen_prediction/config"]
    sensor = configs["homeassistant/sensor/edgebayes/kitchen_prediction/config"]
    assert sensor["unique_id"] == "edgebayes_kitchen_prediction"
    assert sensor["default_entity_id"] == "sensor.kitchen_prediction"
    assert sensor["availability"][0]["topic"] == "eb/runtime/rt-new/status"


def test_configs_of_a_device_an_earlier_run_served_are_retired(broker, tmp_path):
    dev = publisher(broker)
    try:
        rt = runtime(broker, tmp_path)
        try:
            send(dev, "tele/kitchen/SENSOR", tasmota(20.0))
            wait_for(lambda: rt.discovery.online.get("kitchen"), what="announcement")
        finally:
            rt.stop(timeout_s=5)
        assert len(_configs(broker, "ha1")) == 2
        # the next run never hears from "kitchen" again
        watch = Collector(broker, ["homeassistant/sensor/edgebayes/kitchen_prediction/config"], "watch")
        rt = runtime(broker, tmp_path, extra="retire_after_s = 1\n")
        try:
            wait_for(lambda: [p for _, p, _ in watch.got][-1:] == [b""], what="its config removed")
            assert rt.discovery.n_adopted == 1 and "kitchen" not in rt.discovery.announced
        finally:
            rt.stop(timeout_s=5)
            watch.close()
        # its configs, retained availability and attributes went with it
        assert _retained(broker, "ha2", ("homeassistant/#", "eb/kitchen/+")) == {}
    finally:
        dev.loop_stop()
