"""Home Assistant discovery of a pool, through a real 3-node NATS cluster's MQTT gateway: two
real ``edgebayes cluster`` processes with ``[homeassistant] discovery``, firmware-sim devices,
and an MQTT 3.1.1 subscriber logged in as Home Assistant on another node. Each device's
retained configs name the status topic of the runtime that serves it; a runtime killed with
SIGKILL is ``offline`` by its will, and the runtime that takes its partitions over announces
their devices again as its own, before any new reading; Home Assistant's birth message has
the configs sent again; a clean stop leaves ``offline``."""

from __future__ import annotations

import json
import threading

import pytest

from edgebayes.cluster.subjects import partition_of
from firmware_sim.mqtt import BrokerOptions
from firmware_sim.runner import run_devices
from tests.nats_cluster import (
    RuntimeProcess,
    lease_owners,
    pool_cluster,
    runtime_config,
    settled_owners,
)
from tests.runtime_client import wait_for

PASSWORDS = {"edgebayes": "rt-secret", "homeassistant": "ha-secret", "monitor": "mon-secret", "sim": "sim-secret"}
PARTITIONS = 8
DEVICES = [f"sim-{i}" for i in range(8)]


@pytest.fixture
def cluster(tmp_path):
    with pool_cluster(tmp_path / "nats", PARTITIONS, PASSWORDS, {"homeassistant": {"discovery": True}},
                      gateway_user="sim") as c:
        yield c


class HomeAssistant:
    """An MQTT 3.1.1 client logged in as Home Assistant: the last payload of every topic it
    reads (discovery configs, runtime status, device availability), and its birth message."""

    def __init__(self, port: int, client_id: str = "ha"):
        import paho.mqtt.client as paho
        from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

        self.lock = threading.Lock()
        self.last: dict[str, bytes] = {}
        self.n_configs = 0
        self.subscribed = threading.Event()
        c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id=client_id,
                        protocol=MQTTProtocolVersion.MQTTv311)
        c.username_pw_set("homeassistant", PASSWORDS["homeassistant"])
        c.on_connect = lambda cl, *a: cl.subscribe(
            [("homeassistant/#", 1), ("edgebayes/runtime/+/status", 1), ("edgebayes/+/availability", 1)])
        c.on_subscribe = lambda *a: self.subscribed.set()
        c.on_message = self._on_message
        c.connect("127.0.0.1", port)
        c.loop_start()
        self.client = c
        if not self.subscribed.wait(20):
            raise TimeoutError("Home Assistant's subscriber did not subscribe")

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.last[msg.topic] = bytes(msg.payload)
            self.n_configs += msg.topic.endswith("/config")

    def status_of(self, runtime: str) -> bytes | None:
        with self.lock:
            return self.last.get(f"edgebayes/runtime/{runtime}/status")

    def availability(self, device: str) -> list[str] | None:
        """The availability topics of ``device``'s prediction sensor config, None without one."""
        with self.lock:
            raw = self.last.get(f"homeassistant/sensor/edgebayes/{device}_prediction/config")
        return [a["topic"] for a in json.loads(raw)["availability"]] if raw else None

    def birth(self) -> None:
        self.client.publish("homeassistant/status", b"online", qos=1).wait_for_publish(10)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def _owner_status(owners: dict[int, str], device: str) -> str:
    return f"edgebayes/runtime/{owners[partition_of(device, PARTITIONS)]}/status"


def _announced_by_owners(ha: HomeAssistant, owners: dict[int, str]) -> bool:
    return all((ha.availability(d) or [None])[0] == _owner_status(owners, d) for d in DEVICES)


def _sim(cluster) -> dict:
    path = cluster.folder / "sim.password"
    path.write_text(PASSWORDS["sim"] + "\n")
    broker = BrokerOptions("127.0.0.1", cluster.mqtt_port("a"), username="sim", protocol="mqttv311",
                           password_file=str(path))
    return run_devices(broker, "synth:AGR_A", n_devices=len(DEVICES), limit=10, rate_hz=10.0, labels="delayed",
                       label_delay_s=0.2, seed=5)


def test_pool_devices_are_announced_by_their_owner_and_again_by_the_runtime_taking_over(cluster, tmp_path):
    port = cluster.mqtt_port("a")
    pool = [RuntimeProcess(runtime_config(tmp_path / "pool", f"rt-{i}", cluster.urls(), PARTITIONS,
                                          PASSWORDS["edgebayes"], discovery_port=port)) for i in range(2)]
    ha = HomeAssistant(cluster.mqtt_port("b"))
    try:
        owners_of = lambda: lease_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"])
        owners = settled_owners(cluster.urls(), "edgebayes", PASSWORDS["edgebayes"], PARTITIONS, 2)
        wait_for(lambda: ha.status_of("rt-0") == b"online" and ha.status_of("rt-1") == b"online", 20,
                 "both runtimes' retained status online")
        _sim(cluster)
        wait_for(lambda: _announced_by_owners(ha, owners), 20, "every device announced by its partition's owner")
        assert all(ha.availability(d)[1] == f"edgebayes/{d}/availability" for d in DEVICES)
        wait_for(lambda: all(ha.last.get(f"edgebayes/{d}/availability") == b"online" for d in DEVICES), 10,
                 "every device online")

        victim = owners[partition_of(DEVICES[0], PARTITIONS)]
        survivor = "rt-1" if victim == "rt-0" else "rt-0"
        moved = [d for d in DEVICES if owners[partition_of(d, PARTITIONS)] == victim]
        pool[int(victim[-1])].kill9()
        wait_for(lambda: ha.status_of(victim) == b"offline", 10, f"{victim}'s will: offline")
        # no reading after the kill: the survivor announces the moved devices when it takes them
        wait_for(lambda: set(owners_of().values()) == {survivor}, 30, f"{survivor} owning every partition")
        wait_for(lambda: all(ha.availability(d)[0] == f"edgebayes/runtime/{survivor}/status" for d in moved), 20,
                 f"{moved} announced again by {survivor}")

        # what a Home Assistant that starts now reads: the retained configs, all the survivor's
        late = HomeAssistant(cluster.mqtt_port("c"), "ha-late")
        try:
            wait_for(lambda: _announced_by_owners(late, dict.fromkeys(range(PARTITIONS), survivor)), 10,
                     "the retained configs naming the survivor")
            assert late.status_of(victim) == b"offline" and late.status_of(survivor) == b"online"
        finally:
            late.close()

        before = ha.n_configs
        ha.birth()  # Home Assistant restarted: it is sent every device's configs again
        wait_for(lambda: ha.n_configs >= before + len(DEVICES) * 2, 10, "the configs sent again")

        assert pool[int(survivor[-1])].stop() == 0, pool[int(survivor[-1])].tail()
        wait_for(lambda: ha.status_of(survivor) == b"offline", 10, f"{survivor} offline after a clean stop")
    finally:
        ha.close()
        for rt in pool:
            rt.stop()
