"""The readings and labels of the partitions a runtime owns, from the JetStream stream, into
the worker; what the worker has processed, per partition, by stream sequence.

Each owned partition has an ephemeral pull consumer on ``ebpart.<P>.>`` starting at the
sequence after its checkpoint's (``deliver_policy`` by start sequence, no acknowledgements:
the position is kept with the checkpoint, as Kafka Streams keeps offsets with state). A
message is handed to ``Worker.submit`` under its device's normal topic
(``<prefix>/<device>/<kind>``) only while the worker's queue has room (so the event loop never
blocks), with a message id the worker's ``ack`` returns once it is processed: ``processed``
then holds the partition's last stream sequence whose message the worker's state includes.
A consumer lost with a NATS node is made again from the next sequence not handed over, and so
is every consumer after the connection to NATS was lost and made again, or when a consumer's
own sequence skips: a consumer without acknowledgements counts what it sent on a connection
that then broke as delivered, and never sends it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
from collections import Counter

from edgebayes.cluster.config import STREAM
from edgebayes.cluster.subjects import parse_partition_subject, partition_filter

log = logging.getLogger(__name__)

#: messages asked for per fetch, and the fetch's wait for them (s)
BATCH, FETCH_WAIT_S = 64, 1.0


class PartitionFeed:
    """Owned partitions' messages into ``worker`` (fetch loops on nats-py's loop; ``done`` on
    the worker thread). ``inactive_s``: how long the server keeps a consumer nobody reads."""

    def __init__(self, js, worker, prefix: str, inactive_s: float):
        self.js = js
        self.worker = worker
        self.prefix = prefix
        self.inactive_s = inactive_s
        self.lock = threading.Lock()
        self.processed: dict[int, int] = {}  # partition -> last stream seq processed
        self.devices: dict[int, set[str]] = {}  # partition -> devices seen or restored
        self.in_flight: Counter = Counter()  # partition -> messages submitted, not processed
        self._mids: dict[int, tuple[int, int]] = {}  # mid -> (partition, stream seq)
        self._next_mid = itertools.count(1)
        self._next_seq: dict[int, int] = {}  # partition -> next stream seq to hand the worker (event loop)
        self._tasks: dict[int, asyncio.Task] = {}

    def start(self, partition: int, seq: int, devices: set[str]) -> None:
        """Feed ``partition`` from stream sequence ``seq + 1`` (its checkpoint holds ``devices``)."""
        with self.lock:
            self.processed[partition] = seq
            self.devices[partition] = set(devices)
        self._next_seq[partition] = seq + 1
        self._tasks[partition] = asyncio.get_running_loop().create_task(self._run(partition))

    def stop(self, partition: int) -> None:
        """Hand the worker nothing more of ``partition`` (what is submitted is still processed)."""
        task = self._tasks.pop(partition, None)
        self._next_seq.pop(partition, None)
        if task is not None:
            task.cancel()

    def restart(self) -> None:
        """Read every partition again from the sequence after the last one handed over (the
        connection was made again: what the consumers sent on the lost one never arrived)."""
        for partition, task in list(self._tasks.items()):
            task.cancel()  # it hands the worker nothing more: cancelled at its next step
            self._tasks[partition] = asyncio.get_running_loop().create_task(self._run(partition))

    def feeding(self) -> list[int]:
        return list(self._tasks)

    def done(self, mid: int) -> None:
        """The worker processed message ``mid`` (worker thread)."""
        with self.lock:
            partition, seq = self._mids.pop(mid)
            self.in_flight[partition] -= 1
            if partition in self.processed:  # not forgotten meanwhile
                self.processed[partition] = max(seq, self.processed[partition])

    def forget(self, partition: int) -> set[str]:
        """Drop the partition's bookkeeping; its devices."""
        with self.lock:
            self.processed.pop(partition, None)
            self.in_flight.pop(partition, None)
            return self.devices.pop(partition, set())

    async def _run(self, partition: int) -> None:
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        while self._current(partition):
            sub = None
            try:
                sub = await self.js.pull_subscribe(
                    partition_filter(partition), durable=None, stream=STREAM,
                    config=ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                                          opt_start_seq=self._next_seq[partition],
                                          ack_policy=AckPolicy.NONE, inactive_threshold=self.inactive_s))
                sent = 0  # the consumer's own sequence of the last message received
                while self._current(partition):
                    try:
                        msgs = await sub.fetch(BATCH, timeout=FETCH_WAIT_S)
                    except TimeoutError:  # nothing new (nats-py raises its own subclass, or the builtin)
                        continue
                    for m in msgs:
                        sent += 1
                        if m.metadata.sequence.consumer != sent:
                            raise LookupError(f"the consumer sent message {m.metadata.sequence.consumer} "
                                              f"after {sent - 1}: some never arrived")
                        if not await self._submit(partition, m):
                            return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 (a node lost, a consumer gone: made again)
                log.warning("partition %d: reading the stream failed (%s: %s); reading again from seq %d",
                            partition, type(exc).__name__, exc, self._next_seq.get(partition, 0))
                await asyncio.sleep(0.5)
            finally:
                if sub is not None:
                    asyncio.get_running_loop().create_task(_quietly(sub.unsubscribe()))

    def _current(self, partition: int) -> bool:
        """Whether the running task is ``partition``'s reader (nats-py's fetch can turn a
        cancellation into a timeout: a stopped or replaced reader then ends here)."""
        return self._tasks.get(partition) is asyncio.current_task()

    async def _submit(self, partition: int, m) -> bool:
        """Hand ``m`` to the worker; False (nothing handed) when this reader was stopped or replaced."""
        parsed = parse_partition_subject(m.subject)
        while parsed is not None and not self.worker.can_take():  # the stream holds the rest
            await asyncio.sleep(0.005)
        if not self._current(partition):
            return False
        if parsed is None:
            self._next_seq[partition] = m.metadata.sequence.stream + 1
            return True
        _, device, kind = parsed
        mid = next(self._next_mid)
        with self.lock:
            self._mids[mid] = (partition, m.metadata.sequence.stream)
            self.in_flight[partition] += 1
            self.devices[partition].add(device)
        self.worker.submit(f"{self.prefix}/{device}/{kind}", m.data, mid, 1)
        self._next_seq[partition] = m.metadata.sequence.stream + 1
        return True


async def _quietly(coro) -> None:
    with contextlib.suppress(Exception):  # a consumer already gone with its node
        await coro
