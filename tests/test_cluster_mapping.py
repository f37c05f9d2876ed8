"""The shipped NATS files: deploy/nats/edgebayes-nats.conf is `edgebayes nats-config` of
deploy/nats/runtime.toml, and a real 3-node cluster of deploy/nats/node.conf puts each device's
MQTT readings and labels on exactly one partition subject, always the same, the one
``partition_of`` computes; its users are held to the Mosquitto ACL's grants."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgebayes.cluster.config import STREAM
from edgebayes.cluster.nats_config import nats_config_text, password_variable
from edgebayes.cluster.subjects import partition_of
from edgebayes.runtime.config import load_config
from tests.nats_cluster import REQUIRE_ENV, NatsCluster, nats_server_exe

DEPLOY = Path(__file__).resolve().parents[1] / "deploy" / "nats"
DEVICES = [f"dev-{i}" for i in range(8)]
PASSWORDS = {"edgebayes": "rt-secret", "monitor": "mon-secret", "homeassistant": "ha-secret", "site1": "site-secret",
             **{d: f"{d}-secret" for d in DEVICES}}


def _env() -> dict[str, str]:
    return {password_variable(u): p for u, p in PASSWORDS.items()}


def test_shipped_include_is_the_command_output():
    out = subprocess.run([sys.executable, "-m", "edgebayes", "nats-config", "--config", str(DEPLOY / "runtime.toml"),
                          "--device", "sensor-1", "--leaf-user", "site1"], capture_output=True, text=True, check=True).stdout
    assert out == (DEPLOY / "edgebayes-nats.conf").read_text()


def test_partition_of_is_fnv1a_mod_p():
    # FNV-1a 32 of "a" is 0xe40c292c (Fowler-Noll-Vo test vectors)
    assert partition_of("a", 2**32 - 1) == 0xE40C292C % (2**32 - 1)
    assert partition_of("a", 64) == 0x2C


def test_shipped_leaf_config_parses():
    exe = nats_server_exe()
    env = {**_env(), password_variable("sensor-1"): "x", "EB_NATS_NAME": "leaf-1", "EB_NATS_STORE": "/tmp/unused", "EB_NATS_SITE": "site1",
           "EB_NATS_HUB": "nats-leaf://site1:site-secret@127.0.0.1:7422", "EB_NATS_LISTEN": "127.0.0.1:4222",
           "EB_NATS_MQTT_LISTEN": "127.0.0.1:1883"}
    r = subprocess.run([exe, "-t", "-c", str(DEPLOY / "leaf.conf")], env={**os.environ, **env},
                       capture_output=True, text=True, cwd=DEPLOY, check=False)
    assert r.returncode == 0, r.stderr + r.stdout


@pytest.fixture
def cluster(tmp_path):
    nats_server_exe()
    config = load_config(DEPLOY / "runtime.toml")
    include = nats_config_text(config, config.cluster, DEVICES)
    c = NatsCluster(tmp_path / "nats", include, _env())
    with c.running("edgebayes", PASSWORDS["edgebayes"]):
        yield c


def _mosquitto_pub(port: int, user: str, topic: str, payload: str) -> subprocess.CompletedProcess:
    return subprocess.run(["mosquitto_pub", "-p", str(port), "-q", "1", "-V", "mqttv311", "-i", f"pub-{user}",
                           "-u", user, "-P", PASSWORDS.get(user, "wrong"), "-t", topic, "-m", payload],
                          capture_output=True, text=True, timeout=10, check=False)


def test_each_device_lands_on_one_stable_partition(cluster):
    if shutil.which("mosquitto_pub") is None:
        missing = "mosquitto_pub not installed (apt-get install -y mosquitto-clients)"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(missing)
        pytest.skip(missing)
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamConfig

    async def run():
        nc = await nats.connect(cluster.urls(), user="edgebayes", password=PASSWORDS["edgebayes"])
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name=STREAM, subjects=["ebpart.>"], num_replicas=3))
        sent = []
        for rnd in range(2):  # twice each, through two different nodes
            node = "ab"[rnd]
            for d in DEVICES:
                for kind in ("reading", "label"):
                    r = _mosquitto_pub(cluster.mqtt_port(node), d, f"edgebayes/{d}/{kind}", f"{rnd}")
                    assert r.returncode == 0, r.stderr
                    sent.append((d, kind))
        # a device may not publish as another: not stored anywhere
        _mosquitto_pub(cluster.mqtt_port("c"), "dev-0", "edgebayes/dev-1/reading", "forged")
        sub = await js.pull_subscribe("ebpart.>", durable=None, config=ConsumerConfig(
            deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.NONE))
        got = []
        while len(got) < len(sent) + 1:
            try:
                got += await sub.fetch(64, timeout=2)
            except nats.errors.TimeoutError:
                break
        await nc.close()
        return sent, [(m.subject, m.data) for m in got]

    sent, got = asyncio.run(run())
    assert len(got) == len(sent)  # every message kept once, the forged one refused
    assert b"forged" not in [data for _, data in got]
    partitions = {}
    for subj, _ in got:
        prefix, part, device, kind = subj.split(".")
        assert prefix == "ebpart" and kind in ("reading", "label")
        partitions.setdefault(device, set()).add(int(part))
    assert sorted(partitions) == sorted(DEVICES)
    for d, parts in partitions.items():
        assert parts == {partition_of(d, 64)}, d  # one partition, stable, the one computed here
    assert len({partition_of(d, 64) for d in DEVICES}) > 1  # the devices are spread
