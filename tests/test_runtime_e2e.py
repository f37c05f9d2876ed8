"""The runtime end to end through a real Mosquitto, in this process (one runtime per test)."""

import json
import time
from collections import deque

import msgpack
import paho.mqtt.client as paho
import pytest

from edgebayes.naive_bayes import GaussianNB
from edgebayes.runtime.config import load_config
from edgebayes.runtime.service import Runtime
from tests.runtime_client import Device, blobs, wait_for, write_config

TWO_MODELS = """
[[models]]
name = "exact"
kind = "gaussian_nb"
[[models]]
name = "fast"
kind = "gaussian_nb"
learning_rate = 0.05
"""


@pytest.fixture
def make_runtime(broker, tmp_path):
    made = []

    def make(**kw):
        cfg = load_config(write_config(tmp_path / f"rt{len(made)}.toml", broker, **kw))
        rt = Runtime(cfg)
        rt.start()
        made.append(rt)
        wait_for(rt.client.subscribed.is_set, what="runtime subscription")
        return rt

    yield make
    for rt in made:
        rt.stop(timeout_s=5)


class Offline:
    """The runtime's device logic replayed by hand: each model's test-then-train, the
    windowed accuracy, the best-model choice (first configured wins ties)."""

    def __init__(self, models, window=200):
        self.models = models  # name -> learner
        self.windows = {name: deque(maxlen=window) for name in models}

    def predict(self, x):
        probas = {n: m.predict_proba_one(x) for n, m in self.models.items()}
        preds = {n: (max(p, key=p.get) if p else None) for n, p in probas.items()}
        accs = {n: (sum(w) / len(w) if w else -1.0) for n, w in self.windows.items()}
        best = max(self.models, key=lambda n: (accs[n], -list(self.models).index(n)))
        return best, preds, probas[best]

    def learn(self, x, y, preds):
        for n, m in self.models.items():
            self.windows[n].append(int(preds[n] == y))
            m.learn_one(x, y)


def test_inline_labels_predictions_equal_the_offline_models(broker, make_runtime):
    rt = make_runtime(models=TWO_MODELS)
    dev = Device(broker)
    data = blobs(300, seed=1, flip_after=150)  # the fast-forgetting model wins after the change
    for i, (x, y) in enumerate(data):
        dev.publish("kitchen", "reading", {"seq": i, "ts": 1000.0 + i, "x": x, "y": y})
    wait_for(lambda: len(dev.predictions()) == 300 and rt.worker.serving.n_learned == 300, what="300 predictions")
    off = Offline({"exact": GaussianNB(), "fast": GaussianNB(learning_rate=0.05)})
    preds = dev.predictions()
    chosen = set()
    for i, (x, y) in enumerate(data):
        best, models, proba = off.predict(x)
        p = preds[i]
        assert (p["model"], p["models"], p["proba"], p["ts"]) == (best, models, proba, 1000.0 + i)
        assert p["y_pred"] == models[best] and 0.0 <= p["latency_ms"] < 5000
        chosen.add(best)
        off.learn(x, y, models)
    assert chosen == {"exact", "fast"}  # the choice really changed along the stream
    slots = rt.worker.devices["kitchen"].slots
    assert slots[0].learner.state() == off.models["exact"].state()
    assert slots[1].learner.state() == off.models["fast"].state()
    m = rt.worker.metrics()
    assert m["models"]["exact"]["accuracy"] == sum(off.windows["exact"]) / 200
    assert (m["n_readings"], m["n_predictions"], m["n_learned"], m["n_malformed"]) == (300, 300, 300, 0)


def test_delayed_labels_score_the_prediction_made_at_reading_time(broker, make_runtime):
    rt = make_runtime(extra="[output]\nformat = \"json\"\n")
    dev = Device(broker)
    data = blobs(120, seed=3)
    delay = 5
    for i, (x, _) in enumerate(data):
        dev.publish("d1", "reading", {"seq": i, "x": dict(zip(("f0", "f1", "f2"), x))}, fmt="json")
        if i >= delay:
            dev.publish("d1", "label", {"seq": i - delay, "y": data[i - delay][1]}, fmt="json")
    dev.publish("d1", "label", {"seq": 9999, "y": "a"}, fmt="json")
    wait_for(lambda: len(dev.predictions()) == 120 and rt.worker.serving.n_learned == 115, what="labels learned")
    wait_for(lambda: len(dev.got("error")) == 1, what="unknown seq report")
    off = Offline({"nb": GaussianNB()})
    preds, stored = dev.predictions(), {}
    for i, (x, _) in enumerate(data):
        _, models, proba = off.predict(x)
        assert preds[i]["proba"] == proba and preds[i]["y_pred"] == models["nb"]
        stored[i] = models
        if i >= delay:
            off.learn(data[i - delay][0], data[i - delay][1], stored.pop(i - delay))
    d = rt.worker.devices["d1"]
    assert d.slots[0].learner.state() == off.models["nb"].state()
    assert len(d.pending) == delay and sorted(stored) == [115, 116, 117, 118, 119]
    assert rt.worker.metrics()["models"]["nb"]["accuracy"] == sum(off.windows["nb"]) / len(off.windows["nb"])
    err = dev.got("error")[0]
    assert (err["kind"], err["seq"], err["topic"]) == ("unknown_seq", 9999, "eb/d1/label")


def test_labels_that_come_before_their_readings_are_held_and_learned_when_they_come(broker, make_runtime):
    """docs/protocol.md "Label": a label ahead of its reading waits for it; learned then, as an
    inline label would be; one whose reading comes with its own label is reported, not learned."""
    rt = make_runtime(extra="[output]\nformat = \"json\"\nerror_interval_s = 0\n")
    dev = Device(broker)
    data = blobs(60, seed=8)
    dev.publish("d1", "reading", {"seq": 0, "x": data[0][0], "y": data[0][1]}, fmt="json")
    wait_for(lambda: 0 in dev.predictions(), what="the first reading")
    for i in range(1, 60):
        dev.publish("d1", "label", {"seq": i, "y": data[i][1]}, fmt="json")
    dev.publish("d1", "label", {"seq": 7, "y": "b"}, fmt="json")  # a second label for a held seq
    wait_for(lambda: len(dev.got("error")) == 1, what="the second label refused")
    assert rt.worker.metrics()["early_labels"] == 59
    for i in range(1, 60):
        y = "b" if i == 30 else None  # came with its own label: the held one is reported
        dev.publish("d1", "reading", {"seq": i, "x": data[i][0], "y": y}, fmt="json")
    wait_for(lambda: len(dev.predictions()) == 60 and len(dev.got("error")) == 2, what="every reading predicted")
    off = GaussianNB()
    for i, (x, y) in enumerate(data):
        off.learn_one(x, "b" if i == 30 else y)
    assert rt.worker.devices["d1"].slots[0].learner.state() == off.state()
    m = rt.worker.metrics()
    assert (m["n_learned"], m["n_labels"], m["early_labels"], m["pending_labels"], m["n_unknown_labels"]) == (
        60, 58, 0, 0, 2)
    errs = dev.got("error")
    assert [(e["kind"], e["seq"], e["topic"]) for e in errs] == [
        ("unknown_seq", 7, "eb/d1/label"), ("unknown_seq", 30, "eb/d1/label")]
    assert "waits for its reading already" in errs[0]["error"] and "its own label" in errs[1]["error"]

@pytest.mark.parametrize("output", ["", '[output]\nformat = "msgpack"\n'], ids=["default", "msgpack"])
def test_predictions_with_int_labels_decode_with_the_default_decoders(broker, make_runtime, output):
    """JSON by default; in either format ``proba`` has str keys (msgpack-python's default
    ``unpackb`` refuses int map keys) and ``y_pred`` and ``models`` keep the labels' type."""
    make_runtime(extra=output)
    dev = Device(broker)
    data = [(x, ["a", "b"].index(y)) for x, y in blobs(40, seed=4)]
    for i, (x, y) in enumerate(data):
        dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
    wait_for(lambda: len(dev.got("prediction")) == 40, what="40 predictions")
    raw = [payload for topic, payload, _ in dev.raw if topic == "eb/d1/prediction"]
    decoded = [msgpack.unpackb(p) for p in raw] if output else [json.loads(p) for p in raw]
    off = GaussianNB()
    for i, (x, y) in enumerate(data):
        proba = off.predict_proba_one(x)
        p = decoded[i]
        y_pred = max(proba, key=proba.get) if proba else None
        assert (p["seq"], p["proba"], p["y_pred"], p["models"]) == (
            i, {str(c): v for c, v in proba.items()}, y_pred, {"nb": y_pred})
        off.learn_one(x, y)
    assert decoded[-1]["proba"].keys() == {"0", "1"} and type(decoded[-1]["y_pred"]) is int


def test_abrupt_concept_change_raises_a_drift_alert(broker, make_runtime):
    rt = make_runtime()
    dev = Device(broker)
    data = blobs(1200, seed=2, flip_after=600)
    for i, (x, y) in enumerate(data):
        dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
    wait_for(lambda: rt.worker.serving.n_learned == 1200, what="1200 samples learned")
    wait_for(lambda: dev.got("drift"), what="a drift alert")
    first = dev.got("drift")[0]
    assert 600 < first["seq"] < 700, first
    assert (first["model"], first["level"], first["detector"], first["member"]) == ("nb", "drift", "adwin", None)
    assert first["accuracy_before"] > 0.8 and first["accuracy_after"] < first["accuracy_before"] - 0.2
    assert all(a["seq"] > 600 for a in dev.got("drift"))


def test_malformed_input_of_every_kind_is_survived_counted_and_reported(broker, make_runtime):
    rt = make_runtime(extra="[output]\nerror_interval_s = 0\n[queue]\nmax_payload_bytes = 1000\n")
    dev = Device(broker)
    dev.publish("d1", "reading", {"seq": 0, "x": [0.0, 0.0, 0.0], "y": "a"})
    bad = [
        (b"\xc1\x00", "decode"), (b"{nope", "decode"), (b"", "decode"),
        (bytes.fromhex("81a464617461a80000000000000080"), "decode"),  # docs/cases.md C41 legacy raw str
        (msgpack.packb({"seq": 1, "x": [1, 2, 3], "pad": "z" * 2000}), "oversize"),
        (msgpack.packb([1, 2, 3]), "not_a_map"),
        (msgpack.packb({"x": [1, 2, 3]}), "field"),
        (msgpack.packb({"seq": "1", "x": [1, 2, 3]}), "field"),
        (msgpack.packb({"seq": 1, "x": [1, "2", 3], "y": "a"}), "field"),
        (msgpack.packb({"seq": 1, "x": [1, 2, 3], "y": 0.5}), "field"),
        (msgpack.packb({"seq": 1, "x": [1, 2], "y": "a"}), "vector_length"),
        (msgpack.packb({"seq": 1, "x": [1, float("inf"), 3], "y": "a"}), "not_finite"),
        (b'{"seq": 1, "x": [1, NaN, -Infinity], "y": "a"}', "not_finite"),
        (msgpack.packb({"seq": 1, "x": {"f0": 1, "bogus": 2}, "y": "a"}), "unknown_feature"),
        (msgpack.packb({"seq": 0, "x": [5, 5, 5], "y": "b"}), "duplicate"),
    ]
    for payload, _ in bad:
        dev.publish("d1", "reading", payload)
    dev.publish("d1", "label", b'{"seq": 0}')
    dev.publish("d1", "label", b'{"seq": 5000, "y": "a"}')  # beyond max_pending ahead: no reading due
    dev.client.publish("eb/dev.ice/reading", msgpack.packb({"seq": 1, "x": [1, 2, 3]}), qos=1)
    dev.publish("d1", "reading", {"seq": 1, "x": [0.1, 0.0, 0.0], "y": "a"})
    wait_for(lambda: 1 in dev.predictions(), what="the valid reading after the bad ones")
    expected = [k for _, k in bad] + ["field", "unknown_seq", "device_id"]
    wait_for(lambda: len(dev.got("error")) == len(expected), what="every error reported")
    assert sorted(e["kind"] for e in dev.got("error")) == sorted(expected)
    with dev.lock:
        topics = [t for t, _, _ in dev.raw if t.endswith("/error")]
    assert topics.count("eb/runtime/rt-test/error") == 1 and topics.count("eb/d1/error") == len(expected) - 1
    m = rt.worker.metrics()
    assert (m["n_malformed"], m["n_duplicates"], m["n_unknown_labels"]) == (len(bad) - 1 + 1 + 1, 1, 1)
    assert m["n_learned"] == 2 and m["n_internal_errors"] == 0 and rt.worker.is_alive()
    assert rt.worker.devices["d1"].slots[0].learner.classes_ == ["a"]  # nothing bad reached it
    assert sorted(dev.predictions()) == [0, 1]


def test_error_reports_are_rate_limited_per_topic(broker, make_runtime):
    rt = make_runtime(extra="[output]\nerror_interval_s = 0.5\n")
    dev = Device(broker)
    for _ in range(10):
        dev.publish("d1", "reading", b"\xc1")
    wait_for(lambda: rt.worker.reports.errors["decode"] == 10, what="10 errors counted")
    wait_for(lambda: dev.got("error"), what="the first report reaching the device")  # it may trail the count
    assert len(dev.got("error")) == 1 and rt.worker.reports.n_errors_suppressed == 9
    time.sleep(0.6)
    dev.publish("d1", "reading", b"\xc1")
    wait_for(lambda: len(dev.got("error")) == 2, what="the next report")
    assert dev.got("error")[1]["n_suppressed"] == 9


def test_broker_restart_mid_stream_loses_and_repeats_nothing(broker, make_runtime):
    rt = make_runtime(extra="[output]\nprediction_qos = 1\n")
    dev = Device(broker)
    data = blobs(300, seed=4)
    for i, (x, y) in enumerate(data[:150]):
        dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
    broker.stop()  # some of these are still queued, in flight or unacknowledged
    for i, (x, y) in enumerate(data[150:], start=150):
        dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})  # queued by the device's client
    broker.start()
    wait_for(lambda: len(dev.predictions()) == 300 and rt.worker.serving.n_learned == 300, timeout_s=30,
             what="every reading predicted after the restart")
    assert rt.client.n_connects >= 2
    off = GaussianNB()
    preds = dev.predictions()
    for i, (x, y) in enumerate(data):
        assert preds[i]["proba"] == off.predict_proba_one(x), i
        off.learn_one(x, y)
    assert rt.worker.devices["d1"].slots[0].learner.state() == off.state()  # each learned once
    assert rt.worker.devices["d1"].slots[0].n_labels == 300


def test_a_burst_past_the_publishers_unacknowledged_limit_is_processed_in_full(broker, make_runtime):
    """A client holds at most 65,535 unacknowledged QoS 1 messages (16-bit packet ids; fewer
    with ``max_queued_messages_set``, the same refusal); past that paho refuses the publish with
    MQTT_ERR_QUEUE_SIZE. A publisher ignoring it lost every reading of a 100,000 burst past
    ~68,600 (issue 7); one that waits for acknowledgements gets every reading processed once."""
    rt = make_runtime()
    dev = Device(broker, collect=False, max_queued=200)
    data = blobs(3000, seed=5)
    for i, (x, y) in enumerate(data):
        assert dev.publish("d1", "reading", {"seq": i, "x": x, "y": y}).rc == paho.MQTT_ERR_SUCCESS
    wait_for(lambda: rt.worker.serving.n_learned == 3000, timeout_s=60, what="3000 readings learned")
    off = GaussianNB()
    for x, y in data:
        off.learn_one(x, y)
    assert rt.worker.devices["d1"].slots[0].learner.state() == off.state()
    m = rt.worker.metrics()
    assert (m["n_readings"], m["n_dropped"], m["n_duplicates"], m["n_malformed"]) == (3000, 0, 0, 0)


def test_a_rebooted_device_that_counts_again_from_0_is_served(broker, make_runtime):
    """docs/protocol.md "Reboots": a seq not above the last one with a later ts starts a new
    seq epoch; redeliveries keep their ts and stay duplicates; old pending readings go; without
    ts a reboot cannot be told from a redelivery, so seq 0 is a duplicate."""
    rt = make_runtime(extra="[output]\nerror_interval_s = 0\n")
    dev = Device(broker)
    data = blobs(40, seed=6)
    sent = [  # (device, seq, ts, sample index, labelled inline)
        *[("d1", i, 1000.0 + i, i, True) for i in range(20)],
        *[("d1", i, 1000.0 + i, i, False) for i in (20, 21, 22)],  # waiting for labels
        ("d1", 5, 1005.0, 5, True),                                # redelivery: duplicate
        ("d1", 0, 2000.0, 23, True),                               # reboot 1
        ("d1", 1, 2001.0, 24, True),
        ("d1", 1, 2001.0, 24, True),                               # duplicate in the new epoch
        ("d1", 0, 2000.0, 23, True),                               # redelivery: duplicate
        ("d1", 1, 3000.0, 25, True),                               # reboot 2, its seq 0 lost
        *[("d2", i, None, 26 + i, True) for i in range(5)],        # no ts
        ("d2", 3, None, 31, True),                                 # duplicate
        ("d2", 0, None, 32, True),                                 # no ts: duplicate
    ]
    for device, seq, ts, k, inline in sent:
        x, y = data[k]
        dev.publish(device, "reading", {"seq": seq, "ts": ts, "x": x, "y": y if inline else None})
    dev.publish("d1", "label", {"seq": 21, "y": "a"})  # its old-epoch reading dropped: held for the new one's
    dev.publish("d1", "label", {"seq": 1, "y": "a"})  # the new epoch's seq 1, labelled inline: unknown
    accepted = [s for i, s in enumerate(sent) if i not in (23, 26, 27, 34, 35)]
    wait_for(lambda: len(dev.got("prediction")) == len(accepted) and len(dev.got("error")) == 6,
             what="every accepted reading predicted, every refusal reported")
    m = rt.worker.metrics()
    assert (m["n_reboots"], m["n_duplicates"], m["n_pending_dropped"], m["n_unknown_labels"]) == (2, 5, 3, 1)
    assert (m["n_readings"], m["n_learned"], m["pending_labels"], m["early_labels"]) == (
        len(accepted), len(accepted) - 3, 0, 1)
    assert [p["seq"] for p in dev.got("prediction")] == [s[1] for s in accepted]
    assert sorted(e["kind"] for e in dev.got("error")) == ["duplicate"] * 5 + ["unknown_seq"]
    for name in ("d1", "d2"):
        off = GaussianNB()
        for device, _seq, _ts, k, inline in accepted:
            if device == name and inline:
                off.learn_one(*data[k])
        assert rt.worker.devices[name].slots[0].learner.state() == off.state()
    devices = rt.worker.devices.values()
    assert [(d.n_reboots, d.last_seq, d.last_ts) for d in devices] == [(2, 1, 3000.0), (0, 4, None)]


def test_firmware_sim_devices_rebooting_to_seq_0_lose_nothing(broker):
    from edgebayes.runtime.config import parse_config
    from edgebayes.streams import open_stream
    from firmware_sim import FaultRates, SimConfig, Simulator
    from tests.data_files import SENSORS

    readings = str(SENSORS)
    rt = Runtime(parse_config({
        "broker": {"host": broker.host, "port": broker.port, "client_id": "rt-reboots"},
        "schema": {"features": open_stream(readings).schema.feature_names},
        "models": [{"name": "nb", "kind": "gaussian_nb"}],
    }))
    rt.start()
    try:
        wait_for(rt.client.subscribed.is_set, what="runtime subscription")
        sim = Simulator(SimConfig(readings, n_devices=2, rate_hz=300, limit=120, seed=3, reboot_s=0.02,
                                  reboot_seq="zero", faults=FaultRates(reboot_rate=0.05)),
                        broker.address, record=True)
        t = sim.run().totals()
        wait_for(lambda: rt.worker.serving.n_learned == 240, what="every reading learned")
        m = rt.worker.metrics()
    finally:
        rt.stop(timeout_s=5)
    assert t["reboots"] >= 4 and t["readings_published"] == 240
    assert (m["n_readings"], m["n_reboots"], m["n_duplicates"], m["n_malformed"]) == (240, t["reboots"], 0, 0)
    for d in ("sim-0", "sim-1"):
        off = GaussianNB()
        for s in sim.sent:
            if s.message.device == d:
                off.learn_one(s.message.x, s.message.y)
        assert rt.worker.devices[d].slots[0].learner.state() == off.state()


def test_a_burst_through_a_tiny_queue_has_every_prediction(broker, make_runtime):
    """The outgoing bound is not the input queue's size: with ``[queue] max_size = 2`` a burst
    refused most predictions (13,825 of 20,000 at max_size 100). The worker now waits for the
    network loop instead, and every reading gets its prediction."""
    rt = make_runtime(extra="[queue]\nmax_size = 2\n")
    dev = Device(broker)
    data = blobs(1500, seed=6)
    for i, (x, y) in enumerate(data):
        dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
    wait_for(lambda: len(dev.predictions()) == 1500, timeout_s=60, what="1500 predictions")
    assert sorted(dev.predictions()) == list(range(1500))
    assert rt.client.n_publish_failed == 0 and rt.worker.metrics()["n_dropped"] == 0
