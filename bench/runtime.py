"""End-to-end benchmark of ``edgebayes run`` through a local Mosquitto, beside the floor.

Publisher, broker, runtime (a subprocess), the prediction collector and the floor share this
machine. The floor is a plain paho subscriber in a process of its own that only counts the
readings (QoS 1, as the runtime takes them): what a Python MQTT client can receive here, on
the same broker, the same burst, in the same run. Measures: sustained readings/s (a burst of
``--n`` labelled readings, first publish to last prediction) and the runtime's CPU per reading
(user + system, all threads), each beside the floor's and as a ratio to it; publish-to-prediction
latency p50/p99 at a paced ``--rate`` readings/s; the runtime's RSS after start and after the
burst; the load average beside each run. 8 features, inline labels (test-then-train), QoS 1 in.

    python bench/runtime.py [--n 20000] [--rate 200] [--seconds 5] [--models nb nb+srp]
                            [--devices 1 10 100 1000] [--budget BYTES] [--format json|msgpack]
                            [--protocol mqttv5|mqttv311] [--floor-echo] [--profile DIR]

With several ``--models`` or ``--devices`` every pair is one run of a fresh runtime, the burst
interleaved over the devices (reading i goes to device i mod D), and a table closes the output;
the latency phase is run only for a single pair. ``--budget`` is ``[memory]
model_budget_bytes`` per device (the run's budget is it times D, ``max_devices`` = D), as a
deployed config divides it. ``--protocol`` is ``[broker] protocol``; ``--floor-echo`` makes the
floor do the runtime's MQTT work (receive at QoS 1 and acknowledge, publish one QoS 0 message per
reading, in ``--protocol``) and nothing else. ``--profile DIR`` samples the runtime with py-spy during each burst
(``--gil``, raw output ``DIR/<models>-<devices>.txt``) and prints its shares (``bench/profile.py``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
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
from bench.profile import shares, table
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


FLOOR = """
import sys, time, paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
host, port, n, protocol, echo = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
got, t = [0], [0.0, 0.0]
def on_message(client, userdata, msg):
    got[0] += 1
    if echo:
        client.publish("bench/floor/echo", msg.payload, qos=0)
    if got[0] == 1:
        t[0] = time.time()
    if got[0] == n:
        t[1] = time.time()
        client.disconnect()
version = MQTTProtocolVersion.MQTTv5 if protocol == "mqttv5" else MQTTProtocolVersion.MQTTv311
c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="bench-floor", protocol=version)
c.on_message = on_message
c.on_connect = lambda client, *a: (client.subscribe("bench/+/reading", qos=1), print("ready", flush=True))
c.connect(host, port)
c.loop_forever()
print(got[0], t[0], t[1], flush=True)
"""


def start_floor(broker, n: int, args) -> subprocess.Popen:
    """The plain paho subscriber that only counts ``n`` readings (the floor; with ``--floor-echo``
    it also publishes each payload back at QoS 0, as the runtime publishes a prediction, and
    speaks ``--protocol``); returns once subscribed."""
    protocol = args.protocol if args.floor_echo else "mqttv311"
    proc = subprocess.Popen([sys.executable, "-c", FLOOR, broker.host, str(broker.port), str(n), protocol,
                             "1" if args.floor_echo else "0"],
                            stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    time.sleep(0.2)  # the SUBACK reached the broker
    return proc


def forget_session(broker, client_id: str) -> None:
    """End the broker's persistent session of ``client_id`` (a clean-session connect): what the
    last runtime left unacknowledged is not delivered to the next run's runtime."""
    c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=True)
    c.connect(broker.host, broker.port)
    c.loop_start()
    c.disconnect()
    c.loop_stop()


def start_profiler(pid: int, out: Path, native: bool) -> subprocess.Popen:
    """py-spy sampling process ``pid`` (only the thread holding the GIL) into ``out``, raw format."""
    cmd = ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--gil", "--rate", "250",
           "--nonblocking", "--output", str(out), *(["--native"] if native else [])]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached
    return proc


def stop_profiler(proc: subprocess.Popen, out: Path) -> None:
    """Stop py-spy (it writes its file on SIGINT) and print the shares of what it sampled."""
    proc.send_signal(signal.SIGINT)
    proc.wait(60)
    print(table(shares(out.read_text().splitlines()), f"profile {out.name}"))


def run(broker, tmp: Path, models: str, n_devices: int, args, latency: bool) -> dict:
    """One runtime serving ``n_devices`` devices: the burst beside the floor, then the latency phase."""
    budget = args.budget * n_devices if args.budget else None
    cfg = tmp / f"rt-{models}-{n_devices}.toml"
    cfg.write_text(
        f'[broker]\nhost = "{broker.host}"\nport = {broker.port}\nclient_id = "bench-rt"\n'
        f'protocol = "{args.protocol}"\n'
        '[topics]\nprefix = "bench"\n'
        '[schema]\nfeatures = ["f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7"]\n'
        '[output]\nmetrics_interval_s = 0.25\n'
        f'format = "{args.format}"\n' + MODELS[models]
        + f"[memory]\nmax_devices = {n_devices if budget else max(n_devices, 64)}\n"
        + f"new_devices_per_min = {max(60, 2 * n_devices)}\n"
        + (f"model_budget_bytes = {budget}\n" if budget else ""))
    rt = subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(cfg),
                           "--checkpoint-dir", str(tmp / f"ckpt-{models}-{n_devices}"), "--log-level", "WARNING"],
                          cwd=ROOT)
    col = Collector(broker)
    pub = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="bench-pub")
    pub.max_inflight_messages_set(1000)
    pub.connect(broker.host, broker.port)
    pub.loop_start()
    floor = None
    try:
        deadline = time.time() + 60
        while not col.metrics and time.time() < deadline:  # its first metrics: connected, subscribed
            if rt.poll() is not None:
                raise RuntimeError(f"the runtime exited with {rt.returncode} before serving")
            time.sleep(0.05)
        time.sleep(0.5)
        rss_start = rss_mb(rt.pid)
        data = payloads(args.n)
        spy_out = args.profile / f"{models}-{n_devices}.txt" if args.profile else None
        spy = start_profiler(rt.pid, spy_out, args.native) if spy_out else None
        floor = start_floor(broker, args.n, args)
        col.expect(args.n)
        cpu0, load = cpu_s(rt.pid), os.getloadavg()[0]
        t0 = time.time()
        for seq, x, y in data:
            publish(pub, f"bench/d{seq % n_devices}/reading",
                    msgpack.packb({"seq": seq // n_devices, "ts": time.time(), "x": x, "y": y}))
        t_pub = time.time() - t0
        if not col.done.wait(timeout=max(120.0, args.n / 100)):
            print(f"only {col.n} of {args.n} predictions arrived")
        elapsed = time.time() - t0
        rss_after, cpu = rss_mb(rt.pid), cpu_s(rt.pid) - cpu0
        if spy is not None:
            stop_profiler(spy, spy_out)
        f_cpu = cpu_s(floor.pid)
        f_n, _, f_last = floor.communicate(timeout=60)[0].split()
        f_rate = int(f_n) / max(float(f_last) - t0, 1e-9)
        load = max(load, os.getloadavg()[0])
        m = col.metrics
        print("runtime counters:", {k: m.get(k) for k in ("n_readings", "n_predictions", "n_dropped",
              "n_malformed", "n_duplicates", "n_publish_failed", "n_devices", "errors")})
        done = max(col.n, col.n_runtime)
        r = {"models": models, "devices": n_devices, "rate": done / elapsed, "us": cpu / max(done, 1) * 1e6,
             "floor_rate": f_rate, "floor_us": f_cpu / max(int(f_n), 1) * 1e6, "rss0": rss_start,
             "rss1": rss_after, "load": load}
        print(f"models={models} devices={n_devices} budget={budget} format={args.format}  "
              f"burst of {args.n} readings: published in {t_pub:.1f} s, {done} predicted in {elapsed:.1f} s "
              f"(+-0.25 s) -> {r['rate']:,.0f} readings/s end to end; floor {f_rate:,.0f} readings/s "
              f"(ratio {r['rate'] / f_rate:.2f})")
        print(f"runtime CPU: {cpu:.2f} s = {r['us']:.0f} us per reading (all its threads); floor "
              f"{r['floor_us']:.0f} us per reading; load average {load:.1f} on {os.cpu_count()} cores")
        print(f"runtime RSS: {rss_start:.1f} MB after start, {rss_after:.1f} MB after {args.n:,} readings")
        held = {name: v["bytes"] for name, v in m.get("models", {}).items()}
        print(f"models' bytes (metrics, every device's slots): {held}, {sum(held.values()):,} in all"
              + (f" of a model_budget_bytes of {budget:,}" if budget else ""))
        if latency:
            latency_phase(pub, col, data, args, n_devices)
        return r
    finally:
        if floor is not None and floor.poll() is None:
            floor.kill()
        rt.terminate()
        rt.wait(120)
        forget_session(broker, "bench-rt")
        pub.loop_stop()
        col.client.loop_stop()


def latency_phase(pub, col: Collector, data: list, args, n_devices: int) -> None:
    """Publish-to-prediction latency at ``--rate`` (the models keep learning from the burst)."""
    m = int(args.rate * args.seconds)
    gc.collect()
    gc.freeze()  # this process's full collections would be measured as the runtime's latency
    col.expect(m)
    col.target = None  # latency phase: wait for the collector's own count
    col.done.clear()
    period, t0 = 1.0 / args.rate, time.perf_counter()
    for k in range(m):
        _, x, y = data[k % len(data)]
        while time.perf_counter() < t0 + k * period:
            time.sleep(0.0002)
        i = args.n + k
        publish(pub, f"bench/d{i % n_devices}/reading",
                msgpack.packb({"seq": i // n_devices, "ts": time.time(), "x": x, "y": y}))
    deadline = time.time() + 30
    while col.n < m and time.time() < deadline:
        time.sleep(0.05)
    lat = np.array(col.latencies) * 1000.0
    print(f"latency at {args.rate:.0f} readings/s over {len(lat)} readings: "
          f"p50 {np.percentile(lat, 50):.2f} ms, p99 {np.percentile(lat, 99):.2f} ms, max {lat.max():.2f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000, help="readings in the burst")
    ap.add_argument("--rate", type=float, default=200.0, help="readings/s of the latency phase")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of the latency phase")
    ap.add_argument("--models", nargs="+", choices=sorted(MODELS), default=["nb"])
    ap.add_argument("--devices", nargs="+", type=int, default=[1], help="device counts, one run each")
    ap.add_argument("--budget", type=int, default=None, help="[memory] model_budget_bytes per device")
    ap.add_argument("--format", choices=["json", "msgpack"], default="json", help="[output] format")
    ap.add_argument("--protocol", choices=["mqttv5", "mqttv311"], default="mqttv5", help="[broker] protocol")
    ap.add_argument("--floor-echo", action="store_true",
                    help="the floor also publishes each reading back (QoS 0) and speaks --protocol")
    ap.add_argument("--profile", type=Path, default=None, help="folder for py-spy samples of each burst")
    ap.add_argument("--native", action="store_true", help="with --profile: py-spy --native")
    args = ap.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)

    tmp = Path(tempfile.mkdtemp(prefix="eb-bench-"))
    broker = Broker(tmp / "broker").start()
    single = len(args.models) == 1 and len(args.devices) == 1
    try:
        rows = [run(broker, tmp, models, d, args, latency=single) for models in args.models for d in args.devices]
    finally:
        broker.stop()
    if not single:
        print("\n| models | devices | readings/s | CPU us/reading | floor readings/s | ratio | floor us/reading "
              "| RSS MB start -> after | load |\n|---|---:|---:|---:|---:|---:|---:|---|---:|")
        for r in rows:
            print(f"| {r['models']} | {r['devices']} | {r['rate']:,.0f} | {r['us']:.0f} | {r['floor_rate']:,.0f} "
                  f"| {r['rate'] / r['floor_rate']:.2f} | {r['floor_us']:.0f} | {r['rss0']:.1f} -> {r['rss1']:.1f} "
                  f"| {r['load']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
