#!/usr/bin/env python3
"""Publish a Raspberry Pi's own health as edgebayes readings: a real sensor, no extra hardware.

    python3 docs/examples/pi_health.py --broker 127.0.0.1:1883 --device pi-1 \
        [--username pi-1 --password-file FILE] [--interval-s 10] [--ahead 6] [--hot-c 60]

Served by ``edgebayes run --config docs/examples/pi-health.toml``. Every ``--interval-s``
seconds a reading goes to ``edgebayes/<device>/reading`` (JSON, QoS 1) with ``x`` in that
config's ``[schema]`` order:

- ``soc_temp_c``: the SoC temperature, °C (``/sys/class/thermal/thermal_zone0/temp``, m°C);
- ``load1``: the 1-minute load average (``/proc/loadavg``);
- ``mem_used_pct``: memory in use, % (``/proc/meminfo``: 1 - MemAvailable / MemTotal).

Its label follows ``--ahead`` readings later on ``edgebayes/<device>/label``: ``"hot"`` when the
SoC temperature has then reached ``--hot-c`` °C, else ``"ok"``. So the runtime learns, from the
load and memory now, whether the Pi will run hot a minute from now (6 x 10 s). ``seq`` is the
time in ms, so it keeps growing across restarts. Needs paho-mqtt 2.x (installed with edgebayes).
Exit 2 when a file cannot be read (no thermal zone: not a Pi, or a container) or the broker
cannot be reached or refuses the login, with one line on stderr saying which.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt

THERMAL = "/sys/class/thermal/thermal_zone0/temp"
LOADAVG = "/proc/loadavg"
MEMINFO = "/proc/meminfo"


def read_health(thermal: str = THERMAL, loadavg: str = LOADAVG, meminfo: str = MEMINFO) -> list[float]:
    """``[soc_temp_c, load1, mem_used_pct]`` now. Raises OSError, ValueError: unreadable files."""
    soc_temp_c = int(Path(thermal).read_text().split()[0]) / 1000.0
    load1 = float(Path(loadavg).read_text().split()[0])
    kib = {}
    for line in Path(meminfo).read_text().splitlines():
        key, _, rest = line.partition(":")
        kib[key] = int(rest.split()[0]) if rest.split() else 0
    mem_used_pct = 100.0 * (1.0 - kib["MemAvailable"] / kib["MemTotal"])
    return [soc_temp_c, load1, round(mem_used_pct, 2)]


def reading(seq: int, ts: float, x: list[float]) -> bytes:
    """A reading message (docs/protocol.md)."""
    return json.dumps({"seq": seq, "ts": ts, "x": x}).encode()


def label(seq: int, soc_temp_c: float, hot_c: float) -> bytes:
    """The label of reading ``seq``, from the SoC temperature measured ``--ahead`` readings later."""
    return json.dumps({"seq": seq, "y": "hot" if soc_temp_c >= hot_c else "ok"}).encode()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--broker", default="127.0.0.1:1883", metavar="HOST:PORT")
    p.add_argument("--device", required=True, help="device id: 1-64 of [A-Za-z0-9_-]")
    p.add_argument("--username", help="user name (the device id with the installed broker's ACL)")
    p.add_argument("--password-file", metavar="FILE", help="file whose first line is the password")
    p.add_argument("--prefix", default="edgebayes", help="[topics] prefix of the runtime")
    p.add_argument("--interval-s", type=float, default=10.0, help="seconds between readings")
    p.add_argument("--ahead", type=int, default=6, help="readings between a reading and its label")
    p.add_argument("--hot-c", type=float, default=60.0, help="SoC temperature labelled hot, °C")
    p.add_argument("--count", type=int, help="stop after this many readings (default: never)")
    p.add_argument("--thermal", default=THERMAL, help=argparse.SUPPRESS)  # tests: a fake sensor
    args = p.parse_args(argv)
    try:
        read_health(args.thermal)
    except (OSError, ValueError, KeyError) as exc:
        print(f"pi_health: cannot read the Pi's sensors: {exc}", file=sys.stderr)
        return 2
    host, _, port = args.broker.rpartition(":")
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=args.device, protocol=mqtt.MQTTv5)
    if args.username:
        password = Path(args.password_file).read_text().splitlines()[0] if args.password_file else None
        client.username_pw_set(args.username, password)
    answered, refused = threading.Event(), []
    client.on_connect = lambda c, userdata, flags, rc, props: (refused.append(rc) if rc.is_failure else None,
                                                               answered.set())
    try:
        client.connect(host, int(port))
    except OSError as exc:
        print(f"pi_health: cannot connect to {args.broker}: {exc}", file=sys.stderr)
        return 2
    client.loop_start()
    if not answered.wait(10) or refused:
        client.loop_stop()
        why = refused[0] if refused else "no answer in 10 s"
        print(f"pi_health: the broker at {args.broker} refused the connection: {why}", file=sys.stderr)
        return 2
    topic = f"{args.prefix}/{args.device}"
    waiting = collections.deque()  # seqs whose label is due --ahead readings later
    n = 0
    while args.count is None or n < args.count:
        ts = time.time()
        x = read_health(args.thermal)
        seq = int(ts * 1000)
        client.publish(f"{topic}/reading", reading(seq, ts, x), qos=1).wait_for_publish()
        waiting.append(seq)
        if len(waiting) > args.ahead:
            client.publish(f"{topic}/label", label(waiting.popleft(), x[0], args.hot_c), qos=1).wait_for_publish()
        n += 1
        time.sleep(max(0.0, ts + args.interval_s - time.time()))
    client.loop_stop()
    client.disconnect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
