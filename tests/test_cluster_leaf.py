"""A site's Pi joining the cluster as a NATS leaf node, end to end: the shipped
deploy/nats/leaf.conf, unchanged, beside the cluster's ``edgebayes nats-config`` output (with
``--leaf-user site1``), given its ports, store and hub URL through its environment (the
documented per-node mechanism: deploy/nats/leaf.env). firmware-sim devices publish readings and
labels to the leaf's MQTT port, a runtime on the 3-node cluster learns them, and their
predictions come back to a subscriber at the site."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from firmware_sim.mqtt import BrokerOptions
from firmware_sim.runner import run_devices
from tests.broker import free_ports, wait_port
from tests.nats_cluster import (
    FEATURES,
    NatsCluster,
    Predictions,
    RuntimeProcess,
    lease_owners,
    partition_checkpoints,
    pool_cluster,
    runtime_config,
)
from tests.runtime_client import wait_for

LEAF_CONF = Path(__file__).resolve().parents[1] / "deploy" / "nats" / "leaf.conf"
PASSWORDS = {"edgebayes": "rt-secret", "monitor": "mon-secret", "sim": "sim-secret", "site1": "site-secret"}
PARTITIONS = 8


@pytest.fixture
def cluster(tmp_path):
    with pool_cluster(tmp_path / "hub", PARTITIONS, PASSWORDS, ha_user=None, gateway_user="sim",
                      leaf_users=["site1"]) as c:
        yield c


class LeafNode:
    """``nats-server -c leaf.conf`` at a site, joined to ``cluster``'s node a."""

    def __init__(self, cluster: NatsCluster, folder: Path):
        folder.mkdir(parents=True)
        shutil.copy(LEAF_CONF, folder / "leaf.conf")
        shutil.copy(cluster.folder / "edgebayes-nats.conf", folder / "edgebayes-nats.conf")
        self.mqtt_port, client_port = free_ports(2)
        hub = f"nats-leaf://site1:{PASSWORDS['site1']}@127.0.0.1:{cluster.ports['a']['leaf']}"
        env = {**os.environ, **cluster.passwords, "EB_NATS_NAME": "leaf-site1", "EB_NATS_STORE": str(folder / "store"),
               "EB_NATS_SITE": "site1", "EB_NATS_HUB": hub, "EB_NATS_LISTEN": f"127.0.0.1:{client_port}",
               "EB_NATS_MQTT_LISTEN": f"127.0.0.1:{self.mqtt_port}"}
        self.log = folder / "leaf.log"
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([cluster.exe, "-c", str(folder / "leaf.conf")], env=env, stdout=log,
                                         stderr=subprocess.STDOUT)
        wait_port("127.0.0.1", self.mqtt_port, timeout_s=20.0)
        wait_for(lambda: b"Leafnode connection created" in self.log.read_bytes(), 20, "the leaf joining the cluster")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def test_devices_at_a_leaf_site_are_served_by_the_cluster(cluster, tmp_path):
    n_devices, limit = 4, 20
    rt = RuntimeProcess(runtime_config(tmp_path / "pool", "rt-0", cluster.urls(), PARTITIONS, PASSWORDS["edgebayes"]))
    leaf = LeafNode(cluster, tmp_path / "leaf")
    predictions = None
    try:
        wait_for(lambda: len(lease_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"])) == PARTITIONS, 20,
                 "rt-0 owning every partition")
        predictions = Predictions(leaf.mqtt_port, "monitor", PASSWORDS["monitor"])  # at the site
        pw = tmp_path / "sim.password"
        pw.write_text(PASSWORDS["sim"] + "\n")
        broker = BrokerOptions("127.0.0.1", leaf.mqtt_port, username="sim", protocol="mqttv311", password_file=str(pw))
        stats = run_devices(broker, "synth:AGR_A", n_devices=n_devices, limit=limit, rate_hz=10.0, labels="delayed",
                            label_delay_s=0.3, seed=4)
        totals = stats.totals()
        assert stats.completed and totals["lost"] == 0 and totals["unconfirmed"] == 0
        expected = {(f"sim-{i}", s) for i in range(n_devices) for s in range(limit)}
        wait_for(lambda: expected <= set(predictions.first), 20, "a prediction of every reading, at the site")
        assert rt.stop() == 0, rt.tail()
        states = partition_checkpoints(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"], PARTITIONS, FEATURES,
                                       tmp_path / "final")
    finally:
        if predictions is not None:
            predictions.close()
        rt.stop()
        leaf.stop()
    assert {d: s["models"][0]["n_labels"] for d, s in states.items()} == {f"sim-{i}": limit for i in range(n_devices)}
