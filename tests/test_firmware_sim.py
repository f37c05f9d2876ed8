"""firmware_sim: simulated devices and the monitor, against a real Mosquitto (issue 8)."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import paho.mqtt.client as mqtt
import pytest

from edgebayes.codec import DecodeError, decode, encode
from edgebayes.streams import open_stream
from firmware_sim import (
    MALFORMED_KINDS,
    FaultRates,
    Monitor,
    SimConfig,
    Simulator,
    build_devices,
    fault_plan,
    formats,
    run_devices,
)
from firmware_sim.cli import main as cli_main
from firmware_sim.mqtt import BrokerOptions, Connection, parse_address
from tests.broker import Broker
from tests.data_files import SENSORS, SENSORS_ROWS

ROOT = Path(__file__).resolve().parents[1]
#: a CSV of numeric readings and a label (the tests' own, tests/data_files.py)
READINGS = str(SENSORS)


class Collector:
    """A plain paho subscriber: every message on ``<prefix>/#`` with its arrival time."""

    def __init__(self, broker, prefix="edgebayes"):
        self.messages: list[tuple[str, bytes, float]] = []
        self.lock = threading.Lock()
        ready = threading.Event()
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="test-collector")
        c.on_connect = lambda cl, u, f, rc, p: cl.subscribe(f"{prefix}/#", qos=1)
        c.on_subscribe = lambda *a: ready.set()
        c.on_message = self._on_message
        c.connect(broker.host, broker.port)
        c.loop_start()
        assert ready.wait(5), "collector not subscribed"
        self.client = c

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.messages.append((msg.topic, msg.payload, time.monotonic()))

    def by_topic(self) -> dict[str, list[bytes]]:
        out = defaultdict(list)
        with self.lock:
            for topic, payload, _ in self.messages:
                out[topic].append(payload)
        return out

    def wait_count(self, n: int, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.messages) < n:
            assert time.monotonic() < deadline, f"{len(self.messages)} of {n} messages arrived"
            time.sleep(0.01)

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def collector(broker):
    c = Collector(broker)
    yield c
    c.close()


def sent_by_topic(sim: Simulator) -> dict[str, list[bytes]]:
    out = defaultdict(list)
    for s in sim.sent:
        out[s.message.topic].append(s.payload)
    return out


# -- a device publishes exactly what it claims --------------------------------------------------


def test_devices_publish_their_slices_of_the_file_exactly(broker, collector):
    config = SimConfig(READINGS, n_devices=2, rate_hz=400, limit=40, labels="delayed",
                       label_delay_s=0.01, label_fraction=0.5, seed=3)
    sim = Simulator(config, broker.address, record=True)
    stats = sim.run()
    t = stats.totals()
    collector.wait_count(t["readings_published"] + t["labels_published"])
    X, y = open_stream(READINGS).to_arrays()
    received = collector.by_topic()
    assert set(received) == {f"edgebayes/sim-{d}/{k}" for d in (0, 1) for k in ("reading", "label")}
    for d in (0, 1):
        readings = [decode(p) for p in received[f"edgebayes/sim-{d}/reading"]]
        assert [r["seq"] for r in readings] == list(range(40))
        start = d * (SENSORS_ROWS // 2)  # device d replays the d-th half of the file, in order
        assert [r["x"] for r in readings] == X[start:start + 40].tolist()
        assert all("y" not in r for r in readings)  # delayed labels are not inline
        labels = [decode(p) for p in received[f"edgebayes/sim-{d}/label"]]
        assert labels == [{"seq": lab["seq"], "y": y[start + lab["seq"]]} for lab in labels]
        assert 8 <= len(labels) <= 32  # label_fraction 0.5 of 40
        assert stats.devices[f"sim-{d}"].labels_published == len(labels)
    assert received == sent_by_topic(sim)  # byte for byte, in order


def test_faulty_devices_deliver_exactly_their_script(broker, collector):
    # every fault at once; what the broker delivers is what the script says was sent
    faults = FaultRates(loss_rate=0.1, duplicate_rate=0.1, malformed_rate=0.1, reboot_rate=0.03,
                        burst_rate=0.03, burst_size=4)
    config = SimConfig(READINGS, n_devices=3, rate_hz=500, limit=120, labels="delayed",
                       label_delay_s=0.02, faults=faults, reboot_s=0.05, seed=11)
    sim = Simulator(config, broker.address, record=True)
    stats = sim.run()
    t = stats.totals()
    collector.wait_count(t["readings_published"] + t["labels_published"])
    assert collector.by_topic() == sent_by_topic(sim)
    assert t["samples"] == 360
    assert t["readings_published"] == 360 - t["lost"] + t["duplicated"]
    assert t["reboots"] > 0 and t["bursts"] > 0 and t["lost"] > 0 and t["duplicated"] > 0
    for device, s in stats.devices.items():
        seqs = [decode(p)["seq"] for p in collector.by_topic()[f"edgebayes/{device}/reading"]
                if _decodes_with_int_seq(p)]
        restarts = sum(b < a for a, b in itertools.pairwise(seqs))
        assert restarts == s.reboots  # seq starts again from 0 after each reboot


def _decodes_with_int_seq(payload: bytes) -> bool:
    try:
        return isinstance(decode(payload).get("seq"), int)
    except DecodeError:
        return False


def test_inline_labels_json_and_map_shape(broker, collector):
    config = SimConfig(READINGS, rate_hz=500, limit=10, labels="inline", x_shape="map",
                       encoding="json", label_key="class")
    stats = run_devices(broker.address, **vars_of(config))
    collector.wait_count(10)
    X, y = open_stream(READINGS).to_arrays(10)
    names = open_stream(READINGS).schema.feature_names
    payloads = collector.by_topic()["edgebayes/sim-0/reading"]
    assert all(p.startswith(b"{") for p in payloads)  # JSON
    bodies = [json.loads(p) for p in payloads]
    assert [b["x"] for b in bodies] == [dict(zip(names, row)) for row in X.tolist()]
    assert [b["class"] for b in bodies] == y
    assert stats.totals()["labels_inline"] == 10


def vars_of(config: SimConfig) -> dict:
    return {f: getattr(config, f) for f in config.__dataclass_fields__}


def test_synthetic_source_gives_each_device_its_own_seeded_stream():
    config = SimConfig("synth:SEA", n_devices=2, limit=5, seed=4)
    a = [[m.x.tolist() for m in d.events()] for d in build_devices(config)]
    b = [[m.x.tolist() for m in d.events()] for d in build_devices(config)]
    assert a == b and a[0] != a[1]


# -- determinism and fault rates -----------------------------------------------------------------


def script(config: SimConfig) -> list[list[tuple]]:
    return [
        [(type(e).__name__, getattr(e, "kind", None), getattr(e, "seq", None), e.send_s,
          getattr(e, "delivery", None), getattr(e, "malformed", None), getattr(e, "labelled", None))
         for e in d.events()]
        for d in build_devices(config)
    ]


def test_the_script_is_a_pure_function_of_the_seed():
    faults = FaultRates(loss_rate=0.1, duplicate_rate=0.1, malformed_rate=0.1, reboot_rate=0.05,
                        burst_rate=0.05)
    config = SimConfig(READINGS, n_devices=2, limit=200, labels="delayed", label_fraction=0.7,
                       jitter=0.5, faults=faults, seed=7)
    first = script(config)
    assert first == script(config)
    assert first != script(SimConfig(**{**vars_of(config), "seed": 8}))
    assert first[0] != first[1]  # each device has its own plan
    # the faults do not depend on the label options (each has its own generator)
    other = script(SimConfig(**{**vars_of(config), "labels": "none"}))
    assert [[e[:6] for e in d if e[0] != "Message" or e[1] == "reading"] for d in other] == \
           [[e[:6] for e in d if e[0] != "Message" or e[1] == "reading"] for d in first]


def test_fault_rates_are_honoured_within_sampling_error():
    rates = FaultRates(loss_rate=0.05, duplicate_rate=0.1, malformed_rate=0.2, reboot_rate=0.01,
                       burst_rate=0.02, burst_size=5)
    n = 20000
    plan = fault_plan(rates, np.random.default_rng(1))
    faults = [next(plan) for _ in range(n)]
    delivery = Counter(f.delivery for f in faults)
    starts = sum(f.burst_start for f in faults)
    in_burst = starts * (rates.burst_size - 1)  # readings where no reboot or burst is drawn
    free = n - in_burst

    def within(count, p, trials):
        sd = math.sqrt(trials * p * (1 - p))
        assert abs(count - trials * p) <= 4 * sd, (count, trials * p, sd)

    within(delivery["lost"], 0.05, n)
    within(delivery["duplicated"], 0.1, n)
    within(delivery["malformed"], 0.2, n)
    within(sum(f.reboot for f in faults), 0.01, free)
    within(starts, 0.02, free)
    kinds = Counter(f.malformed for f in faults if f.malformed)
    for kind in MALFORMED_KINDS:
        within(kinds[kind], 1 / 4, delivery["malformed"])
    assert not faults[0].reboot
    # a burst is burst_size readings, published together with the last one
    i = next(i for i, f in enumerate(faults) if f.burst_start)
    assert [f.flush for f in faults[i:i + 5]] == [False] * 4 + [True]


def test_label_fraction_and_burst_timing_in_the_script():
    config = SimConfig("synth:SEA", limit=4000, rate_hz=100, labels="inline", label_fraction=0.3,
                       faults=FaultRates(burst_rate=0.05, burst_size=3), seed=2)
    readings = list(build_devices(config)[0].events())
    labelled = sum(m.labelled for m in readings)
    assert abs(labelled - 1200) <= 4 * math.sqrt(4000 * 0.3 * 0.7)
    starts = [i for i, m in enumerate(readings) if m.burst_start]
    assert starts
    for i in starts:
        burst = readings[i:i + 3]
        assert [m.sample_s for m in burst] == pytest.approx([(i + k) / 100 for k in range(3)])
        assert {m.send_s for m in burst} == {burst[-1].sample_s}  # sent together, at the last
    in_burst = {i + k for i in starts for k in range(3)}
    assert all(m.send_s == m.sample_s for m in readings if m.index not in in_burst)


def test_label_until_takes_the_label_sensor_away():
    # labels up to sample 30, readings only after it; the other draws are those of a run
    # without label_until (same seed: the same jitter, the same labelled samples before 30)
    common = {"limit": 80, "rate_hz": 100, "label_fraction": 0.5, "jitter": 0.3, "seed": 4}
    for labels in ("inline", "delayed"):
        cut = build_devices(SimConfig("synth:SEA", labels=labels, label_until=30, **common))
        full = build_devices(SimConfig("synth:SEA", labels=labels, **common))
        a = [m for m in cut[0].events() if m.kind == "reading"]
        b = [m for m in full[0].events() if m.kind == "reading"]
        assert [m.sample_s for m in a] == [m.sample_s for m in b]
        assert [m.labelled for m in a[:30]] == [m.labelled for m in b[:30]]
        assert any(m.labelled for m in a[:30]) and not any(m.labelled for m in a[30:])
    with pytest.raises(ValueError, match="label_until must be an integer >= 0"):
        SimConfig("synth:SEA", label_until=-1)


def test_each_malformed_kind_is_malformed_for_the_protocol():
    config = SimConfig(READINGS, limit=400, faults=FaultRates(malformed_rate=1.0), seed=5)
    device = build_devices(config)[0]
    n_features = device.schema.n_features
    seen = Counter()
    for m in device.events():
        payload = device.payload(m, ts=1.0)
        if m.malformed == "truncated":
            with pytest.raises(DecodeError):
                decode(payload)
        else:
            body = decode(payload)
            x = body["x"]
            if m.malformed == "wrong_type":
                assert isinstance(body["seq"], str) or isinstance(x, str) or \
                    sum(isinstance(v, str) for v in x) == 1
            elif m.malformed == "wrong_length":
                assert len(x) in (n_features - 1, n_features + 1)
            else:
                assert sum(math.isinf(v) for v in x) == 1
        seen[m.malformed] += 1
    assert set(seen) == set(MALFORMED_KINDS)


# -- timing --------------------------------------------------------------------------------------


def test_delayed_labels_arrive_after_their_delay(broker, collector):
    config = SimConfig(READINGS, rate_hz=50, limit=20, labels="delayed", label_delay_s=0.2)
    sim = Simulator(config, broker.address, record=True)
    stats = sim.run()
    collector.wait_count(40)
    sent = {(s.message.kind, s.message.seq): s.t_sent for s in sim.sent}
    arrival = {}
    for topic, payload, t in collector.messages:
        arrival[(topic.rsplit("/", 1)[1], decode(payload)["seq"])] = t
    # each label reaches a subscriber at least label_delay_s after its reading was published,
    # and not much later than label_delay_s after the reading arrived
    assert min(arrival[("label", s)] - sent[("reading", s)] for s in range(20)) >= 0.2
    assert max(arrival[("label", s)] - arrival[("reading", s)] for s in range(20)) <= 0.3
    assert stats.totals()["labels_published"] == 20


def test_the_rate_does_not_drift(broker, collector):
    n, rate = 300, 300.0
    run_devices(broker.address, READINGS, rate_hz=rate, limit=n)
    collector.wait_count(n)
    offsets = [t - k / rate for k, (_, _, t) in enumerate(collector.messages)]
    # scheduled by deadlines from one start, reading k arrives k / rate after reading 0 plus a
    # constant transit time, whatever each publish cost; a sleep(period) loop would drift by
    # n times its per-reading overhead (30 ms at 0.1 ms per reading)
    drift = np.median(offsets[-20:]) - np.median(offsets[20:40])
    assert abs(drift) < 0.01


# -- the monitor -------------------------------------------------------------------------------


def rule(x) -> str:
    return "tested_positive" if x[1] > 125 else "tested_negative"


def test_monitor_accuracy_equals_a_direct_count(broker):
    with Monitor(broker.address) as monitor:
        config = SimConfig(READINGS, n_devices=2, rate_hz=500, limit=60, labels="inline",
                           label_fraction=0.8, seed=9,
                           faults=FaultRates(duplicate_rate=0.1, loss_rate=0.05))
        sim = Simulator(config, broker.address, record=True)
        stats = sim.run()
        t = stats.totals()
        n_readings = t["readings_published"] - t["duplicated"]
        n_messages = t["readings_published"]
        assert monitor.wait_until(
            lambda c: c["readings"] + c["duplicate_readings"] >= n_messages, 10)
        # stand in for the runtime: one prediction per distinct reading, from a fixed rule,
        # and a second model that always says "tested_negative"
        pub = Connection(BrokerOptions.from_address(broker.address), "test-runtime")
        pub.connect()
        seen = set()
        correct = scored = correct_b = 0
        for s in sim.sent:
            m = s.message
            if (m.device, m.seq) in seen:
                continue
            seen.add((m.device, m.seq))
            y_pred = rule(m.x)
            pub.publish(f"edgebayes/{m.device}/prediction",
                        encode({"seq": m.seq, "ts": s.ts, "y_pred": y_pred, "model": "rule",
                                "models": {"rule": y_pred, "neg": "tested_negative"},
                                "latency_ms": 0.5, "proba": {}}), 1)
            if m.labelled:
                scored += 1
                correct += y_pred == m.y
                correct_b += m.y == "tested_negative"
        assert monitor.wait_until(lambda c: c["predictions"] >= n_readings, 10)
        pub.disconnect()
        summary = monitor.summary()
    totals = summary["totals"]
    assert totals["readings"] == n_readings
    assert totals["duplicate_readings"] == t["duplicated"]
    assert totals["scored"] == scored
    assert totals["correct"] == correct
    assert totals["accuracy"] == correct / scored
    assert summary["models"] == {
        "neg": {"scored": scored, "correct": correct_b, "accuracy": correct_b / scored},
        "rule": {"scored": scored, "correct": correct, "accuracy": correct / scored},
    }
    per_device = sum(d["scored"] for d in summary["devices"].values())
    assert per_device == scored
    assert totals["runtime_latency_ms"] == {"p50": 0.5, "p99": 0.5}
    assert totals["latency_ms"]["p50"] > 0
    assert totals["ts_latency_ms"]["p50"] > totals["latency_ms"]["p50"]  # since the sampling
    assert summary["n_callback_errors"] == 0


def test_monitor_survives_a_raising_callback_and_counts_it(broker, caplog):
    # docs/cases.md C31: an exception in a callback is logged with its traceback and counted;
    # the messages around it are still processed
    class Fragile(Monitor):
        def _handle(self, topic, payload, now):
            if payload == b"0":
                raise ZeroDivisionError("payload 0")
            super()._handle(topic, payload, now)

    with Fragile(broker.address) as monitor:
        pub = Connection(BrokerOptions.from_address(broker.address), "test-pub")
        pub.connect()
        for payload in (encode({"seq": 1, "x": [1.0]}), b"0", encode({"seq": 2, "x": [1.0]})):
            pub.publish("edgebayes/d/reading", payload, 1)
        assert monitor.wait_until(lambda c: c["readings"] >= 2, 5)
        pub.disconnect()
    assert monitor.n_callback_errors == 1
    assert "ZeroDivisionError" in caplog.text


def test_monitor_matches_predictions_across_a_seq_restart():
    # a device reboots and starts again from seq 0; predictions of the readings sent before
    # the reboot arrive late and still find them; a repeated payload is a duplicate
    from firmware_sim.monitor import _Board

    b = _Board(max_records=100)
    for seq in range(5):
        b.reading(seq, digest=seq, y="a", has_y=True, now=0.0)
    b.reading(4, digest=4, y="a", has_y=True, now=0.0)  # duplicate
    for seq in range(3):
        b.reading(seq, digest=100 + seq, y="b", has_y=True, now=1.0)  # after the reboot
    for seq in range(3):
        b.prediction(seq, "b", None, None, None, now=1.01)  # new readings
    for seq in (3, 4):
        b.prediction(seq, "a", None, None, None, now=1.02)  # late, from before the reboot
    b.prediction(0, "a", None, None, None, now=1.03)  # the pre-reboot reading 0
    assert b.n["restarts"] == 1 and b.n["duplicate_readings"] == 1
    assert (b.n["predictions"], b.n["scored"], b.n["correct"]) == (6, 6, 6)


def test_monitor_summary_reports_drift_errors_and_status(broker):
    with Monitor(broker.address) as monitor:
        pub = Connection(BrokerOptions.from_address(broker.address), "test-pub")
        pub.connect()
        for seq, model, level, member in ((5, "nb", "drift", None), (6, "srp", "warning", 3)):
            alert = {"seq": seq, "ts": 1.0, "model": model, "level": level, "detector": "adwin",
                     "member": member}
            pub.publish("edgebayes/d1/drift", encode(alert), 1)
        pub.publish("edgebayes/d1/error", encode({"kind": "not_finite", "seq": 7}), 1)
        pub.publish("edgebayes/runtime/rt1/status", b"online", 1)
        pub.publish("edgebayes/runtime/rt1/metrics", b'{"n_readings": 3}', 1)
        assert monitor.wait_until(lambda c: c["errors"] >= 1 and c["warnings"] >= 1, 5)
        time.sleep(0.1)
        pub.disconnect()
        s = monitor.summary()
    d1 = s["devices"]["d1"]
    assert (d1["drift_alerts"], d1["warnings"], d1["errors"]) == (1, 1, 1)
    assert d1["errors_by_kind"] == {"not_finite": 1}
    assert [(a["model"], a["level"], a["member"]) for a in s["drift_alerts"]] == [
        ("nb", "drift", None), ("srp", "warning", 3)]
    assert s["runtimes"] == {"rt1": {"status": "online", "metrics": {"n_readings": 3}, "errors": 0}}
    assert "d1" in monitor.table()


# -- end to end: simulator -> runtime -> monitor -----------------------------------------------


def wait_online(monitor: Monitor, runtime_id: str, timeout_s: float = 10.0) -> None:
    """Wait for the runtime's retained "online": it has subscribed, readings will reach it."""
    deadline = time.monotonic() + timeout_s
    while monitor.summary()["runtimes"].get(runtime_id, {}).get("status") != "online":
        assert time.monotonic() < deadline, f"the runtime {runtime_id} did not come online"
        time.sleep(0.02)


def test_end_to_end_through_the_runtime(broker, tmp_path):
    from edgebayes.naive_bayes import GaussianNB
    from edgebayes.runtime.config import parse_config
    from edgebayes.runtime.service import Runtime

    names = open_stream(READINGS).schema.feature_names
    config = parse_config({
        "broker": {"host": broker.host, "port": broker.port, "client_id": "rt-sim"},
        "schema": {"features": names},
        "models": [{"name": "nb", "kind": "gaussian_nb"}],
    })
    runtime = Runtime(config)
    runtime.start()
    try:
        with Monitor(broker.address) as monitor:
            wait_online(monitor, "rt-sim")
            sim_config = SimConfig(READINGS, n_devices=2, rate_hz=200, limit=80, seed=1)
            sim = Simulator(sim_config, broker.address, record=True)
            sim.run()
            assert monitor.wait_until(lambda c: c["predictions"] >= 160, 15)
            summary = monitor.summary()
    finally:
        runtime.stop()
    # the same model fed the same samples offline, test-then-train, per device
    correct = 0
    for d in range(2):
        model = GaussianNB()
        for s in sim.sent:
            if s.message.device == f"sim-{d}":
                correct += model.predict_one(s.message.x) == s.message.y
                model.learn_one(s.message.x, s.message.y)
    totals = summary["totals"]
    assert (totals["readings"], totals["predictions"], totals["scored"]) == (160, 160, 160)
    assert totals["correct"] == correct
    assert summary["models"]["nb"]["correct"] == correct
    assert totals["latency_ms"]["p99"] > 0 and totals["ts_latency_ms"]["p99"] > 0


def test_the_runtime_survives_every_fault_of_the_simulator(broker):
    from edgebayes.runtime.config import parse_config
    from edgebayes.runtime.service import Runtime

    names = open_stream(READINGS).schema.feature_names
    runtime = Runtime(parse_config({
        "broker": {"host": broker.host, "port": broker.port, "client_id": "rt-faults"},
        "schema": {"features": names},
        "models": [{"name": "nb", "kind": "gaussian_nb"}],
        "output": {"metrics_interval_s": 0.1},
    }))
    runtime.start()
    faults = FaultRates(loss_rate=0.1, duplicate_rate=0.1, malformed_rate=0.2, reboot_rate=0.02,
                        burst_rate=0.02, burst_size=4)
    config = SimConfig(READINGS, n_devices=2, rate_hz=300, limit=150, labels="delayed",
                       label_delay_s=0.02, faults=faults, reboot_s=0.05, reboot_seq="continue",
                       seed=5)
    try:
        with Monitor(broker.address) as monitor:
            wait_online(monitor, "rt-faults")
            sim = Simulator(config, broker.address, record=True)
            t = sim.run().totals()
            accepted = t["samples"] - t["lost"] - sum(t["malformed"].values())
            assert monitor.wait_until(lambda c: c["predictions"] >= accepted, 15)

            def metrics():
                return monitor.summary()["runtimes"]["rt-faults"]["metrics"] or {}

            deadline = time.monotonic() + 10
            def n_labels():
                m = metrics()  # a label whose reading never came is held for it (60 s), not yet refused
                return m.get("n_labels", 0) + m.get("n_unknown_labels", 0) + m.get("early_labels", 0)

            while n_labels() < t["labels_published"]:
                assert time.monotonic() < deadline, json.dumps([t, metrics()])
                time.sleep(0.05)
            summary = monitor.summary()
    finally:
        runtime.stop()
    m = summary["runtimes"]["rt-faults"]["metrics"]
    # a label whose reading was lost or refused as malformed waits for it (held), or has been refused
    delivered = {(s.message.device, s.message.seq): s.message.delivery for s in sim.sent
                 if s.message.kind == "reading"}
    orphans = sum(
        1 for s in sim.sent if s.message.kind == "label"
        and delivered.get((s.message.device, s.message.seq), "lost") in ("lost", "malformed")
    )
    assert t["lost"] > 0 and t["reboots"] > 0 and t["bursts"] > 0
    assert summary["totals"]["predictions"] == m["n_predictions"] == accepted
    assert m["errors"]["duplicate"] == t["duplicated"]
    assert m["errors"]["decode"] == t["malformed"]["truncated"]
    assert m["errors"]["field"] == t["malformed"]["wrong_type"]
    assert m["errors"]["vector_length"] == t["malformed"]["wrong_length"]
    assert m["errors"]["not_finite"] == t["malformed"]["nonfinite"]
    assert m["n_malformed"] == sum(t["malformed"].values())
    assert m["errors"].get("unknown_seq", 0) + m["early_labels"] == orphans
    assert summary["totals"]["scored"] == m["n_learned"]


# -- command line ------------------------------------------------------------------------------


def test_cli_run_and_monitor(broker, tmp_path, capsys):
    mon_json = tmp_path / "monitor.json"
    monitor = subprocess.Popen(
        [sys.executable, "-m", "firmware_sim", "monitor", "--broker", broker.address,
         "--idle-s", "1", "--interval-s", "0.1", "--quiet", "--json", str(mon_json)],
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )
    # subscribed once it says so; it stops 1 s after the last message
    assert monitor.stderr.readline().startswith("firmware-sim: monitoring")
    run_json = tmp_path / "run.json"
    code = cli_main(["run", "--broker", broker.address, "--source", READINGS, "--devices", "2",
                     "--rate", "500", "--limit", "25", "--labels", "delayed",
                     "--label-delay-s", "0",
                     "--duplicate-rate", "0.2", "--seed", "1", "--json", str(run_json)])
    assert code == 0
    run_err = capsys.readouterr().err
    assert run_err.startswith(f"firmware-sim: 2 device(s) connected to {broker.address}, "
                              f"publishing {READINGS} at 500 Hz each\n"), run_err
    _, err = monitor.communicate(timeout=20)
    assert monitor.returncode == 0, err
    run = json.loads(run_json.read_text())
    mon = json.loads(mon_json.read_text())
    assert run["completed"] and run["totals"]["samples"] == 50
    assert run["config"]["faults"]["duplicate_rate"] == 0.2
    assert mon["totals"]["readings"] == 50
    assert mon["totals"]["duplicate_readings"] == run["totals"]["duplicated"] > 0
    assert mon["totals"]["labels"] == 50
    assert "sim-1" in err  # the final table


@pytest.mark.parametrize("argv, message", [
    (["--rate", "0"], "firmware-sim: --rate must be"),
    (["--loss-rate", "0.7", "--malformed-rate", "0.5"], "at most 1"),
    (["--label-fraction", "1.5"], "firmware-sim: --label-fraction must be"),
    (["--devices", "2", "--client-id", "fixed"], "{device}"),
    (["--device-prefix", "a/b"], "device ids"),
])
def test_cli_rejects_bad_values_with_one_line(argv, message, capsys):
    code = cli_main(["run", "--broker", "127.0.0.1:1", "--source", READINGS, *argv])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def one_line_error(capsys, argv) -> str:
    """Run the CLI against an unreachable broker: refused up front (exit 2), one line."""
    code = cli_main([*argv, "--broker", "127.0.0.1:1"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("firmware-sim: "), err
    return err


@pytest.mark.parametrize("argv, message", [
    (["--label-key", "x"], "--label-key must not be one of the reading's own keys (seq, ts, x)"),
    (["--label-key", "seq"], "--label-key must not be"),
    (["--label-key", "ts"], "--label-key must not be"),
    (["--prefix", "a/#"], "--prefix must be a non-empty topic without wildcards, got 'a/#'"),
    (["--prefix", ""], "--prefix must be"),
    (["--devices", "100000"], "--devices must be an integer in 1..1000, got 100000"),
    (["--devices", "0"], "firmware-sim: --devices must be an integer in 1..1000"),
    (["--json", "/nonexistent-dir/x.json"], "--json: no folder /nonexistent-dir"),
    (["--format", "tasmota", "--x-shape", "map"], "x_shape='map' has no effect with format 'tasmota'"),
    (["--format", "esphome", "--label-key", "class"], "label_key='class' has no effect with format 'esphome'"),
])
def test_cli_run_refuses_bad_options_up_front(argv, message, capsys):
    assert message in one_line_error(capsys, ["run", "--source", READINGS, *argv])


@pytest.mark.parametrize("argv, message", [
    (["--target", "nope"], "target and drop apply to files, not to synthetic streams"),
    (["--drop", "a"], "target and drop apply to files"),
])
def test_cli_run_refuses_file_options_with_a_synthetic_source(argv, message, capsys):
    assert message in one_line_error(capsys, ["run", "--source", "synth:SEA", *argv])


@pytest.mark.parametrize("argv, message", [
    (["--prefix", "a/#"], "prefix must be a non-empty topic without wildcards, got 'a/#'"),
    (["--prefix", "a/+/b"], "prefix must be"),
    (["--prefix", ""], "prefix must be"),
    (["--label-key", "seq"], "label_key must not be one of the reading's own keys"),
    (["--label-key", ""], "label_key must be a non-empty string"),
    (["--duration", "nan"], "--duration must be a finite number >= 0, got nan"),
    (["--duration", "-1"], "--duration must be a finite number >= 0, got -1"),
    (["--idle-s", "-1"], "--idle-s must be a finite number >= 0, got -1"),
    (["--idle-s", "inf"], "--idle-s must be a finite number >= 0"),
    (["--interval-s", "0"], "--interval-s must be a finite number > 0, got 0"),
    (["--interval-s", "-1"], "--interval-s must be a finite number > 0"),
    (["--json", "/nonexistent-dir/x.json"], "--json: no folder /nonexistent-dir"),
])
def test_cli_monitor_refuses_bad_options_up_front(argv, message, capsys):
    assert message in one_line_error(capsys, ["monitor", *argv])


def test_cli_json_must_be_a_writable_file(tmp_path, capsys):
    assert "is a folder" in one_line_error(capsys, ["monitor", "--json", str(tmp_path)])
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if not os.access(locked, os.W_OK):  # root writes anywhere
        err = one_line_error(capsys, ["monitor", "--json", str(locked / "m.json")])
        assert f"--json: folder {locked} is not writable" in err


def test_cli_rejects_an_unknown_log_level(capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main(["run", "--broker", "127.0.0.1:1", "--source", READINGS, "--log-level", "BOGUS"])
    assert exc.value.code == 2
    assert "argument --log-level: invalid choice: 'BOGUS'" in capsys.readouterr().err
    # a known level in any case is accepted (then the broker is unreachable: exit 1)
    assert cli_main(["run", "--broker", "127.0.0.1:1", "--source", READINGS, "--log-level", "debug",
                     "--limit", "1"]) == 1


def ragged_csv(tmp_path) -> str:
    path = tmp_path / "ragged.csv"
    rows = [f"{i},{i + 1},c{i % 2}" for i in range(60)]
    rows[40] = "40,c0"  # line 42: a field short
    path.write_text("a,b,y\n" + "\n".join(rows) + "\n")
    return str(path)


def test_a_malformed_file_row_is_refused_before_publishing(tmp_path, capsys):
    path = ragged_csv(tmp_path)
    err = one_line_error(capsys, ["run", "--source", path])
    assert "ragged.csv, line 42: 2 fields, the header has 3" in err
    assert "Traceback" not in err
    with pytest.raises(ValueError, match=r"ragged\.csv, line 42"):
        build_devices(SimConfig(path, n_devices=2))
    # only the rows a device will send are checked: the first 40 are fine
    [device] = build_devices(SimConfig(path, limit=40))
    assert len(list(device.events())) == 40


def test_monitor_and_config_refuse_reserved_label_keys_and_bad_prefixes():
    for key in ("x", "seq", "ts"):
        with pytest.raises(ValueError, match="label_key must not be"):
            SimConfig(READINGS, label_key=key)
        with pytest.raises(ValueError, match="label_key must not be"):
            Monitor("127.0.0.1:1", label_key=key)
    for prefix in ("", "a/#", "+"):
        with pytest.raises(ValueError, match="prefix must be"):
            Monitor("127.0.0.1:1", prefix=prefix)
    assert SimConfig("synth:SEA", n_devices=1000).n_devices == 1000
    with pytest.raises(ValueError, match="target and drop apply to files"):
        SimConfig("synth:SEA", target="class")
    with pytest.raises(ValueError, match="reboot_seq='continue', prefix='eb' have no effect"):
        SimConfig("synth:SEA", format="shelly", reboot_seq="continue", prefix="eb")


def test_cli_reports_an_unreachable_broker(capsys):
    from tests.broker import free_port

    code = cli_main(["run", "--broker", f"127.0.0.1:{free_port()}", "--source", READINGS,
                     "--limit", "1"])
    assert code == 1
    assert "cannot reach the broker" in capsys.readouterr().err


def test_broker_address_parsing():
    assert parse_address("10.0.0.2:8883") == ("10.0.0.2", 8883)
    assert parse_address("broker.local") == ("broker.local", 1883)
    assert parse_address("[::1]:1884") == ("::1", 1884)
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_address("host:http")


def test_qos0_publish_while_disconnected_fails_fast():
    # docs/cases.md C34: no hang waiting for a QoS 0 message paho will never send; C37: the
    # client is built with callback API v2 and a keyword client id
    conn = Connection(BrokerOptions("127.0.0.1", 1), "sim-x")
    assert conn.client._callback_api_version == mqtt.CallbackAPIVersion.VERSION2
    assert conn.client._client_id == b"sim-x"
    t = time.monotonic()
    assert conn.publish("edgebayes/sim-x/reading", b"x", 0) is False
    assert conn.flush(timeout_s=2.0) is True
    assert time.monotonic() - t < 1.0


def test_config_errors_name_the_value():
    with pytest.raises(ValueError, match="jitter"):
        SimConfig(READINGS, jitter=1.0)
    with pytest.raises(ValueError, match="burst_size"):
        FaultRates(burst_size=1)
    with pytest.raises(ValueError, match="malformed_kinds"):
        FaultRates(malformed_kinds=("garbage",))
    with pytest.raises(ValueError, match="labels"):
        SimConfig(READINGS, labels="sometimes")
    with pytest.raises(ValueError, match="rows cannot be shared"):
        build_devices(SimConfig(READINGS, n_devices=SENSORS_ROWS + 1))


def test_a_full_publish_queue_waits_instead_of_dropping(broker, collector):
    # paho refuses a QoS 1 publish (MQTT_ERR_QUEUE_SIZE) when its queue of unacknowledged
    # messages is full, as it is past 65,535 packet ids in a burst; nothing may be lost
    conn = Connection(BrokerOptions.from_address(broker.address), "fs-queue-test")
    conn.client.max_queued_messages_set(20)
    conn.connect()
    n = 600
    for i in range(n):
        assert conn.publish("edgebayes/q/reading", encode({"seq": i, "x": [0.0]}), 1)
    assert conn.flush(10.0)
    conn.disconnect()
    collector.wait_count(n)
    seqs = [decode(p)["seq"] for p in collector.by_topic()["edgebayes/q/reading"]]
    assert seqs == list(range(n))


@pytest.mark.parametrize("fmt, inline, messages", [
    ("edgebayes", 12, 0),  # the label is a key of the reading
    ("tasmota", 0, 12),  # the label is a message of its own beside the reading
])
def test_cli_run_counts_inline_labels_and_label_messages(broker, capsys, fmt, inline, messages):
    code = cli_main(["run", "--broker", broker.address, "--source", READINGS, "--rate", "500",
                     "--limit", "12", "--labels", "inline", "--format", fmt])
    assert code == 0
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"firmware-sim: 1 device(s), 12 samples, 12 readings and 12 labels "
                           f"published ({inline} inline, {messages} label messages), 0 lost, "), last


@pytest.fixture
def refusing_broker(tmp_path):
    """A Mosquitto whose ACL grants anonymous clients only ``other/#``."""
    acl = tmp_path / "acl"
    acl.write_text("topic write other/#\n")
    b = Broker(tmp_path / "broker", extra_config=f"acl_file {acl}\n").start()
    yield b
    b.stop()


def test_publishes_the_broker_refuses_are_counted_as_lost(refusing_broker, capsys):
    """An ACL that does not grant the device's topic: Mosquitto answers each QoS 1 publish
    with reason code 135 (Not authorized). Before, firmware-sim reported them as published
    and 0 lost."""
    code = cli_main(["run", "--broker", refusing_broker.address, "--source", READINGS, "--rate", "500",
                     "--limit", "6", "--labels", "inline", "--format", "tasmota"])
    assert code == 0
    last = capsys.readouterr().err.splitlines()[-1]
    assert ("6 readings and 6 labels published (0 inline, 6 label messages), "
            "12 lost (12 refused by the broker: 12 Not authorized), 0 duplicated") in last, last


def test_tasmota_sensor_fields_and_switch_options():
    cfg = SimConfig("synth:SEA", limit=2, format="tasmota", sensor="BME280",
                    fields=("Temperature", "Humidity", "Pressure"), switch="Switch1", seed=3)
    device = build_devices(cfg)[0]
    m = next(e for e in device.events() if e.kind == "reading")
    (topic, payload), = formats.publications(device, m, 0.0)
    doc = json.loads(payload)
    assert topic == "tele/sim-0/SENSOR" and list(doc["BME280"]) == ["Temperature", "Humidity", "Pressure"]
    assert list(doc["BME280"].values()) == m.x.tolist() and doc["Switch1"] == ("ON" if m.y == 1 else "OFF")
    for bad, why in [({"format": "zigbee2mqtt", "sensor": "BME280"}, "sensor='BME280' applies to format 'tasmota' only"),
                     ({"format": "tasmota", "switch": "Switch1", "labels": "delayed"}, "labels must be 'inline' or 'none'")]:
        with pytest.raises(ValueError, match=re.escape(why)):
            SimConfig("synth:SEA", **bad)
    with pytest.raises(ValueError, match="fields names 2 keys for the 3 features"):
        build_devices(SimConfig("synth:SEA", format="tasmota", fields=("a", "b")))
