"""A partition's checkpoint in a JetStream object store: its devices' checkpoint files and the
stream position they include, as one object, so the two are replaced together.

Object ``partition-<P>`` of bucket ``edgebayes_checkpoints`` (replicated) is msgpack
``{"format": "edgebayes-partition", "version": 1, "seq": N, "devices": {id: bytes}}``: ``seq``
is the last stream sequence of the partition its state includes (the next owner reads from
``seq + 1``), each ``bytes`` a device's ``<device>.ckpt`` file as ``CheckpointStore`` writes
it (framed and checksummed: ``edgebayes.runtime.checkpoint``). An object store writes an
object's chunks before its metadata, so a reader gets the old object or the new one whole.

Fencing (Gray and Cheriton, 1989: a lease alone does not stop a paused holder): the current
checkpoint is named by the partition's *head*, key ``partition.<P>`` of key-value bucket
``edgebayes_checkpoint_heads`` (no TTL), msgpack ``{"object": name, "seq": N}``. ``take``
rewrites the head with its revision (JetStream's ``Nats-Expected-Last-Subject-Sequence``), and
every ``save`` writes a new object ``partition-<P>-<revision>`` then moves the head to it with
the revision this runtime last wrote; so once another runtime took the partition, a save of
the previous owner (stalled past its lease, then resumed) is refused (`Fenced`) and its
object deleted: the new owner's checkpoint stands. A save deletes the object two heads back,
not the one it replaced: nats-py's object get reads an object's metadata, then waits for its
chunks, forever once they were purged, so replacing an object under a reader hung that read
(a runtime taking a partition, a monitor reading the checkpoints); a reader that still finds
its object gone reads the head again.
"""

from __future__ import annotations

import asyncio
import contextlib

import msgpack
from nats.js.errors import (
    BucketNotFoundError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NotFoundError,
    ObjectDeletedError,
    ObjectNotFoundError,
)

from edgebayes.cluster.config import CHECKPOINTS, HEADS

FORMAT, VERSION = "edgebayes-partition", 1
#: seconds a read may take: nats-py's object get waits for its chunks without a bound
LOAD_TIMEOUT_S = 10.0
#: reads of the head before ``take`` gives up (each retry: a previous owner's save landed meanwhile)
TAKE_TRIES = 5


class Fenced(Exception):
    """A partition's head was written by another runtime since this one last wrote it."""


class PartitionStore:
    """Partition checkpoints (async; nats-py's event loop only).

    Attributes:
        tokens: partition -> (the head revision this runtime last wrote, the object it names,
            the object the head named before).
    """

    def __init__(self, obs, heads):
        self.obs = obs
        self.heads = heads
        self.tokens: dict[int, tuple[int, str | None, str | None]] = {}

    @classmethod
    async def open(cls, js, replicas: int) -> PartitionStore:
        from nats.js.api import KeyValueConfig, ObjectStoreConfig

        try:
            obs = await js.object_store(CHECKPOINTS)
        except (BucketNotFoundError, NotFoundError):
            obs = await js.create_object_store(CHECKPOINTS, config=ObjectStoreConfig(replicas=replicas))
        try:
            heads = await js.key_value(HEADS)
        except BucketNotFoundError:
            heads = await js.create_key_value(KeyValueConfig(bucket=HEADS, history=1, replicas=replicas))
        return cls(obs, heads)

    async def take(self, partition: int) -> tuple[int, dict[str, bytes]]:
        """``load``, claiming the head first, so a save of any previous owner is refused from now on.

        Raises:
            Fenced: the head changed under each of `TAKE_TRIES` claims.
            ValueError, TimeoutError: as `load`.
        """
        key = f"partition.{partition}"
        for _ in range(TAKE_TRIES):
            rev, name, seq = await self._head(partition)
            value = msgpack.packb({"object": name, "seq": seq})
            try:
                new = await (self.heads.update(key, value, last=rev) if rev else self.heads.create(key, value))
            except KeyWrongLastSequenceError:
                continue
            self.tokens[partition] = (new, name, None)
            return await self._read(partition, name)
        raise Fenced(f"partition {partition}: its checkpoint head kept changing")

    async def save(self, partition: int, seq: int, devices: dict[str, bytes]) -> None:
        """Replace the partition's checkpoint: ``devices`` (id -> checkpoint file bytes) at ``seq``.

        Raises:
            Fenced: another runtime took the partition since this one's ``take`` or last save.
        """
        if partition not in self.tokens:
            raise Fenced(f"partition {partition}: not taken by this runtime")
        rev, current, previous = self.tokens[partition]
        name = f"partition-{partition}-{rev}"
        doc = {"format": FORMAT, "version": VERSION, "seq": seq, "devices": devices}
        await self.obs.put(name, msgpack.packb(doc, use_bin_type=True))
        try:
            new = await self.heads.update(f"partition.{partition}", msgpack.packb({"object": name, "seq": seq}),
                                          last=rev)
        except KeyWrongLastSequenceError:
            del self.tokens[partition]
            await self._delete(name)
            raise Fenced(f"partition {partition}: taken by another runtime; checkpoint at seq {seq} refused") from None
        self.tokens[partition] = (new, name, current)
        if previous is not None:
            await self._delete(previous)

    async def load(self, partition: int) -> tuple[int, dict[str, bytes]]:
        """``(seq, devices)`` of the partition's checkpoint; ``(0, {})`` when it has none.

        Raises:
            ValueError: an object that is not a partition checkpoint of this version.
            TimeoutError: no answer within `LOAD_TIMEOUT_S` (a node lost mid-read).
        """
        _, name, _ = await self._head(partition)
        try:
            return await self._read(partition, name)
        except (TimeoutError, ValueError):
            _, again, _ = await self._head(partition)
            if again == name:
                raise
            return await self._read(partition, again)  # replaced twice while read

    async def _head(self, partition: int) -> tuple[int, str | None, int]:
        """``(revision, object name, seq)`` of the head; ``(0, None, 0)`` when it has none."""
        try:
            entry = await self.heads.get(f"partition.{partition}")
        except KeyNotFoundError:
            return 0, None, 0
        head = msgpack.unpackb(entry.value, raw=False)
        return entry.revision, head["object"], int(head["seq"])

    async def _read(self, partition: int, name: str | None) -> tuple[int, dict[str, bytes]]:
        if name is None:
            return 0, {}
        try:
            res = await asyncio.wait_for(self.obs.get(name), LOAD_TIMEOUT_S)
        except (ObjectNotFoundError, ObjectDeletedError):
            raise ValueError(f"partition-{partition}: its head names {name}, which is missing") from None
        doc = msgpack.unpackb(res.data, raw=False)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise ValueError(f"partition-{partition}: not an {FORMAT} version {VERSION} object")
        return int(doc["seq"]), dict(doc["devices"])

    async def _delete(self, name: str) -> None:
        # an object no head names any more; one left behind (a lost reply) costs space only
        with contextlib.suppress(NotFoundError, ObjectNotFoundError, ObjectDeletedError):
            await self.obs.delete(name)
