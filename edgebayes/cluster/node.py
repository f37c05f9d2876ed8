"""One runtime of a pool on a NATS cluster: the partitions it owns, served by an unchanged
``Worker``, checkpointed to JetStream with their stream positions, handed over on a clean stop
and taken over when their owner dies.

Two threads: nats-py's event loop (``_main``: leases every third of ``lease_ttl_s``, the
partition feed, publishing) and the worker's. Every lease round the runtime renews its leases,
writes its heartbeat, and takes free partitions it may own up to its fair share,
ceil(P / live runtimes); past it (a runtime joined) it hands one partition over per round.
Taking partition p: acquire its lease (``Leases``), claim and read its checkpoint (``PartitionStore``;
uploads of a previous owner are refused from then on),
write its devices' checkpoint files into the local ``[checkpoint] dir`` (the worker restores
each device from there at its first message), feed the stream from the stored sequence + 1
(``PartitionFeed``). Every ``checkpoint_interval_s``, from the worker's tick (between two
messages, so state and position agree), the worker checkpoints its changed devices and each
changed partition's files go up with the partition's last processed stream sequence. Handing
p over (a clean stop, or the fair share): stop feeding it, let the worker process what it has
of p, upload, forget its devices, delete the lease. A lease lost (another took it after this
runtime could not renew for ``lease_ttl_s``) stops its feed; its devices are forgotten once
the worker has processed what it had of them, nothing uploaded.

So the next owner learns, in stream order, exactly the messages after the checkpoint it
restored: nothing processed is lost (the stream keeps it), nothing learned twice (the state
and the position are one object; a device's seq refuses a duplicate as in a single runtime).
Predictions of the messages the dead owner processed after its last upload are published
again by the next owner. With ``[homeassistant] discovery`` a ``PoolDiscovery``
(``edgebayes.cluster.homeassistant``) announces the devices of the partitions this runtime
serves, and again those of each partition it takes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import threading
import time
import zlib

from edgebayes.cluster.config import STREAM, ClusterConfig
from edgebayes.cluster.feed import PartitionFeed
from edgebayes.cluster.homeassistant import PoolDiscovery
from edgebayes.cluster.publisher import NatsPublisher
from edgebayes.cluster.subjects import PARTITION_SUBJECT, partition_of
from edgebayes.runtime.checkpoint import SUFFIXES, CheckpointStore
from edgebayes.runtime.config import Config
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker

log = logging.getLogger(__name__)

#: the share of lease_ttl_s after the last renewal past which a partition is neither fed nor uploaded
FENCE = 0.8
#: seconds ``start`` waits for JetStream to answer (leaders being elected)
SETUP_S = 30.0
#: seconds a clean stop waits for the NATS connection to drain (then it is closed)
DRAIN_S = 5.0


class ClusterRuntime:
    """A pool member for ``config`` and its ``[cluster]`` table (see the module docstring).

    Raises:
        ValueError: ``[checkpoint]`` is off (the partition checkpoints are made from its files).
        ConfigError: ``[memory] model_budget_bytes`` cannot hold the models.
    """

    def __init__(self, config: Config, cluster: ClusterConfig):
        if config.checkpoint.dir is None:
            raise ValueError("[cluster] needs [checkpoint] (a local folder the partition checkpoints pass through)")
        self.config, self.cluster = config, cluster
        self.owner = config.broker.client_id
        self.topics = Topics(config.topics.prefix, config.topics.devices, self.owner)
        self.store = CheckpointStore(config.checkpoint.dir, config.schema.features)
        self.loop = asyncio.new_event_loop()
        self.publisher = NatsPublisher(self.loop, self._done)
        ha = config.homeassistant
        self.ha = PoolDiscovery(config, self.topics) if ha is not None and ha.discovery else None
        self.worker = Worker(config, self.topics, self.store, None, session=self.publisher, tick_hooks=[self._tick],
                             watchers=[self.ha] if self.ha else [])
        self.feed: PartitionFeed | None = None
        self.leases = self.pstore = self.nc = None
        self.owned: set[int] = set()  # leases held and fed
        self.releasing: set[int] = set()  # being handed over: upload once the worker has its messages
        self.lost: set[int] = set()  # taken by another: forget once the worker has its messages
        self.uploaded: dict[int, int] = {}  # partition -> stream seq of its last upload
        self.renewed_at: dict[int, float] = {}
        self.taken_at: dict[int, float] = {}  # partition -> monotonic time it was taken (metrics, tests)
        self.ready = threading.Event()
        self.stopping = False
        self.n_uploads = 0
        self._releases: set[asyncio.Task] = set()  # lease deletions under way
        self._next_upload = time.monotonic() + cluster.checkpoint_interval_s
        self._thread = threading.Thread(target=self.loop.run_forever, name="edgebayes-nats", daemon=True)

    # --- lifecycle (main thread) ------------------------------------------------------------
    def start(self, timeout_s: float = SETUP_S + 10) -> None:
        """Connect, then serve: raises what connecting raised (OSError, nats errors)."""
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._connect(), self.loop).result(timeout_s)
        if self.ha is not None:
            self.ha.start()
        self.worker.start()
        self._lease_task = asyncio.run_coroutine_threadsafe(self._lease_loop(), self.loop)
        self._fence_task = asyncio.run_coroutine_threadsafe(self._fence_loop(), self.loop)
        self.ready.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Hand every partition over (processed, uploaded, lease deleted), then stop."""
        self.stopping = True  # no partition taken now; the leases are still renewed
        self._call(self._hand_over_all(), timeout_s)
        deadline = time.monotonic() + timeout_s
        while self.owned and time.monotonic() < deadline:
            time.sleep(0.05)
        self._call(self._stop_leasing(), timeout_s)
        self.worker.stop(timeout_s / 2)
        if self.ha is not None:
            self.ha.stop()
        if self.owned:
            log.error("partitions %s not handed over within %.0f s: they are taken after their lease expires",
                      sorted(self.owned), timeout_s)
        self._call(self._close(), timeout_s + self.cluster.lease_ttl_s)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout_s)

    def _call(self, coro, timeout_s: float):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    # --- nats-py's loop --------------------------------------------------------------------
    async def _connect(self) -> None:
        import nats
        from nats.js.errors import ServiceUnavailableError

        c = self.cluster
        self.nc = await nats.connect(list(c.servers), user=c.username, password=c.password(), name=self.owner,
                                     max_reconnect_attempts=-1, reconnect_time_wait=0.2,
                                     reconnected_cb=self._reconnected)
        deadline = time.monotonic() + SETUP_S
        while True:  # a cluster just started (or loaded) elects its JetStream leaders first
            try:
                return await self._open_jetstream()
            except (TimeoutError, ServiceUnavailableError) as exc:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"JetStream did not answer within {SETUP_S:g} s: {exc}") from None
                await asyncio.sleep(0.5)

    async def _reconnected(self) -> None:
        log.warning("connected to NATS again (%s): every partition is read again after its last message",
                    self.nc.connected_url.netloc if self.nc.connected_url else "?")
        if self.feed is not None:
            self.feed.restart()

    async def _open_jetstream(self) -> None:
        """The partition stream (made when missing), the lease bucket, the checkpoint store."""
        from nats.js.api import StorageType, StreamConfig
        from nats.js.errors import NotFoundError

        from edgebayes.cluster.lease import Leases
        from edgebayes.cluster.store import PartitionStore

        c = self.cluster
        js = self.nc.jetstream()
        try:
            await js.stream_info(STREAM)
        except NotFoundError:
            await js.add_stream(StreamConfig(name=STREAM, subjects=[f"{PARTITION_SUBJECT}.>"],
                                             num_replicas=c.replicas, storage=StorageType.FILE))
        # lease requests fail fast (a KV leader being elected): retried next round, within the TTL
        lease_js = self.nc.jetstream(timeout=max(0.25, c.lease_ttl_s / 4))
        self.leases = await Leases.open(lease_js, self.owner, c.lease_ttl_s, c.replicas)
        self.pstore = await PartitionStore.open(js, c.replicas)
        self.feed = PartitionFeed(js, self.worker, self.config.topics.prefix, c.lease_ttl_s)
        self.publisher.nc = self.nc

    async def _lease_loop(self) -> None:
        every = self.cluster.lease_ttl_s / 3
        await self.leases.heartbeat()
        await asyncio.sleep(every)  # runtimes started together see each other before taking shares
        while not self.stopping:
            started = time.monotonic()
            try:
                await self._lease_round()
            except Exception as exc:  # noqa: BLE001 (NATS away: leases not renewed are fenced)
                log.warning("lease round failed: %s: %s", type(exc).__name__, exc)
            await asyncio.sleep(max(0.0, every - (time.monotonic() - started)))

    async def _lease_round(self) -> None:
        await self.leases.heartbeat()
        for p in sorted(self.owned):
            if await self.leases.renew(p):
                self.renewed_at[p] = time.monotonic()
            else:
                log.error("partition %d: lease taken by another runtime; serving it stops", p)
                self._lose(p)
        keys = await self.leases.keys()
        members = sum(k.startswith("member.") for k in keys) or 1
        share = math.ceil(self.cluster.partitions / members)
        held = {int(k.split(".")[1]) for k in keys if k.startswith("partition.")}
        mine = len(self.owned - self.releasing)
        if mine > share:
            self._hand_over(max(self.owned - self.releasing))
            return
        for p in self._claim_order():
            if mine >= share or self.stopping:
                break
            if p in held or p in self.owned or p in self.lost:
                continue
            if await self.leases.acquire(p):
                try:
                    await self._take(p)
                except Exception:
                    await self.leases.release(p)  # its checkpoint could not be read: free for the next round
                    raise
                mine += 1

    def _claim_order(self) -> list[int]:
        """The partitions this runtime may own, from an offset of its own (fewer collisions)."""
        own = list(self.cluster.owned)
        k = zlib.crc32(self.owner.encode()) % len(own)
        return own[k:] + own[:k]

    async def _fence_loop(self) -> None:
        """Stop serving a partition whose lease was not renewed for most of ``lease_ttl_s``,
        checked apart from the lease round (which may wait on a NATS node being replaced)."""
        while True:
            self._fence()
            await asyncio.sleep(self.cluster.lease_ttl_s / 20)

    def _fresh(self, p: int) -> bool:
        """Whether ``p``'s lease was renewed recently enough that no other runtime can hold it."""
        return time.monotonic() - self.renewed_at.get(p, 0.0) < self.cluster.lease_ttl_s * FENCE

    def _fence(self) -> None:
        now = time.monotonic()
        for p in list(self.owned - self.releasing):
            if not self._fresh(p):
                log.error("partition %d: lease not renewed for %.1f s; serving it stops", p,
                          now - self.renewed_at[p])
                self._fenced(p)

    def _fenced(self, p: int) -> None:
        """Stop serving ``p``, whose lease another runtime may hold now."""
        self.leases.held.pop(p, None)
        self.releasing.discard(p)
        self._lose(p)

    async def _take(self, p: int) -> None:
        seq, files = await self.pstore.take(p)
        self._write_local(p, files)
        self.uploaded[p] = seq
        self.renewed_at[p] = self.taken_at[p] = time.monotonic()
        self.owned.add(p)
        self.feed.start(p, seq, set(files))
        if self.ha is not None:
            self.ha.taken(set(files))
        log.info("partition %d taken: %d devices restored, reading from stream seq %d", p, len(files), seq + 1)

    def _lose(self, p: int) -> None:
        self.feed.stop(p)
        self.owned.discard(p)
        self.lost.add(p)

    def _hand_over(self, p: int) -> None:
        self.feed.stop(p)
        self.releasing.add(p)

    async def _hand_over_all(self) -> None:
        for p in list(self.owned):
            self._hand_over(p)

    async def _stop_leasing(self) -> None:
        self._lease_task.cancel()
        self._fence_task.cancel()

    async def _close(self) -> None:
        """Delete the leases and the heartbeat (before the connection drains), then drain it."""
        ttl = self.cluster.lease_ttl_s
        await asyncio.gather(*self._releases, *map(self._release, list(self.leases.held)),
                             self._quietly("heartbeat not deleted", self.leases.leave(ttl)))
        await self._quietly("the NATS connection not drained", asyncio.wait_for(self.nc.drain(), DRAIN_S))
        if not self.nc.is_closed:
            await self.nc.close()

    async def _release(self, p: int) -> None:
        """Delete ``p``'s lease, trying for up to ``lease_ttl_s`` (past it the lease is free anyway)."""
        await self._quietly(f"partition {p}: lease not deleted; it is free {self.cluster.lease_ttl_s:g} s "
                            "after its last renewal", self.leases.release(p, self.cluster.lease_ttl_s))

    @staticmethod
    async def _quietly(what: str, coro) -> None:
        try:
            await coro
        except Exception as exc:  # noqa: BLE001 (a clean stop goes on: nothing it holds is lost)
            log.warning("%s (%s: %s)", what, type(exc).__name__, exc)

    # --- worker thread ---------------------------------------------------------------------
    def _done(self, mid: int) -> None:
        self.feed.done(mid)

    def _tick(self) -> None:
        """Called by the worker between two messages: uploads, hand-overs, lost partitions."""
        for p in list(self.lost):
            if not self.feed.in_flight.get(p):
                self._forget(p)
                self.loop.call_soon_threadsafe(self.lost.discard, p)
        ready = [p for p in list(self.releasing) if not self.feed.in_flight.get(p)]
        now = time.monotonic()
        if not ready and now < self._next_upload:
            return
        self._next_upload = now + self.cluster.checkpoint_interval_s
        self.worker.checkpoint()
        done = self._upload(sorted(self.owned - self.releasing) + ready)
        for p in ready:
            if p in done:  # the next owner continues from its upload
                self._forget(p)
                self.loop.call_soon_threadsafe(self._released, p)

    def _released(self, p: int) -> None:
        self.owned.discard(p)
        self.releasing.discard(p)
        task = self.loop.create_task(self._release(p))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    def _upload(self, partitions: list[int]) -> set[int]:
        """Upload, all at once, each changed partition's devices' checkpoint files with its last
        processed stream seq; the partitions whose checkpoint then includes every message
        processed (not: a device's checkpoint could not be written, or the lease may be another's)."""
        uploads, done = {}, set()
        for p in partitions:
            with self.feed.lock:
                seq = self.feed.processed.get(p, 0)
                devices = set(self.feed.devices.get(p, ()))
            if seq <= self.uploaded.get(p, 0):
                done.add(p)
            elif not devices & self.worker.registry.dirty and self._fresh(p):
                files = {d: path.read_bytes() for d in sorted(devices) if (path := self.store.path(d)).exists()}
                uploads[p] = (seq, files)
        if uploads:
            for p in asyncio.run_coroutine_threadsafe(self._save_all(uploads), self.loop).result(30):
                del uploads[p]
                self.loop.call_soon_threadsafe(self._fenced, p)
            for p, (seq, _) in uploads.items():
                self.uploaded[p] = seq
            self.n_uploads += len(uploads)
        return done | set(uploads)

    async def _save_all(self, uploads: dict[int, tuple[int, dict[str, bytes]]]) -> set[int]:
        """Save every upload; the partitions whose save was refused (another runtime took them)."""
        from edgebayes.cluster.store import Fenced

        results = await asyncio.gather(*(self.pstore.save(p, seq, files) for p, (seq, files) in uploads.items()),
                                       return_exceptions=True)
        refused = set()
        for p, res in zip(uploads, results):
            if isinstance(res, Fenced):
                log.error("%s; serving it stops", res)
                refused.add(p)
            elif isinstance(res, BaseException):
                raise res
        return refused

    def _forget(self, p: int) -> None:
        """Drop partition ``p``'s devices from memory and from the local folder."""
        devices = self.feed.forget(p)
        if self.ha is not None:
            self.ha.forget(devices)
        for d in devices:
            self.worker.registry.drop(d)
            self._remove_local(d)

    # --- the local folder -------------------------------------------------------------------
    def _write_local(self, p: int, files: dict[str, bytes]) -> None:
        """The partition's checkpoint files in the local folder, in place of any left there."""
        folder = self.store.dir
        folder.mkdir(parents=True, exist_ok=True)
        for path in folder.glob("*.ckpt"):
            if partition_of(path.stem, self.cluster.partitions) == p and path.stem not in files:
                self._remove_local(path.stem)
        for device, data in files.items():
            self._remove_local(device)
            tmp = self.store.path(device).with_suffix(".ckpt.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, self.store.path(device))

    def _remove_local(self, device: str) -> None:
        for suffix in SUFFIXES:
            with contextlib.suppress(FileNotFoundError):
                (self.store.dir / f"{device}{suffix}").unlink()
