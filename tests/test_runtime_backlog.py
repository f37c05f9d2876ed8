"""The outgoing backlog and the runtime's session, through a real Mosquitto.

A burst of QoS 1 predictions and a broker outage with a backlog: every prediction arrives
(the backlog is bounded in bytes and the worker waits; paho's message-count limit, which also
counts QoS 1 messages awaiting their acknowledgement, refused about a third of a 3,000 burst).
Another client connecting with the runtime's client id: logged at ERROR, alerted, and the
runtime backs off instead of taking the session back every reconnect_min_s.
"""

import dataclasses
import logging
import signal
import threading
import time

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from edgebayes.codec import decode
from edgebayes.runtime.config import load_config
from edgebayes.runtime.service import Runtime
from tests.runtime_client import Device, blobs, wait_for, write_config


def _runtime(broker, tmp_path, extra="", tick_hooks=(), **broker_keys) -> Runtime:
    cfg = load_config(write_config(tmp_path / "rt.toml", broker, extra=extra))
    if broker_keys:
        cfg = dataclasses.replace(cfg, broker=dataclasses.replace(cfg.broker, **broker_keys))
    rt = Runtime(cfg, tick_hooks=tick_hooks)
    rt.start()
    wait_for(rt.client.subscribed.is_set, what="runtime subscription")
    return rt


class Gate:
    """A tick hook that holds the worker in its periodic work while closed: readings pile up
    in its queue (the broker has sent them, the worker has not processed them)."""

    def __init__(self):
        self.go = threading.Event()
        self.go.set()

    def __call__(self):
        self.go.wait()

    def close(self):
        self.go.clear()
        time.sleep(0.5)  # the worker reaches its next tick
        return self.go


def _burst(rt, dev, n, seed):
    for i, (x, y) in enumerate(blobs(n, seed=seed)):
        dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
    wait_for(lambda: rt.worker.queue.qsize() == n, timeout_s=30, what=f"{n} readings queued")


def test_a_burst_of_qos1_predictions_waiting_for_their_acknowledgement_is_delivered_in_full(broker, tmp_path):
    """3,000 predictions made while the broker is busy (stopped with SIGSTOP: connected, not
    acknowledging) all wait for their PUBACK; none is refused, all arrive (a bound of 8 MiB
    holds them all: the worker does not wait)."""
    gate = Gate()
    rt = _runtime(broker, tmp_path, extra="[output]\nprediction_qos = 1\nmax_backlog_bytes = 8388608\n",
                  tick_hooks=[gate])
    try:
        dev = Device(broker)
        go = gate.close()
        _burst(rt, dev, 3000, seed=11)
        broker.proc.send_signal(signal.SIGSTOP)
        try:
            go.set()
            wait_for(lambda: rt.worker.serving.n_learned == 3000, timeout_s=60, what="3000 readings learned")
            assert rt.client.n_publish_failed == 0
        finally:
            broker.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: len(dev.predictions()) == 3000, timeout_s=30, what="3000 predictions")
        assert sorted(dev.predictions()) == list(range(3000))
        wait_for(lambda: len(rt.client.backlog) == 0, what="the backlog acknowledged")
        assert rt.client.backlog.bytes == 0 and rt.client.n_publish_failed == 0
    finally:
        rt.stop(timeout_s=5)


def test_a_broker_outage_with_a_backlog_loses_no_prediction(broker, tmp_path):
    gate = Gate()
    rt = _runtime(broker, tmp_path, extra="[output]\nprediction_qos = 1\nerror_interval_s = 0\n", tick_hooks=[gate])
    try:
        dev = Device(broker)
        go = gate.close()
        _burst(rt, dev, 3000, seed=12)
        broker.stop()
        wait_for(lambda: not rt.client.connected.is_set(), what="the runtime sees the broker gone")
        go.set()  # the worker finds the broker away with 3,000 readings queued
        time.sleep(2.0)
        assert rt.worker.serving.n_readings == 0  # they wait, unacknowledged, for the broker
        broker.start()
        wait_for(lambda: len(dev.predictions()) == 3000, timeout_s=60, what="3000 predictions")
        assert sorted(dev.predictions()) == list(range(3000))
        wait_for(lambda: rt.worker.metrics()["n_duplicates"] >= 3000, timeout_s=30,
                 what="the broker's redeliveries refused as duplicates")
        m = rt.worker.metrics()
        assert (m["n_readings"], m["n_learned"], m["n_publish_failed"]) == (3000, 3000, 0)
    finally:
        rt.stop(timeout_s=5)


def test_the_worker_waits_at_the_byte_bound_and_every_prediction_arrives(broker, tmp_path):
    """A 64 KiB bound holds ~35 predictions: the worker waits for acknowledgements again and
    again, readings wait at the broker, nothing is refused."""
    peak, clients = [], []
    rt = _runtime(broker, tmp_path, extra="[output]\nprediction_qos = 1\nmax_backlog_bytes = 65536\n",
                  tick_hooks=[lambda: peak.extend(c.backlog.bytes for c in clients)])
    clients.append(rt.client)
    try:
        dev = Device(broker)
        for i, (x, y) in enumerate(blobs(1500, seed=13)):
            dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
        wait_for(lambda: len(dev.predictions()) == 1500, timeout_s=60, what="1500 predictions")
        assert sorted(dev.predictions()) == list(range(1500)) and rt.client.n_publish_failed == 0
        assert max(peak, default=0) < 65536 + 4 * 2048  # the bound, and one reading's outputs
    finally:
        rt.stop(timeout_s=5)


def _intruder(broker, client_id):
    """A client that keeps connecting with ``client_id`` (paho's auto-reconnect, 0.1 s)."""
    c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id=client_id,
                    protocol=MQTTProtocolVersion.MQTTv5)
    c.reconnect_delay_set(0.1, 0.1)
    c.connect_async(broker.host, broker.port)
    c.loop_start()
    return c


@pytest.mark.parametrize("protocol", ["mqttv5", "mqttv311"])
def test_a_session_takeover_is_logged_alerted_and_backed_off(broker, tmp_path, caplog, protocol):
    """Mosquitto 2.0 closes the socket of the client whose id is taken (no reason 142), under
    MQTT 5 as under 3.1.1; the intruder reconnects every 0.1 s."""
    rt = _runtime(broker, tmp_path, reconnect_max_s=3.0, protocol=protocol)
    alerts = []
    watch = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="watch")
    watch.on_message = lambda client, userdata, msg: alerts.append(decode(msg.payload))
    watch.connect(broker.host, broker.port)
    watch.subscribe(rt.topics.alert, qos=1)
    watch.loop_start()
    intruder = None
    try:
        with caplog.at_level(logging.ERROR, logger="edgebayes.runtime.mqtt"):
            intruder = _intruder(broker, "rt-test")
            wait_for(lambda: rt.client.watch.n_takeovers >= 1, timeout_s=15, what="the takeover noticed")
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert ("another process connected with client id rt-test (the broker closed 3 connections in a "
                "row within 10 s of their start): a second runtime with the same [broker] client_id?") in errors[0]
        assert "Reconnecting in 3 s (reconnect_max_s)" in errors[0]
        n0 = rt.client.n_connects
        time.sleep(5.0)
        assert rt.client.n_connects - n0 <= 2  # every 3 s, not every 0.1 s
        wait_for(lambda: alerts, timeout_s=10, what="the alert")
        a = alerts[0]
        assert (a["alert"], a["client_id"], a["retry_in_s"]) == ("session_taken_over", "rt-test", 3.0)
    finally:
        if intruder is not None:
            intruder.loop_stop()
            intruder.disconnect()
        watch.loop_stop()
        rt.stop(timeout_s=5)


@pytest.mark.parametrize("protocol", ["mqttv5", "mqttv311"])
def test_a_broker_restart_is_not_a_takeover(broker, tmp_path, protocol):
    """Mosquitto closes the socket on a takeover as on a shutdown; a connect attempt finding
    the broker away tells a restart."""
    rt = _runtime(broker, tmp_path, protocol=protocol)
    try:
        for _ in range(3):
            broker.stop()
            time.sleep(1.0)
            broker.start()
            wait_for(rt.client.subscribed.is_set, timeout_s=10, what="the runtime back")
        assert rt.client.watch.n_takeovers == 0 and rt.client.n_connects == 4
    finally:
        rt.stop(timeout_s=5)


@pytest.mark.parametrize("protocol", ["mqttv5", "mqttv311"])
def test_readings_past_the_brokers_inflight_window_do_not_wait_for_the_group_sync(broker, tmp_path, protocol):
    """MQTT 3.1.1 has no receive maximum: Mosquitto sends a client at most max_inflight_messages
    (20) unacknowledged QoS 1 messages, so with the journal's acknowledgements held for a 60 s
    group fsync the 21st reading waited a minute; the worker now syncs when its queue empties."""
    extra = f'[checkpoint]\ndir = "{tmp_path / "ckpt"}"\ninterval_s = 60\nsync_interval_s = 60\n'
    rt = _runtime(broker, tmp_path, extra=extra, protocol=protocol)
    try:
        dev = Device(broker)
        for i, (x, y) in enumerate(blobs(100, seed=14)):
            dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
        wait_for(lambda: len(dev.predictions()) == 100, timeout_s=20, what="100 predictions")
        assert sorted(dev.predictions()) == list(range(100))
        assert rt.worker.journal is not None and rt.worker.serving.n_learned == 100
    finally:
        rt.stop(timeout_s=5)
