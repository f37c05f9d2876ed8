"""Huge messages and broker restarts, through a real Mosquitto and a real ``edgebayes run``.

A 13 MB and a 100 MB reading: the runtime asks for a Maximum Packet Size in its MQTT 5
CONNECT, so Mosquitto drops them ("Dropping too large outgoing PUBLISH") and the runtime never
reads a byte of them: its peak RSS stays where it was, no model is shed, no alert. Thirty
broker restarts in a row are no session takeover (the broker's uptime tells them).
"""

import signal
import subprocess
import sys
import time
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from edgebayes.runtime.config import load_config
from edgebayes.runtime.service import Runtime
from tests.runtime_client import Device, blobs, wait_for, write_config

ROOT = Path(__file__).resolve().parents[1]
TREE = '[[models]]\nname = "tree"\nkind = "hoeffding_tree"\ngrace_period = 20\n'


def _peak_rss_kb(pid: int) -> int:
    """The process's peak resident set (VmHWM, kB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _publish_big(broker, topic: str, nbytes: int) -> None:
    pub = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id=f"big-{nbytes}",
                      protocol=MQTTProtocolVersion.MQTTv5)
    pub.connect(broker.host, broker.port)
    pub.loop_start()
    try:
        assert pub.publish(topic, b"\x81" * nbytes, qos=1).wait_for_publish(60) is None
    finally:
        pub.loop_stop()
        pub.disconnect()


def test_a_13_mb_and_a_100_mb_reading_never_reach_the_runtime(broker, tmp_path):
    cfg = write_config(tmp_path / "rt.toml", broker, extra="[memory]\nrss_limit_mb = 80\n", models=TREE)
    log = tmp_path / "rt.log"
    dev = Device(broker)
    proc = subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(cfg), "--log-level", "INFO"],
                            cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: any(t.endswith("/status") and p == b"online" for t, p, _ in list(dev.raw)),
                 timeout_s=20, what="the runtime online")
        data = blobs(200, seed=3)
        for i, (x, y) in enumerate(data[:100]):
            dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
        wait_for(lambda: len(dev.predictions()) == 100, timeout_s=20, what="100 predictions")
        before = _peak_rss_kb(proc.pid)
        for nbytes in (13 * 2**20, 100 * 2**20):
            _publish_big(broker, "eb/d1/reading", nbytes)
        for i, (x, y) in enumerate(data[100:], start=100):
            dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
        wait_for(lambda: len(dev.predictions()) == 200, timeout_s=20, what="200 predictions")
        time.sleep(2.0)  # two checks of the memory guard
        peak = _peak_rss_kb(proc.pid)
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    assert peak - before < 4 * 1024, (before, peak)  # kB: not one copy of 13 MB
    assert dev.got("alert") == [] and [e["kind"] for e in dev.got("error")] == []
    dropped = [ln for ln in broker.log.read_text().splitlines() if "Dropping too large outgoing PUBLISH for rt-test" in ln]
    assert len(dropped) == 2, dropped


def _runtime(broker, tmp_path, protocol):
    cfg = write_config(tmp_path / "rt.toml", broker)
    text = cfg.read_text().replace("reconnect_min_s = 0.1\nreconnect_max_s = 0.5",
                                   f'reconnect_min_s = 0.5\nreconnect_max_s = 30\nprotocol = "{protocol}"')
    cfg.write_text(text)
    rt = Runtime(load_config(cfg))
    rt.start()
    wait_for(rt.client.subscribed.is_set, what="runtime subscription")
    return rt


@pytest.mark.parametrize("protocol,n", [("mqttv5", 30), ("mqttv311", 6)])
def test_broker_restarts_in_a_row_are_no_session_takeover(broker, tmp_path, protocol, n):
    """Each restart takes under reconnect_min_s (0.5 s), so every reconnect succeeds at its first
    attempt: only the broker's uptime, shorter than the lost connection's age, tells a restart
    from a takeover (Mosquitto 2.0.11 closes the socket in both)."""
    rt = _runtime(broker, tmp_path, protocol)
    try:
        for i in range(n):
            broker.stop()
            broker.start()
            wait_for(lambda i=i: rt.client.subscribed.is_set() and rt.client.n_connects == i + 2,
                     timeout_s=10, what=f"the runtime back after restart {i + 1}")
        assert (rt.client.watch.n_takeovers, rt.client.watch.n_connect_failures) == (0, 0)  # no alert: none taken over
    finally:
        rt.stop(timeout_s=5)
