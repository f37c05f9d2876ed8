"""A pool of real ``edgebayes cluster`` processes on a real 3-node NATS cluster: leases, a
runtime serving its partitions end to end, a runtime killed with SIGKILL mid-stream (its
partitions taken over: 0 lost, 0 learned twice, each device's learned count continuing), a
NATS node killed mid-stream. Devices are firmware-sim's, over MQTT 3.1.1 to the gateway."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import threading
import time

import pytest

from edgebayes.cluster.config import CHECKPOINTS, HEADS, LEASES, STREAM
from edgebayes.cluster.subjects import partition_of
from firmware_sim.mqtt import BrokerOptions
from firmware_sim.runner import run_devices
from tests.nats_cluster import (
    FEATURES,
    Predictions,
    RuntimeProcess,
    check_every_reading_learned_once,
    lease_owners,
    partition_checkpoints,
    place_leaders,
    pool_cluster,
    runtime_config,
    settled_owners,
)
from tests.runtime_client import wait_for

PASSWORDS = {"edgebayes": "rt-secret", "monitor": "mon-secret", "sim": "sim-secret"}
PARTITIONS = 16


@pytest.fixture
def cluster(tmp_path):
    with pool_cluster(tmp_path / "nats", PARTITIONS, PASSWORDS, ha_user=None, gateway_user="sim") as c:
        yield c


def test_lease_one_owner_and_takeover_after_ttl(cluster):
    from edgebayes.cluster.lease import Leases

    async def run():
        import nats

        a_nc, b_nc = [await nats.connect(cluster.urls(), user="edgebayes", password=PASSWORDS["edgebayes"])
                      for _ in range(2)]
        a = await Leases.open(a_nc.jetstream(), "rt-a", 3.0, 3)
        b = await Leases.open(b_nc.jetstream(), "rt-b", 3.0, 3)
        out = {"a_takes": await a.acquire(3), "b_refused": not await b.acquire(3)}
        for _ in range(8):  # renewed past the TTL: still A's
            await asyncio.sleep(0.5)
            out.setdefault("a_renews", []).append(await a.renew(3))
        out["b_refused_while_renewed"] = not await b.acquire(3)
        t0 = time.monotonic()
        while not await b.acquire(3):  # A stops renewing
            await asyncio.sleep(0.1)
        out["takeover_s"] = time.monotonic() - t0
        out["a_renew_after"] = await a.renew(3)
        out["owners"] = await a.owners()
        await b.release(3)
        out["a_takes_released"] = await a.acquire(3)
        for nc in (a_nc, b_nc):
            await nc.close()
        return out

    out = asyncio.run(run())
    assert out["a_takes"] and out["b_refused"] and out["a_renews"] == [True] * 8 and out["b_refused_while_renewed"]
    assert 1.0 < out["takeover_s"] < 6.0  # free once the TTL (3 s) passed since A's last renewal
    assert out["a_renew_after"] is False  # A cannot renew what B holds
    assert out["owners"] == {3: "rt-b"}
    assert out["a_takes_released"]  # a release frees it at once


def test_a_lease_write_applied_after_its_reply_timed_out_is_still_the_runtimes(cluster):
    """JetStream applied a renewal whose reply the runtime never got (a timeout): the key
    names the runtime at a revision it does not hold. Its next renewal and its release take
    the key's own revision; a key another runtime wrote stays that runtime's."""
    from edgebayes.cluster.lease import Leases

    async def run():
        import nats

        nc = await nats.connect(cluster.urls(), user="edgebayes", password=PASSWORDS["edgebayes"])
        a = await Leases.open(nc.jetstream(), "rt-a", 30.0, 3)
        out = {}
        for p in (1, 2, 3):
            assert await a.acquire(p)
            await a.kv.put(f"partition.{p}", b"rt-a" if p < 3 else b"rt-b")  # the write a lost reply was for
        out["renewed"] = await a.renew(1)
        out["renewed_again"] = out["renewed"] and await a.renew(1)  # at the revision it now holds
        await a.release(2)
        out["b_renewed"] = await a.renew(3)
        out["owners"] = await a.owners()
        await nc.close()
        return out

    out = asyncio.run(run())
    assert out["renewed"] and out["renewed_again"]
    assert out["b_renewed"] is False
    assert out["owners"] == {1: "rt-a", 3: "rt-b"}  # 2 released at the key's revision


def _sim(cluster, node: str, n_devices: int, limit: int, rate_hz: float, stats: dict):
    broker = BrokerOptions("127.0.0.1", cluster.mqtt_port(node), username="sim", protocol="mqttv311",
                           password_file=None)
    broker = _with_password(broker, cluster.folder / "sim.password", PASSWORDS["sim"])
    stats["sim"] = run_devices(broker, "synth:AGR_A", n_devices=n_devices, limit=limit, rate_hz=rate_hz,
                               labels="delayed", label_delay_s=0.5, seed=3)


def _with_password(broker: BrokerOptions, path, password: str) -> BrokerOptions:
    import dataclasses

    path.write_text(password + "\n")
    return dataclasses.replace(broker, password_file=str(path))


def _pool(cluster, tmp_path, n: int) -> list[RuntimeProcess]:
    return [RuntimeProcess(runtime_config(tmp_path / "pool", f"rt-{i}", cluster.urls(), PARTITIONS,
                                          PASSWORDS["edgebayes"])) for i in range(n)]


def _final_states(cluster, tmp_path) -> dict[str, dict]:
    return partition_checkpoints(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"], PARTITIONS, FEATURES,
                                 tmp_path / "final")


def _wait_learned(cluster, tmp_path, n_devices: int, limit: int, timeout_s: float = 30.0) -> None:
    """Until the uploaded checkpoints hold every device's ``limit`` labels (or more: then the check fails)."""
    def done():
        try:
            states = _final_states(cluster, tmp_path)
        except TimeoutError:  # an object store read just after a node was lost (store.LOAD_TIMEOUT_S)
            return False
        return len(states) == n_devices and all(s["models"][0]["n_labels"] >= limit for s in states.values())
    wait_for(done, timeout_s, f"the checkpoints of {n_devices} devices holding {limit} labels each")


def _served_by_one(cluster, tmp_path, predictions, n_devices: int, limit: int) -> dict:
    """Once one runtime leases every partition, ``n_devices`` devices send ``limit`` readings
    each to node a; until each is predicted and its label in the uploaded checkpoints."""
    settled_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"], PARTITIONS, 1, 20)
    stats = {}
    _sim(cluster, "a", n_devices, limit, 20.0, stats)
    wait_for(lambda: len(predictions.first) >= n_devices * limit, 20, "a prediction of every reading")
    _wait_learned(cluster, tmp_path, n_devices, limit)
    return stats


def test_one_runtime_serves_its_partitions_end_to_end(cluster, tmp_path):
    pool = _pool(cluster, tmp_path, 1)
    predictions = Predictions(cluster.mqtt_port("c"), "monitor", PASSWORDS["monitor"])
    try:
        stats = _served_by_one(cluster, tmp_path, predictions, 6, 30)
        assert pool[0].stop() == 0, pool[0].tail()
    finally:
        predictions.close()
        for rt in pool:
            rt.stop()
    assert not lease_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"])  # released on a clean stop
    check_every_reading_learned_once(_final_states(cluster, tmp_path), stats, predictions, 6, 30)


def test_a_clean_stop_tries_its_lease_deletions_again_while_the_lease_bucket_does_not_answer(cluster, tmp_path):
    """The lease bucket's leader paused (SIGSTOP) for 2 s as the runtime stops, every other
    stream led by the runtime's node: the runtime hands its partitions over, tries deleting
    its leases and heartbeat again until the leader answers, and exits 0 with nothing leased."""
    pool = [RuntimeProcess(runtime_config(tmp_path / "pool", "rt-0", cluster.urls(["a"]), PARTITIONS,
                                          PASSWORDS["edgebayes"]))]
    predictions = Predictions(cluster.mqtt_port("a"), "monitor", PASSWORDS["monitor"])
    try:
        stats = _served_by_one(cluster, tmp_path, predictions, 3, 10)
        place_leaders(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"],
                      {f"KV_{LEASES}": "nats-c", f"KV_{HEADS}": "nats-a", f"OBJ_{CHECKPOINTS}": "nats-a",
                       STREAM: "nats-a"})
        cluster.pause("c")
        try:
            pool[0].proc.terminate()
            time.sleep(2.0)
        finally:
            cluster.resume("c")
        assert pool[0].stop() == 0, pool[0].tail()
    finally:
        predictions.close()
        for rt in pool:
            rt.stop()
    assert not lease_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"])
    check_every_reading_learned_once(_final_states(cluster, tmp_path), stats, predictions, 3, 10)


def _failover(cluster, tmp_path, fault, sim_node: str = "a", sub_node: str = "c", node_lost: bool = False) -> dict:
    """Three runtimes, 16 devices streaming 12 s to ``sim_node``'s gateway, predictions read on
    ``sub_node``'s; ``fault(pool)`` at 4 s; every runtime then stopped cleanly and the
    partitions' checkpoints read back."""
    n_devices, limit = 16, 60
    pool = _pool(cluster, tmp_path, 3)
    predictions = Predictions(cluster.mqtt_port(sub_node), "monitor", PASSWORDS["monitor"])
    out: dict = {}
    try:
        settled_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"], PARTITIONS, 3, 30)
        stats: dict = {}
        sim = threading.Thread(target=_sim, args=(cluster, sim_node, n_devices, limit, 5.0, stats))
        sim.start()
        time.sleep(4.0)
        out.update(fault(pool) or {})
        sim.join(60)
        # on a timeout the checks below say what is missing
        with contextlib.suppress(AssertionError):
            wait_for(lambda: len(predictions.first) >= n_devices * limit, 30, "a prediction of every reading")
            _wait_learned(cluster, tmp_path, n_devices, limit)
        for rt in pool:
            rt.stop()
    finally:
        predictions.close()
        for rt in pool:
            rt.stop()
    check_every_reading_learned_once(_final_states(cluster, tmp_path), stats, predictions, n_devices, limit,
                                      node_lost)
    out["predictions"] = predictions
    return out


def test_runtime_killed_mid_stream_its_partitions_taken_over_nothing_lost_or_learned_twice(cluster, tmp_path):
    def kill_one(pool):
        owners = lease_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"])
        victim = {p for p, o in owners.items() if o == "rt-0"}
        t_kill = time.monotonic()
        pool[0].kill9()
        wait_for(lambda: victim <= {p for p, o in lease_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"])
                                    .items() if o != "rt-0"}, 20, "rt-0's partitions taken over")
        return {"victim": victim, "t_kill": t_kill}

    out = _failover(cluster, tmp_path, kill_one)
    assert out["victim"]  # rt-0 owned partitions when it was killed
    first = out["predictions"].first
    takeover = []
    for p in out["victim"]:
        after = [t for (d, _), t in first.items() if partition_of(d, PARTITIONS) == p and t > out["t_kill"] + 0.5]
        if after:
            takeover.append(min(after) - out["t_kill"])
    assert takeover
    print(f"takeover s: median {statistics.median(takeover):.2f}, max {max(takeover):.2f} over {len(takeover)} "
          "partitions")


def _stream_leader(cluster) -> str:
    """The node leading the partition stream (made here as the runtimes make it)."""
    import nats
    from nats.js.api import StorageType, StreamConfig

    from edgebayes.cluster.config import STREAM

    async def make():
        nc = await nats.connect(cluster.urls(), user="edgebayes", password=PASSWORDS["edgebayes"])
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name=STREAM, subjects=["ebpart.>"], num_replicas=3, storage=StorageType.FILE))
        for _ in range(50):
            leader = (await js.stream_info(STREAM)).cluster.leader
            if leader:
                break
            await asyncio.sleep(0.1)
        await nc.close()
        return leader.removeprefix("nats-")

    return asyncio.run(make())


def _kill_node_mid_stream(cluster, tmp_path, victim: str) -> None:
    sim_node, sub_node = (n for n in ("a", "b", "c") if n != victim)
    _failover(cluster, tmp_path, lambda pool: cluster.kill(victim), sim_node, sub_node, node_lost=True)


def test_nats_node_killed_mid_stream_nothing_lost_or_learned_twice(cluster, tmp_path):
    # a node that does not lead the partition stream, with runtimes, ephemeral consumers and replicas on it
    leader = _stream_leader(cluster)
    _kill_node_mid_stream(cluster, tmp_path, next(n for n in ("b", "a", "c") if n != leader))


def test_stream_leader_node_killed_mid_stream_no_acknowledged_reading_lost(cluster, tmp_path):
    # the gateway's PUBACK follows the stream's own store acknowledgement (the store mapping):
    # readings published while a new leader is elected are resent by the devices, not lost
    _kill_node_mid_stream(cluster, tmp_path, _stream_leader(cluster))
