"""Disk writes of Mosquitto's persistence settings, per reading, through the runtime.

Mosquitto runs the shipped deploy/mosquitto/edgebayes.conf (password file and ACL made in a
temporary folder, as tests/test_deploy_mosquitto.py does), with ``--autosave`` replacing its
autosave lines; the runtime (the shipped deploy/edgebayes.toml, naive Bayes only) serves one
device that publishes ``--n`` readings at QoS 1. Two runs:

- online: the runtime keeps up (readings go straight to it, in flight);
- offline: the runtime is stopped while the device publishes (readings queue in its
  session), then started to drain them.

For each, what the mosquitto process wrote to storage (``write_bytes`` in /proc/PID/io) and
in all (``wchar``: storage and sockets), per reading, and the persistence file's size.

    python -m bench.broker_persistence [--n 20000] [--autosave "autosave_on_changes true\\nautosave_interval 1"]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import tempfile
import time
from pathlib import Path

import msgpack
import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from edgebayes.runtime.config import load_config
from edgebayes.runtime.service import Runtime
from tests.broker import Broker
from tests.test_deploy_mosquitto import DEPLOY, PASSWORDS, shipped_broker_config

FEATURES = 5


def proc_io(pid: int) -> dict[str, int]:
    """/proc/PID/io as a dict of ints."""
    return {k: int(v) for k, v in (line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())}


def wait_until(cond, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} after {timeout_s} s")
        time.sleep(0.05)


def device(broker: Broker) -> paho.Client:
    c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="sim-0",
                    protocol=MQTTProtocolVersion.MQTTv5)
    c.username_pw_set("sim-0", PASSWORDS["sim-0"])
    c.max_inflight_messages_set(1000)
    c.connect(broker.host, broker.port)
    c.loop_start()
    return c


def publish_all(c: paho.Client, first: int, n: int) -> None:
    """Publish readings ``first``..``first + n - 1`` and wait for every PUBACK."""
    infos = []
    for seq in range(first, first + n):
        body = msgpack.packb({"seq": seq, "x": [21.0, 27.0, 500.0 * (seq % 2), 450.0, 0.0042], "y": seq % 2})
        while True:
            info = c.publish("edgebayes/sim-0/reading", body, qos=1)
            if info.rc != paho.MQTT_ERR_QUEUE_SIZE:
                break
            time.sleep(0.001)
        infos.append(info)
    for info in infos:
        info.wait_for_publish(60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="readings per run (default 20000)")
    ap.add_argument("--autosave", default=None,
                    help="lines replacing the shipped autosave lines (\\n between lines); default: as shipped")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "broker"
        conf = shipped_broker_config(work)
        if args.autosave is not None:
            conf = re.sub(r"(?m)^autosave_\w+ .*\n", "", conf) + args.autosave.replace("\\n", "\n") + "\n"
        print("autosave lines:", " / ".join(re.findall(r"(?m)^autosave_\w+ .*$", conf)))
        broker = Broker(work, extra_config=conf).start()
        (Path(tmp) / "pw").write_text(PASSWORDS["edgebayes"] + "\n")
        cfg = load_config(DEPLOY / "edgebayes.toml").with_overrides(broker.address, str(Path(tmp) / "ckpt"))
        cfg = dataclasses.replace(
            cfg, broker=dataclasses.replace(cfg.broker, password_file=str(Path(tmp) / "pw"), reconnect_min_s=0.1),
            models=cfg.models[:1],
            memory=dataclasses.replace(cfg.memory, rss_limit_mb=None))  # RSS here is the bench's too
        runtime = Runtime(cfg)
        dev = None
        try:
            runtime.start()
            wait_until(runtime.client.subscribed.is_set, 10, "runtime not subscribed")
            dev = device(broker)
            pid = broker.proc.pid
            for run in ("online", "offline"):
                first = 0 if run == "online" else args.n
                if run == "offline":
                    runtime.stop()
                io0 = proc_io(pid)
                t0 = time.monotonic()
                publish_all(dev, first, args.n)
                if run == "offline":
                    io1 = proc_io(pid)
                    runtime = Runtime(cfg)
                    runtime.start()
                wait_until(lambda: runtime.worker.serving.n_readings >= args.n, 600, "readings not all served")
                io2 = proc_io(pid)
                db = work / "mosquitto.db"
                size = db.stat().st_size if db.exists() else 0
                print(f"{run}: {args.n} readings in {time.monotonic() - t0:.1f} s; mosquitto wrote "
                      f"{(io2['write_bytes'] - io0['write_bytes']) / args.n:,.0f} bytes/reading to storage, "
                      f"{(io2['wchar'] - io0['wchar']) / args.n:,.0f} bytes/reading in all (wchar); "
                      f"mosquitto.db now {size:,} bytes")
                if run == "offline":
                    print(f"  of which while the runtime was away: "
                          f"{(io1['write_bytes'] - io0['write_bytes']) / args.n:,.0f} bytes/reading to storage")
        finally:
            if dev is not None:
                dev.loop_stop()
                dev.disconnect()
            runtime.stop()
            broker.stop()


if __name__ == "__main__":
    main()
