"""``firmware-sim monitor --format`` scores the predictions of devices publishing as Tasmota,
Zigbee2MQTT, ESPHome and Shelly, through a real Mosquitto and the runtime reading them
([[sources]]): every reading scored, and the accuracy that of the same model replayed offline."""

import itertools
from pathlib import Path

import pytest

from edgebayes.naive_bayes import GaussianNB
from edgebayes.runtime.config import load_config
from edgebayes.runtime.service import Runtime
from firmware_sim.device import SimConfig, build_devices
from firmware_sim.monitor import Monitor
from firmware_sim.runner import Simulator
from tests.runtime_client import wait_for
from tests.test_sources_e2e import SOURCES

N = 60
CONFIG = SOURCES + """\
[[sources]]
kind = "esphome"
topic = "e-0/sensor/+/state"
features = { attrib1 = "e-0/sensor/attrib1/state", attrib2 = "e-0/sensor/attrib2/state", attrib3 = "e-0/sensor/attrib3/state" }
label = "e-0/sensor/label/state"
label_window_after_s = 0.5
[[sources]]
kind = "shelly"
topic = "s-0/events/rpc"
features = { attrib1 = "number:200.value", attrib2 = "number:201.value", attrib3 = "number:202.value" }
label = { topic = "s-0/status/text:200", path = "text:200.value" }
label_window_after_s = 0.5
"""


@pytest.fixture
def runtime(broker, tmp_path):
    path = tmp_path / "rt.toml"
    path.write_text(f'[broker]\nhost = "{broker.host}"\nport = {broker.port}\nclient_id = "rt-fmt"\n'
                    f'[topics]\nprefix = "eb"\n' + CONFIG)
    rt = Runtime(load_config(path))
    rt.start()
    wait_for(rt.client.subscribed.is_set, what="runtime subscription")
    yield rt
    rt.stop(timeout_s=5)


@pytest.mark.parametrize("fmt", ["tasmota", "zigbee2mqtt", "esphome", "shelly"])
def test_monitor_scores_every_reading_of_each_format(broker, runtime, fmt):
    cfg = SimConfig("synth:SEA", limit=N, rate_hz=100.0, seed=3, labels="inline", format=fmt,
                    device_prefix=f"{fmt[0]}-")
    with Monitor(broker.address, prefix="eb", format=fmt, client_id=f"mon-{fmt}") as mon:
        Simulator(cfg, broker.address, client_id=f"sim-{fmt}").run()
        assert mon.wait_until(lambda t: t["scored"] == N, timeout_s=10), mon.totals()
        totals = mon.summary()["totals"]
    # the runtime's model replayed offline: test, then train, on each labelled reading
    nb, correct = GaussianNB(), 0
    for x, y in itertools.islice(build_devices(cfg)[0].samples, N):
        x, y = x.tolist(), y.item() if hasattr(y, "item") else y
        y_pred = nb.predict_one(x)
        correct += y_pred is not None and str(y_pred) == str(y)
        nb.learn_one(x, y)
    assert (totals["readings"], totals["labels"], totals["predictions"], totals["scored"]) == (N, N, N, N)
    assert totals["correct"] == correct


def test_monitor_scores_the_readme_tasmota_switch_example(broker):
    """README: docs/examples/tasmota-bme280.toml and its simulator command (the label a
    Switch1 state, ON = "open" by the config's label_values)."""
    config = load_config(Path(__file__).parent.parent / "docs" / "examples" / "tasmota-bme280.toml")
    rt = Runtime(config.with_overrides(broker.address))
    rt.start()
    try:
        wait_for(rt.client.subscribed.is_set, what="runtime subscription")
        cfg = SimConfig("synth:SEA", limit=N, rate_hz=100.0, seed=3, format="tasmota", sensor="BME280",
                        fields=("Temperature", "Humidity", "Pressure"), switch="Switch1", device_prefix="tas-")
        with Monitor(broker.address, format="tasmota", switch="Switch1",
                     label_values={"ON": "open", "OFF": "closed"}) as mon:
            Simulator(cfg, broker.address).run()
            assert mon.wait_until(lambda t: t["scored"] == N, timeout_s=10), mon.totals()
            totals = mon.summary()["totals"]
        assert (totals["readings"], totals["labels"], totals["scored"]) == (N, N, N)
        assert totals["correct"] > 0  # classes compared as the runtime names them
    finally:
        rt.stop(timeout_s=5)
