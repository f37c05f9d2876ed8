"""Crash durability of ``edgebayes run``: readings lost or learned twice across kills, and
the bytes the runtime writes to disk per reading.

Publisher, Mosquitto (``tests/broker.py``, saving after every change) and the runtime (a
subprocess, the default ``[checkpoint]`` settings: interval_s 60, sync_interval_s 1) share
this machine. A stream of ``--n`` labelled readings of one device (3 features, GaussianNB),
QoS 1, paced at ``--rate`` readings/s, runs three times:

- ``broker``: the broker is killed -9 at ``--broker-kills`` random points and restarted;
- ``runtime``: the runtime is SIGKILLed at ``--runtime-kills`` random points and restarted;
- ``none``: no kill; the runtime's ``write_bytes`` (``/proc/<pid>/io``: bytes it caused to be
  written to storage) divided by the readings, also for a slow stream (``--slow-rate``).

Each run ends with SIGTERM once the runtime is idle; the final checkpoint's learned count is
compared with the readings the broker acknowledged to the publisher: ``lost`` = acknowledged
and not learned, ``learned twice`` = learned beyond once (net counts: the model does not say
which reading it learned). ``refused as duplicates`` sums the metrics' ``duplicate`` error
counts of each runtime process (a lower bound with runtime kills).

    python bench/chaos.py [--n 20000] [--rate 500] [--broker-kills 10] [--runtime-kills 20]
                          [--slow-rate 20] [--slow-seconds 15] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from edgebayes.runtime.checkpoint import CheckpointStore
from tests.broker import Broker
from tests.runtime_client import FEATURES, Publisher, wait_for, write_config

PERSIST_EVERY_CHANGE = "autosave_interval 1\nautosave_on_changes true\n"


class Watcher:
    """Collects the runtime's metrics (QoS 0, every second)."""

    def __init__(self, broker):
        self.metrics: list[dict] = []
        c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="chaos-watch")
        c.on_connect = lambda cl, u, f, rc, p: cl.subscribe("eb/runtime/+/metrics", 0)
        c.on_message = self._on_message
        c.reconnect_delay_set(0.1, 0.5)
        c.connect(broker.host, broker.port)
        c.loop_start()
        self.client = c

    def _on_message(self, client, userdata, msg):
        self.metrics.append(json.loads(msg.payload))

    def n_duplicates(self) -> int:
        """``errors.duplicate`` of each runtime process's last metrics, summed (a process's
        last second before a kill is not seen)."""
        total = last = 0
        uptime = float("inf")
        for m in self.metrics:
            if m["uptime_s"] < uptime:  # a new process
                total += last
            last, uptime = m["errors"].get("duplicate", 0), m["uptime_s"]
        return total + last

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


def start_runtime(cfg: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(cfg)],
                            cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT)


def n_learned(ck: Path) -> int:
    state = CheckpointStore(ck, FEATURES).read("d1")
    return int(state["models"][0]["learner"]["n"])


def write_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    raise RuntimeError("no write_bytes in /proc/<pid>/io")


def wait_idle(watch: Watcher, timeout_s: float = 120.0) -> None:
    """Until two metrics messages in a row show an empty queue and no new reading."""
    def idle():
        m = watch.metrics[-2:]
        return len(m) == 2 and m[1]["queue_depth"] == 0 and m[0]["n_readings"] == m[1]["n_readings"] and \
            m[1]["ts"] - m[0]["ts"] < 2.0
    wait_for(idle, timeout_s=timeout_s, what="the runtime idle")


def run(kind: str, n: int, rate: float, kills: int, seed: int, workdir: Path) -> dict:
    """One stream with ``kills`` kills of ``kind`` ("broker", "runtime" or "none")."""
    broker = Broker(workdir / "broker", extra_config=PERSIST_EVERY_CHANGE).start()
    ck = workdir / "ck"
    cfg = write_config(workdir / "rt.toml", broker, checkpoint_dir=ck)
    # the default [checkpoint] timing; metrics every second to see when the runtime is idle
    cfg.write_text(cfg.read_text().replace("interval_s = 0.3\n", "") + "[output]\nmetrics_interval_s = 1\n")
    log = workdir / "rt.log"
    proc = start_runtime(cfg, log)
    watch = Watcher(broker)
    rng = random.Random(seed)
    try:
        wait_for(lambda: watch.metrics, timeout_s=30, what="the runtime's first metrics")
        pub = Publisher(broker, n, rate, seed=seed)
        duration = n / rate
        times = sorted(rng.uniform(0.05, 0.95) * duration for _ in range(kills))
        t0 = time.monotonic()
        pub.thread.start()
        for at in tqdm(times, desc=f"{kind} kills", unit="kill", leave=False):
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            if kind == "broker":
                broker.proc.kill()
                broker.proc.wait()
                time.sleep(0.3)
                broker.start()
            else:
                proc.kill()
                proc.wait()
                proc = start_runtime(cfg, log)
        pub.thread.join()
        wait_for(lambda: len(pub.acked()) == n, timeout_s=120, what="the broker's acknowledgements")
        wait_idle(watch)
        written = write_bytes(proc.pid)
        last = watch.metrics[-1]
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        pub.dev.close()
    finally:
        if proc.poll() is None:
            proc.kill()
        watch.close()
        broker.stop()
    learned, acked = n_learned(ck), len(pub.acked())
    replayed = sum(int(x) for x in re.findall(r"journal: (\d+) messages replayed", log.read_text()))
    return {"kind": kind, "kills": kills, "published": n, "acknowledged": acked, "learned": learned,
            "lost": max(0, acked - learned), "learned_twice": max(0, learned - acked),
            "refused_duplicates": watch.n_duplicates(), "replayed": replayed,
            "write_bytes": written, "journal_syncs": last["n_journal_syncs"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--rate", type=float, default=500.0)
    ap.add_argument("--broker-kills", type=int, default=10)
    ap.add_argument("--runtime-kills", type=int, default=20)
    ap.add_argument("--slow-rate", type=float, default=20.0)
    ap.add_argument("--slow-seconds", type=float, default=15.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS), help="which runs (default: all)")
    args = ap.parse_args()
    plan = {"broker": ("broker", args.n, args.rate, args.broker_kills),
            "runtime": ("runtime", args.n, args.rate, args.runtime_kills),
            "none": ("none", args.n, args.rate, 0),
            "slow": ("none", int(args.slow_rate * args.slow_seconds), args.slow_rate, 0)}
    tqdm.write(HEADER)
    with tempfile.TemporaryDirectory(prefix="edgebayes-chaos-") as tmp:
        for i, name in enumerate(tqdm(args.runs, desc="runs", unit="run")):
            kind, n, rate, kills = plan[name]
            tqdm.write(_row({**run(kind, n, rate, kills, args.seed + i, Path(tmp) / f"run{i}"), "rate": rate}))
    print("(B written/reading and fsyncs/reading: the last runtime process only, so meaningful in the "
          "runs without kills)")


RUNS = ("broker", "runtime", "none", "slow")
HEADER = (f"{'kills':>12} {'rate/s':>7} {'published':>9} {'acked':>6} {'learned':>7} {'lost':>5} {'twice':>5} "
          f"{'dup.refused':>11} {'replayed':>8} {'B written/reading':>17} {'fsyncs/reading':>14}")


def _row(r: dict) -> str:
    """One line of the table under `HEADER`."""
    return (f"{r['kills']:>5} {r['kind']:>6} {r['rate']:>7.0f} {r['published']:>9} {r['acknowledged']:>6} "
            f"{r['learned']:>7} {r['lost']:>5} {r['learned_twice']:>5} {r['refused_duplicates']:>11} "
            f"{r['replayed']:>8} {r['write_bytes'] / r['published']:>17.0f} "
            f"{r['journal_syncs'] / r['published']:>14.3f}")

if __name__ == "__main__":
    main()
