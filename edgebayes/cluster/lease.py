"""Partition ownership: one JetStream key-value lease per partition, compare-and-set, with a TTL.

Bucket ``edgebayes_leases`` (``max_age`` = ``[cluster] lease_ttl_s``, history 1, replicated):
key ``partition.<P>`` holds the owner's id. ``acquire`` creates it (refused while another
holds it: the server's expected-last-sequence check), ``renew`` rewrites it with the revision
it last wrote (refused once another took it), ``release`` deletes it with that revision (a
clean stop); a key its owner stops renewing expires ``lease_ttl_s`` after its last write and
is free. Key ``member.<id>`` is each live runtime's heartbeat, so a runtime takes its fair
share, ceil(partitions / members). The lease pattern is Gray and Cheriton's (1989); the
compare-and-set is JetStream's ``Nats-Expected-Last-Subject-Sequence``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from nats.errors import Error as NatsError
from nats.js.errors import (
    BadRequestError,
    BucketNotFoundError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NoKeysError,
)

from edgebayes.cluster.config import LEASES

log = logging.getLogger(__name__)

#: seconds between two tries of a deletion JetStream did not answer
RETRY_S = 0.25


class Leases:
    """The leases of one runtime, ``owner`` (async; nats-py's event loop only).

    Attributes:
        held: partition -> the revision this runtime last wrote.
    """

    def __init__(self, kv, owner: str):
        self.kv = kv
        self.owner = owner
        self.held: dict[int, int] = {}

    @classmethod
    async def open(cls, js, owner: str, ttl_s: float, replicas: int) -> Leases:
        """The lease bucket (made when missing) for ``owner``."""
        from nats.js.api import KeyValueConfig

        try:
            kv = await js.key_value(LEASES)
        except BucketNotFoundError:
            kv = await js.create_key_value(KeyValueConfig(bucket=LEASES, ttl=ttl_s, history=1, replicas=replicas))
        return cls(kv, owner)

    async def acquire(self, partition: int) -> bool:
        """Take ``partition`` if no one holds it; True when taken, False when another holds it
        (or its lease expired during the call: free for the next call)."""
        try:
            self.held[partition] = await self.kv.create(f"partition.{partition}", self.owner.encode())
        except (KeyWrongLastSequenceError, KeyNotFoundError):
            # nats-py's create reads the key after the server's refusal; KeyNotFoundError when it
            # expired in between
            return False
        return True

    async def renew(self, partition: int) -> bool:
        """Rewrite the lease; False (and no longer held) when another took it meanwhile. A
        lease that names this runtime at another revision (a renewal JetStream applied after
        its reply timed out) is still this runtime's, and renewed at that revision."""
        key, owner = f"partition.{partition}", self.owner.encode()
        try:
            self.held[partition] = await self.kv.update(key, owner, last=self.held[partition])
            return True
        except (KeyWrongLastSequenceError, KeyNotFoundError):  # another wrote it, it expired, or a late write
            holder = await self._holder(key)
            if holder is not None and holder[1] == owner:
                with contextlib.suppress(KeyWrongLastSequenceError, KeyNotFoundError):
                    self.held[partition] = await self.kv.update(key, owner, last=holder[0])
                    return True
        del self.held[partition]
        return False

    async def release(self, partition: int, patience_s: float = 0.0) -> None:
        """Delete the lease (a clean hand-over: the next owner need not wait for the TTL), at
        the revision this runtime wrote last, or at the key's own while it names this runtime
        (a renewal applied after its reply timed out).

        Raises:
            nats.errors.Error, TimeoutError: JetStream did not answer for ``patience_s`` seconds
                (tried again every `RETRY_S`); the lease is free once it expires.
        """
        rev = self.held.pop(partition, None)
        if rev is None:
            return
        key = f"partition.{partition}"
        for _ in range(2):  # the revision written last, then the key's own while it names this runtime
            try:
                await _patiently(lambda: self.kv.delete(key, last=rev), patience_s)
                return
            except (KeyWrongLastSequenceError, BadRequestError):  # nats-py raises either for a stale revision
                holder = await self._holder(key)
                if holder is None:  # deleted by a try answered late, or expired
                    return
                rev, who = holder
                if who != self.owner.encode():
                    log.warning("partition %d: lease taken by another before its release", partition)
                    return

    async def _holder(self, key: str) -> tuple[int, bytes] | None:
        """``(revision, owner id)`` of a lease key, None when it has none (deleted or expired)."""
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None
        return entry.revision, entry.value

    async def heartbeat(self) -> None:
        await self.kv.put(f"member.{self.owner}", b"")

    async def leave(self, patience_s: float = 0.0) -> None:
        """Delete this runtime's heartbeat; raises as `release`."""
        with contextlib.suppress(KeyNotFoundError):
            await _patiently(lambda: self.kv.delete(f"member.{self.owner}"), patience_s)

    async def keys(self) -> list[str]:
        try:
            return await self.kv.keys()
        except NoKeysError:
            return []

    async def owners(self) -> dict[int, str]:
        """Partition -> its owner's id, for every lease held now."""
        out = {}
        for key in await self.keys():
            if key.startswith("partition."):
                try:
                    out[int(key.split(".")[1])] = (await self.kv.get(key)).value.decode()
                except KeyNotFoundError:
                    continue  # expired or released meanwhile
        return out


async def _patiently(request, patience_s: float):
    """``await request()``, tried again while JetStream does not answer (a stream's leader being
    elected, a node paused), until ``patience_s`` seconds have passed; its answers (a refusal
    too) are returned or raised at once."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return await request()
        except (KeyWrongLastSequenceError, BadRequestError, KeyNotFoundError):
            raise
        except (NatsError, TimeoutError):
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(RETRY_S)
