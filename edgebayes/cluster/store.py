"""A partition's checkpoint in a JetStream object store: its devices' checkpoint files and the
stream position they include, as one object, so the two are replaced together.

Object ``partition-<P>`` of bucket ``edgebayes_checkpoints`` (replicated) is msgpack
``{"format": "edgebayes-partition", "version": 1, "seq": N, "devices": {id: bytes}}``: ``seq``
is the last stream sequence of the partition its state includes (the next owner reads from
``seq + 1``), each ``bytes`` a device's ``<device>.ckpt`` file as ``CheckpointStore`` writes
it (framed and checksummed: ``edgebayes.runtime.checkpoint``). An object store writes an
object's chunks before its metadata, so a reader gets the old object or the new one whole.
"""

from __future__ import annotations

import asyncio

import msgpack
from nats.js.errors import BucketNotFoundError, NotFoundError, ObjectNotFoundError

from edgebayes.cluster.config import CHECKPOINTS

FORMAT, VERSION = "edgebayes-partition", 1
#: seconds a read may take: nats-py's object get waits for its chunks without a bound
LOAD_TIMEOUT_S = 10.0


class PartitionStore:
    """Partition checkpoints (async; nats-py's event loop only)."""

    def __init__(self, obs):
        self.obs = obs

    @classmethod
    async def open(cls, js, replicas: int) -> PartitionStore:
        from nats.js.api import ObjectStoreConfig

        try:
            obs = await js.object_store(CHECKPOINTS)
        except (BucketNotFoundError, NotFoundError):
            obs = await js.create_object_store(CHECKPOINTS, config=ObjectStoreConfig(replicas=replicas))
        return cls(obs)

    async def save(self, partition: int, seq: int, devices: dict[str, bytes]) -> None:
        """Replace the partition's checkpoint: ``devices`` (id -> checkpoint file bytes) at ``seq``."""
        doc = {"format": FORMAT, "version": VERSION, "seq": seq, "devices": devices}
        await self.obs.put(f"partition-{partition}", msgpack.packb(doc, use_bin_type=True))

    async def load(self, partition: int) -> tuple[int, dict[str, bytes]]:
        """``(seq, devices)`` of the partition's checkpoint; ``(0, {})`` when it has none.

        Raises:
            ValueError: an object that is not a partition checkpoint of this version.
            TimeoutError: no answer within `LOAD_TIMEOUT_S` (a node lost mid-read).
        """
        try:
            res = await asyncio.wait_for(self.obs.get(f"partition-{partition}"), LOAD_TIMEOUT_S)
        except ObjectNotFoundError:
            return 0, {}
        doc = msgpack.unpackb(res.data, raw=False)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise ValueError(f"partition-{partition}: not an {FORMAT} version {VERSION} object")
        return int(doc["seq"]), dict(doc["devices"])
