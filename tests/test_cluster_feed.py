"""The partition feed (edgebayes.cluster.feed) on a real 3-node NATS cluster, its connection
through a TCP relay that is cut while a fetch's messages are on their way: a consumer
without acknowledgements counts them as delivered and never sends them again, so the feed
must read the partition again from the sequence after the last one it handed the worker.
Every message reaches the worker once, in stream order."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from edgebayes.cluster.config import STREAM
from edgebayes.cluster.feed import PartitionFeed
from tests.nats_cluster import pool_cluster

PASSWORD = "rt-secret"
PASSWORDS = {"edgebayes": PASSWORD, "monitor": "mon-secret", "sim": "sim-secret"}


@pytest.fixture
def cluster(tmp_path):
    with pool_cluster(tmp_path / "nats", 4, PASSWORDS, ha_user=None, gateway_user="sim") as c:
        yield c


class Relay:
    """A TCP relay to ``port``: ``hold`` drops what the server sends, ``cut`` closes every
    connection (the client connects again through it)."""

    def __init__(self, port: int):
        self.port = port
        self.hold = False
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader, writer):
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers += [writer, up_writer]

        async def pipe(src, dst, from_server: bool):
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                while data := await src.read(65536):
                    if not (from_server and self.hold):
                        dst.write(data)
                        await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer, False), pipe(up_reader, writer, True))

    def cut(self) -> None:
        for w in self.writers:
            w.close()
        self.writers.clear()


class Worker:
    """What the feed hands its messages to: the stream sequences, in order."""

    def __init__(self):
        self.got: list[tuple[str, bytes]] = []
        self.feed = None

    def can_take(self) -> bool:
        return True

    def submit(self, topic: str, payload: bytes, mid: int, qos: int) -> None:
        self.got.append((topic, payload))
        self.feed.done(mid)


def test_messages_sent_on_a_connection_that_broke_are_read_again_once_in_order(cluster):
    import nats
    from nats.js.api import StreamConfig

    async def run():
        relay = Relay(cluster.ports["a"]["client"])
        port = await relay.start()
        admin = await nats.connect(cluster.urls(), user="edgebayes", password=PASSWORD)
        await admin.jetstream().add_stream(StreamConfig(name=STREAM, subjects=["ebpart.>"], num_replicas=3))
        pub = await nats.connect(cluster.urls(), user="sim", password=PASSWORDS["sim"])  # a gateway
        js = pub.jetstream()
        worker, feed = Worker(), None
        reconnected = asyncio.Event()

        async def on_reconnect():
            feed.restart()  # as ClusterRuntime does
            reconnected.set()

        nc = await nats.connect([f"nats://127.0.0.1:{port}"], user="edgebayes", password=PASSWORD,
                                max_reconnect_attempts=-1, reconnect_time_wait=0.2, reconnected_cb=on_reconnect)
        feed = worker.feed = PartitionFeed(nc.jetstream(), worker, "edgebayes", 30.0)
        feed.start(1, 0, set())

        async def publish(lo, hi):
            for i in range(lo, hi):
                await js.publish(f"ebpart.1.dev-{i % 3}.reading", f"{i}".encode())

        async def until(n, timeout_s=10.0):
            for _ in range(int(timeout_s / 0.05)):
                if len(worker.got) >= n:
                    return
                await asyncio.sleep(0.05)

        await publish(0, 5)
        await until(5)
        relay.hold = True  # the next fetch's messages are sent, and lost on the way
        await publish(5, 10)
        await asyncio.sleep(0.5)
        relay.cut()
        relay.hold = False
        await asyncio.wait_for(reconnected.wait(), 10)
        await publish(10, 12)
        await until(12)
        await asyncio.sleep(1.5)  # nothing more, nothing twice
        for p in list(feed.feeding()):
            feed.stop(p)
        for c in (nc, pub, admin):
            await c.close()
        relay.server.close()
        return worker.got

    got = asyncio.run(run())
    assert [int(p) for _, p in got] == list(range(12))
    assert [t for t, _ in got] == [f"edgebayes/dev-{i % 3}/reading" for i in range(12)]
