"""End-to-end benchmark of ``edgebayes run`` through a local Mosquitto.

Publisher, broker, runtime (a subprocess) and the prediction collector share this machine.
Measures: sustained readings/s (a burst of ``--n`` labelled readings, first publish to last
prediction), publish-to-prediction latency p50/p99 at a paced ``--rate`` readings/s, and the
runtime's RSS after the burst. 8 features, inline labels (test-then-train), QoS 1 in.

    python bench/runtime.py [--n 100000] [--rate 200] [--seconds 10] [--models nb|nb+srp]
                            [--budget BYTES] [--format json|msgpack]

``--budget`` sets ``[memory] model_budget_bytes`` (one device), as a deployed config does;
``--format`` the predictions' ``[output] format`` (default json, the runtime's default).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgpack
import numpy as np
import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from edgebayes.codec import decode
from tests.broker import Broker

MODELS = {
    "nb": '[[models]]\nname = "nb"\nkind = "gaussian_nb"\n',
    "nb+srp": '[[models]]\nname = "nb"\nkind = "gaussian_nb"\n'
              '[[models]]\nname = "srp"\nkind = "srp"\nn_models = 10\n',
}


class Collector:
    """Counts predictions and records publish-to-prediction latency (``ts`` is the publish time)."""

    def __init__(self, broker):
        self.n = 0
        self.latencies: list[float] = []
        self.done = threading.Event()
        self.target = None
        self.base = 0
        self.metrics = {}
        self.n_runtime = 0  # n_predictions from the runtime's own metrics (QoS 0 copies may drop)
        c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="bench-collector")
        c.on_message = self._on_message
        c.connect(broker.host, broker.port)
        c.subscribe("bench/+/prediction", qos=0)
        c.subscribe("bench/runtime/+/metrics", qos=0)
        c.loop_start()
        self.client = c

    def _on_message(self, client, userdata, msg):
        now = time.time()
        if msg.topic.endswith("/metrics"):
            self.metrics = json.loads(msg.payload)
            self.n_runtime = self.metrics["n_predictions"]
            if self.target is not None and self.n_runtime >= self.target:
                self.done.set()
            return
        p = decode(msg.payload)
        self.latencies.append(now - p["ts"])
        self.n += 1
        if self.target is not None and self.n >= self.target - self.base:
            self.done.set()

    def expect(self, n):
        """Done when ``n`` more predictions arrived, or the runtime counted ``n`` in all."""
        self.base = self.n_runtime
        self.n, self.latencies, self.target = 0, [], n
        self.done.clear()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    """CPU time (user + system, all threads) of process ``pid`` so far, seconds: the runtime's
    own cost per reading, which the other jobs on the machine barely change."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def publish(client: paho.Client, topic: str, payload: bytes) -> None:
    """Publish at QoS 1, waiting while paho has no free packet id.

    A client can have at most 65,535 QoS 1 messages unacknowledged (MQTT packet ids are 16
    bits); paho refuses the next one with MQTT_ERR_QUEUE_SIZE. Ignoring that return value lost
    every reading of a 100,000 burst past the first ~68,600.
    """
    while True:
        rc = client.publish(topic, payload, qos=1).rc
        if rc != paho.MQTT_ERR_QUEUE_SIZE:
            break
        time.sleep(0.001)  # the broker's acknowledgements free packet ids
    if rc not in (paho.MQTT_ERR_SUCCESS, paho.MQTT_ERR_NO_CONN):  # NO_CONN: queued for the reconnect
        raise RuntimeError(f"publish refused: {paho.error_string(rc)}")


def payloads(n: int, seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(0, 1, (n, 8)) + y[:, None]
    return [(i, X[i].tolist(), int(y[i])) for i in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--models", choices=sorted(MODELS), default="nb")
    ap.add_argument("--budget", type=int, default=None, help="[memory] model_budget_bytes (one device)")
    ap.add_argument("--format", choices=["json", "msgpack"], default="json", help="[output] format")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="eb-bench-"))
    broker = Broker(tmp / "broker").start()
    cfg = tmp / "rt.toml"
    cfg.write_text(
        f'[broker]\nhost = "{broker.host}"\nport = {broker.port}\nclient_id = "bench-rt"\n'
        '[topics]\nprefix = "bench"\n'
        '[schema]\nfeatures = ["f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7"]\n'
        '[output]\nmetrics_interval_s = 0.25\n'
        f'format = "{args.format}"\n' + MODELS[args.models]
        + (f"[memory]\nmodel_budget_bytes = {args.budget}\nmax_devices = 1\n" if args.budget else ""))
    rt = subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(cfg),
                           "--checkpoint-dir", str(tmp / "ckpt"), "--log-level", "WARNING"], cwd=ROOT)
    col = Collector(broker)
    pub = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="bench-pub")
    pub.max_inflight_messages_set(1000)
    pub.connect(broker.host, broker.port)
    pub.loop_start()
    try:
        time.sleep(2.0)  # the runtime connects and subscribes
        rss_start = rss_mb(rt.pid)
        data = payloads(args.n)
        # 1. sustained throughput: a burst of n readings
        col.expect(args.n)
        cpu0 = cpu_s(rt.pid)
        t0 = time.time()
        for seq, x, y in data:
            publish(pub, "bench/d1/reading", msgpack.packb({"seq": seq, "ts": time.time(), "x": x, "y": y}))
        t_pub = time.time() - t0
        if not col.done.wait(timeout=max(120.0, args.n / 500)):
            print(f"only {col.n} of {args.n} predictions arrived")
        elapsed = time.time() - t0
        rss_after = rss_mb(rt.pid)
        cpu = cpu_s(rt.pid) - cpu0
        m = col.metrics
        print("runtime counters:", {k: m.get(k) for k in ("n_readings", "n_predictions", "n_dropped",
              "n_malformed", "n_duplicates", "n_publish_failed", "queue_depth", "errors")})
        done = max(col.n, col.n_runtime)
        print(f"models={args.models} budget={args.budget} format={args.format}  "
              f"burst of {args.n} readings: published in {t_pub:.1f} s, "
              f"{done} predicted in {elapsed:.1f} s (+-0.25 s) -> {done / elapsed:,.0f} readings/s end to end "
              f"({col.n} prediction messages reached the QoS 0 collector)")
        print(f"runtime CPU: {cpu:.1f} s for the burst = {cpu / max(done, 1) * 1e6:.0f} us per reading "
              f"(all its threads); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"runtime RSS: {rss_start:.1f} MB after start, {rss_after:.1f} MB after {args.n:,} readings")
        # 2. latency at a paced rate (the model keeps learning from where the burst left it)
        m = int(args.rate * args.seconds)
        col.expect(m)
        col.target = None  # latency phase: wait for the collector's own count
        col.done.clear()
        period, t0 = 1.0 / args.rate, time.perf_counter()
        for k in range(m):
            seq, x, y = data[k % len(data)]
            while time.perf_counter() < t0 + k * period:
                time.sleep(0.0002)
            publish(pub, "bench/d1/reading", msgpack.packb({"seq": args.n + k, "ts": time.time(), "x": x, "y": y}))
        deadline = time.time() + 30
        while col.n < m and time.time() < deadline:
            time.sleep(0.05)
        lat = np.array(col.latencies) * 1000.0
        print(f"latency at {args.rate:.0f} readings/s over {len(lat)} readings: "
              f"p50 {np.percentile(lat, 50):.2f} ms, p99 {np.percentile(lat, 99):.2f} ms, max {lat.max():.2f} ms")
    finally:
        rt.terminate()
        rt.wait(30)
        pub.loop_stop()
        col.client.loop_stop()
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
