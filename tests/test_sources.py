"""Input adapters against the real payloads in ../shared/payloads, and the assembler and
label windows through the worker's own reading and label path (no broker here)."""

import json
import math
import tomllib
from pathlib import Path

import pytest
from paho.mqtt.client import topic_matches_sub

from edgebayes.runtime.config import ConfigError, Select, load_config, parse_config, parse_path
from edgebayes.runtime.ingest.adapters import make_adapter
from edgebayes.runtime.ingest.assembler import Assembler
from edgebayes.runtime.messages import Retained
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker
from tests.conftest import shared_path
from tests.fakes import RecordingPublisher

ROOT = Path(__file__).resolve().parents[1]
NAN = math.nan
MODELS = [{"name": "nb", "kind": "gaussian_nb"}]


def fixtures(name):
    return json.loads(shared_path(f"payloads/{name}.json").read_text())


def wire(payload) -> bytes:
    """The bytes on the wire: JSON text, plain text as is, nothing for Sparkplug's protobuf."""
    if payload is None:
        return b""
    return payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()


def config(features, sources, **tables):
    return parse_config({"schema": {"features": list(features)}, "models": MODELS, "sources": sources, **tables})


def adapters(features, sources):
    return [make_adapter(i, s) for i, s in enumerate(config(features, sources).sources)]


def outcome(ex):
    """A comparable summary of an ``Extract``."""
    if ex.kind == "values":
        values = {k: ("nan" if math.isnan(v) else v) for k, v in ex.values.items()}
        return ("values", ex.device, values, ex.label) if ex.has_label else ("values", ex.device, values)
    if ex.kind == "availability":
        return ("online" if ex.online else "offline", ex.origin[1])
    return (ex.kind, ex.reason) if ex.kind == "rejected" else ("ignored",)


def run(adapter_list, entries):
    out = []
    for e in entries:
        ad = next((a for a in adapter_list if any(topic_matches_sub(f, e["topic"]) for f in a.filters())),
                  adapter_list[0])
        out.append(outcome(ad.extract(e["topic"], wire(e["payload"]))))
    return out


# --- zigbee2mqtt -------------------------------------------------------------------------------

Z2M = {"temperature": "temperature", "humidity": "humidity", "pressure": "pressure",
       "illuminance": ["illuminance_lux", "illuminance"], "occupancy": "occupancy", "contact": "contact",
       "battery": "battery", "water_leak": "water_leak"}


def test_zigbee2mqtt_fixtures():
    ads = adapters(Z2M, [{"kind": "zigbee2mqtt", "topic": "zigbee2mqtt/#", "features": Z2M},
                         {"kind": "zigbee2mqtt", "topic": "zigbee/#", "features": Z2M}])
    aqara = ("values", "0x00158d0001e50d78", {"battery": 100.0, "illuminance": 0.0, "occupancy": 0.0})
    window = lambda c: ("values", "window-a", {"battery": 100.0, "contact": c, "temperature": 23.0})
    weather = lambda t: ("values", "humidity_xiaomi_bad_stefan",
                         {"battery": 97.0, "humidity": 58.5, "pressure": 1001.8, "temperature": t})
    old = lambda lux: ("values", "0x00158d0002006aa6", {"illuminance": lux, "occupancy": 1.0})
    assert run(ads, fixtures("zigbee2mqtt")) == [
        ("values", "FRIENDLY_NAME", {"temperature": 27.34, "humidity": 44.72}),
        ("values", "FRIENDLY_NAME", {"occupancy": 1.0}),
        *[aqara] * 6,
        old(122.0), old(112.0), old(155.0),
        # battery sent as the string "100.00" by early versions
        ("values", "0x00158d0002006aa6", {"illuminance": 122.0, "occupancy": 0.0, "battery": 100.0}),
        ("values", "Detecteur_mouvement", {"illuminance": 186.0, "occupancy": 1.0}),  # space in the name
        ("values", "0x00158d00054a726a", {"battery": 100.0, "illuminance": 7.0, "occupancy": 1.0}),
        ("values", "czujnikokna2", {"contact": 1.0}),  # custom base topic 'zigbee'
        ("values", "czujnikzalania1", {"battery": 100.0, "water_leak": 0.0}),
        window(0.0), window(1.0), window(0.0), window(1.0), window(0.0), window(1.0),
        *[weather(22.4)] * 4, weather(22.5),
        ("values", "Lumi__salon", {"battery": 100.0, "illuminance": 196.0}),  # ':' and space, 2.x
        ("values", "bewegungsmelder1", {"occupancy": 0.0, "battery": 100.0}),
        ("online", ""), ("online", ""),  # bridge state: plain and JSON forms
        ("offline", "FRIENDLY_NAME"),  # per-device availability
    ]
    assert set(ads[0].filters()) == {"zigbee2mqtt/#", "zigbee2mqtt/bridge/state"}


# --- Tasmota ---------------------------------------------------------------------------------

TASMOTA = {
    "temperature": ["AM2301.Temperature", "BME280.Temperature", "BME280.Temperatur", "DS18B20.Temperature",
                    "DS18B20-1.Temperature", "AHT1X-0x38.Temperature", "SCD40.Temperature", "DHT11.Temperature",
                    "BMP280.Temperature"],
    "humidity": ["AM2301.Humidity", "BME280.Humidity", "BME280.Feuchtigkeit", "AHT1X-0x38.Humidity",
                 "SCD40.Humidity", "DHT11.Humidity"],
    "pressure": ["BME280.Pressure", "BME280.Druck", "BMP280.Pressure"],
    "illuminance": "TSL2561.Illuminance", "co2": "SCD40.CarbonDioxide", "power": ["ENERGY.Power", "Power"],
    "a0": "ANALOG.A0", "switch1": "Switch1", "rssi": "Wifi.RSSI", "contact": "ZbReceived.0x5FA7.Contact",
}


def test_tasmota_fixtures():
    ads = adapters(TASMOTA, [{"kind": "tasmota", "topic": "#", "features": TASMOTA}])
    wemo = lambda h, p: ("values", "ESP-Wemo1-BedRoom",
                         {"switch1": 0.0, "temperature": 24.4, "humidity": h, "pressure": p, "illuminance": 0.0})
    dht = lambda t: ("values", "kidsbedmain", {"temperature": t, "humidity": 41.0})
    rssi = lambda dev, v: ("values", dev, {"rssi": v})
    assert run(ads, fixtures("tasmota")) == [
        ("values", "_topic_", {"temperature": 24.6, "humidity": 58.2}),
        ("values", "_topic_", {"temperature": 21.7, "humidity": 66.6, "pressure": 988.6}),
        ("values", "_topic_", {"temperature": 13.3}),
        ("values", "_topic_", {"temperature": 24.7, "humidity": 61.9}),  # block name with the I2C address
        ("values", "_topic_", {"temperature": 28.8, "humidity": 47.5, "co2": 1204.0}),
        ("values", "tasmota", {"temperature": 20.6}),
        ("values", "ds1820", {"temperature": 20.9}),
        ("online", "tasmota_XXXXXX"), ("offline", "tasmota_XXXXXX"), ("online", "sensor"), ("online", "demo-sensor"),
        rssi("demo-sensor", 86.0),
        ("values", "demo-sensor", {"switch1": 0.0}),
        rssi("tasmota", 100.0),
        ("values", "tasmota", {"a0": 8.0}),
        rssi("ESP-Wemo1-BedRoom", 100.0), wemo(66.0, 1016.4), rssi("ESP-Wemo1-BedRoom", 100.0), wemo(66.4, 1016.5),
        rssi("ESP-Wemo1-BedRoom", 100.0), wemo(66.6, 1016.5),
        dht(24.0), dht(24.0), dht(24.1), dht(24.1),  # no tele/ prefix
        rssi("kidsbedmain", 98.0), rssi("tasmota_2E0369", 88.0),
        # a failed read keeps the block with nulls: missing now
        ("values", "tasmota_2E0369", {"switch1": 1.0, "temperature": "nan", "humidity": "nan"}),
        ("values", "tasmota_C57651", {"temperature": 20.0, "humidity": 60.0}),
        # German build: translated keys
        ("values", "sonoff-nodemcu", {"temperature": 23.1, "humidity": 37.0, "pressure": 990.1}),
        ("values", "sonoff-test", {"temperature": 8.0, "humidity": 78.6, "pressure": 991.3}),
        ("values", "sonoff-test", {"temperature": 8.2, "humidity": 76.7, "pressure": 993.2}),
        # PressureUnit mmHg converted to hPa
        ("values", "tasmota_794BE8", {"temperature": 21.125, "pressure": 753.3 * 1.33322387415}),
        ("values", "caldera", {"switch1": 0.0, "temperature": 21.4}),
        ("values", "tasmota", {"switch1": 0.0}), ("values", "tasmota", {"switch1": 1.0}),
        ("values", "5FA7", {"contact": 1.0}), ("values", "5FA7", {"contact": 0.0}),  # Zigbee bridge
        # FullTopic with the prefix after the topic: the device is the level before 'tele'
        ("values", "denky_D6C0C0", {"power": 170.0}), ("values", "denky_D6C0C0", {"power": 190.0}),
        ("values", "denky_D6C0C0", {"power": 170.0}),
        ("values", "pow1", {"power": 2635.0}),
        ("values", "tasmota-E8A6E4", {"power": 0.0}),  # 2017 ENERGY topic
    ]


def test_tasmota_units_and_dotted_keys():
    ad = adapters(["t", "pm"], [{"kind": "tasmota", "topic": "tele/+/SENSOR",
                                 "features": {"t": "SI7021.Temperature", "pm": 'PMS5003."PM2.5"'}}])[0]
    ex = ad.extract("tele/x/SENSOR", b'{"SI7021":{"Temperature":68.0},"PMS5003":{"PM2.5":12},"TempUnit":"F"}')
    assert ex.values == {"t": 20.0, "pm": 12.0}
    assert ad.filters() == ["tele/+/SENSOR", "tele/+/LWT"]
    assert parse_path('a."b.c".d') == ("a", "b.c", "d")
    for bad in ("a..b", '"a', '"a"b', "a.", "", "a[Id=1", "a[Id]", "a[=1]", "a[Id=].b", "a[Id=1]b", "[Id=1]"):
        with pytest.raises(ValueError):
            parse_path(bad)


def test_tasmota_ds18b20_probes_chosen_by_id_survive_renumbering(monkeypatch):
    """Three probes; the first is removed and Tasmota renumbers the others. Before, a feature
    could only name a block (DS18B20-2), which then held another probe's temperature."""
    assert parse_path('DS18B20[Id=0000059352D4].Temperature') == (
        Select("DS18B20", "Id", "0000059352D4"), "Temperature")
    assert parse_path('"DS.1"[Id=a.b]."T.1"') == (Select("DS.1", "Id", "a.b"), "T.1")
    feats = {"gone": "DS18B20[Id=00000566CC39].Temperature", "cold": "DS18B20[Id=0000059352D4].Temperature",
             "warm": "DS18B20[Id=000005937C90].Temperature"}
    w = worker_with(list(feats), [{"kind": "tasmota", "topic": "tele/+/SENSOR", "features": feats}])
    three = fixtures("tasmota")[2]["payload"]
    assert [three[f"DS18B20-{i}"]["Id"] for i in (1, 2, 3)] == ["00000566CC39", "0000059352D4", "000005937C90"]
    feed(w, "tele/pool/SENSOR", three, at=1.0, monkeypatch=monkeypatch)
    renumbered = {"Time": "t", "DS18B20-1": {"Id": "0000059352D4", "Temperature": 1.5},
                  "DS18B20-2": {"Id": "000005937C90", "Temperature": 72.5}, "TempUnit": "F"}
    feed(w, "tele/pool/SENSOR", renumbered, at=2.0, monkeypatch=monkeypatch)
    pending = w.devices["pool"].pending
    assert pending.get(1000).x == [13.3, 1.2, 22.5]
    x = pending.get(2000).x  # the removed probe is missing; °F converted
    assert math.isnan(x[0]) and x[1:] == [pytest.approx((1.5 - 32) / 1.8), pytest.approx(22.5)]
    # a single probe's block is not numbered; a block name that only starts alike is not a match
    ad = adapters(["t"], [{"kind": "tasmota", "topic": "tele/+/SENSOR",
                           "features": {"t": "DS18B20[Id=030597946B04].Temperature"}}])[0]
    assert outcome(ad.extract("tele/ds1820/SENSOR", wire(fixtures("tasmota")[6]["payload"]))) == (
        "values", "ds1820", {"t": 20.9})
    other = {"DS18B20x": {"Id": "030597946B04", "Temperature": 1}, "DS18B20-a": {"Id": "030597946B04"}}
    assert outcome(ad.extract("tele/ds1820/SENSOR", wire(other))) == ("rejected", "no_feature")


# --- ESPHome, Shelly, Home Assistant statestream, Sparkplug --------------------------------------

def test_esphome_fixtures():
    node = "attic-powerwall"
    feats = {"mode": f"{node}/sensor/firstfloor_inverter_operation_mode/state",
             "limiter": f"{node}/sensor/firstfloor_inverter_limiter_operation_mode/state",
             "demand": f"{node}/sensor/inverter0_power_demand/state",
             "ff_demand": f"{node}/sensor/firstfloor_inverter_power_demand/state",
             "energy": f"{node}/sensor/firstfloor_inverter_energy_yesterday/state",
             "restart": f"{node}/switch/attic-powerwall_restart/state",
             "temperature": "esp-weather-outdoor/sensor/temperature/state",
             "discharge": "yambms/sensor/yambms_jk-bms_1_discharging_power/state"}
    ads = adapters(feats, [{"kind": "esphome", "features": feats}])
    assert run(ads, fixtures("esphome")) == [
        ("rejected", "field"), ("rejected", "field"),  # text sensors on a sensor/ topic: no number
        ("values", node, {"demand": 190.0}), ("values", node, {"ff_demand": 0.0}),
        ("values", node, {"energy": 0.105}), ("values", node, {"restart": 0.0}),
        ("values", "esp-weather-outdoor", {"temperature": 20.0}),
        ("values", "yambms", {"discharge": "nan"}),  # 'nan': no value now
        ("online", "livingroom"), ("offline", "livingroom"),
    ]
    assert {"attic-powerwall/status", "yambms/status"} <= set(ads[0].filters())


def test_shelly_fixtures():
    feats = {"t1": "shellies/+/sensor/temperature", "h1": "shellies/+/sensor/humidity",
             "battery1": "shellies/+/sensor/battery", "t2": "temperature:0.tC", "h2": "humidity:0.rh",
             "battery2": "devicepower:0.battery.percent", "power": "switch:0.apower",
             "current": "switch:0.current", "voltage": "switch:0.voltage", "flag": "boolean:200.value"}
    ads = adapters(feats, [{"kind": "shelly", "topic": "#", "features": feats}])
    mini = "shelly1pmminig3-5432044edbc0"
    assert run(ads, fixtures("shelly")) == [
        ("online", "shellyht-123456"), ("ignored",), ("ignored",),  # Gen1 availability and announces
        ("values", "shellyht-123456", {"t1": 29.62}), ("values", "shellyht-123456", {"h1": 40.5}),
        ("values", "shellyht-123456", {"battery1": 100.0}),
        ("values", "shellyplusht-c049ef8bc088", {"t2": 19.0, "h2": 57.6, "battery2": 0.0}),
        ("values", mini, {"power": 11.5, "current": 0.071}),  # a NotifyStatus delta: only what changed
        ("values", mini, {"power": 11.5, "current": 0.073, "voltage": 240.3}),  # full component status
        ("values", "st1820-8cbfeaa6eba0", {"flag": 0.0}), ("values", "st1820-8cbfeaa6eba0", {"flag": 0.0}),
        ("values", "st1820-8cbfeaa6eba0", {"flag": 1.0}),
    ]
    # a later delta is overlaid on the kept status: the voltage it does not carry is still known
    delta = {"method": "NotifyStatus", "params": {"ts": 1.0, "switch:0": {"apower": 12.0}}}
    ex = ads[0].extract(f"{mini}/events/rpc", json.dumps(delta).encode())
    assert ex.values == {"power": 12.0, "current": 0.073, "voltage": 240.3}


def test_esphome_multi_level_prefix_availability_and_one_device_per_node(monkeypatch):
    """topic_prefix home/livingroom/esp1. Before, the runtime subscribed to home/status, never
    saw the node's status, and a reading came from the humidity kept from before offline."""
    node = "home/livingroom/esp1"
    feats = {"t": f"{node}/sensor/t/state", "h": f"{node}/sensor/h/state"}
    w = worker_with(["t", "h"], [{"kind": "esphome", "features": feats}])
    assert w.intake.sources.filters == [feats["h"], feats["t"], f"{node}/status"]
    feed(w, feats["t"], "21.5", at=10.0, monkeypatch=monkeypatch)
    feed(w, feats["h"], "40", at=10.5, monkeypatch=monkeypatch)
    feed(w, f"{node}/status", "offline", retained=True, at=11.0, monkeypatch=monkeypatch)
    feed(w, feats["t"], "21.7", at=12.0, monkeypatch=monkeypatch)
    assert w.serving.n_readings == 1  # no reading from the humidity of before offline
    feed(w, feats["h"], "41", at=12.5, monkeypatch=monkeypatch)
    assert served(w) == [
        ("home_livingroom_esp1", 10500), ("home_livingroom_esp1", 12500)]
    assert w.metrics()["sources"] == {"readings": 2, "offline": 1}


def test_esphome_nodes_under_one_level_are_separate_devices(monkeypatch):
    feats = {"t": "esphome/+/sensor/t/state", "h": "esphome/+/sensor/h/state"}
    w = worker_with(["t", "h"], [{"kind": "esphome", "features": feats}])
    assert w.intake.sources.filters == [feats["h"], feats["t"], "esphome/+/status"]
    feed(w, "esphome/kitchen/sensor/t/state", "20", at=1.0, monkeypatch=monkeypatch)
    feed(w, "esphome/attic/sensor/t/state", "30", at=1.1, monkeypatch=monkeypatch)
    feed(w, "esphome/kitchen/sensor/h/state", "50", at=1.2, monkeypatch=monkeypatch)
    assert served(w) == [("esphome_kitchen", 1200)]
    assert w.devices["esphome_kitchen"].pending.get(1200).x == [20.0, 50.0]
    ad = w.intake.sources.adapters[0]
    assert outcome(ad.extract("esphome/attic/status", b"offline")) == ("offline", "esphome/attic")
    # a prefix level named like a component; a climate entity one level deeper
    assert ad.publisher("home/switch/esp2/sensor/switch/state") == "home/switch/esp2"
    assert ad.publisher("home/switch/esp2/status") == "home/switch/esp2"
    assert ad.publisher("esp3/climate/th/current_temperature/state") == "esp3"


def test_esphome_configured_availability_topic_is_read(monkeypatch):
    """A custom will topic. Before, the ESPHome adapter ignored availability_topic."""
    feats = {"t": "esp1/sensor/t/state", "h": "esp1/sensor/h/state"}
    w = worker_with(["t", "h"], [{"kind": "esphome", "features": feats, "availability_topic": "esp1/lwt"}])
    feed(w, feats["t"], "21", at=1.0, monkeypatch=monkeypatch)
    feed(w, feats["h"], "40", at=1.1, monkeypatch=monkeypatch)
    feed(w, "esp1/lwt", "offline", at=2.0, monkeypatch=monkeypatch)
    feed(w, feats["t"], "22", at=3.0, monkeypatch=monkeypatch)
    assert w.serving.n_readings == 1 and w.intake.sources.counts["offline"] == 1


def test_shelly_availability_from_the_topic_prefix_and_offline_drops_kept_status(monkeypatch):
    """Gen2 with a multi-level prefix. Before: subscribed to home/online ('#/online' for topic
    '#', not a valid filter), and after offline a delta was overlaid on the stale status."""
    assert adapters(["t"], [{"kind": "shelly", "topic": "#", "features": {"t": "temperature:0.tC"}}])[0].filters() == ["#"]
    gen1 = adapters(["t"], [{"kind": "shelly", "features": {"t": "shellies/+/sensor/temperature"}}])[0]
    assert gen1.filters() == ["shellies/+/sensor/temperature", "shellies/+/online"]
    feats = {"power": "switch:0.apower", "voltage": "switch:0.voltage"}
    w = worker_with(["power", "voltage"], [{"kind": "shelly", "topic": "home/+/+/events/rpc", "features": feats}])
    assert w.intake.sources.filters == ["home/+/+/events/rpc", "home/+/+/online"]
    rpc = "home/shelly/plus1/events/rpc"

    def notify(method, **status):
        return {"method": method, "params": {"ts": 1.0, "switch:0": status}}

    feed(w, rpc, notify("NotifyFullStatus", apower=10.0, voltage=230.0), at=1.0, monkeypatch=monkeypatch)
    feed(w, "home/shelly/plus1/online", "false", retained=True, at=2.0, monkeypatch=monkeypatch)
    feed(w, rpc, notify("NotifyStatus", apower=12.0), at=3.0, monkeypatch=monkeypatch)
    feed(w, rpc, notify("NotifyStatus", apower=13.0), at=4.0, monkeypatch=monkeypatch)
    pending = w.devices["home_shelly_plus1"].pending
    assert served(w) == [("home_shelly_plus1", 1000), ("home_shelly_plus1", 4000)]
    assert pending.get(1000).x == [10.0, 230.0]
    x = pending.get(4000).x  # the voltage of before offline is not known any more
    assert x[0] == 13.0 and math.isnan(x[1])


def test_homeassistant_fixtures_statestream_and_discovery_configs():
    src = {"kind": "json", "topic": "homeassistant/sensor/+/state", "device_level": -2,
           "features": {"temperature": "temperature", "humidity": "humidity",
                        "value": "statestream/blah/sensor/+/state", "garden": "homeassistant/binary_sensor/garden/state"},
           "label": "homeassistant/light/+/state", "label_values": {"on": "lit", "off": "dark"}}
    ads = adapters(["temperature", "humidity", "value", "garden"], [src])
    out = [outcome(ads[0].extract(e["topic"], wire(e["payload"]))) for e in fixtures("homeassistant")]
    assert out == [
        ("values", "master_bedroom_dimmer", {}, "lit"),
        ("rejected", "no_feature"),  # last_updated: not mapped
        ("values", "device_name", {"value": 10.0}), ("rejected", "field"),  # '"Online"' is no number
        ("values", "device_name", {"value": 10.0}), ("rejected", "field"),
        ("ignored",),  # a discovery config
        ("values", "garden", {"garden": 1.0}),
        ("ignored",), ("ignored",),
        ("values", "sensorBedroom", {"temperature": 23.2, "humidity": 43.7}),
        *[("ignored",)] * 7,
    ]


def test_sparkplug_is_refused_with_a_reason():
    with pytest.raises(ConfigError, match=r"kind = 'sparkplug': not supported \(Sparkplug B payloads are protobuf"):
        config(["x"], [{"kind": "sparkplug", "topic": "spBv1.0/#", "features": {"x": "x"}}])
    ad = adapters(["x"], [{"kind": "json", "topic": "spBv1.0/#", "device_level": -1, "features": {"x": "value"}}])[0]
    assert {outcome(ad.extract(e["topic"], wire(e["payload"]))) for e in fixtures("sparkplug")} == {("rejected", "decode")}


def test_config_problems_are_all_reported():
    with pytest.raises(ConfigError) as err:
        config(["t"], [{"kind": "tasmota", "features": {"t": "A.T", "zz": "B"}, "label_values": {"x": 1.5},
                        "device": "bad id", "bogus": 1},
                       {"kind": "json", "topic": "a/+", "features": {"t": "x"}},
                       {"kind": "esphome", "features": {"t": "a/#/b"}}],
               assembler={"interval_s": -1, "max_age_s": 0}, homeassistant={"discovery": True},
               output={"format": "msgpack"})
    text = str(err.value)
    for part in ("unknown key 'bogus'", "feature 'zz' is not in [schema] features", "device = 'bad id'",
                 "label_values = {'x': 1.5}: must map", "key paths need topic", "give device (a fixed id) or device_level",
                 "'a/#/b' is not a valid MQTT topic filter", "[assembler] interval_s = -1",
                 "max_age_s = 0: must be > 0", 'discovery needs [output] format = "json"'):
        assert part in text, part


# --- through the worker: retained, repeats, availability, assembler, label windows ----------------

def worker_with(features, sources, **tables):
    cfg = config(features, sources, output={"format": "json"}, **tables)
    return Worker(cfg, Topics("eb", "+", "rt"), None, session=RecordingPublisher())


def feed(w, topic, payload, retained=False, at=None, monkeypatch=None):
    if at is not None:
        monkeypatch.setattr("edgebayes.runtime.ingest.router.time.time", lambda: at)
    data = wire(payload)
    out = w.intake.sources.handle(topic, Retained(data) if retained else data)
    assert out is not None
    for item, where in out:
        w.serving.serve(item, where, 0.0)


def predictions(w):
    return [json.loads(p) for t, p, *_ in w.session.published if t.endswith("/prediction")]


def served(w):
    """(device, seq) of each reading predicted, in order."""
    return [(t.split("/")[1], json.loads(p)["seq"]) for t, p, *_ in w.session.published if t.endswith("/prediction")]


def test_retained_repeats_and_availability(monkeypatch):
    z = fixtures("zigbee2mqtt")
    w = worker_with(["temperature", "humidity", "pressure"],
                    [{"kind": "zigbee2mqtt", "topic": "zigbee2mqtt/+",
                      "features": {"temperature": "temperature", "humidity": "humidity", "pressure": "pressure"}}])
    feed(w, z[22]["topic"], z[22]["payload"], retained=True, at=100.0, monkeypatch=monkeypatch)
    assert w.serving.n_readings == 0 and w.intake.sources.counts["retained"] == 1  # stale on subscribe
    for i, e in enumerate(z[22:27]):  # four byte-identical publishes in a burst, then a new value
        feed(w, e["topic"], e["payload"], at=100.1 + i * 0.01, monkeypatch=monkeypatch)
    assert w.intake.sources.counts["repeated"] == 3 and w.serving.n_readings == 2
    assert [p["seq"] for p in predictions(w)] == [100100, 100140]
    feed(w, "zigbee2mqtt/bridge/state", "offline", retained=True, at=101.0, monkeypatch=monkeypatch)
    assert w.intake.sources.counts["offline"] == 1 and w.serving.n_readings == 2  # availability is no reading
    assert all(math.isnan(v) for v in w.intake.sources.assembler.devices["humidity_xiaomi_bad_stefan"].values)
    feed(w, "zigbee2mqtt/x", {"temperature": "warm"}, at=102.0, monkeypatch=monkeypatch)
    errors = [json.loads(p) for t, p, *_ in w.session.published if t == "eb/x/error"]
    assert [(e["kind"], e["error"]) for e in errors] == [("field", "feature 'temperature': 'warm' is not a number")]
    assert w.metrics()["sources"] == {"retained": 1, "repeated": 3, "readings": 2, "offline": 1, "field": 1}


def test_zigbee2mqtt_bridge_topics_are_dropped_before_the_size_check(monkeypatch):
    """A retained bridge/devices over the payload limit, on every subscribe to zigbee2mqtt/#.
    Before, it was reported as an oversize error although the topic is ignored anyway."""
    w = worker_with(["t"], [{"kind": "zigbee2mqtt", "topic": "zigbee2mqtt/#", "features": {"t": "temperature"}}])
    big = [{"ieee_address": f"0x{i:016x}", "definition": {"exposes": ["x" * 100]}} for i in range(1000)]
    assert len(wire(big)) > w.intake.sources.max_payload_bytes == 64 * 1024
    for topic in ("zigbee2mqtt/bridge/devices", "zigbee2mqtt/bridge/groups", "zigbee2mqtt/sensor/set"):
        feed(w, topic, big, retained=True, at=1.0, monkeypatch=monkeypatch)
    feed(w, "zigbee2mqtt/sensor", {"temperature": 21.0, "pad": "x" * 70000}, at=2.0, monkeypatch=monkeypatch)
    assert [t for t, *_ in w.session.published if t.endswith("/error")] == ["eb/runtime/rt/error"]
    assert w.metrics()["sources"] == {"ignored": 3, "oversize": 1}  # a device's own message still is


def test_zigbee2mqtt_republish_of_unchanged_values_makes_no_reading(monkeypatch):
    """Three measurements and a republish caused by a linkquality change (cache_state: each
    message repeats every attribute). Before, the republish made a fourth reading."""
    w = worker_with(["temperature", "humidity", "pressure"],
                    [{"kind": "zigbee2mqtt", "topic": "zigbee2mqtt/+",
                      "features": {"temperature": "temperature", "humidity": "humidity", "pressure": "pressure"}}])
    first = fixtures("zigbee2mqtt")[22]["payload"]
    topic, device = "zigbee2mqtt/humidity_xiaomi_bad_stefan", "humidity_xiaomi_bad_stefan"
    feed(w, topic, first, at=10.0, monkeypatch=monkeypatch)
    feed(w, topic, {**first, "linkquality": 80, "last_seen": "2024-03-15T05:35:44Z"}, at=20.0, monkeypatch=monkeypatch)
    assert w.intake.sources.assembler.devices[device].times == [20.0] * 3  # current, though no new reading
    feed(w, topic, {**first, "temperature": 22.5}, at=30.0, monkeypatch=monkeypatch)
    feed(w, topic, {**first, "temperature": 22.5, "humidity": 58.6}, at=40.0, monkeypatch=monkeypatch)
    assert served(w) == [(device, 10000), (device, 30000), (device, 40000)]
    # after offline the values are gone: the same values again are a reading
    feed(w, f"{topic}/availability", {"state": "offline"}, at=50.0, monkeypatch=monkeypatch)
    feed(w, topic, {**first, "temperature": 22.5, "humidity": 58.6}, at=60.0, monkeypatch=monkeypatch)
    assert served(w)[-1] == (device, 60000)
    for at in (70.0, 80.0):  # a null value is unchanged when it is null again
        feed(w, topic, {**first, "pressure": None, "linkquality": at}, at=at, monkeypatch=monkeypatch)
    assert served(w)[-1] == (device, 70000)
    assert w.metrics()["sources"] == {"readings": 5, "unchanged": 2, "offline": 1, "no_value": 1,
                                      "missing_values": 1}


def test_zigbee2mqtt_unchanged_values_with_a_new_label_make_a_reading(monkeypatch):
    w = worker_with(["illuminance"], [{"kind": "zigbee2mqtt", "topic": "zigbee2mqtt/+", "label": "occupancy",
                                       "features": {"illuminance": "illuminance"}}])
    motion = lambda occupied, lq, at: feed(w, "zigbee2mqtt/m", {"illuminance": 5, "occupancy": occupied,
                                                                  "linkquality": lq}, at=at, monkeypatch=monkeypatch)
    motion(True, 10, 1.0)
    motion(True, 20, 2.0)  # linkquality only: no reading
    motion(False, 20, 3.0)  # the label changed: a reading
    assert served(w) == [("m", 1000), ("m", 3000)]
    assert w.metrics()["sources"]["unchanged"] == 1 and w.serving.n_labels == 0 and w.serving.n_learned == 2


def test_esphome_topics_assemble_one_reading_per_round(monkeypatch):
    feats = {"t": "node/sensor/t/state", "h": "node/sensor/h/state"}
    w = worker_with(["t", "h"], [{"kind": "esphome", "features": feats}])
    feed(w, "node/sensor/t/state", "21.5", at=10.0, monkeypatch=monkeypatch)
    assert w.serving.n_readings == 0  # h not there yet
    feed(w, "node/sensor/h/state", "40", at=10.5, monkeypatch=monkeypatch)
    feed(w, "node/sensor/t/state", "21.6", at=11.0, monkeypatch=monkeypatch)
    feed(w, "node/sensor/h/state", "nan", at=11.2, monkeypatch=monkeypatch)  # a report: h missing
    feed(w, "node/sensor/h/state", "41", at=11.5, monkeypatch=monkeypatch)
    feed(w, "node/sensor/h/state", "42", at=12.0, monkeypatch=monkeypatch)  # again: t stopped
    assert [(p["seq"], p["ts"]) for p in predictions(w)] == [(10500, 10.5), (11200, 11.2), (12000, 12.0)]
    pending = w.devices["node"].pending
    xs = [pending.pop(s).x for s in (10500, 11200, 12000)]
    assert xs[0] == [21.5, 40.0] and xs[1][0] == 21.6 and math.isnan(xs[1][1]) and xs[2] == [21.6, 42.0]
    assert w.metrics()["sources"] == {"readings": 3, "no_value": 1, "missing_values": 1}


def test_assembler_cadence_values_age_out_then_silence():
    a = Assembler(("t", "h"), interval_s=10.0, max_age_s=25.0)
    a.update("d", {"t": 1.0}, (0, "p1"), 0.0)
    a.update("d", {"h": 2.0}, (0, "p2"), 5.0)
    first, second, third = a.due(10.0)[0], a.due(20.0)[0], a.due(30.0)[0]
    assert (first.x, second.x) == ([1.0, 2.0], [1.0, 2.0])
    assert math.isnan(third.x[0]) and third.x[1] == 2.0  # t is 30 s old: missing
    a.offline((0, "p2"), 31.0)  # h's publisher went offline: nothing fresh is left
    assert a.due(40.0) == []


def test_label_from_another_topic_with_value_map_and_windows(monkeypatch):
    """Aqara-like: temperature readings from one sensor, occupancy from a motion sensor."""
    w = worker_with(["temperature"], [
        {"kind": "zigbee2mqtt", "topic": "zigbee2mqtt/temp", "device": "room", "features": {"temperature": "temperature"}},
        {"kind": "zigbee2mqtt", "topic": "zigbee2mqtt/motion", "device": "room", "label": "occupancy",
         "label_values": {"true": "occupied", "false": "empty"}, "label_window_before_s": 5, "label_window_after_s": 3},
    ])
    t = lambda v, at: feed(w, "zigbee2mqtt/temp", {"temperature": v}, at=at, monkeypatch=monkeypatch)
    t(20.0, 0.0)
    t(21.0, 4.0)
    feed(w, "zigbee2mqtt/motion", {"occupancy": True, "battery": 90}, at=6.0, monkeypatch=monkeypatch)
    assert w.serving.n_labels == 1 and w.serving.n_learned == 1  # the reading at 4 s (within 5 s before); not the one at 0 s
    t(22.0, 8.0)  # within 3 s after the label: labelled inline, learned at once
    t(23.0, 9.5)  # 3.5 s after: no label
    assert w.serving.n_learned == 2 and len(w.devices["room"].pending) == 2
    feed(w, "zigbee2mqtt/motion", {"occupancy": "maybe"}, at=10.0, monkeypatch=monkeypatch)
    errors = [json.loads(p)["error"] for t_, p, *_ in w.session.published if t_ == "eb/room/error"]
    assert errors == ["label value 'maybe' is not in label_values ('true', 'false')"]
    slot = w.devices["room"].slots[0]
    assert slot.learner.classes_ == ["occupied"] and slot.n_labels == 2


def test_edgebayes_kind_reads_the_protocol_under_another_prefix(monkeypatch):
    w = worker_with(["a", "b"], [{"kind": "edgebayes", "topic": "site2"}])
    assert w.intake.sources.filters == ["site2/+/reading", "site2/+/label"]
    feed(w, "site2/dev1/reading", {"seq": 1, "x": [1.0, 2.0]}, at=1.0, monkeypatch=monkeypatch)
    feed(w, "site2/dev1/label", {"seq": 1, "y": "a"}, at=1.0, monkeypatch=monkeypatch)
    feed(w, "site2/dev1/reading", {"seq": 1, "x": [1.0, 2.0]}, at=5.0, monkeypatch=monkeypatch)
    assert (w.serving.n_readings, w.serving.n_learned, w.reports.errors["duplicate"]) == (1, 1, 1)


def test_example_configs_load():
    aqara = load_config(ROOT / "docs" / "examples" / "aqara-occupancy.toml")
    tasmota = load_config(ROOT / "docs" / "examples" / "tasmota-bme280.toml")
    assert [s.kind for s in aqara.sources] == ["zigbee2mqtt", "zigbee2mqtt"]
    assert aqara.sources[1].label is not None and aqara.homeassistant.discovery is True
    assert [s.kind for s in tasmota.sources] == ["tasmota"]
    assert tasmota.schema.features == ("temperature", "humidity", "pressure")


# --- missing values: a dead probe neither silences its device nor loses a label -----------------

def tasmota_example_worker(**assembler):
    raw = tomllib.loads((ROOT / "docs" / "examples" / "tasmota-bme280.toml").read_text())
    raw["output"] = {"format": "json"}
    raw["assembler"].update(assembler)
    cfg = parse_config(raw)
    return Worker(cfg, Topics("eb", "+", "rt"), None, session=RecordingPublisher())


def bme280(t, h, p, switch):
    return {"Time": "2024-01-01T00:00:00", "BME280": {"Temperature": t, "Humidity": h, "Pressure": p},
            "Switch1": switch, "TempUnit": "C", "PressureUnit": "hPa"}


def learned_classes(w, device):
    return w.devices[device].slots[0].learner.classes_


def test_a_null_probe_gives_a_reading_with_nan_that_keeps_the_messages_label(monkeypatch):
    """The Tasmota example (interval_s = 0): the BME280 reports null temperature in one message.
    Before, that device's readings stopped until the probe came back, the message's Switch1
    was thrown away and no counter moved."""
    w = tasmota_example_worker()
    feed(w, "tele/tas-0/SENSOR", bme280(21.0, 40.0, 1000.0, "ON"), at=100.0, monkeypatch=monkeypatch)
    feed(w, "tele/tas-0/SENSOR", bme280(None, 41.0, 1001.0, "OFF"), at=400.0, monkeypatch=monkeypatch)
    feed(w, "tele/tas-0/SENSOR", bme280(22.0, "nan", 1002.0, "ON"), at=700.0, monkeypatch=monkeypatch)
    assert [p["seq"] for p in predictions(w)] == [100000, 400000, 700000]
    assert (w.serving.n_readings, w.serving.n_learned, len(w.devices["tas-0"].pending)) == (3, 3, 0)
    assert learned_classes(w, "tas-0") == ["open", "closed"]  # the OFF of the null message
    assert w.metrics()["sources"] == {"readings": 3, "no_value": 2, "missing_values": 2}


def test_a_probe_left_out_of_the_message_is_missing_and_an_all_dead_board_is_reported(monkeypatch):
    """Tasmota leaves a failed sensor out of SENSOR. Before, no reading came while it was out,
    with no error; then the next reading mixed values of two messages."""
    w = tasmota_example_worker()
    feed(w, "tele/tas-0/SENSOR", bme280(21.0, 40.0, 1000.0, "ON"), at=100.0, monkeypatch=monkeypatch)
    left_out = {"Time": "2024-01-01T00:05:00", "BME280": {"Humidity": 41.0}, "Switch1": "OFF"}
    feed(w, "tele/tas-0/SENSOR", left_out, at=400.0, monkeypatch=monkeypatch)
    assert [p["seq"] for p in predictions(w)] == [100000, 400000]
    assert learned_classes(w, "tas-0") == ["open", "closed"]
    feed(w, "tele/tas-0/SENSOR", {"Time": "2024-01-01T00:10:00", "Switch1": "ON"}, at=700.0,
         monkeypatch=monkeypatch)
    errors = [json.loads(p) for t, p, *_ in w.session.published if t == "eb/tas-0/error"]
    assert [(e["kind"], e["error"]) for e in errors] == [
        ("too_few_values", ("no value for temperature, humidity, pressure: fewer than [assembler] "
                           "min_features = 1 present, no reading"))]
    assert w.serving.n_readings == 2
    assert w.metrics()["sources"] == {"readings": 2, "no_value": 5, "missing_values": 2, "too_few_values": 1}


def test_min_features_refuses_a_reading_with_too_few_values(monkeypatch):
    w = tasmota_example_worker(min_features=2)
    feed(w, "tele/tas-0/SENSOR", bme280(None, None, 1000.0, "ON"), at=100.0, monkeypatch=monkeypatch)
    feed(w, "tele/tas-0/SENSOR", bme280(None, 40.0, 1000.0, "ON"), at=400.0, monkeypatch=monkeypatch)
    assert [p["seq"] for p in predictions(w)] == [400000]
    assert w.metrics()["sources"] == {"readings": 1, "no_value": 3, "missing_values": 1, "too_few_values": 1}
    with pytest.raises(ConfigError, match=r"min_features = 4: must be an integer in 1\.\.3"):
        tasmota_example_worker(min_features=4)


def test_a_topic_that_stops_does_not_hold_the_others_back():
    """ESPHome-like, one topic per sensor: h stops publishing. Before, no reading ever came."""
    a = Assembler(("t", "h"), interval_s=0.0, max_age_s=25.0)
    assert a.update("d", {"t": 1.0}, (0, "p"), 0.0) is None
    assert a.update("d", {"h": 2.0}, (0, "p"), 1.0).x == [1.0, 2.0]
    assert a.update("d", {"t": 3.0}, (0, "p"), 10.0) is None
    assert a.update("d", {"t": 4.0}, (0, "p"), 20.0).x == [4.0, 2.0]  # h is 19 s old: kept
    assert a.update("d", {"t": 5.0}, (0, "p"), 30.0) is None
    r = a.update("d", {"t": 6.0}, (0, "p"), 40.0)
    assert r.x[0] == 6.0 and math.isnan(r.x[1])  # h is 39 s old: missing


def test_a_source_whose_paths_match_nothing_says_so_once(monkeypatch, caplog):
    """firmware-sim's default SIM block under the BME280 example: before, only a metrics count."""
    w = tasmota_example_worker()
    for i in range(25):
        feed(w, f"tele/tas-{i}/SENSOR", {"Time": "t", "SIM": {"attrib1": 1.0}, "TempUnit": "C"},
             at=100.0 + i, monkeypatch=monkeypatch)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        ("[[sources]] #1 (tasmota): 10 messages and none holds a mapped feature or the label; the "
        "last, on tele/tas-9/SENSOR: no mapped feature or label (its keys: Time, SIM, TempUnit). "
        "Check the key paths (counted in the metrics as sources.no_feature)")]
    assert w.metrics()["sources"] == {"no_feature": 25}


def test_a_source_that_matched_once_is_not_hinted_at(monkeypatch, caplog):
    w = tasmota_example_worker()
    feed(w, "tele/tas-0/SENSOR", bme280(21.0, 40.0, 1000.0, "ON"), at=100.0, monkeypatch=monkeypatch)
    for i in range(12):  # e.g. a board without the sensor under the same wildcard
        feed(w, "tele/tas-1/SENSOR", {"Time": "t", "SIM": {"a": i}}, at=101.0 + i, monkeypatch=monkeypatch)
    assert [r for r in caplog.records if r.levelname == "WARNING"] == []


def test_assembler_offline_names_the_devices_left_without_values():
    a = Assembler(("t", "lux"), interval_s=0.0, max_age_s=600.0)
    a.update("hall", {"t": 21.0}, (0, "climate"), 0.0)
    a.update("hall", {"lux": 40.0}, (1, "motion"), 1.0)
    a.update("porch", {"t": 9.0}, (0, "porch"), 1.0)
    last = a.devices["hall"].last_seq
    assert a.offline((1, "motion"), 2.0) == []  # the climate sensor still reports for it
    assert a.offline((0, ""), 3.0) == [("hall", last), ("porch", -1)]  # the bridge: all of source 0


def test_esphome_status_and_shelly_online_take_their_devices_offline():
    from edgebayes.runtime.ingest.router import SourceRouter

    cfg = config(("t",), [
        {"kind": "esphome", "topic": "node1/sensor/t/state", "features": {"t": "node1/sensor/t/state"}},
        {"kind": "shelly", "topic": "shelly1/events/rpc", "features": {"t": '"temperature:0".tC'}},
    ])
    said = []
    router = SourceRouter(cfg, on_offline=lambda device, seq: said.append((device, seq)))
    router.handle("node1/sensor/t/state", b"21.5")
    rpc = {"method": "NotifyStatus", "params": {"temperature:0": {"id": 0, "tC": 20.1}}}
    router.handle("shelly1/events/rpc", json.dumps(rpc).encode())
    seqs = {d: dev.last_seq for d, dev in router.assembler.devices.items()}
    router.handle("node1/status", b"offline")
    router.handle("shelly1/online", b"false")
    assert said == [("node1", seqs["node1"]), ("shelly1", seqs["shelly1"])]


def test_a_feature_no_reading_has_a_value_for_is_told_once(monkeypatch, caplog):
    """A key path that names nothing the device sends (a typo, firmware in another language):
    before, the readings came with that feature missing and only sources.missing_values said so."""
    w = tasmota_example_worker()
    for i in range(25):
        payload = bme280(21.0 + i, 40.0, 1000.0, "ON")
        payload["BME280"]["Temprature"] = payload["BME280"].pop("Temperature")
        feed(w, "tele/tas-0/SENSOR", payload, at=100.0 + i, monkeypatch=monkeypatch)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        "[[sources]]: no value for feature(s) temperature in the first 10 readings; check where the config takes "
        "them from (counted in the metrics as sources.missing_values)"]
    assert w.metrics()["sources"]["missing_values"] == w.metrics()["sources"]["readings"] > 10
