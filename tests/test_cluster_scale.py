"""A pool at its intended size, through one fault after another: a real 3-node NATS cluster,
3 real ``edgebayes cluster`` processes, 64 partitions, 200 firmware-sim devices with delayed
labels over MQTT. Mid-stream one runtime is killed with SIGKILL, and later one NATS node: every
reading is acknowledged and learned exactly once, each device's learned count continuing
through both, every reading predicted (one prediction per device may be lost with the node:
docs/scale-out.md); the seconds from the runtime's kill to its partitions' first prediction on
their new owners are printed."""

from __future__ import annotations

import statistics
import threading
import time

import pytest

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
    pool_cluster,
    runtime_config,
    settled_owners,
)
from tests.runtime_client import wait_for

PASSWORDS = {"edgebayes": "rt-secret", "monitor": "mon-secret", "sim": "sim-secret"}
PARTITIONS, N_DEVICES, LIMIT = 64, 200, 40


@pytest.fixture
def cluster(tmp_path):
    with pool_cluster(tmp_path / "nats", PARTITIONS, PASSWORDS, ha_user=None, gateway_user="sim") as c:
        yield c


def _owners(cluster) -> dict[int, str]:
    return lease_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"])


def _states(cluster, tmp_path) -> dict[str, dict]:
    return partition_checkpoints(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"], PARTITIONS, FEATURES,
                                 tmp_path / "final")


def _sim(cluster, stats: dict) -> None:
    path = cluster.folder / "sim.password"
    path.write_text(PASSWORDS["sim"] + "\n")
    broker = BrokerOptions("127.0.0.1", cluster.mqtt_port("a"), username="sim", protocol="mqttv311",
                           password_file=str(path))
    stats["sim"] = run_devices(broker, "synth:AGR_A", n_devices=N_DEVICES, limit=LIMIT, rate_hz=2.0,
                               labels="delayed", label_delay_s=0.5, seed=11)


def _learned_all(cluster, tmp_path) -> bool:
    try:
        states = _states(cluster, tmp_path)
    except TimeoutError:  # an object store read just after a node was lost
        return False
    return len(states) == N_DEVICES and all(s["models"][0]["n_labels"] >= LIMIT for s in states.values())


def test_pool_of_three_at_64_partitions_and_200_devices_through_a_runtime_kill_then_a_node_kill(cluster, tmp_path):
    pool = [RuntimeProcess(runtime_config(tmp_path / "pool", f"rt-{i}", cluster.urls(), PARTITIONS,
                                          PASSWORDS["edgebayes"])) for i in range(3)]
    predictions = Predictions(cluster.mqtt_port("c"), "monitor", PASSWORDS["monitor"])
    try:
        settled_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"], PARTITIONS, 3, 40)
        stats: dict = {}
        sim = threading.Thread(target=_sim, args=(cluster, stats))
        sim.start()
        time.sleep(6.0)
        victim = {p for p, o in _owners(cluster).items() if o == "rt-0"}
        t_kill = time.monotonic()
        pool[0].kill9()
        wait_for(lambda: victim <= {p for p, o in _owners(cluster).items() if o != "rt-0"}, 30,
                 "rt-0's partitions taken over")
        time.sleep(3.0)
        cluster.kill("b")  # neither the devices' node nor the subscriber's
        sim.join(120)
        wait_for(lambda: len(predictions.first) >= N_DEVICES * LIMIT - N_DEVICES, 40, "a prediction of every reading")
        wait_for(lambda: _learned_all(cluster, tmp_path), 40, f"the checkpoints holding {LIMIT} labels per device")
        for rt in pool[1:]:
            assert rt.stop() == 0, rt.tail()
    finally:
        predictions.close()
        for rt in pool:
            rt.stop()
    assert victim
    check_every_reading_learned_once(_states(cluster, tmp_path), stats, predictions, N_DEVICES, LIMIT, node_lost=True)
    takeover = []
    for p in victim:
        after = [t for (d, _), t in predictions.first.items() if partition_of(d, PARTITIONS) == p and t > t_kill + 0.5]
        if after:
            takeover.append(min(after) - t_kill)
    assert len(takeover) == len(victim)  # every partition of the dead runtime served again
    print(f"takeover s: median {statistics.median(takeover):.2f}, max {max(takeover):.2f} over {len(takeover)} "
          f"partitions; {len(predictions.first)} of {N_DEVICES * LIMIT} readings predicted")
