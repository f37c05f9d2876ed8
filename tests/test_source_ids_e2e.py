"""[[sources]] through a real Mosquitto: device ids made from topic names (the mapping logged
once, distinct names making one id refused, never merged into the holder's model, across a
restart too, two literal topics making one id refused at start), and the zigbee2mqtt example's
first reading."""

import json
import logging
from pathlib import Path

import pytest

from edgebayes.runtime.config import ConfigError, load_config
from edgebayes.runtime.service import Runtime
from tests.runtime_client import wait_for
from tests.test_ha_sources_e2e import ZIGBEE, publisher, send
from tests.test_sources_e2e import Collector

SOURCE = ZIGBEE


def write(tmp_path, broker, body, checkpoint=True):
    path = tmp_path / "rt.toml"
    ckpt = f'[checkpoint]\ndir = "{tmp_path / "ckpt"}"\n' if checkpoint else ""
    path.write_text(f'[broker]\nhost = "{broker.host}"\nport = {broker.port}\nclient_id = "rt-ids"\n'
                    f'reconnect_min_s = 0.1\nreconnect_max_s = 0.5\n[topics]\nprefix = "eb"\n{ckpt}' + body)
    return path


def start(path):
    rt = Runtime(load_config(path))
    rt.start()
    wait_for(rt.client.subscribed.is_set, what="runtime subscription")
    return rt


def z2m(t):
    return json.dumps({"temperature": t, "humidity": 50.0, "linkquality": 80})


def test_names_making_one_id_are_refused_not_merged(broker, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="edgebayes.runtime.ingest.ids")
    path = write(tmp_path, broker, SOURCE)
    errors = Collector(broker, ["eb/runtime/rt-ids/error"], "errors")
    dev = publisher(broker)
    rt = start(path)
    try:
        send(dev, "zigbee2mqtt/Küche", z2m(21.0))
        for i, name in enumerate(["Room.1", "Room.1", "Room 1", "Room_1", "Room.1"]):
            send(dev, f"zigbee2mqtt/{name}", z2m(20.0 + i))
        wait_for(lambda: rt.worker.serving.n_predictions == 4, what="Küche and three readings of Room.1")
        wait_for(lambda: rt.worker.reports.errors["device_id_taken"] == 2, what="two refusals")
        assert sorted(rt.worker.devices) == ["K_che", "Room_1"]
        assert rt.worker.devices["Room_1"].last_seq > 0
        assert rt.intake.sources.counts["device_id_taken"] == 2
        wait_for(lambda: len(errors.on("eb/runtime/rt-ids/error")) >= 1, what="the error report")
        report = json.loads(errors.on("eb/runtime/rt-ids/error")[0][0])
        assert report["kind"] == "device_id_taken" and report["topic"] == "zigbee2mqtt/Room 1"
        assert "'Room.1' already holds" in report["error"]
        mapped = [r.getMessage() for r in caplog.records if "is device id" in r.getMessage()]
        assert mapped == ["[[sources]] #1 (zigbee2mqtt): topic name 'Küche' is device id K_che",
                          "[[sources]] #1 (zigbee2mqtt): topic name 'Room.1' is device id Room_1"]
    finally:
        rt.stop(timeout_s=5)
    # after a restart the holder is still Room.1, though Room_1 publishes first
    rt = start(path)
    try:
        send(dev, "zigbee2mqtt/Room_1", z2m(30.0))
        send(dev, "zigbee2mqtt/Room.1", z2m(31.0))
        wait_for(lambda: rt.worker.serving.n_predictions == 1 and rt.worker.reports.errors["device_id_taken"] == 1,
                 what="Room.1 served, Room_1 refused")
    finally:
        rt.stop(timeout_s=5)
        dev.loop_stop()
        errors.close()


def test_two_literal_topics_making_one_id_are_refused_at_start(broker, tmp_path):
    body = SOURCE.replace('topic = "zigbee2mqtt/+"', 'topic = "zigbee2mqtt/Room 1"') + """
[[sources]]
kind = "zigbee2mqtt"
topic = "zigbee2mqtt/Room_1"
features = { temperature = "temperature" }
[[sources]]
kind = "zigbee2mqtt"
topic = "zigbee2mqtt/hall"
device = "hallway"
features = { temperature = "temperature" }
[[sources]]
kind = "zigbee2mqtt"
topic = "zigbee2mqtt/hall_label"
device = "hallway"
label = "occupancy"
"""
    with pytest.raises(ConfigError) as exc:
        Runtime(load_config(write(tmp_path, broker, body, checkpoint=False)))
    assert exc.value.problems == [
        "[[sources]] #2 (zigbee2mqtt): topic 'zigbee2mqtt/Room_1' makes device id 'Room_1' from 'Room_1', as "
        "[[sources]] #1 (zigbee2mqtt) does from 'Room 1': rename one, or give both the same "
        'device = "Room_1" to make them one device']


def test_the_zigbee2mqtt_example_predicts_within_seconds_and_says_what_it_waits_for(broker, tmp_path, caplog):
    """docs/examples/aqara-occupancy.toml ([assembler] interval_s = 60) as shipped."""
    caplog.set_level(logging.INFO, logger="edgebayes.runtime.ingest.router")
    config = load_config(Path(__file__).parent.parent / "docs" / "examples" / "aqara-occupancy.toml")
    config = config.with_overrides(broker.address)
    assert config.assembler.interval_s == 60
    out = Collector(broker, ["edgebayes/hallway/prediction"], "out")
    dev = publisher(broker)
    rt = Runtime(config)
    rt.start()
    try:
        wait_for(rt.client.subscribed.is_set, what="runtime subscription")
        climate = {"battery": 100, "humidity": 45.2, "linkquality": 120, "pressure": 1002.1, "temperature": 21.3}
        send(dev, "zigbee2mqtt/hallway_climate", json.dumps(climate))
        wait_for(lambda: len(out.on("edgebayes/hallway/prediction")) == 1, what="the first prediction")
        said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("assembling device")]
        assert said == ["assembling device hallway: waiting for features [illuminance] (first reading once "
                        "every feature is reported or within 5 s, then every 60 s)"]
        reading = rt.worker.devices["hallway"]
        assert reading.last_seq > 0 and rt.intake.sources.counts["readings"] == 1
    finally:
        rt.stop(timeout_s=5)
        dev.loop_stop()
        out.close()
