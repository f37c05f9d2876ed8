"""[[sources]] end to end through a real Mosquitto: firmware_sim publishing as Tasmota and
Zigbee2MQTT with labels on their own topic, and Home Assistant discovery."""

import dataclasses
import itertools
import json
import threading

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from edgebayes.naive_bayes import GaussianNB
from edgebayes.runtime.config import load_config
from edgebayes.runtime.service import Runtime
from firmware_sim.device import SimConfig, build_devices
from firmware_sim.runner import Simulator
from tests.runtime_client import wait_for

N = 150
FEATURES = ("attrib1", "attrib2", "attrib3")
SOURCES = """
[schema]
features = ["attrib1", "attrib2", "attrib3"]
[[models]]
name = "nb"
kind = "gaussian_nb"
[output]
format = "json"
[[sources]]
kind = "tasmota"
topic = "tele/+/SENSOR"
features = { attrib1 = "SIM.attrib1", attrib2 = "SIM.attrib2", attrib3 = "SIM.attrib3" }
[[sources]]
kind = "tasmota"
topic = "stat/+/RESULT"
label = "Var1"
label_window_after_s = 0.5
[[sources]]
kind = "zigbee2mqtt"
topic = "zigbee2mqtt/z-0"
device = "z-0"
features = { attrib1 = "attrib1", attrib2 = "attrib2", attrib3 = "attrib3" }
[[sources]]
kind = "zigbee2mqtt"
topic = "zigbee2mqtt/z-0_label"
device = "z-0"
label = "action"
label_window_after_s = 0.5
"""


class Collector:
    """A plain MQTT client recording (topic, payload, retain) of its subscriptions."""

    def __init__(self, broker, filters, client_id):
        self.got = []
        self.lock = threading.Lock()
        self.ready = threading.Event()
        c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id=client_id)
        c.on_connect = lambda cl, u, f, rc, p: cl.subscribe([(f_, 1) for f_ in filters])
        c.on_subscribe = lambda *a: self.ready.set()
        c.on_message = self._on_message
        c.connect(broker.host, broker.port)
        c.loop_start()
        self.client = c
        wait_for(self.ready.is_set, what="collector subscription")

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.got.append((msg.topic, msg.payload, msg.retain))

    def on(self, topic):
        with self.lock:
            return [(p, r) for t, p, r in self.got if t == topic]

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


def runtime(broker, tmp_path, extra=""):
    path = tmp_path / "rt.toml"
    path.write_text(f'[broker]\nhost = "{broker.host}"\nport = {broker.port}\nclient_id = "rt-src"\n'
                    f'reconnect_min_s = 0.1\nreconnect_max_s = 0.5\n[topics]\nprefix = "eb"\n' + SOURCES + extra)
    rt = Runtime(load_config(path))
    rt.start()
    wait_for(rt.client.subscribed.is_set, what="runtime subscription")
    return rt


def simulate(broker, fmt, prefix):
    cfg = SimConfig("synth:SEA", limit=N, rate_hz=100.0, seed=3, labels="inline", format=fmt,
                    device_prefix=prefix)
    Simulator(cfg, broker.address, client_id=f"sim-{fmt}").run()
    return [(x.tolist(), y.item() if hasattr(y, "item") else y) for x, y in build_devices(cfg)[0].samples]


def test_tasmota_and_zigbee2mqtt_through_the_worker(broker, tmp_path):
    rt = runtime(broker, tmp_path)
    out = Collector(broker, ["eb/+/prediction"], "collector")
    try:
        data = {"t-0": simulate(broker, "tasmota", "t-"), "z-0": simulate(broker, "zigbee2mqtt", "z-")}
        wait_for(lambda: rt.worker.serving.n_learned == 2 * N, what="every reading learned")
        wait_for(lambda: all(len(out.on(f"eb/{d}/prediction")) == N for d in data), what="predictions")
        for device, samples in data.items():
            preds = [json.loads(p) for p, _ in out.on(f"eb/{device}/prediction")]
            assert len(preds) == N
            assert all(a["seq"] < b["seq"] for a, b in itertools.pairwise(preds))
            # the same model replayed offline: every reading was predicted, then learned with
            # its own label (inline, from the label topic), in order
            nb = GaussianNB()
            for pred, (x, y) in zip(preds, samples[:N]):
                proba = nb.predict_proba_one(x)
                assert pred["proba"] == {str(k): v for k, v in proba.items()}
                nb.learn_one(x, y)
        m = rt.worker.metrics()
        assert (m["n_readings"], m["n_learned"], m["pending_labels"], m["n_malformed"]) == (2 * N, 2 * N, 0, 0)
        assert m["sources"]["readings"] == 2 * N
    finally:
        out.close()
        rt.stop(timeout_s=5)


def test_home_assistant_discovery(broker, tmp_path):
    rt = runtime(broker, tmp_path, "[homeassistant]\ndiscovery = true\nretire_after_s = 60\n")
    live = Collector(broker, ["eb/#"], "live")
    try:
        simulate(broker, "tasmota", "t-")
        wait_for(lambda: rt.worker.serving.n_learned == N, what="readings learned")
        wait_for(lambda: "t-0" in rt.discovery.announced, what="announcement")
        ha = Collector(broker, ["homeassistant/#"], "ha")  # subscribes after: gets the retained configs
        wait_for(lambda: len(ha.got) >= 2, what="retained discovery configs")
        ha.close()
        configs = {t: (json.loads(p), r) for t, p, r in ha.got}
        sensor, sretain = configs["homeassistant/sensor/edgebayes/t-0_prediction/config"]
        event, eretain = configs["homeassistant/event/edgebayes/t-0_drift/config"]
        assert sretain and eretain and len(configs) == 2
        status, available = "eb/runtime/rt-src/status", "eb/t-0/availability"
        for cfg in (sensor, event):
            assert cfg["availability"] == [{"topic": t, "payload_available": "online", "payload_not_available": "offline"}
                                           for t in (status, available)]
            assert cfg["availability_mode"] == "all"
            assert cfg["device"]["identifiers"] == ["edgebayes_t-0"]
            assert cfg["origin"]["name"] == "edgebayes"
        assert sensor["unique_id"] != event["unique_id"]
        assert (sensor["default_entity_id"], event["default_entity_id"]) == ("sensor.t_0_prediction", "event.t_0_drift")
        assert sensor["state_topic"] == "eb/t-0/prediction" and "value_json.y_pred" in sensor["value_template"]
        assert sensor["json_attributes_topic"] == "eb/t-0/attributes"
        assert event["state_topic"] == "eb/t-0/drift" and event["event_types"] == ["warning", "drift"]
        # the topics they point at are the ones the runtime really publishes
        wait_for(lambda: len(live.on(sensor["state_topic"])) == N, what="predictions")
        assert live.on(status) == [(b"online", True)]  # retained, as availability needs
        # attributes only when the model shown or its classes changed (not per reading)
        attrs = [json.loads(p) for p, _ in live.on("eb/t-0/attributes")]
        assert 1 <= len(attrs) <= 3 and attrs[-1] == {"model": "nb", "classes": ["0", "1"]}
        late = Collector(broker, [available, "eb/t-0/attributes"], "late")  # both retained
        wait_for(lambda: len(late.got) == 2, what="retained availability and attributes")
        assert sorted(late.got) == [("eb/t-0/attributes", json.dumps(attrs[-1], sort_keys=True).encode(), True),
                                    (available, b"online", True)]
        # Home Assistant restarts: the last prediction is published again, unchanged
        last = live.on(sensor["state_topic"])[-1][0]
        rt.discovery.republish_delay_s = 0.1
        late.client.publish("homeassistant/status", b"online", qos=1).wait_for_publish(5)  # HA's birth
        wait_for(lambda: len(live.on(sensor["state_topic"])) == N + 1, what="the last prediction again")
        assert live.on(sensor["state_topic"])[-1] == (last, False)
        late.close()
        # silent for retire_after_s (shortened now: not before the checks above): the configs are
        # removed (empty retained payloads)
        discovery = rt.discovery
        discovery.cfg = dataclasses.replace(discovery.cfg, retire_after_s=0.5)
        wait_for(lambda: "t-0" not in rt.discovery.announced, timeout_s=10, what="retirement")
        again = Collector(broker, ["homeassistant/#"], "ha2")
        wait_for(lambda: not again.got or all(p == b"" for _, p, _ in again.got), what="no configs")
        assert all(not p for _, p, _ in again.got)
        again.close()
    finally:
        live.close()
        rt.stop(timeout_s=5)
