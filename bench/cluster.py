"""Throughput, latency and CPU of a pool of ``edgebayes cluster`` runtimes on a 3-node NATS
cluster on this machine (docs/scale-out.md).

For each pool size: a fresh cluster, the runtimes started and balanced (every partition owned,
shares within one), then ``--n`` labelled readings (8 features, inline labels, ``--devices``
devices) published at once; readings/s is counted from the first prediction to the last, with
each runtime's CPU seconds (user + system) over it. Then ``--rate`` readings/s for ``--seconds``: latency from
the publish to the prediction's arrival, p50 and p99. The cluster, the publisher, the
collector and the runtimes share the machine's cores.

    nice -n 10 python bench/cluster.py [--pools 1 2 3] [--n 20000] [--devices 64] [--rate 200]
    nice -n 10 python bench/cluster.py --leader-kill

``--leader-kill`` instead publishes 1,000 QoS 1 readings over MQTT at 100/s and kills the node
leading the partition stream after 100: how many the gateway acknowledged and how many the
stream stored (docs/scale-out.md, "What it guarantees").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import msgpack
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.runtime import cpu_s, payloads
from edgebayes.cluster.lease import Leases
from edgebayes.cluster.nats_config import nats_config_text, password_variable
from edgebayes.cluster.subjects import partition_of
from edgebayes.runtime.config import ClusterConfig, parse_config
from tests.nats_cluster import NatsCluster, RuntimeProcess, runtime_config

FEATURES = [f"f{i}" for i in range(8)]
PASSWORD = "bench-secret"
PARTITIONS = 16


def _cluster(folder: Path) -> NatsCluster:
    config = parse_config({"broker": {"username": "edgebayes"}, "schema": {"features": FEATURES},
                           "models": [{"name": "nb", "kind": "gaussian_nb"}]})
    include = nats_config_text(config, ClusterConfig(partitions=PARTITIONS), ha_user=None, gateway_user="bench")
    c = NatsCluster(folder, include, {password_variable(u): PASSWORD for u in ("edgebayes", "monitor", "bench")})
    try:
        c.start()
        c.wait_jetstream("edgebayes", PASSWORD)
    except BaseException:
        c.stop()
        raise
    return c


async def _balanced(js, k: int, timeout_s: float = 60.0) -> dict[int, str]:
    """Until ``k`` runtimes own every partition, each at least one and at most its fair share
    ceil(P / k) (the pool's own rule, edgebayes.cluster.node: 16 over 3 can settle at 6, 6, 4);
    the owners."""
    leases = await Leases.open(js, "bench", 3.0, 3)
    deadline = time.monotonic() + timeout_s
    while True:
        owners = await leases.owners()
        counts = [list(owners.values()).count(f"rt-{j}") for j in range(k)]
        if len(owners) == PARTITIONS and min(counts) >= 1 and max(counts) <= math.ceil(PARTITIONS / k):
            return owners
        if time.monotonic() > deadline:
            raise TimeoutError(f"the pool did not balance: {counts}")
        await asyncio.sleep(0.2)


async def _run(cluster: NatsCluster, folder: Path, k: int, args) -> dict:
    import nats
    from nats.js.api import StreamConfig

    nc = await nats.connect(cluster.urls(), user="edgebayes", password=PASSWORD)
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="EDGEBAYES_PARTITIONS", subjects=["ebpart.>"], num_replicas=3))
    arrived: dict[tuple[str, int], float] = {}

    async def on_prediction(msg):
        arrived.setdefault((msg.subject.split(".")[1], json.loads(msg.data)["seq"]), time.monotonic())

    mon = await nats.connect(cluster.urls(), user="monitor", password=PASSWORD)
    pub = await nats.connect(cluster.urls(), user="bench", password=PASSWORD)  # as the devices' gateway
    await mon.subscribe("edgebayes.*.prediction", cb=on_prediction)
    samples = payloads(args.n + int(args.rate * args.seconds))
    devices = [f"d{i}" for i in range(args.devices)]
    seqs = dict.fromkeys(devices, 0)

    async def send(i: int) -> tuple[str, int]:
        _, x, y = samples[i]
        d = devices[i % len(devices)]
        seq, seqs[d] = seqs[d], seqs[d] + 1
        # straight onto the stream's partition subject (a gateway's JetStream path; MQTT's is mapped there)
        await pub.publish(f"ebpart.{partition_of(d, PARTITIONS)}.{d}.reading",
                          msgpack.packb({"seq": seq, "ts": time.time(), "x": x, "y": y}))
        return d, seq

    pool = [RuntimeProcess(runtime_config(folder / "pool", f"rt-{j}", cluster.urls(), PARTITIONS, PASSWORD,
                                          features=FEATURES, checkpoint_interval_s=args.checkpoint_interval_s))
            for j in range(k)]
    try:
        owners = await _balanced(js, k)
        for i in range(args.n):  # the backlog, as fast as NATS takes it
            await send(i)
        await pub.flush()
        while len(arrived) < 1:
            await asyncio.sleep(0.001)
        cpu0 = [cpu_s(rt.proc.pid) for rt in pool]
        t0 = min(arrived.values())
        deadline = time.monotonic() + 120
        while len(arrived) < args.n and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        n_backlog = len(arrived)  # fewer than n: the stream did not take every core publish
        t1 = max(arrived.values())
        cpu = [cpu_s(rt.proc.pid) - c for rt, c in zip(pool, cpu0)]
        sent: dict[tuple[str, int], float] = {}
        period, start = 1.0 / args.rate, time.monotonic()
        for j in range(int(args.rate * args.seconds)):
            await asyncio.sleep(max(0.0, start + j * period - time.monotonic()))
            key = await send(args.n + j)
            sent[key] = time.monotonic()
        deadline = time.monotonic() + 30
        while not all(key in arrived for key in sent) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        lat = np.array([arrived[key] - t for key, t in sent.items() if key in arrived]) * 1000
    finally:
        for rt in pool:
            rt.stop()
        for c in (mon, pub, nc):
            await c.close()
    return {"runtimes": k, "readings_per_s": n_backlog / (t1 - t0), "backlog_lost": args.n - n_backlog,
            "cpu_s": cpu, "wall_s": t1 - t0,
            "partitions_per_runtime": sorted(list(owners.values()).count(f"rt-{j}") for j in range(k)),
            "p50_ms": float(np.percentile(lat, 50)), "p99_ms": float(np.percentile(lat, 99)),
            "paced_lost": len(sent) - len(lat)}


def leader_kill(folder: Path, n: int = 1000, kill_at: int = 100) -> dict:
    """QoS 1 MQTT publishes to a gateway while the partition stream's leader node is killed:
    how many were acknowledged, and how many the stream stored."""
    import nats
    import paho.mqtt.client as paho
    from nats.js.api import StreamConfig
    from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

    cluster = _cluster(folder)

    async def leader() -> str:
        nc = await nats.connect(cluster.urls(), user="edgebayes", password=PASSWORD)
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name="EDGEBAYES_PARTITIONS", subjects=["ebpart.>"], num_replicas=3))
        name = (await js.stream_info("EDGEBAYES_PARTITIONS")).cluster.leader
        await nc.close()
        return name.removeprefix("nats-")

    async def stored(urls) -> list[int]:
        nc = await nats.connect(urls, user="edgebayes", password=PASSWORD)
        sub = await nc.jetstream().pull_subscribe("ebpart.>", durable=None, stream="EDGEBAYES_PARTITIONS")
        got = []
        while True:
            try:
                got += [int(m.data) for m in await sub.fetch(200, timeout=2)]
            except TimeoutError:
                break
        await nc.close()
        return got

    try:
        dead = asyncio.run(leader())
        node = next(k for k in cluster.names if k != dead)
        acked: set[int] = set()
        c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="bench-pub",
                        protocol=MQTTProtocolVersion.MQTTv311)
        c.username_pw_set("bench", PASSWORD)
        c.on_publish = lambda cl, ud, mid, rc, props: acked.add(mid)
        c.connect("127.0.0.1", cluster.mqtt_port(node))
        c.loop_start()
        mids = {}
        for i in range(n):
            if i == kill_at:
                cluster.kill(dead)
            mids[c.publish(f"edgebayes/d{i % 8}/reading", str(i).encode(), qos=1).mid] = i
            time.sleep(0.01)
        time.sleep(3)
        c.loop_stop()
        got = set(asyncio.run(stored(cluster.urls([k for k in cluster.names if k != dead]))))
    finally:
        cluster.stop()
    missing = sorted(set(range(n)) - got)
    return {"published": n, "acked": len(acked & set(mids)), "stored": len(got),
            "missing_from": missing[0] if missing else None, "missing_to": missing[-1] if missing else None}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pools", type=int, nargs="+", default=[1, 2, 3], help="pool sizes to measure")
    p.add_argument("--n", type=int, default=20000, help="readings of the backlog")
    p.add_argument("--devices", type=int, default=64)
    p.add_argument("--rate", type=float, default=200.0, help="paced readings/s of the latency phase")
    p.add_argument("--seconds", type=float, default=10.0, help="length of the latency phase")
    p.add_argument("--checkpoint-interval-s", type=float, default=5.0, help="[cluster] checkpoint_interval_s")
    p.add_argument("--leader-kill", action="store_true",
                   help="instead: MQTT publishes acknowledged vs stored while the stream's leader node is killed")
    args = p.parse_args()
    if args.leader_kill:
        with tempfile.TemporaryDirectory() as tmp:
            print(leader_kill(Path(tmp) / "nats"))
        return 0
    print("runtimes  readings/s  wall s  CPU s per runtime      partitions  p50 ms  p99 ms  lost (backlog, paced)")
    for k in args.pools:
        with tempfile.TemporaryDirectory() as tmp:
            cluster = _cluster(Path(tmp) / "nats")
            try:
                r = asyncio.run(_run(cluster, Path(tmp), k, args))
            finally:
                cluster.stop()
        print(f"{r['runtimes']:>8}  {r['readings_per_s']:>10.0f}  {r['wall_s']:>6.1f}  "
              f"{' '.join(f'{c:.1f}' for c in r['cpu_s']):<21}  {r['partitions_per_runtime']!s:<10}  "
              f"{r['p50_ms']:>6.1f}  {r['p99_ms']:>6.1f}  {r['backlog_lost']}, {r['paced_lost']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
