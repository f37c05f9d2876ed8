"""Fencing a paused owner: a real process takes a partition and checkpoints it, is stopped with
SIGSTOP past its lease's TTL while another owner takes the partition and checkpoints it, then
resumes (SIGCONT) and uploads: its late checkpoint is refused and the new owner's stands.

Run as ``python -m tests.test_cluster_fencing URL...`` it is that old owner."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.nats_cluster import NatsCluster, nats_server_exe

ROOT = Path(__file__).resolve().parents[1]
USER, PASSWORD, PARTITION, TTL_S = "edgebayes", "rt-secret", 3, 2.0


@pytest.fixture
def cluster(tmp_path):
    nats_server_exe()
    from edgebayes.cluster.nats_config import nats_config_text, password_variable
    from edgebayes.runtime.config import ClusterConfig, parse_config

    config = parse_config({"broker": {"username": USER}, "schema": {"features": ["t"]},
                           "models": [{"name": "nb", "kind": "gaussian_nb"}]})
    include = nats_config_text(config, ClusterConfig(partitions=16), ha_user=None)
    c = NatsCluster(tmp_path / "nats", include, {password_variable(u): PASSWORD for u in (USER, "monitor")})
    with c.running(USER, PASSWORD):
        yield c


async def _open(urls: list[str], owner: str):
    import nats

    from edgebayes.cluster.lease import Leases
    from edgebayes.cluster.store import PartitionStore

    nc = await nats.connect(urls, user=USER, password=PASSWORD)
    js = nc.jetstream()
    return nc, await Leases.open(js, owner, TTL_S, 3), await PartitionStore.open(js, 3)


async def _old_owner(urls: list[str]) -> None:
    from edgebayes.cluster.store import Fenced

    nc, leases, store = await _open(urls, "rt-old")
    assert await leases.acquire(PARTITION)
    await store.take(PARTITION)
    await store.save(PARTITION, 5, {"sim-0": b"old at 5"})
    print("taken", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # stopped here
    try:
        await store.save(PARTITION, 9, {"sim-0": b"old at 9"})
        print("saved", flush=True)
    except Fenced:
        print("fenced", flush=True)
    await nc.close()


async def _new_owner(urls: list[str]) -> dict:
    nc, leases, store = await _open(urls, "rt-new")
    deadline = time.monotonic() + 20
    while not await leases.acquire(PARTITION):  # free once the old owner's lease expired
        assert time.monotonic() < deadline, "the paused owner's lease never expired"
        await asyncio.sleep(0.1)
    out = {"taken": await store.take(PARTITION)}
    await store.save(PARTITION, 7, {"sim-0": b"new at 7"})
    await nc.close()
    return out


async def _load(urls: list[str]):
    nc, _, store = await _open(urls, "reader")
    try:
        return await store.load(PARTITION)
    finally:
        await nc.close()


def test_paused_owner_late_checkpoint_refused_new_owner_state_stands(cluster):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    old = subprocess.Popen([sys.executable, "-m", "tests.test_cluster_fencing", *cluster.urls()], cwd=ROOT, env=env,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert old.stdout.readline().strip() == "taken"
        os.kill(old.pid, signal.SIGSTOP)
        new = asyncio.run(_new_owner(cluster.urls()))
        os.kill(old.pid, signal.SIGCONT)
        old.stdin.write("save\n")
        old.stdin.flush()
        answer = old.stdout.readline().strip()
        assert old.wait(30) == 0
    finally:
        if old.poll() is None:
            os.kill(old.pid, signal.SIGCONT)
            old.kill()
    assert new["taken"] == (5, {"sim-0": b"old at 5"})  # the new owner continued from the old one's checkpoint
    assert answer == "fenced"
    assert asyncio.run(_load(cluster.urls())) == (7, {"sim-0": b"new at 7"})


if __name__ == "__main__":
    asyncio.run(_old_owner(sys.argv[1:]))
